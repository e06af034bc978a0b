/*
 * What MPICH's test-suite configure writes to `mpitestconf.h`, for the
 * harness kept beside it (util/, include/): POSIX threads, the usual
 * headers. Isthmus's, not MPICH's (MPICH generates this file).
 */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDLIB_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_STDARG_H 1
#define USE_STDARG 1
#endif

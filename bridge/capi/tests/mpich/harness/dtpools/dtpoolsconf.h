/*
 * What dtpools' configure writes to `dtpoolsconf.h` (MPICH's
 * test/mpi/dtpools): nothing dtpools' sources need on this platform.
 * Isthmus's, not MPICH's (MPICH generates this file).
 */
#ifndef DTPOOLSCONF_H_INCLUDED
#define DTPOOLSCONF_H_INCLUDED
#endif

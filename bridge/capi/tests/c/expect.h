/* The MTest-harness tests' checks (tests/c/intercoll.c, nbcprogress.c):
 * EXPECT(cond, fmt, ...) counts and prints a failed check and goes on;
 * OK(call) does so for an MPI call that did not return MPI_SUCCESS. The
 * count, `errs`, goes to MTest_Finalize, which prints " No Errors" when it
 * is 0. Included once per program, after mpitest.h. */
#ifndef ISTHMUS_TEST_EXPECT_H
#define ISTHMUS_TEST_EXPECT_H

#include <stdio.h>

#include <mpi.h>

static int errs;

#define EXPECT(cond, ...)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            errs++;                                                                        \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
        }                                                                                  \
    } while (0)

#define OK(call)                                                                           \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        if (rc_ != MPI_SUCCESS) {                                                          \
            errs++;                                                                        \
            MTestPrintError(rc_);                                                          \
        }                                                                                  \
    } while (0)

#endif

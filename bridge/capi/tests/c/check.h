/* The C tests' assertion: CHECK(cond, fmt, ...) prints the failure with the
 * caller's `rank` (a variable each test defines) and aborts the job. */
#ifndef ISTHMUS_TEST_CHECK_H
#define ISTHMUS_TEST_CHECK_H

#include <stdio.h>

#include <mpi.h>

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fprintf(stderr, "\n");                                                        \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                 \
        }                                                                                 \
    } while (0)

#endif

/*
 * tests/c/intercoll.c with its v/w collectives and Reduce_scatter through
 * their large-count (`_c`) forms where mpi.h has them (large_count_v.h),
 * and, there, a count past an int: an error naming it, on this rank alone
 * (the call fails before it communicates, so no other rank waits).
 */
#include <stdio.h>
#include <string.h>

#include "../large_count_v.h"
#include "mpitest.h"

#if MPI_VERSION >= 4
static int lc_too_large(MPI_Comm comm)
{
    int n = lc_peers(comm), errs = 0;
    MPI_Count *counts = calloc((size_t) n, sizeof *counts);
    MPI_Aint *displs = calloc((size_t) n, sizeof *displs);
    int got[1];
    counts[0] = (MPI_Count) 1 << 40;
    int rc = MPI_Allgatherv_c(got, 0, MPI_INT, got, counts, displs, MPI_INT, comm);
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    if (rc == MPI_SUCCESS || strstr(text, "does not fit an int") == NULL) {
        printf("MPI_Allgatherv_c with a count of 2^40: %d \"%s\"\n", rc, text);
        errs++;
    }
    free(counts);
    free(displs);
    return errs;
}

/* Checked last, just before the test frees its intercommunicator. */
#define MTestFreeComm(c) (errs += lc_too_large(*(c)), MTestFreeComm(c))
#endif

#include "../intercoll.c"

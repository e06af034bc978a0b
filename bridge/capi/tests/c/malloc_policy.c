/*
 * Where a 3 MiB buffer comes from after MPI_Init, and whether the heap
 * keeps its memory once it is freed: "malloc from_heap=0|1 kept=0|1"
 * (from_heap: below the program break, not a mapping of its own; kept:
 * the break did not move back at free). Run by tests/waiting.rs.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const size_t len = 3u << 20;
    char *p = malloc(len);
    if (!p) {
        printf("malloc failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(p, 1, len);
    char *top = sbrk(0);
    int from_heap = p < top;
    free(p);
    int kept = sbrk(0) == top;
    printf("malloc from_heap=%d kept=%d\n", from_heap, kept);
    MPI_Finalize();
    return 0;
}

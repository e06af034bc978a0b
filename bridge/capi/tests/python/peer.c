/* C peer of tests/python/exchange.py's buffer mode: peer GROUP PEER. */
#include <stdio.h>
#include <stdlib.h>
#include "isthmus.h"

int main(int argc, char **argv)
{
    int rank, handle, rsize, out[16], in[16];
    MPI_Comm inter;
    MPI_Request r[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 3 || Isthmus_Register(argv[1], MPI_COMM_WORLD, &handle) != MPI_SUCCESS ||
        Isthmus_Intercomm_create_timeout(handle, argv[2], 120.0, &inter) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Comm_remote_size(inter, &rsize);
    for (int i = 0; i < 16; i++)
        out[i] = 2000 + 10 * rank + i;
    MPI_Irecv(in, 16, MPI_INT, rank % rsize, 5, inter, &r[0]);
    MPI_Isend(out, 16, MPI_INT, rank % rsize, 5, inter, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 16; i++)
        if (in[i] != 1000 + 10 * (rank % rsize) + i) {
            fprintf(stderr, "rank %d: in[%d] = %d\n", rank, i, in[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    MPI_Comm_free(&inter);
    Isthmus_Leave(handle);
    printf("PASS buffer rank %d\n", rank);
    MPI_Finalize();
    return 0;
}

/*
 * The farm's worker in plain C, with no Isthmus call (scripts/demo-rm.sh):
 * started by its manager's MPI_Comm_spawn, it finds the manager with
 * MPI_Comm_get_parent and answers work items until told to stop.
 */
#include <stdio.h>

#include <mpi.h>

enum { WORK = 1, RESULT = 2, STOP = 3 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        fprintf(stderr, "farm-worker: not spawned\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (;;) {
        long long item;
        MPI_Status st;
        MPI_Recv(&item, 1, MPI_LONG_LONG, 0, MPI_ANY_TAG, parent, &st);
        if (st.MPI_TAG == STOP)
            break;
        long long reply[2] = {item, 0};
        for (long long k = 1; k <= item; k++)
            reply[1] += k * k;
        MPI_Send(reply, 2, MPI_LONG_LONG, 0, RESULT, parent);
    }
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
}

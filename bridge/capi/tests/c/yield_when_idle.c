/*
 * Prints Open MPI's mpi_yield_when_idle as the MPI itself holds it after
 * MPI_Init (its MPI_T control variable, a C bool): "yield_when_idle=0|1".
 * Run by tests/waiting.rs with and without libisthmus.
 */
#include <stdio.h>
#include <string.h>

#include <mpi.h>

int main(int argc, char **argv)
{
    int provided, idx, count;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (MPI_T_cvar_get_index("mpi_yield_when_idle", &idx) != MPI_SUCCESS) {
        printf("no mpi_yield_when_idle\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_T_cvar_handle handle;
    MPI_T_cvar_handle_alloc(idx, NULL, &handle, &count);
    /* A bool of one byte; the rest stays zero whatever its size. */
    unsigned char value[16];
    memset(value, 0, sizeof value);
    MPI_T_cvar_read(handle, value);
    printf("yield_when_idle=%d\n", value[0] != 0);
    MPI_T_cvar_handle_free(&handle);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

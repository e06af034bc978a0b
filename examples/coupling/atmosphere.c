/* The atmosphere of the coupling demo: a C MPI program (built with
 * mpicc.mpich) that joins the ocean (a Fortran program built with
 * mpifort.openmpi, started separately) through Isthmus, then exchanges
 * boundary fields with it every step using plain MPI calls.
 *
 * Each rank owns NX cells above the sea surface; rank r talks to rank r
 * of the ocean. Every step it sends the air temperature and receives the
 * sea surface temperature (SST), with MPI_Isend/MPI_Irecv and
 * MPI_Waitall on the Isthmus intercommunicator, prints what it received,
 * and checks it against the ocean's formula (see ocean.f90):
 *
 *   cell g (global, 1-based) at step s:  SST   = 15 + 0.5 g + 0.1 s
 *                                        T_air = 20 - 0.25 g + 0.2 s
 *
 * The ocean's data are Fortran DOUBLE PRECISION, so the C side names
 * them MPI_DOUBLE_PRECISION (MPI matches type signatures).
 *
 * Usage: atmosphere [steps]  (default 3); ISTHMUS_VMD names the vmd. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <isthmus.h>

#define NX 4

int main(int argc, char **argv)
{
    int rank, nprocs, handle, rsize, steps = argc > 1 ? atoi(argv[1]) : 3;
    MPI_Comm inter;
    MPI_Request reqs[2];
    MPI_Status statuses[2];
    double tair[NX], sst[NX];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    /* The three Isthmus calls: join the virtual machine as "atmosphere",
     * meet "ocean" (waiting for it to start, up to 120 s). */
    Isthmus_Register("atmosphere", MPI_COMM_WORLD, &handle);
    Isthmus_Intercomm_create_timeout(handle, "ocean", 120.0, &inter);
    MPI_Comm_remote_size(inter, &rsize);
    if (rsize != nprocs) {
        printf("atmosphere: the ocean has %d ranks, the atmosphere %d; start both with the same number\n",
               rsize, nprocs);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        printf("atmosphere: coupled with the ocean (%d ranks)\n", rsize);

    for (int s = 1; s <= steps; s++) {
        for (int i = 0; i < NX; i++) {
            int g = rank * NX + i + 1;
            tair[i] = 20.0 - 0.25 * g + 0.2 * s;
        }
        /* Plain MPI from here on: the same calls as within one job. */
        MPI_Irecv(sst, NX, MPI_DOUBLE_PRECISION, rank, s, inter, &reqs[0]);
        MPI_Isend(tair, NX, MPI_DOUBLE_PRECISION, rank, s, inter, &reqs[1]);
        MPI_Waitall(2, reqs, statuses);
        for (int i = 0; i < NX; i++) {
            int g = rank * NX + i + 1;
            double expect = 15.0 + 0.5 * g + 0.1 * s;
            if (fabs(sst[i] - expect) > 1e-9) {
                printf("atmosphere rank %d: WRONG SST at cell %d: %.3f instead of %.3f\n", rank, g,
                       sst[i], expect);
                fflush(stdout);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        printf("atmosphere rank %d step %d received SST %6.2f %6.2f %6.2f %6.2f\n", rank, s, sst[0],
               sst[1], sst[2], sst[3]);
        fflush(stdout);
    }

    MPI_Comm_free(&inter);
    Isthmus_Leave(handle);
    if (rank == 0)
        printf("atmosphere: done\n");
    MPI_Finalize();
    return 0;
}

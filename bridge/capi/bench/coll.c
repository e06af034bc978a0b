/*
 * Collectives across two groups, for bench/coll.sh (issue 17, item 7):
 * Barrier, Bcast, Allreduce and Alltoall at 8 B, 64 KiB and 1 MiB on an
 * intercommunicator, and Allreduce on the intracommunicator of both groups.
 *
 *   coll isthmus GROUP PEER ITERS   an Isthmus intercommunicator between this
 *                                   job and the job registered as PEER (the
 *                                   group whose name sorts first is "left"),
 *                                   then its MPI_Intercomm_merge
 *   coll native ITERS               (built with -DNATIVE_ONLY, without
 *                                   libisthmus) one MPMD job (mpirun -n A coll : -n B coll):
 *                                   MPI_Intercomm_create between the two
 *                                   apps, then MPI_COMM_WORLD
 *
 * Each operation runs ITERS times (fewer for large sizes) after a warm-up,
 * between barriers; the left group's rank 0 prints
 *   RESULT <mode>_<op>_<bytes> mean_us=<f> n=<int>
 * where the time is the slowest rank's mean (a MAX reduction), as a
 * collective is done when its last rank is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isthmus.h"

static const int sizes[] = {8, 65536, 1 << 20};

/* The slowest rank's time over both groups of `inter` (seconds). */
static double slowest(MPI_Comm local, MPI_Comm inter, double mine)
{
    double local_max = 0, remote_max = 0;
    MPI_Allreduce(&mine, &local_max, 1, MPI_DOUBLE, MPI_MAX, local);
    /* Each group gets the other's maximum. */
    MPI_Allreduce(&local_max, &remote_max, 1, MPI_DOUBLE, MPI_MAX, inter);
    return local_max > remote_max ? local_max : remote_max;
}

static int reps_for(int iters, int bytes)
{
    long r = bytes >= (1 << 20) ? iters / 10 : bytes >= 65536 ? iters / 4 : iters;
    return r < 5 ? 5 : (int) r;
}

static void report(int printer, const char *mode, const char *op, int bytes, double t, int n)
{
    if (printer)
        printf("RESULT %s_%s_%d mean_us=%.2f n=%d\n", mode, op, bytes, t / n * 1e6, n);
    fflush(stdout);
}

/* Runs the intercommunicator operations on `inter` (`local`: this group),
 * then Allreduce on `intra`, the communicator of both groups. */
static void bench(const char *mode, MPI_Comm local, MPI_Comm inter, MPI_Comm intra, int left,
                  int iters)
{
    int rank, rsize;
    MPI_Comm_rank(local, &rank);
    MPI_Comm_remote_size(inter, &rsize);
    int printer = left && rank == 0;
    size_t max = (size_t) (1 << 20) * (size_t) (rsize + 1);
    char *a = calloc(max, 1), *b = calloc(max, 1);
    if (!a || !b) {
        fprintf(stderr, "coll: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int n = iters;
    /* Warm-up, as for the other operations: the first barriers absorb
     * the two jobs' different start times. */
    for (int i = 0; i < 3; i++)
        MPI_Barrier(inter);
    double t = MPI_Wtime();
    for (int i = 0; i < n; i++)
        MPI_Barrier(inter);
    report(printer, mode, "barrier", 0, slowest(local, inter, MPI_Wtime() - t), n);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int bytes = sizes[s], reps = reps_for(iters, bytes);
        int count = bytes / (int) sizeof(double);
        /* Bcast from the left group's rank 0 to the right group. */
        int root = left ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        /* A warm-up of a fifth of the timed repetitions (at least 2):
         * the first few hundred operations of a run on oversubscribed
         * cores are slower than the rest, for both (an Isthmus Alltoall
         * of 64 KiB on 2 + 2 ranks: 110 us a call over the first 100,
         * 62-69 over 2000). */
        for (int warm = 1; warm >= 0; warm--) {
            int k = warm ? (reps / 5 > 2 ? reps / 5 : 2) : reps;
            MPI_Barrier(inter);
            t = MPI_Wtime();
            for (int i = 0; i < k; i++)
                MPI_Bcast(a, bytes, MPI_BYTE, root, inter);
            double bc = MPI_Wtime() - t;
            MPI_Barrier(inter);
            t = MPI_Wtime();
            for (int i = 0; i < k; i++)
                MPI_Allreduce(a, b, count, MPI_DOUBLE, MPI_SUM, inter);
            double ar = MPI_Wtime() - t;
            MPI_Barrier(inter);
            t = MPI_Wtime();
            for (int i = 0; i < k; i++)
                MPI_Alltoall(a, bytes, MPI_BYTE, b, bytes, MPI_BYTE, inter);
            double at = MPI_Wtime() - t;
            MPI_Barrier(intra);
            t = MPI_Wtime();
            for (int i = 0; i < k; i++)
                MPI_Allreduce(a, b, count, MPI_DOUBLE, MPI_SUM, intra);
            double mr = MPI_Wtime() - t;
            if (!warm) {
                report(printer, mode, "bcast", bytes, slowest(local, inter, bc), k);
                report(printer, mode, "allreduce", bytes, slowest(local, inter, ar), k);
                report(printer, mode, "alltoall", bytes, slowest(local, inter, at), k);
                report(printer, mode, "mergedallreduce", bytes, slowest(local, inter, mr), k);
            }
        }
    }
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (0) {
#ifndef NATIVE_ONLY
    } else if (argc == 5 && !strcmp(argv[1], "isthmus")) {
        int handle;
        MPI_Comm inter, merged;
        if (Isthmus_Register(argv[2], MPI_COMM_WORLD, &handle) != MPI_SUCCESS ||
            Isthmus_Intercomm_create(handle, argv[3], &inter) != MPI_SUCCESS) {
            fprintf(stderr, "coll: cannot join %s\n", argv[3]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        int left = strcmp(argv[2], argv[3]) < 0;
        MPI_Intercomm_merge(inter, left ? 0 : 1, &merged);
        bench("isthmus", MPI_COMM_WORLD, inter, merged, left, atoi(argv[4]));
        MPI_Comm_free(&merged);
        MPI_Comm_free(&inter);
#endif
    } else if (argc == 3 && !strcmp(argv[1], "native")) {
        int *appnum, flag, wrank, wsize;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
        MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
        MPI_Comm_size(MPI_COMM_WORLD, &wsize);
        int app = flag ? *appnum : 0, left_size = 0;
        MPI_Comm local, inter;
        MPI_Comm_split(MPI_COMM_WORLD, app, wrank, &local);
        int lsize;
        MPI_Comm_size(local, &lsize);
        /* Every rank learns the size of app 0 (the left group). */
        int mine = app == 0 ? 1 : 0;
        MPI_Allreduce(&mine, &left_size, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, app == 0 ? left_size : 0, 7, &inter);
        bench("native", local, inter, MPI_COMM_WORLD, app == 0, atoi(argv[2]));
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
    } else {
        fprintf(stderr, "usage: coll isthmus GROUP PEER ITERS | coll native ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}

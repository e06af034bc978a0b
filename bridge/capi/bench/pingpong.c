/*
 * C ping-pong for the C API benchmark (bench/capi.sh); the same
 * sizes, window and RESULT lines as examples/src/bin/pingpong.rs.
 *
 *   pingpong GROUP PEER first|second ITERS BW_MIB   over an Isthmus intercomm
 *   pingpong native ITERS BW_MIB                    ranks 0 and 1 of one job
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isthmus.h"

enum { WINDOW = 16 };
static const int lat_sizes[] = {0, 8, 1024};
static const int bw_sizes[] = {65536, 1 << 20, 4 << 20};

static int cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* Ping-pong between this process and `peer` on `comm`; `first` drives and
 * prints. */
static void run(MPI_Comm comm, int peer, int first, const char *label, int iters, int bw_mib)
{
    char *buf = malloc(4 << 20);
    double *samples = malloc(sizeof(double) * (size_t) iters);
    if (!buf || !samples) {
        fprintf(stderr, "pingpong: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Touch every page: an untouched buffer is the kernel's one shared zero
     * page, which a single-copy read (process_vm_readv, Open MPI's CMA)
     * copies from cache, far faster than real data (the Rust ping-pong and
     * the references fill theirs). */
    memset(buf, 0x5a, 4 << 20);
    for (size_t s = 0; s < sizeof lat_sizes / sizeof *lat_sizes; s++) {
        int size = lat_sizes[s], warm = iters / 10 + 10;
        for (int i = 0; i < iters + warm; i++) {
            double t = MPI_Wtime();
            if (first) {
                MPI_Send(buf, size, MPI_BYTE, peer, 1, comm);
                MPI_Recv(buf, size, MPI_BYTE, peer, 1, comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, size, MPI_BYTE, peer, 1, comm, MPI_STATUS_IGNORE);
                MPI_Send(buf, size, MPI_BYTE, peer, 1, comm);
            }
            if (i >= warm)
                samples[i - warm] = (MPI_Wtime() - t) / 2 * 1e6;
        }
        if (first) {
            qsort(samples, (size_t) iters, sizeof *samples, cmp);
            printf("RESULT %s_lat_%d median_us=%.3f p99_us=%.3f n=%d\n", label, size,
                   samples[iters / 2], samples[(int) (iters * 0.99)], iters);
        }
    }
    for (size_t s = 0; s < sizeof bw_sizes / sizeof *bw_sizes; s++) {
        int size = bw_sizes[s];
        long reps = ((long) bw_mib << 20) / ((long) size * WINDOW);
        if (reps < 4)
            reps = 4;
        double elapsed = 0;
        char ack = 0;
        MPI_Request reqs[WINDOW];
        for (long r = 0; r < reps + 2; r++) {
            double t = MPI_Wtime();
            if (first) {
                for (int w = 0; w < WINDOW; w++)
                    MPI_Isend(buf, size, MPI_BYTE, peer, 2, comm, &reqs[w]);
                MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
                MPI_Recv(&ack, 1, MPI_BYTE, peer, 3, comm, MPI_STATUS_IGNORE);
            } else {
                for (int w = 0; w < WINDOW; w++)
                    MPI_Recv(buf, size, MPI_BYTE, peer, 2, comm, MPI_STATUS_IGNORE);
                MPI_Send(&ack, 1, MPI_BYTE, peer, 3, comm);
            }
            if (r >= 2)
                elapsed += MPI_Wtime() - t;
        }
        if (first) {
            double n = (double) reps * WINDOW;
            printf("RESULT %s_bw_%d bytes=%d mbps=%.1f n=%.0f\n", label, size, size,
                   size * n / elapsed / 1e6, n);
        }
    }
    fflush(stdout);
    free(buf);
    free(samples);
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc == 4 && !strcmp(argv[1], "native")) {
        run(MPI_COMM_WORLD, 1 - rank, rank == 0, getenv("ISTHMUS_BENCH_LABEL") ? getenv("ISTHMUS_BENCH_LABEL") : "native", atoi(argv[2]), atoi(argv[3]));
        MPI_Finalize();
        return 0;
    }
#ifdef NATIVE_ONLY
    fprintf(stderr, "pingpong: built without Isthmus: native mode only\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
#else
    if (argc != 6) {
        fprintf(stderr, "usage: pingpong GROUP PEER first|second ITERS BW_MIB | native ITERS BW_MIB\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int handle;
    MPI_Comm inter;
    if (Isthmus_Register(argv[1], MPI_COMM_WORLD, &handle) != MPI_SUCCESS ||
        Isthmus_Intercomm_create_timeout(handle, argv[2], 120.0, &inter) != MPI_SUCCESS) {
        fprintf(stderr, "pingpong: cannot form the intercommunicator\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        run(inter, 0, !strcmp(argv[3], "first"),
            getenv("ISTHMUS_BENCH_LABEL") ? getenv("ISTHMUS_BENCH_LABEL") : "capi", atoi(argv[4]),
            atoi(argv[5]));
    MPI_Comm_free(&inter);
    Isthmus_Leave(handle);
    MPI_Finalize();
    return 0;
#endif
}

/*
 * One MPI_COMM_WORLD benchmark (issue 19), OSU-style, on whatever world it
 * is started in: a world of parts under libisthmus (ISTHMUS_WORLD) or one
 * native job. Latency and bandwidth between world rank 0 and the last
 * rank (across the parts in a world of two), Allreduce and Alltoall on
 * the whole world. Driven by bench/world.sh.
 *
 * Usage: world MODE ITERS — MODE names the rows (world, native).
 * Prints, from world rank 0:
 *   RESULT <mode>_latency_<bytes> median_us=<f> p99_us=<f> n=<int>   (one-way, half a round trip)
 *   RESULT <mode>_bandwidth_<bytes> bytes=<int> mbps=<f> n=<int>      (a window of 64 sends, one ack)
 *   RESULT <mode>_<allreduce|alltoall>_<bytes> mean_us=<f> n=<int>   (slowest rank's mean)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: world MODE ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1];
    int iters = atoi(argv[2]), last = size - 1;
    if (iters < 1)
        iters = 1;
    char *buf = calloc(1 << 22, 1), *rbuf = calloc(1 << 22, 1);
    double *t = malloc(sizeof(double) * iters);

    /* Latency: ping-pong between rank 0 and the last rank. */
    int lat_sizes[] = {0, 8, 1024, 65536};
    for (int s = 0; s < 4; s++) {
        int n = lat_sizes[s];
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = -iters / 10 - 1; i < iters; i++) {
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, n, MPI_BYTE, last, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, last, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == last) {
                MPI_Recv(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
            if (i >= 0)
                t[i] = (MPI_Wtime() - t0) / 2 * 1e6;
        }
        if (rank == 0) {
            qsort(t, iters, sizeof(double), cmp);
            printf("RESULT %s_latency_%d median_us=%.2f p99_us=%.2f n=%d\n", mode, n,
                   t[iters / 2], t[(iters * 99) / 100 < iters ? (iters * 99) / 100 : iters - 1],
                   iters);
        }
    }

    /* Bandwidth: windows of 64 nonblocking sends from rank 0 to the last
     * rank, one zero-byte ack per window. */
    int bw_sizes[] = {65536, 1 << 20};
    for (int s = 0; s < 2; s++) {
        int n = bw_sizes[s], window = 64, rounds = iters / 10 + 1;
        MPI_Request req[64];
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int r = 0; r < rounds; r++) {
            if (rank == 0) {
                for (int w = 0; w < window; w++)
                    MPI_Isend(buf, n, MPI_BYTE, last, 2, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_BYTE, last, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == last) {
                for (int w = 0; w < window; w++)
                    MPI_Irecv(rbuf, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
            }
        }
        double secs = MPI_Wtime() - t0;
        if (rank == 0)
            printf("RESULT %s_bandwidth_%d bytes=%d mbps=%.1f n=%d\n", mode, n, n,
                   (double)n * window * rounds / secs / 1e6, window * rounds);
    }

    /* Collectives on the world: the slowest rank's mean. */
    int coll_sizes[] = {8, 65536, 1 << 20};
    for (int op = 0; op < 2; op++) {
        for (int s = 0; s < 3; s++) {
            int bytes = coll_sizes[s], n = iters / (s + 1) + 1;
            /* Alltoall: `bytes` per rank pair, so at most 4 MiB per buffer. */
            if (op == 1 && (long)bytes * size > (1 << 22))
                continue;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < n; i++) {
                if (op == 0)
                    MPI_Allreduce(buf, rbuf, bytes / 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                else
                    MPI_Alltoall(buf, bytes, MPI_BYTE, rbuf, bytes, MPI_BYTE, MPI_COMM_WORLD);
            }
            double mine = (MPI_Wtime() - t0) / n * 1e6, worst = 0;
            MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0)
                printf("RESULT %s_%s_%d mean_us=%.2f n=%d\n", mode,
                       op == 0 ? "allreduce" : "alltoall", bytes, worst, n);
        }
    }
    fflush(stdout);
    free(buf);
    free(rbuf);
    free(t);
    MPI_Finalize();
    return 0;
}

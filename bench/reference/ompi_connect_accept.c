/* Open MPI (any MPI-2+) connect/accept reference between two separately
 * launched jobs (run via ompi_connect_accept.sh).
 *
 * usage: ompi_connect_accept server|client <service> [lat_iters [bw_scale_MiB]]
 *
 * server: MPI_Open_port + MPI_Publish_name(service) + MPI_Comm_accept
 * client: MPI_Lookup_name(service) (retried until published, 60 s deadline)
 *         + MPI_Comm_connect, then drives all measurements and prints RESULTs.
 *
 * Latency: ping-pong over the intercommunicator, each round trip timed on
 *          the client; sample = RTT/2 (one-way).
 * Bandwidth: windowed streaming. The client posts WINDOW MPI_Isend of
 *          <size> bytes, MPI_Waitall, then waits for a 0-byte ack that the
 *          server sends after MPI_Waitall on its WINDOW MPI_Irecv. Repeated
 *          `reps` times; MB/s = size*WINDOW*reps / elapsed (1 MB = 1e6 B),
 *          n = number of messages (WINDOW*reps).
 * Both sides must be started with the same lat_iters / bw_scale.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_stats.h"

#define WINDOW 16
#define LAT_WARMUP 200
#define TAG_PING 1
#define TAG_BW 2
#define TAG_ACK 3

static const int lat_sizes[] = {0, 8, 1024};
static const char *lat_names[] = {"ompi_lat_0", "ompi_lat_8", "ompi_lat_1024"};
static const long bw_sizes[] = {65536, 1048576, 4194304};
static const char *bw_names[] = {"ompi_bw_65536", "ompi_bw_1048576", "ompi_bw_4194304"};

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "ompi_connect_accept: %s failed: %s\n", what, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* messages per bandwidth run: about bw_scale MiB of payload, >= 4 windows */
static long bw_reps(long size, long scale_mib)
{
    long reps = (scale_mib << 20) / (size * WINDOW);
    return reps < 4 ? 4 : reps;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
        fprintf(stderr, "usage: %s server|client <service> [lat_iters [bw_scale_MiB]]\n", argv[0]);
        return 2;
    }
    int server = strcmp(argv[1], "server") == 0;
    char *service = argv[2];
    int iters = argc > 3 ? atoi(argv[3]) : 5000;
    long scale = argc > 4 ? atol(argv[4]) : 1024;
    if (iters <= 0 || scale <= 0) {
        fprintf(stderr, "bad lat_iters/bw_scale\n");
        return 2;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    char port[MPI_MAX_PORT_NAME];
    MPI_Comm inter;
    double t_conn0 = now_us();
    if (server) {
        check(MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
        check(MPI_Publish_name(service, MPI_INFO_NULL, port), "MPI_Publish_name");
        fprintf(stderr, "server: published '%s' -> %s\n", service, port);
        check(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), "MPI_Comm_accept");
        fprintf(stderr, "server: accepted\n");
    } else {
        double deadline = now_us() + 60e6;
        int rc;
        while ((rc = MPI_Lookup_name(service, MPI_INFO_NULL, port)) != MPI_SUCCESS) {
            if (now_us() > deadline) check(rc, "MPI_Lookup_name (60 s deadline)");
            usleep(50 * 1000);
        }
        fprintf(stderr, "client: looked up '%s' -> %s\n", service, port);
        check(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), "MPI_Comm_connect");
        fprintf(stderr, "client: connected in %.1f ms (lookup+connect)\n",
                (now_us() - t_conn0) / 1e3);
    }
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);

    long maxbuf = bw_sizes[2];
    char *buf = malloc((size_t)maxbuf * WINDOW);
    double *s = malloc(sizeof(double) * (size_t)iters);
    MPI_Request req[WINDOW];
    if (!buf || !s) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, 0x5a, (size_t)maxbuf * WINDOW);

    /* ---- latency ---- */
    for (int k = 0; k < 3; k++) {
        int sz = lat_sizes[k];
        for (int i = 0; i < LAT_WARMUP + iters; i++) {
            if (server) {
                check(MPI_Recv(buf, sz, MPI_BYTE, 0, TAG_PING, inter, MPI_STATUS_IGNORE), "Recv");
                check(MPI_Send(buf, sz, MPI_BYTE, 0, TAG_PING, inter), "Send");
            } else {
                double t0 = now_us();
                check(MPI_Send(buf, sz, MPI_BYTE, 0, TAG_PING, inter), "Send");
                check(MPI_Recv(buf, sz, MPI_BYTE, 0, TAG_PING, inter, MPI_STATUS_IGNORE), "Recv");
                if (i >= LAT_WARMUP) s[i - LAT_WARMUP] = (now_us() - t0) / 2.0;
            }
        }
        if (!server) report_latency(lat_names[k], s, iters);
    }

    /* ---- bandwidth (windowed streaming, client -> server) ---- */
    for (int k = 0; k < 3; k++) {
        long sz = bw_sizes[k];
        long reps = bw_reps(sz, scale);
        double t0 = 0;
        for (long r = -2; r < reps; r++) { /* 2 warm-up windows */
            if (r == 0) t0 = now_us();
            if (server) {
                for (int w = 0; w < WINDOW; w++)
                    check(MPI_Irecv(buf + w * sz, (int)sz, MPI_BYTE, 0, TAG_BW, inter, &req[w]), "Irecv");
                check(MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE), "Waitall");
                check(MPI_Send(buf, 0, MPI_BYTE, 0, TAG_ACK, inter), "Send ack");
            } else {
                for (int w = 0; w < WINDOW; w++)
                    check(MPI_Isend(buf + w * sz, (int)sz, MPI_BYTE, 0, TAG_BW, inter, &req[w]), "Isend");
                check(MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE), "Waitall");
                check(MPI_Recv(buf, 0, MPI_BYTE, 0, TAG_ACK, inter, MPI_STATUS_IGNORE), "Recv ack");
            }
        }
        if (!server) report_bw(bw_names[k], sz, reps * WINDOW, now_us() - t0);
    }

    check(MPI_Comm_disconnect(&inter), "MPI_Comm_disconnect");
    if (server) {
        MPI_Unpublish_name(service, MPI_INFO_NULL, port);
        MPI_Close_port(port);
    }
    free(buf);
    free(s);
    MPI_Finalize();
    return 0;
}

/*
 * Connect time for the connect benchmark (bench/connect.sh): plain
 * MPI-2 calls, no Isthmus call, so the same program measures Isthmus (run
 * with libisthmus preloaded) and an implementation's own connect/accept
 * (Open MPI with ompi-server).
 *
 *   connect accept SERVICE ROUNDS LABEL    open a port, publish it, accept
 *                                          ROUNDS times on it
 *   connect connect SERVICE ROUNDS LABEL   look the name up (60 s deadline),
 *                                          connect ROUNDS times; prints
 *
 * Each round: a barrier of the connecting job, MPI_Comm_connect over
 * MPI_COMM_WORLD (root 0) timed on every rank, then rank 0 of each side
 * exchanges the round number (checked) and both disconnect. The sample of
 * a round is the slowest rank's time (a collective connect is done when
 * every rank has the intercommunicator).
 *   RESULT LABEL_first_npN median_us=... p99_us=... n=1      the first connect
 *   RESULT LABEL_later_npN median_us=... p99_us=... n=R-1    the others
 *   RESULT LABEL_lookup_npN median_us=... p99_us=... n=1     MPI_Lookup_name
 *                                                            once published
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "bench_stats.h"

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "connect: %s failed: %s\n", what, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Rank 0 of each side sends the round number to the other and checks what
 * it gets: the intercommunicator carries data. */
static void handshake(MPI_Comm inter, int rank, int round)
{
    if (rank != 0)
        return;
    int got = -1;
    check(MPI_Sendrecv(&round, 1, MPI_INT, 0, 7, &got, 1, MPI_INT, 0, 7, inter,
                       MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
    if (got != round) {
        fprintf(stderr, "connect: round %d: the other side sent %d\n", round, got);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (argc != 5 || (strcmp(argv[1], "accept") && strcmp(argv[1], "connect")) ||
        atoi(argv[3]) < 2) {
        fprintf(stderr, "usage: connect accept|connect SERVICE ROUNDS(>=2) LABEL\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int accepting = !strcmp(argv[1], "accept"), rounds = atoi(argv[3]);
    const char *service = argv[2], *label = argv[4];
    char port[MPI_MAX_PORT_NAME] = "";
    double lookup = 0;
    MPI_Comm inter;

    if (rank == 0 && accepting) {
        check(MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
        check(MPI_Publish_name(service, MPI_INFO_NULL, port), "MPI_Publish_name");
    } else if (rank == 0) {
        double deadline = now_us() + 60e6, t;
        int rc;
        for (;;) {
            t = now_us();
            if ((rc = MPI_Lookup_name(service, MPI_INFO_NULL, port)) == MPI_SUCCESS)
                break;
            if (t > deadline)
                check(rc, "MPI_Lookup_name (60 s deadline)");
            usleep(50 * 1000);
        }
        lookup = now_us() - t;
    }

    double *samples = malloc(sizeof(double) * (size_t) rounds);
    if (!samples)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int r = 0; r < rounds; r++) {
        if (accepting) {
            check(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter),
                  "MPI_Comm_accept");
        } else {
            check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            double t0 = now_us();
            check(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter),
                  "MPI_Comm_connect");
            double mine = now_us() - t0;
            check(MPI_Reduce(&mine, &samples[r], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD),
                  "MPI_Reduce");
        }
        handshake(inter, rank, r);
        check(MPI_Comm_disconnect(&inter), "MPI_Comm_disconnect");
    }

    if (rank == 0 && accepting) {
        check(MPI_Unpublish_name(service, MPI_INFO_NULL, port), "MPI_Unpublish_name");
        check(MPI_Close_port(port), "MPI_Close_port");
    } else if (rank == 0) {
        char name[256];
        snprintf(name, sizeof name, "%s_first_np%d", label, size);
        report_latency(name, samples, 1);
        snprintf(name, sizeof name, "%s_later_np%d", label, size);
        report_latency(name, samples + 1, rounds - 1);
        snprintf(name, sizeof name, "%s_lookup_np%d", label, size);
        report_latency(name, &lookup, 1);
    }
    free(samples);
    MPI_Finalize();
    return 0;
}

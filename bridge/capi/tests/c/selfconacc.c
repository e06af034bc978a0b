/*
 * Modelled on MPICH's test/mpi/spawn/selfconacc.c (connect/accept between
 * two ranks over MPI_COMM_SELF, the port name passed out of band), but
 * between two separately started jobs, which may be of different MPI
 * implementations. Plain MPI, no Isthmus call.
 *
 *   selfconacc accept DIR    each rank r: MPI_Open_port, writes the port
 *                            name to DIR/port.r, MPI_Comm_accept on
 *                            MPI_COMM_SELF
 *   selfconacc connect DIR   each rank r: reads DIR/port.r (waiting for it,
 *                            60 s at most), MPI_Comm_connect on MPI_COMM_SELF
 *
 * Rank r of one job pairs with rank r of the other. Each pair exchanges
 * values both ways, disconnects (the handle becomes MPI_COMM_NULL), then
 * accepts/connects a second time on the same port, exchanges other values
 * and disconnects again; the acceptor then closes the port. Each rank
 * prints "PASS <mode> rank <r>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "check.h"

static int rank;

static void ok(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS)
        MPI_Error_string(rc, msg, &len);
    CHECK(rc == MPI_SUCCESS, "%s: %s", what, msg);
}

static void write_port(const char *dir, const char *port)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/port.%d.tmp", dir, rank);
    snprintf(path, sizeof path, "%s/port.%d", dir, rank);
    FILE *f = fopen(tmp, "w");
    CHECK(f, "cannot write %s", tmp);
    CHECK(fputs(port, f) >= 0 && fclose(f) == 0, "cannot write %s", tmp);
    CHECK(rename(tmp, path) == 0, "cannot rename %s", tmp);
}

static void read_port(const char *dir, char *port)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/port.%d", dir, rank);
    for (int tries = 0;; tries++) {
        FILE *f = fopen(path, "r");
        if (f) {
            int got = fgets(port, MPI_MAX_PORT_NAME, f) != NULL;
            fclose(f);
            if (got)
                return;
        }
        CHECK(tries < 1200, "%s never appeared", path);
        usleep(50000);
    }
}

/* One round on a fresh intercommunicator: as in selfconacc, the acceptor
 * sends first; the connector answers with the value plus one. */
static void round_trip(MPI_Comm inter, int accepting, int value)
{
    int flag, rsize, got = -1;
    MPI_Status status;
    ok(MPI_Comm_test_inter(inter, &flag), "MPI_Comm_test_inter");
    CHECK(flag, "not an intercommunicator");
    ok(MPI_Comm_remote_size(inter, &rsize), "MPI_Comm_remote_size");
    CHECK(rsize == 1, "remote size %d, expected 1 (MPI_COMM_SELF)", rsize);
    if (accepting) {
        ok(MPI_Send(&value, 1, MPI_INT, 0, 0, inter), "MPI_Send");
        ok(MPI_Recv(&got, 1, MPI_INT, 0, 1, inter, &status), "MPI_Recv");
        CHECK(got == value + 1, "got %d, expected %d", got, value + 1);
    } else {
        ok(MPI_Recv(&got, 1, MPI_INT, 0, 0, inter, &status), "MPI_Recv");
        CHECK(got == value, "got %d, expected %d", got, value);
        got++;
        ok(MPI_Send(&got, 1, MPI_INT, 0, 1, inter), "MPI_Send");
    }
    CHECK(status.MPI_SOURCE == 0 && status.MPI_TAG == accepting, "status source %d tag %d",
          status.MPI_SOURCE, status.MPI_TAG);
}

int main(int argc, char **argv)
{
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter = MPI_COMM_NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK(argc == 3, "usage: selfconacc accept|connect DIR");
    const char *mode = argv[1], *dir = argv[2];
    int accepting = !strcmp(mode, "accept");
    CHECK(accepting || !strcmp(mode, "connect"), "unknown mode %s", mode);

    if (accepting) {
        ok(MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
        write_port(dir, port);
    } else {
        read_port(dir, port);
    }
    for (int round = 0; round < 2; round++) {
        if (accepting)
            ok(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), "MPI_Comm_accept");
        else
            ok(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter),
               "MPI_Comm_connect");
        CHECK(inter != MPI_COMM_NULL, "round %d: no intercommunicator", round);
        round_trip(inter, accepting, 100 * (round + 1) + rank);
        ok(MPI_Comm_disconnect(&inter), "MPI_Comm_disconnect");
        CHECK(inter == MPI_COMM_NULL, "round %d: disconnect left a handle", round);
    }
    if (accepting)
        ok(MPI_Close_port(port), "MPI_Close_port");
    MPI_Barrier(MPI_COMM_WORLD);
    printf("PASS %s rank %d\n", mode, rank);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

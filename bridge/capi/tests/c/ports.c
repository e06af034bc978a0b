/*
 * MPI-2 names and ports across jobs (and implementations), unmodified MPI:
 *   ports accept SERVICE    open a port, publish it, accept, exchange
 *   ports connect SERVICE   look the name up, connect, exchange
 *   ports noaccept          connect to a port nobody accepts on, with the
 *                           info key isthmus_timeout = 2: a clear error
 *   ports foreign           connect to a port Isthmus did not open: refused
 * Each rank prints "PASS <mode> rank <r>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "check.h"

static int rank, size;

/* Every rank sends to and receives from every remote rank. */
static void exchange(MPI_Comm inter, int accepting)
{
    int rsize, flag, out = 1000 * accepting + rank, in[64];
    MPI_Request reqs[128];
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "not an intercommunicator");
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize <= 64, "remote size %d", rsize);
    for (int q = 0; q < rsize; q++) {
        MPI_Irecv(&in[q], 1, MPI_INT, q, 3, inter, &reqs[q]);
        MPI_Isend(&out, 1, MPI_INT, q, 3, inter, &reqs[rsize + q]);
    }
    CHECK(MPI_Waitall(2 * rsize, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall");
    for (int q = 0; q < rsize; q++)
        CHECK(in[q] == 1000 * !accepting + q, "from %d got %d", q, in[q]);
}

static void expect_error(int rc, const char *needle)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK(rc != MPI_SUCCESS, "expected an error containing \"%s\"", needle);
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, needle), "message \"%s\" lacks \"%s\"", msg, needle);
    if (rank == 0)
        printf("ERROR %s\n", msg);
}

int main(int argc, char **argv)
{
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc >= 2, "usage: ports MODE [SERVICE]");
    const char *mode = argv[1];
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (!strcmp(mode, "accept")) {
        if (rank == 0) {
            CHECK(MPI_Open_port(MPI_INFO_NULL, port) == MPI_SUCCESS, "open port");
            CHECK(MPI_Publish_name(argv[2], MPI_INFO_NULL, port) == MPI_SUCCESS, "publish");
        }
        CHECK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter) == MPI_SUCCESS,
              "accept");
        exchange(inter, 1);
        CHECK(MPI_Comm_disconnect(&inter) == MPI_SUCCESS, "disconnect");
        if (rank == 0) {
            CHECK(MPI_Unpublish_name(argv[2], MPI_INFO_NULL, port) == MPI_SUCCESS, "unpublish");
            CHECK(MPI_Close_port(port) == MPI_SUCCESS, "close");
        }
    } else if (!strcmp(mode, "connect")) {
        if (rank == 0) {
            int tries = 0;
            while (MPI_Lookup_name(argv[2], MPI_INFO_NULL, port) != MPI_SUCCESS) {
                CHECK(++tries < 1200, "the name was never published");
                usleep(50000);
            }
        }
        CHECK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter) == MPI_SUCCESS,
              "connect");
        exchange(inter, 0);
        CHECK(MPI_Comm_disconnect(&inter) == MPI_SUCCESS, "disconnect");
    } else if (!strcmp(mode, "noaccept")) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "isthmus_timeout", "2");
        if (rank == 0)
            MPI_Open_port(MPI_INFO_NULL, port);
        expect_error(MPI_Comm_connect(port, info, 0, MPI_COMM_WORLD, &inter),
                     "no process accepted on port");
        MPI_Info_free(&info);
        expect_error(MPI_Lookup_name("isthmus-test-never-published", MPI_INFO_NULL, port),
                     "is published");
    } else if (!strcmp(mode, "foreign")) {
        strcpy(port, "tag#0$connentry#0100007F$");
        expect_error(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter),
                     "not a port opened by Isthmus");
    } else {
        CHECK(0, "unknown mode %s", mode);
    }
    printf("PASS %s rank %d\n", mode, rank);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

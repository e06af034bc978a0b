/*
 * MPI_Comm_join across implementations, plain MPI (no Isthmus call); one
 * rank per job:
 *   join listen FILE   listens on 127.0.0.1 (a port the kernel picks),
 *        writes the port number to FILE, accepts one connection and joins
 *        over it.
 *   join connect FILE  waits for FILE, connects to that port and joins.
 *   Then both: point-to-point both ways, Allreduce and Bcast with MPI_ROOT
 *        on the intercommunicator; the socket is still usable (one byte
 *        each way); disconnect. Prints "PASS join rank 0".
 *   join fail FILE     connects as `connect` does to a peer that is not
 *        joining (the test driver), with MPI_ERRORS_RETURN: prints
 *        "JOIN-ERROR null=<0|1> <MPI_Error_string>", then "PASS fail rank 0".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "check.h"
#include "join_socket.h"

static int rank;

static int listen_and_accept(const char *file)
{
    int fd = join_listen(file);
    CHECK(fd >= 0, "cannot listen on 127.0.0.1, write the port to %s and accept", file);
    return fd;
}

static int connect_to(const char *file)
{
    int fd = join_connect(file);
    CHECK(fd >= 0, "cannot connect to the port in %s", file);
    return fd;
}

static int joined(int fd, int listener)
{
    MPI_Comm inter;
    int rc = MPI_Comm_join(fd, &inter);
    CHECK(rc == MPI_SUCCESS, "MPI_Comm_join returned %d", rc);
    int flag, rsize;
    MPI_Comm_test_inter(inter, &flag);
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(flag && rsize == 1, "inter %d, remote size %d", flag, rsize);

    /* Point-to-point both ways. */
    int v = listener ? 41 : 7, back = -1;
    if (listener) {
        MPI_Send(&v, 1, MPI_INT, 0, 3, inter);
        MPI_Recv(&back, 1, MPI_INT, 0, 4, inter, MPI_STATUS_IGNORE);
        CHECK(back == 2 * v, "got %d back", back);
    } else {
        MPI_Recv(&back, 1, MPI_INT, 0, 3, inter, MPI_STATUS_IGNORE);
        CHECK(back == 41, "got %d", back);
        back *= 2;
        MPI_Send(&back, 1, MPI_INT, 0, 4, inter);
    }
    /* Collectives: each side gets the other's value; a Bcast each way. */
    int mine = listener ? 1000 : 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK(sum == (listener ? 1 : 1000), "Allreduce gave %d", sum);
    for (int turn = 0; turn < 2; turn++) {
        double d[2] = {0, 0};
        if ((turn == 0) == listener) {
            d[0] = 2.5; d[1] = -1.0 - turn;
            MPI_Bcast(d, 2, MPI_DOUBLE, MPI_ROOT, inter);
        } else {
            MPI_Bcast(d, 2, MPI_DOUBLE, 0, inter);
            CHECK(d[0] == 2.5 && d[1] == -1.0 - turn, "Bcast gave %g %g", d[0], d[1]);
        }
    }
    /* The socket is left as it was: usable, nothing unread. */
    int in = join_swap_byte(fd, listener ? 'L' : 'C');
    CHECK(in == (listener ? 'C' : 'L'), "read %d after the join", in);
    MPI_Comm_disconnect(&inter);
    CHECK(inter == MPI_COMM_NULL, "disconnect left a handle");
    close(fd);
    printf("PASS join rank %d\n", rank);
    return 0;
}

static int fail(const char *file)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int fd = connect_to(file);
    MPI_Comm inter = MPI_COMM_WORLD;
    int rc = MPI_Comm_join(fd, &inter);
    CHECK(rc != MPI_SUCCESS, "MPI_Comm_join with a peer that does not join succeeded");
    char text[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, text, &len);
    printf("JOIN-ERROR null=%d %s\n", inter == MPI_COMM_NULL, text);
    close(fd);
    printf("PASS fail rank %d\n", rank);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rc = 1;
    if (argc >= 3 && strcmp(argv[1], "listen") == 0)
        rc = joined(listen_and_accept(argv[2]), 1);
    else if (argc >= 3 && strcmp(argv[1], "connect") == 0)
        rc = joined(connect_to(argv[2]), 0);
    else if (argc >= 3 && strcmp(argv[1], "fail") == 0)
        rc = fail(argv[2]);
    else
        fprintf(stderr, "usage: join listen|connect|fail FILE\n");
    MPI_Finalize();
    return rc;
}

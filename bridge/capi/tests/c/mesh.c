/*
 * Intercommunicators between three jobs through the non-blocking C call:
 *   mesh GROUP PEER1 PEER2
 * Each job starts Isthmus_Intercomm_icreate with PEER1 then PEER2 and
 * polls the two requests with MPI_Test in turn (timing each call: MPI_Test
 * must never block), while the other jobs do the same in their own order.
 * Then every rank sends its rank to every remote rank of both
 * intercommunicators, and checks what it receives. Each rank prints
 * "PASS mesh rank <r> slowest-test-us <t>".
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "isthmus.h"

static int rank;

/* Our rank to every remote rank of `inter`. */
static void send_ids(MPI_Comm inter, const char *peer)
{
    int rsize = 0;
    MPI_Comm_remote_size(inter, &rsize);
    for (int q = 0; q < rsize; q++)
        CHECK(MPI_Send(&rank, 1, MPI_INT, q, 77, inter) == MPI_SUCCESS, "send to %s", peer);
}

static void recv_ids(MPI_Comm inter, const char *peer)
{
    int rsize = 0;
    MPI_Comm_remote_size(inter, &rsize);
    for (int q = 0; q < rsize; q++) {
        int v = -1;
        CHECK(MPI_Recv(&v, 1, MPI_INT, q, 77, inter, MPI_STATUS_IGNORE) == MPI_SUCCESS,
              "recv from %s", peer);
        CHECK(v == q, "rank id %d from rank %d of %s", v, q, peer);
    }
}

int main(int argc, char **argv)
{
    int handle, provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(argc == 4, "usage: mesh GROUP PEER1 PEER2");
    const char *group = argv[1];
    const char *peers[2] = {argv[2], argv[3]};
    CHECK(Isthmus_Register(group, MPI_COMM_WORLD, &handle) == MPI_SUCCESS, "register");
    MPI_Comm inter[2] = {MPI_COMM_NULL, MPI_COMM_NULL};
    MPI_Request req[2];
    for (int i = 0; i < 2; i++)
        CHECK(Isthmus_Intercomm_icreate(handle, peers[i], &inter[i], &req[i]) == MPI_SUCCESS,
              "icreate with %s", peers[i]);
    int done[2] = {0, 0};
    double slowest = 0, start = MPI_Wtime();
    while (!done[0] || !done[1]) {
        for (int i = 0; i < 2; i++) {
            if (done[i])
                continue;
            double t = MPI_Wtime();
            CHECK(MPI_Test(&req[i], &done[i], MPI_STATUS_IGNORE) == MPI_SUCCESS, "test %s",
                  peers[i]);
            t = MPI_Wtime() - t;
            if (t > slowest)
                slowest = t;
        }
        CHECK(MPI_Wtime() - start < 90, "intercomms still pending after 90 s");
        usleep(1000);
    }
    CHECK(slowest < 0.5, "an MPI_Test took %.3f s", slowest);
    for (int i = 0; i < 2; i++) {
        int flag = 0;
        MPI_Comm_test_inter(inter[i], &flag);
        CHECK(flag, "not an intercommunicator (%s)", peers[i]);
        send_ids(inter[i], peers[i]);
    }
    /* Receives only after sending on both: the jobs go in different
     * orders, and none may wait for one that waits for a third. */
    for (int i = 0; i < 2; i++)
        recv_ids(inter[i], peers[i]);
    printf("PASS mesh rank %d slowest-test-us %.0f\n", rank, slowest * 1e6);
    fflush(stdout);
    for (int i = 0; i < 2; i++)
        MPI_Comm_free(&inter[i]);
    CHECK(Isthmus_Leave(handle) == MPI_SUCCESS, "leave");
    MPI_Finalize();
    return 0;
}

/* The C side of the Fortran exchange test: the same protocol as
 * exchange.F90, with the Fortran datatypes (MPI_DOUBLE_PRECISION,
 * MPI_INTEGER) a C program uses to talk to Fortran code. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isthmus.h"

static int rank;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("c rank %d: FAILED: %s\n", rank, what);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    int provided, nprocs, handle, rsize, flag, n, i, idx, cmp, done, outcount, indices[2], seen[2];
    MPI_Comm inter, dup;
    MPI_Request reqs[4], req;
    MPI_Status stats[4], st;
    double sendd[5], recvd[5], two[2], got2[2];
    int sendi[3], recvi[3], self_out, self_in;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3) {
        fprintf(stderr, "usage: exchange GROUP PEER\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *group = argv[1], *peer = argv[2];
    int side = strcmp(group, peer) < 0 ? 1 : 2, other = 3 - side;

    check(Isthmus_Register(group, MPI_COMM_WORLD, &handle) == MPI_SUCCESS, "Isthmus_Register");
    check(Isthmus_Intercomm_create_timeout(handle, peer, 120.0, &inter) == MPI_SUCCESS,
          "Isthmus_Intercomm_create_timeout");
    MPI_Comm_test_inter(inter, &flag);
    check(flag, "MPI_Comm_test_inter");
    MPI_Comm_remote_size(inter, &rsize);
    check(rsize == nprocs, "MPI_Comm_remote_size");

    /* 1. */
    for (i = 0; i < 5; i++)
        sendd[i] = side * 1000 + rank * 10 + i + 1;
    self_out = 4242 + rank;
    MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 1, inter, &reqs[0]);
    MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 1, inter, &reqs[1]);
    MPI_Irecv(&self_in, 1, MPI_INT, rank, 99, MPI_COMM_WORLD, &reqs[2]);
    MPI_Isend(&self_out, 1, MPI_INT, rank, 99, MPI_COMM_WORLD, &reqs[3]);
    check(MPI_Waitall(4, reqs, stats) == MPI_SUCCESS, "MPI_Waitall");
    check(stats[0].MPI_SOURCE == rank && stats[0].MPI_TAG == 1, "status of the bridge receive");
    for (i = 0; i < 5; i++)
        check(recvd[i] == other * 1000 + rank * 10 + i + 1, "data of the non-blocking exchange");
    check(self_in == 4242 + rank, "native message in the same MPI_Waitall");
    printf("c rank %d waitall received %g %g %g %g %g\n", rank, recvd[0], recvd[1], recvd[2],
           recvd[3], recvd[4]);

    /* 2. */
    sendi[0] = side;
    sendi[1] = rank;
    sendi[2] = 7;
    if (side == 1) {
        MPI_Send(sendi, 3, MPI_INTEGER, rank, 2, inter);
        MPI_Recv(recvi, 3, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &st);
    } else {
        MPI_Recv(recvi, 3, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &st);
        MPI_Send(sendi, 3, MPI_INTEGER, rank, 2, inter);
    }
    MPI_Get_count(&st, MPI_INTEGER, &n);
    check(st.MPI_SOURCE == rank && st.MPI_TAG == 2 && n == 3, "status of MPI_Recv");
    check(recvi[0] == other && recvi[1] == rank && recvi[2] == 7, "data of MPI_Recv");
    printf("c rank %d recv received %d %d %d\n", rank, recvi[0], recvi[1], recvi[2]);

    /* 3. */
    two[0] = side + 0.5;
    two[1] = rank + 0.25;
    MPI_Sendrecv(two, 2, MPI_DOUBLE_PRECISION, rank, 3, got2, 2, MPI_DOUBLE_PRECISION, rank, 3,
                 inter, MPI_STATUS_IGNORE);
    check(got2[0] == other + 0.5 && got2[1] == rank + 0.25, "data of MPI_Sendrecv");

    /* 4. */
    if (side == 1)
        MPI_Ssend(sendi, 3, MPI_INTEGER, rank, 4, inter);
    MPI_Probe(rank, 4, inter, &st);
    MPI_Get_count(&st, MPI_INTEGER, &n);
    check(n == 3 && st.MPI_TAG == 4, "status of MPI_Probe");
    MPI_Recv(recvi, 3, MPI_INTEGER, rank, 4, inter, MPI_STATUS_IGNORE);
    check(recvi[0] == other, "data after MPI_Probe");
    if (side == 2)
        MPI_Ssend(sendi, 3, MPI_INTEGER, rank, 4, inter);

    /* 5. */
    MPI_Isend(sendi, 3, MPI_INTEGER, rank, 5, inter, &req);
    flag = 0;
    while (!flag)
        MPI_Iprobe(rank, 5, inter, &flag, &st);
    MPI_Recv(recvi, 3, MPI_INTEGER, rank, 5, inter, MPI_STATUS_IGNORE);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check(req == MPI_REQUEST_NULL && recvi[0] == other, "MPI_Iprobe and MPI_Wait");

    /* 6. */
    MPI_Comm_dup(inter, &dup);
    MPI_Comm_test_inter(dup, &flag);
    check(flag, "the duplicate is an intercommunicator");
    MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 6, dup, &reqs[0]);
    MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 6, dup, &reqs[1]);
    flag = 0;
    while (!flag)
        MPI_Test(&reqs[0], &flag, &st);
    check(st.MPI_TAG == 6 && recvd[4] == other * 1000 + rank * 10 + 5, "MPI_Test on the duplicate");
    MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    MPI_Comm_compare(inter, dup, &cmp);
    check(cmp == MPI_CONGRUENT, "MPI_Comm_compare of the duplicate");
    MPI_Comm_free(&dup);

    /* 7. */
    MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 7, inter, &reqs[0]);
    MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 7, inter, &reqs[1]);
    seen[0] = seen[1] = 0;
    for (i = 0; i < 2; i++) {
        MPI_Waitany(2, reqs, &idx, &st);
        check(idx == 0 || idx == 1, "MPI_Waitany index");
        seen[idx] = 1;
    }
    check(seen[0] && seen[1], "MPI_Waitany completed both");
    check(recvd[2] == other * 1000 + rank * 10 + 3, "data of MPI_Waitany");

    /* 8. */
    MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 8, inter, &reqs[0]);
    MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 8, inter, &reqs[1]);
    flag = 0;
    while (!flag)
        MPI_Testall(2, reqs, &flag, stats);
    check(stats[0].MPI_TAG == 8 && recvd[0] == other * 1000 + rank * 10 + 1, "MPI_Testall");

    /* 9. */
    MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 9, inter, &reqs[0]);
    MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 9, inter, &reqs[1]);
    for (done = 0; done < 2; done += outcount) {
        MPI_Waitsome(2, reqs, &outcount, indices, stats);
        for (i = 0; i < outcount; i++)
            check(indices[i] == 0 || indices[i] == 1, "MPI_Waitsome index");
    }
    check(recvd[1] == other * 1000 + rank * 10 + 2, "data of MPI_Waitsome");

    /* 10. */
    MPI_Irecv(recvi, 3, MPI_INTEGER, rank, 77, inter, &req);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &flag);
    check(flag, "MPI_Cancel of a receive");

    /* 11. Sends that completed survive their sender's MPI_Finalize: side 1
     * sends more than its eager window, then leaves and finalizes at once;
     * side 2 receives only after a nap. */
    {
        int flood[256], j;
        if (side == 1) {
            for (i = 1; i <= 8000; i++) {
                for (j = 0; j < 256; j++)
                    flood[j] = i * 7 + rank;
                MPI_Send(flood, 256, MPI_INTEGER, rank, 11, inter);
            }
        } else {
            sleep(2);
            for (i = 1; i <= 8000; i++) {
                int ok = MPI_Recv(flood, 256, MPI_INTEGER, rank, 11, inter, MPI_STATUS_IGNORE) == MPI_SUCCESS;
                for (j = 0; j < 256; j++)
                    ok = ok && flood[j] == i * 7 + rank;
                check(ok, "a message sent before its sender finalized");
            }
        }
    }

    MPI_Comm_free(&inter);
    check(Isthmus_Leave(handle) == MPI_SUCCESS, "Isthmus_Leave");
    printf("c rank %d: all checks passed\n", rank);
    MPI_Finalize();
    return 0;
}

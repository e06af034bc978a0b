/*
 * MPI's progress rule for the nonblocking collectives on an Isthmus
 * intercommunicator (the MTest harness of tests/mtest), and two of them
 * outstanding on one communicator:
 * - the left group's rank 0 posts MPI_Ibarrier, then only polls MPI_Test
 *   while it answers the right group's rank 0's pings (MPI_Iprobe first, so
 *   it never waits in a receive). The right rank 0 enters the barrier only
 *   once all its pings were answered: the left rank 0's barrier must
 *   complete, through MPI_Test alone, and not before the last ping (a
 *   barrier passed before every rank of both groups entered is wrong);
 * - every rank starts MPI_Ibcast (root: left rank 0) and MPI_Iallreduce on
 *   the same communicator and completes them in reverse order (MPI_Wait on
 *   the second first; the left group with a native MPI_COMM_WORLD request
 *   in the same MPI_Waitall), then checks both results;
 * - MPI_Ireduce to each group's rank 0 in turn, waited together, while an
 *   MPI_Ialltoall on the same communicator is outstanding;
 * - MPI_Iallreduce_c where the MPI has it (MPICH 4), and
 *   MPI_Ireduce_scatter_block (each group gets its blocks of the other's);
 * - the v/w forms and MPI_Ireduce_scatter all outstanding together with a
 *   native MPI_COMM_WORLD exchange, completed by polling MPI_Testall:
 *   Iallgatherv and Ireduce_scatter with counts differing per rank,
 *   Igatherv to the left group's rank 0 (gaps between the blocks left
 *   untouched), Iscatterv from the right group's rank 0, Ialltoallv and
 *   Ialltoallw;
 * - MPI_IN_PLACE in MPI_Iallreduce is MPI_ERR_BUFFER, and MPI_Ibcast with a
 *   root of neither group MPI_ERR_ROOT, at once.
 * MTest_Finalize prints " No Errors" when no check failed.
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "mpitest.h"

#include "expect.h"

enum { PINGS = 50, PING = 7, PONG = 8 };

/* Left rank 0: the barrier's request, polled with MPI_Test only, while the
 * pings are answered. Returns how many were answered when it completed. */
static int poll_barrier_answering(MPI_Comm comm)
{
    MPI_Request req;
    int done = 0, answered = 0;
    OK(MPI_Ibarrier(comm, &req));
    while (!done) {
        int ping = 0;
        OK(MPI_Iprobe(0, PING, comm, &ping, MPI_STATUS_IGNORE));
        if (ping) {
            int n;
            OK(MPI_Recv(&n, 1, MPI_INT, 0, PING, comm, MPI_STATUS_IGNORE));
            EXPECT(n == answered, "ping %d arrived where %d was due", n, answered);
            OK(MPI_Send(&n, 1, MPI_INT, 0, PONG, comm));
            answered++;
        }
        OK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    }
    EXPECT(req == MPI_REQUEST_NULL, "a completed request is not MPI_REQUEST_NULL");
    return answered;
}

/* Right rank 0: every ping answered before it enters the barrier. */
static void ping_then_barrier(MPI_Comm comm)
{
    for (int i = 0; i < PINGS; i++) {
        int back = -1;
        OK(MPI_Send(&i, 1, MPI_INT, 0, PING, comm));
        OK(MPI_Recv(&back, 1, MPI_INT, 0, PONG, comm, MPI_STATUS_IGNORE));
        EXPECT(back == i, "pong %d for ping %d", back, i);
    }
    MPI_Request req;
    OK(MPI_Ibarrier(comm, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

int main(int argc, char *argv[])
{
    MPI_Comm comm;
    int left, rank, size, remote;

    MTest_Init(&argc, &argv);
    MTestGetIntercomm(&comm, &left, 1);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_remote_size(comm, &remote);

    /* The progress rule. */
    if (left && rank == 0) {
        int answered = poll_barrier_answering(comm);
        EXPECT(answered == PINGS, "the barrier completed after %d of %d pings: the right "
               "group's rank 0 had not entered it", answered, PINGS);
    } else if (!left && rank == 0) {
        ping_then_barrier(comm);
    } else {
        MPI_Request req;
        OK(MPI_Ibarrier(comm, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }

    /* Two outstanding on one communicator, completed in reverse order. */
    {
        long value[3] = { -1, -1, -1 };
        int mine = rank + 1, sum = -1;
        int root = left ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        MPI_Request reqs[3];
        if (left && rank == 0) {
            value[0] = 12345678900L;
            value[1] = -3;
            value[2] = 42;
        }
        OK(MPI_Ibcast(value, 3, MPI_LONG, root, comm, &reqs[0]));
        OK(MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm, &reqs[1]));
        if (left) {
            /* A native request of MPI_COMM_WORLD in the same Waitall. */
            int token = rank, got = -1, wsize;
            MPI_Comm_size(MPI_COMM_WORLD, &wsize);
            MPI_Request pair[2];
            OK(MPI_Irecv(&got, 1, MPI_INT, (rank + wsize - 1) % wsize, 3, MPI_COMM_WORLD,
                         &pair[0]));
            OK(MPI_Isend(&token, 1, MPI_INT, (rank + 1) % wsize, 3, MPI_COMM_WORLD, &pair[1]));
            reqs[2] = pair[0];
            OK(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE));
            MPI_Request rest[2] = { reqs[0], reqs[2] };
            OK(MPI_Waitall(2, rest, MPI_STATUSES_IGNORE));
            OK(MPI_Wait(&pair[1], MPI_STATUS_IGNORE));
            EXPECT(got == (rank + wsize - 1) % wsize, "native token %d", got);
        } else {
            OK(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE));
            OK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
            EXPECT(value[0] == 12345678900L && value[1] == -3 && value[2] == 42,
                   "Ibcast delivered %ld %ld %ld", value[0], value[1], value[2]);
        }
        /* Each group gets the other's sum of (rank + 1). */
        EXPECT(sum == remote * (remote + 1) / 2, "Iallreduce gave %d, not %d", sum,
               remote * (remote + 1) / 2);
    }

    /* MPI_Ireduce to each group's rank 0 in turn, while an MPI_Ialltoall
     * is outstanding on the same communicator (completed last). */
    {
        int send[2], recv[2] = { -1, -1 }, *out = malloc(remote * sizeof(int)),
            *in = malloc(remote * sizeof(int));
        MPI_Request a2a, red[2];
        for (int j = 0; j < remote; j++) {
            out[j] = 1000 * rank + j;
            in[j] = -1;
        }
        OK(MPI_Ialltoall(out, 1, MPI_INT, in, 1, MPI_INT, comm, &a2a));
        for (int turn = 0; turn < 2; turn++) {
            /* turn 0: the left group's rank 0 is the root; turn 1: the right's. */
            int rooted = (turn == 0) == left;
            int root = rooted ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            send[turn] = rank + 1;
            OK(MPI_Ireduce(&send[turn], &recv[turn], 1, MPI_INT, MPI_SUM, root, comm,
                           &red[turn]));
        }
        OK(MPI_Waitall(2, red, MPI_STATUSES_IGNORE));
        OK(MPI_Wait(&a2a, MPI_STATUS_IGNORE));
        if (rank == 0) {
            int mine = left ? 0 : 1;
            EXPECT(recv[mine] == remote * (remote + 1) / 2, "Ireduce gave %d, not %d",
                   recv[mine], remote * (remote + 1) / 2);
        }
        for (int j = 0; j < remote; j++)
            EXPECT(in[j] == 1000 * j + rank, "Ialltoall block %d is %d", j, in[j]);
        free(out);
        free(in);
    }

    /* The large-count form where the MPI has it (MPI 4: MPICH 4, not Open
     * MPI 4.1), matching the int form on the other side. */
    {
        int mine = 2 * (rank + 1), sum = -1;
        MPI_Request req;
#if MPI_VERSION >= 4
        OK(MPI_Iallreduce_c(&mine, &sum, (MPI_Count) 1, MPI_INT, MPI_SUM, comm, &req));
#else
        OK(MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm, &req));
#endif
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        EXPECT(sum == remote * (remote + 1), "Iallreduce(_c) gave %d, not %d", sum,
               remote * (remote + 1));
    }

    /* MPI_Ireduce_scatter_block: each group reduces `remote` elements per
     * rank; rank k of the other group gets elements k*remote.. of it. */
    {
        int *send = malloc(size * remote * sizeof(int)), *recv = malloc(remote * sizeof(int));
        MPI_Request req;
        for (int j = 0; j < size * remote; j++)
            send[j] = 100 * rank + j;
        for (int m = 0; m < remote; m++)
            recv[m] = -1;
        OK(MPI_Ireduce_scatter_block(send, recv, remote, MPI_INT, MPI_SUM, comm, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (int m = 0; m < remote; m++) {
            int want = 100 * remote * (remote - 1) / 2 + remote * (rank * remote + m);
            EXPECT(recv[m] == want, "Ireduce_scatter_block element %d is %d, not %d", m,
                   recv[m], want);
        }
        free(send);
        free(recv);
    }

    /* The v/w forms and MPI_Ireduce_scatter outstanding together, beside a
     * native exchange on MPI_COMM_WORLD, completed by polling MPI_Testall. */
    {
        enum { T = 12 }; /* Ireduce_scatter's elements, alike in both groups */
        int big = size > remote ? size : remote;
        int *agv_out = malloc((size + 1) * sizeof(int));
        int *agv_in = malloc(remote * (remote + 1) / 2 * sizeof(int));
        int *agv_counts = malloc(remote * sizeof(int)), *agv_displs = malloc(remote * sizeof(int));
        int gv_out[2] = { rank, -rank }, *gv_in = malloc(3 * remote * sizeof(int));
        int *gv_counts = malloc(remote * sizeof(int)), *gv_displs = malloc(remote * sizeof(int));
        int *sv_out = malloc(remote * (remote + 1) / 2 * sizeof(int));
        int *sv_in = malloc(big * sizeof(int));
        int *sv_counts = malloc(remote * sizeof(int)), *sv_displs = malloc(remote * sizeof(int));
        int rs_out[T], rs_in[T], *rs_counts = malloc(size * sizeof(int));
        int *a_out = malloc(remote * big * sizeof(int)), *a_in = malloc(remote * big * sizeof(int));
        int *v_counts = malloc(remote * sizeof(int)), *v_sdispls = malloc(remote * sizeof(int));
        int *v_rcounts = malloc(remote * sizeof(int)), *v_rdispls = malloc(remote * sizeof(int));
        int *w_in = malloc(remote * big * sizeof(int)), *w_sdispls = malloc(remote * sizeof(int));
        int *w_rdispls = malloc(remote * sizeof(int));
        MPI_Datatype *w_types = malloc(remote * sizeof(MPI_Datatype));
        int token = rank, got = -1, wsize, done = 0;
        MPI_Request reqs[8];
        MPI_Comm_size(MPI_COMM_WORLD, &wsize);
        /* Iallgatherv: rank k sends k+1 values 10k+i; block j of the
         * other group's lands at its prefix sum. */
        for (int i = 0; i <= rank; i++)
            agv_out[i] = 10 * rank + i;
        for (int j = 0, at = 0; j < remote; j++) {
            agv_counts[j] = j + 1;
            agv_displs[j] = at;
            at += j + 1;
        }
        for (int i = 0; i < remote * (remote + 1) / 2; i++)
            agv_in[i] = -1;
        /* Igatherv: each right rank k sends {k, -k} to the left rank 0,
         * which puts block j at 3j (the third element of each stays -1). */
        for (int j = 0; j < remote; j++) {
            gv_counts[j] = 2;
            gv_displs[j] = 3 * j;
        }
        for (int i = 0; i < 3 * remote; i++)
            gv_in[i] = -1;
        int gv_root = left ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        /* Iscatterv: the right rank 0 sends left rank k its k+1 values
         * 100 + (prefix + i); its arrays have an entry per remote rank. */
        for (int j = 0, at = 0; j < remote; j++) {
            sv_counts[j] = j + 1;
            sv_displs[j] = at;
            at += j + 1;
        }
        for (int i = 0; i < remote * (remote + 1) / 2; i++)
            sv_out[i] = 100 + i;
        for (int i = 0; i < big; i++)
            sv_in[i] = -1;
        int sv_root = left ? 0 : (rank == 0 ? MPI_ROOT : MPI_PROC_NULL);
        /* Ireduce_scatter: T elements in each group, rank i gets i+1 of
         * them, the last rank the rest. */
        for (int i = 0, at = 0; i < size; i++) {
            rs_counts[i] = i < size - 1 ? i + 1 : T - at;
            at += rs_counts[i];
        }
        for (int e = 0; e < T; e++) {
            rs_out[e] = rank + 10 * e;
            rs_in[e] = -1;
        }
        /* Ialltoallv and Ialltoallw: to remote rank j, j+1 values
         * 1000 * rank + j (at j*big); from remote rank j, rank+1 values
         * (at j*big). */
        for (int j = 0; j < remote; j++) {
            for (int i = 0; i < big; i++) {
                a_out[j * big + i] = 1000 * rank + j;
                a_in[j * big + i] = -1;
                w_in[j * big + i] = -1;
            }
            v_counts[j] = j + 1;
            v_sdispls[j] = j * big;
            v_rcounts[j] = rank + 1;
            v_rdispls[j] = j * big;
            w_sdispls[j] = j * big * (int) sizeof(int);
            w_rdispls[j] = j * big * (int) sizeof(int);
            w_types[j] = MPI_INT;
        }
        OK(MPI_Iallgatherv(agv_out, rank + 1, MPI_INT, agv_in, agv_counts, agv_displs, MPI_INT,
                           comm, &reqs[0]));
        OK(MPI_Igatherv(gv_out, 2, MPI_INT, gv_in, gv_counts, gv_displs, MPI_INT, gv_root, comm,
                        &reqs[1]));
        OK(MPI_Iscatterv(sv_out, sv_counts, sv_displs, MPI_INT, sv_in, rank + 1, MPI_INT, sv_root,
                         comm, &reqs[2]));
        OK(MPI_Ireduce_scatter(rs_out, rs_in, rs_counts, MPI_INT, MPI_SUM, comm, &reqs[3]));
        OK(MPI_Ialltoallv(a_out, v_counts, v_sdispls, MPI_INT, a_in, v_rcounts, v_rdispls, MPI_INT,
                          comm, &reqs[4]));
        OK(MPI_Ialltoallw(a_out, v_counts, w_sdispls, w_types, w_in, v_rcounts, w_rdispls, w_types,
                          comm, &reqs[5]));
        OK(MPI_Irecv(&got, 1, MPI_INT, (rank + wsize - 1) % wsize, 4, MPI_COMM_WORLD, &reqs[6]));
        OK(MPI_Isend(&token, 1, MPI_INT, (rank + 1) % wsize, 4, MPI_COMM_WORLD, &reqs[7]));
        while (!done)
            OK(MPI_Testall(8, reqs, &done, MPI_STATUSES_IGNORE));
        EXPECT(got == (rank + wsize - 1) % wsize, "native token %d", got);
        for (int j = 0; j < remote; j++)
            for (int i = 0; i <= j; i++)
                EXPECT(agv_in[agv_displs[j] + i] == 10 * j + i, "Iallgatherv block %d[%d] is %d",
                       j, i, agv_in[agv_displs[j] + i]);
        for (int j = 0; j < remote; j++) {
            int keep = left && rank == 0;
            EXPECT(gv_in[3 * j] == (keep ? j : -1) && gv_in[3 * j + 1] == (keep ? -j : -1) &&
                   gv_in[3 * j + 2] == -1, "Igatherv block %d is %d %d %d", j, gv_in[3 * j],
                   gv_in[3 * j + 1], gv_in[3 * j + 2]);
        }
        for (int i = 0; i < big; i++) {
            int want = left && i <= rank ? 100 + rank * (rank + 1) / 2 + i : -1;
            EXPECT(sv_in[i] == want, "Iscatterv element %d is %d, not %d", i, sv_in[i], want);
        }
        {
            int at = 0, mine = rs_counts[rank];
            for (int i = 0; i < rank; i++)
                at += rs_counts[i];
            for (int m = 0; m < T; m++) {
                int e = at + m;
                int want = m < mine ? remote * (remote - 1) / 2 + remote * 10 * e : -1;
                EXPECT(rs_in[m] == want, "Ireduce_scatter element %d is %d, not %d", m, rs_in[m],
                       want);
            }
        }
        for (int j = 0; j < remote; j++)
            for (int i = 0; i < big; i++) {
                int want = i <= rank ? 1000 * j + rank : -1;
                EXPECT(a_in[j * big + i] == want, "Ialltoallv block %d[%d] is %d, not %d", j, i,
                       a_in[j * big + i], want);
                EXPECT(w_in[j * big + i] == want, "Ialltoallw block %d[%d] is %d, not %d", j, i,
                       w_in[j * big + i], want);
            }
        free(agv_out);
        free(agv_in);
        free(agv_counts);
        free(agv_displs);
        free(gv_in);
        free(gv_counts);
        free(gv_displs);
        free(sv_out);
        free(sv_in);
        free(sv_counts);
        free(sv_displs);
        free(rs_counts);
        free(a_out);
        free(a_in);
        free(v_counts);
        free(v_sdispls);
        free(v_rcounts);
        free(v_rdispls);
        free(w_in);
        free(w_sdispls);
        free(w_rdispls);
        free(w_types);
    }

    /* MPI_IN_PLACE, which MPI defines for intracommunicators only. */
    {
        int x = 1, class = MPI_SUCCESS;
        MPI_Request req = MPI_REQUEST_NULL;
        int rc = MPI_Iallreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, comm, &req);
        MPI_Error_class(rc, &class);
        EXPECT(class == MPI_ERR_BUFFER, "MPI_IN_PLACE gave class %d, not MPI_ERR_BUFFER",
               class);
    }

    /* A root of neither group: MPI_ERR_ROOT at the call, no request. */
    {
        int x = 0, class = MPI_SUCCESS;
        MPI_Request req = MPI_REQUEST_NULL;
        int rc = MPI_Ibcast(&x, 1, MPI_INT, remote + size + 5, comm, &req);
        MPI_Error_class(rc, &class);
        EXPECT(class == MPI_ERR_ROOT, "a bad root gave class %d, not MPI_ERR_ROOT", class);
    }

    MTestFreeComm(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}

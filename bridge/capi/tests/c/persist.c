/*
 * Persistent requests and MPI_Isendrecv on Isthmus communicators (the
 * MTest harness of tests/mtest; issue 17's persistent item), on the
 * Isthmus intercommunicator and on its merge:
 * - MPI_Send_init/Recv_init between left rank r and right rank r, started
 *   with MPI_Startall together with native persistent requests on
 *   MPI_COMM_WORLD, restarted many times with new data, completed by
 *   MPI_Waitall (statuses: source, tag, count); the handles stay, inactive;
 * - an inactive persistent request completes at once with an empty status
 *   (MPI_Wait, MPI_Test, MPI_Request_get_status), MPI_Waitany over inactive
 *   ones gives MPI_UNDEFINED, MPI_Testsome polls one;
 * - MPI_Ssend_init, MPI_Bsend_init, MPI_Rsend_init (after the receive is
 *   started and announced);
 * - MPI_Cancel of a started persistent receive nothing matches, then the
 *   same request restarted and matched; MPI_Request_free of an active
 *   persistent send (delivered) and of an inactive one;
 * - MPI_Isendrecv and MPI_Isendrecv_replace (MPI 4: the MPICH side; the
 *   other side answers with MPI_Sendrecv), their single request;
 * - the persistent collectives (MPI 4: MPI_Bcast_init, MPI_Allreduce_init,
 *   MPI_Barrier_init, MPI_Alltoall_init, MPI_Gather_init, each started three
 *   times; an MPI without them, Open MPI 4.1, issues the nonblocking forms
 *   in the same order, which is what a start issues);
 * - on the merged communicator (and a ring grid over it, persistent
 *   MPI_Neighbor_alltoall_init): a ring of MPI_Send_init/Recv_init (within
 *   a job: the MPI's own persistent requests; across: the bridge's),
 *   statuses naming merged ranks; MPI_Isendrecv round the ring; persistent
 *   MPI_Allreduce_init and MPI_Scan_init;
 * - MPI_Alltoallv_init_c (MPI 4: arrays of MPI_Count) on both.
 * MTest_Finalize prints " No Errors" when no check failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpitest.h"

#include "expect.h"

enum { ROUNDS = 50, TAG = 5, READY = 6, FREED = 7, NEVER = 99 };

#if MPI_VERSION >= 4
#define HAVE_MPI4 1
#else
#define HAVE_MPI4 0
#endif

static void expect_empty(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    EXPECT(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0,
           "%s: an inactive request's status is not empty (source %d, tag %d, count %d)", what,
           st->MPI_SOURCE, st->MPI_TAG, count);
}

/* Send_init/Recv_init with the partner, beside native persistent requests
 * to self on MPI_COMM_WORLD, restarted ROUNDS times. */
static void restarts(MPI_Comm comm, int partner, int me)
{
    int out[3], in[3], self_out, self_in;
    MPI_Request reqs[4];
    MPI_Status st[4];
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    OK(MPI_Send_init(out, 3, MPI_INT, partner, TAG, comm, &reqs[0]));
    OK(MPI_Recv_init(in, 3, MPI_INT, partner, TAG, comm, &reqs[1]));
    OK(MPI_Send_init(&self_out, 1, MPI_INT, wrank, TAG, MPI_COMM_WORLD, &reqs[2]));
    OK(MPI_Recv_init(&self_in, 1, MPI_INT, wrank, TAG, MPI_COMM_WORLD, &reqs[3]));
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < 3; i++)
            out[i] = 1000 * round + 10 * me + i;
        self_out = round;
        in[0] = in[1] = in[2] = self_in = -1;
        OK(MPI_Startall(4, reqs));
        OK(MPI_Waitall(4, reqs, st));
        for (int i = 0; i < 3; i++)
            EXPECT(in[i] == 1000 * round + 10 * partner + i, "round %d: in[%d] = %d", round, i,
                   in[i]);
        EXPECT(self_in == round, "round %d: the native request got %d", round, self_in);
        int count = -1;
        MPI_Get_count(&st[1], MPI_INT, &count);
        EXPECT(st[1].MPI_SOURCE == partner && st[1].MPI_TAG == TAG && count == 3,
               "round %d: status source %d tag %d count %d", round, st[1].MPI_SOURCE,
               st[1].MPI_TAG, count);
        for (int i = 0; i < 4; i++)
            EXPECT(reqs[i] != MPI_REQUEST_NULL, "round %d: persistent request %d became null",
                   round, i);
    }
    /* Inactive now: every wait and test completes at once, empty status. */
    MPI_Status s;
    int flag = 0;
    OK(MPI_Wait(&reqs[1], &s));
    expect_empty(&s, "MPI_Wait");
    OK(MPI_Test(&reqs[0], &flag, &s));
    EXPECT(flag, "MPI_Test of an inactive request: not complete");
    flag = 0;
    OK(MPI_Request_get_status(reqs[1], &flag, &s));
    EXPECT(flag, "MPI_Request_get_status of an inactive request: not complete");
    expect_empty(&s, "MPI_Request_get_status");
    int index = 0;
    OK(MPI_Waitany(2, reqs, &index, &s));
    EXPECT(index == MPI_UNDEFINED, "MPI_Waitany over inactive requests: index %d", index);
    /* One more round through Waitany and Testsome. */
    out[0] = out[1] = out[2] = me;
    OK(MPI_Start(&reqs[1]));
    OK(MPI_Start(&reqs[0]));
    int done = 0;
    while (done < 2) {
        int outcount = 0, indices[2];
        MPI_Status sts[2];
        OK(MPI_Testsome(2, reqs, &outcount, indices, sts));
        EXPECT(outcount != MPI_UNDEFINED, "MPI_Testsome: no active request while %d are", 2 - done);
        if (outcount == MPI_UNDEFINED)
            break;
        for (int i = 0; i < outcount; i++)
            if (indices[i] == 1)
                EXPECT(sts[i].MPI_SOURCE == partner, "MPI_Testsome: source %d",
                       sts[i].MPI_SOURCE);
        done += outcount;
    }
    EXPECT(in[0] == partner, "the Testsome round received %d", in[0]);
    for (int i = 0; i < 4; i++) {
        OK(MPI_Request_free(&reqs[i]));
        EXPECT(reqs[i] == MPI_REQUEST_NULL, "a freed request is not MPI_REQUEST_NULL");
    }
}

/* The other send modes; `first` receives first. */
static void modes(MPI_Comm comm, int partner, int first)
{
    int v = 7, got = 0, go = 0;
    MPI_Request s, r;
    OK(MPI_Ssend_init(&v, 1, MPI_INT, partner, TAG, comm, &s));
    OK(MPI_Recv_init(&got, 1, MPI_INT, partner, TAG, comm, &r));
    for (int i = 0; i < 3; i++) {
        v = 100 + i;
        got = -1;
        OK(MPI_Start(&r));
        OK(MPI_Start(&s));
        OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        EXPECT(got == 100 + i, "Ssend_init round %d: got %d", i, got);
    }
    OK(MPI_Request_free(&s));
    int size = 0;
    MPI_Pack_size(1, MPI_INT, comm, &size);
    size += MPI_BSEND_OVERHEAD;
    void *buf = malloc(size);
    OK(MPI_Buffer_attach(buf, size));
    OK(MPI_Bsend_init(&v, 1, MPI_INT, partner, TAG, comm, &s));
    v = 200;
    OK(MPI_Start(&s));
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    v = -5; /* a buffered send owns its copy */
    OK(MPI_Start(&r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    EXPECT(got == 200, "Bsend_init: got %d", got);
    OK(MPI_Request_free(&s));
    int detached;
    OK(MPI_Buffer_detach(&buf, &detached));
    free(buf);
    /* Ready mode: the receive is started, then announced. */
    OK(MPI_Rsend_init(&v, 1, MPI_INT, partner, TAG, comm, &s));
    if (first) {
        OK(MPI_Start(&r));
        OK(MPI_Send(&go, 1, MPI_INT, partner, READY, comm));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        EXPECT(got == 300, "Rsend_init: got %d", got);
        OK(MPI_Recv(&go, 1, MPI_INT, partner, READY, comm, MPI_STATUS_IGNORE));
        v = 300;
        OK(MPI_Start(&s));
        OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Recv(&go, 1, MPI_INT, partner, READY, comm, MPI_STATUS_IGNORE));
        v = 300;
        OK(MPI_Start(&s));
        OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        OK(MPI_Start(&r));
        OK(MPI_Send(&go, 1, MPI_INT, partner, READY, comm));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        EXPECT(got == 300, "Rsend_init: got %d", got);
    }
    OK(MPI_Request_free(&s));
    OK(MPI_Request_free(&r));
}

/* Cancel of a started receive nothing matches; restarted, it matches.
 * Request_free of an active send (delivered) and of an inactive one. */
static void cancel_and_free(MPI_Comm comm, int partner, int me)
{
    int got = -1, v = 11, flag = 0;
    MPI_Request r, s;
    MPI_Status st;
    OK(MPI_Recv_init(&got, 1, MPI_INT, partner, NEVER, comm, &r));
    OK(MPI_Start(&r));
    OK(MPI_Cancel(&r));
    OK(MPI_Wait(&r, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    EXPECT(flag, "a persistent receive nothing matched was not cancelled");
    EXPECT(r != MPI_REQUEST_NULL, "a cancelled persistent request became null");
    /* Both sides cancelled theirs (a handshake first: a NEVER sent before
     * the partner's cancel would match its first receive); now each sends
     * the other one NEVER. */
    int token = -1;
    OK(MPI_Sendrecv(&me, 1, MPI_INT, partner, READY, &token, 1, MPI_INT, partner, READY, comm,
                    MPI_STATUS_IGNORE));
    OK(MPI_Start(&r));
    OK(MPI_Send(&me, 1, MPI_INT, partner, NEVER, comm));
    OK(MPI_Wait(&r, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    EXPECT(!flag && got == partner, "restarted after a cancel: got %d (cancelled %d)", got, flag);
    OK(MPI_Request_free(&r));
    /* An active send freed: delivered anyway. */
    OK(MPI_Send_init(&v, 1, MPI_INT, partner, FREED, comm, &s));
    OK(MPI_Start(&s));
    OK(MPI_Request_free(&s));
    EXPECT(s == MPI_REQUEST_NULL, "a freed active request is not MPI_REQUEST_NULL");
    got = -1;
    OK(MPI_Recv(&got, 1, MPI_INT, partner, FREED, comm, MPI_STATUS_IGNORE));
    EXPECT(got == 11, "a freed active send delivered %d", got);
    /* An inactive one, never started. */
    OK(MPI_Send_init(&v, 1, MPI_INT, partner, FREED, comm, &s));
    OK(MPI_Request_free(&s));
    /* The freed send's buffer is reused only after the partner had it. */
    OK(MPI_Sendrecv(&v, 0, MPI_INT, partner, READY, &got, 0, MPI_INT, partner, READY, comm,
                    MPI_STATUS_IGNORE));
}

/* MPI_Isendrecv(_replace) where the MPI has it; MPI_Sendrecv(_replace)
 * otherwise (the same messages). `to` and `from` may differ (a ring). */
static void swap(MPI_Comm comm, int to, int from, int me)
{
    int out[2] = {me, -me}, in[2] = {-1, -1};
    MPI_Status st;
#if HAVE_MPI4
    MPI_Request r;
    OK(MPI_Isendrecv(out, 2, MPI_INT, to, TAG, in, 2, MPI_INT, from, TAG, comm, &r));
    OK(MPI_Wait(&r, &st));
    EXPECT(r == MPI_REQUEST_NULL, "MPI_Isendrecv's request is not null once complete");
#else
    OK(MPI_Sendrecv(out, 2, MPI_INT, to, TAG, in, 2, MPI_INT, from, TAG, comm, &st));
#endif
    EXPECT(in[0] == from && in[1] == -from && st.MPI_SOURCE == from,
           "sendrecv: got %d %d from %d", in[0], in[1], st.MPI_SOURCE);
    int buf[2] = {me + 1, me + 2};
#if HAVE_MPI4
    OK(MPI_Isendrecv_replace(buf, 2, MPI_INT, to, TAG, from, TAG, comm, &r));
    int flag = 0;
    while (!flag)
        OK(MPI_Test(&r, &flag, &st));
#else
    /* The same messages (MPI_Sendrecv_replace is refused on a merged
     * communicator). */
    int copy[2] = {buf[0], buf[1]};
    OK(MPI_Sendrecv(copy, 2, MPI_INT, to, TAG, buf, 2, MPI_INT, from, TAG, comm, &st));
#endif
    EXPECT(buf[0] == from + 1 && buf[1] == from + 2, "sendrecv_replace: got %d %d", buf[0],
           buf[1]);
}

/* Persistent collectives on the intercommunicator: left rank 0 the root. */
static void inter_collectives(MPI_Comm comm, int left, int rank, int remote)
{
    int root = left ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int b = -1, sum = -1, one = 1, *all = malloc(sizeof(int) * remote);
    int *gathered = malloc(sizeof(int) * remote), mine = 0;
    int *mines = malloc(sizeof(int) * remote); /* mine, once per remote rank */
    MPI_Request reqs[5];
#if HAVE_MPI4
    OK(MPI_Bcast_init(&b, 1, MPI_INT, root, comm, MPI_INFO_NULL, &reqs[0]));
    OK(MPI_Allreduce_init(&one, &sum, 1, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &reqs[1]));
    OK(MPI_Barrier_init(comm, MPI_INFO_NULL, &reqs[2]));
    OK(MPI_Alltoall_init(mines, 1, MPI_INT, all, 1, MPI_INT, comm, MPI_INFO_NULL, &reqs[3]));
    OK(MPI_Gather_init(&mine, 1, MPI_INT, gathered, 1, MPI_INT, root, comm, MPI_INFO_NULL,
                       &reqs[4]));
#endif
    for (int round = 0; round < 3; round++) {
        b = (left && rank == 0) ? 40 + round : -1;
        mine = 100 * round + rank;
        for (int i = 0; i < remote; i++) {
            all[i] = gathered[i] = -1;
            mines[i] = mine;
        }
#if HAVE_MPI4
        OK(MPI_Startall(5, reqs));
#else
        OK(MPI_Ibcast(&b, 1, MPI_INT, root, comm, &reqs[0]));
        OK(MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm, &reqs[1]));
        OK(MPI_Ibarrier(comm, &reqs[2]));
        OK(MPI_Ialltoall(mines, 1, MPI_INT, all, 1, MPI_INT, comm, &reqs[3]));
        OK(MPI_Igather(&mine, 1, MPI_INT, gathered, 1, MPI_INT, root, comm, &reqs[4]));
#endif
        OK(MPI_Waitall(5, reqs, MPI_STATUSES_IGNORE));
        if (!left)
            EXPECT(b == 40 + round, "Bcast_init round %d: %d", round, b);
        EXPECT(sum == remote, "Allreduce_init round %d: %d where %d", round, sum, remote);
        for (int i = 0; i < remote; i++)
            EXPECT(all[i] == 100 * round + i, "Alltoall_init round %d: [%d] = %d", round, i,
                   all[i]);
        if (left && rank == 0)
            for (int i = 0; i < remote; i++)
                EXPECT(gathered[i] == 100 * round + i, "Gather_init round %d: [%d] = %d", round,
                       i, gathered[i]);
    }
#if HAVE_MPI4
    for (int i = 0; i < 5; i++)
        OK(MPI_Request_free(&reqs[i]));
#endif
    free(all);
    free(gathered);
    free(mines);
}

/* MPI_Alltoallv_init_c (MPI 4's arrays of MPI_Count and MPI_Aint; an MPI
 * without it issues MPI_Ialltoallv) with `peers` peers (the remote group,
 * or the merged communicator), started twice: block i comes from peer i. */
static void alltoallv_init_c(MPI_Comm comm, int rank, int peers)
{
    int *to = malloc(sizeof(int) * peers), *from = malloc(sizeof(int) * peers);
    int *counts = malloc(sizeof(int) * peers), *displs = malloc(sizeof(int) * peers);
    MPI_Request req;
#if HAVE_MPI4
    MPI_Count *cc = malloc(sizeof(MPI_Count) * peers);
    MPI_Aint *cd = malloc(sizeof(MPI_Aint) * peers);
    for (int i = 0; i < peers; i++) {
        cc[i] = 1;
        cd[i] = i;
    }
    OK(MPI_Alltoallv_init_c(to, cc, cd, MPI_INT, from, cc, cd, MPI_INT, comm, MPI_INFO_NULL,
                            &req));
#endif
    for (int i = 0; i < peers; i++) {
        counts[i] = 1;
        displs[i] = i;
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < peers; i++) {
            to[i] = 1000 * round + rank;
            from[i] = -1;
        }
#if HAVE_MPI4
        OK(MPI_Start(&req));
#else
        OK(MPI_Ialltoallv(to, counts, displs, MPI_INT, from, counts, displs, MPI_INT, comm, &req));
#endif
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (int i = 0; i < peers; i++)
            EXPECT(from[i] == 1000 * round + i, "Alltoallv_init_c round %d: [%d] = %d", round, i,
                   from[i]);
    }
#if HAVE_MPI4
    OK(MPI_Request_free(&req));
    free(cc);
    free(cd);
#endif
    free(to);
    free(from);
    free(counts);
    free(displs);
}

/* On the merged communicator: a persistent ring, Isendrecv round it, and
 * persistent Allreduce and Scan. */
static void merged(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out = 0, in = 0;
    MPI_Request reqs[2];
    MPI_Status st[2];
    OK(MPI_Recv_init(&in, 1, MPI_INT, prev, TAG, comm, &reqs[0]));
    OK(MPI_Send_init(&out, 1, MPI_INT, next, TAG, comm, &reqs[1]));
    for (int round = 0; round < ROUNDS; round++) {
        out = 1000 * round + rank;
        in = -1;
        OK(MPI_Startall(2, reqs));
        OK(MPI_Waitall(2, reqs, st));
        EXPECT(in == 1000 * round + prev, "merged ring round %d: got %d", round, in);
        EXPECT(st[0].MPI_SOURCE == prev, "merged ring round %d: source %d, not %d", round,
               st[0].MPI_SOURCE, prev);
    }
    OK(MPI_Request_free(&reqs[0]));
    OK(MPI_Request_free(&reqs[1]));
    swap(comm, next, prev, rank);
    int one = rank + 1, total = -1, scanned = -1;
#if HAVE_MPI4
    OK(MPI_Allreduce_init(&one, &total, 1, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &reqs[0]));
    OK(MPI_Scan_init(&one, &scanned, 1, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &reqs[1]));
#endif
    for (int round = 0; round < 3; round++) {
        total = scanned = -1;
#if HAVE_MPI4
        OK(MPI_Startall(2, reqs));
#else
        OK(MPI_Iallreduce(&one, &total, 1, MPI_INT, MPI_SUM, comm, &reqs[0]));
        OK(MPI_Iscan(&one, &scanned, 1, MPI_INT, MPI_SUM, comm, &reqs[1]));
#endif
        OK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
        EXPECT(total == size * (size + 1) / 2, "merged Allreduce_init: %d", total);
        EXPECT(scanned == (rank + 1) * (rank + 2) / 2, "merged Scan_init: %d", scanned);
    }
#if HAVE_MPI4
    OK(MPI_Request_free(&reqs[0]));
    OK(MPI_Request_free(&reqs[1]));
#endif
    /* A ring of all the ranks (a periodic one-dimensional grid): each
     * sends its rank plus the round to both neighbours with a persistent
     * MPI_Neighbor_alltoall (Open MPI 4.1: the nonblocking form). */
    MPI_Comm ring;
    int periodic = 1, pair[2], got[2];
    OK(MPI_Cart_create(comm, 1, &size, &periodic, 0, &ring));
#if HAVE_MPI4
    OK(MPI_Neighbor_alltoall_init(pair, 1, MPI_INT, got, 1, MPI_INT, ring, MPI_INFO_NULL,
                                  &reqs[0]));
#endif
    for (int round = 0; round < 3; round++) {
        pair[0] = 100 * round + rank;
        pair[1] = 100 * round + rank + 50;
        got[0] = got[1] = -1;
#if HAVE_MPI4
        OK(MPI_Start(&reqs[0]));
#else
        OK(MPI_Ineighbor_alltoall(pair, 1, MPI_INT, got, 1, MPI_INT, ring, &reqs[0]));
#endif
        OK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
        /* From the left its block for the right, and the reverse. */
        EXPECT(got[0] == 100 * round + prev + 50 && got[1] == 100 * round + next,
               "merged Neighbor_alltoall_init round %d: %d %d", round, got[0], got[1]);
    }
#if HAVE_MPI4
    OK(MPI_Request_free(&reqs[0]));
#endif
    OK(MPI_Comm_free(&ring));
}

int main(int argc, char *argv[])
{
    MPI_Comm comm, merged_comm;
    int left, rank, size, remote;

    MTest_Init(&argc, &argv);
    MTestGetIntercomm(&comm, &left, 1);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_remote_size(comm, &remote);

    if (rank < remote) {
        restarts(comm, rank, rank);
        modes(comm, rank, left);
        cancel_and_free(comm, rank, rank);
        swap(comm, rank, rank, rank);
    }
    inter_collectives(comm, left, rank, remote);
    alltoallv_init_c(comm, rank, remote);

    OK(MPI_Intercomm_merge(comm, !left, &merged_comm));
    MPI_Comm_set_errhandler(merged_comm, MPI_ERRORS_RETURN);
    merged(merged_comm);
    int mrank, msize;
    MPI_Comm_rank(merged_comm, &mrank);
    MPI_Comm_size(merged_comm, &msize);
    alltoallv_init_c(merged_comm, mrank, msize);
    MPI_Comm_free(&merged_comm);

    MTestFreeComm(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}

/*
 * An intercommunicator whose groups each span both parts of a world
 * (ISTHMUS_WORLD): the world's even ranks and its odd ranks, each half a
 * merged communicator (MPI_Comm_split by parity), joined with
 * MPI_Intercomm_create over MPI_COMM_WORLD. Checks its sizes and ranks,
 * point-to-point both ways (every pair, MPI_ANY_SOURCE with the status
 * naming the remote rank, probe, sendrecv), its groups against the
 * world's, a dup, the collectives with MPI_ROOT / MPI_PROC_NULL (Barrier,
 * Bcast, Reduce, Allreduce, Gather, Scatter, Allgather, Alltoall; an
 * Allreduce by a non-commutative operation, blocking and not), and
 * MPI_Intercomm_merge (evens first), with an Allreduce and a ring on the
 * merge; matched probes (a given source of either part, MPI_ANY_SOURCE,
 * MPI_PROC_NULL; MPI_Mrecv and MPI_Imrecv), Sendrecv_replace, MPI 4's
 * MPI_Allgatherv_c (where mpi.h has it), and
 * MPI_Comm_split of it (a mixed result, one of one part only, and
 * MPI_UNDEFINED); the nonblocking collectives, persistent ones and the
 * large-count Reduce_scatter_block_c, Sendrecv_replace_c and
 * Alltoallv_init_c (MPI 4); the same again on an intercommunicator whose
 * groups' orders interleave the parts; and that an unsupported call (MPI_Iscan on it) is
 * refused with a message naming it, as is MPI_Intercomm_create of a half
 * with a native peer_comm.
 *
 * Usage: mixedic — any world of at least 4 ranks.
 * Prints "PASS mixedic world rank R of N" per rank.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

/* Whether the intercommunicator under test has each group's local ranks 0
 * and 1 swapped (the second one main makes: its groups' orders interleave
 * the parts). */
static int swapped;

/* The world rank of local rank j of the evens' (group 0) or the odds'
 * (group 1) group. */
static int wr(int group, int j)
{
    return 2 * (swapped && j < 2 ? 1 - j : j) + group;
}

/* A non-commutative operation: the left operand. A reduction over a group
 * in its rank order gives its local rank 0's value. */
static void take_left(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, sizeof(int) * (size_t)*len);
}

/* Allreduce (blocking or not) by take_left: each group gets the other's
 * local rank 0's world rank. */
static void left_operand(MPI_Comm ic, int odd, int nonblocking)
{
    MPI_Op left;
    MPI_Op_create(take_left, 0, &left);
    int v = rank, got = -1;
    if (nonblocking) {
        MPI_Request r;
        MPI_Iallreduce(&v, &got, 1, MPI_INT, left, ic, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Allreduce(&v, &got, 1, MPI_INT, left, ic);
    }
    CHECK(got == wr(!odd, 0), "%sallreduce of the left operand: %d, expected %d",
          nonblocking ? "i" : "", got, wr(!odd, 0));
    MPI_Op_free(&left);
}

/* Point-to-point between every pair (MPICH's MTestTestIntercomm), then
 * MPI_ANY_SOURCE at each rank 0, probes and a sendrecv. */
static void pt2pt(MPI_Comm ic, int lrank, int lsize, int rsize, int odd)
{
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * rsize);
    int *bufs = malloc(sizeof(int) * 2 * rsize);
    for (int j = 0; j < rsize; j++) {
        bufs[2 * j] = lrank;
        bufs[2 * j + 1] = j;
        MPI_Isend(&bufs[2 * j], 2, MPI_INT, j, 0, ic, &reqs[j]);
    }
    for (int j = 0; j < rsize; j++) {
        int got[2] = {-1, -1};
        MPI_Status st;
        MPI_Recv(got, 2, MPI_INT, j, 0, ic, &st);
        CHECK(got[0] == j && got[1] == lrank && st.MPI_SOURCE == j,
              "from remote %d got (%d, %d) source %d", j, got[0], got[1], st.MPI_SOURCE);
    }
    MPI_Waitall(rsize, reqs, MPI_STATUSES_IGNORE);

    /* Every remote rank sends its rank to our rank 0, from any source. */
    int me = lrank;
    MPI_Send(&me, 1, MPI_INT, 0, 7, ic);
    if (lrank == 0) {
        int seen = 0;
        for (int k = 0; k < rsize; k++) {
            int v = -1;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 7, ic, &st);
            CHECK(v == st.MPI_SOURCE && v >= 0 && v < rsize, "any source: %d from %d", v,
                  st.MPI_SOURCE);
            seen |= 1 << v;
        }
        CHECK(seen == (1 << rsize) - 1, "any source saw %x", seen);
    }

    /* Probe, then a sendrecv with the same-numbered remote rank (or its last). */
    int peer = lrank < rsize ? lrank : rsize - 1;
    int out = 1000 + lrank, in = -1;
    MPI_Request r;
    MPI_Isend(&out, 1, MPI_INT, peer, 8, ic, &r);
    /* Which remote ranks send to me: those whose peer I am. */
    for (int j = 0; j < rsize; j++) {
        int theirs = j < lsize ? j : lsize - 1;
        if (theirs != lrank)
            continue;
        MPI_Status st;
        int flag = 0;
        MPI_Probe(j, 8, ic, &st);
        CHECK(st.MPI_SOURCE == j, "probe source %d, expected %d", st.MPI_SOURCE, j);
        MPI_Iprobe(j, 8, ic, &flag, &st);
        CHECK(flag && st.MPI_SOURCE == j, "iprobe flag %d source %d", flag, st.MPI_SOURCE);
        MPI_Recv(&in, 1, MPI_INT, j, 8, ic, &st);
        CHECK(in == 1000 + j, "probed message %d from %d", in, j);
    }
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    int s = 2000 + lrank, t = -1;
    if (lsize == rsize) {
        MPI_Sendrecv(&s, 1, MPI_INT, lrank, 9, &t, 1, MPI_INT, lrank, 9, ic, MPI_STATUS_IGNORE);
        CHECK(t == 2000 + lrank, "sendrecv got %d", t);
    }
    (void)odd;
    free(reqs);
    free(bufs);
}

/* Matched probes: every remote rank sends its local rank to each of our
 * ranks; we take them with MPI_Mprobe from each source in turn (the
 * sources live in both parts), then again with MPI_Improbe from any
 * source and MPI_Imrecv; MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC. Then a
 * Sendrecv_replace with the same-numbered remote rank. */
static void matched(MPI_Comm ic, int lrank, int lsize, int rsize)
{
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * rsize);
    int me = lrank;
    for (int j = 0; j < rsize; j++) {
        MPI_Isend(&me, 1, MPI_INT, j, 11, ic, &reqs[2 * j]);
        MPI_Isend(&me, 1, MPI_INT, j, 12, ic, &reqs[2 * j + 1]);
    }
    for (int j = rsize - 1; j >= 0; j--) {
        MPI_Message m;
        MPI_Status st;
        int v = -1, n = -1;
        MPI_Mprobe(j, 11, ic, &m, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(st.MPI_SOURCE == j && st.MPI_TAG == 11 && n == 1, "mprobe(%d): source %d tag %d count %d",
              j, st.MPI_SOURCE, st.MPI_TAG, n);
        MPI_Mrecv(&v, 1, MPI_INT, &m, &st);
        CHECK(v == j && st.MPI_SOURCE == j && m == MPI_MESSAGE_NULL, "mrecv(%d): %d from %d", j, v,
              st.MPI_SOURCE);
    }
    int seen = 0;
    for (int k = 0; k < rsize; k++) {
        MPI_Message m = MPI_MESSAGE_NULL;
        MPI_Status st;
        int flag = 0, v = -1;
        while (!flag)
            MPI_Improbe(MPI_ANY_SOURCE, 12, ic, &flag, &m, &st);
        int src = st.MPI_SOURCE;
        CHECK(src >= 0 && src < rsize && !(seen & (1 << src)), "improbe(any): source %d", src);
        seen |= 1 << src;
        MPI_Request r;
        MPI_Imrecv(&v, 1, MPI_INT, &m, &r);
        MPI_Wait(&r, &st);
        CHECK(v == src && st.MPI_SOURCE == src, "imrecv: %d from %d (probed %d)", v, st.MPI_SOURCE,
              src);
    }
    CHECK(seen == (1 << rsize) - 1, "improbe(any) saw %x", seen);
    MPI_Waitall(2 * rsize, reqs, MPI_STATUSES_IGNORE);
    MPI_Message none;
    MPI_Status st;
    MPI_Mprobe(MPI_PROC_NULL, 0, ic, &none, &st);
    CHECK(none == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "mprobe(MPI_PROC_NULL)");
    int x = 5;
    MPI_Mrecv(&x, 1, MPI_INT, &none, &st);
    CHECK(x == 5 && none == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL,
          "mrecv(MPI_MESSAGE_NO_PROC)");

    if (lsize == rsize) {
        int buf[3] = {lrank, 10 * lrank, 100 * lrank};
        MPI_Sendrecv_replace(buf, 3, MPI_INT, lrank, 13, lrank, 13, ic, &st);
        CHECK(buf[0] == lrank && buf[1] == 10 * lrank && buf[2] == 100 * lrank &&
                  st.MPI_SOURCE == lrank,
              "sendrecv_replace: %d %d %d from %d", buf[0], buf[1], buf[2], st.MPI_SOURCE);
    }
    free(reqs);
}

/* MPI_Comm_split of the intercommunicator: color by local rank parity
 * (each color spans both parts in a world of 8 and more; in smaller ones
 * a color may be one part's), key reversing the order; the last local
 * rank of each group passes MPI_UNDEFINED. */
static void split(MPI_Comm ic, int lrank, int lsize, int rsize, int odd)
{
    int color = lrank == lsize - 1 ? MPI_UNDEFINED : lrank % 2;
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(ic, color, -lrank, &sub);
    /* The members of a color, without the last rank of each group. */
    int mine = 0, theirs = 0, above = 0;
    for (int j = 0; j < lsize - 1; j++)
        if (j % 2 == color) {
            mine++;
            above += j > lrank;
        }
    for (int j = 0; j < rsize - 1; j++)
        theirs += j % 2 == color;
    if (color == MPI_UNDEFINED || theirs == 0) {
        CHECK(sub == MPI_COMM_NULL, "split color %d: not MPI_COMM_NULL", color);
        return;
    }
    CHECK(sub != MPI_COMM_NULL, "split color %d: MPI_COMM_NULL", color);
    int inter = 0, r = -1, n = -1, rn = -1;
    MPI_Comm_test_inter(sub, &inter);
    MPI_Comm_rank(sub, &r);
    MPI_Comm_size(sub, &n);
    MPI_Comm_remote_size(sub, &rn);
    CHECK(inter && r == above && n == mine && rn == theirs, "split: inter %d rank %d/%d of %d remote %d/%d",
          inter, r, above, n, rn, theirs);
    /* Each rank's world rank summed over the other group of its color. */
    long w = rank, sum = -1, expect = 0;
    for (int j = 0; j < rsize - 1; j++)
        if (j % 2 == color)
            expect += wr(!odd, j);
    MPI_Allreduce(&w, &sum, 1, MPI_LONG, MPI_SUM, sub);
    CHECK(sum == expect, "allreduce on the split: %ld, expected %ld", sum, expect);
    MPI_Comm_free(&sub);
}

/* The v-forms' large-count (MPI 4) form where mpi.h has it (MPICH; Open
 * MPI 4.1's part makes the same collective with int arrays): Allgatherv
 * gives the other group's world ranks, rank j's at 2 * j (gaps between). */
static void large_counts(MPI_Comm ic, int rsize, int odd)
{
    int *all = malloc(sizeof(int) * 2 * rsize);
    for (int j = 0; j < 2 * rsize; j++)
        all[j] = -1;
    int one = rank;
#if MPI_VERSION >= 4
    MPI_Count *counts = malloc(sizeof(MPI_Count) * rsize);
    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * rsize);
#else
    int *counts = malloc(sizeof(int) * rsize), *displs = malloc(sizeof(int) * rsize);
#endif
    for (int j = 0; j < rsize; j++) {
        counts[j] = 1;
        displs[j] = 2 * j;
    }
#if MPI_VERSION >= 4
    MPI_Allgatherv_c(&one, 1, MPI_INT, all, counts, displs, MPI_INT, ic);
#else
    MPI_Allgatherv(&one, 1, MPI_INT, all, counts, displs, MPI_INT, ic);
#endif
    for (int j = 0; j < rsize; j++)
        CHECK(all[2 * j] == wr(!odd, j) && all[2 * j + 1] == -1, "allgatherv(_c)[%d] = %d, %d", j,
              all[2 * j], all[2 * j + 1]);
    free(counts);
    free(displs);
    free(all);
}

static void collectives(MPI_Comm ic, int lrank, int lsize, int rsize, int odd)
{
    MPI_Barrier(ic);
    /* Bcast from the evens' rank 0, then from the odds' last rank. */
    int v = odd ? -1 : 42;
    int root = odd ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL);
    MPI_Bcast(&v, 1, MPI_INT, root, ic);
    CHECK(v == 42, "bcast from the evens: %d", v);
    double d = odd ? 3.5 : -1;
    root = odd ? (lrank == lsize - 1 ? MPI_ROOT : MPI_PROC_NULL) : rsize - 1;
    MPI_Bcast(&d, 1, MPI_DOUBLE, root, ic);
    CHECK(d == 3.5, "bcast from the odds: %g", d);

    /* Allreduce: each group gets the sum of the other's world ranks. */
    long mine = rank, sum = -1, expect = 0;
    for (int r = odd ? 0 : 1; r < size; r += 2)
        expect += r;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, ic);
    CHECK(sum == expect, "allreduce %ld, expected %ld", sum, expect);

    /* Reduce to the odds' rank 0: the max of the evens' world ranks. */
    int mx = rank, got = -1;
    root = odd ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    MPI_Reduce(&mx, &got, 1, MPI_INT, MPI_MAX, root, ic);
    if (odd && lrank == 0) {
        int e = (size - 1) % 2 == 0 ? size - 1 : size - 2;
        CHECK(got == e, "reduce max %d, expected %d", got, e);
    }

    /* Gather at the evens' rank 0 and Scatter back from it. */
    int *all = malloc(sizeof(int) * (size + 1));
    int one = rank;
    root = odd ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL);
    MPI_Gather(&one, 1, MPI_INT, all, 1, MPI_INT, root, ic);
    if (!odd && lrank == 0)
        for (int j = 0; j < rsize; j++)
            CHECK(all[j] == wr(1, j), "gather[%d] = %d", j, all[j]);
    if (!odd && lrank == 0)
        for (int j = 0; j < rsize; j++)
            all[j] = 100 + j;
    int back = -1;
    MPI_Scatter(all, 1, MPI_INT, &back, 1, MPI_INT, root, ic);
    if (odd)
        CHECK(back == 100 + lrank, "scatter gave %d", back);

    /* Allgather: the other group's world ranks, in their order. */
    MPI_Allgather(&one, 1, MPI_INT, all, 1, MPI_INT, ic);
    for (int j = 0; j < rsize; j++)
        CHECK(all[j] == wr(!odd, j), "allgather[%d] = %d", j, all[j]);

    /* Alltoall: block j for remote rank j is 1000 * my world rank + j. */
    int *to = malloc(sizeof(int) * rsize), *from = malloc(sizeof(int) * rsize);
    for (int j = 0; j < rsize; j++) {
        to[j] = 1000 * rank + j;
        from[j] = -1;
    }
    MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, ic);
    for (int j = 0; j < rsize; j++)
        CHECK(from[j] == 1000 * wr(!odd, j) + lrank, "alltoall[%d] = %d", j, from[j]);
    left_operand(ic, odd, 0);
    free(to);
    free(from);
    free(all);
}

/* The nonblocking collectives (MPI_ROOT / MPI_PROC_NULL as in the
 * blocking ones), several under way at once and completed by one
 * MPI_Waitall beside a point-to-point request, then their persistent
 * forms (two starts each) and, where mpi.h has MPI 4, the large-count
 * MPI_Reduce_scatter_block_c, MPI_Sendrecv_replace_c and
 * MPI_Alltoallv_init_c. */
static void nonblocking(MPI_Comm ic, int lrank, int lsize, int rsize, int odd)
{
    MPI_Request r[8];
    int v = odd ? -1 : 42;
    int root = odd ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL);
    MPI_Ibcast(&v, 1, MPI_INT, root, ic, &r[0]);
    long mine = rank, sum = -1, expect = 0;
    for (int x = odd ? 0 : 1; x < size; x += 2)
        expect += x;
    MPI_Iallreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, ic, &r[1]);
    int mx = rank, got = -1;
    int rroot = odd ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    MPI_Ireduce(&mx, &got, 1, MPI_INT, MPI_MAX, rroot, ic, &r[2]);
    int *all = malloc(sizeof(int) * (size + 1)), *ag = malloc(sizeof(int) * (size + 1));
    int one = rank;
    MPI_Igather(&one, 1, MPI_INT, all, 1, MPI_INT, root, ic, &r[3]);
    MPI_Iallgather(&one, 1, MPI_INT, ag, 1, MPI_INT, ic, &r[4]);
    int *to = malloc(sizeof(int) * rsize), *from = malloc(sizeof(int) * rsize);
    for (int j = 0; j < rsize; j++) {
        to[j] = 1000 * rank + j;
        from[j] = -1;
    }
    MPI_Ialltoall(to, 1, MPI_INT, from, 1, MPI_INT, ic, &r[5]);
    MPI_Ibarrier(ic, &r[6]);
    /* A point-to-point request in the same Waitall: a ring in the world. */
    int token = -1;
    MPI_Irecv(&token, 1, MPI_INT, (rank + size - 1) % size, 9, MPI_COMM_WORLD, &r[7]);
    MPI_Send(&rank, 1, MPI_INT, (rank + 1) % size, 9, MPI_COMM_WORLD);
    MPI_Waitall(8, r, MPI_STATUSES_IGNORE);
    CHECK(v == 42, "ibcast from the evens: %d", v);
    CHECK(sum == expect, "iallreduce %ld, expected %ld", sum, expect);
    if (odd && lrank == 0) {
        int e = (size - 1) % 2 == 0 ? size - 1 : size - 2;
        CHECK(got == e, "ireduce max %d, expected %d", got, e);
    }
    if (!odd && lrank == 0)
        for (int j = 0; j < rsize; j++)
            CHECK(all[j] == wr(1, j), "igather[%d] = %d", j, all[j]);
    for (int j = 0; j < rsize; j++) {
        CHECK(ag[j] == wr(!odd, j), "iallgather[%d] = %d", j, ag[j]);
        CHECK(from[j] == 1000 * wr(!odd, j) + lrank, "ialltoall[%d] = %d", j, from[j]);
    }
    CHECK(token == (rank + size - 1) % size, "ring token %d", token);

    /* Iscatter, Igatherv and Iscatterv from the evens' rank 0, Iallgatherv
     * (gaps between the blocks), Ireduce_scatter_block: each completed
     * by MPI_Test alone. */
    int *counts = malloc(sizeof(int) * (size + 1)), *displs = malloc(sizeof(int) * (size + 1));
    for (int j = 0; j <= size; j++) {
        counts[j] = 1;
        displs[j] = 2 * j;
        all[j] = 100 + j;
    }
    int back = -1, flag = 0;
    MPI_Iscatter(all, 1, MPI_INT, &back, 1, MPI_INT, root, ic, &r[0]);
    while (!flag)
        MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
    if (odd)
        CHECK(back == 100 + lrank, "iscatter gave %d", back);
    int *gv = malloc(sizeof(int) * 2 * (size + 1));
    for (int j = 0; j < 2 * (size + 1); j++)
        gv[j] = -1;
    MPI_Igatherv(&one, 1, MPI_INT, gv, counts, displs, MPI_INT, root, ic, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    if (!odd && lrank == 0)
        for (int j = 0; j < rsize; j++)
            CHECK(gv[2 * j] == wr(1, j) && gv[2 * j + 1] == -1, "igatherv[%d] = %d", j, gv[2 * j]);
    back = -1;
    MPI_Iscatterv(all, counts, displs, MPI_INT, &back, 1, MPI_INT, root, ic, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    if (odd)
        CHECK(back == 100 + 2 * lrank, "iscatterv gave %d", back);
    for (int j = 0; j < 2 * (size + 1); j++)
        gv[j] = -1;
    MPI_Iallgatherv(&one, 1, MPI_INT, gv, counts, displs, MPI_INT, ic, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    for (int j = 0; j < rsize; j++)
        CHECK(gv[2 * j] == wr(!odd, j), "iallgatherv[%d] = %d", j, gv[2 * j]);
    /* Each rank sends 1 + its world rank in every element of blocks of
     * rsize elements, one per local rank (both groups' vectors then have
     * lsize * rsize elements, as MPI asks): each gets the sum over the
     * other group. */
    int *vec = malloc(sizeof(int) * lsize * rsize), *blk = malloc(sizeof(int) * rsize), esum = 0;
    for (int j = 0; j < lsize * rsize; j++)
        vec[j] = rank + 1;
    for (int x = odd ? 0 : 1; x < size; x += 2)
        esum += x + 1;
    MPI_Ireduce_scatter_block(vec, blk, rsize, MPI_INT, MPI_SUM, ic, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    for (int j = 0; j < rsize; j++)
        CHECK(blk[j] == esum, "ireduce_scatter_block[%d] %d, expected %d", j, blk[j], esum);
    left_operand(ic, odd, 1);

    /* Persistent (MPI 4): an Allreduce and a Bcast from the odds, started
     * twice; an MPI without them (Open MPI 4.1) issues the nonblocking
     * forms in the same order, which is what a start issues. */
    long in = rank, out = -1;
    double d = -1;
    int broot = odd ? (lrank == lsize - 1 ? MPI_ROOT : MPI_PROC_NULL) : rsize - 1;
    MPI_Request p[2];
#if MPI_VERSION >= 4
    MPI_Allreduce_init(&in, &out, 1, MPI_LONG, MPI_SUM, ic, MPI_INFO_NULL, &p[0]);
    MPI_Bcast_init(&d, 1, MPI_DOUBLE, broot, ic, MPI_INFO_NULL, &p[1]);
#endif
    for (int round = 0; round < 2; round++) {
        out = -1;
        d = odd ? 3.5 + round : -1;
#if MPI_VERSION >= 4
        MPI_Startall(2, p);
#else
        MPI_Iallreduce(&in, &out, 1, MPI_LONG, MPI_SUM, ic, &p[0]);
        MPI_Ibcast(&d, 1, MPI_DOUBLE, broot, ic, &p[1]);
#endif
        MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
        CHECK(out == expect, "allreduce_init round %d: %ld", round, out);
        CHECK(d == 3.5 + round, "bcast_init round %d: %g", round, d);
    }
#if MPI_VERSION >= 4
    MPI_Request_free(&p[0]);
    MPI_Request_free(&p[1]);
#endif

    /* Large counts (MPI 4; the int forms elsewhere). */
    for (int j = 0; j < rsize; j++)
        blk[j] = -1;
#if MPI_VERSION >= 4
    MPI_Reduce_scatter_block_c(vec, blk, rsize, MPI_INT, MPI_SUM, ic);
#else
    MPI_Reduce_scatter_block(vec, blk, rsize, MPI_INT, MPI_SUM, ic);
#endif
    for (int j = 0; j < rsize; j++)
        CHECK(blk[j] == esum, "reduce_scatter_block_c[%d] %d, expected %d", j, blk[j], esum);
    int x = rank;
    int peer = lrank < rsize ? lrank : MPI_PROC_NULL;
#if MPI_VERSION >= 4
    MPI_Sendrecv_replace_c(&x, 1, MPI_INT, peer, 4, peer, 4, ic, MPI_STATUS_IGNORE);
#else
    MPI_Sendrecv_replace(&x, 1, MPI_INT, peer, 4, peer, 4, ic, MPI_STATUS_IGNORE);
#endif
    if (lrank < rsize)
        CHECK(x == wr(!odd, lrank), "sendrecv_replace_c gave %d", x);
    for (int j = 0; j < rsize; j++) {
        to[j] = 1000 * rank + j;
        from[j] = -1;
        counts[j] = 1;
        displs[j] = j;
    }
#if MPI_VERSION >= 4
    MPI_Count *cc = malloc(sizeof(MPI_Count) * rsize);
    MPI_Aint *cd = malloc(sizeof(MPI_Aint) * rsize);
    for (int j = 0; j < rsize; j++) {
        cc[j] = 1;
        cd[j] = j;
    }
    MPI_Alltoallv_init_c(to, cc, cd, MPI_INT, from, cc, cd, MPI_INT, ic, MPI_INFO_NULL, &p[0]);
    MPI_Start(&p[0]);
    MPI_Wait(&p[0], MPI_STATUS_IGNORE);
    MPI_Request_free(&p[0]);
    free(cc);
    free(cd);
#else
    MPI_Ialltoallv(to, counts, displs, MPI_INT, from, counts, displs, MPI_INT, ic, &p[0]);
    MPI_Wait(&p[0], MPI_STATUS_IGNORE);
#endif
    for (int j = 0; j < rsize; j++)
        CHECK(from[j] == 1000 * wr(!odd, j) + lrank, "alltoallv_init_c[%d] = %d", j, from[j]);
    free(vec);
    free(blk);
    free(gv);
    free(counts);
    free(displs);
    free(to);
    free(from);
    free(ag);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 4, "a world of at least 4 ranks, not %d", size);
    int odd = rank % 2;

    MPI_Comm half, ic;
    MPI_Comm_split(MPI_COMM_WORLD, odd, rank, &half);
    /* The evens' leader is world rank 0, the odds' world rank 1. */
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, odd ? 0 : 1, 31, &ic);

    int inter = 0, lrank = -1, lsize = -1, rsize = -1;
    MPI_Comm_test_inter(ic, &inter);
    MPI_Comm_rank(ic, &lrank);
    MPI_Comm_size(ic, &lsize);
    MPI_Comm_remote_size(ic, &rsize);
    int evens = (size + 1) / 2, odds = size / 2;
    CHECK(inter, "not an intercommunicator");
    CHECK(lrank == rank / 2, "rank %d in the intercommunicator", lrank);
    CHECK(lsize == (odd ? odds : evens) && rsize == (odd ? evens : odds), "sizes %d and %d",
          lsize, rsize);

    /* The groups, against the world's. */
    MPI_Group wg, lg, rg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(ic, &lg);
    MPI_Comm_remote_group(ic, &rg);
    int gs = -1;
    MPI_Group_size(rg, &gs);
    CHECK(gs == rsize, "remote group of %d", gs);
    for (int j = 0; j < rsize; j++) {
        int w = -1;
        MPI_Group_translate_ranks(rg, 1, &j, wg, &w);
        CHECK(w == wr(!odd, j), "remote rank %d is world rank %d", j, w);
    }
    for (int j = 0; j < lsize; j++) {
        int w = -1;
        MPI_Group_translate_ranks(lg, 1, &j, wg, &w);
        CHECK(w == wr(odd, j), "local rank %d is world rank %d", j, w);
    }
    MPI_Group_free(&wg);
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);

    pt2pt(ic, lrank, lsize, rsize, odd);
    MPI_Comm dup;
    MPI_Comm_dup(ic, &dup);
    int cmp = -1;
    MPI_Comm_compare(ic, dup, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "compare with its dup: %d", cmp);
    pt2pt(dup, lrank, lsize, rsize, odd);
    collectives(ic, lrank, lsize, rsize, odd);
    collectives(dup, lrank, lsize, rsize, odd);
    nonblocking(ic, lrank, lsize, rsize, odd);
    nonblocking(dup, lrank, lsize, rsize, odd);
    MPI_Comm_free(&dup);
    matched(ic, lrank, lsize, rsize);
    large_counts(ic, rsize, odd);
    split(ic, lrank, lsize, rsize, odd);

    /* The same on an intercommunicator whose groups' orders interleave the
     * parts: each half's local ranks 0 and 1 swapped (the evens of a world
     * of 2 + 3 are world ranks 2, 0, 4: MPICH, Open MPI, MPICH), so that
     * their collectives' local steps run on a merged communicator of any
     * order. */
    swapped = 1;
    int key = lrank < 2 ? 1 - lrank : lrank;
    MPI_Comm half2, ic2;
    MPI_Comm_split(MPI_COMM_WORLD, odd, key, &half2);
    MPI_Intercomm_create(half2, 0, MPI_COMM_WORLD, wr(!odd, 0), 33, &ic2);
    int lrank2 = -1;
    MPI_Comm_rank(ic2, &lrank2);
    CHECK(lrank2 == key, "rank %d in the interleaving intercommunicator, expected %d", lrank2, key);
    pt2pt(ic2, key, lsize, rsize, odd);
    collectives(ic2, key, lsize, rsize, odd);
    nonblocking(ic2, key, lsize, rsize, odd);
    split(ic2, key, lsize, rsize, odd);
    MPI_Comm_free(&ic2);
    MPI_Comm_free(&half2);
    swapped = 0;

    /* The merge: evens first (they pass high = 0). */
    MPI_Comm merged;
    MPI_Intercomm_merge(ic, odd, &merged);
    int mrank = -1, msize = -1;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == size && mrank == (odd ? evens + rank / 2 : rank / 2), "merged rank %d of %d",
          mrank, msize);
    long one = rank, total = -1;
    MPI_Allreduce(&one, &total, 1, MPI_LONG, MPI_SUM, merged);
    CHECK(total == (long)size * (size - 1) / 2, "merged allreduce %ld", total);
    int next = (mrank + 1) % msize, prev = (mrank + msize - 1) % msize, token = -1;
    MPI_Sendrecv(&mrank, 1, MPI_INT, next, 5, &token, 1, MPI_INT, prev, 5, merged,
                 MPI_STATUS_IGNORE);
    CHECK(token == prev, "merged ring got %d from %d", token, prev);
    MPI_Comm_free(&merged);

    /* Not supported yet: refused with a message naming the call. */
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    MPI_Request ib = MPI_REQUEST_NULL;
    int sc = 0, sr = -1;
    int rc = MPI_Iscan(&sc, &sr, 1, MPI_INT, MPI_SUM, ic, &ib);
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    CHECK(rc != MPI_SUCCESS && strstr(msg, "MPI_Iscan") && strstr(msg, "span both jobs"),
          "MPI_Iscan on it: %d (%s)", rc, msg);

    /* A half (spanning both parts) with a native peer_comm: refused at
     * each leader with the reason, and at the other ranks too. */
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    MPI_Comm bad = MPI_COMM_NULL;
    rc = MPI_Intercomm_create(half, 0, MPI_COMM_SELF, 0, 32, &bad);
    MPI_Error_string(rc, msg, &len);
    CHECK(rc != MPI_SUCCESS && bad == MPI_COMM_NULL, "a native peer_comm: %d (%s)", rc, msg);
    if (lrank == 0)
        CHECK(strstr(msg, "peer_comm must be a merged"), "the leader's reason: %s", msg);

    MPI_Comm_free(&ic);
    MPI_Comm_free(&half);
    printf("PASS mixedic world rank %d of %d\n", rank, size);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

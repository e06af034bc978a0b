/*
 * An intercommunicator whose groups each span both parts of a world
 * (ISTHMUS_WORLD): the world's even ranks and its odd ranks, each half a
 * merged communicator (MPI_Comm_split by parity), joined with
 * MPI_Intercomm_create over MPI_COMM_WORLD. Checks its sizes and ranks,
 * point-to-point both ways (every pair, MPI_ANY_SOURCE with the status
 * naming the remote rank, probe, sendrecv), its groups against the
 * world's, a dup, the collectives with MPI_ROOT / MPI_PROC_NULL (Barrier,
 * Bcast, Reduce, Allreduce, Gather, Scatter, Allgather, Alltoall), and
 * MPI_Intercomm_merge (evens first), with an Allreduce and a ring on the
 * merge; and that an unsupported call (MPI_Comm_split on it) is refused
 * with a message naming it, as is MPI_Intercomm_create of a half with a
 * native peer_comm.
 *
 * Usage: mixedic — any world of at least 4 ranks.
 * Prints "PASS mixedic world rank R of N" per rank.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

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
            CHECK(all[j] == 2 * j + 1, "gather[%d] = %d", j, all[j]);
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
        CHECK(all[j] == 2 * j + !odd, "allgather[%d] = %d", j, all[j]);

    /* Alltoall: block j for remote rank j is 1000 * my world rank + j. */
    int *to = malloc(sizeof(int) * rsize), *from = malloc(sizeof(int) * rsize);
    for (int j = 0; j < rsize; j++) {
        to[j] = 1000 * rank + j;
        from[j] = -1;
    }
    MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, ic);
    for (int j = 0; j < rsize; j++)
        CHECK(from[j] == 1000 * (2 * j + !odd) + lrank, "alltoall[%d] = %d", j, from[j]);
    free(to);
    free(from);
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
        CHECK(w == 2 * j + !odd, "remote rank %d is world rank %d", j, w);
    }
    for (int j = 0; j < lsize; j++) {
        int w = -1;
        MPI_Group_translate_ranks(lg, 1, &j, wg, &w);
        CHECK(w == 2 * j + odd, "local rank %d is world rank %d", j, w);
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
    MPI_Comm_free(&dup);

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
    MPI_Comm sub = MPI_COMM_NULL;
    int rc = MPI_Comm_split(ic, 0, 0, &sub);
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    CHECK(rc != MPI_SUCCESS && strstr(msg, "MPI_Comm_split") && strstr(msg, "span both jobs"),
          "MPI_Comm_split on it: %d (%s)", rc, msg);

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

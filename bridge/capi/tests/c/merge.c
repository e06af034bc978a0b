/*
 * MPI_Intercomm_merge of an Isthmus intercommunicator, from C: one
 * intracommunicator over two jobs (usually of different implementations).
 *
 * Usage: merge GROUP PEER HIGH FIRST, where HIGH is this job's high flag
 * and FIRST says which job the test expects first in the merged order
 * ("me" or "peer"). Checks rank, size and every merged call Isthmus
 * carries: collectives (values that depend on the order: a non-commutative
 * operation in the reductions, gathers, scatters, all-to-alls, prefixes;
 * in place where MPI allows it), point-to-point within and across the jobs
 * (blocking, nonblocking, every send mode, MPI_ANY_SOURCE) with statuses
 * naming merged ranks, dup and compare, splits into one job's communicators,
 * MPI_Intercomm_create with the merged communicator as peer_comm, and the
 * refusals.
 * Prints "PASS merge rank R" per rank.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "isthmus.h"

static int rank, wsize;

/* (first, last) pairs: op(a, b) = (a.first, b.last): associative, not
 * commutative; over ranks 0..n-1 in order it gives (0, n-1). */
static void first_last(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout;
    (void) dt;
    for (int i = 0; i < *len; i++)
        b[2 * i] = a[2 * i];
}

static void expect_refused(int rc, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK(rc != MPI_SUCCESS, "%s on a merged communicator succeeded", call);
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, call) && strstr(msg, "merged Isthmus communicator"), "%s: message %s", call,
          msg);
    if (rank == 0)
        printf("REFUSED %s: %s\n", call, msg);
}

static void collectives(MPI_Comm m, int mr, int n)
{
    int x = mr + 1, sum = -1, i;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, m);
    CHECK(sum == n * (n + 1) / 2, "allreduce sum %d, expected %d", sum, n * (n + 1) / 2);

    MPI_Op op;
    MPI_Datatype pair;
    MPI_Op_create(first_last, 0, &op);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int mine[2] = {mr, mr}, fl[2] = {-1, -1};
    MPI_Allreduce(mine, fl, 1, pair, op, m);
    CHECK(fl[0] == 0 && fl[1] == n - 1, "non-commutative allreduce (%d, %d), expected (0, %d)",
          fl[0], fl[1], n - 1);
    fl[0] = mr;
    fl[1] = mr;
    MPI_Allreduce(MPI_IN_PLACE, fl, 1, pair, op, m);
    CHECK(fl[0] == 0 && fl[1] == n - 1, "in-place allreduce (%d, %d)", fl[0], fl[1]);
    for (int root = 0; root < n; root++) {
        /* A real reduce: the order of the operands at each root, in
         * place too; the receive buffer is not significant elsewhere. */
        fl[0] = fl[1] = -1;
        MPI_Reduce(mine, mr == root ? fl : NULL, 1, pair, op, root, m);
        if (mr == root)
            CHECK(fl[0] == 0 && fl[1] == n - 1, "non-commutative reduce at %d: (%d, %d)", root,
                  fl[0], fl[1]);
        fl[0] = fl[1] = mr;
        MPI_Reduce(mr == root ? MPI_IN_PLACE : (void *) fl, mr == root ? fl : NULL, 1, pair, op,
                   root, m);
        if (mr == root)
            CHECK(fl[0] == 0 && fl[1] == n - 1, "in-place reduce at %d: (%d, %d)", root, fl[0],
                  fl[1]);
    }
    {
        /* Reduce_scatter: rank i gets i % 2 + 1 elements; a
         * non-commutative one on pairs, then in place. */
        int *rc = malloc(sizeof(int) * (size_t) n), total = 0;
        CHECK(rc, "malloc");
        for (i = 0; i < n; i++) {
            rc[i] = i % 2 + 1;
            total += rc[i];
        }
        int *in = malloc(sizeof(int) * 2 * (size_t) total), got[4] = {-1, -1, -1, -1};
        CHECK(in, "malloc");
        for (i = 0; i < total; i++) {
            in[2 * i] = mr;
            in[2 * i + 1] = mr;
        }
        MPI_Reduce_scatter(in, got, rc, pair, op, m);
        for (i = 0; i < rc[mr]; i++)
            CHECK(got[2 * i] == 0 && got[2 * i + 1] == n - 1,
                  "non-commutative reduce_scatter item %d: (%d, %d)", i, got[2 * i],
                  got[2 * i + 1]);
        int off = 0;
        for (i = 0; i < mr; i++)
            off += rc[i];
        for (i = 0; i < total; i++)
            in[i] = mr + i;
        MPI_Reduce_scatter(MPI_IN_PLACE, in, rc, MPI_INT, MPI_SUM, m);
        for (i = 0; i < rc[mr]; i++)
            CHECK(in[i] == n * (n - 1) / 2 + n * (off + i), "in-place reduce_scatter item %d: %d",
                  i, in[i]);
        free(in);
        free(rc);
    }
    MPI_Scan(mine, fl, 1, pair, op, m);
    CHECK(fl[0] == 0 && fl[1] == mr, "scan (%d, %d), expected (0, %d)", fl[0], fl[1], mr);
    fl[0] = fl[1] = -7;
    MPI_Exscan(mine, fl, 1, pair, op, m);
    if (mr > 0)
        CHECK(fl[0] == 0 && fl[1] == mr - 1, "exscan (%d, %d), expected (0, %d)", fl[0], fl[1],
              mr - 1);
    MPI_Type_free(&pair);
    MPI_Op_free(&op);

    for (int root = 0; root < n; root++) {
        int v = root == mr ? 4242 + root : -1, r = -1;
        MPI_Bcast(&v, 1, MPI_INT, root, m);
        CHECK(v == 4242 + root, "bcast from %d: %d", root, v);
        MPI_Reduce(&x, &r, 1, MPI_INT, MPI_SUM, root, m);
        if (mr == root)
            CHECK(r == n * (n + 1) / 2, "reduce at %d: %d", root, r);
    }

    int *all = malloc(sizeof(int) * (size_t) n), *out = malloc(sizeof(int) * (size_t) n);
    CHECK(all && out, "malloc");
    for (int root = 0; root < n; root++) {
        for (i = 0; i < n; i++)
            all[i] = -1;
        MPI_Gather(&mr, 1, MPI_INT, all, 1, MPI_INT, root, m);
        if (mr == root)
            for (i = 0; i < n; i++)
                CHECK(all[i] == i, "gather at %d: [%d] = %d", root, i, all[i]);
    }
    for (int root = 0; root < n; root++) {
        int v = -1;
        if (mr == root)
            for (i = 0; i < n; i++)
                all[i] = 1000 * root + i;
        MPI_Scatter(all, 1, MPI_INT, &v, 1, MPI_INT, root, m);
        CHECK(v == 1000 * root + mr, "scatter from %d: %d", root, v);
    }
    {
        /* v-variants: rank i gives i % 3 + 1 ints, laid out in reverse
         * rank order. */
        int *counts = malloc(sizeof(int) * (size_t) n), *displs = malloc(sizeof(int) * (size_t) n);
        int total = 0, mine[3], *v = malloc(sizeof(int) * 3 * (size_t) n);
        CHECK(counts && displs && v, "malloc");
        for (i = n - 1; i >= 0; i--) {
            counts[i] = i % 3 + 1;
            displs[i] = total;
            total += counts[i];
        }
        for (i = 0; i < counts[mr]; i++)
            mine[i] = 100 * mr + i;
        for (i = 0; i < total; i++)
            v[i] = -1;
        MPI_Allgatherv(mine, counts[mr], MPI_INT, v, counts, displs, MPI_INT, m);
        for (int r = 0; r < n; r++)
            for (i = 0; i < counts[r]; i++)
                CHECK(v[displs[r] + i] == 100 * r + i, "allgatherv: rank %d item %d: %d", r, i,
                      v[displs[r] + i]);
        for (int root = 0; root < n; root++) {
            for (i = 0; i < total; i++)
                v[i] = -1;
            MPI_Gatherv(mine, counts[mr], MPI_INT, v, counts, displs, MPI_INT, root, m);
            if (mr == root)
                for (int r = 0; r < n; r++)
                    for (i = 0; i < counts[r]; i++)
                        CHECK(v[displs[r] + i] == 100 * r + i, "gatherv at %d: rank %d item %d: %d",
                              root, r, i, v[displs[r] + i]);
        }
        for (int root = 0; root < n; root++) {
            /* Scatterv: the same blocks from each root, received as ints,
             * and as one contiguous type; in place at the root. */
            int got[3] = {-1, -1, -1};
            MPI_Datatype block;
            if (mr == root)
                for (int r = 0; r < n; r++)
                    for (i = 0; i < counts[r]; i++)
                        v[displs[r] + i] = 1000 * root + 100 * r + i;
            MPI_Scatterv(v, counts, displs, MPI_INT, got, counts[mr], MPI_INT, root, m);
            for (i = 0; i < counts[mr]; i++)
                CHECK(got[i] == 1000 * root + 100 * mr + i, "scatterv from %d item %d: %d", root,
                      i, got[i]);
            MPI_Type_contiguous(counts[mr], MPI_INT, &block);
            MPI_Type_commit(&block);
            got[0] = got[1] = got[2] = -1;
            MPI_Scatterv(v, counts, displs, MPI_INT, mr == root ? MPI_IN_PLACE : (void *) got, 1,
                         block, root, m);
            if (mr != root)
                for (i = 0; i < counts[mr]; i++)
                    CHECK(got[i] == 1000 * root + 100 * mr + i,
                          "scatterv (in place at the root) from %d item %d: %d", root, i, got[i]);
            MPI_Type_free(&block);
        }
        free(counts);
        free(displs);
        free(v);
    }
    MPI_Allgather(&mr, 1, MPI_INT, all, 1, MPI_INT, m);
    for (i = 0; i < n; i++)
        CHECK(all[i] == i, "allgather: [%d] = %d", i, all[i]);
    for (i = 0; i < n; i++)
        all[i] = 100 * mr + i;
    MPI_Alltoall(all, 1, MPI_INT, out, 1, MPI_INT, m);
    for (i = 0; i < n; i++)
        CHECK(out[i] == 100 * i + mr, "alltoall: from %d got %d", i, out[i]);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, m);
    for (i = 0; i < n; i++)
        CHECK(all[i] == 100 * i + mr, "in-place alltoall: from %d got %d", i, all[i]);
    {
        /* Alltoallv: rank r sends (i + r) % 2 + 1 ints to rank i, blocks
         * in reverse order in both buffers; then in place. Reduce_scatter_block. */
        int *sc = malloc(sizeof(int) * (size_t) n), *sd = malloc(sizeof(int) * (size_t) n);
        int *rc = malloc(sizeof(int) * (size_t) n), *rd = malloc(sizeof(int) * (size_t) n);
        int *sb = malloc(sizeof(int) * 2 * (size_t) n), *rb = malloc(sizeof(int) * 2 * (size_t) n);
        int st = 0, rt = 0;
        CHECK(sc && sd && rc && rd && sb && rb, "malloc");
        for (i = n - 1; i >= 0; i--) {
            sc[i] = (i + mr) % 2 + 1;
            sd[i] = st;
            st += sc[i];
            rc[i] = (mr + i) % 2 + 1;
            rd[i] = rt;
            rt += rc[i];
        }
        for (i = 0; i < n; i++)
            for (int j = 0; j < sc[i]; j++)
                sb[sd[i] + j] = 1000 * mr + 10 * i + j;
        MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, m);
        for (i = 0; i < n; i++)
            for (int j = 0; j < rc[i]; j++)
                CHECK(rb[rd[i] + j] == 1000 * i + 10 * mr + j, "alltoallv from %d item %d: %d", i,
                      j, rb[rd[i] + j]);
        for (i = 0; i < n; i++)
            for (int j = 0; j < rc[i]; j++)
                rb[rd[i] + j] = 1000 * mr + 10 * i + j;
        MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rb, rc, rd, MPI_INT, m);
        for (i = 0; i < n; i++)
            for (int j = 0; j < rc[i]; j++)
                CHECK(rb[rd[i] + j] == 1000 * i + 10 * mr + j, "in-place alltoallv from %d: %d", i,
                      rb[rd[i] + j]);
        {
            /* Alltoallw: the same blocks as Alltoallv, displacements in
             * bytes, each block to an odd rank as one contiguous type and
             * each block from an odd rank received as ints (and the
             * reverse for even ranks); then in place. */
            int *sdb = malloc(sizeof(int) * (size_t) n), *rdb = malloc(sizeof(int) * (size_t) n);
            int *swc = malloc(sizeof(int) * (size_t) n), *rwc = malloc(sizeof(int) * (size_t) n);
            MPI_Datatype *stt = malloc(sizeof(MPI_Datatype) * (size_t) n);
            MPI_Datatype *rtt = malloc(sizeof(MPI_Datatype) * (size_t) n);
            CHECK(sdb && rdb && swc && rwc && stt && rtt, "malloc");
            for (i = 0; i < n; i++) {
                sdb[i] = sd[i] * (int) sizeof(int);
                rdb[i] = rd[i] * (int) sizeof(int);
                if (i % 2) {
                    MPI_Type_contiguous(sc[i], MPI_INT, &stt[i]);
                    MPI_Type_commit(&stt[i]);
                    swc[i] = 1;
                    rtt[i] = MPI_INT;
                    rwc[i] = rc[i];
                } else {
                    stt[i] = MPI_INT;
                    swc[i] = sc[i];
                    MPI_Type_contiguous(rc[i], MPI_INT, &rtt[i]);
                    MPI_Type_commit(&rtt[i]);
                    rwc[i] = 1;
                }
            }
            for (i = 0; i < n; i++)
                for (int j = 0; j < sc[i]; j++)
                    sb[sd[i] + j] = 1000 * mr + 10 * i + j;
            for (i = 0; i < 2 * n; i++)
                rb[i] = -1;
            MPI_Alltoallw(sb, swc, sdb, stt, rb, rwc, rdb, rtt, m);
            for (i = 0; i < n; i++)
                for (int j = 0; j < rc[i]; j++)
                    CHECK(rb[rd[i] + j] == 1000 * i + 10 * mr + j, "alltoallw from %d item %d: %d",
                          i, j, rb[rd[i] + j]);
            for (i = 0; i < n; i++)
                for (int j = 0; j < rc[i]; j++)
                    rb[rd[i] + j] = 1000 * mr + 10 * i + j;
            MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, rb, rwc, rdb, rtt, m);
            for (i = 0; i < n; i++)
                for (int j = 0; j < rc[i]; j++)
                    CHECK(rb[rd[i] + j] == 1000 * i + 10 * mr + j,
                          "in-place alltoallw from %d item %d: %d", i, j, rb[rd[i] + j]);
            for (i = 0; i < n; i++) {
                if (stt[i] != MPI_INT)
                    MPI_Type_free(&stt[i]);
                if (rtt[i] != MPI_INT)
                    MPI_Type_free(&rtt[i]);
            }
            free(sdb);
            free(rdb);
            free(swc);
            free(rwc);
            free(stt);
            free(rtt);
        }
        for (i = 0; i < n; i++)
            sb[i] = mr + i;
        int mine = -1;
        MPI_Reduce_scatter_block(sb, &mine, 1, MPI_INT, MPI_SUM, m);
        CHECK(mine == n * (n - 1) / 2 + n * mr, "reduce_scatter_block: %d", mine);
        free(sc);
        free(sd);
        free(rc);
        free(rd);
        free(sb);
        free(rb);
    }
    free(all);
    free(out);
    MPI_Barrier(m);
}

/* The other send modes around a ring (each step within a job or across
 * the two): Bsend and Ibsend through an attached buffer, Issend, and
 * Irsend to a receive posted before a barrier. */
/* Reductions of buffers large enough for the native steps' own tree
 * (native_reduce: 64 KiB and more of a type and operation Isthmus's loops
 * compute; MPICH's steps, and Open MPI's under ISTHMUS_WAIT=block), on the
 * merged communicator (Allreduce; Reduce at every root, in place at the
 * root for one) and on the intercommunicator (each group gets the other
 * group's sum), with values that say which rank's element went where. */
#define LARGE 20000
static void large_reductions(MPI_Comm m, int mr, int n, MPI_Comm inter, int rsize)
{
    double *d = malloc(sizeof(double) * LARGE), *dr = malloc(sizeof(double) * LARGE);
    long long *l = malloc(sizeof(long long) * LARGE), *lr = malloc(sizeof(long long) * LARGE);
    int *k = malloc(sizeof(int) * LARGE), *kr = malloc(sizeof(int) * LARGE);
    CHECK(d && dr && l && lr && k && kr, "malloc");
    for (int i = 0; i < LARGE; i++) {
        d[i] = 1000.0 * mr + i;
        l[i] = i % 3 + 1 + mr % 2;
        k[i] = (mr * 7 + i) % (n + 3);
    }
    MPI_Allreduce(d, dr, LARGE, MPI_DOUBLE, MPI_SUM, m);
    MPI_Allreduce(l, lr, LARGE, MPI_LONG_LONG, MPI_PROD, m);
    MPI_Allreduce(k, kr, LARGE, MPI_INT, MPI_MAX, m);
    for (int i = 0; i < LARGE; i++) {
        long long prod = 1;
        int max = 0;
        for (int r = 0; r < n; r++) {
            prod *= i % 3 + 1 + r % 2;
            max = (r * 7 + i) % (n + 3) > max ? (r * 7 + i) % (n + 3) : max;
        }
        CHECK(dr[i] == 1000.0 * n * (n - 1) / 2 + (double) n * i, "large allreduce sum [%d]: %g",
              i, dr[i]);
        CHECK(lr[i] == prod, "large allreduce prod [%d]: %lld, expected %lld", i, lr[i], prod);
        CHECK(kr[i] == max, "large allreduce max [%d]: %d, expected %d", i, kr[i], max);
    }
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < LARGE; i++)
            dr[i] = mr == root ? d[i] : -1.0;
        if (root % 2)
            MPI_Reduce(mr == root ? MPI_IN_PLACE : (void *) d, dr, LARGE, MPI_DOUBLE, MPI_SUM,
                       root, m);
        else
            MPI_Reduce(d, dr, LARGE, MPI_DOUBLE, MPI_SUM, root, m);
        if (mr == root)
            for (int i = 0; i < LARGE; i++)
                CHECK(dr[i] == 1000.0 * n * (n - 1) / 2 + (double) n * i,
                      "large reduce at %d [%d]: %g", root, i, dr[i]);
    }
    for (int i = 0; i < LARGE; i++)
        d[i] = rank + i;
    MPI_Allreduce(d, dr, LARGE, MPI_DOUBLE, MPI_SUM, inter);
    for (int i = 0; i < LARGE; i++)
        CHECK(dr[i] == rsize * (rsize - 1) / 2.0 + (double) rsize * i,
              "large intercommunicator allreduce [%d]: %g", i, dr[i]);
    free(d), free(dr), free(l), free(lr), free(k), free(kr);
    if (rank == 0)
        printf("LARGE reductions: ok\n");
}

static void send_modes(MPI_Comm m, int mr, int n)
{
    int next = (mr + 1) % n, prev = (mr + n - 1) % n, got[4] = {-1, -1, -1, -1}, size = 0;
    int big[1000], in[1000];
    MPI_Status st;
    MPI_Request r[2];
    void *attached;
    int bufsize = 4 * (MPI_BSEND_OVERHEAD + (int) sizeof big);
    char *buf = malloc((size_t) bufsize);
    CHECK(buf, "malloc");
    for (int i = 0; i < 1000; i++)
        big[i] = 1000 * mr + i;
    MPI_Buffer_attach(buf, bufsize);
    /* Buffered: both return before the receiver receives (it receives
     * only after a barrier), and the send buffers may be reused at once. */
    MPI_Bsend(&mr, 1, MPI_INT, next, 20, m);
    MPI_Ibsend(big, 1000, MPI_INT, next, 21, m, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < 1000; i++)
        big[i] = -1;
    MPI_Barrier(m);
    MPI_Recv(&got[0], 1, MPI_INT, prev, 20, m, &st);
    CHECK(got[0] == prev && st.MPI_SOURCE == prev, "bsend: %d from %d", got[0], st.MPI_SOURCE);
    MPI_Recv(in, 1000, MPI_INT, prev, 21, m, &st);
    for (int i = 0; i < 1000; i++)
        CHECK(in[i] == 1000 * prev + i, "ibsend item %d: %d", i, in[i]);
    MPI_Buffer_detach(&attached, &size);
    CHECK(attached == buf && size == bufsize, "detach: %p of %d", attached, size);
    free(buf);
    /* Synchronous, nonblocking: completes once the receive matched it. */
    MPI_Issend(&mr, 1, MPI_INT, next, 22, m, &r[0]);
    MPI_Recv(&got[1], 1, MPI_INT, prev, 22, m, &st);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    CHECK(got[1] == prev && st.MPI_SOURCE == prev, "issend: %d from %d", got[1], st.MPI_SOURCE);
    /* Ready, nonblocking: the receive is posted before the barrier. */
    MPI_Irecv(&got[2], 1, MPI_INT, prev, 23, m, &r[1]);
    MPI_Barrier(m);
    MPI_Irsend(&mr, 1, MPI_INT, next, 23, m, &r[0]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    CHECK(got[2] == prev, "irsend: %d", got[2]);
    MPI_Issend(&mr, 1, MPI_INT, MPI_PROC_NULL, 24, m, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    /* The large-count forms where the MPI has them (MPICH 4; the other
     * job, Open MPI 4.1, sends the same with the int forms), counts that
     * fit an int. */
    got[3] = -1;
#if MPI_VERSION >= 4
    MPI_Issend_c(&mr, 1, MPI_INT, next, 25, m, &r[0]);
#else
    MPI_Issend(&mr, 1, MPI_INT, next, 25, m, &r[0]);
#endif
    MPI_Recv(&got[3], 1, MPI_INT, prev, 25, m, MPI_STATUS_IGNORE);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    CHECK(got[3] == prev, "issend_c: %d", got[3]);
    MPI_Buffer_attach(in, (int) sizeof in);
#if MPI_VERSION >= 4
    MPI_Bsend_c(&mr, 1, MPI_INT, next, 26, m);
#else
    MPI_Bsend(&mr, 1, MPI_INT, next, 26, m);
#endif
    MPI_Recv(&got[3], 1, MPI_INT, prev, 26, m, MPI_STATUS_IGNORE);
    MPI_Buffer_detach(&attached, &size);
    CHECK(got[3] == prev, "bsend_c: %d", got[3]);
}

/* MPI_Irecv(MPI_ANY_SOURCE) at rank 0: every other rank (of both jobs)
 * sends it `per` numbered messages; rank 0 posts all its receives first,
 * some from any source and, among them, one from the last rank, then
 * waits for them (Waitall, then Waitany). Each message is received once,
 * and each source's messages in the order it sent them across the
 * receives in their posting order (MPI's non-overtaking rule). Then a
 * cancelled one, and one completed by MPI_Test. */
static void any_source_irecv(MPI_Comm m, int mr, int n)
{
    enum { per = 4 };
    int total = (n - 1) * per;
    if (mr == 0) {
        int *got = malloc(sizeof(int) * (size_t) total), *last = malloc(sizeof(int) * (size_t) n);
        int *seen = calloc((size_t) (n * per), sizeof(int));
        MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t) total);
        MPI_Status *st = malloc(sizeof(MPI_Status) * (size_t) total);
        CHECK(got && last && seen && rq && st, "malloc");
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < total; i++) {
                got[i] = -1;
                /* The third receive names the last rank (of either job). */
                int src = i == 2 ? n - 1 : MPI_ANY_SOURCE;
                MPI_Irecv(&got[i], 1, MPI_INT, src, 30 + round, m, &rq[i]);
            }
            MPI_Barrier(m); /* the senders start once everything is posted */
            if (round == 0) {
                MPI_Waitall(total, rq, st);
            } else {
                for (int k = 0; k < total; k++) {
                    int idx = -1;
                    MPI_Status one;
                    MPI_Waitany(total, rq, &idx, &one);
                    CHECK(idx >= 0 && idx < total, "waitany index %d", idx);
                    st[idx] = one;
                }
            }
            for (int s = 0; s < n; s++)
                last[s] = -1;
            for (int i = 0; i < n * per; i++)
                seen[i] = 0;
            for (int i = 0; i < total; i++) {
                int s = st[i].MPI_SOURCE, k = got[i] - 100 * s;
                CHECK(s > 0 && s < n && k >= 0 && k < per && st[i].MPI_TAG == 30 + round,
                      "any-source irecv %d (round %d): %d from %d tag %d", i, round, got[i], s,
                      st[i].MPI_TAG);
                CHECK(!seen[s * per + k], "message %d of %d received twice", k, s);
                seen[s * per + k] = 1;
                CHECK(k > last[s], "round %d: message %d of %d after %d (posting order %d)", round,
                      k, s, last[s], i);
                last[s] = k;
            }
            CHECK(st[2].MPI_SOURCE == n - 1, "the receive from %d got a message of %d", n - 1,
                  st[2].MPI_SOURCE);
        }
        {
            /* Cancelled before anything matches it. */
            MPI_Request r;
            MPI_Status cs;
            int x = -1, flag = 0;
            MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 32, m, &r);
            MPI_Cancel(&r);
            MPI_Wait(&r, &cs);
            MPI_Test_cancelled(&cs, &flag);
            CHECK(flag && x == -1, "cancelled any-source irecv: flag %d value %d", flag, x);
            /* Completed by a test loop: from the last rank. */
            MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 33, m, &r);
            MPI_Barrier(m);
            flag = 0;
            while (!flag)
                MPI_Test(&r, &flag, &cs);
            CHECK(x == 4242 && cs.MPI_SOURCE == n - 1, "test: %d from %d", x, cs.MPI_SOURCE);
        }
        free(got);
        free(last);
        free(seen);
        free(rq);
        free(st);
    } else {
        for (int round = 0; round < 2; round++) {
            MPI_Barrier(m);
            for (int k = 0; k < per; k++) {
                int v = 100 * mr + k;
                MPI_Send(&v, 1, MPI_INT, 0, 30 + round, m);
            }
        }
        MPI_Barrier(m);
        if (mr == n - 1) {
            int v = 4242;
            MPI_Send(&v, 1, MPI_INT, 0, 33, m);
        }
    }
}

static void point_to_point(MPI_Comm m, int mr, int n)
{
    int next = (mr + 1) % n, prev = (mr + n - 1) % n, got = -1, flag = 0, count = -1;
    MPI_Status st;
    /* A ring: each step within a job or across the two. */
    MPI_Sendrecv(&mr, 1, MPI_INT, next, 5, &got, 1, MPI_INT, prev, 5, m, &st);
    CHECK(got == prev && st.MPI_SOURCE == prev && st.MPI_TAG == 5,
          "ring: got %d from source %d tag %d, expected %d", got, st.MPI_SOURCE, st.MPI_TAG, prev);
    /* Everyone to the last rank: probe, then receive, in both kinds. */
    if (mr == n - 1) {
        for (int s = 0; s < n - 1; s++) {
            MPI_Probe(s, 6, m, &st);
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(st.MPI_SOURCE == s && count == 2, "probe from %d: source %d count %d", s,
                  st.MPI_SOURCE, count);
            int two[2] = {-1, -1};
            MPI_Recv(two, 2, MPI_INT, s, 6, m, &st);
            CHECK(two[0] == s && two[1] == -s && st.MPI_SOURCE == s, "recv from %d: (%d, %d)", s,
                  two[0], two[1]);
        }
    } else {
        int two[2] = {mr, -mr};
        MPI_Request r;
        MPI_Isend(two, 2, MPI_INT, n - 1, 6, m, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    /* Nonblocking receives at the last rank from everyone (native and
     * bridge requests in one Waitall), statuses in merged ranks. */
    if (mr == n - 1) {
        int *vals = malloc(sizeof(int) * (size_t) n);
        MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t) n);
        MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t) n);
        CHECK(vals && rq && sts, "malloc");
        for (int s = 0; s < n - 1; s++)
            MPI_Irecv(&vals[s], 1, MPI_INT, s, 9, m, &rq[s]);
        MPI_Waitall(n - 1, rq, sts);
        for (int s = 0; s < n - 1; s++)
            CHECK(vals[s] == 10 * s && sts[s].MPI_SOURCE == s && sts[s].MPI_TAG == 9,
                  "irecv from %d: %d, source %d", s, vals[s], sts[s].MPI_SOURCE);
        free(vals);
        free(rq);
        free(sts);
    } else {
        int v = 10 * mr;
        MPI_Send(&v, 1, MPI_INT, n - 1, 9, m);
    }
    /* MPI_ANY_SOURCE at rank 0: a probe, then every other rank's message
     * once, whichever job it comes from. */
    if (mr == 0) {
        int *seen = calloc((size_t) n, sizeof(int));
        CHECK(seen, "calloc");
        MPI_Probe(MPI_ANY_SOURCE, 10, m, &st);
        CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < n, "probe any: source %d", st.MPI_SOURCE);
        for (int k = 1; k < n; k++) {
            MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 10, m, &st);
            CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < n && got == 7 * st.MPI_SOURCE &&
                      !seen[st.MPI_SOURCE],
                  "any source: %d from %d", got, st.MPI_SOURCE);
            seen[st.MPI_SOURCE] = 1;
        }
        free(seen);
    } else {
        int v = 7 * mr;
        MPI_Send(&v, 1, MPI_INT, 0, 10, m);
    }
    /* Rank 0 to everyone, synchronous; the last checks with Iprobe first. */
    if (mr == 0) {
        for (int d = 1; d < n; d++)
            MPI_Ssend(&d, 1, MPI_INT, d, 7, m);
    } else {
        while (!flag)
            MPI_Iprobe(0, 7, m, &flag, &st);
        CHECK(st.MPI_SOURCE == 0, "iprobe source %d", st.MPI_SOURCE);
        MPI_Recv(&got, 1, MPI_INT, 0, 7, m, MPI_STATUS_IGNORE);
        CHECK(got == mr, "ssend: got %d", got);
    }
    /* A ready send from rank 0 to the last, whose receive is posted first. */
    {
        MPI_Request r = MPI_REQUEST_NULL;
        got = -1;
        if (mr == n - 1)
            MPI_Irecv(&got, 1, MPI_INT, 0, 11, m, &r);
        MPI_Barrier(m);
        if (mr == 0)
            MPI_Rsend(&n, 1, MPI_INT, n - 1, 11, m);
        if (mr == n - 1) {
            MPI_Wait(&r, &st);
            CHECK(got == n && st.MPI_SOURCE == 0, "rsend: %d from %d", got, st.MPI_SOURCE);
        }
    }
    MPI_Send(&mr, 1, MPI_INT, MPI_PROC_NULL, 0, m);
    send_modes(m, mr, n);
    any_source_irecv(m, mr, n);
}

/* The rank of merged rank `mr` in its color's communicator: by key, then
 * old rank (MPI_Comm_split's order); -1 for MPI_UNDEFINED. */
/* The nonblocking collectives carried on a merged communicator:
 * MPI_Ibarrier completed by polling MPI_Test alone, Ibcast from every
 * root, Iallreduce (a sum, a non-commutative operation, in place) and
 * Ireduce at every root (non-commutative, in place), several outstanding
 * at once beside a native request and completed in reverse order by one
 * MPI_Waitall; Igather, Iscatter at every root, Iallgather and Ialltoall
 * (in place too, polled with MPI_Testall), Iscan, Iexscan and
 * Ireduce_scatter(_block) (non-commutative, in place); Igatherv with
 * the blocks in reverse order. `what` names `m` in the line printed (the
 * merge's order, or a split's that interleaves the jobs: the same must
 * hold on both). */
static void nonblocking_collectives(MPI_Comm m, int mr, int n, const char *what)
{
    MPI_Request rq[6];
    int flag = 0, polls = 0, i;
    MPI_Ibarrier(m, &rq[0]);
    while (!flag) {
        MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
        polls++;
    }
    CHECK(rq[0] == MPI_REQUEST_NULL, "ibarrier: request not freed");

    MPI_Op op;
    MPI_Datatype pair;
    MPI_Op_create(first_last, 0, &op);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int mine[2] = {mr, mr}, fl[2], ip[2] = {mr, mr}, x = mr + 1, sum = -1;
    for (int root = 0; root < n; root++) {
        int v = root == mr ? 7000 + root : -1, red[2] = {-1, -1};
        fl[0] = fl[1] = mr;
        MPI_Ibcast(&v, 1, MPI_INT, root, m, &rq[0]);
        MPI_Ireduce(mine, red, 1, pair, op, root, m, &rq[1]);
        MPI_Ireduce(mr == root ? MPI_IN_PLACE : (void *) fl, mr == root ? fl : NULL, 1, pair, op,
                    root, m, &rq[2]);
        MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
        CHECK(v == 7000 + root, "ibcast from %d: %d", root, v);
        if (mr == root)
            CHECK(red[0] == 0 && red[1] == n - 1 && fl[0] == 0 && fl[1] == n - 1,
                  "ireduce at %d: (%d, %d), in place (%d, %d)", root, red[0], red[1], fl[0],
                  fl[1]);
    }
    /* Outstanding together, beside a native exchange with a neighbour in
     * this job (MPI_COMM_WORLD), completed in reverse order at once. */
    int right = (rank + 1) % wsize, left = (rank + wsize - 1) % wsize, got = -1;
    fl[0] = fl[1] = -1;
    MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, m, &rq[5]);
    MPI_Iallreduce(mine, fl, 1, pair, op, m, &rq[4]);
    MPI_Iallreduce(MPI_IN_PLACE, ip, 1, pair, op, m, &rq[3]);
    MPI_Ibarrier(m, &rq[2]);
    MPI_Irecv(&got, 1, MPI_INT, left, 77, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend(&rank, 1, MPI_INT, right, 77, MPI_COMM_WORLD, &rq[0]);
    MPI_Waitall(6, rq, MPI_STATUSES_IGNORE);
    CHECK(sum == n * (n + 1) / 2, "iallreduce sum %d", sum);
    CHECK(fl[0] == 0 && fl[1] == n - 1, "non-commutative iallreduce (%d, %d)", fl[0], fl[1]);
    CHECK(ip[0] == 0 && ip[1] == n - 1, "in-place iallreduce (%d, %d)", ip[0], ip[1]);
    CHECK(got == left, "native exchange beside them: %d", got);
    for (i = 0; i < 6; i++)
        CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not freed", i);
    /* Prefixes and Ireduce_scatter_block, non-commutative and in place. */
    int sc[2] = {-1, -1}, ex[2] = {-7, -7}, isc[2] = {mr, mr}, iex[2] = {mr, mr};
    int *rsb = malloc(sizeof(int) * 2 * (size_t) n), blk[2] = {-1, -1};
    CHECK(rsb, "malloc");
    for (i = 0; i < n; i++)
        rsb[2 * i] = rsb[2 * i + 1] = mr;
    MPI_Iscan(mine, sc, 1, pair, op, m, &rq[0]);
    MPI_Iexscan(mine, ex, 1, pair, op, m, &rq[1]);
    MPI_Iscan(MPI_IN_PLACE, isc, 1, pair, op, m, &rq[2]);
    MPI_Iexscan(MPI_IN_PLACE, iex, 1, pair, op, m, &rq[3]);
    MPI_Ireduce_scatter_block(rsb, blk, 1, pair, op, m, &rq[4]);
    MPI_Waitall(5, rq, MPI_STATUSES_IGNORE);
    CHECK(sc[0] == 0 && sc[1] == mr && isc[0] == 0 && isc[1] == mr,
          "iscan (%d, %d), in place (%d, %d)", sc[0], sc[1], isc[0], isc[1]);
    if (mr > 0)
        CHECK(ex[0] == 0 && ex[1] == mr - 1 && iex[0] == 0 && iex[1] == mr - 1,
              "iexscan (%d, %d), in place (%d, %d)", ex[0], ex[1], iex[0], iex[1]);
    CHECK(blk[0] == 0 && blk[1] == n - 1, "ireduce_scatter_block (%d, %d)", blk[0], blk[1]);
    MPI_Ireduce_scatter_block(MPI_IN_PLACE, rsb, 1, pair, op, m, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    CHECK(rsb[0] == 0 && rsb[1] == n - 1, "in-place ireduce_scatter_block (%d, %d)", rsb[0],
          rsb[1]);
    free(rsb);
    MPI_Type_free(&pair);
    MPI_Op_free(&op);

    /* The gathers, scatters and all-to-all: two ints per block (a block's
     * value names its sender and receiver), in place too. */
    int *a = malloc(sizeof(int) * 2 * (size_t) n), *b = malloc(sizeof(int) * 2 * (size_t) n);
    int two[2] = {mr, -mr}, back[2];
    CHECK(a && b, "malloc");
    for (int root = 0; root < n; root++) {
        for (i = 0; i < 2 * n; i++)
            b[i] = -1;
        if (mr == root)
            for (i = 0; i < n; i++) {
                a[2 * i] = 100 * root + i;
                a[2 * i + 1] = -(100 * root + i);
            }
        back[0] = back[1] = -1;
        MPI_Igather(two, 2, MPI_INT, b, 2, MPI_INT, root, m, &rq[0]);
        MPI_Iscatter(a, 2, MPI_INT, back, 2, MPI_INT, root, m, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        CHECK(back[0] == 100 * root + mr && back[1] == -(100 * root + mr),
              "iscatter from %d: (%d, %d)", root, back[0], back[1]);
        if (mr == root)
            for (i = 0; i < n; i++)
                CHECK(b[2 * i] == i && b[2 * i + 1] == -i, "igather at %d: [%d] = (%d, %d)", root,
                      i, b[2 * i], b[2 * i + 1]);
        if (mr == root) {
            /* In place at the root: its own block already there. */
            for (i = 0; i < 2 * n; i++)
                b[i] = i / 2 == mr ? (i % 2 ? -mr : mr) : -1;
            MPI_Igather(MPI_IN_PLACE, 2, MPI_INT, b, 2, MPI_INT, root, m, &rq[0]);
        } else
            MPI_Igather(two, 2, MPI_INT, NULL, 0, MPI_INT, root, m, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        if (mr == root)
            for (i = 0; i < n; i++)
                CHECK(b[2 * i] == i && b[2 * i + 1] == -i, "in-place igather at %d: [%d]", root, i);
    }
    for (i = 0; i < 2 * n; i++)
        b[i] = -1;
    MPI_Iallgather(two, 2, MPI_INT, b, 2, MPI_INT, m, &rq[0]);
    for (i = 0; i < n; i++) {
        a[2 * i] = 1000 * mr + i;
        a[2 * i + 1] = -(1000 * mr + i);
    }
    int *c = malloc(sizeof(int) * 2 * (size_t) n);
    CHECK(c, "malloc");
    MPI_Ialltoall(a, 2, MPI_INT, c, 2, MPI_INT, m, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    for (i = 0; i < n; i++) {
        CHECK(b[2 * i] == i && b[2 * i + 1] == -i, "iallgather [%d] = (%d, %d)", i, b[2 * i],
              b[2 * i + 1]);
        CHECK(c[2 * i] == 1000 * i + mr && c[2 * i + 1] == -(1000 * i + mr),
              "ialltoall from %d: (%d, %d)", i, c[2 * i], c[2 * i + 1]);
    }
    MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, 2, MPI_INT, m, &rq[0]);
    for (i = 0; i < 2 * n; i++)
        b[i] = i / 2 == mr ? (i % 2 ? -mr : mr) : -1;
    MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, 2, MPI_INT, m, &rq[1]);
    flag = 0;
    while (!flag)
        MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE);
    for (i = 0; i < n; i++) {
        CHECK(a[2 * i] == 1000 * i + mr && a[2 * i + 1] == -(1000 * i + mr),
              "in-place ialltoall from %d: (%d, %d)", i, a[2 * i], a[2 * i + 1]);
        CHECK(b[2 * i] == i && b[2 * i + 1] == -i, "in-place iallgather [%d]", i);
    }
    free(a);
    free(b);
    free(c);

    MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN);
    {
        /* Ireduce_scatter: rank i keeps i % 2 + 1 ints of a sum. */
        int counts[64], in[128], out[2] = {-1, -1}, total = 0, off = 0;
        CHECK(n <= 64, "too many ranks");
        for (i = 0; i < n; i++) {
            counts[i] = i % 2 + 1;
            if (i < mr)
                off += counts[i];
            total += counts[i];
        }
        for (i = 0; i < total; i++)
            in[i] = mr + i;
        MPI_Ireduce_scatter(in, out, counts, MPI_INT, MPI_SUM, m, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        for (i = 0; i < counts[mr]; i++)
            CHECK(out[i] == n * (n - 1) / 2 + n * (off + i), "ireduce_scatter item %d: %d", i,
                  out[i]);
    }
    /* Igatherv: every rank's merged rank, each at its own displacement. */
    int mine_rank = mr, gathered[64], ones[64], at[64];
    MPI_Request r = MPI_REQUEST_NULL;
    CHECK(n <= 64, "merged size %d", n);
    for (i = 0; i < n; i++) {
        ones[i] = 1;
        at[i] = n - 1 - i;
        gathered[i] = -1;
    }
    MPI_Igatherv(&mine_rank, 1, MPI_INT, gathered, ones, at, MPI_INT, 0, m, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (mr == 0)
        for (i = 0; i < n; i++)
            CHECK(gathered[n - 1 - i] == i, "igatherv block of rank %d: %d", i,
                  gathered[n - 1 - i]);
    MPI_Comm_set_errhandler(m, MPI_ERRORS_ARE_FATAL);
    if (rank == 0)
        printf("NONBLOCKING collectives on %s: ok (%d polls)\n", what, polls);
}

static int split_rank(const int *color, const int *key, int n, int mr, int *size)
{
    int r = 0;
    *size = 0;
    if (color[mr] == MPI_UNDEFINED)
        return -1;
    for (int i = 0; i < n; i++) {
        if (color[i] != color[mr])
            continue;
        (*size)++;
        if (key[i] < key[mr] || (key[i] == key[mr] && i < mr))
            r++;
    }
    return r;
}

/* Splits with `color` and `key` (per merged rank) and checks the new
 * communicator's rank and size; returns it (MPI_COMM_NULL if undefined). */
static MPI_Comm split_as(MPI_Comm m, int mr, int n, const int *color, const int *key,
                         const char *what)
{
    MPI_Comm s = MPI_COMM_NULL;
    int size = 0, want = split_rank(color, key, n, mr, &size), sr = -1, ss = -1;
    int rc = MPI_Comm_split(m, color[mr], key[mr], &s);
    CHECK(rc == MPI_SUCCESS, "%s: split failed", what);
    if (want < 0) {
        CHECK(s == MPI_COMM_NULL, "%s: MPI_UNDEFINED gave a communicator", what);
        return s;
    }
    MPI_Comm_rank(s, &sr);
    MPI_Comm_size(s, &ss);
    CHECK(sr == want && ss == size, "%s: rank %d of %d, expected %d of %d", what, sr, ss, want,
          size);
    return s;
}

/* Splits whose colors span both jobs: keys that interleave the jobs' ranks,
 * everything a merged communicator carries on the result; a split of that
 * split; MPI_UNDEFINED. */
static void spanning_splits(MPI_Comm m, int mr, int n)
{
    int *color = malloc(sizeof(int) * (size_t) n), *key = malloc(sizeof(int) * (size_t) n);
    int sr = -1, sn = -1, x = 0, sum = 0;
    CHECK(color && key, "malloc");
    /* One color, keys 0, 2, 4, 1, 3 for merged ranks 0..4: the order
     * 0, 3, 1, 4, 2 alternates the jobs. */
    for (int i = 0; i < n; i++) {
        color[i] = 0;
        key[i] = (2 * i) % n;
    }
    MPI_Comm s = split_as(m, mr, n, color, key, "interleaving split");
    MPI_Comm_rank(s, &sr);
    MPI_Comm_size(s, &sn);
    collectives(s, sr, sn);
    point_to_point(s, sr, sn);
    nonblocking_collectives(s, sr, sn, "an interleaving split");
    {
        /* A split of the split: even and odd ranks, reversed; then a
         * duplicate of it. */
        int *c2 = malloc(sizeof(int) * (size_t) sn), *k2 = malloc(sizeof(int) * (size_t) sn);
        int r2 = -1, n2 = -1;
        MPI_Comm d2;
        CHECK(c2 && k2, "malloc");
        for (int i = 0; i < sn; i++) {
            c2[i] = i % 2;
            k2[i] = -i;
        }
        MPI_Comm s2 = split_as(s, sr, sn, c2, k2, "split of a split");
        MPI_Comm_rank(s2, &r2);
        MPI_Comm_size(s2, &n2);
        x = r2 + 1;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, s2);
        CHECK(sum == n2 * (n2 + 1) / 2, "allreduce on the split of a split: %d", sum);
        MPI_Comm_dup(s2, &d2);
        collectives(d2, r2, n2);
        point_to_point(d2, r2, n2);
        MPI_Comm_free(&d2);
        MPI_Comm_free(&s2);
        free(c2);
        free(k2);
    }
    MPI_Comm_free(&s);
    /* MPI_UNDEFINED at merged rank 1; the others by reversed rank. */
    for (int i = 0; i < n; i++) {
        color[i] = i == 1 ? MPI_UNDEFINED : 7;
        key[i] = n - i;
    }
    s = split_as(m, mr, n, color, key, "split with an undefined color");
    if (s != MPI_COMM_NULL) {
        MPI_Comm_rank(s, &sr);
        MPI_Comm_size(s, &sn);
        int v = sr == 0 ? 99 : -1;
        MPI_Bcast(&v, 1, MPI_INT, 0, s);
        CHECK(v == 99, "bcast on the split with an undefined color: %d", v);
        x = sr + 1;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, s);
        CHECK(sum == sn * (sn + 1) / 2, "allreduce on the split with an undefined color: %d",
              sum);
        MPI_Comm_free(&s);
    }
    free(color);
    free(key);
    if (rank == 0)
        printf("SPLIT across both jobs: ok\n");
}

/* MPI_Comm_split and MPI_Comm_create of the Isthmus intercommunicator
 * itself (MPI's intercommunicator forms): intercommunicators between each
 * group's members of a color (by key), MPI_COMM_NULL where a side is
 * empty; Allgather on the result names the other side's members in its
 * order. */
static void intercomm_splits(MPI_Comm inter, int rsize)
{
    MPI_Comm s;
    int flag = 0, ls = -1, rs = -1, lr = -1, i;
    int *got = malloc(sizeof(int) * (size_t) rsize);
    CHECK(got, "malloc");
    /* By parity, reversed: the other side's members of my parity. */
    int rc = MPI_Comm_split(inter, rank % 2, -rank, &s);
    CHECK(rc == MPI_SUCCESS && s != MPI_COMM_NULL, "intercomm split: rc %d", rc);
    MPI_Comm_test_inter(s, &flag);
    MPI_Comm_size(s, &ls);
    MPI_Comm_remote_size(s, &rs);
    MPI_Comm_rank(s, &lr);
    int mine = 0, theirs = 0, above = 0;
    for (i = 0; i < wsize; i++)
        if (i % 2 == rank % 2) {
            mine++;
            above += i > rank;
        }
    for (i = 0; i < rsize; i++)
        theirs += i % 2 == rank % 2;
    CHECK(flag && ls == mine && rs == theirs && lr == above,
          "intercomm split: inter %d, rank %d of %d, remote %d", flag, lr, ls, rs);
    MPI_Allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, s);
    for (i = 0; i < rs; i++) {
        /* The other side's members, by reversed rank. */
        int want = -1, k = 0;
        for (int r = rsize - 1; r >= 0; r--)
            if (r % 2 == rank % 2 && k++ == i)
                want = r;
        CHECK(got[i] == want, "intercomm split allgather [%d] = %d, expected %d", i, got[i],
              want);
    }
    MPI_Comm_free(&s);
    /* Rank 1 of each side undefined: its color-0 peers get the rest. */
    rc = MPI_Comm_split(inter, rank == 1 ? MPI_UNDEFINED : 0, rank, &s);
    CHECK(rc == MPI_SUCCESS && (s == MPI_COMM_NULL) == (rank == 1), "intercomm split undefined");
    if (s != MPI_COMM_NULL) {
        MPI_Comm_remote_size(s, &rs);
        CHECK(rs == rsize - (rsize > 1), "intercomm split undefined: remote %d", rs);
        MPI_Comm_free(&s);
    }
    /* A color only this side's rank 0 has (the sides differ in size): it
     * gets MPI_COMM_NULL, the others their color-3 intercommunicator. */
    rc = MPI_Comm_split(inter, rank == 0 ? 5 + wsize : 3, 0, &s);
    CHECK(rc == MPI_SUCCESS, "intercomm split lonely: rc %d", rc);
    CHECK((s == MPI_COMM_NULL) == (rank == 0 && wsize != rsize), "intercomm split lonely color");
    if (s != MPI_COMM_NULL)
        MPI_Comm_free(&s);
    {
        /* Create: this side's group in reverse rank order. */
        MPI_Group wg, rev;
        int *ranks = malloc(sizeof(int) * (size_t) wsize);
        CHECK(ranks, "malloc");
        for (i = 0; i < wsize; i++)
            ranks[i] = wsize - 1 - i;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Group_incl(wg, wsize, ranks, &rev);
        rc = MPI_Comm_create(inter, rev, &s);
        CHECK(rc == MPI_SUCCESS && s != MPI_COMM_NULL, "intercomm create: rc %d", rc);
        MPI_Comm_rank(s, &lr);
        MPI_Comm_remote_size(s, &rs);
        CHECK(lr == wsize - 1 - rank && rs == rsize, "intercomm create: rank %d remote %d", lr,
              rs);
        MPI_Allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, s);
        for (i = 0; i < rsize; i++)
            CHECK(got[i] == rsize - 1 - i, "intercomm create allgather [%d] = %d", i, got[i]);
        MPI_Comm_free(&s);
        rc = MPI_Comm_create(inter, MPI_GROUP_EMPTY, &s);
        CHECK(rc == MPI_SUCCESS && s == MPI_COMM_NULL, "intercomm create of empty groups");
        MPI_Group_free(&rev);
        MPI_Group_free(&wg);
        free(ranks);
    }
    free(got);
    if (rank == 0)
        printf("INTERCOMM splits: ok\n");
}

/* MPI_Intercomm_create over the merged communicator m: each job's own
 * communicator (a split by job) as local_comm, m as peer_comm, the leaders
 * each job's first rank: an intercommunicator between the jobs (its
 * collectives, point-to-point, its own merge). Then within one job (its
 * ranks split by parity, the remote leader in the same job): the MPI's own
 * call. */
static void intercomm_create_over(MPI_Comm m, int mr, int n, int first, int rsize)
{
    MPI_Comm job, ic, mm, half;
    int rc, flag = 0, rs = -1, s = -1, r = -1, sum = 0, v = rank + 1;
    int mine = first ? 0 : rsize, theirs = first ? wsize : 0;
    MPI_Comm_split(m, first ? 1 : 2, mr, &job);
    rc = MPI_Intercomm_create(job, 0, m, theirs, 7, &ic);
    CHECK(rc == MPI_SUCCESS, "intercomm_create over merged: rc %d", rc);
    MPI_Comm_test_inter(ic, &flag);
    MPI_Comm_remote_size(ic, &rs);
    MPI_Comm_size(ic, &s);
    MPI_Comm_rank(ic, &r);
    CHECK(flag && rs == rsize && s == wsize && r == rank,
          "intercomm_create over merged: inter %d, rank %d of %d, remote %d", flag, r, s, rs);
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, ic);
    CHECK(sum == rsize * (rsize + 1) / 2, "allreduce on the created intercomm: %d", sum);
    if (rank == 0) {
        int got = -1;
        MPI_Sendrecv(&wsize, 1, MPI_INT, 0, 3, &got, 1, MPI_INT, 0, 3, ic, MPI_STATUS_IGNORE);
        CHECK(got == rsize, "sendrecv on the created intercomm: %d", got);
    }
    MPI_Intercomm_merge(ic, !first, &mm);
    MPI_Comm_size(mm, &s);
    MPI_Comm_rank(mm, &r);
    CHECK(s == n && r == mine + rank, "merge of the created intercomm: rank %d of %d", r, s);
    sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, mm);
    CHECK(sum == wsize * (wsize + 1) / 2 + rsize * (rsize + 1) / 2, "allreduce on its merge: %d",
          sum);
    MPI_Comm_free(&mm);
    MPI_Comm_free(&ic);
    if (wsize >= 2) {
        MPI_Comm_split(job, rank % 2, rank, &half);
        rc = MPI_Intercomm_create(half, 0, m, mine + (rank % 2 == 0 ? 1 : 0), 8, &ic);
        CHECK(rc == MPI_SUCCESS, "intercomm_create within a job over merged: rc %d", rc);
        MPI_Comm_remote_size(ic, &rs);
        CHECK(rs == (rank % 2 == 0 ? wsize / 2 : (wsize + 1) / 2),
              "intercomm_create within a job: remote size %d", rs);
        int one = 1;
        sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, ic);
        CHECK(sum == rs, "allreduce within a job: %d", sum);
        MPI_Comm_free(&ic);
        MPI_Comm_free(&half);
    }
    MPI_Comm_free(&job);
    if (rank == 0)
        printf("INTERCOMM_CREATE over merged: ok\n");
}

/* Groups of both jobs: MPI_Comm_group of the merged communicator (the
 * merged order), MPI_Comm_remote_group of the intercommunicator, the group
 * calls on them and with this job's native world group, and
 * MPI_Comm_create of the merged communicator with a group spanning both
 * jobs (its even merged ranks). */
static void groups_of_both(MPI_Comm m, MPI_Comm inter, int mr, int n, int first, int rsize)
{
    MPI_Group g, wg, rg, u, d, i, evens, pick;
    int rc, gs = -1, gr = -1, res = -1, mine = first ? 0 : rsize, theirs = first ? wsize : 0;
    int *all = malloc(sizeof(int) * (size_t) n), *to = malloc(sizeof(int) * (size_t) n);
    CHECK(MPI_Comm_group(m, &g) == MPI_SUCCESS, "MPI_Comm_group of the merged communicator");
    MPI_Group_size(g, &gs);
    MPI_Group_rank(g, &gr);
    CHECK(gs == n && gr == mr, "merged group: rank %d of %d", gr, gs);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int k = 0; k < wsize; k++)
        all[k] = k;
    MPI_Group_translate_ranks(wg, wsize, all, g, to);
    for (int k = 0; k < wsize; k++)
        CHECK(to[k] == mine + k, "world rank %d is merged rank %d", k, to[k]);
    for (int k = 0; k < n; k++)
        all[k] = k;
    MPI_Group_translate_ranks(g, n, all, wg, to);
    for (int k = 0; k < n; k++) {
        int want = k >= mine && k < mine + wsize ? k - mine : MPI_UNDEFINED;
        CHECK(to[k] == want, "merged rank %d is world rank %d, expected %d", k, to[k], want);
    }
    MPI_Group_compare(g, g, &res);
    CHECK(res == MPI_IDENT, "compare(g, g) = %d", res);
    MPI_Group_union(wg, g, &u);
    MPI_Group_compare(g, u, &res);
    CHECK(res == (first ? MPI_IDENT : MPI_SIMILAR), "compare(g, world + g) = %d", res);
    MPI_Group_difference(g, wg, &d);
    MPI_Group_size(d, &gs);
    MPI_Group_rank(d, &gr);
    CHECK(gs == rsize && gr == MPI_UNDEFINED, "g - world: rank %d of %d", gr, gs);
    MPI_Group_intersection(g, wg, &i);
    MPI_Group_compare(i, wg, &res);
    CHECK(res == MPI_IDENT, "g & world = world: %d", res);
    int range[1][3] = {{0, n - 1, 2}}, two[2] = {n - 1, 0};
    MPI_Group_range_incl(g, 1, range, &evens);
    MPI_Group_incl(g, 2, two, &pick);
    MPI_Group_translate_ranks(pick, 2, (int[]) {0, 1}, g, to);
    CHECK(to[0] == n - 1 && to[1] == 0, "incl(n-1, 0): %d %d", to[0], to[1]);
    {
        /* A rank twice or out of range: MPI_ERR_RANK (on MPI_COMM_SELF). */
        MPI_Group bad = MPI_GROUP_NULL;
        int cls = -1;
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        rc = MPI_Group_incl(g, 2, (int[]) {0, 0}, &bad);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RANK, "incl(0, 0): class %d", cls);
        rc = MPI_Group_excl(g, 1, (int[]) {n}, &bad);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RANK, "excl(n): class %d", cls);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    }
    MPI_Comm c;
    rc = MPI_Comm_create(m, evens, &c);
    CHECK(rc == MPI_SUCCESS && (c != MPI_COMM_NULL) == (mr % 2 == 0), "create(evens): rc %d", rc);
    if (c != MPI_COMM_NULL) {
        int cs = -1, cr = -1, sum = 0;
        MPI_Comm_size(c, &cs);
        MPI_Comm_rank(c, &cr);
        CHECK(cs == (n + 1) / 2 && cr == mr / 2, "create(evens): rank %d of %d", cr, cs);
        MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, c);
        CHECK(sum == ((n - 1) / 2) * ((n - 1) / 2 + 1), "allreduce on create(evens): %d", sum);
        MPI_Comm_free(&c);
    }
    CHECK(MPI_Comm_remote_group(inter, &rg) == MPI_SUCCESS, "MPI_Comm_remote_group");
    MPI_Group_size(rg, &gs);
    CHECK(gs == rsize, "remote group size %d", gs);
    for (int k = 0; k < rsize; k++)
        all[k] = k;
    MPI_Group_translate_ranks(rg, rsize, all, g, to);
    for (int k = 0; k < rsize; k++)
        CHECK(to[k] == theirs + k, "remote rank %d is merged rank %d", k, to[k]);
    MPI_Group_free(&rg);
    MPI_Group_free(&pick);
    MPI_Group_free(&evens);
    MPI_Group_free(&i);
    MPI_Group_free(&d);
    MPI_Group_free(&u);
    MPI_Group_free(&wg);
    MPI_Group_free(&g);
    CHECK(g == MPI_GROUP_NULL, "a freed group is not MPI_GROUP_NULL");
    free(all);
    free(to);
    if (rank == 0)
        printf("GROUPS of both jobs: ok\n");
}

/* Cartesian grids over the merged communicator (n = 5): a 2 x 2 grid,
 * periodic in its second dimension, of merged ranks 0-3 (rank 4 gets
 * MPI_COMM_NULL); its queries, a ring exchange along the periodic
 * dimension, its rows and columns (MPI_Cart_sub: in every order of the
 * jobs some lie in one job, native grids of its MPI, and some span both),
 * a duplicate keeping the topology, MPI_Cart_map, and the errors. */
static void cartesian(MPI_Comm m, int mr, int n)
{
    int dims[2] = {2, 2}, periods[2] = {0, 1}, rc, t = -1, k = -1, cls = -1;
    MPI_Comm cart, row, col, dup;
    CHECK(n == 5, "cartesian: merged size %d", n);
    MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN);
    MPI_Topo_test(m, &t);
    CHECK(t == MPI_UNDEFINED, "topo_test of the merged communicator: %d", t);
    rc = MPI_Cart_coords(m, 0, 2, dims);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TOPOLOGY, "cart_coords without a grid: class %d", cls);
    int big[2] = {3, 2}, zero[2] = {2, 0};
    rc = MPI_Cart_create(m, 2, big, periods, 0, &cart);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "a 3 x 2 grid over 5 ranks: class %d", cls);
    rc = MPI_Cart_create(m, 2, zero, periods, 0, &cart);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_DIMS, "a 2 x 0 grid: class %d", cls);
    MPI_Cart_map(m, 2, dims, periods, &k);
    CHECK(k == (mr < 4 ? mr : MPI_UNDEFINED), "cart_map: %d", k);

    rc = MPI_Cart_create(m, 2, dims, periods, 1, &cart);
    CHECK(rc == MPI_SUCCESS, "cart_create: rc %d", rc);
    CHECK((cart == MPI_COMM_NULL) == (mr >= 4), "cart_create: rank %d's grid", mr);
    if (cart == MPI_COMM_NULL)
        goto done;
    int cr = -1, cs = -1, nd = -1, gd[2], gp[2], gc[2], at[2], r = -1, src, dst;
    MPI_Comm_rank(cart, &cr);
    MPI_Comm_size(cart, &cs);
    CHECK(cr == mr && cs == 4, "grid: rank %d of %d", cr, cs);
    MPI_Topo_test(cart, &t);
    CHECK(t == MPI_CART, "topo_test of the grid: %d", t);
    MPI_Cartdim_get(cart, &nd);
    MPI_Cart_get(cart, 2, gd, gp, gc);
    CHECK(nd == 2 && gd[0] == 2 && gd[1] == 2 && gp[0] == 0 && gp[1] == 1 && gc[0] == mr / 2 &&
              gc[1] == mr % 2,
          "cart_get: %d dims %dx%d periods %d%d coords (%d, %d)", nd, gd[0], gd[1], gp[0], gp[1],
          gc[0], gc[1]);
    MPI_Cart_coords(cart, 3, 2, at);
    CHECK(at[0] == 1 && at[1] == 1, "cart_coords(3): (%d, %d)", at[0], at[1]);
    at[0] = 1;
    at[1] = -1;
    MPI_Cart_rank(cart, at, &r);
    CHECK(r == 2 + 1, "cart_rank(1, -1) (periodic): %d", r);
    at[0] = 2;
    rc = MPI_Cart_rank(cart, at, &r);
    CHECK(rc != MPI_SUCCESS, "cart_rank past a non-periodic edge succeeded: %d", r);
    MPI_Cart_shift(cart, 0, 1, &src, &dst);
    CHECK(src == (mr >= 2 ? mr - 2 : MPI_PROC_NULL) && dst == (mr < 2 ? mr + 2 : MPI_PROC_NULL),
          "shift along 0: %d -> %d", src, dst);
    MPI_Cart_shift(cart, 1, 1, &src, &dst);
    int other = (mr / 2) * 2 + (mr % 2 + 1) % 2, got = -1;
    CHECK(src == other && dst == other, "shift along 1: %d -> %d", src, dst);
    MPI_Sendrecv(&mr, 1, MPI_INT, dst, 21, &got, 1, MPI_INT, src, 21, cart, MPI_STATUS_IGNORE);
    CHECK(got == other, "ring along 1: got %d from %d", got, src);

    int keep_row[2] = {0, 1}, keep_col[2] = {1, 0}, sum = -1;
    MPI_Cart_sub(cart, keep_row, &row);
    MPI_Comm_size(row, &cs);
    MPI_Comm_rank(row, &cr);
    MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, row);
    MPI_Topo_test(row, &t);
    MPI_Cartdim_get(row, &nd);
    CHECK(cs == 2 && cr == mr % 2 && sum == (mr / 2) * 4 + 1 && t == MPI_CART && nd == 1,
          "row: rank %d of %d, sum %d, topo %d, %d dims", cr, cs, sum, t, nd);
    MPI_Cart_sub(cart, keep_col, &col);
    MPI_Comm_size(col, &cs);
    MPI_Comm_rank(col, &cr);
    MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, col);
    MPI_Cart_coords(col, cr, 1, at);
    CHECK(cs == 2 && cr == mr / 2 && sum == 2 * (mr % 2) + 2 && at[0] == mr / 2,
          "column: rank %d of %d, sum %d, coords (%d)", cr, cs, sum, at[0]);
    MPI_Comm_free(&row);
    MPI_Comm_free(&col);

    MPI_Comm_dup(cart, &dup);
    MPI_Topo_test(dup, &t);
    MPI_Cart_get(dup, 2, gd, gp, gc);
    CHECK(t == MPI_CART && gd[0] == 2 && gp[1] == 1 && gc[0] == mr / 2, "dup of the grid: topo %d",
          t);
    MPI_Comm_free(&dup);
    {
        MPI_Request q;
        MPI_Comm_idup(cart, &dup, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Topo_test(dup, &t);
        MPI_Cart_get(dup, 2, gd, gp, gc);
        CHECK(t == MPI_CART && gd[1] == 2 && gp[0] == 0 && gc[1] == mr % 2,
              "idup of the grid: topo %d", t);
        MPI_Comm_free(&dup);
    }
    MPI_Comm_free(&cart);
done:
    if (rank == 0)
        printf("CARTESIAN grids: ok\n");
    fflush(stdout);
}

/* Graph topologies over the merged communicator (n = 5): a ring of all
 * five ranks (a merged graph spanning both jobs), its queries and an
 * exchange with both neighbours, a duplicate keeping it; a graph of two
 * nodes (merged ranks 0 and 1, one job's in every order: that MPI's own
 * graph); MPI_Graph_map; the errors. */
static void graphs(MPI_Comm m, int mr, int n)
{
    int index[5], edges[10], rc, t = -1, k = -1, cls = -1, nn = -1, ne = -1;
    MPI_Comm g, dup, two;
    for (int i = 0; i < n; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + n - 1) % n;
        edges[2 * i + 1] = (i + 1) % n;
    }
    MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN);
    int bad[2] = {1, 7};
    rc = MPI_Graph_create(m, 2, index, bad, 0, &g);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "a graph with an edge to node 7: class %d", cls);
    int i2[2] = {1, 2}, e2[2] = {1, 0};
    MPI_Graph_map(m, 2, i2, e2, &k);
    CHECK(k == (mr < 2 ? mr : MPI_UNDEFINED), "graph_map: %d", k);

    rc = MPI_Graph_create(m, n, index, edges, 1, &g);
    CHECK(rc == MPI_SUCCESS && g != MPI_COMM_NULL, "graph_create: rc %d", rc);
    MPI_Topo_test(g, &t);
    MPI_Graphdims_get(g, &nn, &ne);
    CHECK(t == MPI_GRAPH && nn == n && ne == 2 * n, "graph: topo %d, %d nodes, %d edges", t, nn,
          ne);
    int gi[5], ge[10], nb[2], cnt = -1, got[2] = {-1, -1};
    MPI_Graph_get(g, 5, 10, gi, ge);
    CHECK(gi[4] == 10 && ge[0] == n - 1 && ge[9] == 0, "graph_get: index[4] %d edges %d..%d", gi[4],
          ge[0], ge[9]);
    MPI_Graph_neighbors_count(g, mr, &cnt);
    MPI_Graph_neighbors(g, mr, 2, nb);
    CHECK(cnt == 2 && nb[0] == (mr + n - 1) % n && nb[1] == (mr + 1) % n,
          "neighbours of %d: %d (%d, %d)", mr, cnt, nb[0], nb[1]);
    /* Each rank sends its rank to both neighbours and hears both. */
    MPI_Request q[4];
    MPI_Irecv(&got[0], 1, MPI_INT, nb[0], 22, g, &q[0]);
    MPI_Irecv(&got[1], 1, MPI_INT, nb[1], 22, g, &q[1]);
    MPI_Isend(&mr, 1, MPI_INT, nb[0], 22, g, &q[2]);
    MPI_Isend(&mr, 1, MPI_INT, nb[1], 22, g, &q[3]);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    CHECK(got[0] == nb[0] && got[1] == nb[1], "ring: got %d and %d", got[0], got[1]);
    rc = MPI_Cart_shift(g, 0, 1, &got[0], &got[1]);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TOPOLOGY, "cart_shift on a graph: class %d", cls);
    MPI_Comm_dup(g, &dup);
    MPI_Topo_test(dup, &t);
    MPI_Graph_neighbors(dup, mr, 2, nb);
    CHECK(t == MPI_GRAPH && nb[1] == (mr + 1) % n, "dup of the graph: topo %d", t);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&g);

    MPI_Graph_create(m, 2, i2, e2, 0, &two);
    CHECK((two != MPI_COMM_NULL) == (mr < 2), "two-node graph at rank %d", mr);
    if (two != MPI_COMM_NULL) {
        MPI_Topo_test(two, &t);
        MPI_Graph_neighbors(two, mr, 1, nb);
        CHECK(t == MPI_GRAPH && nb[0] == 1 - mr, "two-node graph: topo %d, neighbour %d", t,
              nb[0]);
        MPI_Comm_free(&two);
    }
    if (rank == 0)
        printf("GRAPHS: ok\n");
    fflush(stdout);
}

/* The neighbourhood collectives over topologies spanning both jobs
 * (n = 5): on the 2 x 2 grid periodic in its second dimension (rank 4
 * outside), MPI_Neighbor_allgather (an edge's missing neighbour leaves its
 * block alone) and MPI_Neighbor_alltoall, whose periodic dimension of
 * extent 2 has one process as both neighbours: the block from the
 * negative side is the one it sent in the positive direction. A
 * distributed graph made adjacent (a directed ring to the next two ranks,
 * weighted) with its queries, MPI_Neighbor_alltoallv, _allgatherv and
 * _alltoallw (an int and a double to each); one made by
 * MPI_Dist_graph_create with rank 0 naming every edge; the nonblocking
 * forms (two at once on the grid, one completed by MPI_Test alone); the
 * errors. */
static void neighborhoods(MPI_Comm m, int mr, int n)
{
    int rc, cls = -1, t = -1;
    CHECK(n == 5, "neighborhoods: merged size %d", n);
    MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN);
    int one = mr, four[4] = {-1, -1, -1, -1};
    rc = MPI_Neighbor_allgather(&one, 1, MPI_INT, four, 1, MPI_INT, m);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TOPOLOGY, "neighbor_allgather without a topology: class %d", cls);

    int dims[2] = {2, 2}, periods[2] = {0, 1};
    MPI_Comm cart;
    MPI_Cart_create(m, 2, dims, periods, 0, &cart);
    if (cart != MPI_COMM_NULL) {
        int src0 = mr >= 2 ? mr - 2 : -1, dst0 = mr < 2 ? mr + 2 : -1;
        int other = (mr / 2) * 2 + (mr % 2 + 1) % 2;
        int mine = 10 * mr + 1;
        rc = MPI_Neighbor_allgather(&mine, 1, MPI_INT, four, 1, MPI_INT, cart);
        CHECK(rc == MPI_SUCCESS, "neighbor_allgather on the grid: rc %d", rc);
        CHECK(four[0] == (src0 < 0 ? -1 : 10 * src0 + 1) &&
                  four[1] == (dst0 < 0 ? -1 : 10 * dst0 + 1) && four[2] == 10 * other + 1 &&
                  four[3] == 10 * other + 1,
              "neighbor_allgather at %d: %d %d %d %d", mr, four[0], four[1], four[2], four[3]);
        int out[4], in[4] = {-1, -1, -1, -1};
        for (int j = 0; j < 4; j++)
            out[j] = 100 * mr + j;
        rc = MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, cart);
        CHECK(rc == MPI_SUCCESS, "neighbor_alltoall on the grid: rc %d", rc);
        CHECK(in[0] == (src0 < 0 ? -1 : 100 * src0 + 1) &&
                  in[1] == (dst0 < 0 ? -1 : 100 * dst0 + 0) && in[2] == 100 * other + 3 &&
                  in[3] == 100 * other + 2,
              "neighbor_alltoall at %d: %d %d %d %d", mr, in[0], in[1], in[2], in[3]);
        /* The same nonblocking, twice at once (the second's blocks after
         * the first's): each pairs with its own. */
        int in2[4] = {-1, -1, -1, -1}, out2[4];
        for (int j = 0; j < 4; j++) {
            in[j] = -1;
            out2[j] = 1000 + 100 * mr + j;
        }
        MPI_Request nq[2];
        MPI_Ineighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, cart, &nq[0]);
        MPI_Ineighbor_alltoall(out2, 1, MPI_INT, in2, 1, MPI_INT, cart, &nq[1]);
        MPI_Waitall(2, nq, MPI_STATUSES_IGNORE);
        CHECK(in[2] == 100 * other + 3 && in[3] == 100 * other + 2 &&
                  in2[2] == 1000 + 100 * other + 3 && in2[3] == 1000 + 100 * other + 2 &&
                  in2[0] == (src0 < 0 ? -1 : 1000 + 100 * src0 + 1),
              "ineighbor_alltoall at %d: %d %d, then %d %d %d", mr, in[2], in[3], in2[0], in2[2],
              in2[3]);
        MPI_Comm_free(&cart);
    }

    int srcs[2] = {(mr + n - 1) % n, (mr + n - 2) % n}, dsts[2] = {(mr + 1) % n, (mr + 2) % n};
    int sw[2] = {mr, mr + 10}, dw[2] = {mr + 20, mr + 30};
    MPI_Comm dg;
    int bad[2] = {0, 9};
    rc = MPI_Dist_graph_create_adjacent(m, 2, srcs, sw, 2, bad, dw, MPI_INFO_NULL, 0, &dg);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "a distributed graph with an edge to rank 9: class %d", cls);
    rc = MPI_Dist_graph_create_adjacent(m, -1, srcs, sw, 2, dsts, dw, MPI_INFO_NULL, 0, &dg);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "a negative indegree: class %d", cls);
    rc = MPI_Dist_graph_create_adjacent(m, 2, srcs, sw, 2, dsts, dw, MPI_INFO_NULL, 1, &dg);
    CHECK(rc == MPI_SUCCESS && dg != MPI_COMM_NULL, "dist_graph_create_adjacent: rc %d", rc);
    int indeg = -1, outdeg = -1, weighted = -1, gs[2], gsw[2], gd[2], gdw[2];
    MPI_Topo_test(dg, &t);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    MPI_Dist_graph_neighbors(dg, 2, gs, gsw, 2, gd, gdw);
    CHECK(t == MPI_DIST_GRAPH && indeg == 2 && outdeg == 2 && weighted && gs[0] == srcs[0] &&
              gs[1] == srcs[1] && gd[0] == dsts[0] && gd[1] == dsts[1] && gsw[1] == mr + 10 &&
              gdw[0] == mr + 20,
          "distributed graph at %d: topo %d, degrees %d %d, weighted %d, sources %d %d", mr, t,
          indeg, outdeg, weighted, gs[0], gs[1]);
    /* j + 1 ints to destination j, so source i sent this rank i + 1 of
     * them; received in reverse order of the sources. */
    int sv[3], scounts[2] = {1, 2}, sdispls[2] = {0, 1}, rv[3] = {-1, -1, -1};
    int rcounts[2] = {1, 2}, rdispls[2] = {2, 0};
    sv[0] = 100 * mr;
    sv[1] = 100 * mr + 10;
    sv[2] = 100 * mr + 11;
    rc = MPI_Neighbor_alltoallv(sv, scounts, sdispls, MPI_INT, rv, rcounts, rdispls, MPI_INT, dg);
    CHECK(rc == MPI_SUCCESS && rv[2] == 100 * srcs[0] && rv[0] == 100 * srcs[1] + 10 &&
              rv[1] == 100 * srcs[1] + 11,
          "neighbor_alltoallv at %d: %d %d %d", mr, rv[0], rv[1], rv[2]);
    int ag[2] = {-1, -1}, agc[2] = {1, 1}, agd[2] = {1, 0};
    rc = MPI_Neighbor_allgatherv(&one, 1, MPI_INT, ag, agc, agd, MPI_INT, dg);
    CHECK(rc == MPI_SUCCESS && ag[1] == srcs[0] && ag[0] == srcs[1],
          "neighbor_allgatherv at %d: %d %d", mr, ag[0], ag[1]);
    struct iw {
        int i;
        double d;
    } ws, wr = {-1, -1.0};
    ws.i = 7 * mr;
    ws.d = 0.5 + mr;
    int wc[2] = {1, 1};
    MPI_Aint wsd[2] = {0, offsetof(struct iw, d)}, wrd[2] = {0, offsetof(struct iw, d)};
    MPI_Datatype wt[2] = {MPI_INT, MPI_DOUBLE};
    rc = MPI_Neighbor_alltoallw(&ws, wc, wsd, wt, &wr, wc, wrd, wt, dg);
    CHECK(rc == MPI_SUCCESS && wr.i == 7 * srcs[0] && wr.d == 0.5 + srcs[1],
          "neighbor_alltoallw at %d: %d %g", mr, wr.i, wr.d);
    {
        /* MPI_Ineighbor_alltoallv on it, completed by MPI_Test alone. */
        int done = 0;
        MPI_Request nq;
        rv[0] = rv[1] = rv[2] = -1;
        rc = MPI_Ineighbor_alltoallv(sv, scounts, sdispls, MPI_INT, rv, rcounts, rdispls, MPI_INT,
                                     dg, &nq);
        while (rc == MPI_SUCCESS && !done)
            rc = MPI_Test(&nq, &done, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS && rv[2] == 100 * srcs[0] && rv[0] == 100 * srcs[1] + 10 &&
                  rv[1] == 100 * srcs[1] + 11,
              "ineighbor_alltoallv at %d: %d %d %d", mr, rv[0], rv[1], rv[2]);
        ag[0] = ag[1] = -1;
        MPI_Ineighbor_allgatherv(&one, 1, MPI_INT, ag, agc, agd, MPI_INT, dg, &nq);
        MPI_Wait(&nq, MPI_STATUS_IGNORE);
        wr.i = -1;
        wr.d = -1.0;
        MPI_Ineighbor_alltoallw(&ws, wc, wsd, wt, &wr, wc, wrd, wt, dg, &nq);
        MPI_Wait(&nq, MPI_STATUS_IGNORE);
        CHECK(ag[1] == srcs[0] && ag[0] == srcs[1] && wr.i == 7 * srcs[0] &&
                  wr.d == 0.5 + srcs[1],
              "ineighbor_allgatherv, _alltoallw at %d: %d %d, %d %g", mr, ag[0], ag[1], wr.i,
              wr.d);
    }
    MPI_Comm dup;
    MPI_Comm_dup(dg, &dup);
    MPI_Dist_graph_neighbors_count(dup, &indeg, &outdeg, &weighted);
    CHECK(indeg == 2 && outdeg == 2, "dup of the distributed graph: degrees %d %d", indeg, outdeg);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&dg);

    /* Rank 0 names every edge r -> r + 1 (weight r); the others none. */
    int es[5], ed[5], ew[5], deg[5];
    for (int r = 0; r < n; r++) {
        es[r] = r;
        deg[r] = 1;
        ed[r] = (r + 1) % n;
        ew[r] = r;
    }
    rc = MPI_Dist_graph_create(m, mr == 0 ? n : 0, es, deg, ed, ew, MPI_INFO_NULL, 0, &dg);
    CHECK(rc == MPI_SUCCESS, "dist_graph_create: rc %d", rc);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    MPI_Dist_graph_neighbors(dg, 1, gs, gsw, 1, gd, gdw);
    CHECK(indeg == 1 && outdeg == 1 && weighted && gs[0] == (mr + n - 1) % n &&
              gsw[0] == (mr + n - 1) % n && gd[0] == (mr + 1) % n && gdw[0] == mr,
          "dist_graph_create at %d: degrees %d %d, from %d (%d) to %d (%d)", mr, indeg, outdeg,
          gs[0], gsw[0], gd[0], gdw[0]);
    int from = -1;
    rc = MPI_Neighbor_allgather(&one, 1, MPI_INT, &from, 1, MPI_INT, dg);
    CHECK(rc == MPI_SUCCESS && from == (mr + n - 1) % n, "neighbor_allgather on it at %d: %d", mr,
          from);
    {
        MPI_Request nq;
        from = -1;
        MPI_Ineighbor_allgather(&one, 1, MPI_INT, &from, 1, MPI_INT, dg, &nq);
        MPI_Wait(&nq, MPI_STATUS_IGNORE);
        CHECK(from == (mr + n - 1) % n, "ineighbor_allgather at %d: %d", mr, from);
    }
    MPI_Comm_free(&dg);
    if (rank == 0)
        printf("NEIGHBORHOODS: ok\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int handle, rc, rsize, mr = -1, n = -1, flag = 1, cmp = -1;
    MPI_Comm inter, m, d;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    CHECK(argc == 5, "usage: merge GROUP PEER HIGH FIRST");
    int high = atoi(argv[3]), first = !strcmp(argv[4], "me");
    rc = Isthmus_Register(argv[1], MPI_COMM_WORLD, &handle);
    CHECK(rc == MPI_SUCCESS, "register");
    rc = Isthmus_Intercomm_create_timeout(handle, argv[2], 120.0, &inter);
    CHECK(rc == MPI_SUCCESS, "intercomm create");
    MPI_Comm_remote_size(inter, &rsize);

    rc = MPI_Intercomm_merge(inter, high, &m);
    CHECK(rc == MPI_SUCCESS, "merge");
    MPI_Comm_size(m, &n);
    MPI_Comm_rank(m, &mr);
    CHECK(n == wsize + rsize, "merged size %d, expected %d", n, wsize + rsize);
    CHECK(mr == (first ? 0 : rsize) + rank, "merged rank %d, expected %d", mr,
          (first ? 0 : rsize) + rank);
    MPI_Comm_test_inter(m, &flag);
    CHECK(!flag, "the merged communicator says it is an intercommunicator");
    printf("MERGED rank %d of %d: merged rank %d of %d\n", rank, wsize, mr, n);
    fflush(stdout);

    collectives(m, mr, n);
    large_reductions(m, mr, n, inter, rsize);
    point_to_point(m, mr, n);

    /* A duplicate: congruent, the same order, its own traffic. */
    MPI_Comm_dup(m, &d);
    MPI_Comm_compare(m, d, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "compare(merged, dup) = %d", cmp);
    MPI_Comm_compare(m, m, &cmp);
    CHECK(cmp == MPI_IDENT, "compare(merged, merged) = %d", cmp);
    MPI_Comm_compare(m, inter, &cmp);
    CHECK(cmp == MPI_UNEQUAL, "compare(merged, inter) = %d", cmp);
    int dr = -1, x = 1, sum = 0;
    MPI_Comm_rank(d, &dr);
    CHECK(dr == mr, "dup rank %d, merged rank %d", dr, mr);
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, d);
    CHECK(sum == n, "allreduce on the dup: %d", sum);
    {
        MPI_Comm di;
        MPI_Request r;
        MPI_Comm_idup(m, &di, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        sum = 0;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, di);
        CHECK(sum == n, "allreduce on the idup: %d", sum);
        MPI_Comm_free(&di);
    }

    /* A split by job (key reversing the order): a native communicator of
     * this job; a color with ranks in both jobs is refused. */
    MPI_Comm job;
    int jr = -1, js = -1;
    MPI_Comm_split(m, first ? 1 : 2, -mr, &job);
    MPI_Comm_size(job, &js);
    MPI_Comm_rank(job, &jr);
    CHECK(js == wsize && jr == wsize - 1 - rank, "split by job: rank %d of %d", jr, js);
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, job);
    CHECK(sum == wsize, "allreduce on the split: %d", sum);
    MPI_Comm_free(&job);
    MPI_Comm_split(m, mr == 0 ? 3 : MPI_UNDEFINED, 0, &job);
    CHECK((mr == 0) == (job != MPI_COMM_NULL), "split: rank 0 alone");
    if (job != MPI_COMM_NULL)
        MPI_Comm_free(&job);

    spanning_splits(m, mr, n);
    intercomm_create_over(m, mr, n, first, rsize);
    groups_of_both(m, inter, mr, n, first, rsize);
    nonblocking_collectives(m, mr, n, "merged");
    cartesian(m, mr, n);
    graphs(m, mr, n);
    neighborhoods(m, mr, n);

    /* What is not carried yet says so. */
    MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN);
    MPI_Request r;
    MPI_Comm c;
    {
        /* Groups name one job's processes: MPI_Comm_create with the first
         * job's world group there and MPI_GROUP_EMPTY in the other; both
         * jobs' groups at once is refused. create_group over this job's
         * even ranks; split_type SHARED splits each job on its own. */
        MPI_Group wg, evens;
        int cs = -1, cr = -1, range[1][3] = {{0, wsize - 1, 2}};
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        rc = MPI_Comm_create(m, first ? wg : MPI_GROUP_EMPTY, &c);
        CHECK(rc == MPI_SUCCESS && (c != MPI_COMM_NULL) == first, "create: rc %d", rc);
        if (c != MPI_COMM_NULL) {
            MPI_Comm_size(c, &cs);
            MPI_Comm_rank(c, &cr);
            CHECK(cs == wsize && cr == rank, "create: rank %d of %d", cr, cs);
            MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, c);
            CHECK(sum == wsize, "allreduce on the created communicator: %d", sum);
            MPI_Comm_free(&c);
        }
        expect_refused(MPI_Comm_create(m, wg, &c), "MPI_Comm_create");
        CHECK(c == MPI_COMM_NULL, "a refused create gave a communicator");
        MPI_Group_range_incl(wg, 1, range, &evens);
        if (rank % 2 == 0) {
            rc = MPI_Comm_create_group(m, evens, 5, &c);
            CHECK(rc == MPI_SUCCESS, "create_group: rc %d", rc);
            MPI_Comm_size(c, &cs);
            MPI_Comm_rank(c, &cr);
            CHECK(cs == (wsize + 1) / 2 && cr == rank / 2, "create_group: rank %d of %d", cr, cs);
            MPI_Barrier(c);
            MPI_Comm_free(&c);
        }
        rc = MPI_Comm_split_type(m, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &c);
        MPI_Comm_size(c, &cs);
        MPI_Comm_rank(c, &cr);
        CHECK(rc == MPI_SUCCESS && cs == wsize && cr == wsize - 1 - rank,
              "split_type: rank %d of %d", cr, cs);
        MPI_Comm_free(&c);
        MPI_Group_free(&evens);
        MPI_Group_free(&wg);
    }
    rc = MPI_Send(&x, 1, MPI_INT, n, 0, m);
    CHECK(rc != MPI_SUCCESS, "a send to rank %d of %d succeeded", n, n);

    MPI_Comm_free(&d);
    MPI_Comm_free(&m);
    intercomm_splits(inter, rsize);
    MPI_Comm_free(&inter);
    printf("PASS merge rank %d\n", rank);
    fflush(stdout);
    rc = Isthmus_Leave(handle);
    CHECK(rc == MPI_SUCCESS, "leave");
    MPI_Finalize();
    return 0;
}

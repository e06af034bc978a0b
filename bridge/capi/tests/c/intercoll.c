/*
 * The collectives MPICH's own tests do not reach, on an Isthmus
 * intercommunicator between two jobs (the MTest harness of tests/mtest):
 * - MPI_Allreduce with MPI_SUM on long and unsigned long and MPI_MAX on
 *   double at their extreme values (each group gets the other's result);
 * - MPI_Reduce with a non-commutative user-defined operation (MPI's rank
 *   order), the root on each side in turn (MPI_ROOT / MPI_PROC_NULL);
 * - MPI_Reduce_scatter_block and MPI_Reduce_scatter (uneven counts);
 * - MPI_Gather from a derived type (vector) into ints, MPI_Scatter of long;
 * - MPI_Gatherv, MPI_Scatterv (long at its extremes), MPI_Allgatherv;
 * - MPI_Alltoallv (uneven counts and displacements), MPI_Alltoallw (a
 *   vector type one side, ints the other, byte displacements);
 * - MPI_IN_PLACE and a root of neither group: MPI's errors, no hang.
 * Every check that fails prints what it got; MTest_Finalize prints
 * " No Errors" when none did.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpitest.h"

#include "expect.h"

/* Non-commutative and associative: an element is a pair (digits, 16^n or
 * 1000^n) and x . y appends y's digits to x's, so only MPI's rank order
 * gives the expected value. */
static void digits(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    long *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        b[2 * i] = a[2 * i] * b[2 * i + 1] + b[2 * i];
        b[2 * i + 1] = a[2 * i + 1] * b[2 * i + 1];
    }
}

int main(int argc, char **argv)
{
    MPI_Comm comm;
    int left, rank, size, rsize;
    MTest_Init(&argc, &argv);
    MTestGetIntercomm(&comm, &left, 1);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_remote_size(comm, &rsize);
    int last = rank == size - 1, rlast = rsize - 1;

    /* Allreduce, SUM on long: one rank of each group gives the extreme, the
     * others 0 or small values whose sum is known. */
    {
        long s[3] = {rank == 0 ? LONG_MAX - 7 : 0, last ? LONG_MIN + 5 : 0, (1L << 40) * (rank + 1)};
        long r[3] = {0, 0, 0};
        OK(MPI_Allreduce(s, r, 3, MPI_LONG, MPI_SUM, comm));
        long tri = (1L << 40) * ((long) rsize * (rsize + 1) / 2);
        EXPECT(r[0] == LONG_MAX - 7 && r[1] == LONG_MIN + 5 && r[2] == tri,
               "allreduce long: %ld %ld %ld", r[0], r[1], r[2]);
        unsigned long us[2] = {rank == 0 ? ULONG_MAX - 1 : 0, last ? 1UL << 63 : 0}, ur[2] = {0, 0};
        OK(MPI_Allreduce(us, ur, 2, MPI_UNSIGNED_LONG, MPI_SUM, comm));
        EXPECT(ur[0] == ULONG_MAX - 1 && ur[1] == 1UL << 63, "allreduce unsigned long: %lu %lu",
               ur[0], ur[1]);
    }
    /* Allreduce, MAX and MIN on unsigned integers at the top of their
     * range: MPICH 4.0.2's own MPI_MAX/MPI_MIN compare them as signed
     * (MAX(200, 1) = 1 on MPI_UNSIGNED_CHAR), so its jobs' native steps
     * use Isthmus's own operation (unsigned_ops.rs). */
    {
        unsigned char c = rank == 0 ? 200 : 1, cr = 0, cmin = 0;
        unsigned u = rank == 0 ? 0x80000000u : 1u, ur = 0, umin = 0;
        unsigned long l = last ? 1UL << 63 : 7, lr = 0, lmin = 0;
        OK(MPI_Allreduce(&c, &cr, 1, MPI_UNSIGNED_CHAR, MPI_MAX, comm));
        OK(MPI_Allreduce(&u, &ur, 1, MPI_UNSIGNED, MPI_MAX, comm));
        OK(MPI_Allreduce(&l, &lr, 1, MPI_UNSIGNED_LONG, MPI_MAX, comm));
        OK(MPI_Allreduce(&c, &cmin, 1, MPI_UNSIGNED_CHAR, MPI_MIN, comm));
        OK(MPI_Allreduce(&u, &umin, 1, MPI_UNSIGNED, MPI_MIN, comm));
        OK(MPI_Allreduce(&l, &lmin, 1, MPI_UNSIGNED_LONG, MPI_MIN, comm));
        /* The other group's maximum and minimum: it has rsize ranks. */
        unsigned char cmax_e = 200, cmin_e = rsize > 1 ? 1 : 200;
        unsigned umax_e = 0x80000000u, umin_e = rsize > 1 ? 1u : 0x80000000u;
        unsigned long lmax_e = 1UL << 63, lmin_e = rsize > 1 ? 7 : 1UL << 63;
        EXPECT(cr == cmax_e && ur == umax_e && lr == lmax_e, "allreduce unsigned max: %u %x %lx",
               cr, ur, lr);
        EXPECT(cmin == cmin_e && umin == umin_e && lmin == lmin_e,
               "allreduce unsigned min: %u %x %lx", cmin, umin, lmin);
    }
    /* Allreduce, MAX on double. */
    {
        double s[4] = {rank == 0 ? DBL_MAX : -DBL_MAX, last ? -1e308 : -DBL_MAX,
                       rank == 0 ? DBL_TRUE_MIN : 0.0, last ? 5e-324 : -INFINITY};
        double r[4];
        OK(MPI_Allreduce(s, r, 4, MPI_DOUBLE, MPI_MAX, comm));
        EXPECT(r[0] == DBL_MAX && r[1] == -1e308 && r[2] == DBL_TRUE_MIN && r[3] == 5e-324,
               "allreduce double max: %a %a %a %a", r[0], r[1], r[2], r[3]);
    }
    /* Reduce with a non-commutative user op on a derived type (a pair of
     * longs), the root in each group in turn. */
    {
        MPI_Op op;
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_LONG, &pair);
        MPI_Type_commit(&pair);
        MPI_Op_create(digits, 0, &op);
        for (int rootside = 0; rootside < 2; rootside++) {
            int mine = (rootside == 0) == left; /* the root is in my group */
            long s[4] = {rank + 1, 16, 100 + rank, 1000}, r[4] = {-1, -1, -1, -1};
            int root = mine ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            OK(MPI_Reduce(s, r, 2, pair, op, root, comm));
            if (mine && rank == 0) {
                long w0 = 0, w1 = 0;
                for (int i = 0; i < rsize; i++) {
                    w0 = w0 * 16 + (i + 1);
                    w1 = w1 * 1000 + (100 + i);
                }
                EXPECT(r[0] == w0 && r[2] == w1, "reduce user op: %lx %ld (want %lx %ld)", r[0],
                       r[2], w0, w1);
            } else if (mine) {
                EXPECT(r[0] == -1, "reduce: a non-root rank's buffer was written");
            }
        }
        MPI_Op_free(&op);
        MPI_Type_free(&pair);
    }
    /* Reduce_scatter_block: each group reduces size * rc ints (the same
     * total on both sides: rc = 2 * rsize). */
    {
        int rc = 2 * rsize, n = rc * size;
        int *s = malloc(n * sizeof(int)), *r = malloc(rc * sizeof(int));
        for (int i = 0; i < n; i++)
            s[i] = i * (left ? 1 : -1) + rank;
        OK(MPI_Reduce_scatter_block(s, r, rc, MPI_INT, MPI_SUM, comm));
        int tri = rsize * (rsize - 1) / 2;
        for (int i = 0; i < rc; i++) {
            int g = rank * rc + i;
            int want = g * (left ? -1 : 1) * rsize + tri;
            EXPECT(r[i] == want, "reduce_scatter_block [%d] = %d, want %d", i, r[i], want);
        }
        free(s);
        free(r);
    }
    /* Reduce_scatter, uneven counts: the total is size * rsize * 2 on both
     * sides; rank 0 takes one more, the last one less. */
    {
        int total = 2 * size * rsize;
        int *counts = malloc(size * sizeof(int));
        for (int i = 0; i < size; i++)
            counts[i] = total / size;
        if (size > 1) {
            counts[0]++;
            counts[size - 1]--;
        }
        int first = 0;
        for (int i = 0; i < rank; i++)
            first += counts[i];
        int *s = malloc(total * sizeof(int)), *r = malloc((counts[rank] + 1) * sizeof(int));
        for (int i = 0; i < total; i++)
            s[i] = 1000 * (left ? 1 : 2) + i;
        OK(MPI_Reduce_scatter(s, r, counts, MPI_INT, MPI_SUM, comm));
        for (int i = 0; i < counts[rank]; i++) {
            int want = rsize * (1000 * (left ? 2 : 1) + first + i);
            EXPECT(r[i] == want, "reduce_scatter [%d] = %d, want %d", i, r[i], want);
        }
        free(s);
        free(r);
        free(counts);
    }
    /* Gather: each sender gives every other int of 4 (a vector type); the
     * root takes 2 ints per remote rank. */
    {
        MPI_Datatype vec;
        MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        for (int rootside = 0; rootside < 2; rootside++) {
            int mine = (rootside == 0) == left;
            int s[4] = {10 * rank, -1, 10 * rank + 1, -1};
            int *r = calloc(2 * rsize, sizeof(int));
            int root = mine ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            OK(MPI_Gather(s, 1, vec, r, 2, MPI_INT, root, comm));
            if (mine && rank == 0)
                for (int i = 0; i < rsize; i++)
                    EXPECT(r[2 * i] == 10 * i && r[2 * i + 1] == 10 * i + 1,
                           "gather from %d: %d %d", i, r[2 * i], r[2 * i + 1]);
            free(r);
        }
        MPI_Type_free(&vec);
    }
    /* Scatter of long at its extremes, the last rank of each group the root. */
    {
        for (int rootside = 0; rootside < 2; rootside++) {
            int mine = (rootside == 0) == left;
            long *s = malloc(2 * rsize * sizeof(long)), r[2] = {0, 0};
            for (int i = 0; i < rsize; i++) {
                s[2 * i] = LONG_MIN + i;
                s[2 * i + 1] = LONG_MAX - i;
            }
            int root = mine ? (last ? MPI_ROOT : MPI_PROC_NULL) : rlast;
            OK(MPI_Scatter(s, 2, MPI_LONG, r, 2, MPI_LONG, root, comm));
            if (!mine)
                EXPECT(r[0] == LONG_MIN + rank && r[1] == LONG_MAX - rank, "scatter: %ld %ld",
                       r[0], r[1]);
            free(s);
        }
    }
    /* Gatherv, Scatterv, Allgatherv: rank j's block has min(j + 1, 3)
     * elements, placed at 4 * j. */
    {
        int *rc = malloc(rsize * sizeof(int)), *rd = malloc(rsize * sizeof(int));
        for (int j = 0; j < rsize; j++) {
            rc[j] = j + 1 > 3 ? 3 : j + 1;
            rd[j] = 4 * j;
        }
        int mycount = rank + 1 > 3 ? 3 : rank + 1;
        for (int rootside = 0; rootside < 2; rootside++) {
            int mine = (rootside == 0) == left;
            int s[3], *r = calloc(4 * rsize, sizeof(int));
            for (int k = 0; k < 3; k++)
                s[k] = 10 * rank + k;
            int root = mine ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            OK(MPI_Gatherv(s, mycount, MPI_INT, r, rc, rd, MPI_INT, root, comm));
            if (mine && rank == 0)
                for (int j = 0; j < rsize; j++)
                    for (int k = 0; k < rc[j]; k++)
                        EXPECT(r[rd[j] + k] == 10 * j + k, "gatherv from %d [%d] = %d", j, k,
                               r[rd[j] + k]);
            free(r);
            long *ls = calloc(4 * rsize, sizeof(long)), lr[3] = {0, 0, 0};
            for (int j = 0; j < rsize; j++)
                for (int k = 0; k < rc[j]; k++)
                    ls[rd[j] + k] = LONG_MIN + 10 * j + k;
            root = mine ? (last ? MPI_ROOT : MPI_PROC_NULL) : rlast;
            OK(MPI_Scatterv(ls, rc, rd, MPI_LONG, lr, mycount, MPI_LONG, root, comm));
            if (!mine)
                for (int k = 0; k < mycount; k++)
                    EXPECT(lr[k] == LONG_MIN + 10 * rank + k, "scatterv [%d] = %ld", k, lr[k]);
            free(ls);
        }
        double ds[3], *dr = calloc(4 * rsize, sizeof(double));
        for (int k = 0; k < 3; k++)
            ds[k] = k == 0 ? -DBL_MAX : 10 * rank + k + 0.25;
        OK(MPI_Allgatherv(ds, mycount, MPI_DOUBLE, dr, rc, rd, MPI_DOUBLE, comm));
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k < rc[j]; k++)
                EXPECT(dr[rd[j] + k] == (k == 0 ? -DBL_MAX : 10 * j + k + 0.25),
                       "allgatherv from %d [%d] = %g", j, k, dr[rd[j] + k]);
        free(dr);
        free(rc);
        free(rd);
    }
    /* Alltoallv: to remote rank j, j + 1 ints (my rank * 100 + j + k), at
     * displacements 3 * j; from remote rank j, rank + 1 ints at 4 * j. */
    {
        int *sc = malloc(rsize * sizeof(int)), *sd = malloc(rsize * sizeof(int));
        int *rc = malloc(rsize * sizeof(int)), *rd = malloc(rsize * sizeof(int));
        int *s = calloc(3 * rsize + 8, sizeof(int)), *r = calloc(4 * rsize + 8, sizeof(int));
        for (int j = 0; j < rsize; j++) {
            sc[j] = j + 1 > 3 ? 3 : j + 1;
            sd[j] = 3 * j;
            rc[j] = rank + 1 > 3 ? 3 : rank + 1;
            rd[j] = 4 * j;
            for (int k = 0; k < sc[j]; k++)
                s[sd[j] + k] = rank * 100 + j * 10 + k;
        }
        OK(MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm));
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k < rc[j]; k++)
                EXPECT(r[rd[j] + k] == j * 100 + rank * 10 + k, "alltoallv from %d [%d] = %d", j,
                       k, r[rd[j] + k]);
        /* Alltoallw: the left group sends a vector (every other int of 4),
         * the right one 2 ints; byte displacements. */
        MPI_Datatype vec, *st = malloc(rsize * sizeof(MPI_Datatype)),
                          *rt = malloc(rsize * sizeof(MPI_Datatype));
        MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int *w = calloc(4 * rsize, sizeof(int));
        free(s);
        s = calloc(4 * rsize, sizeof(int));
        for (int j = 0; j < rsize; j++) {
            st[j] = left ? vec : MPI_INT;
            rt[j] = left ? MPI_INT : vec;
            sc[j] = left ? 1 : 2;
            rc[j] = left ? 2 : 1;
            sd[j] = (int) (j * (left ? 4 : 2) * sizeof(int));
            rd[j] = (int) (j * (left ? 2 : 4) * sizeof(int));
            int *at = (int *) ((char *) s + sd[j]);
            at[0] = rank * 10 + j;
            at[left ? 2 : 1] = -(rank * 10 + j);
        }
        OK(MPI_Alltoallw(s, sc, sd, st, w, rc, rd, rt, comm));
        for (int j = 0; j < rsize; j++) {
            int *at = (int *) ((char *) w + rd[j]);
            int second = left ? at[1] : at[2];
            EXPECT(at[0] == j * 10 + rank && second == -(j * 10 + rank),
                   "alltoallw from %d: %d %d", j, at[0], second);
        }
        MPI_Type_free(&vec);
        free(st);
        free(rt);
        free(w);
        free(s);
        free(r);
        free(sc);
        free(sd);
        free(rc);
        free(rd);
    }
    /* MPI's errors, raised before anything crosses (so no rank waits):
     * MPI_IN_PLACE is for intracommunicators only; a root of neither group. */
    {
        int x = 1, y = 0, cls = MPI_SUCCESS;
        int rc = MPI_Allreduce(MPI_IN_PLACE, &y, 1, MPI_INT, MPI_SUM, comm);
        MPI_Error_class(rc, &cls);
        EXPECT(cls == MPI_ERR_BUFFER, "allreduce in place: class %d", cls);
        rc = MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, rsize + size + 5, comm);
        MPI_Error_class(rc, &cls);
        EXPECT(cls == MPI_ERR_ROOT, "reduce with a bad root: class %d", cls);
    }
    /* Still in step after the errors. */
    {
        int one = 1, sum = 0;
        OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm));
        EXPECT(sum == rsize, "allreduce after the errors: %d", sum);
    }
    MTestFreeComm(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}

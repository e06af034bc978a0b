/*
 * Included before a test of the v/w collectives (tests/c/large_count/):
 * where mpi.h has MPI 4's large-count forms (MPICH 4 and 5, Intel MPI; not
 * Open MPI 4.1 or 5.0, which have MPI 3.1's), every MPI_Gatherv,
 * MPI_Scatterv, MPI_Allgatherv, MPI_Alltoallv, MPI_Alltoallw and
 * MPI_Reduce_scatter of the test, and their nonblocking forms, goes through
 * its `_c` form, with the int arrays copied into MPI_Count and MPI_Aint
 * arrays as a program written for large counts passes them. Elsewhere the
 * test is unchanged.
 */
#ifndef ISTHMUS_LARGE_COUNT_V_H
#define ISTHMUS_LARGE_COUNT_V_H

#include <stdlib.h>

#include <mpi.h>

#if MPI_VERSION >= 4

/* An array with one entry per rank the call exchanges with: the remote
 * group's size on an intercommunicator, the communicator's otherwise. */
static int lc_peers(MPI_Comm comm)
{
    int inter = 0, n = 0;
    MPI_Comm_test_inter(comm, &inter);
    if (inter)
        MPI_Comm_remote_size(comm, &n);
    else
        MPI_Comm_size(comm, &n);
    return n;
}

/* Whether a rooted call's arrays are significant here (at the root). */
static int lc_at_root(MPI_Comm comm, int root)
{
    int inter = 0, rank = -1;
    MPI_Comm_test_inter(comm, &inter);
    if (inter)
        return root == MPI_ROOT;
    MPI_Comm_rank(comm, &rank);
    return rank == root;
}

/* The copies are never freed: MPI reads a nonblocking call's arrays until it
 * completes, and a test makes few. */
static MPI_Count *lc_counts(const int *a, int n)
{
    if (a == NULL || n < 0)
        return NULL;
    MPI_Count *c = malloc(sizeof *c * (size_t) (n > 0 ? n : 1));
    for (int i = 0; i < n; i++)
        c[i] = a[i];
    return c;
}

static MPI_Aint *lc_displs(const int *a, int n)
{
    if (a == NULL || n < 0)
        return NULL;
    MPI_Aint *d = malloc(sizeof *d * (size_t) (n > 0 ? n : 1));
    for (int i = 0; i < n; i++)
        d[i] = a[i];
    return d;
}

static int lc_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[],
                      const int displs[], MPI_Datatype rt, int root, MPI_Comm comm)
{
    int n = lc_at_root(comm, root) ? lc_peers(comm) : -1;
    return MPI_Gatherv_c(sb, sc, st, rb, lc_counts(rc, n), lc_displs(displs, n), rt, root, comm);
}

static int lc_Igatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[],
                       const int displs[], MPI_Datatype rt, int root, MPI_Comm comm,
                       MPI_Request *req)
{
    int n = lc_at_root(comm, root) ? lc_peers(comm) : -1;
    return MPI_Igatherv_c(sb, sc, st, rb, lc_counts(rc, n), lc_displs(displs, n), rt, root, comm,
                          req);
}

static int lc_Scatterv(const void *sb, const int sc[], const int displs[], MPI_Datatype st,
                       void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    int n = lc_at_root(comm, root) ? lc_peers(comm) : -1;
    return MPI_Scatterv_c(sb, lc_counts(sc, n), lc_displs(displs, n), st, rb, rc, rt, root, comm);
}

static int lc_Iscatterv(const void *sb, const int sc[], const int displs[], MPI_Datatype st,
                        void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                        MPI_Request *req)
{
    int n = lc_at_root(comm, root) ? lc_peers(comm) : -1;
    return MPI_Iscatterv_c(sb, lc_counts(sc, n), lc_displs(displs, n), st, rb, rc, rt, root, comm,
                           req);
}

static int lc_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[],
                         const int displs[], MPI_Datatype rt, MPI_Comm comm)
{
    int n = lc_peers(comm);
    return MPI_Allgatherv_c(sb, sc, st, rb, lc_counts(rc, n), lc_displs(displs, n), rt, comm);
}

static int lc_Iallgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[],
                          const int displs[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    int n = lc_peers(comm);
    return MPI_Iallgatherv_c(sb, sc, st, rb, lc_counts(rc, n), lc_displs(displs, n), rt, comm,
                             req);
}

static int lc_Alltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st,
                        void *rb, const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm)
{
    int n = lc_peers(comm), ns = sb == MPI_IN_PLACE ? -1 : n;
    return MPI_Alltoallv_c(sb, lc_counts(sc, ns), lc_displs(sd, ns), st, rb, lc_counts(rc, n),
                           lc_displs(rd, n), rt, comm);
}

static int lc_Ialltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st,
                         void *rb, const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm,
                         MPI_Request *req)
{
    int n = lc_peers(comm), ns = sb == MPI_IN_PLACE ? -1 : n;
    return MPI_Ialltoallv_c(sb, lc_counts(sc, ns), lc_displs(sd, ns), st, rb, lc_counts(rc, n),
                            lc_displs(rd, n), rt, comm, req);
}

static int lc_Alltoallw(const void *sb, const int sc[], const int sd[], const MPI_Datatype st[],
                        void *rb, const int rc[], const int rd[], const MPI_Datatype rt[],
                        MPI_Comm comm)
{
    int n = lc_peers(comm), ns = sb == MPI_IN_PLACE ? -1 : n;
    return MPI_Alltoallw_c(sb, lc_counts(sc, ns), lc_displs(sd, ns), st, rb, lc_counts(rc, n),
                           lc_displs(rd, n), rt, comm);
}

static int lc_Ialltoallw(const void *sb, const int sc[], const int sd[], const MPI_Datatype st[],
                         void *rb, const int rc[], const int rd[], const MPI_Datatype rt[],
                         MPI_Comm comm, MPI_Request *req)
{
    int n = lc_peers(comm), ns = sb == MPI_IN_PLACE ? -1 : n;
    return MPI_Ialltoallw_c(sb, lc_counts(sc, ns), lc_displs(sd, ns), st, rb, lc_counts(rc, n),
                            lc_displs(rd, n), rt, comm, req);
}

/* Reduce_scatter's counts: one per rank of the local group. */
static int lc_Reduce_scatter(const void *sb, void *rb, const int rc[], MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm)
{
    int n = 0;
    MPI_Comm_size(comm, &n);
    return MPI_Reduce_scatter_c(sb, rb, lc_counts(rc, n), dt, op, comm);
}

static int lc_Ireduce_scatter(const void *sb, void *rb, const int rc[], MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    int n = 0;
    MPI_Comm_size(comm, &n);
    return MPI_Ireduce_scatter_c(sb, rb, lc_counts(rc, n), dt, op, comm, req);
}

#define MPI_Gatherv lc_Gatherv
#define MPI_Igatherv lc_Igatherv
#define MPI_Scatterv lc_Scatterv
#define MPI_Iscatterv lc_Iscatterv
#define MPI_Allgatherv lc_Allgatherv
#define MPI_Iallgatherv lc_Iallgatherv
#define MPI_Alltoallv lc_Alltoallv
#define MPI_Ialltoallv lc_Ialltoallv
#define MPI_Alltoallw lc_Alltoallw
#define MPI_Ialltoallw lc_Ialltoallw
#define MPI_Reduce_scatter lc_Reduce_scatter
#define MPI_Ireduce_scatter lc_Ireduce_scatter

#endif /* MPI_VERSION >= 4 */
#endif /* ISTHMUS_LARGE_COUNT_V_H */

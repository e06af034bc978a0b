/*
 * Handles freed while a nonblocking collective that uses them is under
 * way, as MPI allows (MPICH's coll/nonblocking2 frees its operation
 * between MPI_Ireduce and MPI_Wait): on a world's MPI_COMM_WORLD, an
 * Ireduce and an Iallreduce with a user-defined operation freed before
 * the wait, and an Ibcast of a derived datatype freed before the wait.
 * Each handle must read as the null handle right after its free, and the
 * results must be right.
 * Prints "PASS nbc_free world rank R of N" per rank.
 */
#include "check.h"

static int rank, size;

static void sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

enum { N = 64 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int in[N], out[N];
    MPI_Request req;

    for (int root = 0; root < size; root += size - 1) {
        MPI_Op op;
        MPI_Op_create(sum, 1, &op);
        for (int i = 0; i < N; i++) {
            in[i] = rank + i;
            out[i] = -1;
        }
        MPI_Ireduce(in, out, N, MPI_INT, op, root, MPI_COMM_WORLD, &req);
        MPI_Op_free(&op);
        CHECK(op == MPI_OP_NULL, "MPI_Op_free left the handle set");
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == root)
            for (int i = 0; i < N; i++)
                CHECK(out[i] == size * (size - 1) / 2 + i * size, "Ireduce[%d] = %d", i, out[i]);
    }

    MPI_Op op;
    MPI_Op_create(sum, 1, &op);
    MPI_Iallreduce(in, out, N, MPI_INT, op, MPI_COMM_WORLD, &req);
    MPI_Op_free(&op);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
        CHECK(out[i] == size * (size - 1) / 2 + i * size, "Iallreduce[%d] = %d", i, out[i]);

    /* Every other int of 2N, from the last rank. */
    int wide[2 * N];
    for (int i = 0; i < 2 * N; i++)
        wide[i] = rank == size - 1 ? 1000 + i : -1;
    MPI_Datatype every_other;
    MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Ibcast(wide, 1, every_other, size - 1, MPI_COMM_WORLD, &req);
    MPI_Type_free(&every_other);
    CHECK(every_other == MPI_DATATYPE_NULL, "MPI_Type_free left the handle set");
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < 2 * N; i++)
        CHECK(wide[i] == (i % 2 == 0 || rank == size - 1 ? 1000 + i : -1), "Ibcast[%d] = %d", i,
              wide[i]);

    printf("PASS nbc_free world rank %d of %d\n", rank, size);
    MPI_Finalize();
    return 0;
}

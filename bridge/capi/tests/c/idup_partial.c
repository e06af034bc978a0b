/*
 * MPI_Comm_idup that does not block, and messages that end inside a
 * receive element, on an Isthmus intercommunicator between two jobs (the
 * MTest harness of tests/mtest; at least 2 ranks per job):
 * - two idups posted in opposite orders by the local ranks on two
 *   communicators (the intercommunicator and a duplicate of it): a
 *   duplication that blocked at the call would deadlock (MPICH's
 *   comm/comm_idup_overlap.c); the duplicates work after MPI_Waitall
 *   (congruent, point-to-point both ways);
 * - an idup completed by polling MPI_Test alone while the other job
 *   exchanges messages on the parent first;
 * - MPI_Comm_dup_with_info and, where mpi.h has it, MPI_Comm_idup_with_info
 *   (MPI_Comm_idup where not);
 * - partial elements, each job receiving in turn: a struct {int, 17 chars}
 *   into a struct {int, 256 chars}; 5 MPI_INT into contiguous(2, MPI_INT);
 *   a struct {double, 3 int} into 2 such elements' worth of a struct
 *   {double, 8 int} (converted, not copied); MPI_PACKED data as a struct.
 *   MPI_Get_count gives MPI_UNDEFINED, MPI_Get_elements the basics that
 *   arrived, the data is right and the rest of the buffer untouched; a
 *   message that is no prefix of the receive type is still refused.
 * Every check that fails prints what it got; MTest_Finalize prints
 * " No Errors" when none did.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "mpitest.h"

#include "expect.h"

static int rank, size, rsize, left;

/* Point-to-point both ways on `c`: local rank r sends r + base to remote
 * rank r % rsize and receives from the remote rank that sends to it. */
static void exchange(MPI_Comm c, int base)
{
    MPI_Request reqs[65];
    int in[64], out = rank + base, n = 0;
    OK(MPI_Isend(&out, 1, MPI_INT, rank % rsize, 5, c, &reqs[0]));
    for (int r = 0; r < rsize && n < 64; r++)
        if (r % size == rank) {
            OK(MPI_Irecv(&in[n], 1, MPI_INT, r, 5, c, &reqs[n + 1]));
            n++;
        }
    OK(MPI_Waitall(n + 1, reqs, MPI_STATUSES_IGNORE));
    for (int r = 0, k = 0; r < rsize; r++)
        if (r % size == rank) {
            EXPECT(in[k] == r + base, "exchange: from remote %d got %d, want %d", r, in[k],
                   r + base);
            k++;
        }
}

static void idups(MPI_Comm comm)
{
    MPI_Comm other, a, b;
    MPI_Request reqs[2];
    int result;
    OK(MPI_Comm_dup(comm, &other));
    /* Opposite orders on the two local ranks 0 and 1 (the others as 0). */
    if (rank == 1) {
        OK(MPI_Comm_idup(other, &b, &reqs[1]));
        OK(MPI_Comm_idup(comm, &a, &reqs[0]));
    } else {
        OK(MPI_Comm_idup(comm, &a, &reqs[0]));
        OK(MPI_Comm_idup(other, &b, &reqs[1]));
    }
    OK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    OK(MPI_Comm_compare(comm, a, &result));
    EXPECT(result == MPI_CONGRUENT, "idup of the intercommunicator: compare gives %d", result);
    OK(MPI_Comm_test_inter(a, &result));
    EXPECT(result, "the idup of an intercommunicator is no intercommunicator");
    OK(MPI_Comm_remote_size(b, &result));
    EXPECT(result == rsize, "idup: remote size %d, want %d", result, rsize);
    exchange(a, 100);
    exchange(b, 200);
    OK(MPI_Comm_free(&a));
    OK(MPI_Comm_free(&b));

    /* Completed by MPI_Test alone, while the left job's rank 0 waits for
     * a message on the parent before it even starts its idup. */
    MPI_Request req;
    int token = 7, flag = 0, polls = 0;
    if (!left && rank == 0)
        OK(MPI_Send(&token, 1, MPI_INT, 0, 9, other));
    if (left && rank == 0)
        OK(MPI_Recv(&token, 1, MPI_INT, 0, 9, other, MPI_STATUS_IGNORE));
    OK(MPI_Comm_idup(other, &a, &req));
    while (!flag && polls < 100000000) {
        OK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
        polls++;
    }
    EXPECT(flag, "MPI_Test never completed an idup");
    EXPECT(req == MPI_REQUEST_NULL, "a completed idup's request is not MPI_REQUEST_NULL");
    exchange(a, 300);
    OK(MPI_Comm_free(&a));

    /* With info. */
    MPI_Info info;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "isthmus_test_hint", "true"));
    OK(MPI_Comm_dup_with_info(comm, info, &a));
    exchange(a, 400);
    OK(MPI_Comm_free(&a));
    /* The other job's MPI may not have MPI_Comm_idup_with_info (MPI 4):
     * a plain idup is its side of the duplication. */
#if MPI_VERSION >= 4
    OK(MPI_Comm_idup_with_info(comm, info, &a, &req));
#else
    OK(MPI_Comm_idup(comm, &a, &req));
#endif
    OK(MPI_Info_free(&info));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    exchange(a, 500);
    OK(MPI_Comm_free(&a));
    OK(MPI_Comm_free(&other));
}

/* Checks a partial receive's status: `elements` basics, count undefined. */
static void expect_partial(const char *what, MPI_Status *st, MPI_Datatype t, int elements)
{
    int n;
    OK(MPI_Get_count(st, t, &n));
    EXPECT(n == MPI_UNDEFINED, "%s: MPI_Get_count gives %d, not MPI_UNDEFINED", what, n);
    OK(MPI_Get_elements(st, t, &n));
    EXPECT(n == elements, "%s: MPI_Get_elements gives %d, want %d", what, n, elements);
    MPI_Count x;
    OK(MPI_Get_elements_x(st, t, &x));
    EXPECT(x == elements, "%s: MPI_Get_elements_x gives %lld, want %d", what, (long long) x,
           elements);
}

static MPI_Datatype int_chars(int chars)
{
    MPI_Datatype t, types[2] = {MPI_INT, MPI_CHAR};
    int lens[2] = {1, chars};
    MPI_Aint disps[2] = {0, sizeof(int)};
    MPI_Type_create_struct(2, lens, disps, types, &t);
    MPI_Type_commit(&t);
    return t;
}

struct dints {
    double d;
    int i[8];
};

static MPI_Datatype double_ints(int ints)
{
    MPI_Datatype t, types[2] = {MPI_DOUBLE, MPI_INT};
    int lens[2] = {1, ints};
    MPI_Aint disps[2] = {0, offsetof(struct dints, i)};
    MPI_Type_create_struct(2, lens, disps, types, &t);
    MPI_Type_commit(&t);
    return t;
}

/* The sending job's rank 0 sends to the receiving job's rank 0. */
static void partial(MPI_Comm comm, int sending)
{
    if (rank != 0)
        return;
    MPI_Datatype small = int_chars(17), big = int_chars(256);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Datatype d3 = double_ints(3), d8 = double_ints(8);
    if (sending) {
        int buf[64];
        memset(buf, 0, sizeof buf);
        buf[0] = -123456789;
        for (int i = 0; i < 17; i++)
            ((char *) &buf[1])[i] = (char) ('a' + i);
        OK(MPI_Send(buf, 1, small, 0, 1, comm));
        int five[5] = {-1, 2147483647, -2147483647 - 1, 4, 5};
        OK(MPI_Send(five, 5, MPI_INT, 0, 2, comm));
        struct dints s = {-1.5e300, {11, -12, 13, 0, 0, 0, 0, 0}};
        OK(MPI_Send(&s, 1, d3, 0, 3, comm));
        char packed[64];
        int pos = 0, seven = 7;
        OK(MPI_Pack(&seven, 1, MPI_INT, packed, sizeof packed, &pos, MPI_COMM_SELF));
        OK(MPI_Pack("message", 7, MPI_CHAR, packed, sizeof packed, &pos, MPI_COMM_SELF));
        OK(MPI_Send(packed, pos, MPI_PACKED, 0, 4, comm));
        double wrong = 2.5;
        OK(MPI_Send(&wrong, 1, MPI_DOUBLE, 0, 5, comm));
    } else {
        MPI_Status st;
        int buf[80];
        memset(buf, 0x5a, sizeof buf);
        OK(MPI_Recv(buf, 1, big, 0, 1, comm, &st));
        expect_partial("struct {int, 17 chars}", &st, big, 18);
        EXPECT(buf[0] == -123456789, "int_chars: int %d", buf[0]);
        for (int i = 0; i < 17; i++)
            EXPECT(((char *) &buf[1])[i] == 'a' + i, "int_chars: char %d is %d", i,
                   ((char *) &buf[1])[i]);
        EXPECT(((unsigned char *) &buf[1])[17] == 0x5a, "int_chars: byte past the message "
                                                        "changed");

        int six[6] = {9, 9, 9, 9, 9, 9};
        OK(MPI_Recv(six, 3, pair, 0, 2, comm, &st));
        expect_partial("5 MPI_INT into pairs", &st, pair, 5);
        int want[5] = {-1, 2147483647, -2147483647 - 1, 4, 5};
        for (int i = 0; i < 5; i++)
            EXPECT(six[i] == want[i], "pairs: [%d] = %d, want %d", i, six[i], want[i]);
        EXPECT(six[5] == 9, "pairs: the sixth int changed to %d", six[5]);

        struct dints r[2];
        memset(r, 0x5a, sizeof r);
        OK(MPI_Recv(r, 2, d8, 0, 3, comm, &st));
        expect_partial("struct {double, 3 int}", &st, d8, 4);
        EXPECT(r[0].d == -1.5e300, "double_ints: double %g", r[0].d);
        EXPECT(r[0].i[0] == 11 && r[0].i[1] == -12 && r[0].i[2] == 13,
               "double_ints: ints %d %d %d", r[0].i[0], r[0].i[1], r[0].i[2]);
        EXPECT(((unsigned *) r[0].i)[3] == 0x5a5a5a5a, "double_ints: the fourth int changed");

        memset(buf, 0x5a, sizeof buf);
        OK(MPI_Recv(buf, 1, big, 0, 4, comm, &st));
        expect_partial("MPI_PACKED as a struct", &st, big, 8);
        EXPECT(buf[0] == 7, "packed: int %d", buf[0]);
        EXPECT(memcmp(&buf[1], "message", 7) == 0, "packed: chars %.7s", (char *) &buf[1]);

        /* A double is no prefix of three ints: still refused. */
        MPI_Datatype three;
        MPI_Type_contiguous(3, MPI_INT, &three);
        MPI_Type_commit(&three);
        int ints[3];
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        int rc = MPI_Recv(ints, 1, three, 0, 5, comm, &st);
        EXPECT(rc != MPI_SUCCESS, "a double received as three ints was accepted");
        MPI_Type_free(&three);
    }
    MPI_Type_free(&small);
    MPI_Type_free(&big);
    MPI_Type_free(&pair);
    MPI_Type_free(&d3);
    MPI_Type_free(&d8);
}

int main(int argc, char **argv)
{
    MPI_Comm comm;
    MTest_Init(&argc, &argv);
    MTestGetIntercomm(&comm, &left, 1);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_remote_size(comm, &rsize);
    idups(comm);
    partial(comm, left);
    partial(comm, !left);
    MTestFreeComm(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}

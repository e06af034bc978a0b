/*
 * One MPI_COMM_WORLD across implementations (ISTHMUS_WORLD=NAME:INDEX/PARTS):
 * a plain MPI program, nothing Isthmus-specific in it, run as part of a
 * world of two jobs (each started by its own launcher).
 *
 * Usage: world PART0_SIZE PART1_SIZE — the sizes of the two parts, to
 * check that the world holds part 0's ranks first. Checks rank/size,
 * MPI_APPNUM / MPI_UNIVERSE_SIZE, a ring of point-to-point on
 * MPI_COMM_WORLD, Bcast/Allreduce/Allgather, a Comm_dup, a Comm_split of
 * the world (by parity: each half spans both parts) with an Allreduce on
 * it, the world's group (rank, size, MPI_Comm_create of its odd ranks,
 * spanning both parts), MPI_Intercomm_create between the parts with the
 * world as peer_comm, and that MPI_Comm_connect on the world is refused
 * with a message.
 * Prints "PASS world rank R of N (appnum A)" per rank.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK(argc == 3, "usage: world PART0_SIZE PART1_SIZE");
    int n0 = atoi(argv[1]), n1 = atoi(argv[2]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == n0 + n1, "world size %d, expected %d + %d", size, n0, n1);

    /* The part this rank is in, from the world's attributes. */
    int *appnum = NULL, *universe = NULL, *tag_ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    CHECK(flag && appnum, "no MPI_APPNUM on the world");
    CHECK(*appnum == (rank < n0 ? 0 : 1), "rank %d has MPI_APPNUM %d", rank, *appnum);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &universe, &flag);
    CHECK(flag && universe && *universe == size, "MPI_UNIVERSE_SIZE %d, expected %d",
          universe ? *universe : -1, size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    CHECK(flag && tag_ub && *tag_ub >= 32767, "MPI_TAG_UB missing or too small");

    /* The ring: each rank sends its rank right and receives from the left,
     * crossing between the parts twice. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1;
    MPI_Status st;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
    CHECK(got == left && st.MPI_SOURCE == left && st.MPI_TAG == 7, "ring: got %d from %d, "
          "expected %d", got, st.MPI_SOURCE, left);
    /* Blocking send/recv the other way, even ranks first. */
    got = -1;
    if (rank % 2 == 0) {
        MPI_Send(&rank, 1, MPI_INT, left, 8, MPI_COMM_WORLD);
        MPI_Recv(&got, 1, MPI_INT, right, 8, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(&got, 1, MPI_INT, right, 8, MPI_COMM_WORLD, &st);
        MPI_Send(&rank, 1, MPI_INT, left, 8, MPI_COMM_WORLD);
    }
    CHECK(size % 2 != 0 || got == right, "reverse ring: got %d, expected %d", got, right);

    /* Collectives. */
    int b = rank == size - 1 ? 4242 : -1;
    MPI_Bcast(&b, 1, MPI_INT, size - 1, MPI_COMM_WORLD);
    CHECK(b == 4242, "bcast from the last rank gave %d", b);
    int x = rank + 1, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size + 1) / 2, "allreduce %d", sum);
    int *all = malloc(sizeof(int) * size);
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        CHECK(all[i] == i, "allgather[%d] = %d", i, all[i]);
    free(all);
    MPI_Barrier(MPI_COMM_WORLD);

    /* A duplicate is the same world. */
    MPI_Comm dup;
    int dr = -1, ds = -1, cmp = -1;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_rank(dup, &dr);
    MPI_Comm_size(dup, &ds);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp);
    CHECK(dr == rank && ds == size && cmp == MPI_CONGRUENT, "dup: rank %d size %d compare %d", dr,
          ds, cmp);

    /* A split by parity: with both parts of even size each half spans both. */
    MPI_Comm half;
    int hr = -1, hs = -1, hsum = 0;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    int expect_hs = (size - rank % 2 + 1) / 2;
    CHECK(hr == rank / 2 && hs == expect_hs, "split: rank %d size %d", hr, hs);
    MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
    int want = 0;
    for (int r = rank % 2; r < size; r += 2)
        want += r;
    CHECK(hsum == want, "split allreduce %d, expected %d", hsum, want);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);

    /* The world's group names both parts' processes: rank and size as the
     * world's; its odd ranks make a communicator spanning both parts
     * (MPI_Comm_create); an intercommunicator between the two parts over
     * the world (MPI_Intercomm_create, the world as peer_comm). */
    MPI_Group g, odd;
    int gs = -1, gr = -1, rc;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK(MPI_Comm_group(MPI_COMM_WORLD, &g) == MPI_SUCCESS, "MPI_Comm_group on the world");
    MPI_Group_size(g, &gs);
    MPI_Group_rank(g, &gr);
    CHECK(gs == size && gr == rank, "world group: rank %d of %d", gr, gs);
    int range[1][3] = {{1, size - 1, 2}};
    MPI_Group_range_incl(g, 1, range, &odd);
    MPI_Comm oc;
    CHECK(MPI_Comm_create(MPI_COMM_WORLD, odd, &oc) == MPI_SUCCESS, "create(odd)");
    CHECK((oc != MPI_COMM_NULL) == (rank % 2 == 1), "create(odd) at rank %d", rank);
    if (oc != MPI_COMM_NULL) {
        int os = -1, orank = -1, osum = 0;
        MPI_Comm_size(oc, &os);
        MPI_Comm_rank(oc, &orank);
        CHECK(os == size / 2 && orank == rank / 2, "create(odd): rank %d of %d", orank, os);
        MPI_Allreduce(&rank, &osum, 1, MPI_INT, MPI_SUM, oc);
        CHECK(osum == (size / 2) * (size / 2), "allreduce on create(odd): %d", osum);
        MPI_Comm_free(&oc);
    }
    MPI_Group_free(&odd);
    MPI_Group_free(&g);
    {
        /* Part 0 is world ranks [0, n0), part 1 the rest. */
        MPI_Comm part, inter;
        int mine = *appnum == 0 ? n0 : size - n0, other = *appnum == 0 ? n0 : 0;
        MPI_Comm_split(MPI_COMM_WORLD, *appnum, rank, &part);
        rc = MPI_Intercomm_create(part, 0, MPI_COMM_WORLD, other, 11, &inter);
        CHECK(rc == MPI_SUCCESS, "intercomm_create over the world: rc %d", rc);
        int rs = -1, isum = 0, want = 0;
        MPI_Comm_remote_size(inter, &rs);
        CHECK(rs == size - mine, "intercomm_create over the world: remote size %d", rs);
        MPI_Allreduce(&rank, &isum, 1, MPI_INT, MPI_SUM, inter);
        for (int r = 0; r < size; r++)
            if ((r < n0) != (*appnum == 0))
                want += r;
        CHECK(isum == want, "allreduce over the parts' intercomm: %d, expected %d", isum, want);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&part);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* Connecting the world would meet for one part only: refused before
     * the port is read. */
    MPI_Comm ic;
    rc = MPI_Comm_connect("isthmus-port:none", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic);
    CHECK(rc != MPI_SUCCESS, "MPI_Comm_connect on the world succeeded");
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "MPI_Comm_connect") != NULL, "refusal message: %s", msg);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    printf("PASS world rank %d of %d (appnum %d)\n", rank, size, *appnum);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

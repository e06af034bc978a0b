/*
 * Failures in one MPI_COMM_WORLD across implementations (ISTHMUS_WORLD):
 * the world's last rank (in part 1) ends abnormally while the others wait.
 *
 * Usage: world_fail MODE
 *   abort — the last rank calls MPI_Abort(MPI_COMM_WORLD, 7) while every
 *           other rank waits in a receive from its own part that nothing
 *           will match: only the abort can end them.
 *   kill  — the last rank kills itself (SIGKILL); its part's other ranks
 *           wait in a receive from it (their launcher ends them). Part 0's
 *           ranks, under MPI_ERRORS_RETURN: a receive from the dead rank,
 *           a send to it and an Allreduce on the world each return an
 *           error whose string says which rank failed; then MPI_Finalize.
 *           Prints "PASS kill rank R" per rank of part 0.
 *   fatal — as kill, part 0 under the default MPI_ERRORS_ARE_FATAL: its
 *           receive from the dead rank aborts it (with the message).
 */
#include <signal.h>
#include <string.h>

#include "check.h"

static int rank, size;

/* The error string of rc, which must be an error naming the failure. */
static void expect_failure(int rc, const char *call, const char *naming)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK(rc != MPI_SUCCESS, "%s involving the dead rank succeeded", call);
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "has failed") != NULL && strstr(msg, naming) != NULL,
          "%s: error string \"%s\" does not name \"%s\"", call, msg, naming);
    printf("rank %d: %s: %s\n", rank, call, msg);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK(argc == 2, "usage: world_fail abort|kill|fatal");
    const char *mode = argv[1];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *appnum = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    CHECK(flag && appnum, "no MPI_APPNUM on the world");
    int last = size - 1, x = 0;
    /* Every rank is connected and in the world before the failure. */
    MPI_Barrier(MPI_COMM_WORLD);

    if (strcmp(mode, "abort") == 0) {
        if (rank == last)
            MPI_Abort(MPI_COMM_WORLD, 7);
        /* A receive within this rank's part that nothing matches. */
        int peer = rank == 0 ? 1 : rank - 1;
        MPI_Recv(&x, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(0, "the receive that nothing matches returned");
    }
    if (*appnum == 1) {
        if (rank == last)
            raise(SIGKILL);
        MPI_Recv(&x, 1, MPI_INT, last, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(0, "a receive from the killed rank returned");
    }
    char naming[32];
    snprintf(naming, sizeof naming, "rank %d of this communicator", last);
    if (strcmp(mode, "fatal") == 0) {
        MPI_Recv(&x, 1, MPI_INT, last, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(0, "a receive from the killed rank returned under MPI_ERRORS_ARE_FATAL");
    }
    CHECK(strcmp(mode, "kill") == 0, "unknown mode %s", mode);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    expect_failure(MPI_Recv(&x, 1, MPI_INT, last, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                   "MPI_Recv", naming);
    expect_failure(MPI_Send(&x, 1, MPI_INT, last, 99, MPI_COMM_WORLD), "MPI_Send", naming);
    int sum = 0;
    /* Which rank of part 1 the leader finds gone first is the race of
     * their deaths: any "rank N of this communicator". */
    expect_failure(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                   "MPI_Allreduce", "of this communicator");
    printf("PASS kill rank %d\n", rank);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

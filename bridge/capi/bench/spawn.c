/*
 * Spawn-to-first-message time for the spawn benchmark (bench/spawn.sh):
 * plain MPI calls, no Isthmus call, so the same program measures Isthmus
 * (the parent run with libisthmus preloaded: its children are started by
 * the virtual machine) and an implementation's own MPI_Comm_spawn.
 *
 *   spawn parent CHILD NP ROUNDS LABEL   ROUNDS times: MPI_Comm_spawn of NP
 *        copies of CHILD (`spawn child`) on MPI_COMM_SELF, timed from the
 *        call until the first child's message arrives; then the other
 *        children's messages, and disconnect. Prints
 *          RESULT LABEL_first_npNP median_us=... p99_us=... n=1      round 1
 *          RESULT LABEL_later_npNP median_us=... p99_us=... n=ROUNDS-1
 *   spawn child    MPI_Init, each rank sends its rank to the parents' rank
 *        0, disconnects, finalizes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bench_stats.h"

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "spawn: %s failed: %s\n", what, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static int parent(const char *child, int np, int rounds, const char *label)
{
    double *t = calloc(rounds, sizeof *t);
    char *argv[] = {"child", NULL};
    for (int r = 0; r < rounds; r++) {
        MPI_Comm inter;
        double t0 = now_us();
        check(MPI_Comm_spawn(child, argv, np, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter,
                             MPI_ERRCODES_IGNORE),
              "MPI_Comm_spawn");
        int v = -1;
        MPI_Status st;
        check(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 5, inter, &st), "MPI_Recv");
        t[r] = now_us() - t0;
        int got = 1 << st.MPI_SOURCE;
        for (int i = 1; i < np; i++) {
            check(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 5, inter, &st), "MPI_Recv");
            got |= 1 << st.MPI_SOURCE;
        }
        if (np < 31 && got != (1 << np) - 1) {
            fprintf(stderr, "spawn: round %d heard from children %#x of %d\n", r, got, np);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        check(MPI_Comm_disconnect(&inter), "MPI_Comm_disconnect");
    }
    char name[256];
    snprintf(name, sizeof name, "%s_first_np%d", label, np);
    report_latency(name, t, 1);
    if (rounds > 1) {
        snprintf(name, sizeof name, "%s_later_np%d", label, np);
        report_latency(name, t + 1, rounds - 1);
    }
    free(t);
    return 0;
}

static int child(void)
{
    MPI_Comm parent;
    int rank;
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        fprintf(stderr, "spawn child: no parent\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check(MPI_Send(&rank, 1, MPI_INT, 0, 5, parent), "MPI_Send");
    check(MPI_Comm_disconnect(&parent), "MPI_Comm_disconnect");
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = 1;
    if (argc >= 6 && strcmp(argv[1], "parent") == 0)
        rc = parent(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5]);
    else if (argc >= 2 && strcmp(argv[1], "child") == 0)
        rc = child();
    else
        fprintf(stderr, "usage: spawn parent CHILD NP ROUNDS LABEL | spawn child\n");
    MPI_Finalize();
    return rc;
}

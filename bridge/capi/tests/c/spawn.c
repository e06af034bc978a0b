/*
 * MPI_Comm_spawn across implementations, plain MPI (no Isthmus call):
 *   spawn manager WORKER NP self|world [IMPL]
 *        spawns NP copies of WORKER (`spawn worker`) on MPI_COMM_SELF (rank
 *        0 of the job only) or on MPI_COMM_WORLD with the last rank as root;
 *        IMPL, if given, goes in the info key isthmus_impl. Then with the
 *        children: point-to-point both ways, Bcast with MPI_ROOT both ways,
 *        Allreduce, Intercomm_merge (and an Allreduce on it), disconnect.
 *        The root prints "LIBRARY <its MPI library>" and "CHILD-LIBRARY
 *        <the first child's>" (MPI_Get_library_version's first line).
 *        Each manager rank prints "PASS manager rank <r>".
 *   spawn worker     the child: MPI_Comm_get_parent, the same exchanges,
 *        MPI_APPNUM (its command's index), no ISTHMUS_SPAWN_* nor
 *        ISTHMUS_DATA_ADDR left in its environment, disconnect,
 *        get_parent is then MPI_COMM_NULL. Its verdict travels
 *        to the parents (its output goes to the virtual machine).
 *   spawn multiple WORKER
 *        MPI_Comm_spawn_multiple on MPI_COMM_SELF of two commands, both
 *        WORKER: 1 rank with the arguments "worker first" and the info key
 *        isthmus_env ISTHMUS_TEST_APP=one, 2 ranks with "worker second" and
 *        ISTHMUS_TEST_APP=two; the three children are one MPI_COMM_WORLD,
 *        each checks it runs its own command; then the manager's
 *        exchanges. Prints "PASS multiple rank 0".
 *   spawn cross WORKER_A WORKER_B [self|world]
 *        `multiple` with WORKER_A as the first command and WORKER_B (of
 *        the other implementation) as the second: the three children are
 *        one world (MPI_COMM_WORLD across both implementations, WORKER_A's
 *        rank first), the intercommunicator's remote group is that world;
 *        MPI_Intercomm_merge of it is refused (three jobs) with
 *        MPI_ERRORS_RETURN. On MPI_COMM_SELF of rank 0 (`self`, the
 *        default) or on MPI_COMM_WORLD with the last rank as root
 *        (`world`: every parent gets the intercommunicator, whose local
 *        group is the job's). Each child's MPI library is printed as
 *        "CHILD-LIBRARY <q> <line>". Prints "PASS cross rank <r>" on each
 *        parent.
 *   spawn crossfail TIMEOUT COMMAND IMPL [COMMAND IMPL]...
 *        one MPI_Comm_spawn_multiple that must fail (MPI_ERRORS_RETURN,
 *        isthmus_timeout TIMEOUT), one rank of each COMMAND run as
 *        `sleeper` with the info key isthmus_impl IMPL ("-": none);
 *        prints "SPAWN-ERROR 0 ..." as `fail` does, then "PASS crossfail
 *        rank 0".
 *   spawn sleeper    a child that sleeps 120 s before MPI_Init.
 *   spawn exit3      a child that exits with 3 before MPI_Init.
 *   spawn fail TIMEOUT COMMAND NP [COMMAND NP]...
 *        spawns that must fail (MPI_ERRORS_RETURN, info key isthmus_timeout
 *        TIMEOUT), one after the other in this process, the children run as
 *        `sleeper` (or as $SPAWN_TEST_CHILD): for the i-th prints
 *        "SPAWN-ERROR i class=<c> same=<0|1> null=<0|1> <MPI_Error_string>"
 *        (same: every errcode is the returned code; null: intercomm is
 *        MPI_COMM_NULL; classes compare within the process only), then
 *        "PASS fail rank 0".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "check.h"

static int rank, size;

/* The first line of MPI_Get_library_version, cut to fit LIBRARY_LINE (the
 * implementations' MPI_MAX_LIBRARY_VERSION_STRING differ). */
#define LIBRARY_LINE 256
static void library_line(char line[LIBRARY_LINE])
{
    static char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n")] = '\0';
    snprintf(line, LIBRARY_LINE, "%s", version);
}

/* What both sides do on the intercommunicator; `parent` is 1 on the
 * managers' side; `cross`: the children are a world of two implementations,
 * whose intercommunicator spans three jobs and cannot be merged (checked).
 * Returns the number of failed checks (children report it). */
static int exchange(MPI_Comm inter, int parent, int cross)
{
    int bad = 0, rsize, lsize, flag, lrank;
    MPI_Comm_test_inter(inter, &flag);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_rank(inter, &lrank);
    bad += !flag;

    /* Point-to-point: local rank 0 sends each remote rank a value, which it
     * sends back changed. */
    for (int turn = 0; turn < 2; turn++) {
        int sender = (turn == 0) == parent;
        if (sender && lrank == 0) {
            for (int q = 0; q < rsize; q++) {
                int v = 100 * (turn + 1) + q, back;
                MPI_Send(&v, 1, MPI_INT, q, 7, inter);
                MPI_Recv(&back, 1, MPI_INT, q, 8, inter, MPI_STATUS_IGNORE);
                bad += back != 2 * v + 1;
            }
        } else if (!sender) {
            int v;
            MPI_Recv(&v, 1, MPI_INT, 0, 7, inter, MPI_STATUS_IGNORE);
            bad += v != 100 * (turn + 1) + lrank;
            v = 2 * v + 1;
            MPI_Send(&v, 1, MPI_INT, 0, 8, inter);
        }
    }

    /* Bcast with MPI_ROOT: each side's rank 0 broadcasts to the other. */
    for (int turn = 0; turn < 2; turn++) {
        int rooted = (turn == 0) == parent;
        double v[3] = {0, 0, 0};
        if (rooted) {
            v[0] = 1.5; v[1] = -2.0; v[2] = 1e10 + turn;
            MPI_Bcast(v, 3, MPI_DOUBLE, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
        } else {
            MPI_Bcast(v, 3, MPI_DOUBLE, 0, inter);
            bad += v[0] != 1.5 || v[1] != -2.0 || v[2] != 1e10 + turn;
        }
    }

    /* Allreduce: each side gets the sum over the other. */
    int mine = parent ? 1000 + lrank : lrank + 1, sum = 0, want = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter);
    for (int q = 0; q < rsize; q++)
        want += parent ? q + 1 : 1000 + q;
    bad += sum != want;

    /* Merge: the parents first. */
    MPI_Comm merged;
    int msize, mrank, total = 0;
    if (cross) {
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        int rc = MPI_Intercomm_merge(inter, parent ? 0 : 1, &merged);
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        bad += rc == MPI_SUCCESS || merged != MPI_COMM_NULL || strstr(text, "three jobs") == NULL;
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_ARE_FATAL);
        return bad;
    }
    MPI_Intercomm_merge(inter, parent ? 0 : 1, &merged);
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    bad += msize != lsize + rsize;
    bad += mrank != (parent ? lrank : rsize + lrank);
    MPI_Allreduce(&mrank, &total, 1, MPI_INT, MPI_SUM, merged);
    bad += total != msize * (msize - 1) / 2;
    MPI_Comm_free(&merged);
    return bad;
}

static int manager(const char *worker, int np, const char *mode, const char *impl)
{
    MPI_Comm comm = strcmp(mode, "self") == 0 ? MPI_COMM_SELF : MPI_COMM_WORLD;
    int root = comm == MPI_COMM_SELF ? 0 : size - 1;
    if (comm == MPI_COMM_SELF && rank != 0)
        return 0;
    /* Not spawned: MPI_APPNUM is the launcher's (one specification: 0), or
     * not set. */
    int *appnum = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    CHECK(!flag || (appnum != NULL && *appnum == 0), "MPI_APPNUM of the manager is %d",
          appnum ? *appnum : -1);
    MPI_Info info = MPI_INFO_NULL;
    if (impl) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "isthmus_impl", impl);
    }
    char *argv[] = {"worker", NULL};
    int errcodes[64];
    MPI_Comm inter;
    for (int i = 0; i < 64; i++)
        errcodes[i] = -1;
    int rc = MPI_Comm_spawn(worker, argv, np, info, root, comm, &inter, errcodes);
    CHECK(rc == MPI_SUCCESS, "MPI_Comm_spawn returned %d", rc);
    for (int i = 0; i < np; i++)
        CHECK(errcodes[i] == MPI_SUCCESS, "errcodes[%d] = %d", i, errcodes[i]);
    int rsize;
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == np, "remote size %d, spawned %d", rsize, np);
    int bad = exchange(inter, 1, 0);
    CHECK(bad == 0, "%d checks failed with the children", bad);
    /* Each child's own verdict, and the MPI library the first one runs on
     * (tests/matrix.rs checks both sides'). */
    int lrank;
    MPI_Comm_rank(inter, &lrank);
    if (lrank == 0) {
        for (int q = 0; q < rsize; q++) {
            int theirs = -1;
            MPI_Recv(&theirs, 1, MPI_INT, q, 9, inter, MPI_STATUS_IGNORE);
            CHECK(theirs == 0, "child %d reports %d failed checks", q, theirs);
        }
        char mine[LIBRARY_LINE], theirs[LIBRARY_LINE];
        library_line(mine);
        MPI_Recv(theirs, LIBRARY_LINE, MPI_CHAR, 0, 10, inter, MPI_STATUS_IGNORE);
        theirs[LIBRARY_LINE - 1] = '\0';
        printf("LIBRARY %s\nCHILD-LIBRARY %s\n", mine, theirs);
    }
    MPI_Comm_disconnect(&inter);
    CHECK(inter == MPI_COMM_NULL, "disconnect left a handle");
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    printf("PASS manager rank %d\n", rank);
    return 0;
}

static int worker(int argc, char **argv)
{
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    CHECK(parent != MPI_COMM_NULL, "no parent");
    int cross = argc >= 4 && strcmp(argv[3], "cross") == 0;
    int bad = exchange(parent, 0, cross);
    /* MPI_APPNUM: the index of this rank's command (0 for MPI_Comm_spawn). */
    int *appnum = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    int want = argc >= 3 && rank > 0 ? 1 : 0;
    bad += !flag || appnum == NULL || *appnum != want;
    if (!flag || appnum == NULL || *appnum != want)
        fprintf(stderr, "worker rank %d: MPI_APPNUM flag %d value %d, want %d\n", rank, flag,
                flag && appnum ? *appnum : -1, want);
    /* The spawn's variables are gone once MPI_Init used them; the parent's
     * host-specific ones never came. */
    const char *gone[] = {"ISTHMUS_SPAWN_PORT", "ISTHMUS_SPAWN_TIMEOUT", "ISTHMUS_SPAWN_APPNUM",
                          "ISTHMUS_DATA_ADDR"};
    for (int i = 0; i < 4; i++)
        if (getenv(gone[i]) != NULL) {
            fprintf(stderr, "worker rank %d: %s is set\n", rank, gone[i]);
            bad++;
        }
    if (argc >= 3) {
        /* A child of `multiple`: rank 0 runs the first command, 1-2 the second. */
        const char *app = getenv("ISTHMUS_TEST_APP");
        bad += strcmp(argv[2], rank == 0 ? "first" : "second") != 0;
        bad += app == NULL || strcmp(app, rank == 0 ? "one" : "two") != 0;
        bad += size != 3;
    }
    int lrank;
    MPI_Comm_rank(parent, &lrank);
    if ((argc < 3 && lrank == 0) || cross) {
        /* A child of `manager`: its MPI library, for the manager to print. */
        char mine[LIBRARY_LINE];
        library_line(mine);
        MPI_Send(mine, (int)strlen(mine) + 1, MPI_CHAR, 0, 10, parent);
    }
    MPI_Send(&bad, 1, MPI_INT, 0, 9, parent);
    MPI_Comm_disconnect(&parent);
    MPI_Comm_get_parent(&parent);
    CHECK(parent == MPI_COMM_NULL, "get_parent after disconnect is not MPI_COMM_NULL");
    printf("worker rank %d: %d failed checks\n", lrank, bad);
    return 0;
}

static int multiple(const char *worker, const char *other, int on_world)
{
    if (!on_world && rank != 0)
        return 0;
    MPI_Comm comm = on_world ? MPI_COMM_WORLD : MPI_COMM_SELF;
    int root = on_world ? size - 1 : 0;
    int cross = other != NULL;
    char *commands[2] = {(char *)worker, (char *)(cross ? other : worker)};
    char *first[] = {"worker", "first", cross ? "cross" : NULL, NULL};
    char *second[] = {"worker", "second", cross ? "cross" : NULL, NULL};
    char **argvs[2] = {first, second};
    int np[2] = {1, 2}, errcodes[3] = {-1, -1, -1};
    MPI_Info infos[2];
    MPI_Info_create(&infos[0]);
    MPI_Info_set(infos[0], "isthmus_env", "ISTHMUS_TEST_APP=one");
    MPI_Info_create(&infos[1]);
    MPI_Info_set(infos[1], "isthmus_env", "ISTHMUS_TEST_APP=two");
    MPI_Comm inter;
    int rc = MPI_Comm_spawn_multiple(2, commands, argvs, np, infos, root, comm, &inter,
                                     errcodes);
    CHECK(rc == MPI_SUCCESS, "MPI_Comm_spawn_multiple returned %d", rc);
    for (int i = 0; i < 3; i++)
        CHECK(errcodes[i] == MPI_SUCCESS, "errcodes[%d] = %d", i, errcodes[i]);
    int rsize, lsize, lrank;
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_rank(inter, &lrank);
    CHECK(rsize == 3, "remote size %d, spawned 3", rsize);
    CHECK(lsize == (on_world ? size : 1) && lrank == (on_world ? rank : 0),
          "local size %d rank %d on %s", lsize, lrank, on_world ? "the world" : "self");
    int bad = exchange(inter, 1, cross);
    CHECK(bad == 0, "%d checks failed with the children", bad);
    /* The children report to the parents' rank 0. */
    for (int q = 0; cross && lrank == 0 && q < rsize; q++) {
        char theirs[LIBRARY_LINE];
        MPI_Recv(theirs, LIBRARY_LINE, MPI_CHAR, q, 10, inter, MPI_STATUS_IGNORE);
        theirs[LIBRARY_LINE - 1] = '\0';
        printf("CHILD-LIBRARY %d %s\n", q, theirs);
    }
    for (int q = 0; lrank == 0 && q < rsize; q++) {
        int theirs = -1;
        MPI_Recv(&theirs, 1, MPI_INT, q, 9, inter, MPI_STATUS_IGNORE);
        CHECK(theirs == 0, "child %d reports %d failed checks", q, theirs);
    }
    MPI_Comm_disconnect(&inter);
    CHECK(inter == MPI_COMM_NULL, "disconnect left a handle");
    MPI_Info_free(&infos[0]);
    MPI_Info_free(&infos[1]);
    printf("PASS %s rank %d\n", cross ? "cross" : "multiple", rank);
    return 0;
}

static int crossfail(int argc, char **argv)
{
    if (rank != 0)
        return 0;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    enum { MOST = 8 };
    char *commands[MOST];
    char *args[] = {"sleeper", NULL};
    char **argvs[MOST];
    int np[MOST], errcodes[MOST], count = 0;
    MPI_Info infos[MOST];
    for (int c = 3; c + 1 < argc && count < MOST; c += 2, count++) {
        commands[count] = argv[c];
        argvs[count] = args;
        np[count] = 1;
        errcodes[count] = -1;
        MPI_Info_create(&infos[count]);
        MPI_Info_set(infos[count], "isthmus_timeout", argv[2]);
        if (strcmp(argv[c + 1], "-") != 0)
            MPI_Info_set(infos[count], "isthmus_impl", argv[c + 1]);
    }
    MPI_Comm inter = MPI_COMM_WORLD;
    int rc = MPI_Comm_spawn_multiple(count, commands, argvs, np, infos, 0, MPI_COMM_SELF, &inter,
                                     errcodes);
    CHECK(rc != MPI_SUCCESS, "the spawn of %d commands succeeded", count);
    int same = 1;
    for (int i = 0; i < count; i++) {
        same &= errcodes[i] == rc;
        MPI_Info_free(&infos[i]);
    }
    int class, len;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &class);
    MPI_Error_string(rc, text, &len);
    printf("SPAWN-ERROR 0 class=%d same=%d null=%d %s\n", class, same, inter == MPI_COMM_NULL,
           text);
    printf("PASS crossfail rank %d\n", rank);
    return 0;
}

static int fail(int argc, char **argv)
{
    if (rank != 0)
        return 0;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "isthmus_timeout", argv[2]);
    for (int c = 3; c + 1 < argc; c += 2) {
        const char *command = argv[c];
        int np = atoi(argv[c + 1]);
        const char *child = getenv("SPAWN_TEST_CHILD");
        char *args[] = {child ? (char *)child : "sleeper", NULL};
        int errcodes[16];
        MPI_Comm inter = MPI_COMM_WORLD;
        for (int i = 0; i < 16; i++)
            errcodes[i] = -1;
        int rc = MPI_Comm_spawn(command, args, np, info, 0, MPI_COMM_SELF, &inter, errcodes);
        CHECK(rc != MPI_SUCCESS, "the spawn of %s succeeded", command);
        int same = 1;
        for (int i = 0; i < np && i < 16; i++)
            same &= errcodes[i] == rc;
        int class, len;
        char text[MPI_MAX_ERROR_STRING];
        MPI_Error_class(rc, &class);
        MPI_Error_string(rc, text, &len);
        printf("SPAWN-ERROR %d class=%d same=%d null=%d %s\n", (c - 3) / 2, class, same,
               inter == MPI_COMM_NULL, text);
    }
    MPI_Info_free(&info);
    printf("PASS fail rank %d\n", rank);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "sleeper") == 0)
        sleep(120);
    if (argc >= 2 && strcmp(argv[1], "exit3") == 0)
        return 3;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = 1;
    if (argc >= 5 && strcmp(argv[1], "manager") == 0)
        rc = manager(argv[2], atoi(argv[3]), argv[4], argc >= 6 ? argv[5] : NULL);
    else if (argc >= 2 && strcmp(argv[1], "worker") == 0)
        rc = worker(argc, argv);
    else if (argc >= 3 && strcmp(argv[1], "multiple") == 0)
        rc = multiple(argv[2], NULL, 0);
    else if (argc >= 4 && strcmp(argv[1], "cross") == 0)
        rc = multiple(argv[2], argv[3], argc >= 5 && strcmp(argv[4], "world") == 0);
    else if (argc >= 5 && strcmp(argv[1], "crossfail") == 0)
        rc = crossfail(argc, argv);
    else if (argc >= 5 && strcmp(argv[1], "fail") == 0)
        rc = fail(argc, argv);
    else
        fprintf(stderr, "usage: spawn manager WORKER NP self|world [IMPL] | worker | sleeper | multiple WORKER | "
                        "cross WORKER_A WORKER_B [self|world] | crossfail TIMEOUT COMMAND IMPL... | "
                        "fail TIMEOUT COMMAND NP...\n");
    MPI_Finalize();
    return rc;
}

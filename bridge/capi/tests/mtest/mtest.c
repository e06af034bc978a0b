/*
 * Isthmus's implementation of the MTest harness (see mpitest.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isthmus.h"
#include "mpitest.h"

static int handle = -1;
static const char *group, *peer;
static int inter_idx, intra_idx;
#define MAX_SELF_DUPS 16
static MPI_Comm self_dups[MAX_SELF_DUPS];
static int n_self_dups;

static void die(const char *what, int code)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, msg, &len);
    fprintf(stderr, "mtest: %s failed: %s\n", what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

void MTest_Init(int *argc, char ***argv)
{
    int rc;
    MPI_Init(argc, argv);
    group = getenv("ISTHMUS_MTEST_GROUP");
    peer = getenv("ISTHMUS_MTEST_PEER");
    if (!group || !peer) {
        fprintf(stderr, "mtest: set ISTHMUS_MTEST_GROUP and ISTHMUS_MTEST_PEER\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Errors of the harness's own calls are reported, not fatal. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = Isthmus_Register(group, MPI_COMM_WORLD, &handle);
    if (rc != MPI_SUCCESS)
        die("Isthmus_Register", rc);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

void MTest_Finalize(int errs)
{
    int rank, total = 0, i;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total)
            printf(" Found %d errors\n", total);
        else
            printf(" No Errors\n");
        fflush(stdout);
    }
    for (i = 0; i < n_self_dups; i++)
        MPI_Comm_free(&self_dups[i]);
    n_self_dups = 0;
    if (handle >= 0) {
        int rc = Isthmus_Leave(handle);
        if (rc != MPI_SUCCESS)
            die("Isthmus_Leave", rc);
        handle = -1;
    }
    MPI_Finalize();
}

int MTestReturnValue(int errors)
{
    return errors ? 1 : 0;
}

/* One intercommunicator: this job and the other, formed by Isthmus. */
int MTestGetIntercomm(MPI_Comm *comm, int *isLeftGroup, int min_size)
{
    (void) min_size;
    if (inter_idx++ > 0) {
        inter_idx = 0;
        *comm = MPI_COMM_NULL;
        return 0;
    }
    int rc = Isthmus_Intercomm_create_timeout(handle, peer, 120.0, comm);
    if (rc != MPI_SUCCESS)
        die("Isthmus_Intercomm_create", rc);
    *isLeftGroup = strcmp(group, peer) < 0;
    MPI_Comm_set_name(*comm, "Isthmus intercomm");
    return 1;
}

static const char *intra_name = "MPI_COMM_NULL";

/* The merge of an Isthmus intercommunicator between this job and the other:
 * one intracommunicator over both jobs. The left group passes high = 1 (it
 * comes second), as MPICH's harness does for its merged intracommunicator. */
static void merged_intracomm(MPI_Comm *comm)
{
    MPI_Comm inter;
    int left, rc;
    MTestGetIntercomm(&inter, &left, 0);
    inter_idx = 0;
    rc = MPI_Intercomm_merge(inter, left, comm);
    if (rc != MPI_SUCCESS)
        die("MPI_Intercomm_merge", rc);
    MPI_Comm_free(&inter);
}

/* MPI_COMM_WORLD, then a second intracommunicator: with
 * ISTHMUS_MTEST_MERGE=1 the merge of an Isthmus intercommunicator (spanning
 * both jobs), else a duplicate of MPI_COMM_WORLD (an ordinary communicator,
 * which the library passes straight to MPI). */
int MTestGetIntracommGeneral(MPI_Comm *comm, int min_size, int allowSmaller)
{
    int size;
    const char *merge = getenv("ISTHMUS_MTEST_MERGE");
    (void) allowSmaller;
    switch (intra_idx++) {
    case 0:
        *comm = MPI_COMM_WORLD;
        intra_name = "MPI_COMM_WORLD";
        break;
    case 1:
        if (merge && strcmp(merge, "1") == 0) {
            merged_intracomm(comm);
            intra_name = "Merge of an Isthmus intercommunicator";
        } else {
            MPI_Comm_dup(MPI_COMM_WORLD, comm);
            intra_name = "Dup of MPI_COMM_WORLD";
        }
        break;
    default:
        intra_idx = 0;
        *comm = MPI_COMM_NULL;
        intra_name = "MPI_COMM_NULL";
        return 0;
    }
    MPI_Comm_size(*comm, &size);
    if (size < min_size) {
        MTestFreeComm(comm);
        *comm = MPI_COMM_NULL;
    }
    return 1;
}

const char *MTestGetIntracommName(void)
{
    return intra_name;
}

int MTestGetIntracomm(MPI_Comm *comm, int min_size)
{
    return MTestGetIntracommGeneral(comm, min_size, 0);
}

void MTestFreeComm(MPI_Comm *comm)
{
    if (*comm != MPI_COMM_WORLD && *comm != MPI_COMM_SELF && *comm != MPI_COMM_NULL)
        MPI_Comm_free(comm);
}

/* Every rank sends its rank to every remote rank (non-blocking) and checks
 * what every remote rank sent it. */
int MTestTestIntercomm(MPI_Comm comm)
{
    int rank, size, rsize, j, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_remote_size(comm, &rsize);
    int *out = malloc(2 * sizeof(int) * (size_t) rsize);
    int *in = malloc(2 * sizeof(int) * (size_t) rsize);
    MPI_Request *reqs = malloc(2 * sizeof(MPI_Request) * (size_t) rsize);
    if (!out || !in || !reqs) {
        free(out);
        free(in);
        free(reqs);
        return 1;
    }
    for (j = 0; j < rsize; j++) {
        out[2 * j] = rank;
        out[2 * j + 1] = j;
        MPI_Isend(&out[2 * j], 2, MPI_INT, j, 0, comm, &reqs[j]);
    }
    for (j = 0; j < rsize; j++)
        MPI_Irecv(&in[2 * j], 2, MPI_INT, j, 0, comm, &reqs[rsize + j]);
    MPI_Waitall(2 * rsize, reqs, MPI_STATUSES_IGNORE);
    for (j = 0; j < rsize; j++) {
        if (in[2 * j] != j || in[2 * j + 1] != rank) {
            errs++;
            fprintf(stderr, "intercomm test: from %d got (%d,%d), expected (%d,%d)\n", j,
                    in[2 * j], in[2 * j + 1], j, rank);
        }
    }
    free(out);
    free(in);
    free(reqs);
    return errs;
}

/* A ring over the intracommunicator. */
int MTestTestIntracomm(MPI_Comm comm)
{
    int rank, size, got = -1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT,
                 (rank + size - 1) % size, 0, comm, MPI_STATUS_IGNORE);
    return got == (rank + size - 1) % size ? 0 : 1;
}

int MTestTestComm(MPI_Comm comm)
{
    int inter = 0;
    if (comm == MPI_COMM_NULL)
        return 0;
    MPI_Comm_test_inter(comm, &inter);
    return inter ? MTestTestIntercomm(comm) : MTestTestIntracomm(comm);
}

/* Shifts the context ids of later communicators by a per-rank number of
 * MPI_COMM_SELF duplicates, as MPICH's harness does. */
void MTestCommRandomize(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    srand((unsigned) rank + 1);
    n_self_dups = rand() % MAX_SELF_DUPS;
    for (int i = 0; i < n_self_dups; i++)
        MPI_Comm_dup(MPI_COMM_SELF, &self_dups[i]);
}

void MTestPrintfMsg(int level, const char *fmt, ...)
{
    va_list ap;
    if (level > 0 && !getenv("MPITEST_VERBOSE"))
        return;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

/* An MPI error code, its class and its string, as MPICH's harness prints them. */
void MTestPrintError(int errcode)
{
    int errclass, slen;
    char string[MPI_MAX_ERROR_STRING];
    MPI_Error_class(errcode, &errclass);
    MPI_Error_string(errcode, string, &slen);
    printf("Error class %d (%s)\n", errclass, string);
    fflush(stdout);
}

/* "-name=value" arguments. */
struct MTestArgList {
    int argc;
    char **argv;
    /* For MTestArgListCreate_arg: the copy of the string the words point into. */
    char *owned;
    char **owned_argv;
};

MTestArgList *MTestArgListCreate(int argc, char *argv[])
{
    MTestArgList *l = malloc(sizeof *l);
    if (l) {
        l->argc = argc;
        l->argv = argv;
        l->owned = NULL;
        l->owned_argv = NULL;
    }
    return l;
}

/* The arguments of a `run(const char *arg)` test: words separated by spaces
 * (argv[0] is a placeholder, as in a program's argv). */
MTestArgList *MTestArgListCreate_arg(const char *arg)
{
    size_t len = arg ? strlen(arg) : 0;
    MTestArgList *l = malloc(sizeof *l);
    char *copy = malloc(len + 1);
    char **argv = malloc((len / 2 + 2) * sizeof *argv);
    int argc = 0;
    if (!l || !copy || !argv) {
        free(l);
        free(copy);
        free(argv);
        return NULL;
    }
    memcpy(copy, arg ? arg : "", len + 1);
    argv[argc++] = "run";
    for (char *w = strtok(copy, " "); w; w = strtok(NULL, " "))
        argv[argc++] = w;
    l->argc = argc;
    l->argv = argv;
    l->owned = copy;
    l->owned_argv = argv;
    return l;
}

int MTestArgListGetInt_with_default(MTestArgList *head, const char *arg, int default_val)
{
    size_t n = strlen(arg);
    for (int i = 1; head && i < head->argc; i++) {
        const char *a = head->argv[i];
        while (*a == '-')
            a++;
        if (strncmp(a, arg, n) == 0 && a[n] == '=')
            return atoi(a + n + 1);
    }
    return default_val;
}

void MTestArgListDestroy(MTestArgList *head)
{
    if (head) {
        free(head->owned);
        free(head->owned_argv);
    }
    free(head);
}

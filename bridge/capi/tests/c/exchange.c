/*
 * The C API's behaviour tests, one scenario per run:
 *   exchange.c SCENARIO GROUP PEER
 * Both jobs register GROUP, form the intercommunicator with PEER and run
 * SCENARIO; each rank prints "PASS <scenario> rank <r>" when it passed.
 *   mixed    native and bridge requests in one MPI_Waitall, MPI_Waitany
 *            and an MPI_Testall loop; derived datatype; ANY_SOURCE/TAG.
 *   refused  every refused call on the intercommunicator fails, with
 *            MPI_ERRORS_RETURN, with a message naming it; bad arguments too.
 *   threads  two threads per rank exchange at once, each on its own
 *            duplicate of the intercommunicator (MPI_THREAD_MULTIPLE).
 *   finalize the first job's ranks complete many sends (small ones past
 *            the receiver's credit, rendezvous-size and synchronous ones),
 *            then free, leave and finalize while the second job's ranks
 *            sleep; these then receive every message, intact and in order.
 *   isendflood the first job's ranks post many nonblocking sends (1 KiB
 *            and 1 MiB, from one buffer, most past the receiver's credit,
 *            three of them synchronous)
 *            while the second job's ranks sleep, print their peak RSS
 *            (VmHWM) before and after, then wait for them; the receivers
 *            then take every message, intact and in order.
 *   pendingbound  run with ISTHMUS_MAX_PENDING_SENDS=64: the first job's
 *            ranks post 1 KiB MPI_Isends while the second job's sleep,
 *            until one fails past the bound (its error string names the
 *            variable; nothing is sent for it); the receivers then take
 *            exactly the sends that started, intact and in order.
 *   coll     MPI_Barrier waits for the other job; MPI_Bcast of predefined
 *            (int, double, 1 MiB of char) and derived (vector, struct)
 *            types from each rank of either job reaches every remote rank
 *            intact, leaves the root's group untouched, an empty one too; a bad root is
 *            MPI_ERR_ROOT at every rank, a too-small receive a truncation.
 *   large    messages around the shared-memory single-copy threshold
 *            (64 KiB), of 1 MiB and 4 MiB + 3, and a non-contiguous
 *            vector of ints (packed 1.2 MB, received as a vector too),
 *            sent with MPI_Send, MPI_Isend and MPI_Ssend; each rank of the
 *            first job (by group name) sends to the same rank of the
 *            other, which checks every byte and sends it back; the gaps of
 *            the vectors stay untouched (run with ISTHMUS_SHM_CMA on and off).
 *   killed   the second job's rank 1 dies mid-exchange; the first job's
 *            ranks must get an error (ERRORS_RETURN: printed; default
 *            handler: the job aborts with the message), not hang.
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "isthmus.h"

static int rank, size, rsize, left;
static MPI_Comm inter;

static void mixed(void)
{
    enum { N = 64 };
    int ring_out = rank, ring_in = -1;
    int out[N], in[N];
    MPI_Request reqs[4];
    MPI_Status st[4];
    for (int i = 0; i < N; i++)
        out[i] = 1000 * left + 10 * rank + i;
    /* Native ring inside this job, bridge exchange with the other job:
     * one MPI_Waitall for both kinds. */
    MPI_Irecv(&ring_in, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&ring_out, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD, &reqs[1]);
    CHECK(rsize == size, "the mixed scenario wants jobs of equal size");
    MPI_Irecv(in, N, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &reqs[2]);
    MPI_Isend(out, N, MPI_INT, rank, 7, inter, &reqs[3]);
    CHECK(MPI_Waitall(4, reqs, st) == MPI_SUCCESS, "Waitall");
    int count = -1;
    MPI_Get_count(&st[2], MPI_INT, &count);
    CHECK(count == N, "count %d", count);
    CHECK(st[2].MPI_TAG == 7 && st[2].MPI_SOURCE == rank, "tag %d source %d", st[2].MPI_TAG,
          st[2].MPI_SOURCE);
    for (int i = 0; i < N; i++)
        CHECK(in[i] == 1000 * !left + 10 * rank + i, "in[%d]=%d", i, in[i]);
    CHECK(ring_in == (rank + size - 1) % size, "ring %d", ring_in);

    /* Waitany over one native and one bridge request, then Testall. */
    if (rank == 0) {
        double v[3] = {1.5, 2.5, 3.5}, w[3] = {0};
        int self_in = -1, self_out = 42, idx, done = 0;
        MPI_Request r[2];
        MPI_Irecv(&self_in, 1, MPI_INT, 0, 9, MPI_COMM_SELF, &r[0]);
        MPI_Irecv(w, 3, MPI_DOUBLE, 0, 11, inter, &r[1]);
        MPI_Send(v, 3, MPI_DOUBLE, 0, 11, inter);
        MPI_Send(&self_out, 1, MPI_INT, 0, 9, MPI_COMM_SELF);
        for (int k = 0; k < 2; k++) {
            MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE);
            CHECK(idx == 0 || idx == 1, "index %d", idx);
        }
        CHECK(self_in == 42 && w[0] == 1.5 && w[2] == 3.5, "waitany data");
        /* A vector type: every other int of 8. */
        MPI_Datatype vec;
        MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int strided[8] = {0, -1, 1, -1, 2, -1, 3, -1}, got[8] = {9, 9, 9, 9, 9, 9, 9, 9};
        MPI_Irecv(got, 1, vec, 0, 12, inter, &r[0]);
        MPI_Send(strided, 1, vec, 0, 12, inter);
        while (!done)
            MPI_Testall(1, r, &done, MPI_STATUSES_IGNORE);
        CHECK(got[0] == 0 && got[2] == 1 && got[6] == 3 && got[1] == 9 && got[7] == 9,
              "vector %d %d %d %d", got[0], got[2], got[6], got[1]);
        MPI_Type_free(&vec);
    }
}

/* One broadcast from rank `root` of job `from_left`: the root fills `buf`
 * with `fill(seed)`, the receiving group checks it with `same`, the rest of
 * the root's group checks that its buffer was not touched. */
static void bcast_case(void *buf, void *want, int count, MPI_Datatype dt, size_t bytes,
                       int from_left, int root, const char *what)
{
    int role;
    if (left == from_left)
        role = rank == root ? MPI_ROOT : MPI_PROC_NULL;
    else
        role = root;
    unsigned char *b = buf;
    if (role != MPI_ROOT)
        memset(b, 0xA5, bytes);
    int rc = MPI_Bcast(buf, count, dt, role, inter);
    CHECK(rc == MPI_SUCCESS, "%s: bcast from job %d rank %d: rc %d", what, !from_left, root, rc);
    if (role == MPI_PROC_NULL) {
        for (size_t i = 0; i < bytes; i++)
            CHECK(b[i] == 0xA5, "%s: a non-root rank of the root's job received byte %zu", what, i);
    } else if (role != MPI_ROOT) {
        CHECK(memcmp(buf, want, bytes) == 0, "%s: data from job %d rank %d differs", what,
              !from_left, root);
    }
}

struct rec {
    int i;
    double d;
    char c[3];
};

static void coll(void)
{
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);

    /* Barrier: the second job's ranks arrive 0.5 s late; nobody leaves
     * before they arrived. */
    CHECK(MPI_Barrier(inter) == MPI_SUCCESS, "first barrier");
    double t0 = MPI_Wtime();
    if (!left)
        usleep(500000);
    CHECK(MPI_Barrier(inter) == MPI_SUCCESS, "barrier");
    double waited = MPI_Wtime() - t0;
    if (left)
        CHECK(waited > 0.4, "left the barrier after %.3f s, before the other job entered", waited);

    enum { N = 1000, BIG = 1 << 20 };
    int ints[N], want_ints[N];
    double dbl[N], want_dbl[N];
    char *big = malloc(BIG), *want_big = malloc(BIG);
    CHECK(big && want_big, "malloc");
    MPI_Datatype vec, recty, rec_resized;
    MPI_Type_vector(N / 2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int bl[3] = {1, 1, 3};
    MPI_Aint disp[3] = {offsetof(struct rec, i), offsetof(struct rec, d), offsetof(struct rec, c)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct(3, bl, disp, types, &recty);
    MPI_Type_create_resized(recty, 0, sizeof(struct rec), &rec_resized);
    MPI_Type_commit(&rec_resized);
    struct rec recs[16], want_recs[16];

    for (int from_left = 0; from_left < 2; from_left++) {
        int rootsize = left == from_left ? size : rsize;
        for (int root = 0; root < rootsize; root++) {
            int seed = 100 * from_left + root + 1;
            for (int i = 0; i < N; i++) {
                want_ints[i] = seed * 100000 + i;
                want_dbl[i] = seed + i / 7.0;
            }
            for (int i = 0; i < BIG; i++)
                want_big[i] = (char) (seed * 31 + i * 7);
            memset(want_recs, 0, sizeof want_recs);
            for (int i = 0; i < 16; i++) {
                want_recs[i].i = seed * -1000 - i;
                want_recs[i].d = seed * 1e300 / (i + 1);
                memcpy(want_recs[i].c, (char[3]){'a' + i, 'b', (char) seed}, 3);
            }
            int is_root = left == from_left && rank == root;
            if (is_root) {
                memcpy(ints, want_ints, sizeof ints);
                memcpy(dbl, want_dbl, sizeof dbl);
                memcpy(big, want_big, BIG);
                memcpy(recs, want_recs, sizeof recs);
            }
            bcast_case(ints, want_ints, N, MPI_INT, sizeof ints, from_left, root, "MPI_INT");
            bcast_case(dbl, want_dbl, N, MPI_DOUBLE, sizeof dbl, from_left, root, "MPI_DOUBLE");
            bcast_case(big, want_big, BIG, MPI_CHAR, BIG, from_left, root, "1 MiB MPI_CHAR");
            /* The vector: every other int; the gaps are not sent. */
            int vin[N];
            if (is_root)
                memcpy(vin, want_ints, sizeof vin);
            int want_v[N];
            for (int i = 0; i < N; i++)
                want_v[i] = i % 2 ? (int) 0xA5A5A5A5 : want_ints[i];
            bcast_case(vin, want_v, 1, vec, sizeof vin, from_left, root, "vector");
            /* The struct: padding is not data; compare field by field. */
            struct rec rin[16];
            if (is_root)
                memcpy(rin, want_recs, sizeof rin);
            else
                memset(rin, 0, sizeof rin);
            int role = left == from_left ? (rank == root ? MPI_ROOT : MPI_PROC_NULL) : root;
            CHECK(MPI_Bcast(rin, 16, rec_resized, role, inter) == MPI_SUCCESS, "struct bcast");
            if (left != from_left)
                for (int i = 0; i < 16; i++)
                    CHECK(rin[i].i == want_recs[i].i && rin[i].d == want_recs[i].d &&
                              !memcmp(rin[i].c, want_recs[i].c, 3),
                          "struct element %d from job %d rank %d", i, !from_left, root);
        }
    }
    MPI_Type_free(&vec);
    MPI_Type_free(&recty);
    MPI_Type_free(&rec_resized);
    free(big);
    free(want_big);

    /* A root that is no rank of the remote group, and one that is neither
     * MPI_ROOT nor MPI_PROC_NULL: MPI_ERR_ROOT at once, at every rank. */
    int x = 7, cls = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING];
    int bad[2] = {rsize + 3, -77};
    for (int k = 0; k < 2; k++) {
        int rc = MPI_Bcast(&x, 1, MPI_INT, bad[k], inter);
        CHECK(rc != MPI_SUCCESS, "MPI_Bcast with root %d succeeded", bad[k]);
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        CHECK(cls == MPI_ERR_ROOT, "root %d: class %d, not MPI_ERR_ROOT: %s", bad[k], cls, msg);
        if (rank == 0)
            printf("BAD ROOT %d: %s\n", bad[k], msg);
    }
    /* Still usable after. */
    CHECK(MPI_Barrier(inter) == MPI_SUCCESS, "barrier after the bad roots");

    /* An empty broadcast (MPI lets it name no buffer) from the second job. */
    int rc0 = MPI_Bcast(NULL, 0, MPI_INT, left ? 0 : (rank == 0 ? MPI_ROOT : MPI_PROC_NULL), inter);
    CHECK(rc0 == MPI_SUCCESS, "empty bcast: rc %d", rc0);

    /* The root (job left, rank 0) sends 8 ints; the other job receives
     * into 4: a truncation error at every receiving rank, not a hang. */
    int eight[8] = {1, 2, 3, 4, 5, 6, 7, 8}, four[4];
    if (left) {
        int rc = MPI_Bcast(eight, 8, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
        CHECK(rc == MPI_SUCCESS, "the root's side of a truncated bcast: rc %d", rc);
    } else {
        int rc = MPI_Bcast(four, 4, MPI_INT, 0, inter);
        CHECK(rc != MPI_SUCCESS, "a bcast of 8 ints into 4 succeeded");
        MPI_Error_string(rc, msg, &len);
        CHECK(strstr(msg, "trunc") || strstr(msg, "Trunc") || strstr(msg, "larger"),
              "truncation message: %s", msg);
        if (rank == 0)
            printf("TRUNCATED: %s\n", msg);
    }
    fflush(stdout);
}

static void expect_refused(int rc, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK(rc != MPI_SUCCESS, "%s succeeded on an Isthmus intercommunicator", call);
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, call) && strstr(msg, "not supported on an Isthmus intercommunicator"),
          "%s: message %s", call, msg);
    if (rank == 0)
        printf("REFUSED %s: %s\n", call, msg);
    fflush(stdout);
}

static void refused(void)
{
    int x = 0;
    MPI_Comm c;
    MPI_Request r;
    MPI_Message m;
    MPI_Status st;
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    expect_refused(MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c),
                   "MPI_Comm_split_type");
    {
        /* The remote group is an Isthmus group of the other job's ranks. */
        MPI_Group g;
        int gs = -1, gr = -1, rs = -1;
        CHECK(MPI_Comm_remote_group(inter, &g) == MPI_SUCCESS, "MPI_Comm_remote_group");
        MPI_Comm_remote_size(inter, &rs);
        MPI_Group_size(g, &gs);
        MPI_Group_rank(g, &gr);
        CHECK(gs == rs && gr == MPI_UNDEFINED, "remote group: rank %d of %d", gr, gs);
        MPI_Group_free(&g);
    }
    /* (Persistent requests work now: tests/c/persist.c.) */
    (void) r;
    (void) m;
    (void) st;
    expect_refused(MPI_Cart_create(inter, 1, &size, &x, 0, &c), "MPI_Cart_create");
    {
        MPI_Win w;
        expect_refused(MPI_Win_create(&x, sizeof x, 1, MPI_INFO_NULL, inter, &w), "MPI_Win_create");
    }
    {
        MPI_File f;
        expect_refused(MPI_File_open(inter, "/nonexistent", MPI_MODE_RDONLY, MPI_INFO_NULL, &f),
                       "MPI_File_open");
    }
    /* Point-to-point with a bad rank: an error naming it. */
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, rsize + 3, 0, inter);
    CHECK(rc != MPI_SUCCESS, "send to a rank that does not exist succeeded");
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "MPI_Send"), "message %s", msg);
    if (rank == 0)
        printf("ERROR MPI_Send: %s\n", msg);
    /* Native calls on ordinary communicators are untouched. */
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "native barrier");
}

/* Generated by tests/c_api.rs from mpi.h: calls every function that
 * mpi-functions.txt refuses, on `inter`, each checked by expect_refused. */
void call_every_refused(MPI_Comm inter, void (*check)(int rc, const char *call)) __attribute__((weak));

static void refused_all(void)
{
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    CHECK(call_every_refused != NULL, "built without the generated calls");
    call_every_refused(inter, expect_refused);
}

enum { THREADS = 2, ROUNDS = 200 };
static MPI_Comm thread_comm[THREADS];

static void *exchange_thread(void *arg)
{
    int t = (int) (long) arg, v;
    MPI_Comm c = thread_comm[t];
    for (int i = 0; i < ROUNDS; i++) {
        int out = 100000 * t + i;
        MPI_Request r;
        MPI_Irecv(&v, 1, MPI_INT, rank, i, c, &r);
        MPI_Send(&out, 1, MPI_INT, rank, i, c);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(v == out, "thread %d round %d got %d", t, i, v);
    }
    return NULL;
}

static void threads(void)
{
    int provided;
    pthread_t th[THREADS];
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    CHECK(rsize == size, "the threads scenario wants jobs of equal size");
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_dup(inter, &thread_comm[t]);
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, exchange_thread, (void *) t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_free(&thread_comm[t]);
}

static void killed(int errors_return)
{
    if (errors_return)
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    if (left) {
        /* Receive from every remote rank until one of them fails. */
        for (int round = 0;; round++) {
            for (int q = 0; q < rsize; q++) {
                int v;
                int rc = MPI_Recv(&v, 1, MPI_INT, q, 1, inter, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) {
                    char msg[MPI_MAX_ERROR_STRING];
                    int len = 0;
                    MPI_Error_string(rc, msg, &len);
                    printf("GOT ERROR rank %d round %d: %s\n", rank, round, msg);
                    return;
                }
            }
        }
    } else {
        for (int round = 0;; round++) {
            if (round == 20) {
                MPI_Barrier(MPI_COMM_WORLD);
                if (rank == 1)
                    raise(SIGKILL);
            }
            for (int q = 0; q < rsize; q++)
                MPI_Send(&round, 1, MPI_INT, q, 1, inter);
            usleep(2000);
        }
    }
}

/* The finalize scenario's messages: A small ones (most past the
 * receiver's 4 MiB of credit), then two of 2 MiB (rendezvous) around a
 * synchronous small one, then C small ones (more than the 4096
 * announcements a sender may have outstanding). */
enum { FIN_SMALL = 1024, FIN_BIG = 2 << 20, FIN_A = 6000, FIN_C = 10000 };
enum { FIN_TOTAL = FIN_A + 3 + FIN_C };

static int fin_len(int i)
{
    return (i == FIN_A || i == FIN_A + 2) ? FIN_BIG : FIN_SMALL;
}

static void fin_fill(unsigned char *b, int i, int len)
{
    for (int j = 0; j < len; j++)
        b[j] = (unsigned char)(i * 31 + j + rank);
    memcpy(b, &i, sizeof i);
}

static void finalize_delivery(void)
{
    static unsigned char out[FIN_BIG], in[FIN_BIG], want[FIN_BIG];
    CHECK(rsize == size, "the finalize scenario wants jobs of equal size");
    if (left) {
        for (int i = 0; i < FIN_TOTAL; i++) {
            int len = fin_len(i);
            fin_fill(out, i, len);
            int rc = i == FIN_A + 1 ? MPI_Ssend(out, len, MPI_BYTE, rank, 3, inter)
                                    : MPI_Send(out, len, MPI_BYTE, rank, 3, inter);
            CHECK(rc == MPI_SUCCESS, "send %d", i);
        }
        return;
    }
    /* Asleep while the first small sends complete; the sender then waits
     * in its rendezvous-size and synchronous sends for these receives. */
    sleep(2);
    for (int i = 0; i < FIN_TOTAL; i++) {
        if (i == FIN_A + 3)
            sleep(2); /* the sender completes the rest and finalizes */
        int len = fin_len(i), count = -1;
        MPI_Status st;
        CHECK(MPI_Recv(in, FIN_BIG, MPI_BYTE, rank, 3, inter, &st) == MPI_SUCCESS, "recv %d", i);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == len, "message %d: %d bytes, want %d", i, count, len);
        fin_fill(want, i, len);
        int got;
        memcpy(&got, in, sizeof got);
        CHECK(got == i, "message %d arrived as number %d", i, got);
        CHECK(!memcmp(in, want, len), "message %d corrupted", i);
    }
}

/* The isendflood scenario: FLOOD_SMALL sends of 1 KiB, then FLOOD_BIG
 * of 1 MiB, all from slices of one 1 MiB buffer (MPI lets sends share a
 * buffer they do not change), so that what the sender's memory grows by
 * is the library's own. */
enum { FLOOD_SMALL = 16384, FLOOD_BIG = 112, FLOOD_KIB = 1024, FLOOD_MIB = 1 << 20 };

/* Peak resident set size so far, in KiB (VmHWM of /proc/self/status). */
static long vm_hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    CHECK(f != NULL, "cannot open /proc/self/status");
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

static unsigned char flood_byte(int j)
{
    return (unsigned char)(j * 7 + j / 1024 + rank * 13);
}

static int flood_len(int i)
{
    return i < FLOOD_SMALL ? FLOOD_KIB : FLOOD_MIB;
}

/* Offset of message i's bytes in the 1 MiB pattern. */
static int flood_off(int i)
{
    return i < FLOOD_SMALL ? (i % 1024) * FLOOD_KIB : 0;
}

static void isend_flood(void)
{
    enum { N = FLOOD_SMALL + FLOOD_BIG };
    static unsigned char pattern[FLOOD_MIB], in[FLOOD_MIB];
    CHECK(rsize == size, "the isendflood scenario wants jobs of equal size");
    for (int j = 0; j < FLOOD_MIB; j++)
        pattern[j] = flood_byte(j);
    if (left) {
        MPI_Request *reqs = malloc(N * sizeof *reqs);
        CHECK(reqs != NULL, "malloc");
        for (int i = 0; i < N; i++)
            reqs[i] = MPI_REQUEST_NULL; /* touched now: not counted as the library's */
        long base = vm_hwm_kib();
        for (int i = 0; i < N; i++) {
            /* Three synchronous ones: the first (eager, within credit), one
             * past the credit and the last (rendezvous). */
            int sync = i == 0 || i == FLOOD_SMALL / 2 || i == N - 1;
            int rc = sync ? MPI_Issend(pattern + flood_off(i), flood_len(i), MPI_BYTE, rank, 4,
                                       inter, &reqs[i])
                          : MPI_Isend(pattern + flood_off(i), flood_len(i), MPI_BYTE, rank, 4,
                                      inter, &reqs[i]);
            CHECK(rc == MPI_SUCCESS, "isend %d", i);
        }
        long posted = vm_hwm_kib();
        CHECK(MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall");
        long peak = vm_hwm_kib();
        printf("FLOOD rank %d base_kib %ld posted_kib %ld peak_kib %ld messages %d payload_kib %ld\n",
               rank, base, posted, peak, N,
               (long)FLOOD_SMALL + (long)FLOOD_BIG * 1024);
        fflush(stdout);
        free(reqs);
        return;
    }
    sleep(3); /* every isend is posted meanwhile; most cannot complete */
    for (int i = 0; i < N; i++) {
        int len = flood_len(i), count = -1;
        MPI_Status st;
        CHECK(MPI_Recv(in, FLOOD_MIB, MPI_BYTE, rank, 4, inter, &st) == MPI_SUCCESS, "recv %d", i);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == len, "message %d: %d bytes, want %d", i, count, len);
        /* The sender's pattern (its rank is ours). */
        for (int j = 0; j < len; j++)
            CHECK(in[j] == flood_byte(flood_off(i) + j), "message %d corrupted at byte %d", i, j);
    }
}

/* The pendingbound scenario: more 1 KiB isends than the receiver's
 * credit and the bound on pending sends hold together. */
static void pending_bound(void)
{
    enum { MAX = 20000, KIB = 1024, TAG = 6, COUNT_TAG = 7 };
    static unsigned char pattern[KIB * 1024], in[KIB];
    for (int j = 0; j < KIB * 1024; j++)
        pattern[j] = flood_byte(j);
    if (left) {
        static MPI_Request reqs[MAX];
        int started = 0, rc = MPI_SUCCESS;
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        for (; started < MAX; started++) {
            rc = MPI_Isend(pattern + (started % 1024) * KIB, KIB, MPI_BYTE, rank, TAG, inter,
                           &reqs[started]);
            if (rc != MPI_SUCCESS)
                break;
        }
        CHECK(rc != MPI_SUCCESS, "%d isends to a sleeping receiver all started", MAX);
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        CHECK(strstr(msg, "ISTHMUS_MAX_PENDING_SENDS") != NULL, "isend %d failed with: %s",
              started, msg);
        printf("PENDING rank %d started %d refused: %s\n", rank, started, msg);
        /* A blocking send is not refused: it waits for its match. */
        CHECK(MPI_Send(&started, 1, MPI_INT, rank, COUNT_TAG, inter) == MPI_SUCCESS, "count");
        CHECK(MPI_Waitall(started, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall");
        return;
    }
    sleep(2); /* the isends run into the bound meanwhile */
    int started = -1, flag = 1;
    CHECK(MPI_Recv(&started, 1, MPI_INT, rank, COUNT_TAG, inter, MPI_STATUS_IGNORE) == MPI_SUCCESS,
          "count");
    CHECK(started > 64 && started < MAX, "sender started %d isends", started);
    for (int i = 0; i < started; i++) {
        MPI_Status st;
        int count = -1;
        CHECK(MPI_Recv(in, KIB, MPI_BYTE, rank, TAG, inter, &st) == MPI_SUCCESS, "recv %d", i);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == KIB, "message %d: %d bytes", i, count);
        CHECK(!memcmp(in, pattern + (i % 1024) * KIB, KIB), "message %d corrupted", i);
    }
    /* The refused send never came. */
    CHECK(MPI_Iprobe(rank, TAG, inter, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag,
          "a message past the %d started ones arrived", started);
}

/* Byte j of large message i. */
static unsigned char large_byte(int i, size_t j)
{
    return (unsigned char)(i * 131 + j / 7 + j % 251);
}

static void large(void)
{
    enum { NV = 300000, TAG = 40 };
    static const size_t sizes[] = {65535, 65536, 65537, 1 << 20, (4 << 20) + 3};
    const int n = (int)(sizeof sizes / sizeof sizes[0]);
    CHECK(rsize == size, "the large scenario wants jobs of equal size");
    unsigned char *buf = malloc((4 << 20) + 3), *want = malloc((4 << 20) + 3);
    int *vec = malloc(2 * NV * sizeof(int));
    CHECK(buf && want && vec, "malloc");
    for (int i = 0; i < n; i++) {
        size_t len = sizes[i];
        for (size_t j = 0; j < len; j++)
            want[j] = large_byte(i, j);
        MPI_Status st;
        int count;
        for (int turn = 0; turn < 2; turn++) {
            if (turn == !left) {
                /* Our turn to send: the pattern first, the echo after. */
                memcpy(buf, want, len);
                MPI_Request req;
                if (i % 3 == 0) {
                    CHECK(MPI_Send(buf, (int)len, MPI_BYTE, rank, TAG + i, inter) == MPI_SUCCESS,
                          "send %zu", len);
                } else if (i % 3 == 1) {
                    CHECK(MPI_Isend(buf, (int)len, MPI_BYTE, rank, TAG + i, inter, &req) ==
                              MPI_SUCCESS,
                          "isend %zu", len);
                    CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait %zu", len);
                } else {
                    CHECK(MPI_Ssend(buf, (int)len, MPI_BYTE, rank, TAG + i, inter) ==
                              MPI_SUCCESS,
                          "ssend %zu", len);
                }
            } else {
                memset(buf, 0, len);
                CHECK(MPI_Recv(buf, (int)len, MPI_BYTE, rank, TAG + i, inter, &st) == MPI_SUCCESS,
                      "recv %zu", len);
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK((size_t)count == len, "message %d: %d bytes, not %zu", i, count, len);
                CHECK(!memcmp(buf, want, len), "message %d (%zu bytes) corrupted", i, len);
            }
        }
    }
    /* Every other int of 2*NV: sent packed, received into the same layout. */
    MPI_Datatype every_other;
    MPI_Type_vector(NV, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    for (int turn = 0; turn < 2; turn++) {
        if (turn == !left) {
            for (int j = 0; j < 2 * NV; j++)
                vec[j] = j % 2 ? -1 : j * 7 + rank;
            CHECK(MPI_Send(vec, 1, every_other, rank, TAG + 99, inter) == MPI_SUCCESS,
                  "vector send");
        } else {
            for (int j = 0; j < 2 * NV; j++)
                vec[j] = -2;
            CHECK(MPI_Recv(vec, 1, every_other, rank, TAG + 99, inter, MPI_STATUS_IGNORE) ==
                      MPI_SUCCESS,
                  "vector recv");
            for (int j = 0; j < 2 * NV; j++)
                CHECK(vec[j] == (j % 2 ? -2 : j * 7 + rank), "vector int %d is %d", j, vec[j]);
        }
    }
    MPI_Type_free(&every_other);
    free(buf);
    free(want);
    free(vec);
}

int main(int argc, char **argv)
{
    int handle, rc, provided;
    /* One write per line: the ranks of a job share the launcher's pipe,
     * and a full buffer flushed mid-line would interleave with another
     * rank's output (the refusal lists are longer than a pipe buffer). */
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(argc == 4, "usage: exchange SCENARIO GROUP PEER");
    const char *scenario = argv[1], *group = argv[2], *peer = argv[3];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        /* The MPI library this job really runs on (tests/matrix.rs checks
         * it: the standard ABI's binaries run on two). */
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(version, &len);
        version[strcspn(version, "\n")] = '\0';
        printf("LIBRARY %s\n", version);
    }
    left = strcmp(group, peer) < 0;
    rc = Isthmus_Register(group, MPI_COMM_WORLD, &handle);
    CHECK(rc == MPI_SUCCESS, "register");
    rc = Isthmus_Intercomm_create_timeout(handle, peer, 120.0, &inter);
    CHECK(rc == MPI_SUCCESS, "intercomm create");
    int flag = 0;
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "not an intercommunicator");
    MPI_Comm_remote_size(inter, &rsize);
    if (!strcmp(scenario, "mixed"))
        mixed();
    else if (!strcmp(scenario, "refused"))
        refused();
    else if (!strcmp(scenario, "refused-all"))
        refused_all();
    else if (!strcmp(scenario, "coll"))
        coll();
    else if (!strcmp(scenario, "threads"))
        threads();
    else if (!strcmp(scenario, "finalize"))
        finalize_delivery();
    else if (!strcmp(scenario, "isendflood"))
        isend_flood();
    else if (!strcmp(scenario, "pendingbound"))
        pending_bound();
    else if (!strcmp(scenario, "large"))
        large();
    else if (!strcmp(scenario, "killed-return"))
        killed(1);
    else if (!strcmp(scenario, "killed-fatal"))
        killed(0);
    else
        CHECK(0, "unknown scenario %s", scenario);
    printf("PASS %s rank %d\n", scenario, rank);
    fflush(stdout);
    if (!strncmp(scenario, "killed", 6)) {
        /* The other job is gone: no collective leave. */
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_free(&inter);
    CHECK(Isthmus_Leave(handle) == MPI_SUCCESS, "leave");
    MPI_Finalize();
    return 0;
}

/* PVM 3.4 group-server reference benchmark (run via pvm_groups.sh).
 *
 * usage: pvm_groups [iters [warmup]]        measure, print RESULT lines
 *        pvm_groups --halt                  halt the pvmd we are attached to
 *        (internal) pvm_groups --barrier-child <group> <count> <loops>
 *
 * Every group call goes task -> local pvmd -> pvmgs (the group server task)
 * and back, so these numbers are the PVM analogue of a vmd name-service RPC.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h> /* before pvm3.h: it declares pvm_catchout(FILE *) only if EOF is defined */
#include <pvm3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_stats.h"

#define FROZEN_BATCH 100 /* calls per timed batch for the frozen lookup */

static void die(const char *what, int rc)
{
    fprintf(stderr, "pvm_groups: %s failed: rc=%d\n", what, rc);
    if (rc < 0) pvm_perror((char *)what);
    pvm_exit();
    exit(1);
}

static int barrier_child(char *group, int count, int loops)
{
    int rc = pvm_joingroup(group);
    if (rc < 0) die("child pvm_joingroup", rc);
    for (int i = 0; i < loops; i++) {
        rc = pvm_barrier(group, count);
        if (rc < 0) die("child pvm_barrier", rc);
    }
    /* final barrier so nobody leaves while others still use the group */
    rc = pvm_lvgroup(group);
    if (rc < 0) die("child pvm_lvgroup", rc);
    pvm_exit();
    return 0;
}

static void bench_barrier(const char *self, const char *name, char *group, int members,
                          int iters, int warmup, double *s)
{
    int nkids = members - 1;
    int tids[8];
    char cnt[16], loops[16];
    snprintf(cnt, sizeof cnt, "%d", members);
    snprintf(loops, sizeof loops, "%d", iters + warmup + 1);
    char *args[] = {"--barrier-child", group, cnt, loops, NULL};

    int rc = pvm_joingroup(group);
    if (rc < 0) die("pvm_joingroup(barrier)", rc);
    int got = pvm_spawn((char *)self, args, PvmTaskDefault, "", nkids, tids);
    if (got != nkids) {
        fprintf(stderr, "pvm_groups: pvm_spawn(%s) started %d of %d (first tid/err %d)\n", self,
                got, nkids, got > 0 ? tids[0] : (nkids > 0 ? tids[0] : 0));
        die("pvm_spawn", got < 0 ? got : -1);
    }
    /* first (untimed) barrier: everyone has joined and is looping */
    rc = pvm_barrier(group, members);
    if (rc < 0) die("pvm_barrier(sync)", rc);
    for (int i = 0; i < warmup; i++)
        if ((rc = pvm_barrier(group, members)) < 0) die("pvm_barrier", rc);
    for (int i = 0; i < iters; i++) {
        double t0 = now_us();
        rc = pvm_barrier(group, members);
        s[i] = now_us() - t0;
        if (rc < 0) die("pvm_barrier", rc);
    }
    report_latency(name, s, iters);
    rc = pvm_lvgroup(group);
    if (rc < 0) die("pvm_lvgroup(barrier)", rc);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--halt") == 0) {
        if (pvm_mytid() < 0) return 1;
        pvm_halt();
        return 0;
    }
    if (argc >= 5 && strcmp(argv[1], "--barrier-child") == 0)
        return barrier_child(argv[2], atoi(argv[3]), atoi(argv[4]));

    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    int warmup = argc > 2 ? atoi(argv[2]) : 100;
    if (iters <= 0 || warmup < 0) {
        fprintf(stderr, "usage: %s [iters>0 [warmup>=0]]\n", argv[0]);
        return 2;
    }

    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        perror("readlink /proc/self/exe");
        return 1;
    }
    self[len] = 0;

    int mytid = pvm_mytid();
    if (mytid < 0) die("pvm_mytid (is pvmd running?)", mytid);
    pvm_catchout(stderr); /* children's output -> our stderr */
    fprintf(stderr, "pvm_groups: tid t%x, iters=%d warmup=%d\n", mytid, iters, warmup);

    double *s = calloc((size_t)iters, sizeof *s);
    if (!s) return 1;
    int rc;

    /* join + leave cycle on a fresh group name (the first join also makes
     * libgpvm spawn pvmgs if it is not running yet; that is in warm-up). */
    for (int i = 0; i < warmup + iters; i++) {
        double t0 = now_us();
        if ((rc = pvm_joingroup("isthmus_jl")) < 0) die("pvm_joingroup", rc);
        if ((rc = pvm_lvgroup("isthmus_jl")) < 0) die("pvm_lvgroup", rc);
        if (i >= warmup) s[i - warmup] = now_us() - t0;
    }
    report_latency("pvm_join_leave", s, iters);

    /* lookups in a live (non-frozen) group: each is a pvmgs round trip */
    int inst = pvm_joingroup("isthmus_g");
    if (inst < 0) die("pvm_joingroup(isthmus_g)", inst);

    for (int i = 0; i < warmup + iters; i++) {
        double t0 = now_us();
        rc = pvm_gettid("isthmus_g", inst);
        if (i >= warmup) s[i - warmup] = now_us() - t0;
        if (rc != mytid) die("pvm_gettid", rc);
    }
    report_latency("pvm_gettid", s, iters);

    for (int i = 0; i < warmup + iters; i++) {
        double t0 = now_us();
        rc = pvm_getinst("isthmus_g", mytid);
        if (i >= warmup) s[i - warmup] = now_us() - t0;
        if (rc != inst) die("pvm_getinst", rc);
    }
    report_latency("pvm_getinst", s, iters);

    for (int i = 0; i < warmup + iters; i++) {
        double t0 = now_us();
        rc = pvm_gsize("isthmus_g");
        if (i >= warmup) s[i - warmup] = now_us() - t0;
        if (rc != 1) die("pvm_gsize", rc);
    }
    report_latency("pvm_gsize", s, iters);

    bench_barrier(self, "pvm_barrier_2", "isthmus_b2", 2, iters, warmup, s);
    bench_barrier(self, "pvm_barrier_4", "isthmus_b4", 4, iters, warmup, s);

    /* frozen group: libgpvm caches the membership table in the task after
     * the freeze, so gettid becomes a local table lookup. One call is far
     * below clock resolution/overhead, so time batches of FROZEN_BATCH calls
     * and report per-call time of each batch (n = number of batches). */
    rc = pvm_freezegroup("isthmus_g", -1);
    if (rc < 0) die("pvm_freezegroup", rc);
    long bad = 0;
    for (int i = 0; i < warmup + iters; i++) {
        double t0 = now_us();
        for (int k = 0; k < FROZEN_BATCH; k++) bad += pvm_gettid("isthmus_g", inst) != mytid;
        double dt = (now_us() - t0) / FROZEN_BATCH;
        if (i >= warmup) s[i - warmup] = dt;
    }
    if (bad) {
        fprintf(stderr, "pvm_groups: frozen pvm_gettid returned a wrong tid %ld times\n", bad);
        pvm_exit();
        return 1;
    }
    fprintf(stderr, "pvm_groups: pvm_frozen_lookup timed in batches of %d calls\n", FROZEN_BATCH);
    report_latency("pvm_frozen_lookup", s, iters);

    pvm_lvgroup("isthmus_g");
    free(s);
    pvm_exit();
    return 0;
}

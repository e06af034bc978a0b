/* Times repeated launches of a command (fork/exec/wait), CLOCK_MONOTONIC.
 *
 * usage: launch_timer <name> <reps> <warmup> <timeout_s> -- cmd [args...]
 *
 * Runs `cmd` warmup+reps times, each in its own process group; stdout/stderr
 * of the command go to our stderr. A run exceeding timeout_s gets SIGTERM
 * (then SIGKILL after 5 s) to its process group and is a failure. Prints
 *   RESULT <name> median_us=... p99_us=... n=<reps>
 * Exits non-zero if any run fails. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_stats.h"

static int wait_with_deadline(pid_t pid, double deadline_us, int *status)
{
    int term_sent = 0;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return term_sent ? -1 : 0;
        if (r < 0 && errno != EINTR) return -2;
        double now = now_us();
        if (now > deadline_us && !term_sent) {
            kill(-pid, SIGTERM);
            term_sent = 1;
            deadline_us = now + 5e6;
        } else if (now > deadline_us && term_sent) {
            kill(-pid, SIGKILL);
        }
        usleep(200); /* 0.2 ms polling granularity, negligible vs launches */
    }
}

int main(int argc, char **argv)
{
    if (argc < 7 || strcmp(argv[5], "--") != 0) {
        fprintf(stderr, "usage: %s <name> <reps> <warmup> <timeout_s> -- cmd [args...]\n", argv[0]);
        return 2;
    }
    const char *name = argv[1];
    int reps = atoi(argv[2]), warmup = atoi(argv[3]);
    double limit_us = atof(argv[4]) * 1e6;
    char **cmd = &argv[6];
    if (reps <= 0 || warmup < 0 || limit_us <= 0) return 2;
    double *s = calloc((size_t)reps, sizeof *s);
    if (!s) return 1;

    for (int i = 0; i < warmup + reps; i++) {
        fflush(NULL);
        double t0 = now_us();
        pid_t pid = fork();
        if (pid < 0) { perror("fork"); return 1; }
        if (pid == 0) {
            setpgid(0, 0);
            dup2(2, 1); /* keep our stdout for RESULT lines only */
            execvp(cmd[0], cmd);
            perror(cmd[0]);
            _exit(127);
        }
        setpgid(pid, pid); /* avoid racing the child */
        int st = 0;
        int rc = wait_with_deadline(pid, t0 + limit_us, &st);
        double dt = now_us() - t0;
        if (rc != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "launch_timer: %s run %d failed (%s, status 0x%x)\n", name, i,
                    rc == -1 ? "timeout" : "exit", st);
            return 1;
        }
        if (i >= warmup) s[i - warmup] = dt;
    }
    report_latency(name, s, reps);
    return 0;
}

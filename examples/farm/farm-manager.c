/*
 * The farm's manager in plain C (scripts/demo-rm.sh, part 3 of the demo):
 * built with one MPI implementation, it starts its workers, built with
 * another, with plain MPI_Comm_spawn (libisthmus asks the virtual
 * machine's resource manager, whose tasker of the workers' implementation
 * starts them), farms out work items over the intercommunicator, stops the
 * workers, and waits for the notifications of their exits (isthmus.h:
 * subscribed before the spawn, so that none is missed).
 *
 *   farm-manager WORKER NWORKERS NITEMS     (one rank)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "isthmus.h"

enum { WORK = 1, RESULT = 2, STOP = 3 };

/* What a worker computes for item n: the sum of the squares 1..n. */
static long long expected(long long n)
{
    return n * (n + 1) * (2 * n + 1) / 6;
}

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, text, &len);
        fprintf(stderr, "farm-manager: %s: %s\n", what, text);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* The job of the virtual machine running `worker` (the spawn does not say). */
static Isthmus_Job job_of(const char *worker)
{
    Isthmus_Job_info jobs[64];
    int n = 0;
    check(Isthmus_Jobs(0, jobs, 64, &n), "Isthmus_Jobs");
    for (int i = 0; i < n && i < 64; i++)
        if (strstr(jobs[i].program, worker) && jobs[i].state <= ISTHMUS_JOB_RUNNING)
            return jobs[i].id;
    return -1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    if (argc != 4) {
        fprintf(stderr, "usage: farm-manager WORKER NWORKERS NITEMS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *worker = argv[1];
    int nworkers = atoi(argv[2]);
    long long nitems = atoll(argv[3]);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* Subscribe first: no exit can come before we listen. */
    int sub;
    check(Isthmus_Subscribe(ISTHMUS_EVENT_TASK_EXIT | ISTHMUS_EVENT_JOB_EXIT, NULL, 0, NULL, &sub),
          "Isthmus_Subscribe");

    MPI_Comm workers;
    char *args[] = {NULL};
    check(MPI_Comm_spawn(worker, args, nworkers, MPI_INFO_NULL, 0, MPI_COMM_SELF, &workers,
                         MPI_ERRCODES_IGNORE),
          "MPI_Comm_spawn");
    Isthmus_Job job = job_of(worker);
    printf("manager: spawned %d workers with MPI_Comm_spawn (job %lld of the virtual machine)\n",
           nworkers, (long long)job);

    /* The farm: one item per worker, the next to whoever answers. */
    long long next = 1, done = 0, bad = 0;
    for (int w = 0; w < nworkers; w++) {
        long long item = next <= nitems ? next++ : 0;
        MPI_Send(&item, 1, MPI_LONG_LONG, w, item ? WORK : STOP, workers);
    }
    while (done < nitems) {
        long long reply[2];
        MPI_Status st;
        MPI_Recv(reply, 2, MPI_LONG_LONG, MPI_ANY_SOURCE, RESULT, workers, &st);
        bad += reply[1] != expected(reply[0]);
        done++;
        long long item = next <= nitems ? next++ : 0;
        MPI_Send(&item, 1, MPI_LONG_LONG, st.MPI_SOURCE, item ? WORK : STOP, workers);
    }
    printf("manager: %lld items done by %d workers, %lld wrong\n", done, nworkers,
           bad);
    MPI_Comm_disconnect(&workers);

    /* React to the workers' exits: each rank's, then the job's. */
    int exited = 0, failed = 0, job_done = 0;
    while (!job_done) {
        Isthmus_Event e;
        check(Isthmus_Event_next(sub, 30.0, &e), "Isthmus_Event_next");
        if (e.kind == ISTHMUS_EVENT_NONE) {
            fprintf(stderr, "farm-manager: no exit notification within 30 s\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (e.job != job)
            continue;
        if (e.kind == ISTHMUS_EVENT_TASK_EXIT) {
            int ok = e.exit_kind == ISTHMUS_EXIT_CODE && e.exit_value == 0;
            exited++;
            failed += !ok;
            printf("manager: notified: worker rank %d exited (%s %d)\n", e.rank,
                   e.exit_kind == ISTHMUS_EXIT_SIGNAL ? "signal" : "code", e.exit_value);
        } else if (e.kind == ISTHMUS_EVENT_JOB_EXIT) {
            job_done = 1;
            printf("manager: notified: worker job %lld ended (%s)\n", (long long)e.job,
                   e.state == ISTHMUS_JOB_EXITED ? "exited" : "did not exit cleanly");
            failed += e.state != ISTHMUS_JOB_EXITED;
        }
    }
    Isthmus_Unsubscribe(sub);
    printf("manager: %d worker exits seen, %d failed\n", exited, failed);
    MPI_Finalize();
    return bad || failed || exited != nworkers;
}

/*
 * The virtual machine's calls from C (isthmus.h), one process:
 *   vmcalls run SLEEPER GHOST
 *        SLEEPER is a program of an MPI implementation that sleeps (spawn.c,
 *        run as `SLEEPER sleeper`), GHOST a host name to add and delete.
 *        Lists the hosts; subscribes to host events, to the exits of a
 *        2-rank SLEEPER job it spawns (also through a callback); waits until
 *        both ranks run, signals and kills the job, and prints each event:
 *          EVENT task_exit job=J rank=R exit=K/V
 *          EVENT job_exit job=J state=S exit=K/V reason=...
 *        Spawns /bin/sh (exec) with an environment that makes it exit 3:
 *          EVENT task_exit ... exit=1/3
 *        Adds and deletes GHOST:
 *          EVENT host_added host=GHOST | EVENT host_deleted host=GHOST reason=...
 *        then every error case, each as
 *          ERROR <case> class=<c> <MPI_Error_string>
 *        and "PASS vmcalls". Checks that fail print "FAIL ..." and exit 1.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "check.h"
#include "isthmus.h"

static int rank; /* check.h names it */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void print_event(const char *via, const Isthmus_Event *e)
{
    switch (e->kind) {
    case ISTHMUS_EVENT_TASK_EXIT:
        printf("%s task_exit job=%lld rank=%d exit=%d/%d\n", via, (long long)e->job, e->rank,
               e->exit_kind, e->exit_value);
        break;
    case ISTHMUS_EVENT_JOB_EXIT:
        printf("%s job_exit job=%lld state=%d exit=%d/%d reason=%s\n", via, (long long)e->job,
               e->state, e->exit_kind, e->exit_value, e->reason);
        break;
    case ISTHMUS_EVENT_HOST_ADDED:
        printf("%s host_added host=%s\n", via, e->host);
        break;
    case ISTHMUS_EVENT_HOST_DELETED:
        printf("%s host_deleted host=%s reason=%s\n", via, e->host, e->reason);
        break;
    default:
        printf("%s kind=%#x\n", via, e->kind);
    }
}

/* What the callback saw. */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static int seen_task_exits, seen_job_exits;
static pthread_t main_thread;
static int callback_on_main;

static void on_event(const Isthmus_Event *e, void *arg)
{
    pthread_mutex_lock(&seen_lock);
    seen_task_exits += e->kind == ISTHMUS_EVENT_TASK_EXIT;
    seen_job_exits += e->kind == ISTHMUS_EVENT_JOB_EXIT;
    callback_on_main |= pthread_equal(pthread_self(), main_thread);
    *(int *)arg += 1;
    pthread_mutex_unlock(&seen_lock);
}

/* Waits for the subscription's events until one of kind `until`. */
static void drain(int sub, int until, double seconds)
{
    double end = now() + seconds;
    Isthmus_Event e;
    while (now() < end) {
        int rc = Isthmus_Event_next(sub, end - now() > 0 ? end - now() : 0, &e);
        CHECK(rc == MPI_SUCCESS, "Isthmus_Event_next returned %d", rc);
        if (e.kind == ISTHMUS_EVENT_NONE)
            break;
        print_event("EVENT", &e);
        if (e.kind == until)
            return;
    }
    printf("FAIL no event of kind %#x within %.0f s\n", until, seconds);
    exit(1);
}

static void error(const char *name, int rc)
{
    int class, len;
    char text[MPI_MAX_ERROR_STRING];
    if (rc == MPI_SUCCESS) {
        printf("FAIL %s succeeded\n", name);
        exit(1);
    }
    MPI_Error_class(rc, &class);
    MPI_Error_string(rc, text, &len);
    printf("ERROR %s class=%d %s\n", name, class, text);
}

static Isthmus_Job_info *find(Isthmus_Job job, Isthmus_Job_info *jobs, int n)
{
    for (int i = 0; i < n; i++)
        if (jobs[i].id == job)
            return &jobs[i];
    return NULL;
}

static int run(const char *sleeper, const char *ghost)
{
    main_thread = pthread_self();
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    Isthmus_Host_info hosts[8];
    int nhosts = -1;
    CHECK(Isthmus_Hosts(hosts, 8, &nhosts) == MPI_SUCCESS, "Isthmus_Hosts");
    CHECK(nhosts >= 1, "%d hosts", nhosts);
    printf("HOST %s slots=%d up=%d taskers=%s\n", hosts[0].name, hosts[0].slots, hosts[0].up,
           hosts[0].taskers);

    int host_sub, job_sub, callback_sub, calls = 0;
    CHECK(Isthmus_Subscribe(ISTHMUS_EVENT_HOST_ADDED | ISTHMUS_EVENT_HOST_DELETED, NULL, 0, NULL,
                            &host_sub) == MPI_SUCCESS,
          "subscribe to hosts");

    /* A 2-rank job of the sleeper, its implementation read from the binary. */
    const char *args[] = {"sleeper", NULL};
    Isthmus_Job job = -1;
    int rc = Isthmus_Spawn(sleeper, args, 2, NULL, NULL, "ISTHMUS_TEST_MARK=1", &job);
    CHECK(rc == MPI_SUCCESS && job > 0, "Isthmus_Spawn returned %d, job %lld", rc,
          (long long)job);
    printf("SPAWNED job=%lld\n", (long long)job);
    CHECK(Isthmus_Subscribe(ISTHMUS_EVENT_TASK_EXIT | ISTHMUS_EVENT_JOB_EXIT, &job, 1, NULL,
                            &job_sub) == MPI_SUCCESS,
          "subscribe to the job");
    CHECK(Isthmus_Subscribe_callback(ISTHMUS_EVENT_TASK_EXIT | ISTHMUS_EVENT_JOB_EXIT, &job, 1,
                                     NULL, on_event, &calls, &callback_sub) == MPI_SUCCESS,
          "subscribe with a callback");

    /* Running: both ranks up. */
    Isthmus_Job_info jobs[64];
    int njobs = 0, running = 0;
    for (double end = now() + 60; now() < end && running < 2; usleep(50000)) {
        CHECK(Isthmus_Jobs(0, jobs, 64, &njobs) == MPI_SUCCESS, "Isthmus_Jobs");
        Isthmus_Job_info *j = find(job, jobs, njobs < 64 ? njobs : 64);
        CHECK(j != NULL, "job %lld not listed", (long long)job);
        running = j->running;
        if (running == 2)
            printf("JOB id=%lld ranks=%d running=%d state=%d impl=%s program=%s\n",
                   (long long)j->id, j->ranks, j->running, j->state, j->implementation,
                   j->program);
    }
    CHECK(running == 2, "the job's ranks did not start");
    /* The count without room for the entries. */
    int total = -1;
    CHECK(Isthmus_Jobs(0, NULL, 0, &total) == MPI_SUCCESS && total >= 1, "count only: %d",
          total);

    /* A harmless signal reaches it; then kill it. */
    CHECK(Isthmus_Signal(job, SIGCONT, -1) == MPI_SUCCESS, "Isthmus_Signal");
    CHECK(Isthmus_Kill(job) == MPI_SUCCESS, "Isthmus_Kill");
    drain(job_sub, ISTHMUS_EVENT_JOB_EXIT, 30);

    /* The callback saw the same, on its own thread. */
    for (double end = now() + 10; now() < end; usleep(20000)) {
        pthread_mutex_lock(&seen_lock);
        int done = seen_job_exits > 0;
        pthread_mutex_unlock(&seen_lock);
        if (done)
            break;
    }
    pthread_mutex_lock(&seen_lock);
    printf("CALLBACK task_exits=%d job_exits=%d calls=%d on_main=%d\n", seen_task_exits,
           seen_job_exits, calls, callback_on_main);
    pthread_mutex_unlock(&seen_lock);
    CHECK(Isthmus_Unsubscribe(callback_sub) == MPI_SUCCESS, "unsubscribe the callback");
    CHECK(Isthmus_Unsubscribe(job_sub) == MPI_SUCCESS, "unsubscribe the job");

    /* A program without MPI (exec), with variables of its own. */
    const char *sh_args[] = {"-c", "test \"$FOO\" = 'a;b\\c' && test \"$BAR\" = x && exit 3; exit 1",
                             NULL};
    Isthmus_Job sh = -1;
    rc = Isthmus_Spawn("sh", sh_args, 1, NULL, NULL, "FOO=a\\;b\\\\c; BAR=x", &sh);
    CHECK(rc == MPI_SUCCESS, "Isthmus_Spawn of sh returned %d", rc);
    int sh_sub;
    CHECK(Isthmus_Subscribe(ISTHMUS_EVENT_JOB_EXIT, &sh, 1, NULL, &sh_sub) == MPI_SUCCESS,
          "subscribe to sh");
    /* It may have ended already: then the listing says how. */
    CHECK(Isthmus_Jobs(1, jobs, 64, &njobs) == MPI_SUCCESS, "Isthmus_Jobs(all)");
    Isthmus_Job_info *shj = find(sh, jobs, njobs < 64 ? njobs : 64);
    CHECK(shj != NULL, "sh not listed");
    if (shj->state < ISTHMUS_JOB_EXITED)
        drain(sh_sub, ISTHMUS_EVENT_JOB_EXIT, 30);
    CHECK(Isthmus_Jobs(1, jobs, 64, &njobs) == MPI_SUCCESS, "Isthmus_Jobs(all)");
    shj = find(sh, jobs, njobs < 64 ? njobs : 64);
    printf("SH state=%d exit=%d/%d\n", shj->state, shj->exit_kind, shj->exit_value);
    CHECK(Isthmus_Unsubscribe(sh_sub) == MPI_SUCCESS, "unsubscribe sh");

    /* A host added and deleted. */
    CHECK(Isthmus_Add_host(ghost, 2) == MPI_SUCCESS, "Isthmus_Add_host");
    CHECK(Isthmus_Hosts(hosts, 8, &nhosts) == MPI_SUCCESS, "Isthmus_Hosts");
    int listed = 0;
    for (int i = 0; i < nhosts && i < 8; i++)
        listed |= strcmp(hosts[i].name, ghost) == 0 && hosts[i].slots == 2 && !hosts[i].up;
    CHECK(listed, "the added host is not listed as declared with 2 slots");
    int lost = -1;
    CHECK(Isthmus_Delete_host(ghost, &lost) == MPI_SUCCESS && lost == 0, "Isthmus_Delete_host");
    drain(host_sub, ISTHMUS_EVENT_HOST_ADDED, 10);
    drain(host_sub, ISTHMUS_EVENT_HOST_DELETED, 10);

    /* Nothing more: the deadline is kept. */
    Isthmus_Event e;
    double t0 = now();
    CHECK(Isthmus_Event_next(host_sub, 0.3, &e) == MPI_SUCCESS, "Isthmus_Event_next");
    double waited = now() - t0;
    CHECK(e.kind == ISTHMUS_EVENT_NONE && waited >= 0.29 && waited < 3,
          "a timeout gave kind %#x after %.3f s", e.kind, waited);
    printf("TIMEOUT waited=%.3f\n", waited);

    /* Every error. */
    int cb_sub;
    CHECK(Isthmus_Subscribe_callback(ISTHMUS_EVENT_HOST_ADDED, NULL, 0, NULL, on_event, &calls,
                                     &cb_sub) == MPI_SUCCESS,
          "subscribe with a callback");
    const char *none[] = {NULL};
    Isthmus_Job j2;
    error("kill-unknown", Isthmus_Kill(987654));
    error("kill-invalid", Isthmus_Kill(-1));
    error("signal-unknown", Isthmus_Signal(987654, SIGTERM, -1));
    error("signal-number", Isthmus_Signal(job, 0, -1));
    error("spawn-missing", Isthmus_Spawn("/no/such/program", none, 1, NULL, NULL, NULL, &j2));
    error("spawn-ranks", Isthmus_Spawn(sleeper, none, 0, NULL, NULL, NULL, &j2));
    error("spawn-impl", Isthmus_Spawn(sleeper, none, 1, "nosuchmpi", NULL, NULL, &j2));
    error("spawn-no-tasker", Isthmus_Spawn(sleeper, none, 1, "impi", NULL, NULL, &j2));
    error("spawn-slots", Isthmus_Spawn(sleeper, none, 1000, NULL, NULL, NULL, &j2));
    error("spawn-host", Isthmus_Spawn(sleeper, none, 1, NULL, "no-such-host", NULL, &j2));
    error("spawn-env", Isthmus_Spawn(sleeper, none, 1, NULL, NULL, "FOO", &j2));
    error("spawn-env-reserved", Isthmus_Spawn(sleeper, none, 1, NULL, NULL, "ISTHMUS_VMD=x", &j2));
    error("spawn-null", Isthmus_Spawn(NULL, none, 1, NULL, NULL, NULL, &j2));
    error("jobs-count", Isthmus_Jobs(0, jobs, 4, NULL));
    error("hosts-room", Isthmus_Hosts(NULL, 4, &total));
    error("add-host-slots", Isthmus_Add_host(ghost, 0));
    error("delete-host-unknown", Isthmus_Delete_host("no-such-host", NULL));
    error("subscribe-kinds", Isthmus_Subscribe(0, NULL, 0, NULL, &cb_sub));
    error("subscribe-mask", Isthmus_Subscribe(0x400, NULL, 0, NULL, &cb_sub));
    error("subscribe-jobs", Isthmus_Subscribe(ISTHMUS_EVENT_JOB_EXIT, NULL, 2, NULL, &cb_sub));
    error("next-unknown", Isthmus_Event_next(12345, 0, &e));
    error("next-timeout", Isthmus_Event_next(host_sub, -1, &e));
    error("next-callback", Isthmus_Event_next(cb_sub, 0, &e));
    CHECK(Isthmus_Unsubscribe(cb_sub) == MPI_SUCCESS, "unsubscribe");
    error("unsubscribe-twice", Isthmus_Unsubscribe(cb_sub));
    CHECK(Isthmus_Unsubscribe(host_sub) == MPI_SUCCESS, "unsubscribe hosts");
    printf("PASS vmcalls\n");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    int rc = 1;
    if (argc == 4 && strcmp(argv[1], "run") == 0)
        rc = run(argv[2], argv[3]);
    else
        fprintf(stderr, "usage: vmcalls run SLEEPER GHOST\n");
    MPI_Finalize();
    return rc;
}

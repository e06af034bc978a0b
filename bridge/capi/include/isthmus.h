/*
 * isthmus.h — join separately started MPI jobs, then use plain MPI.
 *
 * Link with libisthmus built for your MPI (pkg-config isthmus-openmpi or
 * isthmus-mpich), or preload it (LD_PRELOAD). After Isthmus_Register and
 * Isthmus_Intercomm_create, MPI's point-to-point calls on the returned
 * communicator go to the other job, whatever MPI implementation it uses.
 *
 * Every function returns an MPI error code (MPI_SUCCESS on success);
 * MPI_Error_string gives Isthmus's message for it.
 *
 * The second half: the virtual machine's own calls (spawn, kill and signal
 * jobs, list jobs and hosts, add and delete hosts, notifications).
 */
#ifndef ISTHMUS_H
#define ISTHMUS_H

#include <stdint.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Registers comm under the group name: collective over comm; instance =
 * rank. On return the group is complete and frozen. */
int Isthmus_Register(const char *group, MPI_Comm comm, int *handle);

/* Leaves the group: collective over the registered communicator. */
int Isthmus_Leave(int handle);

/* Forms an intercommunicator with the job registered as remote_group:
 * collective over the registered communicator and over the remote group.
 * Waits up to 300 s (or ISTHMUS_CONNECT_TIMEOUT seconds). */
int Isthmus_Intercomm_create(int handle, const char *remote_group, MPI_Comm *intercomm);

/* Like Isthmus_Intercomm_create with a deadline in seconds. Fails before
 * the deadline if the remote group was registered and lost a member. */
int Isthmus_Intercomm_create_timeout(int handle, const char *remote_group, double seconds,
                                     MPI_Comm *intercomm);

/* Starts forming the intercommunicator; *intercomm is valid once request
 * completes through MPI_Test/MPI_Wait (or any of their family). */
int Isthmus_Intercomm_icreate(int handle, const char *remote_group, MPI_Comm *intercomm,
                              MPI_Request *request);

/* ---- The virtual machine (PVM's pvm_spawn, pvm_kill, pvm_sendsig,
 * pvm_tasks, pvm_config, pvm_addhosts, pvm_delhosts, pvm_notify) ----
 *
 * Call them between MPI_Init and MPI_Finalize, from any rank (each call is
 * the calling process's own, not collective). They act as this process's
 * user, through its vmd (ISTHMUS_VMD): a job is its owner's (and the
 * administrator's) to kill or signal; the vmd refuses what the isthmus
 * console would refuse. Each waits up to 60 s for the vmd. A failure is
 * raised on MPI_COMM_SELF (MPI's rule for calls on no communicator): set
 * MPI_ERRORS_RETURN on it to get the code back; MPI_Error_string names the
 * call and the reason. */

/* A job of the virtual machine (as `isthmus ps` shows it). */
typedef int64_t Isthmus_Job;

/* Starts `ranks` processes of `program` as one job of the virtual machine
 * and returns its id once a tasker accepted it (no intercommunicator: the
 * job is on its own, as after pvm_spawn). `program` is a path (relative to
 * the working directory, which the job gets too) or a name looked up in
 * PATH; `argv` its arguments (NULL-terminated, or NULL). `implementation`
 * ("openmpi", "mpich", ..., or "exec" for a program without MPI) may be
 * NULL: it is then read from the program's ELF dynamic section. `host`
 * NULL: anywhere with room. `env` NULL, or variables for the job in the
 * syntax of the info key isthmus_env: "NAME=VALUE;NAME=VALUE" (in a value,
 * \; is a ';' and \\ a '\'). */
int Isthmus_Spawn(const char *program, const char *const argv[], int ranks,
                  const char *implementation, const char *host, const char *env,
                  Isthmus_Job *job);

/* Kills every rank of a job. */
int Isthmus_Kill(Isthmus_Job job);

/* Sends `signal` to a job's ranks (rank < 0: every rank). */
int Isthmus_Signal(Isthmus_Job job, int signal, int rank);

/* Job states and how a process or job ended. */
enum {
    ISTHMUS_JOB_STARTING = 0,
    ISTHMUS_JOB_RUNNING = 1,
    ISTHMUS_JOB_EXITED = 2,
    ISTHMUS_JOB_FAILED = 3,
    ISTHMUS_JOB_KILLED = 4,
    ISTHMUS_JOB_LOST = 5
};
enum {
    ISTHMUS_EXIT_NONE = 0,   /* not ended, or no status */
    ISTHMUS_EXIT_CODE = 1,   /* exit_value is the exit code */
    ISTHMUS_EXIT_SIGNAL = 2  /* exit_value is the signal that ended it */
};

typedef struct {
    Isthmus_Job id;
    int ranks;               /* as spawned */
    int running;             /* ranks running now */
    int state;               /* ISTHMUS_JOB_* */
    int exit_kind;           /* ISTHMUS_EXIT_*: the job's exit once ended */
    int exit_value;
    char implementation[32];
    char host[256];
    char program[1024];      /* strings are cut to fit, NUL-terminated */
} Isthmus_Job_info;

/* This user's jobs holding slots (all != 0: also those that ended
 * recently). Fills up to `max` entries of `jobs` (NULL if max is 0) and
 * sets *count to how many there are (which may be more than max). */
int Isthmus_Jobs(int all, Isthmus_Job_info *jobs, int max, int *count);

typedef struct {
    char name[256];
    int slots;
    int slots_used;
    int jobs;
    int up;                  /* 1: its vmd is up; 0: declared, waiting for it */
    char taskers[256];       /* implementations it has taskers for, comma-separated */
} Isthmus_Host_info;

/* The virtual machine's hosts (pvm_config), as Isthmus_Jobs fills. */
int Isthmus_Hosts(Isthmus_Host_info *hosts, int max, int *count);

/* Adds a host of `slots` slots (operators only). Without a host-start
 * command in the vmd, the host is declared and up once a vmd joins under
 * its name. */
int Isthmus_Add_host(const char *name, int slots);

/* Deletes a host (operators only); *jobs_lost (may be NULL) is how many of
 * its jobs were lost. */
int Isthmus_Delete_host(const char *name, int *jobs_lost);

/* Notification kinds: a mask to subscribe to, and an event's kind. */
#define ISTHMUS_EVENT_NONE         0x000 /* Isthmus_Event_next: nothing within the timeout */
#define ISTHMUS_EVENT_HOST_ADDED   0x001
#define ISTHMUS_EVENT_HOST_DELETED 0x002
#define ISTHMUS_EVENT_HOST_FAILED  0x004
#define ISTHMUS_EVENT_TASK_EXIT    0x008 /* a rank (task) of a job ended */
#define ISTHMUS_EVENT_JOB_EXIT     0x010 /* a job ended */
#define ISTHMUS_EVENT_GROUP        0x020 /* a group changed */
#define ISTHMUS_EVENT_ALL          0x03f
#define ISTHMUS_EVENT_LOST         0x100 /* delivered only: `lost` events were dropped
                                          * (4096 were left unread) */
#define ISTHMUS_EVENT_ENDED        0x200 /* delivered only: the stream ended (`reason`) */

/* Group changes (ISTHMUS_EVENT_GROUP). */
enum {
    ISTHMUS_GROUP_JOINED = 1,
    ISTHMUS_GROUP_LEFT = 2,
    ISTHMUS_GROUP_FROZEN = 3,
    ISTHMUS_GROUP_DESTROYED = 4,
    ISTHMUS_GROUP_MEMBER_DIED = 5
};

typedef struct {
    int kind;                /* ISTHMUS_EVENT_* */
    Isthmus_Job job;         /* task and job exits; else -1 */
    int rank;                /* task exit: the rank, -1 if the launcher's own */
    int exit_kind;           /* task and job exits: ISTHMUS_EXIT_* */
    int exit_value;
    int state;               /* job exit: ISTHMUS_JOB_*; else -1 */
    int group_change;        /* group: ISTHMUS_GROUP_* */
    int instance;            /* group: the member concerned, else -1 */
    int size;                /* group: its size after the change, else -1 */
    long long lost;          /* ISTHMUS_EVENT_LOST: how many */
    char host[256];          /* host events, exits: the host */
    char group[256];         /* group events: the group */
    char reason[512];        /* host deleted/failed, job exit, ended: why */
} Isthmus_Event;

/* Subscribes to the kinds in the mask `kinds`: of the `njobs` jobs in
 * `jobs` only (njobs 0: every job of this user), and of group `group` only
 * (NULL: every group). Every event after this returns is kept for the
 * subscription until taken (4096 at most: past that they are counted, and
 * the count delivered as ISTHMUS_EVENT_LOST). A program is never
 * interrupted by them. */
int Isthmus_Subscribe(int kinds, const Isthmus_Job jobs[], int njobs, const char *group,
                      int *subscription);

/* The next event of the subscription, waiting up to `timeout` seconds
 * (0: only look). event->kind is ISTHMUS_EVENT_NONE if none came. */
int Isthmus_Event_next(int subscription, double timeout, Isthmus_Event *event);

/* Like Isthmus_Subscribe, but each event is passed to `callback` with
 * `arg`, on a thread of the library (one per subscription, in order). The
 * callback may call MPI only if MPI was initialised with
 * MPI_THREAD_MULTIPLE; it may call Isthmus_Unsubscribe. */
typedef void Isthmus_Event_function(const Isthmus_Event *event, void *arg);
int Isthmus_Subscribe_callback(int kinds, const Isthmus_Job jobs[], int njobs,
                               const char *group, Isthmus_Event_function *callback,
                               void *arg, int *subscription);

/* Ends a subscription; a callback's thread has stopped when this returns
 * (unless called from that callback). MPI_Finalize ends them all. */
int Isthmus_Unsubscribe(int subscription);

#ifdef __cplusplus
}
#endif

#endif /* ISTHMUS_H */

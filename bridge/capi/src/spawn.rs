//! `MPI_Comm_spawn` through the virtual machine: the parents' side.
//!
//! The root checks the command (`spawn_command`: found, executable, its
//! MPI implementation read from the binary or given as `isthmus_impl`),
//! opens a port (`isthmus-port:<uuid>`, as `MPI_Open_port`) and asks the
//! resource manager for a job of `maxprocs` ranks, placed as `host` says,
//! with the port and the deadline in the children's environment and a
//! request that their tasker preload the `libisthmus` of their
//! implementation. It tells the other parents the outcome; all of them
//! then accept on the port (`ports::form`) while the children connect to
//! it in their `MPI_Init` (`parent`), so the intercommunicator is an
//! Isthmus one like any `MPI_Comm_accept` gives.
//!
//! `MPI_Comm_spawn_multiple` is the same with several commands of one
//! implementation: one job of all their ranks, in which each rank's shim
//! starts its own command (`spawn_command::spec_of_all`), so the children
//! share one `MPI_COMM_WORLD` as MPI says (commands whose `host` keys
//! differ are refused). Commands of two implementations are two jobs, the
//! two parts of one world (`spawn_command::specs_of_parts`, `crate::world`:
//! part 0 the first implementation in the call's order; interleaved
//! implementations and three of them are refused): the parents meet each
//! part on its own (`{port}/accept/<part>`) and join the two into one
//! mixed intercommunicator whose remote group is the whole world
//! (`mixed::spawned`). Either job failing to start, or dying before the
//! meeting, kills both. The deadline is the first command's info's.
//!
//! Deadline: the info key `isthmus_timeout` (seconds), else
//! `ISTHMUS_CONNECT_TIMEOUT`, else 300 s, for the children to start, reach
//! `MPI_Init` and connect. Meanwhile the root asks the resource manager
//! about the children's job (every 100 ms): a rank that ended (not with 0)
//! or a job that ended before meeting its parents fails the spawn at once,
//! naming the command and how it ended. Past the deadline, or if any
//! parent failed to connect, the root kills the job (and waits for its
//! end), and every parent returns the same error. Every error fills `array_of_errcodes` with its code for
//! every child and goes through `comm`'s error handler.

use std::ffi::{c_char, c_int};
use std::time::{Duration, Instant};

use isthmus_bridge::InterComm;
use isthmus_types::job::{ExitStatus, JobId, JobState};
use mpi::ffi;

use crate::errors::{self, Class};
use crate::merged::Fail;
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::ports::{default_timeout, form_inter, form_watched, text, Failure, Watch, PORT_PREFIX};
use crate::spawn_command::{self, Command, Refusal};
use crate::state::{self, is_isthmus};

const CALL: &str = "MPI_Comm_spawn";
const MULTIPLE: &str = "MPI_Comm_spawn_multiple";
/// Bytes of a port name as the root broadcasts it.
const PORT_BYTES: usize = 128;
/// Bytes of an error message as the root broadcasts it.
const MESSAGE_BYTES: usize = 1024;
/// How long the root waits for a killed job to end.
const KILL_WAIT: Duration = Duration::from_secs(15);

/// The error classes a failed spawn may have, as they travel from the root.
const CLASSES: [Class; 5] = [
    Class::InvalidArgument,
    Class::Spawn,
    Class::Vm,
    Class::RemoteNotReady,
    Class::Other,
];

/// What the root tells every parent.
#[repr(C)]
struct Outcome {
    /// Index in [`CLASSES`] of the error, or -1: started.
    class: i32,
    np: i32,
    /// How many jobs (1, or 2: the parts of the children's world).
    parts: i32,
    jobs: [u64; 2],
    seconds: f64,
    port: [u8; PORT_BYTES],
    message: [u8; MESSAGE_BYTES],
}

impl Outcome {
    fn new() -> Self {
        Outcome {
            class: -1,
            np: 0,
            parts: 0,
            jobs: [0; 2],
            seconds: 0.0,
            port: [0; PORT_BYTES],
            message: [0; MESSAGE_BYTES],
        }
    }

    fn failed(&mut self, class: Class, message: &str) {
        self.class = CLASSES
            .iter()
            .position(|c| *c == class)
            .and_then(|i| i32::try_from(i).ok())
            .unwrap_or(-1);
        if self.class < 0 {
            self.class = 4;
        }
        put(&mut self.message, message);
    }

    fn class(&self) -> Option<Class> {
        usize::try_from(self.class)
            .ok()
            .and_then(|i| CLASSES.get(i).copied())
    }
}

/// Copies `s` into `buf`, cut to fit with a NUL after it.
fn put(buf: &mut [u8], s: &str) {
    let n = s.len().min(buf.len().saturating_sub(1));
    for (to, from) in buf.iter_mut().zip(s.as_bytes()).take(n) {
        *to = *from;
    }
    if let Some(end) = buf.get_mut(n) {
        *end = 0;
    }
}

fn get(buf: &[u8]) -> String {
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(buf.get(..end).unwrap_or_default()).into_owned()
}

/// Broadcasts a plain-data value from `root`.
fn bcast<T>(value: &mut T, root: c_int, comm: MPI_Comm) -> c_int {
    // SAFETY: every rank passes a value of the same type (plain bytes);
    // `comm` is the program's intracommunicator.
    unsafe {
        ffi::PMPI_Bcast(
            (value as *mut T).cast(),
            std::mem::size_of::<T>() as c_int,
            crate::mpi_glue::byte(),
            root,
            comm,
        )
    }
}

/// The program's `argv` (NULL-terminated; `MPI_ARGV_NULL` is NULL).
///
/// # Safety
/// `argv` is null or a NULL-terminated array of C strings.
unsafe fn args_of(argv: *mut *mut c_char) -> Vec<String> {
    let mut args = Vec::new();
    if argv.is_null() {
        return args;
    }
    for i in 0.. {
        // SAFETY: the array is NULL-terminated, as MPI requires.
        let a = unsafe { *argv.add(i) };
        // SAFETY: each entry is a C string.
        match unsafe { text(a) } {
            Some(s) => args.push(s),
            None => break,
        }
    }
    args
}

/// # Safety
/// As `MPI_Comm_spawn`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: ffi::MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let at_root = || {
        // SAFETY: significant at the root only, as MPI says: a C string
        // and a NULL-terminated array of them (or MPI_ARGV_NULL).
        let (command, args) = unsafe { (text(command), args_of(argv)) };
        vec![Command {
            command: command.unwrap_or_default(),
            args,
            np: maxprocs,
            info,
        }]
    };
    spawn(CALL, at_root, root, comm, intercomm, array_of_errcodes)
}

/// # Safety
/// As `MPI_Comm_spawn_multiple`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const ffi::MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let at_root = || {
        let n = usize::try_from(count).unwrap_or(0);
        if array_of_commands.is_null() || array_of_maxprocs.is_null() || array_of_info.is_null() {
            return Vec::new();
        }
        (0..n)
            .map(|i| {
                // SAFETY: significant at the root only, as MPI says: `count`
                // commands, maxprocs and infos, and `count` argv arrays
                // (or MPI_ARGVS_NULL), each as MPI_Comm_spawn's.
                unsafe {
                    let argv = if array_of_argv.is_null() {
                        std::ptr::null_mut()
                    } else {
                        *array_of_argv.add(i)
                    };
                    Command {
                        command: text(*array_of_commands.add(i)).unwrap_or_default(),
                        args: args_of(argv),
                        np: *array_of_maxprocs.add(i),
                        info: *array_of_info.add(i),
                    }
                }
            })
            .collect()
    };
    spawn(MULTIPLE, at_root, root, comm, intercomm, array_of_errcodes)
}

/// Both spawns: the root reads the commands (`at_root`), starts them as
/// one job and tells every parent; all accept the children together.
fn spawn(
    call: &str,
    at_root: impl FnOnce() -> Vec<Command>,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    if is_isthmus(comm) {
        return errors::refuse(comm, call);
    }
    if intercomm.is_null() {
        let code = errors::code(
            Class::InvalidArgument,
            &format!("{call}: intercomm is NULL"),
        );
        return errors::raise(comm, code);
    }
    let mut rank: c_int = 0;
    // SAFETY: `comm` is the program's intracommunicator.
    let rc = unsafe { ffi::PMPI_Comm_rank(comm, &mut rank) };
    if rc != 0 {
        return rc;
    }
    let mut outcome = Outcome::new();
    // The root's commands and counts per job, to say whose rank died.
    let mut commands: Vec<Vec<(String, i32)>> = Vec::new();
    if rank == root {
        let cmds = at_root();
        let all: Vec<(String, i32)> = cmds.iter().map(|c| (c.command.clone(), c.np)).collect();
        let first = start(&cmds, &mut outcome).min(all.len());
        let (a, b) = all.split_at(first);
        commands = [a.to_vec(), b.to_vec()]
            .into_iter()
            .filter(|c| !c.is_empty())
            .collect();
    }
    let rc = bcast(&mut outcome, root, comm);
    if rc != 0 {
        return rc;
    }
    let np = usize::try_from(outcome.np).unwrap_or(0);
    if let Some(class) = outcome.class() {
        return fail(
            call,
            comm,
            intercomm,
            array_of_errcodes,
            np,
            class,
            &get(&outcome.message),
        );
    }
    let port = get(&outcome.port);
    let timeout = Duration::from_secs_f64(outcome.seconds.clamp(0.001, 1e7));
    // The root watches the children's job meanwhile: a child that dies
    // before it meets its parents ends the wait at once, not at the deadline.
    let mut died: Option<String> = None;
    let parts = usize::try_from(outcome.parts).unwrap_or(1).clamp(1, 2);
    let jobs: Vec<JobId> = outcome.jobs.iter().take(parts).copied().collect();
    let mut check = || {
        let why = jobs
            .iter()
            .zip(&commands)
            .find_map(|(job, commands)| ended_early(*job, commands));
        died.clone_from(&why);
        why
    };
    let formed = if parts == 2 {
        form_world(comm, &port, timeout, root, &mut check)
    } else {
        form_watched(
            comm,
            &format!("{port}/accept"),
            &format!("{port}/connect"),
            timeout,
            Some(Watch {
                root,
                check: &mut check,
            }),
        )
    };
    // Every parent must have its side, or none keeps one.
    let mine: c_int = c_int::from(formed.is_ok());
    let mut all: c_int = 0;
    // SAFETY: one int each; `comm` as above.
    let rc = unsafe {
        ffi::PMPI_Allreduce(
            (&mine as *const c_int).cast(),
            (&mut all as *mut c_int).cast(),
            1,
            ffi::RSMPI_INT32_T,
            ffi::RSMPI_MIN,
            comm,
        )
    };
    match formed {
        Ok(c) if rc == 0 && all == 1 => {
            // SAFETY: the program's out-pointers (errcodes: np ints or NULL).
            unsafe {
                *intercomm = c;
                fill(array_of_errcodes, np, 0);
            }
            0
        }
        formed => {
            let why = match formed {
                Ok(mut c) => {
                    // Another parent failed: this side goes too.
                    // SAFETY: `c` is the Isthmus communicator just formed.
                    unsafe { crate::comms::MPI_Comm_free(&mut c) };
                    None
                }
                // The deadline: said below.
                Err(Failure::Bridge(isthmus_bridge::BridgeError::RemoteNotReady { .. })) => None,
                Err(Failure::Bridge(e)) => Some(e.to_string()),
                Err(Failure::Mpi(code)) => Some(errors::error_string(code)),
            };
            let mut message = Outcome::new();
            if rank == root {
                let end = jobs.iter().map(|j| stop(*j)).collect::<Vec<_>>().join("; ");
                match died {
                    Some(died) => {
                        // The reason first: error strings are cut (Open MPI's at 256 bytes).
                        let text = format!("{died}: {}; {end}", get(&outcome.message));
                        message.failed(Class::Spawn, &text);
                    }
                    None => {
                        let why = why.map(|w| format!(" ({w})")).unwrap_or_default();
                        // The reason first, as above.
                        let text = format!(
                            "its {np} processes did not all reach MPI_Init and connect within \
                             {:.1} s{why}; {end}: {}",
                            outcome.seconds,
                            get(&outcome.message),
                        );
                        message.failed(Class::RemoteNotReady, &text);
                    }
                }
            }
            let rc = bcast(&mut message, root, comm);
            if rc != 0 {
                return rc;
            }
            let class = message.class().unwrap_or(Class::RemoteNotReady);
            fail(
                call,
                comm,
                intercomm,
                array_of_errcodes,
                np,
                class,
                &get(&message.message),
            )
        }
    }
}

/// The root's part: checks the commands, opens the port, starts the job
/// (or the two parts of the children's world). On success `outcome` holds
/// the port, deadline, jobs and (in `message`) the commands' description
/// for later errors. Returns how many commands the first job runs.
fn start(cmds: &[Command], outcome: &mut Outcome) -> usize {
    outcome.np = cmds.iter().fold(0i32, |n, c| n.saturating_add(c.np.max(0)));
    let info = cmds
        .first()
        .map(|c| c.info)
        .unwrap_or_else(crate::info::null);
    let seconds = crate::info::timeout(info).unwrap_or_else(default_timeout);
    outcome.seconds = seconds;
    let timeout = Duration::from_secs_f64(seconds.clamp(0.001, 1e7));
    let port = format!("{PORT_PREFIX}{}", uuid::Uuid::new_v4().simple());
    let (specs, in_first) = match spawn_command::specs_of_parts(cmds, &port, timeout) {
        Ok(s) => s,
        Err(Refusal { class, message }) => {
            outcome.failed(class, &message);
            return cmds.len();
        }
    };
    let first = specs
        .first()
        .map(|s| s.implementation.clone())
        .unwrap_or_default();
    let implementation = specs
        .iter()
        .map(|s| s.implementation.as_str())
        .collect::<Vec<_>>()
        .join(" + ");
    // Error strings are bounded (Open MPI's at 256 bytes): the commands as
    // given and their implementation say which.
    let commands = cmds
        .iter()
        .map(|c| format!("{:?}", c.command))
        .collect::<Vec<_>>()
        .join(" + ");
    let what = format!("{commands} ({implementation})");
    let bridge = match state::bridge() {
        Ok(b) => b,
        Err(e) => {
            outcome.failed(
                Class::Vm,
                &format!("cannot start {what}: no vmd reachable ({e})"),
            );
            return in_first;
        }
    };
    let mut started: Vec<String> = Vec::with_capacity(specs.len());
    let parts = specs.len();
    for (i, spec) in specs.into_iter().enumerate() {
        let implementation = spec.implementation.clone();
        match bridge.spawn_job(spec) {
            Ok(spawned) => {
                if let Some(slot) = outcome.jobs.get_mut(i) {
                    *slot = spawned.job;
                }
                started.push(format!(
                    "{implementation}, job {} on {}",
                    spawned.job, spawned.host
                ));
            }
            Err(e) => {
                // The part already started goes too: no process is left.
                let ended = outcome
                    .jobs
                    .iter()
                    .take(i)
                    .map(|j| format!("; the {} job {j}: {}", first, stop(*j)))
                    .collect::<String>();
                outcome.failed(
                    Class::Spawn,
                    // The reason first: error strings are cut (Open MPI's at 256 bytes).
                    &format!(
                        "the virtual machine refused its {implementation} job: {e}{ended}; \
                         the commands: {what}"
                    ),
                );
                return in_first;
            }
        }
    }
    outcome.parts = i32::try_from(parts).unwrap_or(1);
    put(&mut outcome.port, &port);
    put(
        &mut outcome.message,
        &format!("{commands} ({})", started.join("; ")),
    );
    in_first
}

/// The parents' side of a spawn whose children are a world of two parts:
/// meets each part on its own port groups, then joins the two into one
/// mixed intercommunicator whose remote group is the whole world, part 0's
/// ranks first (`mixed::spawned`). The deadline covers both meetings;
/// `check` watches both jobs.
fn form_world(
    comm: MPI_Comm,
    port: &str,
    timeout: Duration,
    root: c_int,
    check: &mut dyn FnMut() -> Option<String>,
) -> Result<MPI_Comm, Failure> {
    let started = Instant::now();
    let mut inters = Vec::with_capacity(2);
    for part in 0..2 {
        let left = timeout
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(1));
        inters.push(form_inter(
            comm,
            &format!("{port}/accept/{part}"),
            &format!("{port}/connect/{part}"),
            left,
            Some(Watch {
                root,
                check: &mut *check,
            }),
        )?);
    }
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: the program's intracommunicator; out-values.
    unsafe {
        ffi::PMPI_Comm_rank(comm, &mut rank);
        ffi::PMPI_Comm_size(comm, &mut size);
    }
    let count = |n: c_int| u32::try_from(n).unwrap_or(0);
    let parts: Vec<&InterComm> = inters.iter().collect();
    let inter = InterComm::joined(&parts, port.as_bytes(), count(rank), count(size))
        .map_err(Failure::Bridge)?;
    crate::mixed::spawned::parents(
        comm,
        inter,
        (format!("{port}/accept"), format!("{port}/connect")),
    )
    .map_err(|f| match f {
        Fail::Mpi(code) => Failure::Mpi(code),
        Fail::Bridge(e) => Failure::Bridge(e),
    })
}

/// Why the children's job can no longer meet its parents, if it cannot: a
/// rank ended (not with 0) or the whole job did. Asked of the resource
/// manager while the parents wait; `commands` (name, count, in rank order)
/// say whose rank it was.
fn ended_early(job: JobId, commands: &[(String, i32)]) -> Option<String> {
    let j = state::opened()?.job(job).ok().flatten()?;
    let command_of = |rank: u32| {
        let mut first = 0i64;
        commands
            .iter()
            .find(|(_, np)| {
                first += i64::from((*np).max(0));
                i64::from(rank) < first
            })
            .map(|(c, _)| format!(" ({c:?})"))
            .unwrap_or_default()
    };
    let how = |e: ExitStatus| match e {
        ExitStatus::Code(c) => format!("exited with code {c}"),
        ExitStatus::Signal(s) => format!("was killed by signal {s}"),
    };
    if let Some((r, e)) = j
        .ranks
        .iter()
        .find_map(|r| r.exit.filter(|e| !e.success()).map(|e| (r.rank, e)))
    {
        // The command is said after the reason; name it here only when
        // there are several.
        let which = match commands.len() {
            1 => String::new(),
            _ => command_of(r),
        };
        return Some(format!(
            "rank {r}{which} {} before it met its parents in MPI_Init",
            how(e)
        ));
    }
    if j.state.is_final() {
        let exit = j.exit.map(|e| format!(", its launcher {}", how(e)));
        return Some(format!(
            "the job ended ({:?}{}) before its processes met their parents in MPI_Init",
            j.state,
            exit.unwrap_or_default()
        ));
    }
    None
}

/// Kills a spawned job and waits for its end; says how it ended.
fn stop(job: JobId) -> String {
    let Some(bridge) = state::opened() else {
        return "it could not be killed (no vmd)".into();
    };
    let before = bridge.job(job).ok().flatten();
    if let Err(e) = bridge.kill_job(job) {
        if !before.as_ref().is_some_and(|j| j.state.is_final()) {
            return format!("killing it failed: {e}");
        }
    }
    let end = Instant::now() + KILL_WAIT;
    let mut pause = Duration::from_millis(20);
    loop {
        match bridge.job(job) {
            Ok(Some(j)) if j.state.is_final() => {
                let state = match (before.as_ref().map(|b| b.state), j.state) {
                    (Some(s), _) if s.is_final() => format!("it had already ended ({s:?})"),
                    (_, JobState::Killed) => "it was killed".to_string(),
                    (_, s) => format!("it ended ({s:?})"),
                };
                let reason = match j.reason.as_str() {
                    "" => String::new(),
                    r => format!(": {r}"),
                };
                return format!("{state}{reason}");
            }
            Ok(None) => return "it was killed".into(),
            _ if Instant::now() > end => {
                return format!("it was told to stop; not ended after {KILL_WAIT:?}")
            }
            _ => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
        }
    }
}

/// Fills `errcodes` (np ints, or NULL for MPI_ERRCODES_IGNORE) with `code`.
///
/// # Safety
/// `errcodes` is null or holds `np` ints.
unsafe fn fill(errcodes: *mut c_int, np: usize, code: c_int) {
    if errcodes.is_null() {
        return;
    }
    for i in 0..np {
        // SAFETY: the caller's contract.
        unsafe { *errcodes.add(i) = code };
    }
}

/// Every parent's error: the code (same class and message on each),
/// `errcodes` filled, `MPI_COMM_NULL`, raised on `comm`.
#[allow(clippy::too_many_arguments)]
fn fail(
    call: &str,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_int,
    np: usize,
    class: Class,
    message: &str,
) -> c_int {
    let code = errors::code(class, &format!("{call}: {message}"));
    // SAFETY: the program's out-pointers (checked non-null; errcodes as
    // MPI says: maxprocs ints, or MPI_ERRCODES_IGNORE).
    unsafe {
        *intercomm = comm_null();
        fill(errcodes, np, code);
    }
    errors::raise(comm, code)
}

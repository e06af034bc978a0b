//! `isthmus.h`'s calls on the virtual machine — PVM's `pvm_spawn`,
//! `pvm_kill`, `pvm_sendsig`, `pvm_tasks`, `pvm_config`, `pvm_addhosts`
//! and `pvm_delhosts` — over `isthmus_bridge::machine`, as the process's
//! user. (Notifications are [`crate::events`].)
//!
//! None of them is about a communicator, so, as MPI 4.0 says of such
//! calls, a failure is raised on `MPI_COMM_SELF` through its error handler
//! (the default aborts; `MPI_ERRORS_RETURN` returns the code), as an
//! Isthmus error class whose `MPI_Error_string` names the call and why.

use std::ffi::{c_char, c_int, CStr};
use std::path::PathBuf;

use isthmus_bridge::BridgeError;
use isthmus_types::host::{HostDecl, HostState, HostView};
use isthmus_types::job::{ExitStatus, Job, JobState, Placement, SpawnSpec};

use crate::errors::{self, Class};
use crate::{env_list, spawn_command, state};

/// A job of the virtual machine, as C sees it (`Isthmus_Job`).
pub type JobId = i64;

/// Raises `message` of `class` for `call` on `MPI_COMM_SELF`.
pub fn fail(call: &str, class: Class, message: &str) -> c_int {
    let code = errors::code(class, &format!("{call}: {message}"));
    errors::raise(comm_self(), code)
}

/// Raises a bridge error of `call` on `MPI_COMM_SELF`.
pub fn fail_with(call: &str, e: &BridgeError) -> c_int {
    errors::fail(comm_self(), call, e)
}

fn comm_self() -> crate::mpi_glue::MPI_Comm {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { mpi::ffi::RSMPI_COMM_SELF }
}

/// MPI must be running for an error code to exist: checked first, and a
/// call outside it returns `MPI_ERR_OTHER` after saying why on stderr.
pub fn mpi_running(call: &str) -> Result<(), c_int> {
    let (mut init, mut fin): (c_int, c_int) = (0, 0);
    // SAFETY: both may be called at any time; valid out-pointers.
    unsafe {
        mpi::ffi::PMPI_Initialized(&mut init);
        mpi::ffi::PMPI_Finalized(&mut fin);
    }
    if init != 0 && fin == 0 {
        return Ok(());
    }
    eprintln!("Isthmus: {call}: MPI is not running (call it between MPI_Init and MPI_Finalize)");
    Err(mpi::ffi::MPI_ERR_OTHER as c_int)
}

/// MPI running (see [`mpi_running`]) and an out-argument given, or the
/// error raised for `call`.
pub fn ready(call: &str, out_is_null: bool, what: &str) -> Result<(), c_int> {
    mpi_running(call)?;
    if out_is_null {
        return Err(fail(
            call,
            Class::InvalidArgument,
            &format!("{what} (the out-argument) is NULL"),
        ));
    }
    Ok(())
}

/// An optional C string: NULL and "" are `None`.
///
/// # Safety
/// `s` is null or a NUL-terminated string.
pub unsafe fn optional(s: *const c_char, what: &str) -> Result<Option<String>, String> {
    if s.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    let s = unsafe { CStr::from_ptr(s) };
    match s.to_str() {
        Ok("") => Ok(None),
        Ok(t) => Ok(Some(t.to_string())),
        Err(_) => Err(format!("{what} is not UTF-8")),
    }
}

/// The process's bridge (its vmd session), or the error raised for `call`.
fn bridge(call: &str) -> Result<&'static isthmus_bridge::Bridge, c_int> {
    mpi_running(call)?;
    state::bridge().map_err(|e| fail(call, Class::Vm, &format!("no vmd reachable ({e})")))
}

/// Copies `s` into the C array `buf`, cut at a character boundary to fit,
/// NUL-terminated.
pub fn put_text(buf: &mut [c_char], s: &str) {
    let room = buf.len().saturating_sub(1);
    let mut n = s.len().min(room);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    for (to, from) in buf.iter_mut().zip(s.as_bytes().iter().take(n)) {
        *to = *from as c_char;
    }
    if let Some(end) = buf.get_mut(n) {
        *end = 0;
    }
}

/// `ISTHMUS_JOB_*`.
pub fn job_state(s: JobState) -> c_int {
    match s {
        JobState::Starting => 0,
        JobState::Running => 1,
        JobState::Exited => 2,
        JobState::Failed => 3,
        JobState::Killed => 4,
        JobState::Lost => 5,
    }
}

/// (`ISTHMUS_EXIT_*`, value) of an exit status.
pub fn exit_of(e: Option<ExitStatus>) -> (c_int, c_int) {
    match e {
        None => (0, 0),
        Some(ExitStatus::Code(c)) => (1, c),
        Some(ExitStatus::Signal(s)) => (2, s),
    }
}

/// `Isthmus_Job_info`.
#[repr(C)]
pub struct JobInfo {
    pub id: JobId,
    pub ranks: c_int,
    pub running: c_int,
    pub state: c_int,
    pub exit_kind: c_int,
    pub exit_value: c_int,
    pub implementation: [c_char; 32],
    pub host: [c_char; 256],
    pub program: [c_char; 1024],
}

/// `Isthmus_Host_info`.
#[repr(C)]
pub struct HostInfo {
    pub name: [c_char; 256],
    pub slots: c_int,
    pub slots_used: c_int,
    pub jobs: c_int,
    pub up: c_int,
    pub taskers: [c_char; 256],
}

fn count(n: u32) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

fn job_info(j: &Job, out: &mut JobInfo) {
    out.id = JobId::try_from(j.id).unwrap_or(-1);
    out.ranks = count(j.np);
    out.running =
        c_int::try_from(j.ranks.iter().filter(|r| r.is_running()).count()).unwrap_or(c_int::MAX);
    out.state = job_state(j.state);
    (out.exit_kind, out.exit_value) = exit_of(j.exit);
    put_text(&mut out.implementation, &j.implementation);
    put_text(&mut out.host, &j.host);
    put_text(&mut out.program, &j.program);
}

fn host_info(h: &HostView, out: &mut HostInfo) {
    put_text(&mut out.name, &h.name);
    out.slots = count(h.slots);
    out.slots_used = count(h.slots_used);
    out.jobs = count(h.jobs);
    out.up = c_int::from(h.state == HostState::Up);
    put_text(&mut out.taskers, &h.taskers.join(","));
}

/// The program's `argv` (NULL-terminated; NULL is none).
///
/// # Safety
/// `argv` is null or a NULL-terminated array of C strings.
unsafe fn args_of(argv: *const *const c_char) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    if argv.is_null() {
        return Ok(args);
    }
    for i in 0.. {
        // SAFETY: NULL-terminated by the caller's contract.
        let a = unsafe { *argv.add(i) };
        if a.is_null() {
            break;
        }
        // SAFETY: each entry is a C string.
        let a = unsafe { CStr::from_ptr(a) };
        args.push(
            a.to_str()
                .map_err(|_| format!("argv[{i}] is not UTF-8"))?
                .to_string(),
        );
    }
    Ok(args)
}

/// What `Isthmus_Spawn` asks the resource manager for, or the refusal.
struct Request {
    program: Option<String>,
    args: Vec<String>,
    ranks: c_int,
    implementation: Option<String>,
    host: Option<String>,
    env: Option<String>,
}

fn spawn_spec(r: Request) -> Result<SpawnSpec, (Class, String)> {
    let program = r.program.ok_or((
        Class::InvalidArgument,
        "program is NULL or empty".to_string(),
    ))?;
    let what = format!("{program:?}");
    let np = u32::try_from(r.ranks)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            (
                Class::InvalidArgument,
                format!(
                    "cannot start {what}: ranks is {}; it must be at least 1",
                    r.ranks
                ),
            )
        })?;
    let env = match r.env {
        Some(text) => env_list::parse(&text).map_err(|why| {
            (
                Class::InvalidArgument,
                format!("cannot start {what}: env: {why}"),
            )
        })?,
        None => Default::default(),
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let path = spawn_command::resolve(&program, &cwd, None)
        .map_err(|why| (Class::Spawn, format!("cannot start {what}: {why}")))?;
    let implementation = spawn_command::implementation(&path, r.implementation, true)
        .map_err(|why| (Class::Spawn, format!("cannot start {what}: {why}")))?;
    Ok(SpawnSpec {
        program: path.display().to_string(),
        args: r.args,
        np,
        implementation,
        placement: r.host.map(Placement::Host).unwrap_or_default(),
        env,
        cwd: cwd.display().to_string(),
        owner: 0,
    })
}

/// Reads `Isthmus_Spawn`'s arguments.
///
/// # Safety
/// As `Isthmus_Spawn`.
unsafe fn read_request(
    program: *const c_char,
    argv: *const *const c_char,
    ranks: c_int,
    implementation: *const c_char,
    host: *const c_char,
    env: *const c_char,
) -> Result<Request, String> {
    // SAFETY: forwarded from the caller's contract.
    unsafe {
        Ok(Request {
            program: optional(program, "program")?,
            args: args_of(argv)?,
            ranks,
            implementation: optional(implementation, "implementation")?,
            host: optional(host, "host")?,
            env: optional(env, "env")?,
        })
    }
}

/// # Safety
/// `program`, `implementation`, `host` and `env` are null or C strings;
/// `argv` null or a NULL-terminated array of C strings; `job` null or a
/// valid out-pointer.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Spawn(
    program: *const c_char,
    argv: *const *const c_char,
    ranks: c_int,
    implementation: *const c_char,
    host: *const c_char,
    env: *const c_char,
    job: *mut JobId,
) -> c_int {
    const CALL: &str = "Isthmus_Spawn";
    if let Err(code) = ready(CALL, job.is_null(), "job") {
        return code;
    }
    // SAFETY: forwarded from the caller's contract.
    let read = unsafe { read_request(program, argv, ranks, implementation, host, env) };
    let spec = match read
        .map_err(|why| (Class::InvalidArgument, why))
        .and_then(spawn_spec)
    {
        Ok(s) => s,
        Err((class, why)) => return fail(CALL, class, &why),
    };
    let what = format!("{:?} ({})", spec.program, spec.implementation);
    let b = match bridge(CALL) {
        Ok(b) => b,
        Err(code) => return code,
    };
    match b.spawn_job(spec) {
        Ok(spawned) => {
            // SAFETY: non-null, the caller's.
            unsafe { *job = JobId::try_from(spawned.job).unwrap_or(-1) };
            0
        }
        Err(e) => fail(
            CALL,
            Class::Spawn,
            &format!("cannot start {what}: the virtual machine refused: {e}"),
        ),
    }
}

/// The bridge and the job id as the vmd knows it (checked before any
/// connection), or the error raised for `call`.
fn job_of(call: &str, job: JobId) -> Result<(&'static isthmus_bridge::Bridge, u64), c_int> {
    mpi_running(call)?;
    let id = u64::try_from(job).map_err(|_| {
        fail(
            call,
            Class::InvalidArgument,
            &format!("{job} is not a job id (ids are positive)"),
        )
    })?;
    Ok((bridge(call)?, id))
}

/// # Safety
/// No pointers.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Kill(job: JobId) -> c_int {
    const CALL: &str = "Isthmus_Kill";
    let (b, id) = match job_of(CALL, job) {
        Ok(x) => x,
        Err(code) => return code,
    };
    match b.kill_job(id) {
        Ok(()) => 0,
        Err(e) => fail_with(&format!("{CALL} (job {job})"), &e),
    }
}

/// # Safety
/// No pointers.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Signal(job: JobId, signal: c_int, rank: c_int) -> c_int {
    const CALL: &str = "Isthmus_Signal";
    let (b, id) = match job_of(CALL, job) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if !(1..=64).contains(&signal) {
        return fail(
            CALL,
            Class::InvalidArgument,
            &format!("signal {signal} is not a signal number (1 to 64)"),
        );
    }
    let rank = u32::try_from(rank).ok();
    match b.signal_job(id, signal, rank) {
        Ok(_) => 0,
        Err(e) => fail_with(&format!("{CALL} (job {job}, signal {signal})"), &e),
    }
}

/// A listing: checks the out-arguments, asks the vmd (`get`), fills up to
/// `max` entries of `out` with `f` and sets `*total` to how many there are.
///
/// # Safety
/// `out` holds `max` entries (or is NULL with `max` 0); `total` is null
/// or valid.
unsafe fn list<T, O>(
    call: &str,
    out: *mut O,
    max: c_int,
    total: *mut c_int,
    get: impl FnOnce(&isthmus_bridge::Bridge) -> Result<Vec<T>, BridgeError>,
    f: fn(&T, &mut O),
) -> c_int {
    if let Err(code) = ready(call, total.is_null(), "count") {
        return code;
    }
    if max < 0 || (out.is_null() && max > 0) {
        let array = if out.is_null() { "NULL" } else { "given" };
        let why = format!("room for {max} entries in a {array} array");
        return fail(call, Class::InvalidArgument, &why);
    }
    let items = match bridge(call).and_then(|b| get(b).map_err(|e| fail_with(call, &e))) {
        Ok(items) => items,
        Err(code) => return code,
    };
    let room = usize::try_from(max).unwrap_or(0);
    for (i, item) in items.iter().take(room).enumerate() {
        // SAFETY: i < max entries, the caller's contract.
        f(item, unsafe { &mut *out.add(i) });
    }
    // SAFETY: checked non-null; the caller's out-pointer.
    unsafe { *total = c_int::try_from(items.len()).unwrap_or(c_int::MAX) };
    0
}

/// # Safety
/// `jobs` holds `max` entries (or is NULL with `max` 0); `count` is valid.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Jobs(
    all: c_int,
    jobs: *mut JobInfo,
    max: c_int,
    count: *mut c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        list(
            "Isthmus_Jobs",
            jobs,
            max,
            count,
            |b| b.jobs(all != 0),
            job_info,
        )
    }
}

/// # Safety
/// `hosts` holds `max` entries (or is NULL with `max` 0); `count` is valid.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Hosts(
    hosts: *mut HostInfo,
    max: c_int,
    count: *mut c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { list("Isthmus_Hosts", hosts, max, count, |b| b.hosts(), host_info) }
}

/// A host name argument (MPI running), or the error raised for `call`.
///
/// # Safety
/// `name` is null or a C string.
unsafe fn host_name(call: &str, name: *const c_char) -> Result<String, c_int> {
    mpi_running(call)?;
    // SAFETY: forwarded.
    match unsafe { optional(name, "name") } {
        Ok(Some(n)) => Ok(n),
        Ok(None) => Err(fail(
            call,
            Class::InvalidArgument,
            "the host name is NULL or empty",
        )),
        Err(why) => Err(fail(call, Class::InvalidArgument, &why)),
    }
}

/// # Safety
/// `name` is a C string.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Add_host(name: *const c_char, slots: c_int) -> c_int {
    const CALL: &str = "Isthmus_Add_host";
    // SAFETY: forwarded.
    let name = match unsafe { host_name(CALL, name) } {
        Ok(n) => n,
        Err(code) => return code,
    };
    let Some(slots) = u32::try_from(slots).ok().filter(|s| *s > 0) else {
        return fail(
            CALL,
            Class::InvalidArgument,
            &format!("host {name:?}: slots is {slots}; it must be at least 1"),
        );
    };
    let decl = HostDecl {
        name: name.clone(),
        slots,
        offers: Vec::new(),
        addr: String::new(),
        peer_addr: String::new(),
    };
    match bridge(CALL).and_then(|b| {
        b.add_host(decl)
            .map_err(|e| fail_with(&format!("{CALL} ({name})"), &e))
    }) {
        Ok(_) => 0,
        Err(code) => code,
    }
}

/// # Safety
/// `name` is a C string; `jobs_lost` null or a valid out-pointer.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Delete_host(name: *const c_char, jobs_lost: *mut c_int) -> c_int {
    const CALL: &str = "Isthmus_Delete_host";
    // SAFETY: forwarded.
    let name = match unsafe { host_name(CALL, name) } {
        Ok(n) => n,
        Err(code) => return code,
    };
    match bridge(CALL).and_then(|b| {
        b.delete_host(&name)
            .map_err(|e| fail_with(&format!("{CALL} ({name})"), &e))
    }) {
        Ok(lost) => {
            if !jobs_lost.is_null() {
                // SAFETY: non-null, the caller's.
                unsafe { *jobs_lost = count(lost) };
            }
            0
        }
        Err(code) => code,
    }
}

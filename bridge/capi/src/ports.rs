//! MPI-2's way for separately started jobs to meet, given an Isthmus
//! meaning across implementations: `MPI_Open_port`, `MPI_Comm_accept`,
//! `MPI_Comm_connect`, `MPI_Publish_name`/`Lookup_name`/`Unpublish_name`,
//! `MPI_Close_port`.
//!
//! A port is a name, `isthmus-port:<32 hex digits>`, readable by any job of
//! the virtual machine. Accepting registers the accepting communicator as
//! the group `<port>/accept`, connecting as `<port>/connect`; the two then
//! form an Isthmus intercommunicator as `Isthmus_Intercomm_create` does
//! (collective over both), and leave the groups again — the data path is
//! direct, so the intercommunicator outlives them. A second connector (or
//! acceptor) on the same port waits until the first pair is done.
//!
//! Deadlines: the info key `isthmus_timeout` (seconds) of the root, else
//! `ISTHMUS_CONNECT_TIMEOUT`, else 300 s; a connect to a port nobody
//! accepts on fails with a clear error then instead of hanging. Published
//! names live in the group service (`Bridge::publish_name`) until
//! unpublished or until the publishing process ends. Ports and names that
//! do not come from Isthmus are refused with an error that says so.

use std::ffi::{c_char, c_int, CStr};
use std::time::{Duration, Instant};

use isthmus_bridge::{BridgeError, DEFAULT_CONNECT_TIMEOUT};
use mpi::ffi;
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;

use crate::errors::{self, Class};
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::state::{self, add_comm, BridgeComm};

pub(crate) const PORT_PREFIX: &str = "isthmus-port:";
/// Bytes of a port name as broadcast to the ranks (MPICH's MPI_MAX_PORT_NAME
/// is 256, Open MPI's 1024: every Isthmus port fits the smaller).
const PORT_BYTES: usize = 256;

pub(crate) fn default_timeout() -> f64 {
    std::env::var("ISTHMUS_CONNECT_TIMEOUT")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT.as_secs_f64())
}

/// Reads a C string argument.
///
/// # Safety
/// `s` is null or NUL-terminated.
pub(crate) unsafe fn text(s: *const c_char) -> Option<String> {
    if s.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

fn port_error(call: &str, message: String) -> c_int {
    let code = errors::code(Class::Port, &format!("{call}: {message}"));
    // SAFETY: reading rsmpi's exported constant.
    errors::raise(unsafe { ffi::RSMPI_COMM_WORLD }, code)
}

fn is_isthmus_port(port: &str) -> bool {
    port.strip_prefix(PORT_PREFIX)
        .is_some_and(|id| id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()))
}

/// # Safety
/// As `MPI_Open_port`: `port_name` holds MPI_MAX_PORT_NAME chars.
#[no_mangle]
pub unsafe extern "C" fn MPI_Open_port(_info: ffi::MPI_Info, port_name: *mut c_char) -> c_int {
    if port_name.is_null() {
        return port_error("MPI_Open_port", "port_name is NULL".into());
    }
    let port = format!("{PORT_PREFIX}{}", uuid::Uuid::new_v4().simple());
    let bytes = port.as_bytes();
    // SAFETY: the buffer holds MPI_MAX_PORT_NAME (>= 256) chars; the port
    // name is 45 bytes plus a NUL.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), port_name as *mut u8, bytes.len());
        *port_name.add(bytes.len()) = 0;
    }
    0
}

/// # Safety
/// As `MPI_Close_port`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Close_port(port_name: *const c_char) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { text(port_name) } {
        Some(p) if is_isthmus_port(&p) => 0,
        Some(p) => port_error(
            "MPI_Close_port",
            format!("{p:?} is not a port opened by Isthmus"),
        ),
        None => port_error("MPI_Close_port", "port_name is NULL".into()),
    }
}

/// # Safety
/// As `MPI_Comm_accept`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_accept(
    port_name: *const c_char,
    info: ffi::MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { meet(port_name, info, root, comm, newcomm, Side::Accept) }
}

/// # Safety
/// As `MPI_Comm_connect`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_connect(
    port_name: *const c_char,
    info: ffi::MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { meet(port_name, info, root, comm, newcomm, Side::Connect) }
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Accept,
    Connect,
}

impl Side {
    fn call(self) -> &'static str {
        match self {
            Side::Accept => "MPI_Comm_accept",
            Side::Connect => "MPI_Comm_connect",
        }
    }
}

/// What the root tells every rank: the port and the deadline.
#[repr(C)]
struct Rendezvous {
    port: [u8; PORT_BYTES],
    seconds: f64,
}

/// # Safety
/// As `MPI_Comm_accept`/`MPI_Comm_connect`.
unsafe fn meet(
    port_name: *const c_char,
    info: ffi::MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    side: Side,
) -> c_int {
    let call = side.call();
    // A merged communicator (the world's too) lives in two jobs: its native
    // handle would meet for one job only.
    if state::is_isthmus(comm) {
        return errors::refuse(comm, call);
    }
    if newcomm.is_null() {
        return errors::fail(
            comm,
            call,
            &BridgeError::InvalidArgument("newcomm is NULL".into()),
        );
    }
    let mut rank: c_int = 0;
    // SAFETY: `comm` is the program's intracommunicator.
    unsafe { ffi::PMPI_Comm_rank(comm, &mut rank) };
    let mut rv = Rendezvous {
        port: [0; PORT_BYTES],
        seconds: 0.0,
    };
    if rank == root {
        // SAFETY: significant at the root only, as MPI says.
        let port = unsafe { text(port_name) }.unwrap_or_default();
        let n = port.len().min(PORT_BYTES - 1);
        for (to, from) in rv.port.iter_mut().zip(port.as_bytes()).take(n) {
            *to = *from;
        }
        rv.seconds = crate::info::timeout(info).unwrap_or_else(default_timeout);
    }
    // SAFETY: every rank passes a buffer of the same size; bytes only.
    let rc = unsafe {
        ffi::PMPI_Bcast(
            (&mut rv as *mut Rendezvous).cast(),
            std::mem::size_of::<Rendezvous>() as c_int,
            crate::mpi_glue::byte(),
            root,
            comm,
        )
    };
    if rc != 0 {
        return rc;
    }
    let end = rv.port.iter().position(|b| *b == 0).unwrap_or(PORT_BYTES);
    let port = String::from_utf8_lossy(rv.port.get(..end).unwrap_or_default()).into_owned();
    if !is_isthmus_port(&port) {
        let code = errors::code(
            Class::Port,
            &format!(
                "{call}: {port:?} is not a port opened by Isthmus (open ports with MPI_Open_port \
                 while libisthmus is linked or preloaded; other implementations' ports do not \
                 cross jobs)"
            ),
        );
        return errors::raise(comm, code);
    }
    let timeout = Duration::from_secs_f64(rv.seconds.clamp(0.001, 1e7));
    let (mine, theirs) = match side {
        Side::Accept => (format!("{port}/accept"), format!("{port}/connect")),
        Side::Connect => (format!("{port}/connect"), format!("{port}/accept")),
    };
    match form(comm, &mine, &theirs, timeout) {
        Ok(c) => {
            // SAFETY: the program's out-pointer.
            unsafe { *newcomm = c };
            0
        }
        Err(Failure::Mpi(code)) => code,
        Err(Failure::Bridge(BridgeError::RemoteNotReady { waited, .. })) => {
            let what = match side {
                Side::Accept => "no process connected to",
                Side::Connect => "no process accepted on",
            };
            let code = errors::code(
                Class::RemoteNotReady,
                &format!("{call}: {what} port {port} within {waited:?}"),
            );
            errors::raise(comm, code)
        }
        Err(Failure::Bridge(e)) => errors::fail(comm, call, &e),
    }
}

pub(crate) enum Failure {
    Mpi(c_int),
    Bridge(BridgeError),
}

/// Registers `comm` as `mine` (waiting while another pair uses the port),
/// forms the intercommunicator with `theirs`, leaves, and returns the new
/// communicator's handle.
pub(crate) fn form(
    comm: MPI_Comm,
    mine: &str,
    theirs: &str,
    timeout: Duration,
) -> Result<MPI_Comm, Failure> {
    form_watched(comm, mine, theirs, timeout, None)
}

/// What a waiting side watches besides the other side (`MPI_Comm_spawn`'s
/// parents: the children's job): its root calls `check` now and then, and
/// a reason from it ends the wait on every rank of `comm`.
pub(crate) struct Watch<'a> {
    pub root: c_int,
    pub check: &'a mut dyn FnMut() -> Option<String>,
}

/// How often the root of a watched wait calls its check.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// [`form`], while `watch` (if any) has nothing to say: when it has, every
/// rank gives up together with `RemoteLost` naming `theirs`.
pub(crate) fn form_watched(
    comm: MPI_Comm,
    mine: &str,
    theirs: &str,
    timeout: Duration,
    watch: Option<Watch<'_>>,
) -> Result<MPI_Comm, Failure> {
    let inter = form_inter(comm, mine, theirs, timeout, watch)?;
    adopt_formed(comm, inter, mine, theirs)
}

/// [`form_watched`]'s bridge intercommunicator, not yet registered under
/// a handle (`MPI_Comm_spawn_multiple` across implementations joins two).
pub(crate) fn form_inter(
    comm: MPI_Comm,
    mine: &str,
    theirs: &str,
    timeout: Duration,
    watch: Option<Watch<'_>>,
) -> Result<isthmus_bridge::InterComm, Failure> {
    let bridge = state::bridge().map_err(Failure::Bridge)?;
    let started = Instant::now();
    // The previous pair on this port is usually a moment from leaving:
    // look again soon, then less often.
    let mut pause = Duration::from_millis(1);
    let handle = loop {
        let mut own = comm_null();
        // SAFETY: `comm` is the program's live communicator.
        let rc = unsafe { ffi::PMPI_Comm_dup(comm, &mut own) };
        if rc != 0 {
            return Err(Failure::Mpi(rc));
        }
        // SAFETY: `own` is our own live intracommunicator; rsmpi frees it
        // when `c` drops (the bridge keeps its own duplicate).
        let c = unsafe { SimpleCommunicator::from_raw(own) };
        match bridge.register(mine, &c) {
            Ok(h) => break h,
            // Another acceptor or connector holds the port: every rank
            // learned so together; try again until the deadline.
            Err(BridgeError::NameTaken { .. }) if started.elapsed() < timeout => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err(e) => return Err(Failure::Bridge(e)),
        }
    };
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    let formed = match watch {
        None => bridge.intercomm_create_timeout(&handle, theirs, left),
        Some(w) => wait_watched(bridge, &handle, comm, theirs, left, w)?,
    };
    // Both sides have each other's table once creation returns: the groups
    // may go, the direct connections stay.
    let gone = bridge.leave(handle);
    let inter = formed.map_err(Failure::Bridge)?;
    gone.map_err(Failure::Bridge)?;
    Ok(inter)
}

/// [`form`], keeping `mine` registered (the caller leaves it): while it is,
/// the other side's processes are told of this one's death by the vmd
/// (`MEMBER_DIED`), and this one of theirs (a world, `crate::world`).
pub(crate) fn form_keeping(
    comm: MPI_Comm,
    mine: &str,
    theirs: &str,
    timeout: Duration,
) -> Result<(MPI_Comm, isthmus_bridge::Handle), Failure> {
    let bridge = state::bridge().map_err(Failure::Bridge)?;
    let mut own = comm_null();
    // SAFETY: `comm` is the program's live communicator.
    let rc = unsafe { ffi::PMPI_Comm_dup(comm, &mut own) };
    if rc != 0 {
        return Err(Failure::Mpi(rc));
    }
    // SAFETY: `own` is our own live intracommunicator; rsmpi frees it
    // when `c` drops (the bridge keeps its own duplicate).
    let c = unsafe { SimpleCommunicator::from_raw(own) };
    let handle = bridge.register(mine, &c).map_err(Failure::Bridge)?;
    match bridge.intercomm_create_timeout(&handle, theirs, timeout) {
        Ok(inter) => Ok((adopt_formed(comm, inter, mine, theirs)?, handle)),
        Err(e) => {
            let _ = bridge.leave(handle);
            Err(Failure::Bridge(e))
        }
    }
}

/// Registers a formed intercommunicator under a new duplicate of `comm`.
fn adopt_formed(
    comm: MPI_Comm,
    inter: isthmus_bridge::InterComm,
    mine: &str,
    theirs: &str,
) -> Result<MPI_Comm, Failure> {
    let mut newcomm = comm_null();
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Comm_dup(comm, &mut newcomm) };
    if rc != 0 {
        return Err(Failure::Mpi(rc));
    }
    add_comm(
        newcomm,
        BridgeComm {
            inter,
            local_group: mine.to_string(),
            remote_group: theirs.to_string(),
            derived: Default::default(),
            coll: Default::default(),
        },
    );
    Ok(newcomm)
}

/// Forms the intercommunicator without blocking, all ranks of `comm`
/// deciding together (one `Allreduce` a round) whether every rank is done
/// or the root's check gave a reason to stop.
fn wait_watched(
    bridge: &isthmus_bridge::Bridge,
    handle: &isthmus_bridge::Handle,
    comm: MPI_Comm,
    theirs: &str,
    timeout: Duration,
    watch: Watch<'_>,
) -> Result<Result<isthmus_bridge::InterComm, BridgeError>, Failure> {
    let mut rank: c_int = 0;
    // SAFETY: `comm` is the program's intracommunicator.
    unsafe { ffi::PMPI_Comm_rank(comm, &mut rank) };
    let mut pending = match bridge.intercomm_create_nonblocking(handle, theirs, timeout) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let mut done = None;
    let mut checked = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        if done.is_none() {
            done = match pending.test() {
                Ok(Some(inter)) => Some(Ok(inter)),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            };
        }
        let mut stop = None;
        if rank == watch.root && checked.elapsed() >= WATCH_EVERY {
            checked = Instant::now();
            stop = (watch.check)();
        }
        // [every rank done, no reason to stop], each the minimum over comm.
        let mine: [c_int; 2] = [c_int::from(done.is_some()), c_int::from(stop.is_none())];
        let mut all: [c_int; 2] = [0, 0];
        // SAFETY: two ints each; `comm` as above.
        let rc = unsafe {
            ffi::PMPI_Allreduce(
                mine.as_ptr().cast(),
                all.as_mut_ptr().cast(),
                2,
                ffi::RSMPI_INT32_T,
                ffi::RSMPI_MIN,
                comm,
            )
        };
        if rc != 0 {
            return Err(Failure::Mpi(rc));
        }
        match (all, done.take()) {
            ([1, _], Some(r)) => return Ok(r),
            ([_, 0], _) => {
                return Ok(Err(BridgeError::RemoteLost {
                    group: theirs.to_string(),
                    reason: stop.unwrap_or_else(|| "the root gave up waiting".into()),
                }))
            }
            (_, d) => done = d,
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// # Safety
/// As `MPI_Publish_name`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Publish_name(
    service_name: *const c_char,
    _info: ffi::MPI_Info,
    port_name: *const c_char,
) -> c_int {
    let call = "MPI_Publish_name";
    // SAFETY: the caller's contract.
    let (Some(service), Some(port)) = (unsafe { text(service_name) }, unsafe { text(port_name) })
    else {
        return port_error(call, "service_name or port_name is NULL".into());
    };
    if !is_isthmus_port(&port) {
        return port_error(call, format!("{port:?} is not a port opened by Isthmus"));
    }
    match state::bridge().and_then(|b| b.publish_name(&service, &port)) {
        Ok(()) => 0,
        Err(e) => port_error(call, format!("cannot publish {service:?}: {e}")),
    }
}

/// # Safety
/// As `MPI_Unpublish_name`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpublish_name(
    service_name: *const c_char,
    _info: ffi::MPI_Info,
    _port_name: *const c_char,
) -> c_int {
    let call = "MPI_Unpublish_name";
    // SAFETY: the caller's contract.
    let Some(service) = (unsafe { text(service_name) }) else {
        return port_error(call, "service_name is NULL".into());
    };
    match state::bridge().and_then(|b| b.unpublish_name(&service)) {
        Ok(()) => 0,
        Err(e) => port_error(call, format!("cannot unpublish {service:?}: {e}")),
    }
}

/// # Safety
/// As `MPI_Lookup_name`: `port_name` holds MPI_MAX_PORT_NAME chars.
#[no_mangle]
pub unsafe extern "C" fn MPI_Lookup_name(
    service_name: *const c_char,
    _info: ffi::MPI_Info,
    port_name: *mut c_char,
) -> c_int {
    let call = "MPI_Lookup_name";
    // SAFETY: the caller's contract.
    let Some(service) = (unsafe { text(service_name) }) else {
        return port_error(call, "service_name is NULL".into());
    };
    if port_name.is_null() {
        return port_error(call, "port_name is NULL".into());
    }
    match state::bridge().and_then(|b| b.lookup_name(&service)) {
        Ok(Some(port)) if port.len() < PORT_BYTES => {
            // SAFETY: the buffer holds MPI_MAX_PORT_NAME (>= 256) chars.
            unsafe {
                std::ptr::copy_nonoverlapping(port.as_ptr(), port_name as *mut u8, port.len());
                *port_name.add(port.len()) = 0;
            }
            0
        }
        Ok(Some(port)) => port_error(call, format!("{service:?} names an overlong port {port:?}")),
        Ok(None) => port_error(call, format!("no name {service:?} is published")),
        Err(e) => port_error(call, format!("cannot look up {service:?}: {e}")),
    }
}

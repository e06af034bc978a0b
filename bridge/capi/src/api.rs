//! `isthmus.h`: PVMPI's calls for C (and, through `fortran`, Fortran).
//!
//! Each returns an MPI error code. A failure is raised on the communicator
//! the call is about (the registered one) through its error handler, as MPI
//! does for its own calls.

use std::ffi::{c_char, c_int, CStr};
use std::time::Duration;

use isthmus_bridge::{BridgeError, DEFAULT_CONNECT_TIMEOUT};
use mpi::ffi;
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;

use crate::errors::{self, Class};
use crate::mpi_glue::{comm_null, MPI_Comm, MPI_Request};
use crate::requests::{self, Op};
use crate::state::{self, BridgeComm, Registered};

/// Reads a C string argument.
///
/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn text(s: *const c_char, what: &str) -> Result<String, BridgeError> {
    if s.is_null() {
        return Err(BridgeError::InvalidArgument(format!("{what} is NULL")));
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str()
        .map(str::to_owned)
        .map_err(|_| BridgeError::InvalidArgument(format!("{what} is not UTF-8")))
}

fn world_comm() -> MPI_Comm {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

/// A native duplicate of `comm`.
fn duplicate(comm: MPI_Comm) -> Result<MPI_Comm, c_int> {
    let mut out = comm_null();
    // SAFETY: `comm` is the caller's live communicator; `out` an out-pointer.
    let rc = unsafe { ffi::PMPI_Comm_dup(comm, &mut out) };
    if rc != 0 {
        return Err(rc);
    }
    Ok(out)
}

/// The default deadline of `Isthmus_Intercomm_create`:
/// `ISTHMUS_CONNECT_TIMEOUT` seconds, else the bridge's default.
fn default_timeout() -> Duration {
    std::env::var("ISTHMUS_CONNECT_TIMEOUT")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT)
}

/// # Safety
/// `group` is a C string; `handle` points to an int.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Register(
    group: *const c_char,
    comm: MPI_Comm,
    handle: *mut c_int,
) -> c_int {
    if handle.is_null() {
        let e = BridgeError::InvalidArgument("handle is NULL".into());
        return errors::fail(comm, "Isthmus_Register", &e);
    }
    // SAFETY: forwarded from the caller's contract.
    let r = unsafe { text(group, "group name") }
        .map_err(Failure::Bridge)
        .and_then(|g| register(&g, comm));
    match r {
        Ok(h) => {
            // SAFETY: non-null, the caller's.
            unsafe { *handle = h };
            0
        }
        Err(Failure::Mpi(code)) => code,
        Err(Failure::Bridge(e)) => errors::fail(comm, "Isthmus_Register", &e),
    }
}

enum Failure {
    Mpi(c_int),
    Bridge(BridgeError),
}

impl From<BridgeError> for Failure {
    fn from(e: BridgeError) -> Self {
        Failure::Bridge(e)
    }
}

fn register(group: &str, comm: MPI_Comm) -> Result<c_int, Failure> {
    let bridge = state::bridge()?;
    // Two duplicates: one the bridge owns for its own collectives, one we
    // keep to duplicate each intercommunicator's local handle from.
    let for_bridge = duplicate(comm).map_err(Failure::Mpi)?;
    let base = duplicate(comm).map_err(Failure::Mpi)?;
    // SAFETY: `for_bridge` is a live intracommunicator we own; rsmpi frees
    // it when `c` is dropped (the bridge keeps its own duplicate).
    let c = unsafe { SimpleCommunicator::from_raw(for_bridge) };
    let registered = bridge.register(group, &c);
    drop(c);
    match registered {
        Ok(handle) => Ok(state::add_handle(Registered { handle, base })),
        Err(e) => {
            let mut b = base;
            // SAFETY: our own duplicate.
            unsafe { ffi::PMPI_Comm_free(&mut b) };
            Err(e.into())
        }
    }
}

/// # Safety
/// No pointer arguments.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Leave(handle: c_int) -> c_int {
    let Some(reg) = state::take_handle(handle) else {
        let code = errors::code(
            Class::InvalidArgument,
            &format!("Isthmus_Leave: no handle {handle}"),
        );
        return errors::raise(world_comm(), code);
    };
    let base = reg.base;
    let Ok(reg) = std::sync::Arc::try_unwrap(reg) else {
        let code = errors::code(
            Class::InvalidArgument,
            &format!("Isthmus_Leave: handle {handle} is in use by another thread"),
        );
        return errors::raise(base, code);
    };
    let Registered { handle: h, base } = reg;
    let left = state::bridge().and_then(|b| b.leave(h));
    let code = match left {
        Ok(()) => 0,
        Err(e) => errors::fail(base, "Isthmus_Leave", &e),
    };
    let mut b = base;
    // SAFETY: our own duplicate.
    unsafe { ffi::PMPI_Comm_free(&mut b) };
    code
}

/// # Safety
/// `remote_group` is a C string; `intercomm` points to an MPI_Comm.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Intercomm_create(
    handle: c_int,
    remote_group: *const c_char,
    intercomm: *mut MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { create(handle, remote_group, default_timeout(), intercomm) }
}

/// # Safety
/// As `Isthmus_Intercomm_create`.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Intercomm_create_timeout(
    handle: c_int,
    remote_group: *const c_char,
    seconds: f64,
    intercomm: *mut MPI_Comm,
) -> c_int {
    if !(seconds.is_finite() && seconds > 0.0) {
        let code = errors::code(
            Class::InvalidArgument,
            &format!("Isthmus_Intercomm_create_timeout: timeout {seconds} is not a positive number of seconds"),
        );
        return errors::raise(world_comm(), code);
    }
    // SAFETY: forwarded.
    unsafe {
        create(
            handle,
            remote_group,
            Duration::from_secs_f64(seconds),
            intercomm,
        )
    }
}

/// Looks up the handle and reads the remote name; errors raised on the
/// registered communicator (or MPI_COMM_WORLD for an unknown handle).
///
/// # Safety
/// `remote_group` is null or a C string.
unsafe fn prepare(
    handle: c_int,
    remote_group: *const c_char,
    call: &str,
) -> Result<(std::sync::Arc<Registered>, String), c_int> {
    let Some(reg) = state::handle(handle) else {
        let code = errors::code(
            Class::InvalidArgument,
            &format!("{call}: no handle {handle}"),
        );
        return Err(errors::raise(world_comm(), code));
    };
    // SAFETY: forwarded.
    match unsafe { text(remote_group, "remote group name") } {
        Ok(r) => Ok((reg, r)),
        Err(e) => Err(errors::fail(reg.base, call, &e)),
    }
}

/// # Safety
/// As `Isthmus_Intercomm_create`.
unsafe fn create(
    handle: c_int,
    remote_group: *const c_char,
    timeout: Duration,
    intercomm: *mut MPI_Comm,
) -> c_int {
    let call = "Isthmus_Intercomm_create";
    // SAFETY: forwarded.
    let (reg, remote) = match unsafe { prepare(handle, remote_group, call) } {
        Ok(x) => x,
        Err(code) => return code,
    };
    if intercomm.is_null() {
        return errors::fail(
            reg.base,
            call,
            &BridgeError::InvalidArgument("intercomm is NULL".into()),
        );
    }
    // The local handle first: a native collective every rank reaches.
    let newcomm = match duplicate(reg.base) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let formed =
        state::bridge().and_then(|b| b.intercomm_create_timeout(&reg.handle, &remote, timeout));
    match formed {
        Ok(inter) => {
            state::add_comm(
                newcomm,
                BridgeComm {
                    inter,
                    local_group: reg.handle.group().to_string(),
                    remote_group: remote,
                    derived: Default::default(),
                    coll: Default::default(),
                },
            );
            // SAFETY: non-null, the caller's.
            unsafe { *intercomm = newcomm };
            0
        }
        Err(e) => {
            let mut dead = newcomm;
            // SAFETY: our own duplicate, never handed out.
            unsafe { ffi::PMPI_Comm_free(&mut dead) };
            errors::fail(reg.base, call, &e)
        }
    }
}

/// # Safety
/// `remote_group` is a C string; `intercomm` and `request` are valid
/// out-pointers until the request completes.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Intercomm_icreate(
    handle: c_int,
    remote_group: *const c_char,
    intercomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = "Isthmus_Intercomm_icreate";
    // SAFETY: forwarded.
    let (reg, remote) = match unsafe { prepare(handle, remote_group, call) } {
        Ok(x) => x,
        Err(code) => return code,
    };
    if intercomm.is_null() || request.is_null() {
        let e = BridgeError::InvalidArgument("intercomm or request is NULL".into());
        return errors::fail(reg.base, call, &e);
    }
    let newcomm = match duplicate(reg.base) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let pending = state::bridge()
        .and_then(|b| b.intercomm_create_nonblocking(&reg.handle, &remote, default_timeout()));
    let pending = match pending {
        Ok(p) => p,
        Err(e) => {
            let mut dead = newcomm;
            // SAFETY: our own duplicate.
            unsafe { ffi::PMPI_Comm_free(&mut dead) };
            return errors::fail(reg.base, call, &e);
        }
    };
    let op = Op::Create {
        pending: Box::new(pending),
        newcomm,
        out: intercomm,
        local_group: reg.handle.group().to_string(),
        remote_group: remote,
    };
    match requests::start(op, reg.base, call) {
        Ok(r) => {
            // SAFETY: non-null, the caller's.
            unsafe { *request = r };
            0
        }
        Err(code) => code,
    }
}

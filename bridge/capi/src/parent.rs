//! The children's side of `MPI_Comm_spawn` across implementations: a job the
//! resource manager started for a spawn finds the port its parents accept
//! on in `ISTHMUS_SPAWN_PORT`. Its `MPI_Init` (and `MPI_Init_thread`)
//! connects `MPI_COMM_WORLD` to it before returning — MPI's spawn is
//! collective over the parents and the children's initialisation — within
//! `ISTHMUS_SPAWN_TIMEOUT` seconds (what is left of the parents' deadline);
//! `MPI_Comm_get_parent` then returns that Isthmus intercommunicator, until
//! it is freed or disconnected, after which it returns `MPI_COMM_NULL`.
//!
//! A child that cannot meet its parents (they gave up: the deadline passed)
//! gets the error through `MPI_COMM_WORLD`'s handler at `MPI_Init`: by
//! default it aborts with the reason, so no child outlives a failed spawn.
//! A job not started by a spawn finds no port and initialises as before.
//! The spawn's variables are taken out of the environment once read (a
//! process the child starts is no spawned child), and `MPI_APPNUM` is kept
//! for `appnum`.

use std::ffi::{c_char, c_int};
use std::sync::Mutex;
use std::time::Duration;

use isthmus_bridge::BridgeError;
use isthmus_types::env;
use mpi::ffi;

use crate::errors::{self, Class};
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::ports::{default_timeout, form, Failure};
use crate::state::bridge_comm;

/// The intercommunicator to the parents, once connected.
struct Parent(MPI_Comm);
// SAFETY: an MPI handle (a pointer or an integer) is only a name; MPI
// calls on it are made under MPI's own thread rules, as for every handle.
unsafe impl Send for Parent {}

static PARENT: Mutex<Option<Parent>> = Mutex::new(None);

/// # Safety
/// As `MPI_Init`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: the program's arguments, passed on.
    let rc = unsafe { ffi::PMPI_Init(argc, argv) };
    if rc != 0 {
        return rc;
    }
    after_init()
}

/// # Safety
/// As `MPI_Init_thread`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    // SAFETY: the program's arguments, passed on.
    let rc = unsafe { ffi::PMPI_Init_thread(argc, argv, required, provided) };
    if rc != 0 {
        return rc;
    }
    after_init()
}

/// # Safety
/// As `MPI_Comm_get_parent`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    let ours = PARENT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|p| p.0);
    match ours {
        Some(c) if !parent.is_null() => {
            // Freed or disconnected: MPI_COMM_NULL, as MPI says.
            let now = match bridge_comm(c) {
                Some(_) => c,
                None => comm_null(),
            };
            // SAFETY: the program's out-pointer, checked non-null.
            unsafe { *parent = now };
            0
        }
        // SAFETY: passed on as given.
        _ => unsafe { ffi::PMPI_Comm_get_parent(parent) },
    }
}

fn world() -> MPI_Comm {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

/// What `MPI_Init` does after the native one: meet the parents (a spawned
/// job), then the other parts of the world (`crate::world`, `ISTHMUS_WORLD`).
fn after_init() -> c_int {
    match meet_parents() {
        0 => crate::world::join(),
        rc => rc,
    }
}

/// Takes the spawn's variables out of this process's environment once read,
/// so that a process the child starts (`system`, a nested launcher) is not
/// taken for a spawned child meeting the same parents.
fn forget_spawn_env() {
    for var in [env::SPAWN_PORT, env::SPAWN_TIMEOUT, env::SPAWN_APPNUM] {
        // MPI's own threads may read the environment meanwhile; glibc's
        // unsetenv only moves pointers within `environ` (no string is
        // freed), so a concurrent getenv sees the variable or not.
        std::env::remove_var(var);
    }
}

/// Connects `MPI_COMM_WORLD` to the parents if this job was spawned.
fn meet_parents() -> c_int {
    let Ok(port) = std::env::var(env::SPAWN_PORT) else {
        return 0;
    };
    let seconds = std::env::var(env::SPAWN_TIMEOUT)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or_else(default_timeout);
    let timeout = Duration::from_secs_f64(seconds.clamp(0.001, 1e7));
    crate::appnum::keep_from_env();
    forget_spawn_env();
    let call = "MPI_Init";
    match form(
        world(),
        &format!("{port}/connect"),
        &format!("{port}/accept"),
        timeout,
    ) {
        Ok(c) => {
            *PARENT.lock().unwrap_or_else(|p| p.into_inner()) = Some(Parent(c));
            0
        }
        Err(Failure::Mpi(code)) => code,
        Err(Failure::Bridge(BridgeError::RemoteNotReady { waited, .. })) => {
            let code = errors::code(
                Class::RemoteNotReady,
                &format!(
                    "{call}: this job was spawned by MPI_Comm_spawn, but its parents were not \
                     there to meet within {waited:?} (their deadline passed)"
                ),
            );
            errors::raise(world(), code)
        }
        Err(Failure::Bridge(e)) => errors::raise(
            world(),
            errors::code(
                Class::of(&e),
                &format!("{call}: this job was spawned by MPI_Comm_spawn and cannot meet its parents: {e}"),
            ),
        ),
    }
}

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

use isthmus_bridge::{BridgeError, InterComm};
use isthmus_types::env;
use mpi::ffi;

use crate::errors::{self, Class};
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::ports::{default_timeout, form, form_inter, Failure};
use crate::state::{self, bridge_comm, mixed_comm};

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
    crate::native_step::choose();
    crate::malloc_policy::apply();
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
    crate::native_step::choose();
    crate::malloc_policy::apply();
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
            let now = match bridge_comm(c).is_some() || mixed_comm(c).is_some() {
                true => c,
                false => comm_null(),
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
/// job), then the other parts of the world (`crate::world`, `ISTHMUS_WORLD`);
/// a spawned job that is a part of its world (`MPI_Comm_spawn_multiple` of
/// two implementations) first meets the other part, then the parents as
/// that world.
fn after_init() -> c_int {
    let spawned = std::env::var_os(env::SPAWN_PORT).is_some();
    if spawned && std::env::var_os(crate::world::WORLD).is_some() {
        return meet_parents_as_world();
    }
    match meet_parents() {
        0 => crate::world::join(),
        rc => rc,
    }
}

/// Takes the spawn's variables out of this process's environment once read,
/// so that a process the child starts (`system`, a nested launcher) is not
/// taken for a spawned child meeting the same parents.
fn forget_spawn_env() {
    for var in [
        env::SPAWN_PORT,
        env::SPAWN_TIMEOUT,
        env::SPAWN_APPNUM,
        env::SPAWN_APPNUM_BASE,
    ] {
        // MPI's own threads may read the environment meanwhile; glibc's
        // unsetenv only moves pointers within `environ` (no string is
        // freed), so a concurrent getenv sees the variable or not.
        std::env::remove_var(var);
    }
}

/// The parents' port and this child's deadline, if this job was spawned;
/// keeps its `MPI_APPNUM` and takes the spawn's variables out.
fn spawn_env() -> Option<(String, Duration)> {
    let port = std::env::var(env::SPAWN_PORT).ok()?;
    let seconds = std::env::var(env::SPAWN_TIMEOUT)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or_else(default_timeout);
    let timeout = Duration::from_secs_f64(seconds.clamp(0.001, 1e7));
    crate::appnum::keep_from_env();
    forget_spawn_env();
    Some((port, timeout))
}

/// Connects `MPI_COMM_WORLD` to the parents if this job was spawned.
fn meet_parents() -> c_int {
    let Some((port, timeout)) = spawn_env() else {
        return 0;
    };
    met(form(
        world(),
        &format!("{port}/connect"),
        &format!("{port}/accept"),
        timeout,
    ))
}

/// A part of a spawned world: joins the world (`crate::world::join`),
/// then this part meets the parents on its own port groups
/// (`{port}/connect/<part>`), and the intercommunicator to them is the
/// whole world's (`mixed::spawned::children`), as the parents join the
/// two parts into one remote group.
fn meet_parents_as_world() -> c_int {
    let Some((port, timeout)) = spawn_env() else {
        return 0;
    };
    let started = std::time::Instant::now();
    let rc = crate::world::join();
    if rc != 0 {
        return rc;
    }
    let part = match std::env::var(crate::world::WORLD)
        .map_err(|e| e.to_string())
        .and_then(|s| crate::world::Part::parse(&s))
    {
        Ok(p) => p.index,
        Err(why) => {
            return errors::raise(
                world(),
                errors::code(Class::InvalidArgument, &format!("MPI_Init: {why}")),
            )
        }
    };
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    let inter = match form_inter(
        world(),
        &format!("{port}/connect/{part}"),
        &format!("{port}/accept/{part}"),
        left,
        None,
    ) {
        Ok(i) => i,
        Err(f) => return met(Err(f)),
    };
    let Some(mc) = state::merged_comm(world()) else {
        return met(Err(Failure::Bridge(BridgeError::InvalidArgument(
            "the world's MPI_COMM_WORLD is not registered after joining it".into(),
        ))));
    };
    let parents = inter.remote_size();
    let joined = InterComm::joined(&[&inter, &mc.inter], port.as_bytes(), mc.rank(), mc.size());
    let made = joined
        .map_err(crate::merged::Fail::Bridge)
        .and_then(|i| {
            crate::mixed::spawned::children(
                world(),
                &mc,
                i,
                parents,
                (format!("{port}/connect"), format!("{port}/accept")),
            )
        })
        .map_err(|f| match f {
            crate::merged::Fail::Mpi(code) => Failure::Mpi(code),
            crate::merged::Fail::Bridge(e) => Failure::Bridge(e),
        });
    met(made)
}

/// Keeps the intercommunicator to the parents, or raises why there is none
/// on `MPI_COMM_WORLD`.
fn met(formed: Result<MPI_Comm, Failure>) -> c_int {
    let call = "MPI_Init";
    match formed {
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

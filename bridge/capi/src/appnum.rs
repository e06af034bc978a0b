//! `MPI_APPNUM` of a spawned job's `MPI_COMM_WORLD`: the index of the
//! command a child runs. `MPI_Comm_spawn_multiple`'s children are one job
//! whose launcher started one application, so their own MPI says 0 for
//! all; the rank shim tells each its command's index
//! (`ISTHMUS_SPAWN_APPNUM`), which `MPI_Init` keeps here and
//! `MPI_Comm_get_attr` (and the deprecated `MPI_Attr_get`) answer with.
//! A world's `MPI_COMM_WORLD` (`ISTHMUS_WORLD`) answers `MPI_APPNUM`,
//! `MPI_UNIVERSE_SIZE` and `MPI_TAG_UB` from `crate::world_attrs` first.
//! Every other attribute, and `MPI_APPNUM` of a job not spawned through
//! Isthmus (what its launcher says, as MPI leaves it to the startup
//! mechanism), is the MPI library's own.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use isthmus_types::env;
use mpi::ffi;

use crate::mpi_glue::MPI_Comm;

/// The command's index, or -1: not a spawn's child (the library's own).
/// A static: MPI hands out a pointer to it as the attribute's value.
static APPNUM: AtomicI32 = AtomicI32::new(-1);

/// Keeps this child's `MPI_APPNUM` (0 when the shim said none: a plain
/// spawn). Called by `MPI_Init` of a spawned job, before it clears the
/// spawn's variables.
pub(crate) fn keep_from_env() {
    let read = |var: &str| {
        std::env::var(var)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
            .filter(|n| *n >= 0)
            .unwrap_or(0)
    };
    // The second part of a spawned world counts its commands from its
    // first one's index in the call.
    let n = read(env::SPAWN_APPNUM).saturating_add(read(env::SPAWN_APPNUM_BASE));
    APPNUM.store(n, Ordering::SeqCst);
}

/// This spawned child's `MPI_APPNUM`, once kept (`keep_from_env`).
pub(crate) fn spawned() -> Option<c_int> {
    let n = APPNUM.load(Ordering::SeqCst);
    (n >= 0).then_some(n)
}

/// Answers for `MPI_APPNUM` of `MPI_COMM_WORLD` in a spawn's child.
///
/// # Safety
/// `value` and `flag` are the program's out-pointers (or null).
unsafe fn ours(comm: MPI_Comm, keyval: c_int, value: *mut c_void, flag: *mut c_int) -> bool {
    // SAFETY: reading rsmpi's exported constant.
    let world = unsafe { ffi::RSMPI_COMM_WORLD };
    if keyval != ffi::MPI_APPNUM as c_int
        || comm != world
        || APPNUM.load(Ordering::SeqCst) < 0
        || value.is_null()
        || flag.is_null()
    {
        return false;
    }
    // SAFETY: as MPI says for a predefined attribute in C, the value is a
    // pointer to an int: the static lives as long as the process, and MPI's
    // callers only read it.
    unsafe {
        *(value as *mut *mut c_int) = APPNUM.as_ptr();
        *flag = 1;
    }
    true
}

/// The value this library answers itself for the predefined attribute
/// `keyval` (C's) of `comm`: a world's `MPI_APPNUM`, `MPI_UNIVERSE_SIZE`
/// and `MPI_TAG_UB`, a spawn's child's `MPI_APPNUM`; `None` for every
/// other, which is the MPI library's. For the Fortran bindings
/// (`crate::fortran`), which read attributes past the C entry points (the
/// standard ABI's flavour has no Fortran).
#[cfg(not(isthmus_mpi_abi))]
pub(crate) fn own_value(comm: MPI_Comm, keyval: c_int) -> Option<c_int> {
    if let Some(v) = crate::world_attrs::value(comm, keyval) {
        return Some(*v);
    }
    // SAFETY: reading rsmpi's exported constant.
    let world = unsafe { ffi::RSMPI_COMM_WORLD };
    let n = APPNUM.load(Ordering::SeqCst);
    (keyval == ffi::MPI_APPNUM as c_int && comm == world && n >= 0).then_some(n)
}

/// The MPI library's own attribute call (`PMPI_Comm_get_attr`, `PMPI_Attr_get`).
type Lookup = unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_int) -> c_int;

/// Ours for `MPI_APPNUM` of a spawn's `MPI_COMM_WORLD`, else `theirs`.
///
/// # Safety
/// As `MPI_Comm_get_attr`.
unsafe fn get(
    comm: MPI_Comm,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
    theirs: Lookup,
) -> c_int {
    // One world's MPI_COMM_WORLD (`crate::world_attrs`): its MPI_APPNUM,
    // MPI_UNIVERSE_SIZE and MPI_TAG_UB.
    if let Some(v) = crate::world_attrs::value(comm, keyval) {
        if !value.is_null() && !flag.is_null() {
            // SAFETY: the program's out-pointers, checked non-null; a
            // predefined attribute's value is a pointer to an int, here to a
            // static one.
            unsafe {
                *value.cast::<*const c_int>() = v;
                *flag = 1;
            }
            return 0;
        }
    }
    // SAFETY: the caller's pointers, checked there.
    if unsafe { ours(comm, keyval, value, flag) } {
        return 0;
    }
    // SAFETY: passed on as given.
    unsafe { theirs(comm, keyval, value, flag) }
}

/// # Safety
/// As `MPI_Comm_get_attr`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(
    comm: MPI_Comm,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { get(comm, keyval, value, flag, ffi::PMPI_Comm_get_attr) }
}

/// # Safety
/// As `MPI_Attr_get`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_get(
    comm: MPI_Comm,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { get(comm, keyval, value, flag, ffi::PMPI_Attr_get) }
}

//! Operations and datatypes the program frees while a nonblocking
//! collective is under way. MPI lets a program free them right after the
//! initiation (`MPI_Op_free` before `MPI_Wait`: MPICH's
//! `coll/nonblocking2`): the MPI's own pending operations keep what they
//! use, but a schedule issues its later native steps (a job's reduction
//! after the bridge exchange, the two jobs' partial results combined) with
//! the handles it was given. So while any schedule is under way the
//! process's frees of user-defined operations and datatypes are deferred:
//! the program's handle becomes `MPI_OP_NULL`/`MPI_DATATYPE_NULL` at once,
//! as MPI says, and the MPI's own free runs when the last schedule ends
//! ([`flush`], from `requests` when `schedule::retire` says so).

use std::ffi::c_int;
use std::sync::{Mutex, OnceLock};

use mpi::ffi;

use crate::mpi_glue::MPI_Datatype;

/// A handle whose free waits.
enum Freed {
    Op(ffi::MPI_Op),
    Type(MPI_Datatype),
}

// SAFETY: MPI handles are process-wide values (pointers in Open MPI, ints
// in MPICH), not tied to the thread that made them.
unsafe impl Send for Freed {}

static DEFERRED: Mutex<Vec<Freed>> = Mutex::new(Vec::new());

/// Frees what the program freed while schedules were under way; called
/// when none is.
pub(crate) fn flush() {
    let freed = std::mem::take(&mut *DEFERRED.lock().unwrap_or_else(|p| p.into_inner()));
    for f in freed {
        match f {
            // SAFETY: a handle the program freed (valid until now: its free
            // was deferred); the MPI's free of it, once.
            Freed::Op(mut op) => unsafe {
                ffi::PMPI_Op_free(&mut op);
            },
            // SAFETY: as above.
            Freed::Type(mut dt) => unsafe {
                ffi::PMPI_Type_free(&mut dt);
            },
        }
    }
}

/// Defers `f` when a schedule is under way (true: the caller sets the
/// program's handle to the null handle and succeeds).
fn defer(f: Freed) -> bool {
    if super::idle() {
        return false;
    }
    DEFERRED.lock().unwrap_or_else(|p| p.into_inner()).push(f);
    true
}

/// `MPI_Op_free`, deferred while a nonblocking collective is under way.
///
/// # Safety
/// As `MPI_Op_free`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_free(op: *mut ffi::MPI_Op) -> c_int {
    // SAFETY: the program's handle, read once it is known not to be null.
    // (MPI_OP_NULL, and a predefined operation, which MPI forbids freeing,
    // go to the MPI, which reports the error; the latter only when no
    // schedule is under way.)
    if !op.is_null() && unsafe { *op } != op_null() && defer(Freed::Op(unsafe { *op })) {
        // SAFETY: as above.
        unsafe { *op = op_null() };
        return 0;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { ffi::PMPI_Op_free(op) }
}

/// `MPI_Type_free`, deferred while a nonblocking collective is under way.
///
/// # Safety
/// As `MPI_Type_free`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(dt: *mut MPI_Datatype) -> c_int {
    // SAFETY: the program's handle, read once it is known not to be null;
    // a predefined or null type goes to the MPI, which reports the error.
    if !dt.is_null() && is_derived(unsafe { *dt }) && defer(Freed::Type(unsafe { *dt })) {
        // SAFETY: as above.
        unsafe { *dt = ffi::RSMPI_DATATYPE_NULL };
        return 0;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { ffi::PMPI_Type_free(dt) }
}

/// `MPI_OP_NULL` (rsmpi exports no such constant): what the MPI's own
/// free writes into a handle, read once from an operation made for it.
fn op_null() -> ffi::MPI_Op {
    struct Null(ffi::MPI_Op);
    // SAFETY: an MPI handle is a process-wide value (see `Freed`).
    unsafe impl Send for Null {}
    // SAFETY: as above; never written after it is set.
    unsafe impl Sync for Null {}
    static NULL: OnceLock<Null> = OnceLock::new();
    unsafe extern "C" fn nothing(
        _: *mut std::ffi::c_void,
        _: *mut std::ffi::c_void,
        _: *mut c_int,
        _: *mut MPI_Datatype,
    ) {
    }
    NULL.get_or_init(|| {
        // SAFETY: zeroed is a valid bit pattern for a handle (an int or a
        // pointer), overwritten by the create and then by the free.
        let mut op: ffi::MPI_Op = unsafe { std::mem::zeroed() };
        // SAFETY: a commutative operation of ours, freed at once: the free
        // writes MPI_OP_NULL into the handle.
        unsafe {
            ffi::PMPI_Op_create(Some(nothing), 1, &mut op);
            ffi::PMPI_Op_free(&mut op);
        }
        Null(op)
    })
    .0
}

/// Whether `dt` is a derived datatype (the only kind a program frees; a
/// predefined or invalid one goes to the MPI, which reports the error).
fn is_derived(dt: MPI_Datatype) -> bool {
    crate::datatype::combiner(dt).is_some() && !crate::datatype::is_named(dt)
}

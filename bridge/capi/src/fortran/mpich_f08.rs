//! The Fortran bodies of MPICH's `use mpi_f08` entry points
//! (`mpi_wait_f08_`, …; shells generated from `mpi-functions.txt`).
//!
//! MPICH's `use mpi_f08` bindings (in libmpichfort) call `PMPI_Wait`,
//! `PMPI_Comm_test_inter`, … directly for the calls without a buffer (those
//! with one go through `MPI_Send`, … and are interposed in C). Their
//! statuses are C statuses (MPICH's `type(MPI_Status)` is `bind(C)` with
//! the C layout), a handle's `MPI_VAL` is the C handle, an absent `ierror`
//! is a null pointer. Under Open MPI the shells pass the call on to Open
//! MPI's own (which calls its `ompi_*_f`, interposed with `super::ompi`).

use std::ffi::c_int;
use std::sync::OnceLock;

use super::convert::*;
use super::shared::{shared_bodies, Binding};
use crate::mpi_glue::{status_ignore, statuses_ignore, MPI_Status};
use crate::requests;

// The calls without a status whose Fortran arguments are integers in both
// bindings, and which write their outputs back only on success in both,
// have one body, Open MPI's. (MPICH's `use mpi_f08` MPI_Finalize goes to
// the internal PMPIR_Finalize past the C one: interposed so that completed
// sends are delivered first. Its MPI_Abort goes to PMPI_Abort: interposed
// so that the other jobs are told.)
pub(super) use super::ompi::{
    abort, barrier, cancel, comm_create, comm_disconnect, comm_dup, comm_free, comm_remote_group,
    comm_split, finalize, group_compare, group_difference, group_excl, group_free, group_incl,
    group_intersection, group_range_excl, group_range_incl, group_rank, group_size,
    group_translate_ranks, group_union, ibarrier, intercomm_create, intercomm_merge, start,
    startall,
};

/// `MPI_Barrier_init` for MPICH's `use mpi_f08` (which calls
/// `PMPI_Barrier_init`): the persistent barrier of an Isthmus
/// communicator. (MPI 4: Open MPI 4.1 has none.)
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
#[cfg(isthmus_mpi4)]
pub(super) unsafe fn barrier_init(
    comm: *const Fint,
    info: *const Fint,
    request: *mut Fint,
) -> c_int {
    let mut r = crate::mpi_glue::request_null();
    // SAFETY: converted handles, our request.
    let rc = unsafe {
        crate::persist::MPI_Barrier_init(
            comm_f2c(int!(comm)),
            mpi::ffi::RSMPI_Info_f2c(int!(info)),
            &mut r,
        )
    };
    // SAFETY: the program's request (MPICH writes its outputs whatever
    // the call answered).
    unsafe { put(request, request_c2f(r)) };
    rc
}

/// MPICH's `use mpi_f08` binding: its statuses are C statuses, passed on
/// as they are, and the outputs are written back whatever the call
/// answered.
pub(super) struct MpichF08;

impl Binding for MpichF08 {
    type Status = MPI_Status;

    const WRITES_ON_FAILURE: bool = true;

    unsafe fn with_status(
        status: *mut MPI_Status,
        f: impl FnOnce(*mut MPI_Status) -> (c_int, bool),
    ) -> c_int {
        f(f08_status(status)).0
    }

    unsafe fn with_statuses(
        statuses: *mut MPI_Status,
        _n: usize,
        f: impl FnOnce(*mut MPI_Status) -> (c_int, usize),
    ) -> c_int {
        f(f08_statuses(statuses)).0
    }
}

shared_bodies!(MpichF08);

/// Addresses of MPICH's `use mpi_f08` status sentinels.
struct F08Sentinels {
    status_ignore: usize,
    statuses_ignore: usize,
}

fn f08_sentinels() -> &'static F08Sentinels {
    static S: OnceLock<F08Sentinels> = OnceLock::new();
    S.get_or_init(|| F08Sentinels {
        status_ignore: symbol(c"MPIR_F08_MPI_STATUS_IGNORE_OBJ"),
        statuses_ignore: symbol(c"MPIR_F08_MPI_STATUSES_IGNORE_OBJ"),
    })
}

/// An f08 status argument as a C one.
fn f08_status(s: *mut MPI_Status) -> *mut MPI_Status {
    let ignore = f08_sentinels().status_ignore;
    if s.is_null() || (ignore != 0 && s as usize == ignore) {
        status_ignore()
    } else {
        s
    }
}

/// An f08 status array argument as a C one.
fn f08_statuses(s: *mut MPI_Status) -> *mut MPI_Status {
    let ignore = f08_sentinels().statuses_ignore;
    if s.is_null() || (ignore != 0 && s as usize == ignore) {
        statuses_ignore()
    } else {
        s
    }
}

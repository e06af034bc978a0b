//! The local steps of a mixed intercommunicator's collectives: MPI's
//! intracommunicator collectives over its local group's private
//! communicator, natively when the group is one job's, through the merged
//! bodies when it spans both.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::merged::{mpi, Fail};
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};
use crate::state::{self, LocalGroup};

/// Frees a local group's communicator (its merged registration too).
pub fn free(g: &LocalGroup) {
    let c = match *g {
        LocalGroup::Native(c) => c,
        LocalGroup::Merged(c) => {
            crate::merged::forget(c);
            c
        }
    };
    crate::merged::free_native(c);
}

/// The group's handle and, when it spans both jobs, its merged state.
fn parts(g: &LocalGroup) -> Result<(MPI_Comm, Option<std::sync::Arc<state::MergedComm>>), Fail> {
    match *g {
        LocalGroup::Native(c) => Ok((c, None)),
        LocalGroup::Merged(c) => match state::merged_comm(c) {
            Some(mc) => Ok((c, Some(mc))),
            None => Err(Fail::Bridge(isthmus_bridge::BridgeError::InvalidArgument(
                "the local group's communicator is gone".into(),
            ))),
        },
    }
}

/// `MPI_Barrier` over the local group.
pub fn barrier(g: &LocalGroup) -> Result<(), Fail> {
    let (c, mc) = parts(g)?;
    // SAFETY: our private communicator.
    mpi(unsafe {
        match mc {
            Some(mc) => crate::merged::barrier(&mc, c),
            None => ffi::PMPI_Barrier(c),
        }
    })
}

/// `MPI_Bcast` over the local group.
///
/// # Safety
/// As `MPI_Bcast`.
pub unsafe fn bcast(
    g: &LocalGroup,
    buf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    root: c_int,
) -> Result<(), Fail> {
    let (c, mc) = parts(g)?;
    // SAFETY: forwarded.
    mpi(unsafe {
        match mc {
            Some(mc) => crate::merged::bcast(&mc, buf, n, dt, root, c),
            None => ffi::PMPI_Bcast(buf, n, dt, root, c),
        }
    })
}

/// `MPI_Reduce` over the local group.
///
/// # Safety
/// As `MPI_Reduce`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe fn reduce(
    g: &LocalGroup,
    send: *const c_void,
    recv: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
) -> Result<(), Fail> {
    let (c, mc) = parts(g)?;
    // SAFETY: forwarded.
    mpi(unsafe {
        match mc {
            Some(mc) => crate::merged::reduce(&mc, send, recv, n, dt, op, root, c),
            None => ffi::PMPI_Reduce(send, recv, n, dt, op, root, c),
        }
    })
}

/// `MPI_Gather` over the local group.
///
/// # Safety
/// As `MPI_Gather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe fn gather(
    g: &LocalGroup,
    send: *const c_void,
    sn: c_int,
    st: MPI_Datatype,
    recv: *mut c_void,
    rn: c_int,
    rt: MPI_Datatype,
    root: c_int,
) -> Result<(), Fail> {
    let (c, mc) = parts(g)?;
    // SAFETY: forwarded.
    mpi(unsafe {
        match mc {
            Some(mc) => crate::merged::gather(&mc, send, sn, st, recv, rn, rt, root, c),
            None => ffi::PMPI_Gather(send, sn, st, recv, rn, rt, root, c),
        }
    })
}

/// `MPI_Scatter` over the local group.
///
/// # Safety
/// As `MPI_Scatter`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe fn scatter(
    g: &LocalGroup,
    send: *const c_void,
    sn: c_int,
    st: MPI_Datatype,
    recv: *mut c_void,
    rn: c_int,
    rt: MPI_Datatype,
    root: c_int,
) -> Result<(), Fail> {
    let (c, mc) = parts(g)?;
    // SAFETY: forwarded.
    mpi(unsafe {
        match mc {
            Some(mc) => crate::merged::scatter(&mc, send, sn, st, recv, rn, rt, root, c),
            None => ffi::PMPI_Scatter(send, sn, st, recv, rn, rt, root, c),
        }
    })
}

/// `MPI_Scatterv` over the local group.
///
/// # Safety
/// As `MPI_Scatterv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe fn scatterv(
    g: &LocalGroup,
    send: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    st: MPI_Datatype,
    recv: *mut c_void,
    rn: c_int,
    rt: MPI_Datatype,
    root: c_int,
) -> Result<(), Fail> {
    let (c, mc) = parts(g)?;
    // SAFETY: forwarded.
    mpi(unsafe {
        match mc {
            Some(mc) => {
                crate::merged::scatterv(&mc, send, counts, displs, st, recv, rn, rt, root, c)
            }
            None => ffi::PMPI_Scatterv(send, counts, displs, st, recv, rn, rt, root, c),
        }
    })
}

//! What the mixed collectives share: their messages on the collective
//! context, a root's meaning, the failure's code.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::collbuf::Extents;
use crate::merged::{mpi, Fail};
use crate::mpi_glue::{proc_null, MPI_Comm, MPI_Datatype};
use crate::state::MixedInter;

/// The tag of the collectives' messages on their private context (each
/// pair's messages keep their order and every rank calls the collectives
/// of a communicator in one order, so one tag serves them all).
const TAG: c_int = 1;

/// Runs a collective's body, raising its failure on `comm` as `call`'s.
pub(super) fn code(comm: MPI_Comm, call: &str, r: Result<(), Fail>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(f) => crate::merged::raise(comm, call, f),
    }
}

pub(crate) fn int(n: usize) -> Result<c_int, Fail> {
    Ok(crate::collbuf::int(n)?)
}

/// `count` elements of `dt` at `buf` to remote rank `dest` (or none for
/// `MPI_PROC_NULL`), and `rcount` of `rt` from remote rank `src` into
/// `rbuf`, on the collective context.
///
/// # Safety
/// The buffers hold their counts of elements.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn sendrecv(
    mx: &MixedInter,
    (buf, count, dt, dest): (*const c_void, c_int, MPI_Datatype, c_int),
    (rbuf, rcount, rt, src): (*mut c_void, c_int, MPI_Datatype, c_int),
) -> Result<(), Fail> {
    let st = crate::mpi_glue::status_ignore();
    // SAFETY: forwarded; the collective side's private handle.
    mpi(unsafe {
        crate::merged::sendrecv(
            &mx.coll,
            buf,
            count,
            dt,
            dest,
            TAG,
            rbuf,
            rcount,
            rt,
            src,
            TAG,
            mx.coll.native,
            st,
        )
    })
}

/// Sends to remote rank `dest` on the collective context.
///
/// # Safety
/// As [`sendrecv`].
pub(super) unsafe fn send(
    mx: &MixedInter,
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
) -> Result<(), Fail> {
    // SAFETY: forwarded.
    unsafe {
        sendrecv(
            mx,
            (buf, count, dt, dest),
            (std::ptr::null_mut(), 0, dt, proc_null()),
        )
    }
}

/// Receives from remote rank `src` on the collective context.
///
/// # Safety
/// As [`sendrecv`].
pub(super) unsafe fn recv(
    mx: &MixedInter,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    src: c_int,
) -> Result<(), Fail> {
    // SAFETY: forwarded.
    unsafe {
        sendrecv(
            mx,
            (std::ptr::null(), 0, dt, proc_null()),
            (buf, count, dt, src),
        )
    }
}

/// A root argument in the group that receives (a remote rank), or MPI's
/// `MPI_ERR_ROOT`.
fn remote_root(mx: &MixedInter, root: c_int) -> Result<c_int, Fail> {
    match u32::try_from(root) {
        Ok(r) if r < mx.peers.size() => Ok(root),
        _ => Err(Fail::Mpi(ffi::MPI_ERR_ROOT as c_int)),
    }
}

/// What a rooted call's `root` makes of this process.
pub(crate) enum Role {
    /// `MPI_ROOT`: the root itself.
    Root,
    /// `MPI_PROC_NULL`: another member of the root's group (nothing to do).
    Idle,
    /// A member of the other group; the root is that remote rank.
    From(c_int),
}

pub(crate) fn role(mx: &MixedInter, root: c_int) -> Result<Role, Fail> {
    if root == ffi::MPI_ROOT {
        Ok(Role::Root)
    } else if root == proc_null() {
        Ok(Role::Idle)
    } else {
        remote_root(mx, root).map(Role::From)
    }
}

/// The extents of `dt`.
pub(crate) fn extents(dt: MPI_Datatype) -> Result<Extents, Fail> {
    Ok(Extents::of(dt)?)
}

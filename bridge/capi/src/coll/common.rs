//! What the intercommunicator collective bodies share: the bridge
//! communicator's native local side, MPI's roles (`root`), MPI's argument
//! errors (`MPI_IN_PLACE`), and the glue between the program's buffers and
//! the bridge's messages (a leader's message, a received one decoded). The
//! buffers themselves (counts, arrays, addresses, scratch) are
//! `crate::collbuf`'s.

use std::ffi::{c_int, c_void};

use isthmus_bridge::{BridgeError, CollMessage};
use mpi::ffi;
use mpi::topology::SimpleCommunicator;

use crate::collbuf::{elements, entry, in_place_of_either, offset, Extents};
use crate::datatype;
use crate::errors;
use crate::mpi_glue::{proc_null, MPI_Comm, MPI_Datatype};
use crate::state::BridgeComm;

/// Runs `f` with the bridge communicator's native local side; an MPI
/// failure to make it is raised on `comm`.
pub(super) fn with_local(
    bc: &BridgeComm,
    comm: MPI_Comm,
    f: impl FnOnce(&SimpleCommunicator) -> Result<(), c_int>,
) -> Result<(), c_int> {
    let guard = bc.coll.get(comm).map_err(|rc| errors::raise(comm, rc))?;
    match guard.as_ref() {
        Some(native) => f(&native.0),
        // `get` filled the slot.
        None => Err(errors::raise(comm, ffi::MPI_ERR_INTERN as c_int)),
    }
}

pub(super) fn code(r: Result<(), c_int>) -> c_int {
    r.err().unwrap_or(0)
}

/// A process's part in an intercommunicator broadcast, from MPI's `root`.
pub(super) enum Role {
    Root,
    Idle,
    From(u32),
}

/// This process's role from MPI's `root`, or MPI's `MPI_ERR_ROOT` raised on `comm`.
pub(super) fn role_or_raise(
    bc: &BridgeComm,
    comm: MPI_Comm,
    root: c_int,
    call: &str,
) -> Result<Role, c_int> {
    role(bc, root).ok_or_else(|| {
        // MPI's own class, so that MPI_Error_class says MPI_ERR_ROOT.
        tracing::warn!(
            root,
            remote_size = bc.inter.remote_size(),
            "{call}: root is neither MPI_ROOT, MPI_PROC_NULL nor a remote rank"
        );
        errors::raise(comm, ffi::MPI_ERR_ROOT as c_int)
    })
}

/// `MPI_ERR_BUFFER` for an `MPI_IN_PLACE` buffer: MPI defines the "in
/// place" option of collectives for intracommunicators only.
pub(super) fn check_not_in_place(
    comm: MPI_Comm,
    call: &str,
    bufs: &[*const c_void],
) -> Result<(), c_int> {
    if bufs.iter().any(|b| in_place_of_either(*b)) {
        tracing::warn!("{call}: MPI_IN_PLACE is not defined for an intercommunicator");
        return Err(errors::raise(comm, ffi::MPI_ERR_BUFFER as c_int));
    }
    Ok(())
}

/// The message of `count` elements of `dt` at `buf`, as a leader sends
/// it, once the native step that made them (`step`) returned `rc`.
///
/// # Safety
/// When `rc` is 0, `buf` holds `count` elements of `dt` and stays
/// unchanged while the message lives.
pub(super) unsafe fn made<'a>(
    rc: c_int,
    step: &str,
    buf: *const c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<CollMessage<'a>, BridgeError> {
    if rc != 0 {
        return Err(BridgeError::Protocol(format!(
            "this job's own {step} failed: {}",
            errors::error_string(rc)
        )));
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { message(buf, count, dt) }
}

/// The message of `count` elements of `dt` at `buf`.
///
/// # Safety
/// `buf` holds `count` elements of `dt` and stays unchanged while the
/// message lives.
pub(super) unsafe fn message<'a>(
    buf: *const c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<CollMessage<'a>, BridgeError> {
    let count = crate::collbuf::int(count)?;
    // SAFETY: forwarded from this function's contract.
    let (sig, count, enc) = unsafe { datatype::encode(buf, count, dt) }?;
    Ok(CollMessage {
        sig,
        count,
        bytes: enc.bytes,
    })
}

/// Decodes a received message into `count` elements of `dt` at `buf`.
///
/// # Safety
/// `buf` has room for `count` elements of `dt`.
pub(super) unsafe fn deliver(
    got: (Vec<u8>, isthmus_bridge::Status),
    buf: *mut c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<(), BridgeError> {
    // SAFETY: forwarded from this function's contract.
    unsafe { datatype::decode_received(&got.0, &got.1, buf, count, dt) }.map(drop)
}

/// An MPI failure of a native step raised on `comm`, else the bridge's outcome.
pub(super) fn outcome(
    comm: MPI_Comm,
    call: &str,
    native_rc: c_int,
    bridge: Result<(), BridgeError>,
) -> Result<(), c_int> {
    if native_rc != 0 {
        return Err(errors::raise(comm, native_rc));
    }
    bridge.map_err(|e| errors::fail(comm, call, &e))
}

pub(super) fn role(bc: &BridgeComm, root: c_int) -> Option<Role> {
    if root == ffi::MPI_ROOT {
        return Some(Role::Root);
    }
    if root == proc_null() {
        return Some(Role::Idle);
    }
    u32::try_from(root)
        .ok()
        .filter(|r| *r < bc.inter.remote_size())
        .map(Role::From)
}

/// Where a block lies: its address, element count and datatype.
pub(super) type Block = (*const c_void, usize, MPI_Datatype);

/// Block `j` of a v-form buffer: `counts[j]` elements of `dt` at
/// `base + displs[j] * extent(dt)`.
///
/// # Safety
/// `counts` and `displs` are null or have an entry `j`.
pub(super) unsafe fn v_block(
    base: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    dt: MPI_Datatype,
    j: usize,
) -> Result<Block, BridgeError> {
    // SAFETY: forwarded from this function's contract.
    let (c, d) = unsafe {
        (
            entry(counts, j, "a counts array")?,
            entry(displs, j, "a displacements array")?,
        )
    };
    let at = offset(base, Extents::of(dt)?.extent, Some(elements(d)?))?;
    Ok((at.cast_const(), elements(c)?, dt))
}

/// Block `j` of a buffer of equal blocks: `count` elements of `dt` at
/// `base + j * count * extent(dt)` (alltoall's).
pub(super) fn count_block(
    base: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    j: usize,
) -> Result<Block, BridgeError> {
    let n = elements(count)?;
    let at = offset(base, Extents::of(dt)?.extent, j.checked_mul(n))?;
    Ok((at.cast_const(), n, dt))
}

/// Block `j` of a w-form buffer: `counts[j]` elements of `types[j]` at
/// `base + displs[j]` bytes.
///
/// # Safety
/// `counts`, `displs` and `types` are null or have an entry `j`.
pub(super) unsafe fn w_block(
    base: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    types: *const MPI_Datatype,
    j: usize,
) -> Result<Block, BridgeError> {
    // SAFETY: forwarded from this function's contract.
    let (c, d, dt) = unsafe {
        (
            entry(counts, j, "a counts array")?,
            entry(displs, j, "a displacements array")?,
            entry(types, j, "a datatypes array")?,
        )
    };
    let at = offset(base, 1, Some(elements(d)?))?;
    Ok((at.cast_const(), elements(c)?, dt))
}

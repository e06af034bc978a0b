//! MPI's collective calls on an Isthmus intercommunicator, with MPI's
//! intercommunicator semantics: `MPI_Barrier` (every rank of both groups
//! has entered), the rooted ones (`MPI_Bcast`, `MPI_Gather`, `MPI_Scatter`,
//! `MPI_Reduce`: `root` is `MPI_ROOT` at the root, `MPI_PROC_NULL` at the
//! rest of its group, and the root's rank in the remote group at every rank
//! of the other group) and the ones where each group gets the other
//! group's data (`allreduce`, `allgather`, `alltoall`, `reduce_scatter`:
//! one module each). The algorithms are the bridge's (`isthmus_bridge::coll`,
//! local–global–local); this module gives them the job's side as a native
//! communicator, does the native steps that need the program's datatypes
//! and operations (a local reduce or gather to the leader: the job's own
//! MPI applies every operation, user-defined ones included, so no
//! arithmetic crosses implementations), and moves buffers through the
//! datatype glue (any datatype, derived ones too, as point-to-point).
//! `MPI_IN_PLACE`, which MPI defines for intracommunicators only, is an
//! `MPI_ERR_BUFFER`. The C entry points are generated from
//! `mpi-functions.txt` (included at the end).
//!
//! The nonblocking forms (`MPI_Ibarrier`, `MPI_Ibcast`, ...) stay refused: run
//! at `MPI_Wait` they would break MPI's progress rule (a `MPI_Test` loop
//! would never see them complete, and two requests waited in different
//! orders on two ranks would deadlock their native steps).

mod alltoall;
mod gather;
mod reduce;
mod scatter;
mod scratch;

use std::ffi::{c_int, c_void};

use isthmus_bridge::{BridgeError, CollMessage};
use mpi::ffi;
use mpi::topology::SimpleCommunicator;

use crate::datatype;
use crate::errors;
use crate::mpi_glue::{proc_null, MPI_Comm, MPI_Datatype};
use crate::state::BridgeComm;

pub(crate) use alltoall::{alltoall, alltoallv, alltoallw};
pub(crate) use gather::{allgather, gather};
pub(crate) use reduce::{allreduce, reduce, reduce_scatter, reduce_scatter_block};
pub(crate) use scatter::scatter;

/// Runs `f` with the bridge communicator's native local side; an MPI
/// failure to make it is raised on `comm`.
fn with_local(
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

fn code(r: Result<(), c_int>) -> c_int {
    r.err().unwrap_or(0)
}

/// `MPI_Barrier` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Barrier`.
pub(crate) unsafe fn barrier(bc: &BridgeComm, comm: MPI_Comm) -> c_int {
    code(with_local(bc, comm, |local| {
        bc.inter
            .barrier(local)
            .map_err(|e| errors::fail(comm, "MPI_Barrier", &e))
    }))
}

/// A process's part in an intercommunicator broadcast, from MPI's `root`.
enum Role {
    Root,
    Idle,
    From(u32),
}

/// This process's role from MPI's `root`, or MPI's `MPI_ERR_ROOT` raised on `comm`.
fn role_or_raise(bc: &BridgeComm, comm: MPI_Comm, root: c_int, call: &str) -> Result<Role, c_int> {
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

/// MPI_IN_PLACE of either implementation (MPICH's `(void*)-1`, Open MPI's
/// `(void*)1`; no buffer lives at either address).
fn in_place(buf: *const c_void) -> bool {
    matches!(buf as usize, 1 | usize::MAX)
}

/// `MPI_ERR_BUFFER` for an `MPI_IN_PLACE` buffer: MPI defines the "in
/// place" option of collectives for intracommunicators only.
fn check_not_in_place(comm: MPI_Comm, call: &str, bufs: &[*const c_void]) -> Result<(), c_int> {
    if bufs.iter().any(|b| in_place(*b)) {
        tracing::warn!("{call}: MPI_IN_PLACE is not defined for an intercommunicator");
        return Err(errors::raise(comm, ffi::MPI_ERR_BUFFER as c_int));
    }
    Ok(())
}

/// A count as a number of elements.
fn elements(count: c_int) -> Result<usize, BridgeError> {
    usize::try_from(count)
        .map_err(|_| BridgeError::InvalidArgument(format!("count {count} is negative")))
}

/// `count` times `blocks`, checked against MPI's int counts.
fn times(count: usize, blocks: u32) -> Result<usize, BridgeError> {
    count
        .checked_mul(blocks as usize)
        .filter(|n| c_int::try_from(*n).is_ok())
        .ok_or_else(|| {
            BridgeError::InvalidArgument(format!(
                "{count} elements for each of {blocks} ranks exceed an int count"
            ))
        })
}

/// The message of `count` elements of `dt` at `buf`, as a leader sends
/// it, once the native step that made them (`step`) returned `rc`.
///
/// # Safety
/// When `rc` is 0, `buf` holds `count` elements of `dt` and stays
/// unchanged while the message lives.
unsafe fn made<'a>(
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
unsafe fn message<'a>(
    buf: *const c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<CollMessage<'a>, BridgeError> {
    let count = c_int::try_from(count).map_err(|_| {
        BridgeError::InvalidArgument(format!("{count} elements exceed an int count"))
    })?;
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
unsafe fn deliver(
    got: (Vec<u8>, isthmus_bridge::Status),
    buf: *mut c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<(), BridgeError> {
    // SAFETY: forwarded from this function's contract.
    unsafe { datatype::decode_received(&got.0, &got.1, buf, count, dt) }.map(drop)
}

/// An MPI failure of a native step raised on `comm`, else the bridge's outcome.
fn outcome(
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

fn role(bc: &BridgeComm, root: c_int) -> Option<Role> {
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

/// `MPI_Bcast` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Bcast`: at the root `buffer` holds `count` elements of
/// `datatype`, at a receiving rank it has room for them.
pub(crate) unsafe fn bcast(
    bc: &BridgeComm,
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Bcast";
    let fail = |e: BridgeError| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |local| {
        match role_or_raise(bc, comm, root, CALL)? {
            Role::Idle => Ok(()),
            Role::Root => {
                // SAFETY: the root's buffer holds `count` elements (MPI_Bcast's contract).
                let msg = elements(count).and_then(|n| unsafe { message(buffer, n, datatype) });
                bc.inter.bcast_send(msg).map_err(fail)
            }
            Role::From(root) => {
                let n = elements(count).map_err(fail)?;
                let max = datatype::capacity_bytes(n, datatype).map_err(fail)?;
                let got = bc.inter.bcast_recv_bytes(local, root, max).map_err(fail)?;
                // SAFETY: the receiving buffer has room for `count` elements.
                unsafe { deliver(got, buffer, n, datatype) }.map_err(fail)
            }
        }
    }))
}

include!(concat!(env!("OUT_DIR"), "/shells_coll.rs"));

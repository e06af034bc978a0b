//! MPI's collective calls on an Isthmus intercommunicator, with MPI's
//! intercommunicator semantics: `MPI_Barrier` (every rank of both groups
//! has entered) and `MPI_Bcast` (`root` is `MPI_ROOT` at the root,
//! `MPI_PROC_NULL` at the rest of its group, and the root's rank in the
//! remote group at every rank of the receiving group). The algorithms are
//! the bridge's (`isthmus_bridge::coll`, local–global–local); this module
//! gives them the job's side as a native communicator, and the buffer
//! through the datatype glue (any datatype, derived ones too, as
//! point-to-point). The C entry points are generated from
//! `mpi-functions.txt` (included at the end).
//!
//! The nonblocking forms (`MPI_Ibarrier`, `MPI_Ibcast`) stay refused: run
//! at `MPI_Wait` they would break MPI's progress rule (a `MPI_Test` loop
//! would never see them complete, and two requests waited in different
//! orders on two ranks would deadlock their native steps).

use std::ffi::{c_int, c_void};

use isthmus_bridge::BridgeError;
use mpi::ffi;
use mpi::topology::SimpleCommunicator;

use crate::datatype;
use crate::errors;
use crate::mpi_glue::{proc_null, MPI_Comm, MPI_Datatype};
use crate::state::BridgeComm;

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
        let Some(role) = role(bc, root) else {
            // MPI's own class, so that MPI_Error_class says MPI_ERR_ROOT.
            tracing::warn!(
                root,
                remote_size = bc.inter.remote_size(),
                "MPI_Bcast: root is neither MPI_ROOT, MPI_PROC_NULL nor a remote rank"
            );
            return Err(errors::raise(comm, ffi::MPI_ERR_ROOT as c_int));
        };
        match role {
            Role::Idle => Ok(()),
            Role::Root => {
                // SAFETY: the root's buffer holds `count` elements (MPI_Bcast's contract).
                let (sig, n, enc) =
                    unsafe { datatype::encode(buffer, count, datatype) }.map_err(fail)?;
                bc.inter.bcast_send_bytes(&sig, n, &enc.bytes).map_err(fail)
            }
            Role::From(root) => {
                let n = usize::try_from(count)
                    .map_err(|_| BridgeError::InvalidArgument(format!("count {count} is negative")))
                    .map_err(fail)?;
                let max = datatype::capacity_bytes(n, datatype).map_err(fail)?;
                let (bytes, st) = bc.inter.bcast_recv_bytes(local, root, max).map_err(fail)?;
                // SAFETY: the receiving buffer has room for `count` elements.
                unsafe { datatype::decode_received(&bytes, &st, buffer, n, datatype) }
                    .map(drop)
                    .map_err(fail)
            }
        }
    }))
}

include!(concat!(env!("OUT_DIR"), "/shells_coll.rs"));

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
use std::mem::ManuallyDrop;
use std::sync::{Mutex, MutexGuard};

use isthmus_bridge::BridgeError;
use mpi::ffi;
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;

use crate::datatype;
use crate::errors;
use crate::mpi_glue::{comm_null, proc_null, MPI_Comm, MPI_Datatype};
use crate::state::BridgeComm;

/// A bridge communicator's local group as a native communicator, for the
/// native steps of its collectives: a private duplicate of its local
/// handle, made at its first collective (every rank of the local group
/// calls every collective of the communicator, in the same order, so every
/// one makes it at the same point) and freed with the communicator. Private,
/// so that the algorithms' native calls (which reach libisthmus's own
/// `MPI_Bcast`) pass straight on to `PMPI_*`, and never meet the program's
/// traffic on the handle.
#[derive(Default)]
pub struct LocalSide(Mutex<Option<Native>>);

/// The duplicate; `ManuallyDrop` because it is freed explicitly, while MPI
/// is sure to be up (`MPI_Comm_free` of the communicator), never by a drop.
struct Native(ManuallyDrop<SimpleCommunicator>);

// SAFETY: an MPI handle is a process-wide value, not tied to the thread
// that made it; MPI's thread level governs its concurrent use, and the
// mutex serializes ours.
unsafe impl Send for Native {}

impl LocalSide {
    /// The native side, duplicated from `comm` (the bridge communicator's
    /// local handle) the first time.
    fn get(&self, comm: MPI_Comm) -> Result<MutexGuard<'_, Option<Native>>, c_int> {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let mut dup = comm_null();
            // SAFETY: `comm` is the live local handle; `dup` an out-pointer.
            let rc = unsafe { ffi::PMPI_Comm_dup(comm, &mut dup) };
            if rc != 0 {
                return Err(rc);
            }
            // SAFETY: a fresh intracommunicator of ours, not a predefined
            // one; never freed by rsmpi (ManuallyDrop), only by `free`.
            *guard = Some(Native(ManuallyDrop::new(unsafe {
                SimpleCommunicator::from_raw(dup)
            })));
        }
        Ok(guard)
    }

    /// Frees the duplicate, if one was made (`MPI_Comm_free` and
    /// `MPI_Comm_disconnect` of the bridge communicator).
    pub fn free(&self) {
        let taken = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(native) = taken {
            let mut raw = mpi::raw::AsRaw::as_raw(&*native.0);
            // SAFETY: our own duplicate, freed once (taken out of the slot).
            unsafe { ffi::PMPI_Comm_free(&mut raw) };
        }
    }
}

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

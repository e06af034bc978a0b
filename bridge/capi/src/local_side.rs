//! A bridge communicator's own native communicator for the local steps of
//! its collectives (`coll`), and the side of its nonblocking collectives
//! (`nbc::side::Side`: a second duplicate, made at the first one), kept with the
//! communicator (`state`).

use std::ffi::c_int;
use std::mem::ManuallyDrop;
use std::sync::{Mutex, MutexGuard};

use mpi::ffi;
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;

use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::nbc::side::Side;

/// A bridge communicator's local group as a native communicator, for the
/// native steps of its collectives: a private duplicate of its local
/// handle, made at its first collective (every rank of the local group
/// calls every collective of the communicator, in the same order, so every
/// one makes it at the same point) and freed with the communicator. Private,
/// so that the algorithms' native calls (which reach libisthmus's own
/// `MPI_Bcast`) pass straight on to `PMPI_*`, and never meet the program's
/// traffic on the handle.
#[derive(Default)]
pub struct LocalSide(Mutex<Option<Native>>, Side);

/// The duplicate; `ManuallyDrop` because it is freed explicitly, while MPI
/// is sure to be up (`MPI_Comm_free` of the communicator), never by a drop.
pub(crate) struct Native(pub(crate) ManuallyDrop<SimpleCommunicator>);

// SAFETY: an MPI handle is a process-wide value, not tied to the thread
// that made it; MPI's thread level governs its concurrent use, and the
// mutex serializes ours.
unsafe impl Send for Native {}

impl LocalSide {
    /// The native side, duplicated from `comm` (the bridge communicator's
    /// local handle) the first time.
    pub(crate) fn get(&self, comm: MPI_Comm) -> Result<MutexGuard<'_, Option<Native>>, c_int> {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let mut dup = comm_null();
            // SAFETY: `comm` is the live local handle; `dup` an out-pointer.
            let rc = unsafe { crate::native_step::comm_dup(comm, &mut dup) };
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

    /// The side of the communicator's nonblocking collectives.
    pub(crate) fn nbc(&self) -> &Side {
        &self.1
    }

    /// Frees the duplicates, if they were made (`MPI_Comm_free` and
    /// `MPI_Comm_disconnect` of the bridge communicator).
    pub fn free(&self) {
        self.1.free();
        let taken = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(native) = taken {
            let mut raw = mpi::raw::AsRaw::as_raw(&*native.0);
            // SAFETY: our own duplicate, freed once (taken out of the slot).
            unsafe { ffi::PMPI_Comm_free(&mut raw) };
        }
    }
}

//! A bridge communicator's side of its nonblocking collectives: their
//! sequence numbers, the native duplicate their native steps run on, and
//! whose turn it is to issue native steps (see the module above).

use std::collections::BTreeSet;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use mpi::ffi;

use crate::mpi_glue::{comm_null, request_null, status_ignore, MPI_Comm, MPI_Request};

/// A bridge communicator's side of its nonblocking collectives: their
/// sequence numbers, the native duplicate their native steps run on, and
/// whose turn it is to issue native steps (kept with the blocking
/// collectives' duplicate, `local_side`).
#[derive(Default)]
pub struct Side {
    next: AtomicU64,
    state: Mutex<SideState>,
}

#[derive(Default)]
struct SideState {
    dup: Dup,
    /// Every operation below `low` has issued all its native steps.
    low: u64,
    /// Operations above `low` that have too.
    done: BTreeSet<u64>,
}

#[derive(Default)]
enum Dup {
    #[default]
    None,
    /// `MPI_Comm_idup` under way (the new handle, its request).
    Pending(MPI_Comm, MPI_Request),
    Ready(MPI_Comm),
}

// SAFETY: MPI handles are process-wide values, not tied to the thread that
// made them; MPI's thread level governs their concurrent use, and the
// mutex serializes ours.
unsafe impl Send for Dup {}

impl Side {
    fn lock(&self) -> MutexGuard<'_, SideState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next operation's sequence number; the first one starts the
    /// native duplicate of `comm` (the communicator's local handle).
    pub(crate) fn begin(&self, comm: MPI_Comm) -> Result<u64, c_int> {
        self.prepare(comm)?;
        Ok(self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Starts the native duplicate of `comm` if it is not yet under way,
    /// without taking a sequence number: a communicator whose first
    /// operation starts inside a schedule (a mixed intercommunicator's
    /// local group) has its duplication begun in program order, like the
    /// collectives the program calls on it.
    pub(crate) fn prepare(&self, comm: MPI_Comm) -> Result<(), c_int> {
        let mut st = self.lock();
        if let Dup::None = st.dup {
            let (mut dup, mut req) = (comm_null(), request_null());
            // SAFETY: `comm` is the live local handle; both out-pointers are ours.
            let rc = unsafe { ffi::PMPI_Comm_idup(comm, &mut dup, &mut req) };
            if rc != 0 {
                return Err(rc);
            }
            st.dup = Dup::Pending(dup, req);
        }
        Ok(())
    }

    /// The native communicator if it is operation `seq`'s turn.
    pub(crate) fn turn(&self, seq: u64) -> Option<MPI_Comm> {
        let mut st = self.lock();
        if st.low != seq {
            return None;
        }
        match std::mem::take(&mut st.dup) {
            Dup::Ready(c) => {
                st.dup = Dup::Ready(c);
                Some(c)
            }
            Dup::Pending(c, mut req) => {
                let mut flag = 0;
                // SAFETY: our own idup request.
                let rc = unsafe { ffi::PMPI_Test(&mut req, &mut flag, status_ignore()) };
                if rc == 0 && flag == 0 {
                    st.dup = Dup::Pending(c, req);
                    return None;
                }
                // A failed duplication leaves a handle the native steps
                // then fail on, with MPI's own error.
                st.dup = Dup::Ready(c);
                Some(c)
            }
            Dup::None => None,
        }
    }

    /// Operation `seq` has issued all its native steps.
    pub(crate) fn pass(&self, seq: u64) {
        let mut st = self.lock();
        st.done.insert(seq);
        loop {
            let low = st.low;
            if !st.done.remove(&low) {
                break;
            }
            st.low += 1;
        }
    }

    /// Frees the native duplicate, if one was made (with the communicator).
    pub(crate) fn free(&self) {
        let dup = std::mem::take(&mut self.lock().dup);
        let mut c = match dup {
            Dup::None => return,
            Dup::Ready(c) => c,
            Dup::Pending(c, mut req) => {
                // SAFETY: our own idup request; every rank of the job
                // started it, so it completes.
                unsafe { ffi::PMPI_Wait(&mut req, status_ignore()) };
                c
            }
        };
        if c != comm_null() {
            // SAFETY: our own duplicate, freed once (taken out of the slot).
            unsafe { ffi::PMPI_Comm_free(&mut c) };
        }
    }
}

//! `MPI_Comm_split` of a merged communicator, where each new communicator
//! holds ranks of one job only: that job's native communicator (split from
//! the merged communicator's handle), at full native speed, as MPI's rank
//! order asks (by key, then merged rank — within a job the local order).
//! A color whose ranks live in both jobs is refused with a precise error at
//! those ranks (an Isthmus communicator over subsets of both jobs needs an
//! intercommunicator between the subsets, not built yet); the other colors
//! are made all the same, so no rank waits for another.

use std::ffi::c_int;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::coll::allgather;
use super::comm::raise;
use super::wire::{mpi, Fail};
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::state::{MergedComm, Place};

/// Every rank's color, as a merged rank's (undefined as -1: the two
/// implementations' `MPI_UNDEFINED` need not agree; MPI's colors are never
/// negative).
fn colors(mc: &MergedComm, comm: MPI_Comm, color: c_int) -> Result<Vec<c_int>, c_int> {
    let mine: c_int = if color == ffi::MPI_UNDEFINED as c_int {
        -1
    } else {
        color
    };
    let mut all = vec![0 as c_int; mc.size() as usize];
    // SAFETY: one int from each rank into `all` (size ints); MPI_INT on both sides.
    let rc = unsafe {
        let int = ffi::RSMPI_INT32_T;
        allgather(
            mc,
            (&raw const mine).cast(),
            1,
            int,
            all.as_mut_ptr().cast(),
            1,
            int,
            comm,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    Ok(all)
}

/// `MPI_Comm_split` on a merged communicator.
///
/// # Safety
/// As `MPI_Comm_split`.
pub(crate) unsafe fn comm_split(
    mc: &MergedComm,
    comm: MPI_Comm,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Comm_split";
    let all = match colors(mc, comm, color) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let mine = all.get(mc.rank() as usize).copied().unwrap_or(-1);
    // Does my color have ranks in the other job?
    let spans = mine >= 0
        && all.iter().enumerate().any(|(r, c)| {
            *c == mine
                && matches!(
                    u32::try_from(r).ok().and_then(|r| mc.place(r)),
                    Some(Place::Remote(_))
                )
        });
    let native_color = if mine < 0 || spans {
        ffi::MPI_UNDEFINED as c_int
    } else {
        mine
    };
    let mut out = comm_null();
    // SAFETY: the program's handle (this job's side of it), our out-handle;
    // every rank of this job calls it.
    let r = mpi(unsafe { ffi::PMPI_Comm_split(comm, native_color, key, &mut out) });
    if let Err(f) = r {
        return raise(comm, CALL, f);
    }
    if spans {
        let e = BridgeError::InvalidArgument(format!(
            "color {mine} has ranks in both jobs of the merged Isthmus communicator; a split \
             whose new communicator spans both jobs is not supported yet (each job's colors of \
             its own are)"
        ));
        // SAFETY: the program's out-pointer.
        unsafe { *newcomm = comm_null() };
        return raise(comm, CALL, Fail::Bridge(e));
    }
    // SAFETY: the program's out-pointer.
    unsafe { *newcomm = out };
    0
}

//! `MPI_Ibarrier` on a merged communicator: a native barrier in each job,
//! the leaders' exchange of empty messages (each says that its job has
//! entered), and each leader's word to its job.

use std::ffi::c_int;

use mpi::ffi;

use super::setup::{exchange, message, start, Call};
use crate::mpi_glue::{byte, MPI_Comm, MPI_Request};
use crate::state::MergedComm;

/// `MPI_Ibarrier` on a merged communicator.
///
/// # Safety
/// As `MPI_Ibarrier`.
pub(crate) unsafe fn ibarrier(mc: &MergedComm, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ibarrier",
    };
    // SAFETY: the program's request (checked by `start`); no buffer of the
    // program's is used.
    unsafe {
        start(mc, call, |op, bc| {
            exchange(
                op,
                bc,
                // SAFETY: the job's native communicator and a request of ours.
                Box::new(|c, r| ffi::PMPI_Ibarrier(c, r)),
                // SAFETY: an empty message names no memory.
                || message(std::ptr::null(), 0, byte()),
                0,
                "barrier",
                |_, _| Ok(()),
            )
        })
    }
}

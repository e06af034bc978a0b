//! `MPI_Iallgather` on a merged communicator: each job gathers its blocks
//! natively into its slice of every rank's buffer, the leaders trade their
//! jobs' slices, and each leader hands the other job's to its job.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::setup::{decode, exchange, message, offsets, per_rank, start, Call};
use super::vector::allgatherv;
use crate::collbuf::{elements, int, Extents};
use crate::datatype;
use crate::merged::comm::raise;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::state::MergedComm;

/// `MPI_Iallgather` on a merged communicator (`MPI_IN_PLACE` too: the
/// native step takes it).
///
/// # Safety
/// As `MPI_Iallgather`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iallgather(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if !mc.order.contiguous_jobs() {
        return match per_rank(mc, recvcount, true) {
            // SAFETY: MPI_Iallgather's contract; the arrays are read while
            // the call starts.
            Ok((counts, displs)) => unsafe {
                allgatherv(
                    mc,
                    "MPI_Iallgather",
                    sendbuf,
                    sendcount,
                    sendtype,
                    recvbuf,
                    counts.as_ptr(),
                    displs.as_ptr(),
                    recvtype,
                    comm,
                    request,
                )
            },
            Err(f) => raise(comm, "MPI_Iallgather", f),
        };
    }
    let call = Call {
        comm,
        request,
        name: "MPI_Iallgather",
    };
    let (mine, theirs) = offsets(mc);
    let (local, remote) = (mc.order.local_ranks().len(), mc.order.remote_ranks().len());
    // SAFETY: MPI_Iallgather's contract.
    unsafe {
        start(mc, call, |op, bc| {
            let k = elements(recvcount)?;
            let e = Extents::of(recvtype)?;
            let (at_mine, at_theirs) = (e.at(recvbuf, mine * k)?, e.at(recvbuf, theirs * k)?);
            let (out_n, in_n) = (int(local * k)?, remote * k);
            let max = datatype::capacity_bytes(in_n, recvtype)?;
            exchange(
                op,
                bc,
                Box::new(move |c, r| {
                    // SAFETY: this job's slice of the program's receive buffer.
                    ffi::PMPI_Iallgather(
                        sendbuf, sendcount, sendtype, at_mine, recvcount, recvtype, c, r,
                    )
                }),
                // SAFETY: the slice holds this job's blocks, unchanged until sent.
                move || message(at_mine, out_n, recvtype),
                max,
                "allgather",
                // SAFETY: the other job's slice has room for its blocks.
                move |b, s| decode(&(b, s), at_theirs, in_n, recvtype),
            )
        })
    }
}

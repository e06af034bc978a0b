//! `MPI_Ialltoall` on a merged communicator: the blocks between ranks of
//! one job by a native all-to-all over the job's slice of the buffers, the
//! blocks between the jobs directly from the rank that has them to the
//! rank that wants them (no more bridge traffic than the data).

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::setup::{beside, message, offsets, per_rank, start, Call, Into};
use super::vector::alltoallv;
use crate::collbuf::{elements, is_in_place, Extents};
use crate::merged::comm::raise;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::state::MergedComm;

/// `MPI_Ialltoall` on a merged communicator (`MPI_IN_PLACE` too: the
/// blocks then come from `recvbuf`, in `recvcount` and `recvtype`).
///
/// # Safety
/// As `MPI_Ialltoall`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ialltoall(
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
        let arrays = per_rank(mc, sendcount, !is_in_place(sendbuf))
            .and_then(|s| Ok((s, per_rank(mc, recvcount, true)?)));
        return match arrays {
            // SAFETY: MPI_Ialltoall's contract; the arrays are read while
            // the call starts.
            Ok(((sc, sd), (rc, rd))) => unsafe {
                alltoallv(
                    mc,
                    "MPI_Ialltoall",
                    sendbuf,
                    sc.as_ptr(),
                    sd.as_ptr(),
                    sendtype,
                    recvbuf,
                    rc.as_ptr(),
                    rd.as_ptr(),
                    recvtype,
                    comm,
                    request,
                )
            },
            Err(f) => raise(comm, "MPI_Ialltoall", f),
        };
    }
    let call = Call {
        comm,
        request,
        name: "MPI_Ialltoall",
    };
    let (mine, theirs) = offsets(mc);
    let remote = mc.order.remote_ranks().len();
    // SAFETY: MPI_Ialltoall's contract.
    unsafe {
        start(mc, call, |op, bc| {
            let in_place = is_in_place(sendbuf);
            let (sbuf, scount, stype) = if in_place {
                (recvbuf.cast_const(), recvcount, recvtype)
            } else {
                (sendbuf, sendcount, sendtype)
            };
            let (sk, rk) = (elements(scount)?, elements(recvcount)?);
            let (se, re) = (Extents::of(stype)?, Extents::of(recvtype)?);
            let mut sends = Vec::with_capacity(remote);
            let mut recvs: Vec<Into> = Vec::with_capacity(remote);
            for j in 0..remote {
                let from = se.at(sbuf, (theirs + j) * sk)?;
                sends.push((j as u32, message(from, scount, stype)));
                recvs.push((j as u32, re.at(recvbuf, (theirs + j) * rk)?, rk, recvtype));
            }
            let local_send = if in_place {
                sendbuf
            } else {
                se.at(sendbuf, mine * sk)?.cast_const()
            };
            let local_recv = re.at(recvbuf, mine * rk)?;
            beside(
                op,
                bc,
                Box::new(move |c, r| {
                    // SAFETY: this job's slice of the program's buffers.
                    ffi::PMPI_Ialltoall(
                        local_send, sendcount, sendtype, local_recv, recvcount, recvtype, c, r,
                    )
                }),
                sends,
                recvs,
            )
        })
    }
}

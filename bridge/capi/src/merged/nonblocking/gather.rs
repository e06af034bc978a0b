//! `MPI_Igather` on a merged communicator: each job gathers natively (the
//! root's job to the root, into its slice of the receive buffer; the other
//! to its leader), and the other job's leader sends its job's blocks to
//! the root.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::setup::{at_root, beside, offsets, per_rank, start, to_remote_root, Call, ToLeader};
use super::vector::gatherv;
use crate::collbuf::{elements, int, Extents, LeaderRoom};
use crate::merged::comm::raise;
use crate::merged::wire::root_place;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::Fail;
use crate::state::{MergedComm, Place};

/// `MPI_Igather` on a merged communicator (`MPI_IN_PLACE` at the root: the
/// native step takes it).
///
/// # Safety
/// As `MPI_Igather`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn igather(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if !mc.order.contiguous_jobs() {
        return match per_rank(mc, recvcount, at_root(mc, root)) {
            // SAFETY: MPI_Igather's contract; the arrays are read while the
            // call starts.
            Ok((counts, displs)) => unsafe {
                gatherv(
                    mc,
                    "MPI_Igather",
                    sendbuf,
                    sendcount,
                    sendtype,
                    recvbuf,
                    counts.as_ptr(),
                    displs.as_ptr(),
                    recvtype,
                    root,
                    comm,
                    request,
                )
            },
            Err(f) => raise(comm, "MPI_Igather", f),
        };
    }
    let call = Call {
        comm,
        request,
        name: "MPI_Igather",
    };
    let place = root_place(mc, root);
    let (mine, theirs) = offsets(mc);
    let (local, remote) = (mc.order.local_ranks().len(), mc.order.remote_ranks().len());
    // SAFETY: MPI_Igather's contract.
    unsafe {
        start(mc, call, |op, bc| match place.map_err(Fail::from)? {
            Place::Remote(r) => {
                let total = elements(sendcount)?.saturating_mul(local);
                let room = LeaderRoom::new(bc.inter.rank() == 0, total, sendtype)?;
                let native: ToLeader = Box::new(move |c, at, q| {
                    // SAFETY: the program's send buffer; the room holds
                    // every local rank's block at the leader.
                    ffi::PMPI_Igather(
                        sendbuf, sendcount, sendtype, at, sendcount, sendtype, 0, c, q,
                    )
                });
                to_remote_root(op, bc, room, (int(total)?, sendtype), native, r, "gather")
            }
            Place::Local(r) => {
                let lr = int(r as usize)?;
                let at_root = bc.inter.rank() == r;
                let (at_mine, recvs) = if at_root {
                    let k = elements(recvcount)?;
                    let e = Extents::of(recvtype)?;
                    let into = (0, e.at(recvbuf, theirs * k)?, remote * k, recvtype);
                    (e.at(recvbuf, mine * k)?, vec![into])
                } else {
                    (recvbuf, vec![])
                };
                let native = Box::new(move |c, q| {
                    // SAFETY: the program's buffers (the receive one, this
                    // job's slice, at the root only).
                    ffi::PMPI_Igather(
                        sendbuf, sendcount, sendtype, at_mine, recvcount, recvtype, lr, c, q,
                    )
                });
                beside(op, bc, native, vec![], recvs)
            }
        })
    }
}

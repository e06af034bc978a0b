//! `MPI_Iscatter` on a merged communicator: the root scatters its job's
//! slice natively and sends the other job's slice to that job's leader,
//! which scatters it natively in its job.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use mpi::ffi;

use super::setup::{at_root, beside, decode, message, offsets, per_rank, start, Call};
use super::vector::scatterv;
use crate::collbuf::{elements, int, Extents};
use crate::datatype;
use crate::merged::comm::raise;
use crate::merged::wire::root_place;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{share, Fail, Share, Stage, Wait};
use crate::state::{MergedComm, Place};

/// `MPI_Iscatter` on a merged communicator (`MPI_IN_PLACE` at the root:
/// the native step takes it).
///
/// # Safety
/// As `MPI_Iscatter`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iscatter(
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
        return match per_rank(mc, sendcount, at_root(mc, root)) {
            // SAFETY: MPI_Iscatter's contract; the arrays are read while the
            // call starts.
            Ok((counts, displs)) => unsafe {
                scatterv(
                    mc,
                    "MPI_Iscatter",
                    sendbuf,
                    counts.as_ptr(),
                    displs.as_ptr(),
                    sendtype,
                    recvbuf,
                    recvcount,
                    recvtype,
                    root,
                    comm,
                    request,
                )
            },
            Err(f) => raise(comm, "MPI_Iscatter", f),
        };
    }
    let call = Call {
        comm,
        request,
        name: "MPI_Iscatter",
    };
    let place = root_place(mc, root);
    let (mine, theirs) = offsets(mc);
    let remote = mc.order.remote_ranks().len();
    // SAFETY: MPI_Iscatter's contract.
    unsafe {
        start(mc, call, |op, bc| match place.map_err(Fail::from)? {
            Place::Remote(r) => {
                let n = elements(recvcount)?;
                let max = datatype::capacity_bytes(n, recvtype)?
                    .saturating_mul(bc.inter.local_size() as usize);
                let leader = bc.inter.rank() == 0;
                let waits = if leader {
                    vec![Wait::Recv(bc.inter.nbc_irecv(r, op.seq(), max)?)]
                } else {
                    vec![]
                };
                let bc = Arc::clone(bc);
                Ok(Stage::native(waits, move |cx, mut a| {
                    let got = leader.then(|| bc.inter.nbc_received(r, a.received()));
                    share(cx, r, got, max, Share::Even, "scatter", move |b, s| {
                        // SAFETY: the program's receive buffer has room for
                        // `recvcount` elements.
                        decode(&(b, s), recvbuf, n, recvtype)
                    })
                }))
            }
            Place::Local(r) => {
                let lr = int(r as usize)?;
                let (at_mine, sends) = if bc.inter.rank() == r {
                    let k = elements(sendcount)?;
                    let e = Extents::of(sendtype)?;
                    let slice = e.at(sendbuf, theirs * k)?;
                    let msg = int(remote * k).and_then(|t| message(slice, t, sendtype));
                    (e.at(sendbuf, mine * k)?.cast_const(), vec![(0, msg)])
                } else {
                    (sendbuf, vec![])
                };
                let native = Box::new(move |c, q| {
                    // SAFETY: the program's buffers (the send one, this
                    // job's slice, at the root only).
                    ffi::PMPI_Iscatter(
                        at_mine, sendcount, sendtype, recvbuf, recvcount, recvtype, lr, c, q,
                    )
                });
                beside(op, bc, native, sends, vec![])
            }
        })
    }
}

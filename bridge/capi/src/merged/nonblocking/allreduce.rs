//! `MPI_Iallreduce` on a merged communicator: each job allreduces
//! natively, the leaders trade their jobs' results, each leader hands the
//! other job's to its job, and every rank combines the two as `low op
//! high` (the first group's result first, as the blocking one does).

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::ordered::{self, Fold, Keep};
use super::setup::{combine, decode, exchange, message, start, Call};
use crate::collbuf::{elements, input, Extents, Scratch};
use crate::datatype;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::state::MergedComm;
use crate::unsigned_ops::native_op;

/// `MPI_Iallreduce` on a merged communicator (`MPI_IN_PLACE` as MPI
/// allows it: the native step takes it).
///
/// # Safety
/// As `MPI_Iallreduce`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iallreduce(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Iallreduce",
    };
    let (low, native) = (mc.low, mc.native);
    // SAFETY: MPI_Iallreduce's contract.
    unsafe {
        start(mc, call, |sched, bc| {
            if ordered::needed(mc, op, dt)? {
                let keep = Some(Keep::all(recvbuf, count));
                let input = input(sendbuf, recvbuf);
                // SAFETY: the program's buffers, valid until completion.
                return ordered::fold_in_order(
                    sched,
                    bc,
                    mc,
                    input,
                    count,
                    dt,
                    op,
                    Fold::All,
                    keep,
                );
            }
            let n = elements(count)?;
            let max = datatype::capacity_bytes(n, dt)?;
            let mut theirs = Scratch::new(n, &Extents::of(dt)?)?;
            let nop = native_op(op, dt);
            exchange(
                sched,
                bc,
                // SAFETY: the program's buffers and handles, valid until completion.
                Box::new(move |c, r| ffi::PMPI_Iallreduce(sendbuf, recvbuf, count, dt, nop, c, r)),
                // SAFETY: recvbuf holds this job's result, unchanged until the send completes.
                move || message(recvbuf, count, dt),
                max,
                "allreduce",
                move |bytes, st| {
                    let t = theirs.ptr();
                    // SAFETY: the scratch has room for `count` elements.
                    decode(&(bytes, st), t, n, dt)?;
                    // SAFETY: both hold `count` elements; `native` lives
                    // with the communicator.
                    combine(low, recvbuf, t, count, dt, op, native)
                },
            )
        })
    }
}

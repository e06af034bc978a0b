//! `MPI_Ireduce_scatter` and its block form on a merged communicator: an
//! allreduce of the whole vector (each job natively, the leaders' exchange, `low op
//! high` at every rank, as `allreduce`), of which each rank keeps its
//! block. The whole vector crosses between the leaders, not just the
//! other job's blocks: simple, at twice the data of the best algorithm.

use std::ffi::{c_int, c_void};

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::ordered::{self, Fold, Keep};
use super::setup::{combine, decode, exchange, message, start, Call};
use crate::collbuf::{elements, input, int, ints, Extents, Scratch};
use crate::datatype;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::Fail;
use crate::state::MergedComm;
use crate::unsigned_ops::native_op;

/// The whole vector's allreduce of which this rank keeps `mine` elements
/// from element `at`: `total` elements in all.
struct Blocks {
    total: usize,
    at: usize,
    mine: c_int,
}

/// Either form's schedule.
///
/// # Safety
/// As `MPI_Ireduce_scatter`.
#[allow(clippy::too_many_arguments)] // MPI's own, and the blocks
unsafe fn reduce_scatter(
    mc: &MergedComm,
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    blocks: impl FnOnce() -> Result<Blocks, BridgeError>,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> c_int {
    let (low, native) = (mc.low, mc.native);
    // SAFETY: this function's contract.
    unsafe {
        start(mc, call, |sched, bc| {
            let Blocks { total, at, mine } = blocks()?;
            let count = int(total)?;
            let e = Extents::of(dt)?;
            if ordered::needed(mc, op, dt)? {
                // Every rank folds the whole vector and keeps its block.
                let keep = Some(Keep {
                    into: recvbuf,
                    from: at,
                    count: mine,
                });
                let from = input(sendbuf, recvbuf);
                // SAFETY: the program's input holds the whole vector.
                return ordered::fold_in_order(sched, bc, mc, from, count, dt, op, Fold::All, keep);
            }
            let (mut whole, mut theirs) = (Scratch::new(total, &e)?, Scratch::new(total, &e)?);
            let w = whole.ptr();
            let block = e.at(w, at)?;
            let max = datatype::capacity_bytes(total, dt)?;
            let from = input(sendbuf, recvbuf);
            let nop = native_op(op, dt);
            exchange(
                sched,
                bc,
                // SAFETY: the program's input holds the whole vector; the
                // scratch has room for it.
                Box::new(move |c, r| ffi::PMPI_Iallreduce(from, w, count, dt, nop, c, r)),
                // SAFETY: the scratch holds this job's result until sent.
                move || message(w, count, dt),
                max,
                "reduce_scatter",
                move |b, s| {
                    let t = theirs.ptr();
                    decode(&(b, s), t, total, dt)?;
                    combine(low, w, t, count, dt, op, native)?;
                    // SAFETY: the block holds `mine` elements; the receive
                    // buffer has room for them.
                    crate::merged::wire::copy(native, block, recvbuf, mine, dt)
                        .map_err(Fail::from)?;
                    drop(whole);
                    Ok(())
                },
            )
        })
    }
}

/// `MPI_Ireduce_scatter_block` on a merged communicator (`MPI_IN_PLACE`
/// too: the input is then the receive buffer).
///
/// # Safety
/// As `MPI_Ireduce_scatter_block`: the buffers stay the program's until
/// the request completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ireduce_scatter_block(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ireduce_scatter_block",
    };
    let (size, rank) = (mc.size() as usize, mc.rank() as usize);
    let blocks = || {
        let k = elements(recvcount)?;
        Ok(Blocks {
            total: k.saturating_mul(size),
            at: rank * k,
            mine: recvcount,
        })
    };
    // SAFETY: forwarded.
    unsafe { reduce_scatter(mc, call, sendbuf, recvbuf, blocks, dt, op) }
}

/// `MPI_Ireduce_scatter` on a merged communicator: rank i keeps
/// `recvcounts[i]` elements (`MPI_IN_PLACE` too).
///
/// # Safety
/// As `MPI_Ireduce_scatter`: the buffers and the counts stay the
/// program's until the request completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ireduce_scatter(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ireduce_scatter",
    };
    let (size, rank) = (mc.size() as usize, mc.rank() as usize);
    let blocks = || {
        // SAFETY: MPI's recvcounts has one count per rank.
        let counts = unsafe { ints(recvcounts, size) }?;
        let sizes = counts
            .iter()
            .map(|c| elements(*c))
            .collect::<Result<Vec<_>, _>>()?;
        let at = sizes.iter().take(rank).sum();
        let mine = counts.get(rank).copied().unwrap_or(0);
        Ok(Blocks {
            total: sizes.iter().sum(),
            at,
            mine,
        })
    };
    // SAFETY: forwarded.
    unsafe { reduce_scatter(mc, call, sendbuf, recvbuf, blocks, dt, op) }
}

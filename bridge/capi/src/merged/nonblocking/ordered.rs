//! The order-dependent nonblocking reductions on an order that interleaves
//! (or reorders) the two jobs: Iallreduce, Ireduce and
//! Ireduce_scatter(_block) by a non-commutative operation, Iscan and
//! Iexscan. There a job's native step gives no run of MPI's rank order, so
//! every rank gets every input — its own job's by a native all-gather, the
//! other job's by the leaders' exchange, shared whole — and folds them in
//! merged-rank order itself (`MPI_Reduce_local`, left to right), as the
//! blocking ones' `merged::ordered` does at the leaders. O(size) data at
//! every rank: the price of an order nothing cheaper serves.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::setup::{decode, exchange, message, mpi};
use crate::collbuf::{elements, int, Extents, Scratch};
use crate::datatype;
use crate::mpi_glue::MPI_Datatype;
use crate::nbc::{Fail, Op, Stage, Step};
use crate::state::{BridgeComm, MergedComm, Place};
use crate::unsigned_ops::native_op;

/// Whose inputs a rank folds, from merged rank 0 on.
#[derive(Clone, Copy)]
pub(super) enum Fold {
    /// Every rank's (the reductions).
    All,
    /// Up to this rank's own, included (`MPI_Iscan`).
    Inclusive,
    /// Up to this rank's own, excluded (`MPI_Iexscan`: nothing at merged
    /// rank 0).
    Exclusive,
}

/// Whether a reduction by `op` on `dt` over `mc` must fold in order here:
/// an order that does not keep each job's ranks together and a
/// non-commutative operation.
pub(super) fn needed(
    mc: &MergedComm,
    op: ffi::MPI_Op,
    dt: MPI_Datatype,
) -> Result<bool, crate::merged::wire::Fail> {
    Ok(!mc.order.contiguous_jobs() && !crate::merged::ordered::commutative(op, dt)?)
}

/// Where a rank keeps its fold: `count` elements from element `from` of
/// the fold (a reduce-scatter's block) into the program's `into`; `None`
/// keeps nothing (an Ireduce away from its root). An exclusive scan at
/// merged rank 0 has nothing folded and leaves `into` as it was.
#[derive(Clone, Copy)]
pub(super) struct Keep {
    pub(super) into: *mut c_void,
    pub(super) from: usize,
    pub(super) count: c_int,
}

impl Keep {
    /// The whole fold of `count` elements into `into`.
    pub(super) fn all(into: *mut c_void, count: c_int) -> Keep {
        Keep {
            into,
            from: 0,
            count,
        }
    }
}

/// The schedule: the native all-gather of `input` (`count` elements of
/// `dt` at every rank), the leaders' exchange of their job's inputs, and
/// at every rank the fold by `op` that `fold` says, kept as `keep` says.
///
/// # Safety
/// `input` holds `count` elements of `dt` until the native step
/// completes; `keep`'s `into` has room for its `count` elements until the
/// request completes.
#[allow(clippy::too_many_arguments)] // the reduction's own arguments
pub(super) unsafe fn fold_in_order(
    sched: &Op,
    bc: &Arc<BridgeComm>,
    mc: &MergedComm,
    input: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    fold: Fold,
    keep: Option<Keep>,
) -> Result<Stage, Fail> {
    let n = elements(count)?;
    let e = Extents::of(dt)?;
    let (local, remote) = (mc.order.local_ranks().len(), mc.order.remote_ranks().len());
    let elems = |ranks: usize| {
        n.checked_mul(ranks).ok_or_else(|| {
            BridgeError::InvalidArgument(format!("{n} elements from {ranks} ranks overflow"))
        })
    };
    let (all_mine, all_theirs) = (elems(local)?, elems(remote)?);
    let (mut mine, mut theirs) = (Scratch::new(all_mine, &e)?, Scratch::new(all_theirs, &e)?);
    let (mine_p, theirs_p) = (mine.ptr(), theirs.ptr());
    let mine_count = int(all_mine)?;
    let max = datatype::capacity_bytes(all_theirs, dt)?;
    let order = mc.order.clone();
    let me = order.rank();
    let end = match fold {
        Fold::All => order.size(),
        Fold::Inclusive => me + 1,
        Fold::Exclusive => me,
    };
    let (nop, native) = (native_op(op, dt), mc.native);
    exchange(
        sched,
        bc,
        // SAFETY: the program's input; the scratch has room for every
        // local rank's `count` elements.
        Box::new(move |c, r| unsafe {
            ffi::PMPI_Iallgather(input, count, dt, mine_p, count, dt, c, r)
        }),
        // SAFETY: the scratch holds this job's inputs until the send
        // completes (the exchange waits for it before `then`, which owns
        // the scratch).
        move || unsafe { message(mine_p, mine_count, dt) },
        max,
        "ordered reduction",
        move |bytes, st| {
            // SAFETY: the scratch has room for every remote rank's input.
            unsafe { decode(&(bytes, st), theirs_p, all_theirs, dt) }?;
            let input_of = |m: u32| -> Step<*mut c_void> {
                let at = match order.place(m) {
                    Some(Place::Local(i)) => e.at(mine_p, i as usize * n),
                    Some(Place::Remote(j)) => e.at(theirs_p, j as usize * n),
                    None => Err(BridgeError::Protocol(format!(
                        "merged rank {m} has no place"
                    ))),
                };
                at.map_err(Fail::from)
            };
            let mut acc: Option<*mut c_void> = None;
            for m in 0..end {
                let x = input_of(m)?;
                if let Some(a) = acc {
                    // MPI_Reduce_local(in, inout): inout = in op inout, so
                    // x becomes (inputs before m) op x.
                    // SAFETY: both hold `count` elements of `dt`.
                    mpi(unsafe { crate::local_reduce::reduce_local(a, x, count, dt, nop) })?;
                }
                acc = Some(x);
            }
            if let (Some(a), Some(k)) = (acc, keep) {
                let part = e.at(a, k.from)?;
                // SAFETY: the fold holds `count` elements, `k.count` of
                // them from `k.from`; `k.into` has room for them.
                unsafe { crate::merged::wire::copy(native, part, k.into, k.count, dt) }?;
            }
            drop((mine, theirs));
            Ok(())
        },
    )
}

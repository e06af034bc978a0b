//! MPI's collectives on a merged communicator, local–global–local: each
//! job's part natively on the communicator's private native side, O(1)
//! bridge messages between the two jobs' leaders (local rank 0), or
//! between a root and the other job's leader, for the rooted and reducing
//! ones, and the personalized data of Alltoall directly between the ranks
//! that own it.
//!
//! In the merge's order each job's ranks are contiguous (`MergedComm`), so
//! a job's native collective on its slice of the buffers is the merged
//! one's part for that job, in MPI's rank order. Reductions (user-defined
//! operations too, commutative or not) reduce each job natively, then
//! combine the two partial results with `MPI_Reduce_local` as
//! `low op high` (the first group's result first), which both leaders
//! compute alike (`MPI_Reduce`: the root alone).
//!
//! A split may interleave the jobs' ranks: then the gathers, scatters and
//! all-to-alls are their v-forms (`vcoll`) with the blocks where the
//! merged order puts them, a commutative reduction is the same
//! local–global–local, and a non-commutative one or a prefix goes through
//! `ordered`.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::comm::raise;
use super::ordered;
use super::vcoll;
use super::wire::{
    blocks, complete, copy, leader_step, mpi, post, recv, root_place, send, send_lent, Fail,
    TAG_ALLGATHER, TAG_ALLTOALL, TAG_BARRIER, TAG_BCAST, TAG_GATHER, TAG_REDUCE, TAG_REDUCE_ROOT,
    TAG_SCAN, TAG_SCATTER,
};
use crate::collbuf::{elements, input, int, ints, is_in_place, Extents, LeaderRoom, Scratch};
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};
use crate::state::{MergedComm, Place};
use crate::unsigned_ops::native_op;

fn code(comm: MPI_Comm, call: &str, r: Result<(), Fail>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(f) => raise(comm, call, f),
    }
}

fn leader(mc: &MergedComm) -> bool {
    mc.inter.rank() == 0
}

/// The merged ranks of this job's and the other job's first ranks (the
/// merge's contiguous order).
fn offsets(mc: &MergedComm) -> (usize, usize) {
    let first = |v: &[u32]| v.first().copied().unwrap_or(0) as usize;
    (
        first(mc.order.local_ranks()),
        first(mc.order.remote_ranks()),
    )
}

/// This job's and the other job's slices of `buf`, `count` elements of `dt`
/// per merged rank (a root's buffer, or every rank's in the all-forms), in
/// the merge's contiguous order.
fn slices(
    mc: &MergedComm,
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
) -> Result<(*mut c_void, *mut c_void), Fail> {
    let e = Extents::of(dt)?;
    let k = elements(count)?;
    Ok((e.at(buf, offsets(mc).0 * k)?, e.at(buf, offsets(mc).1 * k)?))
}

/// `MPI_Barrier` on a merged communicator.
///
/// # Safety
/// As `MPI_Barrier`.
pub(crate) unsafe fn barrier(mc: &MergedComm, comm: MPI_Comm) -> c_int {
    let run = || {
        // SAFETY: the private native side.
        mpi(unsafe { crate::native_step::barrier(mc.native) })?;
        leader_step(mc.native, leader(mc), || {
            let sent = mc.coll.isend::<u8>(0, TAG_BARRIER, &[])?;
            mc.coll.recv::<u8>(
                isthmus_bridge::Source::Rank(0),
                isthmus_bridge::Tag::Value(TAG_BARRIER),
                &mut [],
            )?;
            sent.wait()?;
            Ok(())
        })
    };
    code(comm, "MPI_Barrier", run())
}

/// `MPI_Bcast` on a merged communicator: natively in the root's job, from
/// the root to the other job's leader over the bridge, natively there.
///
/// # Safety
/// As `MPI_Bcast`.
pub(crate) unsafe fn bcast(
    mc: &MergedComm,
    buffer: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let run = || {
        let nn = elements(n)?;
        match root_place(mc, root)? {
            Place::Local(r) => {
                let lr = int(r as usize)?;
                // SAFETY: the program's buffer, as for MPI_Bcast.
                mpi(unsafe { crate::native_step::bcast(buffer, n, dt, lr, mc.native) })?;
                if mc.inter.rank() == r {
                    // SAFETY: the root's buffer holds `n` elements.
                    unsafe { send_lent(&mc.coll, 0, TAG_BCAST, buffer, nn, dt) }?.wait()?;
                }
                Ok(())
            }
            Place::Remote(r) => {
                leader_step(mc.native, leader(mc), || {
                    // SAFETY: the program's buffer has room for `n` elements.
                    Ok(unsafe { recv(&mc.coll, r, TAG_BCAST, buffer, nn, dt) }?)
                })?;
                // SAFETY: as above.
                mpi(unsafe { crate::native_step::bcast(buffer, n, dt, 0, mc.native) })
            }
        }
    };
    code(comm, "MPI_Bcast", run())
}

/// Reduces `input` over both jobs: at each job's leader, the result
/// (`low op high`) in a scratch buffer; `None` elsewhere. Every rank
/// learns whether its leader's exchange went well.
///
/// # Safety
/// `input` addresses `n` elements of `dt`.
unsafe fn reduce_to_leaders(
    mc: &MergedComm,
    input: *const c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<Option<Scratch>, Fail> {
    if !mc.order.contiguous_jobs() && !ordered::commutative(op, dt)? {
        // SAFETY: forwarded.
        return unsafe { ordered::reduce_to_leaders(mc, input, n, dt, op) };
    }
    let nn = elements(n)?;
    let e = Extents::of(dt)?;
    let mut mine = Scratch::new(nn, &e)?;
    // SAFETY: `input` as the caller says; `mine` has room for `n` elements.
    mpi(unsafe {
        crate::native_step::reduce(input, mine.ptr(), n, dt, native_op(op, dt), 0, mc.native)
    })?;
    let mut out = None;
    leader_step(mc.native, leader(mc), || {
        let mut theirs = Scratch::new(nn, &e)?;
        // SAFETY: both scratch buffers hold `n` elements; `mine` is not
        // touched before `sent` is waited for or dropped.
        let sent = unsafe { send_lent(&mc.coll, 0, TAG_REDUCE, mine.ptr(), nn, dt) }?;
        // SAFETY: as above.
        unsafe { recv(&mc.coll, 0, TAG_REDUCE, theirs.ptr(), nn, dt) }?;
        sent.wait()?;
        // MPI_Reduce_local(in, inout): inout = in op inout; so low op high.
        let (mut first, mut second) = if mc.low {
            (mine, theirs)
        } else {
            (theirs, mine)
        };
        // SAFETY: two scratch buffers of `n` elements of `dt`.
        mpi(unsafe {
            crate::local_reduce::reduce_local(first.ptr(), second.ptr(), n, dt, native_op(op, dt))
        })?;
        out = Some(second);
        Ok(())
    })?;
    Ok(out)
}

/// Allreduce into `recvbuf` at every rank of both jobs.
///
/// # Safety
/// As `MPI_Allreduce`.
unsafe fn allreduce_into(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<(), Fail> {
    if mc.order.contiguous_jobs() || ordered::commutative(op, dt)? {
        // SAFETY: the program's buffers, as for MPI_Allreduce.
        unsafe { reduce_into_leaders(mc, sendbuf, recvbuf, n, dt, op) }?;
    } else {
        // SAFETY: as above.
        let at_leader = unsafe { reduce_to_leaders(mc, input(sendbuf, recvbuf), n, dt, op) }?;
        if let Some(mut r) = at_leader {
            // SAFETY: `r` holds `n` elements; `recvbuf` has room for them.
            unsafe { copy(mc.native, r.ptr(), recvbuf, n, dt) }?;
        }
    }
    // SAFETY: the program's buffer has room for `n` elements.
    mpi(unsafe { crate::native_step::bcast(recvbuf, n, dt, 0, mc.native) })
}

/// The reduction over both jobs (`low op high`) into `recvbuf` at each
/// job's leader, with as few copies as the order of the operands allows
/// (a merged 1 MiB Allreduce went through two scratch buffers and a copy
/// into `recvbuf`, half again Open MPI's own time): the low job reduces
/// natively into scratch (a job of one rank sends its input as it is)
/// and receives the other's result into `recvbuf`, where `MPI_Reduce_local`
/// makes it `mine op theirs`; the high job reduces natively into `recvbuf`
/// and receives into scratch (`theirs op mine`). Each job's ranks in one
/// run of the merged order, or a commutative operation.
///
/// # Safety
/// As `MPI_Allreduce` (`sendbuf` may be `MPI_IN_PLACE`).
unsafe fn reduce_into_leaders(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<(), Fail> {
    let (nn, e, nop, lead) = (
        elements(n)?,
        Extents::of(dt)?,
        native_op(op, dt),
        leader(mc),
    );
    let input = input(sendbuf, recvbuf);
    let native_reduce = |into: *mut c_void| {
        // The native reduce's input: at its root (the leader) reducing
        // into `recvbuf`, `MPI_IN_PLACE` as the program gave it (the input
        // is there); the data itself otherwise (a root that reduces into
        // scratch would take `MPI_IN_PLACE` as the scratch's contents).
        let native_in = if lead && into == recvbuf {
            sendbuf
        } else {
            input
        };
        // SAFETY: the program's input; `into` has room for `n` elements at
        // the leader (not read elsewhere).
        mpi(unsafe { crate::native_step::reduce(native_in, into, n, dt, nop, 0, mc.native) })
    };
    if mc.low {
        let alone = mc.order.local_ranks().len() == 1 && !is_in_place(sendbuf);
        let mut room = Scratch::new(if lead && !alone { nn } else { 0 }, &e)?;
        let mine: *const c_void = if alone {
            input
        } else {
            native_reduce(room.ptr())?;
            room.ptr()
        };
        leader_step(mc.native, lead, || {
            // SAFETY: `mine` holds `n` elements, unchanged until `sent`
            // is waited for; `recvbuf` has room for `n`.
            let sent = unsafe { send_lent(&mc.coll, 0, TAG_REDUCE, mine, nn, dt) }?;
            // SAFETY: as above.
            unsafe { recv(&mc.coll, 0, TAG_REDUCE, recvbuf, nn, dt) }?;
            sent.wait()?;
            // MPI_Reduce_local(in, inout): inout = in op inout.
            // SAFETY: both hold `n` elements of `dt`.
            mpi(unsafe { crate::local_reduce::reduce_local(mine, recvbuf, n, dt, nop) })
        })
    } else {
        native_reduce(recvbuf)?;
        leader_step(mc.native, lead, || {
            let mut theirs = Scratch::new(nn, &e)?;
            // SAFETY: `recvbuf` holds this job's `n` elements, unchanged
            // until `sent` is waited for; the scratch has room for `n`.
            let sent = unsafe { send_lent(&mc.coll, 0, TAG_REDUCE, recvbuf, nn, dt) }?;
            // SAFETY: as above.
            unsafe { recv(&mc.coll, 0, TAG_REDUCE, theirs.ptr(), nn, dt) }?;
            sent.wait()?;
            // SAFETY: both hold `n` elements of `dt`.
            mpi(unsafe { crate::local_reduce::reduce_local(theirs.ptr(), recvbuf, n, dt, nop) })
        })
    }
}

/// `MPI_Allreduce` on a merged communicator.
///
/// # Safety
/// As `MPI_Allreduce`.
pub(crate) unsafe fn allreduce(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    let r = unsafe { allreduce_into(mc, sendbuf, recvbuf, n, dt, op) };
    code(comm, "MPI_Allreduce", r)
}

/// `MPI_Reduce` on a merged communicator: each job reduces natively (the
/// root's job to the root, the other to its leader), the other job's
/// leader sends its partial result to the root, which combines the two as
/// `low op high`.
///
/// # Safety
/// As `MPI_Reduce`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn reduce(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        if !mc.order.contiguous_jobs() && !ordered::commutative(op, dt)? {
            // SAFETY: forwarded.
            return unsafe { reduce_in_order(mc, sendbuf, recvbuf, n, dt, op, root) };
        }
        let nn = elements(n)?;
        let nop = native_op(op, dt);
        let r = match root_place(mc, root)? {
            Place::Local(r) => r,
            Place::Remote(r) => {
                let mut room = LeaderRoom::new(leader(mc), nn, dt)?;
                // SAFETY: the program's send buffer; the room holds `n`
                // elements at the leader.
                mpi(unsafe {
                    crate::native_step::reduce(sendbuf, room.ptr(), n, dt, nop, 0, mc.native)
                })?;
                if let Some(p) = room.at_leader() {
                    // SAFETY: the room holds this job's result.
                    unsafe { send_lent(&mc.coll, r, TAG_REDUCE_ROOT, p, nn, dt) }?.wait()?;
                }
                return Ok(());
            }
        };
        let lr = int(r as usize)?;
        if mc.inter.rank() != r {
            // SAFETY: the program's buffers (the receive one not significant here).
            return mpi(unsafe {
                crate::native_step::reduce(sendbuf, recvbuf, n, dt, nop, lr, mc.native)
            });
        }
        let e = Extents::of(dt)?;
        let mut scratch = Scratch::new(nn, &e)?;
        if mc.low {
            // This job's result first: into scratch, the other's into recvbuf
            // (in place, the root's input is read by the native step first).
            // SAFETY: the root's input holds `n` elements; scratch has room.
            mpi(unsafe {
                crate::native_step::reduce(
                    input(sendbuf, recvbuf),
                    scratch.ptr(),
                    n,
                    dt,
                    nop,
                    lr,
                    mc.native,
                )
            })?;
            // SAFETY: the root's receive buffer has room for `n` elements.
            unsafe { recv(&mc.coll, 0, TAG_REDUCE_ROOT, recvbuf, nn, dt) }?;
        } else {
            // The other job's result first: into scratch, this job's into recvbuf.
            // SAFETY: the program's buffers (MPI_IN_PLACE passed on as given).
            mpi(unsafe {
                crate::native_step::reduce(sendbuf, recvbuf, n, dt, nop, lr, mc.native)
            })?;
            // SAFETY: scratch has room for `n` elements.
            unsafe { recv(&mc.coll, 0, TAG_REDUCE_ROOT, scratch.ptr(), nn, dt) }?;
        }
        // MPI_Reduce_local(in, inout): inout = in op inout, so scratch op recvbuf.
        // SAFETY: both hold `n` elements of `dt`.
        mpi(unsafe { crate::local_reduce::reduce_local(scratch.ptr(), recvbuf, n, dt, nop) })
    };
    code(comm, "MPI_Reduce", run())
}

/// `MPI_Reduce` of a non-commutative operation on an order that
/// interleaves the jobs: reduced in merged-rank order at the leaders
/// (`ordered`), the root's job's leader hands the result to the root.
///
/// # Safety
/// As `MPI_Reduce`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn reduce_in_order(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
) -> Result<(), Fail> {
    let place = root_place(mc, root)?;
    // SAFETY: the program's input (the root's receive buffer in place).
    let whole = unsafe { ordered::reduce_to_leaders(mc, input(sendbuf, recvbuf), n, dt, op) }?;
    let Place::Local(r) = place else {
        return Ok(());
    };
    let me = mc.inter.rank();
    match whole {
        Some(mut w) if r == 0 => {
            // SAFETY: `w` holds `n` elements; the root's buffer has room.
            unsafe { copy(mc.native, w.ptr(), recvbuf, n, dt) }
        }
        Some(mut w) => {
            let lr = int(r as usize)?;
            // SAFETY: `w` holds `n` elements, sent on the private native side.
            mpi(unsafe { ffi::PMPI_Send(w.ptr(), n, dt, lr, TAG_REDUCE_ROOT, mc.native) })
        }
        None if me == r => {
            // SAFETY: the root's buffer has room for `n` elements.
            mpi(unsafe {
                ffi::PMPI_Recv(
                    recvbuf,
                    n,
                    dt,
                    0,
                    TAG_REDUCE_ROOT,
                    mc.native,
                    crate::mpi_glue::status_ignore(),
                )
            })
        }
        None => Ok(()),
    }
}

/// Which prefix reduction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prefix {
    Inclusive,
    Exclusive,
}

/// `MPI_Scan` or `MPI_Exscan`: the first job's prefixes are its native
/// ones; the second job's are its native ones after the first job's total
/// (which the first job's leader sends to the second's).
///
/// # Safety
/// As `MPI_Scan`.
unsafe fn prefix(
    mc: &MergedComm,
    kind: Prefix,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<(), Fail> {
    let input = input(sendbuf, recvbuf);
    if !mc.order.contiguous_jobs() {
        let exclusive = kind == Prefix::Exclusive;
        // SAFETY: forwarded.
        return unsafe { ordered::prefix(mc, exclusive, input, recvbuf, n, dt, op) };
    }
    let nn = elements(n)?;
    let e = Extents::of(dt)?;
    let native_scan = || {
        // SAFETY: the program's buffers (MPI_IN_PLACE passed on as given).
        mpi(unsafe {
            match kind {
                Prefix::Inclusive => {
                    crate::native_step::scan(sendbuf, recvbuf, n, dt, native_op(op, dt), mc.native)
                }
                Prefix::Exclusive => crate::native_step::exscan(
                    sendbuf,
                    recvbuf,
                    n,
                    dt,
                    native_op(op, dt),
                    mc.native,
                ),
            }
        })
    };
    let mut total = Scratch::new(nn, &e)?;
    if mc.low {
        // The total first: in place, the scan overwrites the input.
        // SAFETY: `input` holds `n` elements; `total` has room for them.
        mpi(unsafe {
            crate::native_step::reduce(input, total.ptr(), n, dt, native_op(op, dt), 0, mc.native)
        })?;
        native_scan()?;
        if leader(mc) {
            // SAFETY: `total` holds `n` elements.
            unsafe { send_lent(&mc.coll, 0, TAG_SCAN, total.ptr(), nn, dt) }?.wait()?;
        }
        return Ok(());
    }
    leader_step(mc.native, leader(mc), || {
        // SAFETY: `total` has room for `n` elements.
        Ok(unsafe { recv(&mc.coll, 0, TAG_SCAN, total.ptr(), nn, dt) }?)
    })?;
    // SAFETY: `total` holds `n` elements at the leader, room for them elsewhere.
    mpi(unsafe { crate::native_step::bcast(total.ptr(), n, dt, 0, mc.native) })?;
    native_scan()?;
    if kind == Prefix::Exclusive && leader(mc) {
        // The second job's first rank: the first job's total alone.
        // SAFETY: `total` holds `n` elements, `recvbuf` has room for them.
        return unsafe { copy(mc.native, total.ptr(), recvbuf, n, dt) };
    }
    // total op (this job's prefix), the earlier ranks first.
    // SAFETY: both hold `n` elements of `dt`.
    mpi(unsafe {
        crate::local_reduce::reduce_local(total.ptr(), recvbuf, n, dt, native_op(op, dt))
    })
}

/// `MPI_Scan` on a merged communicator.
///
/// # Safety
/// As `MPI_Scan`.
pub(crate) unsafe fn scan(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    let r = unsafe { prefix(mc, Prefix::Inclusive, sendbuf, recvbuf, n, dt, op) };
    code(comm, "MPI_Scan", r)
}

/// `MPI_Exscan` on a merged communicator.
///
/// # Safety
/// As `MPI_Exscan`.
pub(crate) unsafe fn exscan(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    let r = unsafe { prefix(mc, Prefix::Exclusive, sendbuf, recvbuf, n, dt, op) };
    code(comm, "MPI_Exscan", r)
}

/// `MPI_Gather` on a merged communicator: natively into the root's slice of
/// its job's blocks; the other job gathers natively at its leader, which
/// sends the whole block to the root.
///
/// # Safety
/// As `MPI_Gather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn gather(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if !mc.order.contiguous_jobs() {
        let (counts, displs) = match blocks(mc, recvcount) {
            Ok(b) => b,
            Err(f) => return raise(comm, "MPI_Gather", f),
        };
        // SAFETY: forwarded, the blocks where MPI_Gather puts them.
        return unsafe {
            vcoll::gatherv_as(
                mc,
                sendbuf,
                sendcount,
                sendtype,
                recvbuf,
                counts.as_ptr(),
                displs.as_ptr(),
                recvtype,
                root,
                comm,
                "MPI_Gather",
            )
        };
    }
    let run = || match root_place(mc, root)? {
        Place::Local(r) => {
            let me = mc.inter.rank() == r;
            let (mine, theirs) = if me {
                slices(mc, recvbuf, recvcount, recvtype)?
            } else {
                (recvbuf, recvbuf)
            };
            let lr = int(r as usize)?;
            // SAFETY: the program's buffers, the root's at its job's slice.
            mpi(unsafe {
                crate::native_step::gather(
                    sendbuf, sendcount, sendtype, mine, recvcount, recvtype, lr, mc.native,
                )
            })?;
            if me {
                let n = mc.remote_size() as usize * elements(recvcount)?;
                // SAFETY: the root's buffer has room for the other job's blocks.
                unsafe { recv(&mc.coll, 0, TAG_GATHER, theirs, n, recvtype) }?;
            }
            Ok(())
        }
        Place::Remote(r) => {
            // The leader gathers this job's blocks in the send type.
            let e = Extents::of(sendtype)?;
            let n = mc.local_size() as usize * elements(sendcount)?;
            let mut block = LeaderRoom::of(leader(mc), n, &e)?;
            // SAFETY: the program's send buffer; the block has room at the leader.
            mpi(unsafe {
                crate::native_step::gather(
                    sendbuf,
                    sendcount,
                    sendtype,
                    block.ptr(),
                    sendcount,
                    sendtype,
                    0,
                    mc.native,
                )
            })?;
            if leader(mc) {
                // SAFETY: the block holds `n` elements.
                unsafe { send_lent(&mc.coll, r, TAG_GATHER, block.ptr(), n, sendtype) }?.wait()?;
            }
            Ok(())
        }
    };
    code(comm, "MPI_Gather", run())
}

/// `MPI_Scatter` on a merged communicator: natively from the root's slice
/// of its job's blocks; the other job's blocks go whole to its leader,
/// which scatters them natively.
///
/// # Safety
/// As `MPI_Scatter`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn scatter(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if !mc.order.contiguous_jobs() {
        let (counts, displs) = match blocks(mc, sendcount) {
            Ok(b) => b,
            Err(f) => return raise(comm, "MPI_Scatter", f),
        };
        // SAFETY: forwarded, the blocks where MPI_Scatter takes them.
        return unsafe {
            vcoll::scatterv_as(
                mc,
                sendbuf,
                counts.as_ptr(),
                displs.as_ptr(),
                sendtype,
                recvbuf,
                recvcount,
                recvtype,
                root,
                comm,
                "MPI_Scatter",
            )
        };
    }
    let run = || match root_place(mc, root)? {
        Place::Local(r) => {
            let me = mc.inter.rank() == r;
            let (mine, theirs) = if me {
                slices(mc, sendbuf, sendcount, sendtype)?
            } else {
                (sendbuf.cast_mut(), sendbuf.cast_mut())
            };
            let lr = int(r as usize)?;
            // SAFETY: the program's buffers, the root's at its job's slice.
            mpi(unsafe {
                crate::native_step::scatter(
                    mine, sendcount, sendtype, recvbuf, recvcount, recvtype, lr, mc.native,
                )
            })?;
            if me {
                let n = mc.remote_size() as usize * elements(sendcount)?;
                // SAFETY: the root's buffer holds the other job's blocks.
                unsafe { send_lent(&mc.coll, 0, TAG_SCATTER, theirs, n, sendtype) }?.wait()?;
            }
            Ok(())
        }
        Place::Remote(r) => {
            // The leader receives this job's blocks in the receive type.
            let e = Extents::of(recvtype)?;
            let n = mc.local_size() as usize * elements(recvcount)?;
            let mut block = LeaderRoom::of(leader(mc), n, &e)?;
            leader_step(mc.native, leader(mc), || {
                // SAFETY: the block has room for `n` elements at the leader.
                Ok(unsafe { recv(&mc.coll, r, TAG_SCATTER, block.ptr(), n, recvtype) }?)
            })?;
            // SAFETY: the block at the leader; the program's receive buffer.
            mpi(unsafe {
                crate::native_step::scatter(
                    block.ptr(),
                    recvcount,
                    recvtype,
                    recvbuf,
                    recvcount,
                    recvtype,
                    0,
                    mc.native,
                )
            })
        }
    };
    code(comm, "MPI_Scatter", run())
}

/// `MPI_Allgather` on a merged communicator: natively into each job's
/// slice, the leaders trade their jobs' slices, each broadcasts the other's.
///
/// # Safety
/// As `MPI_Allgather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn allgather(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    if !mc.order.contiguous_jobs() {
        let (counts, displs) = match blocks(mc, recvcount) {
            Ok(b) => b,
            Err(f) => return raise(comm, "MPI_Allgather", f),
        };
        // SAFETY: forwarded, the blocks where MPI_Allgather puts them.
        return unsafe {
            vcoll::allgatherv_as(
                mc,
                sendbuf,
                sendcount,
                sendtype,
                recvbuf,
                counts.as_ptr(),
                displs.as_ptr(),
                recvtype,
                comm,
                "MPI_Allgather",
            )
        };
    }
    let run = || {
        let (mine, theirs) = slices(mc, recvbuf, recvcount, recvtype)?;
        let rc = elements(recvcount)?;
        // SAFETY: the program's buffers, the receive at this job's slice
        // (MPI_IN_PLACE finds each rank's block where it is in the merged order).
        mpi(unsafe {
            crate::native_step::allgather(
                sendbuf, sendcount, sendtype, mine, recvcount, recvtype, mc.native,
            )
        })?;
        let (nm, nt) = (
            mc.local_size() as usize * rc,
            mc.remote_size() as usize * rc,
        );
        leader_step(mc.native, leader(mc), || {
            // SAFETY: this job's slice is filled; the other's has room.
            let sent = unsafe { send(&mc.coll, 0, TAG_ALLGATHER, mine, nm, recvtype) }?;
            // SAFETY: as above.
            unsafe { recv(&mc.coll, 0, TAG_ALLGATHER, theirs, nt, recvtype) }?;
            Ok(sent.wait()?)
        })?;
        let nt = int(nt)?;
        // SAFETY: the other job's slice, filled at the leader.
        mpi(unsafe { crate::native_step::bcast(theirs, nt, recvtype, 0, mc.native) })
    };
    code(comm, "MPI_Allgather", run())
}

/// `MPI_Alltoall` on a merged communicator: natively within the job (its
/// slice of both buffers), and each block for the other job straight to
/// its rank over the bridge.
///
/// # Safety
/// As `MPI_Alltoall`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn alltoall(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    if !mc.order.contiguous_jobs() {
        let blocks = blocks(mc, sendcount).and_then(|s| Ok((s, blocks(mc, recvcount)?)));
        let ((sc, sd), (rc, rd)) = match blocks {
            Ok(b) => b,
            Err(f) => return raise(comm, "MPI_Alltoall", f),
        };
        // SAFETY: forwarded, the blocks where MPI_Alltoall has them.
        return unsafe {
            vcoll::alltoallv_as(
                mc,
                sendbuf,
                sc.as_ptr(),
                sd.as_ptr(),
                sendtype,
                recvbuf,
                rc.as_ptr(),
                rd.as_ptr(),
                recvtype,
                comm,
                "MPI_Alltoall",
            )
        };
    }
    let run = || {
        let re = Extents::of(recvtype)?;
        let rc = elements(recvcount)?;
        // In place: the blocks to send are a copy of the receive buffer.
        let mut copy_of_recv = None;
        let (sendbuf, sendcount, sendtype) = if is_in_place(sendbuf) {
            // SAFETY: the receive buffer holds size × recvcount elements.
            let c = unsafe { Scratch::copy_of(recvbuf, mc.size() as usize * rc, &re) }?;
            let p = copy_of_recv.insert(c).ptr().cast_const();
            (p, recvcount, recvtype)
        } else {
            (sendbuf, sendcount, sendtype)
        };
        let se = Extents::of(sendtype)?;
        let sc = elements(sendcount)?;
        let (lo, ro) = offsets(mc);
        let mut recvs = Vec::new();
        for r in 0..mc.remote_size() {
            let req = post(&mc.coll, r, TAG_ALLTOALL, rc, recvtype)?;
            recvs.push((req, re.at(recvbuf, (ro + r as usize) * rc)?));
        }
        let mut sends = Vec::new();
        for r in 0..mc.remote_size() {
            let block = se.at(sendbuf, (ro + r as usize) * sc)?;
            // SAFETY: the block for merged rank ro + r of the send buffer.
            sends.push(unsafe { send_lent(&mc.coll, r, TAG_ALLTOALL, block, sc, sendtype) }?);
        }
        let (my_send, my_recv) = (se.at(sendbuf, lo * sc)?, re.at(recvbuf, lo * rc)?);
        // SAFETY: this job's slices of the program's buffers.
        mpi(unsafe {
            crate::native_step::alltoall(
                my_send, sendcount, sendtype, my_recv, recvcount, recvtype, mc.native,
            )
        })?;
        for (req, p) in recvs {
            // SAFETY: the block of the receive buffer for that rank.
            unsafe { complete(req, p, rc, recvtype) }?;
        }
        for s in sends {
            s.wait()?;
        }
        drop(copy_of_recv);
        Ok(())
    };
    code(comm, "MPI_Alltoall", run())
}

/// Both reduce-scatters: the whole vector (`counts[i]` elements for merged
/// rank i, in rank order) reduced to both leaders, each of which scatters
/// its job's blocks natively.
///
/// # Safety
/// `sendbuf` (or in place `recvbuf`) holds the sum of `counts` elements of
/// `dt`; `recvbuf` has room for this rank's count.
unsafe fn reduce_scatter_counts(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[c_int],
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<(), Fail> {
    let mut displs = Vec::with_capacity(counts.len());
    let mut total: usize = 0;
    for &c in counts {
        displs.push(int(total)?);
        total = total.saturating_add(elements(c)?);
    }
    let bad = || {
        Fail::Bridge(isthmus_bridge::BridgeError::InvalidArgument(
            "recvcounts is shorter than the communicator".into(),
        ))
    };
    // This job's ranks' blocks, in its order (anywhere in the vector).
    let pick = |a: &[c_int]| -> Result<Vec<c_int>, Fail> {
        mc.order
            .local_ranks()
            .iter()
            .map(|&m| a.get(m as usize).copied().ok_or_else(bad))
            .collect()
    };
    let (cm, dm) = (pick(counts)?, pick(&displs)?);
    let own = *counts.get(mc.rank() as usize).ok_or_else(bad)?;
    // In place: the input is the receive buffer, which holds every block.
    let input = input(sendbuf, recvbuf);
    // SAFETY: `input` holds every block (this function's contract).
    let mut whole = unsafe { reduce_to_leaders(mc, input, int(total)?, dt, op) }?;
    let from = whole.as_mut().map_or(std::ptr::null_mut(), |w| w.ptr());
    // SAFETY: the result at the leader (`total` elements), this job's
    // blocks of it; the program's buffer has room for its own.
    mpi(unsafe {
        crate::native_step::scatterv(
            from,
            cm.as_ptr(),
            dm.as_ptr(),
            dt,
            recvbuf,
            own,
            dt,
            0,
            mc.native,
        )
    })
}

/// `MPI_Reduce_scatter_block` on a merged communicator.
///
/// # Safety
/// As `MPI_Reduce_scatter_block`.
pub(crate) unsafe fn reduce_scatter_block(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let counts = vec![recvcount; mc.size() as usize];
    // SAFETY: forwarded, `recvcount` elements per rank.
    let r = unsafe { reduce_scatter_counts(mc, sendbuf, recvbuf, &counts, dt, op) };
    code(comm, "MPI_Reduce_scatter_block", r)
}

/// `MPI_Reduce_scatter` on a merged communicator.
///
/// # Safety
/// As `MPI_Reduce_scatter`.
pub(crate) unsafe fn reduce_scatter(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let run = || {
        // SAFETY: MPI_Reduce_scatter's counts hold one int per rank.
        let counts = unsafe { ints(recvcounts, mc.size() as usize) }?;
        // SAFETY: forwarded.
        unsafe { reduce_scatter_counts(mc, sendbuf, recvbuf, counts, dt, op) }
    };
    code(comm, "MPI_Reduce_scatter", run())
}

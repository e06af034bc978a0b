//! Reductions on a merged communicator whose ranks interleave the two jobs
//! (a split with keys that reorder them) and whose operation depends on
//! the order: a non-commutative reduction, and every prefix (`MPI_Scan`,
//! `MPI_Exscan`). Each job's native step cannot give a contiguous part of
//! the merged order there, so every input goes to both leaders (a native
//! gather in each job, one bridge message each way between the leaders),
//! each leader combines them in merged-rank order with `MPI_Reduce_local`,
//! and hands its job's results out natively. It costs O(size) data at the
//! leaders, where the contiguous order's local–global–local costs O(1);
//! commutative reductions on any order keep that one (`coll`).

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::wire::{copy, leader_step, mpi, recv, send, Fail, TAG_SCAN};
use crate::collbuf::{elements, Extents, LeaderRoom, Scratch};
use crate::mpi_glue::MPI_Datatype;
use crate::state::{MergedComm, Place};
use crate::unsigned_ops::native_op;

/// Whether `op` on `dt` may be applied in any order.
pub fn commutative(op: ffi::MPI_Op, dt: MPI_Datatype) -> Result<bool, Fail> {
    let mut flag: c_int = 0;
    // SAFETY: reads the operation; writes `flag`.
    mpi(unsafe { ffi::PMPI_Op_commutative(native_op(op, dt), &mut flag) })?;
    Ok(flag != 0)
}

/// Every rank's `n` elements, at a leader: this job's and the other's, each
/// in its job's local order.
struct Inputs {
    mine: Scratch,
    theirs: Scratch,
    e: Extents,
    n: usize,
}

impl Inputs {
    /// The input of merged rank `m`.
    fn of(&mut self, mc: &MergedComm, m: u32) -> Result<*mut c_void, Fail> {
        let (buf, i) = match mc.place(m) {
            Some(Place::Local(i)) => (self.mine.ptr(), i),
            Some(Place::Remote(j)) => (self.theirs.ptr(), j),
            None => return Err(Fail::Mpi(ffi::MPI_ERR_RANK as c_int)),
        };
        Ok(self.e.at(buf, i as usize * self.n)?)
    }
}

/// Gathers every rank's input at both leaders (`None` elsewhere).
///
/// # Safety
/// `input` addresses `n` elements of `dt`.
unsafe fn at_leaders(
    mc: &MergedComm,
    input: *const c_void,
    n: c_int,
    dt: MPI_Datatype,
) -> Result<Option<Inputs>, Fail> {
    let nn = elements(n)?;
    let e = Extents::of(dt)?;
    let leader = mc.inter.rank() == 0;
    let mut room = LeaderRoom::of(leader, mc.local_size() as usize * nn, &e)?;
    // SAFETY: `input` holds `n` elements; the room has one block per rank at the leader.
    mpi(unsafe { crate::native_step::gather(input, n, dt, room.ptr(), n, dt, 0, mc.native) })?;
    let mut out = None;
    leader_step(mc.native, leader, || {
        let k = mc.local_size() as usize * nn;
        // SAFETY: the room holds `k` elements at the leader, where this runs.
        let mut mine = unsafe { Scratch::copy_of(room.ptr(), k, &e) }?;
        let rk = mc.remote_size() as usize * nn;
        let mut theirs = Scratch::new(rk, &e)?;
        // SAFETY: `mine` holds `k` elements, `theirs` has room for `rk`.
        let sent = unsafe { send(&mc.coll, 0, TAG_SCAN, mine.ptr(), k, dt) }?;
        // SAFETY: as above.
        unsafe { recv(&mc.coll, 0, TAG_SCAN, theirs.ptr(), rk, dt) }?;
        sent.wait()?;
        out = Some(Inputs {
            mine,
            theirs,
            e: Extents::of(dt)?,
            n: nn,
        });
        Ok(())
    })?;
    Ok(out)
}

/// `acc = acc op x` (`MPI_Reduce_local(in, inout)` computes `in op inout`).
///
/// # Safety
/// `x` addresses `n` elements of `dt`; `acc` holds `n`.
unsafe fn combine(
    acc: &mut Scratch,
    x: *const c_void,
    n: c_int,
    e: &Extents,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<(), Fail> {
    // SAFETY: `x` holds `n` elements (the caller's contract).
    let mut next = unsafe { Scratch::copy_of(x, elements(n)?, e) }?;
    // SAFETY: two buffers of `n` elements of `dt`.
    mpi(unsafe {
        crate::local_reduce::reduce_local(acc.ptr(), next.ptr(), n, dt, native_op(op, dt))
    })?;
    *acc = next;
    Ok(())
}

/// The reduction of every rank's `input` in merged-rank order, at both
/// leaders (`None` elsewhere).
///
/// # Safety
/// `input` addresses `n` elements of `dt`.
pub unsafe fn reduce_to_leaders(
    mc: &MergedComm,
    input: *const c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<Option<Scratch>, Fail> {
    // SAFETY: forwarded.
    let all = unsafe { at_leaders(mc, input, n, dt) }?;
    let Some(mut all) = all else {
        return Ok(None);
    };
    let first = all.of(mc, 0)?;
    // SAFETY: every input holds `n` elements.
    let mut acc = unsafe { Scratch::copy_of(first, all.n, &all.e) }?;
    for m in 1..mc.size() {
        let x = all.of(mc, m)?;
        // SAFETY: as above.
        unsafe { combine(&mut acc, x, n, &all.e, dt, op) }?;
    }
    Ok(Some(acc))
}

/// `MPI_Scan` (`exclusive`: `MPI_Exscan`) in merged-rank order: each leader
/// computes its job's prefixes and scatters them natively into `recvbuf`
/// (an exclusive prefix of merged rank 0 is left as it is).
///
/// # Safety
/// As `MPI_Scan`; `input` is the send buffer, or `recvbuf` in place.
pub unsafe fn prefix(
    mc: &MergedComm,
    exclusive: bool,
    input: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<(), Fail> {
    let nn = elements(n)?;
    let e = Extents::of(dt)?;
    // SAFETY: forwarded.
    let all = unsafe { at_leaders(mc, input, n, dt) }?;
    let mut results = None;
    if let Some(mut all) = all {
        let mut out = Scratch::new(mc.local_size() as usize * nn, &e)?;
        let mut before: Option<Scratch> = None;
        for m in 0..mc.size() {
            let x = all.of(mc, m)?;
            let mut now = match before.as_mut() {
                // SAFETY: every input holds `n` elements.
                None => unsafe { Scratch::copy_of(x, nn, &e) }?,
                Some(b) => {
                    // SAFETY: `b` holds `n` elements; so does `x`.
                    let mut c = unsafe { Scratch::copy_of(b.ptr(), nn, &e) }?;
                    // SAFETY: as above.
                    unsafe { combine(&mut c, x, n, &e, dt, op) }?;
                    c
                }
            };
            if let Some(Place::Local(i)) = mc.place(m) {
                let give = if exclusive {
                    before.as_mut().map(Scratch::ptr)
                } else {
                    Some(now.ptr())
                };
                if let Some(g) = give {
                    let at = e.at(out.ptr(), i as usize * nn)?;
                    // SAFETY: `g` holds `n` elements, `out` has room at slot `i`.
                    unsafe { copy(mc.native, g, at, n, dt) }?;
                }
            }
            before = Some(now);
        }
        results = Some(out);
    }
    let from = results.as_mut().map_or(std::ptr::null_mut(), |r| r.ptr());
    if exclusive && mc.rank() == 0 {
        // Merged rank 0's exclusive prefix is undefined: its buffer stays.
        let mut sink = Scratch::new(nn, &e)?;
        let into = sink.ptr();
        // SAFETY: the leader's results; room for `n` elements here.
        return mpi(unsafe { crate::native_step::scatter(from, n, dt, into, n, dt, 0, mc.native) });
    }
    // SAFETY: the leader's results (`n` elements per rank of this job); the
    // program's receive buffer has room for `n`.
    mpi(unsafe { crate::native_step::scatter(from, n, dt, recvbuf, n, dt, 0, mc.native) })
}

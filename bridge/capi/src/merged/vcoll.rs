//! The v-variants of the merged collectives, as their plain forms in
//! `coll`: natively within each job. The gathers (`MPI_Allgatherv`,
//! `MPI_Gatherv`) send one bridge message per job between a leader and the
//! other job, carrying the job's blocks as one indexed datatype (the blocks
//! where `displs` puts them), so the receiver decodes them into place;
//! `MPI_Alltoallv` and `MPI_Alltoallw` send each block for the other job
//! straight to its rank, and `MPI_Scatterv` each block from the root to
//! its rank of the other job (each receiver decodes into its own type).

use std::ffi::{c_int, c_void};

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::comm::raise;
use super::wire::{
    complete, leader_step, mpi, post, recv, root_place, send, send_lent, Fail, Sent, TAG_ALLGATHER,
    TAG_ALLTOALL, TAG_ALLTOALLW, TAG_GATHER, TAG_SCATTERV,
};
use crate::collbuf::{
    array, elements, ints, is_in_place, native_count, native_counts, offset, Extents, Scratch,
};
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};
use crate::state::{MergedComm, Place};

/// A derived datatype of ours, freed when dropped (within the call).
pub(crate) struct Derived(pub(crate) MPI_Datatype);

impl Derived {
    /// The blocks `counts[i]` elements of `dt` at `displs[i]` (in extents of `dt`).
    pub(crate) fn indexed(
        counts: &[c_int],
        displs: &[c_int],
        dt: MPI_Datatype,
    ) -> Result<Derived, Fail> {
        let n = c_int::try_from(counts.len()).map_err(|_| too_many())?;
        // SAFETY: reading rsmpi's exported constant.
        let mut t = unsafe { ffi::RSMPI_DATATYPE_NULL };
        // SAFETY: `counts` and `displs` hold `n` ints; `t` an out-handle.
        mpi(unsafe { ffi::PMPI_Type_indexed(n, counts.as_ptr(), displs.as_ptr(), dt, &mut t) })?;
        let mut d = Derived(t);
        // SAFETY: a type of ours.
        mpi(unsafe { ffi::PMPI_Type_commit(&mut d.0) })?;
        Ok(d)
    }
}

impl Drop for Derived {
    fn drop(&mut self) {
        // SAFETY: a committed type of ours, freed once.
        unsafe { ffi::PMPI_Type_free(&mut self.0) };
    }
}

fn too_many() -> Fail {
    Fail::Bridge(BridgeError::InvalidArgument(
        "too many ranks for an int".into(),
    ))
}

/// This job's and the other job's merged ranks, each in its job's order.
fn slices(mc: &MergedComm) -> (std::sync::Arc<[u32]>, std::sync::Arc<[u32]>) {
    (
        mc.order.local_ranks().clone(),
        mc.order.remote_ranks().clone(),
    )
}

/// The entries of a per-rank array for the merged ranks `ranks`, in that
/// order (the array has one per rank of the merged communicator).
fn part<T: Copy>(a: &[T], ranks: &[u32]) -> Result<Vec<T>, Fail> {
    ranks
        .iter()
        .map(|&r| {
            a.get(r as usize).copied().ok_or_else(|| {
                Fail::Bridge(BridgeError::InvalidArgument(
                    "a per-rank array is shorter than the communicator".into(),
                ))
            })
        })
        .collect()
}

/// Allgatherv's native step in a job of one rank: its own block (none to
/// copy in place) sent to itself into `recvbuf` at `displs[0]`.
///
/// # Safety
/// As `MPI_Allgatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn own_block(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: &[c_int],
    displs: &[c_int],
    recvtype: MPI_Datatype,
) -> Result<(), Fail> {
    if is_in_place(sendbuf) {
        return Ok(());
    }
    let (Some(&c), Some(&d)) = (counts.first(), displs.first()) else {
        return Ok(());
    };
    let at = Extents::of(recvtype)?.at(recvbuf, elements(d)?)?;
    // SAFETY: the program's block and its place in the receive buffer.
    unsafe { to_self(mc, sendbuf, sendcount, sendtype, at, c, recvtype) }
}

/// A job of one rank's native step of its own block: `count` elements of
/// `sendtype` at `from` sent to itself into `to` as `rcount` of `recvtype`
/// (the MPIs' collectives on one rank are not to be trusted with
/// displacements: MPICH 4.0's (I)allgatherv puts the block at the start of
/// the buffer, Open MPI 4.1's Alltoallw copies nothing).
///
/// # Safety
/// `from` and `to` address the blocks, as for the collective.
#[allow(clippy::too_many_arguments)] // two blocks
pub(crate) unsafe fn to_self(
    mc: &MergedComm,
    from: *const c_void,
    count: c_int,
    sendtype: MPI_Datatype,
    to: *mut c_void,
    rcount: c_int,
    recvtype: MPI_Datatype,
) -> Result<(), Fail> {
    // SAFETY: the program's blocks; a message to itself on the private side.
    mpi(unsafe {
        ffi::PMPI_Sendrecv(
            from,
            count,
            sendtype,
            0,
            0,
            to,
            rcount,
            recvtype,
            0,
            0,
            mc.native,
            crate::mpi_glue::status_ignore(),
        )
    })
}

fn code(comm: MPI_Comm, call: &str, r: Result<(), Fail>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(f) => raise(comm, call, f),
    }
}

/// `MPI_Allgatherv` on a merged communicator.
///
/// # Safety
/// As `MPI_Allgatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn allgatherv_as(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    call: &str,
) -> c_int {
    let run = || {
        let n = mc.size() as usize;
        // SAFETY: MPI_Allgatherv's arrays hold one int per rank.
        let (counts, displs) = unsafe { (ints(recvcounts, n)?, ints(displs, n)?) };
        let (mine, theirs) = slices(mc);
        let (cm, dm) = (part(counts, &mine)?, part(displs, &mine)?);
        if mine.len() == 1 {
            // MPICH 4.0's (I)allgatherv on one rank puts the block at the
            // start of the buffer, not at its displacement: the job's one
            // rank places its own block.
            // SAFETY: as below.
            unsafe {
                own_block(
                    mc, sendbuf, sendcount, sendtype, recvbuf, &cm, &dm, recvtype,
                )
            }?;
        } else {
            let native_cm = native_counts(&cm, recvtype);
            // SAFETY: the program's buffers; this job's counts and displacements.
            mpi(unsafe {
                crate::native_step::allgatherv(
                    sendbuf,
                    native_count(sendcount, sendtype),
                    sendtype,
                    recvbuf,
                    native_cm.as_ptr(),
                    dm.as_ptr(),
                    recvtype,
                    mc.native,
                )
            })?;
        }
        let my_blocks = Derived::indexed(&cm, &dm, recvtype)?;
        let their_blocks =
            Derived::indexed(&part(counts, &theirs)?, &part(displs, &theirs)?, recvtype)?;
        leader_step(mc.native, mc.inter.rank() == 0, || {
            // SAFETY: this job's blocks are in place; the other's have room.
            let sent = unsafe { send(&mc.coll, 0, TAG_ALLGATHER, recvbuf, 1, my_blocks.0) }?;
            // SAFETY: as above.
            unsafe { recv(&mc.coll, 0, TAG_ALLGATHER, recvbuf, 1, their_blocks.0) }?;
            Ok(sent.wait()?)
        })?;
        // SAFETY: the other job's blocks, filled at the leader.
        mpi(unsafe { crate::native_step::bcast(recvbuf, 1, their_blocks.0, 0, mc.native) })
    };
    code(comm, call, run())
}

/// `MPI_Gatherv` on a merged communicator: natively into the root's job's
/// blocks; the other job's leader gathers its job's data (sizes first) and
/// sends it whole, which the root decodes into the blocks `displs` names.
///
/// # Safety
/// As `MPI_Gatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn gatherv_as(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    call: &str,
) -> c_int {
    let run = || {
        match root_place(mc, root)? {
            Place::Local(r) => {
                let lr = c_int::try_from(r).map_err(|_| too_many())?;
                let me = mc.inter.rank() == r;
                let (mine, theirs) = slices(mc);
                // Only the root's arrays are significant.
                let (counts, displs) = if me {
                    let n = mc.size() as usize;
                    // SAFETY: the root's arrays hold one int per rank.
                    unsafe { (ints(recvcounts, n)?, ints(displs, n)?) }
                } else {
                    (&[][..], &[][..])
                };
                let (cm, dm) = if me {
                    (part(counts, &mine)?, part(displs, &mine)?)
                } else {
                    (counts.to_vec(), displs.to_vec())
                };
                let native_cm = native_counts(&cm, recvtype);
                // SAFETY: the program's buffers; at the root, this job's blocks.
                mpi(unsafe {
                    crate::native_step::gatherv(
                        sendbuf,
                        native_count(sendcount, sendtype),
                        sendtype,
                        recvbuf,
                        native_cm.as_ptr(),
                        dm.as_ptr(),
                        recvtype,
                        lr,
                        mc.native,
                    )
                })?;
                if me {
                    let blocks = Derived::indexed(
                        &part(counts, &theirs)?,
                        &part(displs, &theirs)?,
                        recvtype,
                    )?;
                    // SAFETY: the root's buffer has the other job's blocks.
                    unsafe { recv(&mc.coll, 0, TAG_GATHER, recvbuf, 1, blocks.0) }?;
                }
                Ok(())
            }
            Place::Remote(r) => {
                let leader = mc.inter.rank() == 0;
                let k = mc.local_size() as usize;
                let mut sizes = vec![0 as c_int; if leader { k } else { 0 }];
                // SAFETY: one int from each rank into `sizes` at the leader.
                mpi(unsafe {
                    let int = ffi::RSMPI_INT32_T;
                    crate::native_step::gather(
                        (&raw const sendcount).cast(),
                        1,
                        int,
                        sizes.as_mut_ptr().cast(),
                        1,
                        int,
                        0,
                        mc.native,
                    )
                })?;
                let mut offsets = Vec::with_capacity(sizes.len());
                let mut total: usize = 0;
                for s in &sizes {
                    offsets.push(c_int::try_from(total).map_err(|_| too_many())?);
                    total += elements(*s)?;
                }
                let e = Extents::of(sendtype)?;
                let mut block = Scratch::new(total, &e)?;
                // SAFETY: the program's send buffer; the block has room for
                // every rank's data at the leader.
                mpi(unsafe {
                    crate::native_step::gatherv(
                        sendbuf,
                        sendcount,
                        sendtype,
                        block.ptr(),
                        sizes.as_ptr(),
                        offsets.as_ptr(),
                        sendtype,
                        0,
                        mc.native,
                    )
                })?;
                if leader {
                    // SAFETY: the block holds `total` elements.
                    unsafe { send_lent(&mc.coll, r, TAG_GATHER, block.ptr(), total, sendtype) }?
                        .wait()?;
                }
                Ok(())
            }
        }
    };
    code(comm, call, run())
}

/// `MPI_Alltoallv` on a merged communicator: natively within the job (its
/// ranks' counts and displacements), each block for the other job straight
/// to its rank over the bridge.
///
/// # Safety
/// As `MPI_Alltoallv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn alltoallv_as(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    call: &str,
) -> c_int {
    let run = || {
        let n = mc.size() as usize;
        // SAFETY: MPI_Alltoallv's arrays hold one int per rank.
        let (rc, rd) = unsafe { (ints(recvcounts, n)?, ints(rdispls, n)?) };
        let re = Extents::of(recvtype)?;
        // In place: the blocks to send are a copy of the receive buffer.
        let mut copy_of_recv = None;
        let (sendbuf, sc, sd, sendtype) = if is_in_place(sendbuf) {
            let mut span = 0usize;
            for (c, d) in rc.iter().zip(rd) {
                span = span.max(elements(*d)? + elements(*c)?);
            }
            // SAFETY: the receive buffer holds its blocks, within `span` elements.
            let c = unsafe { Scratch::copy_of(recvbuf, span, &re) }?;
            let p = copy_of_recv.insert(c).ptr().cast_const();
            (p, rc, rd, recvtype)
        } else {
            // SAFETY: as above.
            let (sc, sd) = unsafe { (ints(sendcounts, n)?, ints(sdispls, n)?) };
            (sendbuf, sc, sd, sendtype)
        };
        let se = Extents::of(sendtype)?;
        let (mine, theirs) = slices(mc);
        let mut recvs = Vec::new();
        let (trc, trd) = (part(rc, &theirs)?, part(rd, &theirs)?);
        let their_recvs = trc.iter().zip(&trd);
        for (r, (&c, &d)) in their_recvs.enumerate() {
            let r = u32::try_from(r).map_err(|_| too_many())?;
            let req = post(&mc.coll, r, TAG_ALLTOALL, elements(c)?, recvtype)?;
            recvs.push((req, re.at(recvbuf, elements(d)?)?, elements(c)?));
        }
        let mut sends = Vec::new();
        let (tsc, tsd) = (part(sc, &theirs)?, part(sd, &theirs)?);
        let their_sends = tsc.iter().zip(&tsd);
        for (r, (&c, &d)) in their_sends.enumerate() {
            let r = u32::try_from(r).map_err(|_| too_many())?;
            let block = se.at(sendbuf, elements(d)?)?;
            // SAFETY: the block for rank r of the other job in the send buffer.
            sends.push(unsafe {
                send_lent(&mc.coll, r, TAG_ALLTOALL, block, elements(c)?, sendtype)
            }?);
        }
        let (scm, sdm) = (native_counts(&part(sc, &mine)?, sendtype), part(sd, &mine)?);
        let (rcm, rdm) = (native_counts(&part(rc, &mine)?, recvtype), part(rd, &mine)?);
        // SAFETY: the program's buffers; this job's counts and displacements.
        mpi(unsafe {
            crate::native_step::alltoallv(
                sendbuf,
                scm.as_ptr(),
                sdm.as_ptr(),
                sendtype,
                recvbuf,
                rcm.as_ptr(),
                rdm.as_ptr(),
                recvtype,
                mc.native,
            )
        })?;
        for (req, p, k) in recvs {
            // SAFETY: the block of the receive buffer for that rank.
            unsafe { complete(req, p, k, recvtype) }?;
        }
        for s in sends {
            s.wait()?;
        }
        drop(copy_of_recv);
        Ok(())
    };
    code(comm, call, run())
}

/// `MPI_Scatterv` on a merged communicator: natively from the root's job's
/// blocks; the root sends each rank of the other job its block straight,
/// which it receives into its own buffer and type.
///
/// # Safety
/// As `MPI_Scatterv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn scatterv_as(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    call: &str,
) -> c_int {
    let run = || {
        let r = match root_place(mc, root)? {
            Place::Local(r) => r,
            Place::Remote(r) => {
                let n = elements(recvcount)?;
                // SAFETY: the program's buffer has room for `recvcount` elements.
                return Ok(unsafe { recv(&mc.coll, r, TAG_SCATTERV, recvbuf, n, recvtype) }?);
            }
        };
        let lr = c_int::try_from(r).map_err(|_| too_many())?;
        let me = mc.inter.rank() == r;
        // Only the root's arrays are significant.
        let (counts, displs) = if me {
            let n = mc.size() as usize;
            // SAFETY: the root's arrays hold one int per rank.
            unsafe { (ints(sendcounts, n)?, ints(displs, n)?) }
        } else {
            (&[][..], &[][..])
        };
        let (mine, theirs) = slices(mc);
        let mut sends = Vec::new();
        if me {
            let e = Extents::of(sendtype)?;
            let (tc, td) = (part(counts, &theirs)?, part(displs, &theirs)?);
            let blocks = tc.iter().zip(&td);
            for (j, (&c, &d)) in blocks.enumerate() {
                let j = u32::try_from(j).map_err(|_| too_many())?;
                let at = e.at(sendbuf, elements(d)?)?;
                // SAFETY: the root's block for rank j of the other job.
                sends.push(unsafe {
                    send_lent(&mc.coll, j, TAG_SCATTERV, at, elements(c)?, sendtype)
                }?);
            }
        }
        let (cm, dm) = if me {
            (part(counts, &mine)?, part(displs, &mine)?)
        } else {
            (counts.to_vec(), displs.to_vec())
        };
        let native_cm = native_counts(&cm, sendtype);
        // SAFETY: the program's buffers; at the root, this job's blocks.
        mpi(unsafe {
            crate::native_step::scatterv(
                sendbuf,
                native_cm.as_ptr(),
                dm.as_ptr(),
                sendtype,
                recvbuf,
                native_count(recvcount, recvtype),
                recvtype,
                lr,
                mc.native,
            )
        })?;
        for s in sends {
            s.wait()?;
        }
        Ok(())
    };
    code(comm, call, run())
}

/// `MPI_Alltoallw` on a merged communicator (displacements in bytes, a
/// datatype per rank): natively within the job, each block for the other
/// job straight to its rank. In place, the blocks for the other job are
/// sent from the receive buffer before anything is received into it (a
/// bridge send takes its data at the call).
///
/// # Safety
/// As `MPI_Alltoallw`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn alltoallw(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let run = || {
        let n = mc.size() as usize;
        // SAFETY: MPI_Alltoallw's arrays hold one entry per rank.
        let (rc, rd, rt) = unsafe {
            (
                ints(recvcounts, n)?,
                ints(rdispls, n)?,
                array(recvtypes, n, "recvtypes")?,
            )
        };
        let in_place = is_in_place(sendbuf);
        let (from, sc, sd, st) = if in_place {
            (recvbuf.cast_const(), rc, rd, rt)
        } else {
            // SAFETY: as above.
            let arrays = unsafe {
                (
                    ints(sendcounts, n)?,
                    ints(sdispls, n)?,
                    array(sendtypes, n, "sendtypes")?,
                )
            };
            (sendbuf, arrays.0, arrays.1, arrays.2)
        };
        let (mine, theirs) = slices(mc);
        let mut recvs = Vec::new();
        let (trc, trd, trt) = (part(rc, &theirs)?, part(rd, &theirs)?, part(rt, &theirs)?);
        let their_recvs = trc.iter().zip(&trd).zip(&trt);
        for (r, ((&c, &d), &t)) in their_recvs.enumerate() {
            let r = u32::try_from(r).map_err(|_| too_many())?;
            let req = post(&mc.coll, r, TAG_ALLTOALLW, elements(c)?, t)?;
            recvs.push((
                req,
                offset(recvbuf, 1, Some(elements(d)?))?,
                elements(c)?,
                t,
            ));
        }
        let mut sends = Vec::new();
        let (tsc, tsd, tst) = (part(sc, &theirs)?, part(sd, &theirs)?, part(st, &theirs)?);
        let their_sends = tsc.iter().zip(&tsd).zip(&tst);
        for (r, ((&c, &d), &t)) in their_sends.enumerate() {
            let r = u32::try_from(r).map_err(|_| too_many())?;
            let block = offset(from, 1, Some(elements(d)?))?;
            let count = elements(c)?;
            // In place the block is the receive buffer's, where rank r's
            // block arrives meanwhile: sent from a copy taken now. Else
            // lent (read in place, single copy on this host).
            // SAFETY: the block for rank r of the other job, unchanged
            // until the send completes (the guards wait before returning).
            sends.push(unsafe {
                if in_place {
                    send(&mc.coll, r, TAG_ALLTOALLW, block, count, t).map(Sent::Copied)
                } else {
                    send_lent(&mc.coll, r, TAG_ALLTOALLW, block, count, t).map(Sent::Lent)
                }
            }?);
        }
        let (scm, sdm, stm) = (part(sc, &mine)?, part(sd, &mine)?, part(st, &mine)?);
        let (rcm, rdm, rtm) = (part(rc, &mine)?, part(rd, &mine)?, part(rt, &mine)?);
        if mine.len() == 1 {
            // One rank: its own block (see `to_self`); in place it is there.
            let block = (scm.first(), sdm.first(), stm.first());
            let into = (rcm.first(), rdm.first(), rtm.first());
            if let (false, (Some(&c), Some(&d), Some(&t)), (Some(&rn), Some(&rd1), Some(&rt1))) =
                (in_place, block, into)
            {
                let at = offset(from, 1, Some(elements(d)?))?;
                let to = offset(recvbuf, 1, Some(elements(rd1)?))?;
                // SAFETY: the program's block and its place in the receive buffer.
                unsafe { to_self(mc, at, c, t, to, rn, rt1) }?;
            }
        } else {
            // SAFETY: the program's buffers (MPI_IN_PLACE passed on as given);
            // this job's counts, displacements and types.
            // The MPI's blocking call, not its nonblocking one (`native`): in
            // place, with the other job's blocks arriving into `recvbuf`
            // meanwhile, the nonblocking form left wrong values in both
            // pairings (tests/c/merge.c); why is not known yet.
            mpi(unsafe {
                ffi::PMPI_Alltoallw(
                    sendbuf,
                    scm.as_ptr(),
                    sdm.as_ptr(),
                    stm.as_ptr(),
                    recvbuf,
                    rcm.as_ptr(),
                    rdm.as_ptr(),
                    rtm.as_ptr(),
                    mc.native,
                )
            })?;
        }
        for (req, p, k, t) in recvs {
            // SAFETY: the block of the receive buffer for that rank.
            unsafe { complete(req, p, k, t) }?;
        }
        for s in sends {
            s.wait()?;
        }
        Ok(())
    };
    code(comm, "MPI_Alltoallw", run())
}

/// `MPI_Allgatherv` on a merged communicator (the body of [`allgatherv_as`]).
///
/// # Safety
/// As `MPI_Allgatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn allgatherv(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        allgatherv_as(
            mc,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcounts,
            displs,
            recvtype,
            comm,
            "MPI_Allgatherv",
        )
    }
}

/// `MPI_Gatherv` on a merged communicator (the body of [`gatherv_as`]).
///
/// # Safety
/// As `MPI_Gatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn gatherv(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        gatherv_as(
            mc,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcounts,
            displs,
            recvtype,
            root,
            comm,
            "MPI_Gatherv",
        )
    }
}

/// `MPI_Alltoallv` on a merged communicator (the body of [`alltoallv_as`]).
///
/// # Safety
/// As `MPI_Alltoallv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn alltoallv(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        alltoallv_as(
            mc,
            sendbuf,
            sendcounts,
            sdispls,
            sendtype,
            recvbuf,
            recvcounts,
            rdispls,
            recvtype,
            comm,
            "MPI_Alltoallv",
        )
    }
}

/// `MPI_Scatterv` on a merged communicator (the body of [`scatterv_as`]).
///
/// # Safety
/// As `MPI_Scatterv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn scatterv(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        scatterv_as(
            mc,
            sendbuf,
            sendcounts,
            displs,
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            root,
            comm,
            "MPI_Scatterv",
        )
    }
}

//! The v/w nonblocking collectives on a merged communicator
//! (`MPI_Igatherv`, `Iscatterv`, `Iallgatherv`, `Ialltoallv`, `Ialltoallw`):
//! the blocks within a job by the job's own v-collective over its slice of
//! the per-rank arrays, every block between the jobs straight from the
//! rank that has it to the rank that wants it (one bridge message per
//! block, as the blocking forms' Scatterv and Alltoallw). The arrays the
//! native step reads are copied and kept until the operation ends (MPI's
//! nonblocking v-collectives read them until completion).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use mpi::ffi;

use super::setup::{beside_keeping, message, start, Call, Into, Native};
use crate::collbuf::{array, elements, int, ints, is_in_place, native_counts, offset, Extents};
use crate::merged::wire::root_place;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::Fail;
use crate::state::{MergedComm, Place};

/// A native step with nothing to do (this job holds no block of the call):
/// a completed request.
fn nothing() -> Native {
    Box::new(|_, _| 0)
}

/// Entry `i` of a per-rank array.
fn at<T: Copy>(a: &[T], i: usize) -> Result<T, Fail> {
    a.get(i).copied().ok_or_else(short)
}

fn short() -> Fail {
    Fail::Bridge(isthmus_bridge::BridgeError::InvalidArgument(
        "a per-rank array is shorter than the communicator".into(),
    ))
}

/// Where each job's ranks are in the merged order, to read the per-rank
/// arrays by: a split's order may interleave the two jobs, so a job's
/// entries need not be one slice of them.
struct Ranks {
    local: Arc<[u32]>,
    remote: Arc<[u32]>,
}

impl Ranks {
    fn of(mc: &MergedComm) -> Ranks {
        Ranks {
            local: Arc::clone(mc.order.local_ranks()),
            remote: Arc::clone(mc.order.remote_ranks()),
        }
    }

    /// The merged rank of this job's rank `i`.
    fn local(&self, i: usize) -> usize {
        self.local.get(i).map_or(usize::MAX, |&r| r as usize)
    }

    /// The merged rank of the other job's rank `j`.
    fn remote(&self, j: usize) -> usize {
        self.remote.get(j).map_or(usize::MAX, |&r| r as usize)
    }

    /// `a`'s entries of this job's ranks, in their local order (the arrays
    /// of the job's native v-collective).
    fn mine<T: Copy>(&self, a: &[T]) -> Result<Vec<T>, Fail> {
        self.local.iter().map(|&r| at(a, r as usize)).collect()
    }
}

/// `MPI_Ialltoallv` on a merged communicator (`MPI_IN_PLACE` too).
///
/// # Safety
/// As `MPI_Ialltoallv`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ialltoallv(
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
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        alltoallv(
            mc,
            "MPI_Ialltoallv",
            sendbuf,
            sendcounts,
            sdispls,
            sendtype,
            recvbuf,
            recvcounts,
            rdispls,
            recvtype,
            comm,
            request,
        )
    }
}

/// [`ialltoallv`] for the call `name` (also the plain form's on an order
/// that interleaves the jobs).
///
/// # Safety
/// As `MPI_Ialltoallv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn alltoallv(
    mc: &MergedComm,
    name: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name,
    };
    let ranks = Ranks::of(mc);
    let (local, remote) = (mc.order.local_ranks().len(), mc.order.remote_ranks().len());
    let n = local + remote;
    // SAFETY: MPI_Ialltoallv's contract.
    unsafe {
        start(mc, call, |op, bc| {
            let in_place = is_in_place(sendbuf);
            let (rc, rd) = (ints(recvcounts, n)?, ints(rdispls, n)?);
            let (sbuf, sc, sd, stype) = if in_place {
                (recvbuf.cast_const(), rc, rd, recvtype)
            } else {
                (sendbuf, ints(sendcounts, n)?, ints(sdispls, n)?, sendtype)
            };
            let (se, re) = (Extents::of(stype)?, Extents::of(recvtype)?);
            let mut sends = Vec::with_capacity(remote);
            let mut recvs: Vec<Into> = Vec::with_capacity(remote);
            for j in 0..remote {
                let from = se.at(sbuf, elements(at(sd, ranks.remote(j))?)?)?;
                sends.push((j as u32, message(from, at(sc, ranks.remote(j))?, stype)));
                let into = re.at(recvbuf, elements(at(rd, ranks.remote(j))?)?)?;
                recvs.push((
                    j as u32,
                    into,
                    elements(at(rc, ranks.remote(j))?)?,
                    recvtype,
                ));
            }
            let arrays = [
                native_counts(&ranks.mine(sc)?, stype),
                ranks.mine(sd)?,
                native_counts(&ranks.mine(rc)?, recvtype),
                ranks.mine(rd)?,
            ];
            let [scp, sdp, rcp, rdp] = arrays.each_ref().map(|a| a.as_ptr());
            let native: Native = Box::new(move |c, q| {
                // SAFETY: the program's buffers; this job's slices of the
                // arrays, kept until the operation ends.
                ffi::PMPI_Ialltoallv(
                    sendbuf, scp, sdp, sendtype, recvbuf, rcp, rdp, recvtype, c, q,
                )
            });
            beside_keeping(op, bc, native, sends, recvs, Box::new(arrays))
        })
    }
}

/// `MPI_Ialltoallw` on a merged communicator (displacements in bytes, a
/// datatype per rank; `MPI_IN_PLACE` too).
///
/// # Safety
/// As `MPI_Ialltoallw`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ialltoallw(
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
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ialltoallw",
    };
    let ranks = Ranks::of(mc);
    let (local, remote) = (mc.order.local_ranks().len(), mc.order.remote_ranks().len());
    let n = local + remote;
    // SAFETY: MPI_Ialltoallw's contract.
    unsafe {
        start(mc, call, |op, bc| {
            let in_place = is_in_place(sendbuf);
            let (rc, rd) = (ints(recvcounts, n)?, ints(rdispls, n)?);
            let rt = array(recvtypes, n, "recvtypes")?;
            let (sbuf, sc, sd, st) = if in_place {
                (recvbuf.cast_const(), rc, rd, rt)
            } else {
                (
                    sendbuf,
                    ints(sendcounts, n)?,
                    ints(sdispls, n)?,
                    array(sendtypes, n, "sendtypes")?,
                )
            };
            let mut sends = Vec::with_capacity(remote);
            let mut recvs: Vec<Into> = Vec::with_capacity(remote);
            for j in 0..remote {
                let i = ranks.remote(j);
                let from = offset(sbuf, 1, Some(elements(at(sd, i)?)?))?;
                sends.push((j as u32, message(from, at(sc, i)?, at(st, i)?)));
                let into = offset(recvbuf, 1, Some(elements(at(rd, i)?)?))?;
                recvs.push((j as u32, into, elements(at(rc, i)?)?, at(rt, i)?));
            }
            if local == 1 {
                // One rank: its own block (see `merged::to_self`); in place it is there.
                if !in_place {
                    let me = ranks.local(0);
                    let from = offset(sbuf, 1, Some(elements(at(sd, me)?)?))?;
                    let to = offset(recvbuf, 1, Some(elements(at(rd, me)?)?))?;
                    let (c, t, rn, rt1) = (at(sc, me)?, at(st, me)?, at(rc, me)?, at(rt, me)?);
                    // SAFETY: the program's block and its place (see
                    // `merged::to_self`: a one-rank job's own block).
                    crate::merged::to_self(mc, from, c, t, to, rn, rt1)?;
                }
                return beside_keeping(op, bc, nothing(), sends, recvs, Box::new(()));
            }
            let counts = [ranks.mine(sc)?, ranks.mine(sd)?];
            let counts2 = [ranks.mine(rc)?, ranks.mine(rd)?];
            let types = [ranks.mine(st)?, ranks.mine(rt)?];
            let (scp, sdp) = (counts[0].as_ptr(), counts[1].as_ptr());
            let (rcp, rdp) = (counts2[0].as_ptr(), counts2[1].as_ptr());
            let (stp, rtp) = (types[0].as_ptr(), types[1].as_ptr());
            let native: Native = Box::new(move |c, q| {
                // SAFETY: the program's buffers; this job's slices of the
                // arrays, kept until the operation ends.
                ffi::PMPI_Ialltoallw(sendbuf, scp, sdp, stp, recvbuf, rcp, rdp, rtp, c, q)
            });
            beside_keeping(
                op,
                bc,
                native,
                sends,
                recvs,
                Box::new((counts, counts2, types)),
            )
        })
    }
}

/// `MPI_Igatherv` on a merged communicator: the root's job gathers
/// natively; each rank of the other job sends its block to the root.
///
/// # Safety
/// As `MPI_Igatherv`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn igatherv(
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
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        gatherv(
            mc,
            "MPI_Igatherv",
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcounts,
            displs,
            recvtype,
            root,
            comm,
            request,
        )
    }
}

/// [`igatherv`] for the call `name` (also the plain form's on an order
/// that interleaves the jobs).
///
/// # Safety
/// As `MPI_Igatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn gatherv(
    mc: &MergedComm,
    name: &'static str,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name,
    };
    let place = root_place(mc, root);
    let ranks = Ranks::of(mc);
    let (local, remote) = (mc.order.local_ranks().len(), mc.order.remote_ranks().len());
    // SAFETY: MPI_Igatherv's contract.
    unsafe {
        start(mc, call, |op, bc| match place.map_err(Fail::from)? {
            Place::Remote(r) => {
                let send = vec![(r, message(sendbuf, sendcount, sendtype))];
                beside_keeping(op, bc, nothing(), send, vec![], Box::new(()))
            }
            Place::Local(r) => {
                let lr = int(r as usize)?;
                let mut recvs: Vec<Into> = Vec::new();
                let mut arrays = [Vec::new(), Vec::new()];
                if bc.inter.rank() == r {
                    let n = local + remote;
                    let (rc, rd) = (ints(recvcounts, n)?, ints(displs, n)?);
                    let e = Extents::of(recvtype)?;
                    for j in 0..remote {
                        let into = e.at(recvbuf, elements(at(rd, ranks.remote(j))?)?)?;
                        recvs.push((
                            j as u32,
                            into,
                            elements(at(rc, ranks.remote(j))?)?,
                            recvtype,
                        ));
                    }
                    arrays = [native_counts(&ranks.mine(rc)?, recvtype), ranks.mine(rd)?];
                }
                let (rcp, rdp) = (arrays[0].as_ptr(), arrays[1].as_ptr());
                let count = crate::collbuf::native_count(sendcount, sendtype);
                let native: Native = Box::new(move |c, q| {
                    // SAFETY: the program's buffers; at the root, this
                    // job's slices of the arrays, kept until the end.
                    ffi::PMPI_Igatherv(
                        sendbuf, count, sendtype, recvbuf, rcp, rdp, recvtype, lr, c, q,
                    )
                });
                beside_keeping(op, bc, native, vec![], recvs, Box::new(arrays))
            }
        })
    }
}

/// `MPI_Iscatterv` on a merged communicator: the root's job scatters
/// natively; the root sends each rank of the other job its block.
///
/// # Safety
/// As `MPI_Iscatterv`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iscatterv(
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
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        scatterv(
            mc,
            "MPI_Iscatterv",
            sendbuf,
            sendcounts,
            displs,
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            root,
            comm,
            request,
        )
    }
}

/// [`iscatterv`] for the call `name` (also the plain form's on an order
/// that interleaves the jobs).
///
/// # Safety
/// As `MPI_Iscatterv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn scatterv(
    mc: &MergedComm,
    name: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name,
    };
    let place = root_place(mc, root);
    let ranks = Ranks::of(mc);
    let (local, remote) = (mc.order.local_ranks().len(), mc.order.remote_ranks().len());
    // SAFETY: MPI_Iscatterv's contract.
    unsafe {
        start(mc, call, |op, bc| match place.map_err(Fail::from)? {
            Place::Remote(r) => {
                let recv: Vec<Into> = vec![(r, recvbuf, elements(recvcount)?, recvtype)];
                beside_keeping(op, bc, nothing(), vec![], recv, Box::new(()))
            }
            Place::Local(r) => {
                let lr = int(r as usize)?;
                let mut sends = Vec::new();
                let mut arrays = [Vec::new(), Vec::new()];
                if bc.inter.rank() == r {
                    let n = local + remote;
                    let (sc, sd) = (ints(sendcounts, n)?, ints(displs, n)?);
                    let e = Extents::of(sendtype)?;
                    for j in 0..remote {
                        let from = e.at(sendbuf, elements(at(sd, ranks.remote(j))?)?)?;
                        sends.push((j as u32, message(from, at(sc, ranks.remote(j))?, sendtype)));
                    }
                    arrays = [native_counts(&ranks.mine(sc)?, sendtype), ranks.mine(sd)?];
                }
                let (scp, sdp) = (arrays[0].as_ptr(), arrays[1].as_ptr());
                let count = crate::collbuf::native_count(recvcount, recvtype);
                let native: Native = Box::new(move |c, q| {
                    // SAFETY: the program's buffers; at the root, this
                    // job's slices of the arrays, kept until the end.
                    ffi::PMPI_Iscatterv(
                        sendbuf, scp, sdp, sendtype, recvbuf, count, recvtype, lr, c, q,
                    )
                });
                beside_keeping(op, bc, native, sends, vec![], Box::new(arrays))
            }
        })
    }
}

/// `MPI_Iallgatherv` on a merged communicator: the job's own blocks by its
/// native all-gather over its slice of the arrays (a job of one rank copies
/// its own, see `merged::to_self`), each rank's block sent to every rank of the
/// other job (`MPI_IN_PLACE` too: the block is then in `recvbuf`).
///
/// # Safety
/// As `MPI_Iallgatherv`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iallgatherv(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        allgatherv(
            mc,
            "MPI_Iallgatherv",
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcounts,
            displs,
            recvtype,
            comm,
            request,
        )
    }
}

/// [`iallgatherv`] for the call `name` (also the plain form's on an order
/// that interleaves the jobs).
///
/// # Safety
/// As `MPI_Iallgatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn allgatherv(
    mc: &MergedComm,
    name: &'static str,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name,
    };
    let ranks = Ranks::of(mc);
    let (local, remote) = (mc.order.local_ranks().len(), mc.order.remote_ranks().len());
    let n = local + remote;
    // SAFETY: MPI_Iallgatherv's contract.
    unsafe {
        start(mc, call, |op, bc| {
            let (rc, rd) = (ints(recvcounts, n)?, ints(displs, n)?);
            let e = Extents::of(recvtype)?;
            let me = ranks.local(bc.inter.rank() as usize);
            let own = e.at(recvbuf, elements(at(rd, me)?)?)?;
            let (block, count, dt) = if is_in_place(sendbuf) {
                (own.cast_const(), at(rc, me)?, recvtype)
            } else {
                (sendbuf, sendcount, sendtype)
            };
            let mut sends = Vec::with_capacity(remote);
            let mut recvs: Vec<Into> = Vec::with_capacity(remote);
            for j in 0..remote {
                sends.push((j as u32, message(block, count, dt)));
                let into = e.at(recvbuf, elements(at(rd, ranks.remote(j))?)?)?;
                recvs.push((
                    j as u32,
                    into,
                    elements(at(rc, ranks.remote(j))?)?,
                    recvtype,
                ));
            }
            if local == 1 {
                if !is_in_place(sendbuf) {
                    let rn = at(rc, me)?;
                    // SAFETY: as in `ialltoallw`.
                    crate::merged::to_self(mc, sendbuf, sendcount, sendtype, own, rn, recvtype)?;
                }
                return beside_keeping(op, bc, nothing(), sends, recvs, Box::new(()));
            }
            let arrays = [native_counts(&ranks.mine(rc)?, recvtype), ranks.mine(rd)?];
            let (rcp, rdp) = (arrays[0].as_ptr(), arrays[1].as_ptr());
            let count = crate::collbuf::native_count(sendcount, sendtype);
            let native: Native = Box::new(move |c, q| {
                // SAFETY: the program's buffers; this job's slices of the
                // arrays, kept until the operation ends.
                ffi::PMPI_Iallgatherv(sendbuf, count, sendtype, recvbuf, rcp, rdp, recvtype, c, q)
            });
            beside_keeping(op, bc, native, sends, recvs, Box::new(arrays))
        })
    }
}

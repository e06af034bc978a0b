//! The neighbourhood collectives on a merged communicator with a topology
//! (`MPI_Neighbor_allgather(v)`, `MPI_Neighbor_alltoall(v,w)`): the
//! stencil's halo exchange of coupled grid codes, whose grid spans both
//! jobs. Each block goes straight to its neighbour and no further: natively
//! (`PMPI_Isend`/`PMPI_Irecv` on the collectives' private native side) to a
//! neighbour in this job, over the bridge's collective context to one in
//! the other. Neighbours and the tags that pair their messages are
//! `topo::neighbors`'s; `MPI_PROC_NULL` neighbours (off a grid's edge)
//! send and receive nothing, leaving their blocks as they were.
//!
//! Every receive is posted before any send, and the native ones complete
//! before the bridge's are waited for, so no rank waits on a bridge
//! message while a neighbour of its own job waits on it natively.

use std::ffi::{c_int, c_void};

use isthmus_bridge::RecvRequest;
use mpi::ffi;

use super::comm::raise;
use super::topo::neighbors;
use super::wire::{complete, mpi, post, send_lent, Fail, TAG_NEIGHBOR};
use crate::collbuf::{elements, offset, Extents};
use crate::lent_send::LentSend;
use crate::mpi_glue::{proc_null, MPI_Comm, MPI_Datatype};
use crate::state::{MergedComm, Place};

/// The tag of the neighbourhood collectives' native messages (plus the
/// neighbour's tag, 0 or 1): apart from every other native step's.
const NATIVE_TAG: c_int = 0x4e42;

/// One block of an exchange: `count` elements of `dt` at `buf`, to or from
/// merged rank `peer` (or `MPI_PROC_NULL`) with the neighbour's tag.
struct Block {
    peer: c_int,
    tag: i32,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
}

/// Native requests in flight, cancelled and freed if the exchange fails
/// before it waited for them (the error is the caller's to raise).
struct NativeRequests(Vec<ffi::MPI_Request>);

impl NativeRequests {
    fn wait(mut self) -> Result<(), Fail> {
        let mut reqs = std::mem::take(&mut self.0);
        let n = c_int::try_from(reqs.len()).map_err(|_| Fail::Mpi(ffi::MPI_ERR_COUNT as c_int))?;
        // SAFETY: live requests of ours; statuses ignored.
        mpi(unsafe { ffi::PMPI_Waitall(n, reqs.as_mut_ptr(), crate::mpi_glue::statuses_ignore()) })
    }
}

impl Drop for NativeRequests {
    fn drop(&mut self) {
        for r in &mut self.0 {
            // SAFETY: live requests of ours, each cancelled and freed once.
            unsafe {
                ffi::PMPI_Cancel(r);
                ffi::PMPI_Request_free(r);
            }
        }
    }
}

/// Receives `recvs` and sends `sends`, each from or to its neighbour.
///
/// # Safety
/// Every block addresses its `count` elements of its type, readable for a
/// send and writable for a receive, until this returns.
unsafe fn exchange(mc: &MergedComm, recvs: &[Block], sends: &[Block]) -> Result<(), Fail> {
    let mut native = NativeRequests(Vec::new());
    let mut bridged: Vec<(RecvRequest, &Block)> = Vec::new();
    for b in recvs.iter().filter(|b| b.peer != proc_null()) {
        match place(mc, b.peer)? {
            Place::Local(l) => {
                // SAFETY: null, written by MPI.
                let mut r = unsafe { ffi::RSMPI_REQUEST_NULL };
                // SAFETY: the block is writable until the wait (this
                // function's contract); a request of ours.
                mpi(unsafe {
                    ffi::PMPI_Irecv(
                        b.buf,
                        b.count,
                        b.dt,
                        l as c_int,
                        NATIVE_TAG + b.tag,
                        mc.native,
                        &mut r,
                    )
                })?;
                native.0.push(r);
            }
            Place::Remote(r) => {
                let req = post(&mc.coll, r, TAG_NEIGHBOR + b.tag, elements(b.count)?, b.dt)?;
                bridged.push((req, b));
            }
        }
    }
    let mut lent: Vec<LentSend> = Vec::new();
    for b in sends.iter().filter(|b| b.peer != proc_null()) {
        match place(mc, b.peer)? {
            Place::Local(l) => {
                // SAFETY: as above.
                let mut r = unsafe { ffi::RSMPI_REQUEST_NULL };
                // SAFETY: the block is readable and unchanged until the
                // wait (this function's contract).
                mpi(unsafe {
                    ffi::PMPI_Isend(
                        b.buf,
                        b.count,
                        b.dt,
                        l as c_int,
                        NATIVE_TAG + b.tag,
                        mc.native,
                        &mut r,
                    )
                })?;
                native.0.push(r);
            }
            // SAFETY: as above; the guard waits for the send before the
            // block may go.
            Place::Remote(r) => lent.push(unsafe {
                send_lent(
                    &mc.coll,
                    r,
                    TAG_NEIGHBOR + b.tag,
                    b.buf,
                    elements(b.count)?,
                    b.dt,
                )
            }?),
        }
    }
    native.wait()?;
    for (req, b) in bridged {
        // SAFETY: the block is writable (this function's contract).
        unsafe { complete(req, b.buf, elements(b.count)?, b.dt) }?;
    }
    for s in lent {
        s.wait()?;
    }
    Ok(())
}

/// Where merged rank `peer` lives.
fn place(mc: &MergedComm, peer: c_int) -> Result<Place, Fail> {
    u32::try_from(peer)
        .ok()
        .and_then(|p| mc.place(p))
        .ok_or(Fail::Mpi(ffi::MPI_ERR_RANK as c_int))
}

/// Runs a neighbourhood collective: `blocks` lays out its receive and send
/// blocks over this process's neighbours (sources, destinations), and the
/// exchange moves them; an error is raised on `comm`.
fn run(
    mc: &MergedComm,
    comm: MPI_Comm,
    call: &str,
    blocks: impl FnOnce(&[(c_int, i32)], &[(c_int, i32)]) -> Result<(Vec<Block>, Vec<Block>), Fail>,
) -> c_int {
    let n = match neighbors(comm, mc.rank() as c_int) {
        Ok(n) => n,
        Err(rc) => return rc,
    };
    let r = blocks(&n.sources, &n.destinations).and_then(|(recvs, sends)| {
        // SAFETY: `blocks` laid them over the program's buffers as the
        // call's arguments describe (the caller's contract).
        unsafe { exchange(mc, &recvs, &sends) }
    });
    match r {
        Ok(()) => 0,
        Err(f) => raise(comm, call, f),
    }
}

/// Blocks at `base`, the i-th `counts[i]` elements of `dt` at `at[i]`
/// (`at` in the type's extents) for neighbour i.
fn laid_out(
    base: *const c_void,
    who: &[(c_int, i32)],
    counts: &[c_int],
    at: &[usize],
    dt: MPI_Datatype,
) -> Result<Vec<Block>, Fail> {
    let e = Extents::of(dt)?;
    who.iter()
        .zip(counts.iter().zip(at))
        .map(|(&(peer, tag), (&count, &k))| {
            Ok(Block {
                peer,
                tag,
                buf: e.at(base, k)?,
                count,
                dt,
            })
        })
        .collect()
}

/// `n` ints at `p` (one per neighbour), empty for no neighbours.
///
/// # Safety
/// A non-null `p` addresses `n` ints.
unsafe fn per_neighbor<T: Copy>(p: *const T, n: usize) -> Result<Vec<T>, Fail> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Fail::Mpi(ffi::MPI_ERR_ARG as c_int));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
}

/// Displacements in elements, each checked non-negative.
fn displs(d: &[c_int]) -> Result<Vec<usize>, Fail> {
    d.iter().map(|&x| elements(x).map_err(Fail::from)).collect()
}

/// Where the blocks of one count lie in their buffer.
enum Spread {
    /// The i-th `i * count` elements in.
    Consecutive,
    /// All the one block at the start (an allgather's send).
    Same,
}

/// Blocks of `count` elements of `dt` at `base` for each of `who`.
fn uniform(
    base: *const c_void,
    who: &[(c_int, i32)],
    count: c_int,
    dt: MPI_Datatype,
    spread: Spread,
) -> Result<Vec<Block>, Fail> {
    let c = elements(count)?;
    let at = (0..who.len())
        .map(|i| match spread {
            Spread::Consecutive => i
                .checked_mul(c)
                .ok_or(Fail::Mpi(ffi::MPI_ERR_COUNT as c_int)),
            Spread::Same => Ok(0),
        })
        .collect::<Result<Vec<usize>, Fail>>()?;
    laid_out(base, who, &vec![count; who.len()], &at, dt)
}

/// `MPI_Neighbor_allgather` on a merged communicator with a topology.
///
/// # Safety
/// As `MPI_Neighbor_allgather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn neighbor_allgather(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    run(mc, comm, "MPI_Neighbor_allgather", |from, to| {
        let recvs = uniform(recvbuf, from, recvcount, recvtype, Spread::Consecutive)?;
        let sends = uniform(sendbuf, to, sendcount, sendtype, Spread::Same)?;
        Ok((recvs, sends))
    })
}

/// `MPI_Neighbor_allgatherv` on a merged communicator with a topology.
///
/// # Safety
/// As `MPI_Neighbor_allgatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn neighbor_allgatherv(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    run(mc, comm, "MPI_Neighbor_allgatherv", |from, to| {
        // SAFETY: one count and displacement per source (MPI's contract).
        let (rc, rd) = unsafe {
            (
                per_neighbor(recvcounts, from.len())?,
                per_neighbor(rdispls, from.len())?,
            )
        };
        let recvs = laid_out(recvbuf, from, &rc, &displs(&rd)?, recvtype)?;
        let sends = uniform(sendbuf, to, sendcount, sendtype, Spread::Same)?;
        Ok((recvs, sends))
    })
}

/// `MPI_Neighbor_alltoall` on a merged communicator with a topology.
///
/// # Safety
/// As `MPI_Neighbor_alltoall`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn neighbor_alltoall(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    run(mc, comm, "MPI_Neighbor_alltoall", |from, to| {
        let recvs = uniform(recvbuf, from, recvcount, recvtype, Spread::Consecutive)?;
        let sends = uniform(sendbuf, to, sendcount, sendtype, Spread::Consecutive)?;
        Ok((recvs, sends))
    })
}

/// `MPI_Neighbor_alltoallv` on a merged communicator with a topology.
///
/// # Safety
/// As `MPI_Neighbor_alltoallv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn neighbor_alltoallv(
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
    run(mc, comm, "MPI_Neighbor_alltoallv", |from, to| {
        // SAFETY: one count and displacement per neighbour (MPI's contract).
        let (sc, sd, rc, rd) = unsafe {
            (
                per_neighbor(sendcounts, to.len())?,
                per_neighbor(sdispls, to.len())?,
                per_neighbor(recvcounts, from.len())?,
                per_neighbor(rdispls, from.len())?,
            )
        };
        let recvs = laid_out(recvbuf, from, &rc, &displs(&rd)?, recvtype)?;
        let sends = laid_out(sendbuf, to, &sc, &displs(&sd)?, sendtype)?;
        Ok((recvs, sends))
    })
}

/// Blocks of `MPI_Neighbor_alltoallw`: each its own type, at a byte
/// displacement.
fn typed(
    base: *const c_void,
    who: &[(c_int, i32)],
    counts: &[c_int],
    at: &[ffi::MPI_Aint],
    types: &[MPI_Datatype],
) -> Result<Vec<Block>, Fail> {
    who.iter()
        .zip(counts.iter().zip(at.iter().zip(types)))
        .map(|(&(peer, tag), (&count, (&d, &dt)))| {
            let bytes = usize::try_from(d).map_err(|_| Fail::Mpi(ffi::MPI_ERR_ARG as c_int))?;
            Ok(Block {
                peer,
                tag,
                buf: offset(base, 1, Some(bytes))?,
                count,
                dt,
            })
        })
        .collect()
}

/// `MPI_Neighbor_alltoallw` on a merged communicator with a topology.
///
/// # Safety
/// As `MPI_Neighbor_alltoallw`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn neighbor_alltoallw(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const ffi::MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const ffi::MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    run(mc, comm, "MPI_Neighbor_alltoallw", |from, to| {
        // SAFETY: one count, displacement and type per neighbour (MPI's
        // contract).
        let (sc, sd, st, rc, rd, rt) = unsafe {
            (
                per_neighbor(sendcounts, to.len())?,
                per_neighbor(sdispls, to.len())?,
                per_neighbor(sendtypes, to.len())?,
                per_neighbor(recvcounts, from.len())?,
                per_neighbor(rdispls, from.len())?,
                per_neighbor(recvtypes, from.len())?,
            )
        };
        let recvs = typed(recvbuf, from, &rc, &rd, &rt)?;
        let sends = typed(sendbuf, to, &sc, &sd, &st)?;
        Ok((recvs, sends))
    })
}

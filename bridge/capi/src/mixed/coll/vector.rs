//! The v and w collectives on a mixed intercommunicator, MPICH's
//! `coll/inter` shapes over the collective context: every block crosses
//! straight to where it goes — to or from the root (Gatherv, Scatterv),
//! to the other group's leader, which hands all the blocks to its group in
//! one local broadcast of an indexed type (Allgatherv), or between the two
//! ranks of each step of the pairwise exchange (Alltoallv, Alltoallw).

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::collbuf::{elements, entry, ints, offset, Extents};
use crate::merged::{Derived, Fail};
use crate::mixed::coll::steps::{code, extents, recv, role, send, sendrecv, Role};
use crate::mixed::local;
use crate::mpi_glue::{proc_null, MPI_Comm, MPI_Datatype};
use crate::state::MixedInter;

/// `MPI_IN_PLACE` is not defined for an intercommunicator: MPI's
/// `MPI_ERR_BUFFER`.
pub(crate) fn not_in_place(bufs: &[*const c_void]) -> Result<(), Fail> {
    if bufs.iter().any(|b| crate::collbuf::in_place_of_either(*b)) {
        tracing::warn!("MPI_IN_PLACE is not defined for an intercommunicator");
        return Err(Fail::Mpi(ffi::MPI_ERR_BUFFER as c_int));
    }
    Ok(())
}

/// Block `j` of a v-form buffer: `counts[j]` elements at `base +
/// displs[j] * extent`.
///
/// # Safety
/// `counts` and `displs` are null or have an entry `j`.
pub(crate) unsafe fn v_block(
    base: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    e: &Extents,
    j: u32,
) -> Result<(*mut c_void, c_int), Fail> {
    let j = j as usize;
    // SAFETY: forwarded from this function's contract.
    let (c, d) = unsafe {
        (
            entry(counts, j, "a counts array")?,
            entry(displs, j, "a displacements array")?,
        )
    };
    elements(c)?;
    Ok((offset(base, e.extent, Some(elements(d)?))?, c))
}

/// Block `j` of a w-form buffer: `counts[j]` elements of `types[j]` at
/// `base + displs[j]` bytes.
///
/// # Safety
/// The arrays are null or have an entry `j`.
pub(crate) unsafe fn w_block(
    base: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    types: *const MPI_Datatype,
    j: u32,
) -> Result<(*mut c_void, c_int, MPI_Datatype), Fail> {
    let j = j as usize;
    // SAFETY: forwarded from this function's contract.
    let (c, d, t) = unsafe {
        (
            entry(counts, j, "a counts array")?,
            entry(displs, j, "a displacements array")?,
            entry(types, j, "a datatypes array")?,
        )
    };
    elements(c)?;
    Ok((offset(base, 1, Some(elements(d)?))?, c, t))
}

/// `MPI_Gatherv` on a mixed intercommunicator: the root receives each
/// remote rank's block straight into its place.
///
/// # Safety
/// As `MPI_Gatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn gatherv(
    mx: &MixedInter,
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
    let run = || -> Result<(), Fail> {
        match role(mx, root)? {
            Role::Idle => Ok(()),
            Role::Root => {
                not_in_place(&[recvbuf.cast_const()])?;
                let e = extents(recvtype)?;
                for j in 0..mx.peers.size() {
                    // SAFETY: an entry per remote rank (MPI's contract).
                    let (at, n) = unsafe { v_block(recvbuf, recvcounts, displs, &e, j) }?;
                    // SAFETY: the root's block j has room for its count.
                    unsafe { recv(mx, at, n, recvtype, c_int::try_from(j).unwrap_or(0)) }?;
                }
                Ok(())
            }
            Role::From(r) => {
                not_in_place(&[sendbuf])?;
                // SAFETY: the program's block.
                unsafe { send(mx, sendbuf, sendcount, sendtype, r) }
            }
        }
    };
    code(comm, "MPI_Gatherv", run())
}

/// `MPI_Scatterv` on a mixed intercommunicator: the root sends each
/// remote rank its block straight.
///
/// # Safety
/// As `MPI_Scatterv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn scatterv(
    mx: &MixedInter,
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
    let run = || -> Result<(), Fail> {
        match role(mx, root)? {
            Role::Idle => Ok(()),
            Role::Root => {
                not_in_place(&[sendbuf])?;
                let e = extents(sendtype)?;
                for j in 0..mx.peers.size() {
                    // SAFETY: an entry per remote rank (MPI's contract).
                    let (at, n) = unsafe { v_block(sendbuf, sendcounts, displs, &e, j) }?;
                    // SAFETY: the root's block j holds its count.
                    unsafe { send(mx, at, n, sendtype, c_int::try_from(j).unwrap_or(0)) }?;
                }
                Ok(())
            }
            Role::From(r) => {
                not_in_place(&[recvbuf.cast_const()])?;
                // SAFETY: the program's block.
                unsafe { recv(mx, recvbuf, recvcount, recvtype, r) }
            }
        }
    };
    code(comm, "MPI_Scatterv", run())
}

/// `MPI_Allgatherv` on a mixed intercommunicator (MPICH's shape with the
/// blocks straight to the leader): every rank sends its block to the
/// other group's leader, which receives each remote rank's block into its
/// place and broadcasts them all in its group as one indexed element.
///
/// # Safety
/// As `MPI_Allgatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn allgatherv(
    mx: &MixedInter,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        let remote = mx.peers.size();
        if mx.rank == 0 {
            let e = extents(recvtype)?;
            // The leaders first swap their own blocks (both send to the
            // other leader first), then each takes the other ranks'.
            for j in 0..remote {
                // SAFETY: an entry per remote rank (MPI's contract).
                let (at, n) = unsafe { v_block(recvbuf, recvcounts, displs, &e, j) }?;
                let src = c_int::try_from(j).unwrap_or(0);
                // SAFETY: the program's block; block j of its buffer.
                unsafe {
                    if j == 0 {
                        sendrecv(
                            mx,
                            (sendbuf, sendcount, sendtype, 0),
                            (at, n, recvtype, src),
                        )
                    } else {
                        recv(mx, at, n, recvtype, src)
                    }
                }?;
            }
        } else {
            // SAFETY: the program's block.
            unsafe { send(mx, sendbuf, sendcount, sendtype, 0) }?;
        }
        // SAFETY: an entry per remote rank (MPI's contract).
        let (counts, displs) = unsafe {
            (
                ints(recvcounts, remote as usize)?,
                ints(displs, remote as usize)?,
            )
        };
        let all = Derived::indexed(counts, displs, recvtype)?;
        // SAFETY: the program's buffer, as the indexed type lays it out.
        unsafe { local::bcast(&mx.local, recvbuf, 1, all.0, 0) }
    };
    code(comm, "MPI_Allgatherv", run())
}

/// One step of a pairwise exchange: the remote ranks this rank sends to
/// and receives from in step `i` (`None`: past the remote size).
fn pair(mx: &MixedInter, i: u32) -> (Option<u32>, Option<u32>) {
    let remote = mx.peers.size();
    let most = remote.max(mx.local_size);
    let dst = (mx.rank + i) % most;
    let src = (mx.rank + most - i) % most;
    ((dst < remote).then_some(dst), (src < remote).then_some(src))
}

fn rank_or_null(r: Option<u32>) -> c_int {
    r.map_or(proc_null(), |r| c_int::try_from(r).unwrap_or(c_int::MAX))
}

/// `MPI_Alltoallv` on a mixed intercommunicator: MPICH's pairwise
/// exchange (see `pairwise`) with each pair's own counts and places.
///
/// # Safety
/// As `MPI_Alltoallv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn alltoallv(
    mx: &MixedInter,
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
    let run = || -> Result<(), Fail> {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        let (se, re) = (extents(sendtype)?, extents(recvtype)?);
        let most = mx.peers.size().max(mx.local_size);
        for i in 0..most {
            let (dst, src) = pair(mx, i);
            let (sptr, sn) = match dst {
                // SAFETY: an entry per remote rank (MPI's contract).
                Some(d) => unsafe { v_block(sendbuf, sendcounts, sdispls, &se, d) }?,
                None => (std::ptr::null_mut(), 0),
            };
            let (rptr, rn) = match src {
                // SAFETY: as above.
                Some(s) => unsafe { v_block(recvbuf, recvcounts, rdispls, &re, s) }?,
                None => (std::ptr::null_mut(), 0),
            };
            // SAFETY: a block of the program's buffers each way.
            unsafe {
                sendrecv(
                    mx,
                    (sptr.cast_const(), sn, sendtype, rank_or_null(dst)),
                    (rptr, rn, recvtype, rank_or_null(src)),
                )
            }?;
        }
        Ok(())
    };
    code(comm, "MPI_Alltoallv", run())
}

/// `MPI_Alltoallw` on a mixed intercommunicator: the pairwise exchange
/// with each pair's own counts, byte displacements and types.
///
/// # Safety
/// As `MPI_Alltoallw`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn alltoallw(
    mx: &MixedInter,
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
    let run = || -> Result<(), Fail> {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        let most = mx.peers.size().max(mx.local_size);
        let byte = crate::mpi_glue::byte();
        for i in 0..most {
            let (dst, src) = pair(mx, i);
            let (sptr, sn, st) = match dst {
                // SAFETY: an entry per remote rank (MPI's contract).
                Some(d) => unsafe { w_block(sendbuf, sendcounts, sdispls, sendtypes, d) }?,
                None => (std::ptr::null_mut(), 0, byte),
            };
            let (rptr, rn, rt) = match src {
                // SAFETY: as above.
                Some(s) => unsafe { w_block(recvbuf, recvcounts, rdispls, recvtypes, s) }?,
                None => (std::ptr::null_mut(), 0, byte),
            };
            // SAFETY: a block of the program's buffers each way.
            unsafe {
                sendrecv(
                    mx,
                    (sptr.cast_const(), sn, st, rank_or_null(dst)),
                    (rptr, rn, rt, rank_or_null(src)),
                )
            }?;
        }
        Ok(())
    };
    code(comm, "MPI_Alltoallw", run())
}

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
//! The calls here lay out their blocks (`blocks`) and move them now
//! (`now`, the blocking forms) or by a schedule behind the program's
//! request (`crate::merged::nonblocking::neighbor`, the `MPI_Ineighbor_*`
//! forms, and through them the persistent ones).

pub(crate) mod blocks;
mod now;

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::comm::raise;
use super::topo::neighbors;
use super::wire::Fail;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::state::MergedComm;
use blocks::{displs, laid_out, per_neighbor, typed, uniform, Block, Spread};

/// When a call's blocks move: before it returns (the blocking forms), or
/// by a schedule behind the program's request (the nonblocking ones).
#[derive(Clone, Copy)]
enum When {
    Now,
    Later(*mut MPI_Request),
}

/// Runs a neighbourhood collective `call`: `blocks` lays out its receive
/// and send blocks over this process's neighbours (sources, destinations),
/// and they move `when` the call says; an error is raised on `comm`.
///
/// # Safety
/// The blocks `blocks` lays out are the program's buffers as the call's
/// arguments describe them (MPI's contract for the call).
unsafe fn run(
    mc: &MergedComm,
    comm: MPI_Comm,
    (call, when): (&'static str, When),
    blocks: impl FnOnce(&[(c_int, i32)], &[(c_int, i32)]) -> Result<(Vec<Block>, Vec<Block>), Fail>,
) -> c_int {
    let n = match neighbors(comm, mc.rank() as c_int) {
        Ok(n) => n,
        Err(rc) => return rc,
    };
    let (recvs, sends) = match blocks(&n.sources, &n.destinations) {
        Ok(b) => b,
        Err(f) => return raise(comm, call, f),
    };
    match when {
        // SAFETY: this function's contract.
        When::Now => match unsafe { now::exchange(mc, &recvs, &sends) } {
            Ok(()) => 0,
            Err(f) => raise(comm, call, f),
        },
        // SAFETY: as above, until the request completes (MPI's rule for a
        // nonblocking collective's buffers).
        When::Later(request) => unsafe {
            super::nonblocking::ineighbor(mc, comm, request, call, recvs, sends)
        },
    }
}

/// A neighbourhood collective's blocking and nonblocking entry points
/// around its body (which takes the call's name and [`When`]).
macro_rules! both_forms {
    ($blocking:ident, $nonblocking:ident, $body:ident, $name:literal, $iname:literal,
     ($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("`", $name, "` on a merged communicator with a topology.")]
        ///
        /// # Safety
        /// As the MPI call.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $blocking(mc: &MergedComm, $($arg: $ty,)* comm: MPI_Comm) -> c_int {
            // SAFETY: forwarded.
            unsafe { $body(mc, $($arg,)* comm, ($name, When::Now)) }
        }

        #[doc = concat!("`", $iname, "` on a merged communicator with a topology.")]
        ///
        /// # Safety
        /// As the MPI call.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $nonblocking(
            mc: &MergedComm,
            $($arg: $ty,)*
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            // SAFETY: forwarded.
            unsafe { $body(mc, $($arg,)* comm, ($iname, When::Later(request))) }
        }
    };
}

both_forms!(neighbor_allgather, ineighbor_allgather, allgather,
    "MPI_Neighbor_allgather", "MPI_Ineighbor_allgather",
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
     recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype));
both_forms!(neighbor_allgatherv, ineighbor_allgatherv, allgatherv,
    "MPI_Neighbor_allgatherv", "MPI_Ineighbor_allgatherv",
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void,
     recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype));
both_forms!(neighbor_alltoall, ineighbor_alltoall, alltoall,
    "MPI_Neighbor_alltoall", "MPI_Ineighbor_alltoall",
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
     recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype));
both_forms!(neighbor_alltoallv, ineighbor_alltoallv, alltoallv,
    "MPI_Neighbor_alltoallv", "MPI_Ineighbor_alltoallv",
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
     sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
     rdispls: *const c_int, recvtype: MPI_Datatype));
both_forms!(neighbor_alltoallw, ineighbor_alltoallw, alltoallw,
    "MPI_Neighbor_alltoallw", "MPI_Ineighbor_alltoallw",
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const ffi::MPI_Aint,
     sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
     rdispls: *const ffi::MPI_Aint, recvtypes: *const MPI_Datatype));

/// The blocks of `MPI_(I)neighbor_allgather`, moving as `call` says.
///
/// # Safety
/// As `MPI_Neighbor_allgather`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn allgather(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    call: (&'static str, When),
) -> c_int {
    let blocks = |from: &[(c_int, i32)], to: &[(c_int, i32)]| {
        let recvs = uniform(recvbuf, from, recvcount, recvtype, Spread::Consecutive)?;
        let sends = uniform(sendbuf, to, sendcount, sendtype, Spread::Same)?;
        Ok((recvs, sends))
    };
    // SAFETY: the call's contract (the buffers its arguments describe).
    unsafe { run(mc, comm, call, blocks) }
}

/// The blocks of `MPI_(I)neighbor_allgatherv`, moving as `call` says.
///
/// # Safety
/// As `MPI_Neighbor_allgatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn allgatherv(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    call: (&'static str, When),
) -> c_int {
    let blocks = |from: &[(c_int, i32)], to: &[(c_int, i32)]| {
        // SAFETY: one count and displacement per source (MPI's contract).
        let (rc, rd) = unsafe {
            (
                per_neighbor(recvcounts, from.len())?,
                per_neighbor(rdispls, from.len())?,
            )
        };
        let recvs = laid_out(recvbuf, from, rc, &displs(rd)?, recvtype)?;
        let sends = uniform(sendbuf, to, sendcount, sendtype, Spread::Same)?;
        Ok((recvs, sends))
    };
    // SAFETY: the call's contract (the buffers its arguments describe).
    unsafe { run(mc, comm, call, blocks) }
}

/// The blocks of `MPI_(I)neighbor_alltoall`, moving as `call` says.
///
/// # Safety
/// As `MPI_Neighbor_alltoall`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn alltoall(
    mc: &MergedComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    call: (&'static str, When),
) -> c_int {
    let blocks = |from: &[(c_int, i32)], to: &[(c_int, i32)]| {
        let recvs = uniform(recvbuf, from, recvcount, recvtype, Spread::Consecutive)?;
        let sends = uniform(sendbuf, to, sendcount, sendtype, Spread::Consecutive)?;
        Ok((recvs, sends))
    };
    // SAFETY: the call's contract (the buffers its arguments describe).
    unsafe { run(mc, comm, call, blocks) }
}

/// The blocks of `MPI_(I)neighbor_alltoallv`, moving as `call` says.
///
/// # Safety
/// As `MPI_Neighbor_alltoallv`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn alltoallv(
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
    call: (&'static str, When),
) -> c_int {
    let blocks = |from: &[(c_int, i32)], to: &[(c_int, i32)]| {
        // SAFETY: one count and displacement per neighbour (MPI's contract).
        let (sc, sd, rc, rd) = unsafe {
            (
                per_neighbor(sendcounts, to.len())?,
                per_neighbor(sdispls, to.len())?,
                per_neighbor(recvcounts, from.len())?,
                per_neighbor(rdispls, from.len())?,
            )
        };
        let recvs = laid_out(recvbuf, from, rc, &displs(rd)?, recvtype)?;
        let sends = laid_out(sendbuf, to, sc, &displs(sd)?, sendtype)?;
        Ok((recvs, sends))
    };
    // SAFETY: the call's contract (the buffers its arguments describe).
    unsafe { run(mc, comm, call, blocks) }
}

/// The blocks of `MPI_(I)neighbor_alltoallw`, moving as `call` says.
///
/// # Safety
/// As `MPI_Neighbor_alltoallw`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn alltoallw(
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
    call: (&'static str, When),
) -> c_int {
    let blocks = |from: &[(c_int, i32)], to: &[(c_int, i32)]| {
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
        let recvs = typed(recvbuf, from, rc, rd, rt)?;
        let sends = typed(sendbuf, to, sc, sd, st)?;
        Ok((recvs, sends))
    };
    // SAFETY: the call's contract (the buffers its arguments describe).
    unsafe { run(mc, comm, call, blocks) }
}

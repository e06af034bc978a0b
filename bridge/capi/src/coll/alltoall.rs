//! `MPI_Alltoall`, `MPI_Alltoallv` and `MPI_Alltoallw` on an Isthmus
//! intercommunicator: each rank's block for remote rank j crosses the
//! bridge straight to it, once (the bridge's pairwise exchange), encoded
//! from and decoded into the program's buffers with their datatypes (a
//! predefined type's block is received straight into the program's
//! buffer, no copy of ours in between).

use std::ffi::{c_int, c_void};

use isthmus_bridge::BridgeError;

use super::common::{
    check_not_in_place, code, count_block, deliver, message, v_block, w_block, with_local, Block,
};
use crate::datatype;
use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};
use crate::state::BridgeComm;

/// The exchange: `send(j)` is the block for remote rank j, `recv(j)` where
/// remote rank j's block goes.
///
/// # Safety
/// Every block `send` names holds its elements; every block `recv`
/// names has room for them.
unsafe fn exchange(
    bc: &BridgeComm,
    comm: MPI_Comm,
    call: &str,
    bufs: [*const c_void; 2],
    send: impl Fn(usize) -> Result<Block, BridgeError>,
    recv: impl Fn(usize) -> Result<Block, BridgeError>,
) -> c_int {
    code(with_local(bc, comm, |_| {
        check_not_in_place(comm, call, &bufs)?;
        bc.inter
            .alltoall_bytes(
                |j| {
                    let (at, n, dt) = send(j as usize)?;
                    // SAFETY: the block holds its elements (this function's contract).
                    unsafe { message(at, n, dt) }
                },
                |j, block| {
                    let (at, n, dt) = recv(j as usize)?;
                    let at = at as *mut c_void;
                    // SAFETY: the block has room for its elements (this function's contract).
                    if let Some(target) = unsafe { datatype::raw_target(at, n, dt) }? {
                        // A predefined type: straight into the program's buffer.
                        return target.recv(|bytes| block.into_slice(bytes)).map(drop);
                    }
                    let got = block.into_vec(datatype::capacity_bytes(n, dt)?)?;
                    // SAFETY: as above.
                    unsafe { deliver(got, at, n, dt) }
                },
            )
            .map_err(|e| errors::fail(comm, call, &e))
    }))
}

/// `MPI_Alltoall` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Alltoall`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn alltoall(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let block = |base: *const c_void, count: c_int, dt: MPI_Datatype| {
        move |j: usize| count_block(base, count, dt, j)
    };
    // SAFETY: MPI_Alltoall's contract: a block of each count per remote rank.
    unsafe {
        exchange(
            bc,
            comm,
            "MPI_Alltoall",
            [sendbuf, recvbuf],
            block(sendbuf, sendcount, sendtype),
            block(recvbuf, recvcount, recvtype),
        )
    }
}

/// `MPI_Alltoallv` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Alltoallv`: each array has an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn alltoallv(
    bc: &BridgeComm,
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
    let block = |base: *const c_void, counts: *const c_int, displs: *const c_int, dt| {
        // SAFETY: an entry per remote rank (MPI_Alltoallv's contract).
        move |j: usize| unsafe { v_block(base, counts, displs, dt, j) }
    };
    // SAFETY: MPI_Alltoallv's contract.
    unsafe {
        exchange(
            bc,
            comm,
            "MPI_Alltoallv",
            [sendbuf, recvbuf],
            block(sendbuf, sendcounts, sdispls, sendtype),
            block(recvbuf, recvcounts, rdispls, recvtype),
        )
    }
}

/// `MPI_Alltoallw` on an Isthmus communicator (displacements in bytes).
///
/// # Safety
/// As `MPI_Alltoallw`: each array has an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn alltoallw(
    bc: &BridgeComm,
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
    let block = |base: *const c_void, counts: *const c_int, displs: *const c_int, types| {
        // SAFETY: an entry per remote rank (MPI_Alltoallw's contract).
        move |j: usize| unsafe { w_block(base, counts, displs, types, j) }
    };
    // SAFETY: MPI_Alltoallw's contract.
    unsafe {
        exchange(
            bc,
            comm,
            "MPI_Alltoallw",
            [sendbuf, recvbuf],
            block(sendbuf, sendcounts, sdispls, sendtypes),
            block(recvbuf, recvcounts, rdispls, recvtypes),
        )
    }
}

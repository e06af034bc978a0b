//! The schedules without a native step: each block crosses the bridge
//! straight from the rank that has it to the rank that wants it, as the
//! blocking `alltoall`, `gatherv` and `scatterv` send them (the bridge's
//! pairwise exchange and linear v forms): `MPI_Ialltoall(v, w)`,
//! `MPI_Igatherv`, `MPI_Iscatterv`, and the root's part of the rooted
//! operations (its one message to the other group's leader, or the one it
//! receives from there).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::{BridgeError, CollMessage};

use super::setup::{direct, start, start_rooted, Call};
use crate::coll::common::{count_block, message, v_block, w_block, Block};
use crate::collbuf::elements;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::state::BridgeComm;

/// The message of block `b`.
///
/// # Safety
/// The block holds its elements and stays unchanged while the message lives.
unsafe fn message_of<'a>(b: Result<Block, BridgeError>) -> Result<CollMessage<'a>, BridgeError> {
    // SAFETY: forwarded from this function's contract.
    b.and_then(|(at, n, dt)| unsafe { message(at, n, dt) })
}

/// The pairwise exchange of the alltoall forms: `send(j)` is this rank's
/// block for remote rank j, `recv(j)` where remote rank j's block goes.
///
/// # Safety
/// As the call's: every block `send` names holds its elements, every block
/// `recv` names has room for them, until the request completes.
unsafe fn pairwise(
    bc: &Arc<BridgeComm>,
    call: Call,
    bufs: [*const c_void; 2],
    send: impl Fn(usize) -> Result<Block, BridgeError>,
    recv: impl Fn(usize) -> Result<Block, BridgeError>,
) -> c_int {
    let remote = bc.inter.remote_size();
    // SAFETY: this function's contract.
    unsafe {
        start(bc, call, &bufs, |op| {
            let recvs = (0..remote)
                .map(|j| recv(j as usize).map(|b| (j, b)))
                .collect::<Result<_, _>>()?;
            let sends = (0..remote)
                .map(|j| (j, message_of(send(j as usize))))
                .collect();
            direct(op, bc, sends, recvs)
        })
    }
}

/// `MPI_Ialltoall` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Ialltoall`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ialltoall(
    bc: &Arc<BridgeComm>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Ialltoall");
    // SAFETY: MPI_Ialltoall's contract: a block of each count per remote rank.
    unsafe {
        pairwise(
            bc,
            call,
            [sendbuf, recvbuf],
            |j| count_block(sendbuf, sendcount, sendtype, j),
            |j| count_block(recvbuf, recvcount, recvtype, j),
        )
    }
}

/// `MPI_Ialltoallv` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Ialltoallv`: each array has an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ialltoallv(
    bc: &Arc<BridgeComm>,
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
    let call = Call::new(comm, request, "MPI_Ialltoallv");
    // SAFETY: MPI_Ialltoallv's contract; the arrays are read here, at the
    // initiation.
    unsafe {
        pairwise(
            bc,
            call,
            [sendbuf, recvbuf],
            |j| v_block(sendbuf, sendcounts, sdispls, sendtype, j),
            |j| v_block(recvbuf, recvcounts, rdispls, recvtype, j),
        )
    }
}

/// `MPI_Ialltoallw` on an Isthmus communicator (displacements in bytes).
///
/// # Safety
/// As `MPI_Ialltoallw`: each array has an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ialltoallw(
    bc: &Arc<BridgeComm>,
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
    let call = Call::new(comm, request, "MPI_Ialltoallw");
    // SAFETY: MPI_Ialltoallw's contract; the arrays are read here, at the
    // initiation.
    unsafe {
        pairwise(
            bc,
            call,
            [sendbuf, recvbuf],
            |j| w_block(sendbuf, sendcounts, sdispls, sendtypes, j),
            |j| w_block(recvbuf, recvcounts, rdispls, recvtypes, j),
        )
    }
}

/// `MPI_Igatherv` on an Isthmus communicator: each rank of the other
/// group sends its block straight to the root, which decodes block j into
/// `recvcounts[j]` elements at `displs[j]`.
///
/// # Safety
/// As `MPI_Igatherv`: at the root the arrays have an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn igatherv(
    bc: &Arc<BridgeComm>,
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
    let call = Call::new(comm, request, "MPI_Igatherv");
    let remote = bc.inter.remote_size();
    // SAFETY: MPI_Igatherv's contract; the arrays are read here, at the
    // initiation.
    unsafe {
        start_rooted(
            bc,
            call,
            &[sendbuf, recvbuf],
            root,
            |op| {
                let recvs = (0..remote)
                    .map(|j| v_block(recvbuf, recvcounts, displs, recvtype, j as usize))
                    .enumerate()
                    .map(|(j, b)| b.map(|b| (j as u32, b)))
                    .collect::<Result<_, _>>()?;
                direct(op, bc, vec![], recvs)
            },
            |op, root| {
                let mine = elements(sendcount).map(|n| (sendbuf, n, sendtype));
                direct(op, bc, vec![(root, message_of(mine))], vec![])
            },
        )
    }
}

/// `MPI_Iscatterv` on an Isthmus communicator: the root sends each rank of
/// the other group its block (`sendcounts[j]` elements at `displs[j]`)
/// straight.
///
/// # Safety
/// As `MPI_Iscatterv`: at the root the arrays have an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iscatterv(
    bc: &Arc<BridgeComm>,
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
    let call = Call::new(comm, request, "MPI_Iscatterv");
    let remote = bc.inter.remote_size();
    // SAFETY: MPI_Iscatterv's contract; the arrays are read here, at the
    // initiation.
    unsafe {
        start_rooted(
            bc,
            call,
            &[sendbuf, recvbuf],
            root,
            |op| {
                let sends = (0..remote)
                    .map(|j| {
                        let b = v_block(sendbuf, sendcounts, displs, sendtype, j as usize);
                        (j, message_of(b))
                    })
                    .collect();
                direct(op, bc, sends, vec![])
            },
            |op, root| {
                let mine = (recvbuf.cast_const(), elements(recvcount)?, recvtype);
                direct(op, bc, vec![], vec![(root, mine)])
            },
        )
    }
}

//! `MPI_Ibcast` and `MPI_Iscatter`: the root's message crosses to the
//! other group's leader, which hands it to its job natively (whole, or in
//! equal shares); the root's group takes no native step.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::{BridgeError, Status};

use super::setup::{decode_into, direct, start_rooted, total, Call};
use crate::coll::common::message;
use crate::collbuf::elements;
use crate::datatype;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{share, Op, Share, Stage, Step, Wait};
use crate::state::BridgeComm;

/// The receiving group: the leader receives remote rank `root`'s message
/// (at most `max` bytes) and hands it to its job as `how` says; `then`
/// decodes each rank's part.
fn from_root(
    op: &Op,
    bc: &Arc<BridgeComm>,
    root: u32,
    max: usize,
    how: Share,
    what: &'static str,
    then: impl FnOnce(Vec<u8>, Status) -> Step<()> + 'static,
) -> Result<Stage, BridgeError> {
    let leader = bc.inter.rank() == 0;
    let waits = if leader {
        vec![Wait::Recv(bc.inter.nbc_irecv(root, op.seq(), max)?)]
    } else {
        vec![]
    };
    let bc = Arc::clone(bc);
    Ok(Stage::native(waits, move |cx, mut a| {
        let got = leader.then(|| bc.inter.nbc_received(root, a.received()));
        share(cx, root, got, max, how, what, then)
    }))
}

/// `MPI_Ibcast` on an Isthmus communicator: the root's message goes to
/// the other group's leader, which broadcasts it natively in its job.
///
/// # Safety
/// As `MPI_Ibcast`: the buffer stays the program's until the request
/// completes.
pub(crate) unsafe fn ibcast(
    bc: &Arc<BridgeComm>,
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Ibcast");
    // SAFETY: MPI_Ibcast's contract: the root's buffer holds `count`
    // elements, the others' have room for them.
    unsafe {
        start_rooted(
            bc,
            call,
            &[],
            root,
            |op| {
                let msg = elements(count).and_then(|n| message(buffer, n, datatype));
                direct(op, bc, vec![(0, msg)], vec![])
            },
            |op, root| {
                let n = elements(count)?;
                let max = datatype::capacity_bytes(n, datatype)?;
                let then = decode_into(buffer, n, datatype);
                from_root(op, bc, root, max, Share::Whole, "bcast", then)
            },
        )
    }
}

/// `MPI_Iscatter` on an Isthmus communicator: the root's whole buffer
/// goes to the other group's leader, which scatters it natively.
///
/// # Safety
/// As `MPI_Iscatter`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iscatter(
    bc: &Arc<BridgeComm>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Iscatter");
    // SAFETY: MPI_Iscatter's contract: the root's buffer holds `sendcount`
    // elements per remote rank, the others' room for `recvcount`.
    unsafe {
        start_rooted(
            bc,
            call,
            &[sendbuf, recvbuf],
            root,
            |op| {
                let msg = total(sendcount, bc.inter.remote_size())
                    .and_then(|n| message(sendbuf, n, sendtype));
                direct(op, bc, vec![(0, msg)], vec![])
            },
            |op, root| {
                let n = elements(recvcount)?;
                let max = datatype::capacity_bytes(n, recvtype)?
                    .saturating_mul(bc.inter.local_size() as usize);
                let then = decode_into(recvbuf, n, recvtype);
                from_root(op, bc, root, max, Share::Even, "scatter", then)
            },
        )
    }
}

//! `MPI_Ibarrier`, `MPI_Iallreduce`, `MPI_Iallgather`,
//! `MPI_Ireduce_scatter_block` and `MPI_Ireduce_scatter`: each job takes a
//! native step to its leader (a barrier, a reduce or a gather), the leaders
//! exchange their results over the bridge, and each leader hands the other
//! group's to its job — whole, or in shares (equal, or the group's
//! `recvcounts`); the barrier's are empty.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::{BridgeError, Status};
use mpi::ffi;

use super::setup::{decode_into, gather_to_leader, reduce_to_leader, start, total, Call, ToLeader};
use crate::collbuf::{elements, ints, LeaderRoom};
use crate::datatype;
use crate::mpi_glue::{byte, MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{share, Cx, Fail, Next, Op, Share, Stage, Step, Wait};
use crate::state::BridgeComm;

/// Every rank's part: `local` to the leader, the leaders' exchange, and
/// the other group's message (at most `max` bytes) handed to every rank as
/// `how` says, for `then` to decode.
fn exchange(
    op: &Op,
    bc: &Arc<BridgeComm>,
    mut local: ToLeader,
    max: usize,
    how: Share,
    what: &'static str,
    then: impl FnOnce(Vec<u8>, Status) -> Step<()> + 'static,
) -> Result<Stage, BridgeError> {
    let recv = if bc.inter.rank() == 0 {
        Some(bc.inter.nbc_irecv(0, op.seq(), max)?)
    } else {
        None
    };
    let (bc, seq) = (Arc::clone(bc), op.seq());
    Ok(Stage::native(vec![], move |cx: &mut Cx<'_>, _| {
        let req = local.issue(cx)?;
        Ok(Next::Stage(Stage::native(
            vec![Wait::Native(req)],
            move |cx, a| {
                let rc = a.native_rc();
                let (Some(recv), Some(mine)) = (recv, local.message(rc)) else {
                    return share(cx, 0, None, max, how, what, move |b, s| {
                        if rc != 0 {
                            return Err(Fail::Mpi(rc));
                        }
                        then(b, s)
                    });
                };
                let sent = bc.inter.nbc_isend(0, seq, mine);
                // The send no longer refers to the room.
                drop(local);
                let sent = match sent {
                    Ok(s) => s,
                    Err(e) => return share(cx, 0, Some(Err(e)), max, how, what, |_, _| Ok(())),
                };
                Ok(Next::Stage(Stage::native(
                    vec![Wait::Send(sent), Wait::Recv(recv)],
                    move |cx, mut a| {
                        let got = a
                            .sent()
                            .and_then(|()| bc.inter.nbc_received(0, a.received()));
                        share(cx, 0, Some(got), max, how, what, then)
                    },
                )))
            },
        )))
    }))
}

/// `MPI_Ibarrier` on an Isthmus communicator: an exchange of empty
/// messages after a native barrier in each job (the leader's send says
/// that its job has entered; every rank waits for the other leader's).
///
/// # Safety
/// As `MPI_Ibarrier`.
pub(crate) unsafe fn ibarrier(
    bc: &Arc<BridgeComm>,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Ibarrier");
    let leader = bc.inter.rank() == 0;
    let local = ToLeader {
        // Nothing to write: the message is empty.
        room: LeaderRoom::program(leader, std::ptr::null_mut()),
        total: 0,
        dt: byte(),
        step: "MPI_Ibarrier",
        // SAFETY: the job's native communicator and a request of ours.
        native: Box::new(|c, _, r| unsafe { ffi::PMPI_Ibarrier(c, r) }),
    };
    let then = |_, _| Ok(());
    // SAFETY: the program's request (checked by `start`); the schedule
    // uses no buffer of the program's.
    unsafe {
        start(bc, call, &[], |op| {
            exchange(op, bc, local, 0, Share::Whole, "barrier", then)
        })
    }
}

/// `MPI_Iallreduce` on an Isthmus communicator: each job reduces natively
/// to its leader, the leaders exchange their results, and each leader
/// broadcasts the other job's in its own; `recvbuf` gets the reduction of
/// the other group's data.
///
/// # Safety
/// As `MPI_Iallreduce`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iallreduce(
    bc: &Arc<BridgeComm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Iallreduce");
    let leader = bc.inter.rank() == 0;
    // SAFETY: MPI_Iallreduce's contract.
    unsafe {
        start(bc, call, &[sendbuf, recvbuf], |sched| {
            let n = elements(count)?;
            let max = datatype::capacity_bytes(n, datatype)?;
            // The leader reduces into its own recvbuf, which the other
            // group's result overwrites once the local one has been sent.
            let room = LeaderRoom::program(leader, recvbuf);
            let local = reduce_to_leader(sendbuf, room, n, datatype, op)?;
            let then = decode_into(recvbuf, n, datatype);
            exchange(sched, bc, local, max, Share::Whole, "allreduce", then)
        })
    }
}

/// The reduce_scatter forms: `counts` elements per local rank reduced in
/// each group (their sum), and this rank's share of the other group's
/// result into `recvbuf` (`how`: equal shares, or `counts`). The buffers
/// are the program's (as the calls' contracts say).
#[allow(clippy::too_many_arguments)] // MPI's own and the shares
fn reduce_scatter(
    op: &mut Op,
    bc: &Arc<BridgeComm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Vec<u64>,
    how: Share,
    datatype: MPI_Datatype,
    mpi_op: ffi::MPI_Op,
) -> Result<Stage, BridgeError> {
    let (rank, leader) = (bc.inter.rank() as usize, bc.inter.rank() == 0);
    let all = usize::try_from(counts.iter().sum::<u64>())
        .map_err(|_| BridgeError::InvalidArgument("the counts overflow".into()))?;
    let mine = counts.get(rank).map_or(0, |c| *c as usize);
    let max = datatype::capacity_bytes(all, datatype)?;
    let room = LeaderRoom::new(leader, all, datatype)?;
    let local = reduce_to_leader(sendbuf, room, all, datatype, mpi_op)?;
    let then = decode_into(recvbuf, mine, datatype);
    exchange(op, bc, local, max, how, "reduce_scatter", then)
}

/// `MPI_Ireduce_scatter_block` on an Isthmus communicator: each job
/// reduces `recvcount` elements per local rank natively to its leader, the
/// leaders exchange, and each rank gets its block of the other group's
/// result.
///
/// # Safety
/// As `MPI_Ireduce_scatter_block`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ireduce_scatter_block(
    bc: &Arc<BridgeComm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Ireduce_scatter_block");
    let size = bc.inter.local_size();
    // SAFETY: MPI_Ireduce_scatter_block's contract.
    unsafe {
        start(bc, call, &[sendbuf, recvbuf], |sched| {
            // Checked against MPI's int counts.
            total(recvcount, size)?;
            let n = elements(recvcount)? as u64;
            let counts = vec![n; size as usize];
            reduce_scatter(
                sched,
                bc,
                sendbuf,
                recvbuf,
                counts,
                Share::Even,
                datatype,
                op,
            )
        })
    }
}

/// `MPI_Ireduce_scatter` on an Isthmus communicator: each job reduces the
/// sum of its `recvcounts` natively to its leader, the leaders exchange,
/// and rank i gets `recvcounts[i]` elements of the other group's result.
///
/// # Safety
/// As `MPI_Ireduce_scatter`: `recvcounts` has one count per local rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ireduce_scatter(
    bc: &Arc<BridgeComm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Ireduce_scatter");
    let size = bc.inter.local_size() as usize;
    // SAFETY: MPI_Ireduce_scatter's contract; the counts are read here, at
    // the initiation.
    unsafe {
        start(bc, call, &[sendbuf, recvbuf], |sched| {
            let counts = ints(recvcounts, size)?
                .iter()
                .map(|c| elements(*c).map(|n| n as u64))
                .collect::<Result<Vec<_>, _>>()?;
            // The native reduce counts in an int.
            crate::collbuf::int(counts.iter().sum::<u64>() as usize)?;
            let how = Share::Counts(counts.clone());
            reduce_scatter(sched, bc, sendbuf, recvbuf, counts, how, datatype, op)
        })
    }
}

/// `MPI_Iallgather` on an Isthmus communicator: each job gathers natively
/// to its leader, the leaders exchange, and `recvbuf` gets `recvcount`
/// elements of every rank of the other group.
///
/// # Safety
/// As `MPI_Iallgather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iallgather(
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
    let call = Call::new(comm, request, "MPI_Iallgather");
    let (leader, size) = (bc.inter.rank() == 0, bc.inter.local_size());
    // SAFETY: MPI_Iallgather's contract.
    unsafe {
        start(bc, call, &[sendbuf, recvbuf], |op| {
            let n = total(recvcount, bc.inter.remote_size())?;
            let max = datatype::capacity_bytes(n, recvtype)?;
            let local = gather_to_leader(sendbuf, sendcount, sendtype, leader, size)?;
            let then = decode_into(recvbuf, n, recvtype);
            exchange(op, bc, local, max, Share::Whole, "allgather", then)
        })
    }
}

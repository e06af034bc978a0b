//! `MPI_Ireduce` and `MPI_Igather`: the group without the root takes a
//! native step to its leader (a reduce or a gather), whose result crosses
//! to the root; the root receives it (`direct`), its group takes no
//! native step.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::setup::{
    direct, gather_to_leader, reduce_to_leader, start_rooted, total, Call, ToLeader,
};
use crate::collbuf::{elements, LeaderRoom};
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{share_outcome, Fail, Next, Op, Stage, Wait};
use crate::state::BridgeComm;

/// The group without the root: `local`, whose result at the leader
/// crosses to remote rank `root`; every rank ends with the leader's outcome.
fn to_root(
    op: &Op,
    bc: &Arc<BridgeComm>,
    root: u32,
    mut local: ToLeader,
    what: &'static str,
) -> Result<Stage, BridgeError> {
    let (bc, seq) = (Arc::clone(bc), op.seq());
    Ok(Stage::native(vec![], move |cx, _| {
        let req = local.issue(cx)?;
        Ok(Next::Stage(Stage::native(
            vec![Wait::Native(req)],
            move |cx, a| {
                let rc = a.native_rc();
                let Some(mine) = local.message(rc) else {
                    return share_outcome(cx, None, rc, what);
                };
                let sent = bc.inter.nbc_isend(root, seq, mine);
                // The send no longer refers to the room.
                drop(local);
                match sent {
                    Err(e) => share_outcome(cx, Some(Err(e.into())), rc, what),
                    Ok(sent) => Ok(Next::Stage(Stage::native(
                        vec![Wait::Send(sent)],
                        move |cx, mut a| {
                            share_outcome(cx, Some(a.sent().map_err(Fail::from)), 0, what)
                        },
                    ))),
                }
            },
        )))
    }))
}

/// `MPI_Ireduce` on an Isthmus communicator: the group without the root
/// reduces natively to its leader, whose result crosses to the root.
///
/// # Safety
/// As `MPI_Ireduce`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ireduce(
    bc: &Arc<BridgeComm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Ireduce");
    let leader = bc.inter.rank() == 0;
    // SAFETY: MPI_Ireduce's contract: `count` elements in the group
    // without the root, room for them at the root.
    unsafe {
        start_rooted(
            bc,
            call,
            &[sendbuf, recvbuf],
            root,
            |sched| {
                let n = elements(count)?;
                direct(
                    sched,
                    bc,
                    vec![],
                    vec![(0, (recvbuf.cast_const(), n, datatype))],
                )
            },
            |sched, root| {
                let n = elements(count)?;
                let room = LeaderRoom::new(leader, n, datatype)?;
                let local = reduce_to_leader(sendbuf, room, n, datatype, op)?;
                to_root(sched, bc, root, local, "reduce")
            },
        )
    }
}

/// `MPI_Igather` on an Isthmus communicator: the group without the root
/// gathers natively to its leader, whose message crosses to the root.
///
/// # Safety
/// As `MPI_Igather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn igather(
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
    let call = Call::new(comm, request, "MPI_Igather");
    let (leader, local_size) = (bc.inter.rank() == 0, bc.inter.local_size());
    // SAFETY: MPI_Igather's contract: `sendcount` elements in the group
    // without the root, room for `recvcount` per remote rank at the root.
    unsafe {
        start_rooted(
            bc,
            call,
            &[sendbuf, recvbuf],
            root,
            |op| {
                let n = total(recvcount, bc.inter.remote_size())?;
                direct(
                    op,
                    bc,
                    vec![],
                    vec![(0, (recvbuf.cast_const(), n, recvtype))],
                )
            },
            |op, root| {
                let local = gather_to_leader(sendbuf, sendcount, sendtype, leader, local_size)?;
                to_root(op, bc, root, local, "gather")
            },
        )
    }
}

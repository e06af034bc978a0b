//! The nonblocking collectives on an Isthmus intercommunicator
//! (`MPI_Ibarrier`, `MPI_Ibcast`, `MPI_Iallreduce`, `MPI_Ireduce`,
//! `MPI_Igather`, `MPI_Iscatter`, `MPI_Iallgather`, `MPI_Ialltoall`,
//! `MPI_Ireduce_scatter_block`), with
//! MPI's intercommunicator semantics and the blocking ones' local–global–
//! local algorithms, as schedules (`nbc`): each native step is the job's
//! own `PMPI_I*` on the communicator's private duplicate for them, each
//! bridge step a send or receive tagged with the operation's sequence
//! number, and the program's request completes when the last step does.
//! Argument errors (a bad root, `MPI_IN_PLACE`) are raised by the
//! initiation, as the blocking calls raise them.
//!
//! Four shapes: the root's message to the other group's leader, which
//! hands it to its job ([`from_root`]: bcast, scatter); a native step to
//! the leader whose result crosses to the remote root ([`to_root`]: reduce,
//! gather), which receives it ([`at_root`]); a native step to the leader,
//! the leaders' exchange and the other group's result handed to every rank
//! ([`exchange`]: allreduce, allgather, reduce_scatter_block); and
//! alltoall's blocks, each
//! straight to its receiver.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::{BridgeError, CollMessage, TypeSig, WireFormat};
use mpi::ffi;

use super::common::{check_not_in_place, deliver, made, message, role_or_raise, Role};
use crate::collbuf::{elements, offset, times, Extents, Scratch};
use crate::datatype;
use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{share, share_outcome, Cx, Fail, Next, Op, Share, Stage, Step, Wait};
use crate::requests::start_schedule;
use crate::state::BridgeComm;
use crate::unsigned_ops::native_op;

/// The program's out-pointer for the request, or `MPI_ERR_ARG` raised.
fn check_request(comm: MPI_Comm, request: *mut MPI_Request) -> Result<(), c_int> {
    if request.is_null() {
        return Err(errors::raise(comm, ffi::MPI_ERR_ARG as c_int));
    }
    Ok(())
}

/// An initiation's argument checks and the operation's start, or the
/// code already raised.
macro_rules! tried {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(rc) => return rc,
        }
    };
}

/// A bridge error of an initiation, raised as the call's once the
/// operation `$op` gave up its turn.
macro_rules! or_fail {
    ($op:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return $op.fail(&e),
        }
    };
}

/// A native step at one rank: `(comm, at, request)` issues it, `at` the
/// leader's room for its result (null elsewhere).
type Native = Box<dyn FnOnce(MPI_Comm, *mut c_void, *mut MPI_Request) -> c_int>;

/// `elements * blocks` elements, checked against MPI's int counts.
fn total(count: c_int, blocks: u32) -> Result<usize, BridgeError> {
    elements(count).and_then(|n| times(n, blocks))
}

/// Where a message of `n` elements of `dt` is decoded: `buf`.
fn decode_into(
    buf: *mut c_void,
    n: usize,
    dt: MPI_Datatype,
) -> impl FnOnce(Vec<u8>, isthmus_bridge::Status) -> Step<()> {
    move |bytes, st| {
        // SAFETY: `buf` has room for `n` elements of `dt` and stays the
        // program's until the request completes (the calls' contract).
        unsafe { deliver((bytes, st), buf, n, dt) }.map_err(Fail::from)
    }
}

/// The root (`MPI_ROOT`) of bcast or scatter: its message to the other
/// group's leader (the failure notice if it could not be made). No native
/// step in this job.
fn root_sends(
    op: &mut Op,
    bc: &BridgeComm,
    msg: Result<CollMessage<'_>, BridgeError>,
) -> Result<Stage, BridgeError> {
    op.no_natives();
    let sent = bc.inter.nbc_isend(0, op.seq(), msg)?;
    Ok(Stage::after(vec![Wait::Send(sent)], |_, mut a| {
        a.sent()?;
        Ok(Next::Done)
    }))
}

/// The receiving group of bcast or scatter: the leader receives remote
/// rank `root`'s message (at most `max` bytes) and hands it to its job as
/// `how` says; `then` decodes each rank's part.
fn from_root(
    op: &Op,
    bc: &Arc<BridgeComm>,
    root: u32,
    max: usize,
    how: Share,
    what: &'static str,
    then: impl FnOnce(Vec<u8>, isthmus_bridge::Status) -> Step<()> + 'static,
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

/// The root (`MPI_ROOT`) of reduce or gather: the other group's leader's
/// message, decoded by `then`. No native step in this job.
fn at_root(
    op: &mut Op,
    bc: &Arc<BridgeComm>,
    max: usize,
    then: impl FnOnce(Vec<u8>, isthmus_bridge::Status) -> Step<()> + 'static,
) -> Result<Stage, BridgeError> {
    op.no_natives();
    let recv = bc.inter.nbc_irecv(0, op.seq(), max)?;
    let bc = Arc::clone(bc);
    Ok(Stage::after(vec![Wait::Recv(recv)], move |_, mut a| {
        let (bytes, st) = bc.inter.nbc_received(0, a.received())?;
        then(bytes, st)?;
        Ok(Next::Done)
    }))
}

/// The group without the root of reduce or gather: `native` to the
/// leader's room for `total` elements of `dt`, whose result crosses to
/// remote rank `root`; every rank ends with the leader's outcome.
#[allow(clippy::too_many_arguments)] // the shape's parts
fn to_root(
    op: &Op,
    bc: &Arc<BridgeComm>,
    root: u32,
    total: usize,
    dt: MPI_Datatype,
    step: &'static str,
    what: &'static str,
    native: Native,
) -> Result<Stage, BridgeError> {
    let mut room = if bc.inter.rank() == 0 {
        Some(Scratch::new(total, &Extents::of(dt)?)?)
    } else {
        None
    };
    let (bc, seq) = (Arc::clone(bc), op.seq());
    Ok(Stage::native(vec![], move |cx, _| {
        let at = room.as_mut().map_or(std::ptr::null_mut(), |t| t.ptr());
        let req = cx.issue(|c, r| native(c, at, r))?;
        Ok(Next::Stage(Stage::native(
            vec![Wait::Native(req)],
            move |cx, a| {
                let rc = a.native_rc();
                let Some(mut room) = room else {
                    return share_outcome(cx, None, rc, what);
                };
                // SAFETY: the room holds the job's result when `rc` is 0;
                // the send copies what it does not write at once.
                let mine = unsafe { made(rc, step, room.ptr(), total, dt) };
                match bc.inter.nbc_isend(root, seq, mine) {
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

/// Allreduce, allgather and reduce_scatter_block: `native` to the
/// leader's room (`room`, or the program's buffer `at` when `room` is None)
/// for `total` elements of `dt`, the leaders' exchange, and the other
/// group's message (at most `max` bytes) handed to every rank as `how`
/// says, for `then` to decode.
#[allow(clippy::too_many_arguments)] // the shape's parts
fn exchange(
    op: &Op,
    bc: &Arc<BridgeComm>,
    mut room: Option<Scratch>,
    at: *mut c_void,
    total: usize,
    dt: MPI_Datatype,
    max: usize,
    step: &'static str,
    what: &'static str,
    native: Native,
    how: Share,
    then: impl FnOnce(Vec<u8>, isthmus_bridge::Status) -> Step<()> + 'static,
) -> Result<Stage, BridgeError> {
    let leader = bc.inter.rank() == 0;
    let recv = if leader {
        Some(bc.inter.nbc_irecv(0, op.seq(), max)?)
    } else {
        None
    };
    let (bc, seq) = (Arc::clone(bc), op.seq());
    Ok(Stage::native(vec![], move |cx: &mut Cx<'_>, _| {
        let at = match (leader, room.as_mut()) {
            (false, _) => std::ptr::null_mut(),
            (true, Some(t)) => t.ptr(),
            (true, None) => at,
        };
        let req = cx.issue(|c, r| native(c, at, r))?;
        Ok(Next::Stage(Stage::native(
            vec![Wait::Native(req)],
            move |cx, a| {
                let rc = a.native_rc();
                let Some(recv) = recv else {
                    return share(cx, 0, None, max, how, what, move |b, s| {
                        if rc != 0 {
                            return Err(Fail::Mpi(rc));
                        }
                        then(b, s)
                    });
                };
                // SAFETY: `at` holds the job's result when `rc` is 0; the
                // send copies what it does not write at once.
                let mine = unsafe { made(rc, step, at, total, dt) };
                let sent = bc.inter.nbc_isend(0, seq, mine);
                // The send no longer refers to the room.
                drop(room);
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

/// An empty message (the barrier's).
fn empty<'a>() -> CollMessage<'a> {
    CollMessage {
        sig: TypeSig {
            signature: 0,
            format: WireFormat::native(),
            elem_size: 0,
        },
        count: 0,
        bytes: Vec::new().into(),
    }
}

/// `MPI_Ibarrier` on an Isthmus communicator: a native barrier in each
/// job, one empty message each way between the leaders, and the leader's
/// outcome broadcast in its job.
///
/// # Safety
/// As `MPI_Ibarrier`.
pub(crate) unsafe fn ibarrier(
    bc: &Arc<BridgeComm>,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    tried!(check_request(comm, request));
    let op = tried!(Op::begin(bc, comm, "MPI_Ibarrier"));
    let seq = op.seq();
    let recv = if bc.inter.rank() == 0 {
        Some(or_fail!(op, bc.inter.nbc_irecv(0, seq, 0)))
    } else {
        None
    };
    let bc = Arc::clone(bc);
    let first = Stage::native(vec![], move |cx, _| {
        // SAFETY: the job's native communicator and a request of ours.
        let barrier = cx.issue(|c, r| unsafe { ffi::PMPI_Ibarrier(c, r) })?;
        Ok(Next::Stage(Stage::native(
            vec![Wait::Native(barrier)],
            move |cx, a| {
                let rc = a.native_rc();
                let Some(recv) = recv else {
                    return share_outcome(cx, None, rc, "barrier");
                };
                let mine = if rc == 0 {
                    Ok(empty())
                } else {
                    Err(BridgeError::Protocol(format!(
                        "barrier: this job's own MPI_Ibarrier failed: {}",
                        errors::error_string(rc)
                    )))
                };
                let sent = match bc.inter.nbc_isend(0, seq, mine) {
                    Ok(s) => s,
                    Err(e) => return share_outcome(cx, Some(Err(e.into())), 0, "barrier"),
                };
                Ok(Next::Stage(Stage::native(
                    vec![Wait::Send(sent), Wait::Recv(recv)],
                    move |cx, mut a| {
                        let got = a
                            .sent()
                            .and_then(|()| bc.inter.nbc_received(0, a.received()));
                        share_outcome(cx, Some(got.map(drop).map_err(Fail::from)), 0, "barrier")
                    },
                )))
            },
        )))
    });
    // SAFETY: the program's request (checked); the schedule uses no buffer
    // of the program's.
    unsafe { start_schedule(op, first, request) }
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
    const CALL: &str = "MPI_Ibcast";
    tried!(check_request(comm, request));
    let role = tried!(role_or_raise(bc, comm, root, CALL));
    let mut op = tried!(Op::begin(bc, comm, CALL));
    let first = match role {
        Role::Idle => {
            op.no_natives();
            Stage::after(vec![], |_, _| Ok(Next::Done))
        }
        Role::Root => {
            // SAFETY: the root's buffer holds `count` elements (MPI_Ibcast's contract).
            let msg = elements(count).and_then(|n| unsafe { message(buffer, n, datatype) });
            or_fail!(op, root_sends(&mut op, bc, msg))
        }
        Role::From(root) => {
            let n = or_fail!(op, elements(count));
            let max = or_fail!(op, datatype::capacity_bytes(n, datatype));
            let then = decode_into(buffer, n, datatype);
            or_fail!(
                op,
                from_root(&op, bc, root, max, Share::Whole, "bcast", then)
            )
        }
    };
    // SAFETY: the program's request (checked); `buffer` stays valid until
    // the request completes (MPI_Ibcast's contract).
    unsafe { start_schedule(op, first, request) }
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
    const CALL: &str = "MPI_Iscatter";
    tried!(check_request(comm, request));
    tried!(check_not_in_place(comm, CALL, &[sendbuf, recvbuf]));
    let role = tried!(role_or_raise(bc, comm, root, CALL));
    let mut op = tried!(Op::begin(bc, comm, CALL));
    let first = match role {
        Role::Idle => {
            op.no_natives();
            Stage::after(vec![], |_, _| Ok(Next::Done))
        }
        Role::Root => {
            let msg = total(sendcount, bc.inter.remote_size())
                // SAFETY: the root's buffer holds `sendcount` elements per remote rank.
                .and_then(|n| unsafe { message(sendbuf, n, sendtype) });
            or_fail!(op, root_sends(&mut op, bc, msg))
        }
        Role::From(root) => {
            let n = or_fail!(op, elements(recvcount));
            let max = or_fail!(
                op,
                datatype::capacity_bytes(n, recvtype)
                    .map(|m| m.saturating_mul(bc.inter.local_size() as usize))
            );
            let then = decode_into(recvbuf, n, recvtype);
            or_fail!(
                op,
                from_root(&op, bc, root, max, Share::Even, "scatter", then)
            )
        }
    };
    // SAFETY: the program's request (checked); the buffers stay valid until
    // the request completes (MPI_Iscatter's contract).
    unsafe { start_schedule(op, first, request) }
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
    const CALL: &str = "MPI_Ireduce";
    tried!(check_request(comm, request));
    tried!(check_not_in_place(comm, CALL, &[sendbuf, recvbuf]));
    let role = tried!(role_or_raise(bc, comm, root, CALL));
    let nop = native_op(op, datatype);
    let mut sched = tried!(Op::begin(bc, comm, CALL));
    let n = or_fail!(sched, elements(count));
    let first = match role {
        Role::Idle => {
            sched.no_natives();
            Stage::after(vec![], |_, _| Ok(Next::Done))
        }
        Role::Root => {
            let max = or_fail!(sched, datatype::capacity_bytes(n, datatype));
            or_fail!(
                sched,
                at_root(&mut sched, bc, max, decode_into(recvbuf, n, datatype))
            )
        }
        Role::From(root) => {
            let native: Native = Box::new(move |c, at, r| {
                // SAFETY: the program's buffer and handles (valid until
                // completion); `at` has room for `count` elements at the leader.
                unsafe { ffi::PMPI_Ireduce(sendbuf, at, count, datatype, nop, 0, c, r) }
            });
            or_fail!(
                sched,
                to_root(
                    &sched,
                    bc,
                    root,
                    n,
                    datatype,
                    "MPI_Ireduce",
                    "reduce",
                    native
                )
            )
        }
    };
    // SAFETY: the program's request (checked); the buffers stay valid until
    // the request completes (MPI_Ireduce's contract).
    unsafe { start_schedule(sched, first, request) }
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
    const CALL: &str = "MPI_Igather";
    tried!(check_request(comm, request));
    tried!(check_not_in_place(comm, CALL, &[sendbuf, recvbuf]));
    let role = tried!(role_or_raise(bc, comm, root, CALL));
    let mut op = tried!(Op::begin(bc, comm, CALL));
    let first = match role {
        Role::Idle => {
            op.no_natives();
            Stage::after(vec![], |_, _| Ok(Next::Done))
        }
        Role::Root => {
            let n = or_fail!(op, total(recvcount, bc.inter.remote_size()));
            let max = or_fail!(op, datatype::capacity_bytes(n, recvtype));
            or_fail!(
                op,
                at_root(&mut op, bc, max, decode_into(recvbuf, n, recvtype))
            )
        }
        Role::From(root) => {
            let all = or_fail!(op, total(sendcount, bc.inter.local_size()));
            or_fail!(
                op,
                to_root(
                    &op,
                    bc,
                    root,
                    all,
                    sendtype,
                    "MPI_Igather",
                    "gather",
                    gather_to_leader(sendbuf, sendcount, sendtype)
                )
            )
        }
    };
    // SAFETY: the program's request (checked); the buffers stay valid until
    // the request completes (MPI_Igather's contract).
    unsafe { start_schedule(op, first, request) }
}

/// The native gather of `sendcount` elements of `sendtype` from every
/// rank to the leader's room (the leader takes them in the same type,
/// which MPI's type matching allows).
fn gather_to_leader(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype) -> Native {
    Box::new(move |c, at, r| {
        // SAFETY: the program's buffer and handle (valid until
        // completion); `at` has room for `sendcount` elements of every
        // local rank at the leader.
        unsafe {
            ffi::PMPI_Igather(
                sendbuf, sendcount, sendtype, at, sendcount, sendtype, 0, c, r,
            )
        }
    })
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
    const CALL: &str = "MPI_Iallreduce";
    tried!(check_request(comm, request));
    tried!(check_not_in_place(comm, CALL, &[sendbuf, recvbuf]));
    let nop = native_op(op, datatype);
    let sched = tried!(Op::begin(bc, comm, CALL));
    let n = or_fail!(sched, elements(count));
    let max = or_fail!(sched, datatype::capacity_bytes(n, datatype));
    let native: Native = Box::new(move |c, at, r| {
        // SAFETY: the program's buffers and handles (valid until
        // completion); `at` (the leader's recvbuf) has room for `count`
        // elements.
        unsafe { ffi::PMPI_Ireduce(sendbuf, at, count, datatype, nop, 0, c, r) }
    });
    // The leader reduces into its own recvbuf, which the other group's
    // result overwrites once the local one has been sent.
    let first = or_fail!(
        sched,
        exchange(
            &sched,
            bc,
            None,
            recvbuf,
            n,
            datatype,
            max,
            "MPI_Ireduce",
            "allreduce",
            native,
            Share::Whole,
            decode_into(recvbuf, n, datatype),
        )
    );
    // SAFETY: the program's request (checked); the buffers stay valid until
    // the request completes (MPI_Iallreduce's contract).
    unsafe { start_schedule(sched, first, request) }
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
    const CALL: &str = "MPI_Ireduce_scatter_block";
    tried!(check_request(comm, request));
    tried!(check_not_in_place(comm, CALL, &[sendbuf, recvbuf]));
    let nop = native_op(op, datatype);
    let sched = tried!(Op::begin(bc, comm, CALL));
    let n = or_fail!(sched, elements(recvcount));
    let all = or_fail!(sched, total(recvcount, bc.inter.local_size()));
    let max = or_fail!(sched, datatype::capacity_bytes(all, datatype));
    // Fits an int (`total` checked it).
    let all_c = all as c_int;
    let room = if bc.inter.rank() == 0 {
        Some(or_fail!(
            sched,
            Extents::of(datatype).and_then(|e| Scratch::new(all, &e))
        ))
    } else {
        None
    };
    let native: Native = Box::new(move |c, at, r| {
        // SAFETY: the program's buffer and handles (valid until
        // completion); `at` has room for `all` elements at the leader.
        unsafe { ffi::PMPI_Ireduce(sendbuf, at, all_c, datatype, nop, 0, c, r) }
    });
    let first = or_fail!(
        sched,
        exchange(
            &sched,
            bc,
            room,
            std::ptr::null_mut(),
            all,
            datatype,
            max,
            "MPI_Ireduce",
            "reduce_scatter_block",
            native,
            Share::Even,
            decode_into(recvbuf, n, datatype),
        )
    );
    // SAFETY: the program's request (checked); the buffers stay valid until
    // the request completes (MPI_Ireduce_scatter_block's contract).
    unsafe { start_schedule(sched, first, request) }
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
    const CALL: &str = "MPI_Iallgather";
    tried!(check_request(comm, request));
    tried!(check_not_in_place(comm, CALL, &[sendbuf, recvbuf]));
    let op = tried!(Op::begin(bc, comm, CALL));
    let all = or_fail!(op, total(sendcount, bc.inter.local_size()));
    let n = or_fail!(op, total(recvcount, bc.inter.remote_size()));
    let max = or_fail!(op, datatype::capacity_bytes(n, recvtype));
    let room = if bc.inter.rank() == 0 {
        Some(or_fail!(
            op,
            Extents::of(sendtype).and_then(|e| Scratch::new(all, &e))
        ))
    } else {
        None
    };
    let first = or_fail!(
        op,
        exchange(
            &op,
            bc,
            room,
            std::ptr::null_mut(),
            all,
            sendtype,
            max,
            "MPI_Igather",
            "allgather",
            gather_to_leader(sendbuf, sendcount, sendtype),
            Share::Whole,
            decode_into(recvbuf, n, recvtype),
        )
    );
    // SAFETY: the program's request (checked); the buffers stay valid until
    // the request completes (MPI_Iallgather's contract).
    unsafe { start_schedule(op, first, request) }
}

/// `MPI_Ialltoall` on an Isthmus communicator: each rank's block for
/// remote rank j crosses straight to it, once. No native step.
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
    const CALL: &str = "MPI_Ialltoall";
    tried!(check_request(comm, request));
    tried!(check_not_in_place(comm, CALL, &[sendbuf, recvbuf]));
    let mut op = tried!(Op::begin(bc, comm, CALL));
    op.no_natives();
    let seq = op.seq();
    let block = |base: *const c_void, count: c_int, dt: MPI_Datatype, j: usize| {
        let n = elements(count)?;
        let at = offset(base, Extents::of(dt)?.extent, j.checked_mul(n))?;
        Ok::<_, BridgeError>((at.cast_const(), n, dt))
    };
    let remote = bc.inter.remote_size();
    let mut waits = Vec::with_capacity(2 * remote as usize);
    // Every block is sent (a failed one as the failure notice) and every
    // receive posted, so that no rank waits forever; the first error is
    // the request's.
    let mut first_err = None;
    for j in 0..remote {
        let msg = block(sendbuf, sendcount, sendtype, j as usize)
            // SAFETY: the block holds `sendcount` elements (MPI_Ialltoall's contract).
            .and_then(|(at, n, dt)| unsafe { message(at, n, dt) });
        match bc.inter.nbc_isend(j, seq, msg) {
            Ok(s) => waits.push(Wait::Send(s)),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let cap = block(recvbuf, recvcount, recvtype, 0)
        .and_then(|(_, n, dt)| datatype::capacity_bytes(n, dt));
    let cap = or_fail!(op, cap);
    for j in 0..remote {
        waits.push(Wait::Recv(or_fail!(op, bc.inter.nbc_irecv(j, seq, cap))));
    }
    let bc = Arc::clone(bc);
    let stage = Stage::after(waits, move |_, mut a| {
        let mut first = match first_err {
            Some(e) => Err(Fail::from(e)),
            None => a.sent().map_err(Fail::from),
        };
        for j in 0..remote {
            let got = bc.inter.nbc_received(j, a.received());
            let put = block(recvbuf, recvcount, recvtype, j as usize).and_then(|(at, n, dt)| {
                // SAFETY: block j of recvbuf has room for `recvcount`
                // elements and is the program's until completion.
                got.and_then(|g| unsafe { deliver(g, at as *mut c_void, n, dt) })
            });
            if first.is_ok() {
                first = put.map_err(Fail::from);
            }
        }
        first?;
        Ok(Next::Done)
    });
    // SAFETY: the program's request (checked); the buffers stay valid until
    // the request completes (MPI_Ialltoall's contract).
    unsafe { start_schedule(op, stage, request) }
}

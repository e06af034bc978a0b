//! What the merged nonblocking collectives share: the communicator's side
//! for them (a bridge communicator of its own, never seen by the
//! program), the start of a schedule with MPI's argument checks, the
//! leaders' exchange followed by a share to every rank, and the messages.

use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use isthmus_bridge::{BridgeError, CollMessage, InterComm, Status};
use mpi::ffi;

use crate::datatype;
use crate::errors;
use crate::lent_send::LentSend;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{share, Arrivals, Cx, Fail, Next, Op, Share, Stage, Step, Wait};
use crate::requests::start_schedule;
use crate::state::{BridgeComm, MergedComm};

/// The derivation number of the nonblocking collectives' context: past
/// any `MPI_Comm_dup` count (those count up from 1).
const NBC_DERIVATION: u64 = u64::MAX;

/// The side of a merged communicator's nonblocking collectives: a bridge
/// communicator between its two jobs' parts on a context of its own
/// (derived from the collective context `coll`, alike on both sides, no
/// message exchanged), whose sequence numbers, native duplicate and turns
/// the schedules use as an intercommunicator's do.
pub(crate) fn hidden_side(
    coll: &InterComm,
    groups: (&str, &str),
) -> Result<Arc<BridgeComm>, BridgeError> {
    Ok(Arc::new(BridgeComm {
        inter: coll.derived(NBC_DERIVATION)?,
        local_group: groups.0.to_owned(),
        remote_group: groups.1.to_owned(),
        derived: AtomicU64::new(0),
        coll: Default::default(),
    }))
}

/// A nonblocking collective call on a merged communicator.
pub(super) struct Call {
    pub(super) comm: MPI_Comm,
    pub(super) request: *mut MPI_Request,
    pub(super) name: &'static str,
}

/// Checks what every initiation needs (a request to write) and starts the
/// schedule `plan` makes (an error there is raised as the call's). Every
/// call takes any rank order: the plain gathers, scatters and all-to-alls
/// go to their v-forms on an order that interleaves the jobs before they
/// come here, and the order-dependent reductions fold in order
/// (`ordered`).
///
/// # Safety
/// `call.request` is the program's; every buffer and handle the stages
/// use stays valid until the request completes (MPI's rule for a
/// nonblocking collective's arguments).
pub(super) unsafe fn start(
    mc: &MergedComm,
    call: Call,
    plan: impl FnOnce(&mut Op, &Arc<BridgeComm>) -> Result<Stage, Fail>,
) -> c_int {
    if call.request.is_null() {
        return errors::raise(call.comm, ffi::MPI_ERR_ARG as c_int);
    }
    let bc = &mc.nbc;
    // The native steps' duplicate comes from the private side, not from
    // the program's handle, which the program may be duplicating at the
    // same time (see `crate::idup::Next`).
    let mut op = match Op::begin_over(bc, (call.comm, mc.native), call.name) {
        Ok(op) => op,
        Err(rc) => return rc,
    };
    match plan(&mut op, bc) {
        // SAFETY: this function's contract.
        Ok(first) => unsafe { start_schedule(op, first, call.request) },
        Err(Fail::Bridge(e)) => op.fail(&e),
        Err(Fail::Mpi(rc)) => errors::raise(call.comm, rc),
    }
}

impl From<crate::merged::wire::Fail> for Fail {
    fn from(f: crate::merged::wire::Fail) -> Self {
        match f {
            crate::merged::wire::Fail::Mpi(rc) => Fail::Mpi(rc),
            crate::merged::wire::Fail::Bridge(e) => Fail::Bridge(e),
        }
    }
}

/// `count` elements per merged rank as a v-form's counts and
/// displacements: how a plain gather, scatter, all-gather or all-to-all
/// runs on an order that interleaves the jobs, where a job's blocks are no
/// slice of the buffer (as the blocking ones do, `merged::coll`). Where
/// this rank's count is not significant (`read` false: a rooted call away
/// from its root) the arrays are zeros, which the v-form reads nowhere.
pub(super) fn per_rank(
    mc: &MergedComm,
    count: c_int,
    read: bool,
) -> Result<(Vec<c_int>, Vec<c_int>), crate::merged::wire::Fail> {
    if read {
        crate::merged::wire::blocks(mc, count)
    } else {
        let n = mc.size() as usize;
        Ok((vec![0; n], vec![0; n]))
    }
}

/// Whether this rank is the root `root` of a rooted call on `mc`.
pub(super) fn at_root(mc: &MergedComm, root: c_int) -> bool {
    matches!(
        crate::merged::wire::root_place(mc, root),
        Ok(crate::state::Place::Local(r)) if r == mc.inter.rank()
    )
}

/// The message of `count` elements of `dt` at `buf`.
///
/// # Safety
/// `buf` holds `count` elements of `dt`, unchanged until the send completes.
pub(super) unsafe fn message<'a>(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
) -> Result<CollMessage<'a>, BridgeError> {
    // SAFETY: forwarded from this function's contract.
    let (sig, count, enc) = unsafe { datatype::encode(buf, count, dt) }?;
    Ok(CollMessage {
        sig,
        count,
        bytes: enc.bytes,
    })
}

/// Decodes a message of `count` elements of `dt` into `buf`.
///
/// # Safety
/// `buf` has room for `count` elements of `dt`.
pub(super) unsafe fn decode(
    (bytes, st): &(Vec<u8>, Status),
    buf: *mut c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Step<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe { datatype::decode_received(bytes, st, buf, count, dt) }
        .map(drop)
        .map_err(Fail::from)
}

/// An MPI return code as a step's outcome.
pub(super) fn mpi(rc: c_int) -> Step<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Fail::Mpi(rc))
    }
}

/// A native step of every rank: `(comm, request)` issues it.
pub(super) type Native = Box<dyn FnOnce(MPI_Comm, *mut MPI_Request) -> c_int>;

/// Every rank's part of an exchange between the jobs: the native step
/// `native`, then the leaders trade `mine()` (made once the native step
/// completed) for the other job's message (at most `max` bytes), which
/// each leader hands whole to its job; `then` gets it at every rank.
pub(super) fn exchange(
    op: &Op,
    bc: &Arc<BridgeComm>,
    native: Native,
    mine: impl FnOnce() -> Result<CollMessage<'static>, BridgeError> + 'static,
    max: usize,
    what: &'static str,
    then: impl FnOnce(Vec<u8>, Status) -> Step<()> + 'static,
) -> Result<Stage, Fail> {
    let leader = bc.inter.rank() == 0;
    let recv = if leader {
        Some(bc.inter.nbc_irecv(0, op.seq(), max)?)
    } else {
        None
    };
    let (bc, seq) = (Arc::clone(bc), op.seq());
    Ok(Stage::native(vec![], move |cx: &mut Cx<'_>, _| {
        let req = cx.issue(native)?;
        Ok(Next::Stage(Stage::native(
            vec![Wait::Native(req)],
            move |cx, a| {
                let rc = a.native_rc();
                let checked = move |b: Vec<u8>, s: Status| {
                    mpi(rc)?;
                    then(b, s)
                };
                let Some(recv) = recv else {
                    return share(cx, 0, None, max, Share::Whole, what, checked);
                };
                let msg = if rc == 0 {
                    mine()
                } else {
                    Err(BridgeError::Protocol(format!(
                        "this job's own step of the {what} failed: {}",
                        errors::error_string(rc)
                    )))
                };
                let sent = match bc.inter.nbc_isend(0, seq, msg) {
                    Ok(s) => s,
                    Err(e) => {
                        drop(recv);
                        return share(cx, 0, Some(Err(e)), max, Share::Whole, what, checked);
                    }
                };
                Ok(Next::Stage(Stage::native(
                    vec![Wait::Send(sent), Wait::Recv(recv)],
                    move |cx, mut a| {
                        let got = a
                            .sent()
                            .and_then(|()| bc.inter.nbc_received(0, a.received()));
                        share(cx, 0, Some(got), max, Share::Whole, what, checked)
                    },
                )))
            },
        )))
    }))
}

/// `inout = low op high` of this job's `mine` and the other job's
/// `theirs` (`MPI_Reduce_local(in, inout)` computes `inout = in op
/// inout`), left in `mine`'s buffer: the merge's order of the two partial
/// results, as the blocking reductions combine them.
///
/// # Safety
/// Both address `n` elements of `dt`; `native` is a live communicator
/// for the copy.
pub(super) unsafe fn combine(
    low: bool,
    mine: *mut c_void,
    theirs: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    native: MPI_Comm,
) -> Step<()> {
    let nop = crate::unsigned_ops::native_op(op, dt);
    if low {
        // SAFETY: both buffers hold `n` elements (this function's contract).
        mpi(unsafe { crate::local_reduce::reduce_local(mine, theirs, n, dt, nop) })?;
        // SAFETY: as above.
        unsafe { crate::merged::wire::copy(native, theirs, mine, n, dt) }.map_err(Fail::from)
    } else {
        // SAFETY: as above.
        mpi(unsafe { crate::local_reduce::reduce_local(theirs, mine, n, dt, nop) })
    }
}

/// The merged ranks of this job's and the other job's first ranks (each
/// job's ranks contiguous, as [`start`] checks).
pub(super) fn offsets(mc: &MergedComm) -> (usize, usize) {
    let first = |v: &[u32]| v.first().copied().unwrap_or(0) as usize;
    (
        first(mc.order.local_ranks()),
        first(mc.order.remote_ranks()),
    )
}

/// Where a block from the other job goes: its sender (a rank of the
/// other job), then `count` elements of `dt` at the address.
pub(super) type Into = (u32, *mut c_void, usize, MPI_Datatype);

/// A native step of every rank beside direct messages between the jobs:
/// `sends` (a rank of the other job, its message) start at once, the
/// receives of `recvs` are posted, the native step is issued in the
/// operation's turn, and the operation ends when all have completed, each
/// block decoded into its place once every send is done (so a send may
/// read a buffer that a receive then overwrites, as `MPI_IN_PLACE` needs).
/// Every send goes (a message that could not be made as the failure
/// notice) and every receive is posted, so that no remote rank waits
/// forever; the first error is the request's. A message of the program's
/// bytes as they are is lent to its send (no copy; on this host the
/// receiver reads it where it is), and the operation does not end, nor a
/// failed stage let go, before that send completed.
///
/// # Safety
/// The bytes a message borrows stay valid and unchanged until the
/// operation ends: the program's buffers (MPI's contract for a
/// nonblocking collective), or memory `keep` holds.
pub(super) unsafe fn beside(
    op: &Op,
    bc: &Arc<BridgeComm>,
    native: Native,
    sends: Vec<(u32, Result<CollMessage<'_>, BridgeError>)>,
    recvs: Vec<Into>,
) -> Result<Stage, Fail> {
    // SAFETY: forwarded (this function's contract).
    unsafe { beside_keeping(op, bc, native, sends, recvs, Box::new(())) }
}

/// [`beside`], keeping `keep` until the operation ends (the arrays a
/// native v-collective reads until it completes).
///
/// # Safety
/// As [`beside`].
pub(super) unsafe fn beside_keeping(
    op: &Op,
    bc: &Arc<BridgeComm>,
    native: Native,
    sends: Vec<(u32, Result<CollMessage<'_>, BridgeError>)>,
    recvs: Vec<Into>,
    keep: Box<dyn std::any::Any>,
) -> Result<Stage, Fail> {
    let seq = op.seq();
    let mut waits = Vec::with_capacity(sends.len() + recvs.len() + 1);
    let mut first_err = None;
    for (dest, msg) in sends {
        // SAFETY: what a message borrows outlives the operation (this
        // function's contract), and the guard outlives the send.
        match unsafe { bc.inter.nbc_isend_lent(dest, seq, msg) } {
            Ok(s) => waits.push(Wait::Lent(LentSend::new(s))),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    for (source, _, n, dt) in &recvs {
        let cap = datatype::capacity_bytes(*n, *dt)?;
        waits.push(Wait::Recv(bc.inter.nbc_irecv(*source, seq, cap)?));
    }
    let bc = Arc::clone(bc);
    Ok(Stage::native(vec![], move |cx, _| {
        let req = cx.issue(native)?;
        waits.push(Wait::Native(req));
        // SAFETY: the blocks are the program's until the request
        // completes (the calls' contract).
        let last = unsafe { settle(bc, first_err, recvs, keep) };
        Ok(Next::Stage(Stage::after(waits, last)))
    }))
}

/// The last stage of an exchange with the other job: each block received
/// decoded into its place (`recvs`, in the order their receives were
/// listed), `keep` dropped, and the first error the request's: a send that
/// could not start (`first_err`), then the sends', the blocks', the native
/// steps'.
///
/// # Safety
/// Each block of `recvs` has room for its elements and stays the
/// program's until the stage runs.
pub(super) unsafe fn settle(
    bc: Arc<BridgeComm>,
    first_err: Option<BridgeError>,
    recvs: Vec<Into>,
    keep: Box<dyn std::any::Any>,
) -> impl FnOnce(&mut Cx<'_>, Arrivals) -> Step<Next> + 'static {
    move |_, mut a| {
        let rc = a.native_rc();
        let mut first = match first_err {
            Some(e) => Err(Fail::Bridge(e)),
            None => a.sent().map_err(Fail::from),
        };
        for (source, at, n, dt) in recvs {
            let got = bc.inter.nbc_received(source, a.received());
            // SAFETY: the block has room for its `n` elements and is the
            // program's (this function's contract).
            let put = got
                .map_err(Fail::from)
                .and_then(|g| unsafe { decode(&g, at, n, dt) });
            if first.is_ok() {
                first = put;
            }
        }
        drop(keep);
        mpi(rc)?;
        first?;
        Ok(Next::Done)
    }
}

/// A native step to the job's leader: `(comm, at, request)` issues it,
/// `at` the leader's room for its result (null elsewhere).
pub(super) type ToLeader = Box<dyn FnOnce(MPI_Comm, *mut c_void, *mut MPI_Request) -> c_int>;

/// The part of a job without the root: `native` leaves `count` elements
/// of `dt` (`result`) in `room` at the leader, which sends them to the root (rank
/// `root` of the other job); a failed native step sends the failure
/// notice instead, so that the root does not wait forever.
pub(super) fn to_remote_root(
    op: &Op,
    bc: &Arc<BridgeComm>,
    mut room: crate::collbuf::LeaderRoom,
    (count, dt): (c_int, MPI_Datatype),
    native: ToLeader,
    root: u32,
    what: &'static str,
) -> Result<Stage, Fail> {
    let (bc, seq) = (Arc::clone(bc), op.seq());
    Ok(Stage::native(vec![], move |cx, _| {
        let at = room.ptr();
        let req = cx.issue(|c, q| native(c, at, q))?;
        Ok(Next::Stage(Stage::after(
            vec![Wait::Native(req)],
            move |_, a| {
                let rc = a.native_rc();
                let Some(at) = room.at_leader() else {
                    mpi(rc)?;
                    return Ok(Next::Done);
                };
                let msg = if rc == 0 {
                    // SAFETY: the room holds the job's result, kept
                    // until the send completes (it moves into the next stage).
                    unsafe { message(at, count, dt) }
                } else {
                    Err(BridgeError::Protocol(format!(
                        "this job's own step of the {what} failed: {}",
                        errors::error_string(rc)
                    )))
                };
                let sent = bc.inter.nbc_isend(root, seq, msg)?;
                Ok(Next::Stage(Stage::after(
                    vec![Wait::Send(sent)],
                    move |_, mut a| {
                        a.sent()?;
                        drop(room);
                        Ok(Next::Done)
                    },
                )))
            },
        )))
    }))
}

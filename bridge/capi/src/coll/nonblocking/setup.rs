//! What every shape of nonblocking collective shares: a call's argument
//! checks and the start of its schedule, the leader's room for a native
//! step's result (`ToLeader`), element totals and decoding into the
//! program's buffer.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::{BridgeError, CollMessage, Status};
use mpi::ffi;

use crate::coll::common::{check_not_in_place, deliver, role_or_raise, Block, Role};
use crate::collbuf::{elements, times, LeaderRoom};
use crate::datatype;
use crate::errors;
use crate::lent_send::LentSend;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{Cx, Fail, Next, Op, Stage, Step, Wait};
use crate::requests::start_schedule;
use crate::state::BridgeComm;

/// A nonblocking collective call: the program's communicator, its
/// out-pointer for the request, and the call's name.
pub(super) struct Call {
    pub(super) comm: MPI_Comm,
    pub(super) request: *mut MPI_Request,
    pub(super) name: &'static str,
}

impl Call {
    pub(super) fn new(comm: MPI_Comm, request: *mut MPI_Request, name: &'static str) -> Call {
        Call {
            comm,
            request,
            name,
        }
    }

    /// MPI's argument checks every initiation makes: a request to write,
    /// no `MPI_IN_PLACE` among `bufs`; else the code raised.
    pub(super) fn check(&self, bufs: &[*const c_void]) -> Result<(), c_int> {
        if self.request.is_null() {
            return Err(errors::raise(self.comm, ffi::MPI_ERR_ARG as c_int));
        }
        check_not_in_place(self.comm, self.name, bufs)
    }
}

/// Starts the operation once its arguments passed [`Call::check`]: `plan`
/// makes its first stage (an error there is raised as the call's).
///
/// # Safety
/// `call.request` is the program's writable request; every buffer and
/// handle the stages use stays valid until the request completes (MPI's
/// rule for a nonblocking collective's arguments).
pub(super) unsafe fn start_checked(
    bc: &Arc<BridgeComm>,
    call: Call,
    plan: impl FnOnce(&mut Op) -> Result<Stage, BridgeError>,
) -> c_int {
    let mut op = match Op::begin(bc, call.comm, call.name) {
        Ok(op) => op,
        Err(rc) => return rc,
    };
    match plan(&mut op) {
        // SAFETY: this function's contract.
        Ok(first) => unsafe { start_schedule(op, first, call.request) },
        Err(e) => op.fail(&e),
    }
}

/// Checks an unrooted call's arguments (`bufs` its two buffers) and starts it.
///
/// # Safety
/// As [`start_checked`].
pub(super) unsafe fn start(
    bc: &Arc<BridgeComm>,
    call: Call,
    bufs: &[*const c_void],
    plan: impl FnOnce(&mut Op) -> Result<Stage, BridgeError>,
) -> c_int {
    if let Err(rc) = call.check(bufs) {
        return rc;
    }
    // SAFETY: this function's contract.
    unsafe { start_checked(bc, call, plan) }
}

/// Checks a rooted call's arguments and starts it by this process's role
/// from MPI's `root`: nothing at `MPI_PROC_NULL`, `at_root` at the root
/// (`MPI_ROOT`), `from` in the other group (given the remote root's rank).
///
/// # Safety
/// As [`start_checked`].
pub(super) unsafe fn start_rooted(
    bc: &Arc<BridgeComm>,
    call: Call,
    bufs: &[*const c_void],
    root: c_int,
    at_root: impl FnOnce(&mut Op) -> Result<Stage, BridgeError>,
    from: impl FnOnce(&mut Op, u32) -> Result<Stage, BridgeError>,
) -> c_int {
    let role = match call
        .check(bufs)
        .and_then(|()| role_or_raise(bc, call.comm, root, call.name))
    {
        Ok(role) => role,
        Err(rc) => return rc,
    };
    let plan = |op: &mut Op| match role {
        // SAFETY: no message, nothing borrowed.
        Role::Idle => unsafe { direct(op, bc, vec![], vec![]) },
        Role::Root => at_root(op),
        Role::From(root) => from(op, root),
    };
    // SAFETY: this function's contract.
    unsafe { start_checked(bc, call, plan) }
}

/// A native step at one rank: `(comm, at, request)` issues it, `at` the
/// leader's room for its result (null elsewhere).
pub(super) type Native = Box<dyn FnOnce(MPI_Comm, *mut c_void, *mut MPI_Request) -> c_int>;

/// A native step to the job's leader: `native` leaves `total` elements of
/// `dt` (the result of MPI's `step`) in `room` at the leader.
pub(super) struct ToLeader {
    pub(super) room: LeaderRoom,
    pub(super) total: usize,
    pub(super) dt: MPI_Datatype,
    pub(super) step: &'static str,
    pub(super) native: Native,
}

impl ToLeader {
    /// Issues the native step (in the operation's turn).
    pub(super) fn issue(&mut self, cx: &mut Cx<'_>) -> Step<MPI_Request> {
        let at = self.room.ptr();
        let native = std::mem::replace(&mut self.native, Box::new(|_, _, _| 0));
        cx.issue(|c, r| native(c, at, r))
    }

    /// The leader's message once the native step returned `rc` (None
    /// elsewhere).
    pub(super) fn message(
        &mut self,
        rc: c_int,
    ) -> Option<Result<isthmus_bridge::CollMessage<'static>, BridgeError>> {
        let (total, dt, step) = (self.total, self.dt, self.step);
        self.room.at_leader().map(|at| {
            // SAFETY: the room holds the job's result when `rc` is 0; the
            // send copies what it does not write at once, before the room
            // is dropped.
            unsafe { crate::coll::common::made(rc, step, at, total, dt) }
        })
    }
}

/// The native gather of `sendcount` elements of `sendtype` from every
/// rank to the leader's room (the leader takes them in the same type,
/// which MPI's type matching allows), as `step`.
pub(super) fn gather_to_leader(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    leader: bool,
    ranks: u32,
) -> Result<ToLeader, BridgeError> {
    let total = total(sendcount, ranks)?;
    Ok(ToLeader {
        room: LeaderRoom::new(leader, total, sendtype)?,
        total,
        dt: sendtype,
        step: "MPI_Igather",
        native: Box::new(move |c, at, r| {
            // SAFETY: the program's buffer and handle (valid until
            // completion); `at` has room for `sendcount` elements of every
            // local rank at the leader.
            unsafe {
                ffi::PMPI_Igather(
                    sendbuf, sendcount, sendtype, at, sendcount, sendtype, 0, c, r,
                )
            }
        }),
    })
}

/// The native reduce of `count` elements of `dt` with `op` (the job's own
/// MPI applies it) from every rank to the leader's `room`.
pub(super) fn reduce_to_leader(
    sendbuf: *const c_void,
    room: LeaderRoom,
    count: usize,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<ToLeader, BridgeError> {
    let count_c = crate::collbuf::int(count)?;
    let nop = crate::unsigned_ops::native_op(op, dt);
    Ok(ToLeader {
        room,
        total: count,
        dt,
        step: "MPI_Ireduce",
        native: Box::new(move |c, at, r| {
            // SAFETY: the program's buffer and handles (valid until
            // completion); `at` has room for `count` elements at the leader.
            unsafe { ffi::PMPI_Ireduce(sendbuf, at, count_c, dt, nop, 0, c, r) }
        }),
    })
}

/// `elements * blocks` elements, checked against MPI's int counts.
pub(super) fn total(count: c_int, blocks: u32) -> Result<usize, BridgeError> {
    elements(count).and_then(|n| times(n, blocks))
}

/// Where a message of `n` elements of `dt` is decoded: `buf`.
pub(super) fn decode_into(
    buf: *mut c_void,
    n: usize,
    dt: MPI_Datatype,
) -> impl FnOnce(Vec<u8>, Status) -> Step<()> {
    move |bytes, st| {
        // SAFETY: `buf` has room for `n` elements of `dt` and stays the
        // program's until the request completes (the calls' contract).
        unsafe { deliver((bytes, st), buf, n, dt) }.map_err(Fail::from)
    }
}

/// This process's part, with no native step in its job: `sends` (remote
/// rank, message) start at once, the receives of `recvs` (remote rank,
/// where its block goes) are posted, and the operation ends when all have
/// completed, each block decoded into its place. Every send goes (a message
/// that could not be made as the failure notice) and every receive is
/// posted, so that no remote rank waits forever; the first error is the
/// request's. A message of the program's bytes as they are is lent to its
/// send (no copy; on this host the receiver reads it where it is), and the
/// operation does not end, nor a failed stage let go, before that send
/// completed.
///
/// # Safety
/// The bytes a message borrows are the program's, valid and unchanged
/// until the operation ends (MPI's contract for a nonblocking collective).
pub(super) unsafe fn direct<'a>(
    op: &mut Op,
    bc: &Arc<BridgeComm>,
    sends: Vec<(u32, Result<CollMessage<'a>, BridgeError>)>,
    recvs: Vec<(u32, Block)>,
) -> Result<Stage, BridgeError> {
    op.no_natives();
    let seq = op.seq();
    let caps = recvs
        .iter()
        .map(|(_, (_, n, dt))| datatype::capacity_bytes(*n, *dt))
        .collect::<Result<Vec<_>, _>>()?;
    let mut waits = Vec::with_capacity(sends.len() + recvs.len());
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
    for ((source, _), cap) in recvs.iter().zip(caps) {
        waits.push(Wait::Recv(bc.inter.nbc_irecv(*source, seq, cap)?));
    }
    let bc = Arc::clone(bc);
    Ok(Stage::after(waits, move |_, mut a| {
        let mut first = match first_err {
            Some(e) => Err(e),
            None => a.sent(),
        };
        for (source, (at, n, dt)) in recvs {
            let got = bc.inter.nbc_received(source, a.received());
            // SAFETY: the block has room for its `n` elements and is the
            // program's until the request completes (the calls' contract).
            let put = got.and_then(|g| unsafe { deliver(g, at.cast_mut(), n, dt) });
            if first.is_ok() {
                first = put;
            }
        }
        first.map_err(Fail::from)?;
        Ok(Next::Done)
    }))
}

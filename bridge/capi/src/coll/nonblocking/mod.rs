//! The nonblocking collectives on an Isthmus intercommunicator (`MPI_I*`
//! of every collective `coll` has), with MPI's intercommunicator
//! semantics and the blocking ones' local–global–local algorithms, as
//! schedules (`nbc`): each native step is the job's own `PMPI_I*` on the
//! communicator's private duplicate for them, each bridge step a send or
//! receive tagged with the operation's sequence number, and the program's
//! request completes when the last step does. Argument errors (a bad
//! root, `MPI_IN_PLACE`, a NULL array) are raised by the initiation, as
//! the blocking calls raise them.
//!
//! One file per shape of schedule, as MPICH's `src/mpi/coll` keeps one per
//! algorithm:
//! - [`direct`]: no native step; each block crosses straight from the rank
//!   that has it to the rank that wants it (alltoall, v and w; gatherv and
//!   scatterv; and the root's part of every rooted operation);
//! - [`from_root`]: the root's message to the other group's leader, which
//!   hands it to its job (bcast, scatter);
//! - [`to_root`]: a native step to the leader whose result crosses to the
//!   remote root (reduce, gather);
//! - [`exchange`]: a native step to the leader, the leaders' exchange and
//!   the other group's result handed to every rank (barrier, allreduce,
//!   allgather, reduce_scatter and its block form);
//! - [`allgatherv`]: every rank's block to the other group's leader, which
//!   hands all of them to its job.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::{BridgeError, Status};
use mpi::ffi;

use super::common::{check_not_in_place, deliver, role_or_raise, Role};
use crate::collbuf::{elements, times, LeaderRoom};
use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{Cx, Fail, Op, Stage, Step};
use crate::requests::start_schedule;
use crate::state::BridgeComm;

mod allgatherv;
mod direct;
mod exchange;
mod from_root;
mod to_root;

pub(crate) use allgatherv::iallgatherv;
pub(crate) use direct::{ialltoall, ialltoallv, ialltoallw, igatherv, iscatterv};
pub(crate) use exchange::{
    iallgather, iallreduce, ibarrier, ireduce_scatter, ireduce_scatter_block,
};
pub(crate) use from_root::{ibcast, iscatter};
pub(crate) use to_root::{igather, ireduce};

/// A nonblocking collective call: the program's communicator, its
/// out-pointer for the request, and the call's name.
struct Call {
    comm: MPI_Comm,
    request: *mut MPI_Request,
    name: &'static str,
}

impl Call {
    fn new(comm: MPI_Comm, request: *mut MPI_Request, name: &'static str) -> Call {
        Call {
            comm,
            request,
            name,
        }
    }

    /// MPI's argument checks every initiation makes: a request to write,
    /// no `MPI_IN_PLACE` among `bufs`; else the code raised.
    fn check(&self, bufs: &[*const c_void]) -> Result<(), c_int> {
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
unsafe fn start_checked(
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
unsafe fn start(
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
unsafe fn start_rooted(
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
        Role::Idle => direct::direct(op, bc, vec![], vec![]),
        Role::Root => at_root(op),
        Role::From(root) => from(op, root),
    };
    // SAFETY: this function's contract.
    unsafe { start_checked(bc, call, plan) }
}

/// A native step at one rank: `(comm, at, request)` issues it, `at` the
/// leader's room for its result (null elsewhere).
type Native = Box<dyn FnOnce(MPI_Comm, *mut c_void, *mut MPI_Request) -> c_int>;

/// A native step to the job's leader: `native` leaves `total` elements of
/// `dt` (the result of MPI's `step`) in `room` at the leader.
struct ToLeader {
    room: LeaderRoom,
    total: usize,
    dt: MPI_Datatype,
    step: &'static str,
    native: Native,
}

impl ToLeader {
    /// Issues the native step (in the operation's turn).
    fn issue(&mut self, cx: &mut Cx<'_>) -> Step<MPI_Request> {
        let at = self.room.ptr();
        let native = std::mem::replace(&mut self.native, Box::new(|_, _, _| 0));
        cx.issue(|c, r| native(c, at, r))
    }

    /// The leader's message once the native step returned `rc` (None
    /// elsewhere).
    fn message(
        &mut self,
        rc: c_int,
    ) -> Option<Result<isthmus_bridge::CollMessage<'static>, BridgeError>> {
        let (total, dt, step) = (self.total, self.dt, self.step);
        self.room.at_leader().map(|at| {
            // SAFETY: the room holds the job's result when `rc` is 0; the
            // send copies what it does not write at once, before the room
            // is dropped.
            unsafe { super::common::made(rc, step, at, total, dt) }
        })
    }
}

/// The native gather of `sendcount` elements of `sendtype` from every
/// rank to the leader's room (the leader takes them in the same type,
/// which MPI's type matching allows), as `step`.
fn gather_to_leader(
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
fn reduce_to_leader(
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
fn total(count: c_int, blocks: u32) -> Result<usize, BridgeError> {
    elements(count).and_then(|n| times(n, blocks))
}

/// Where a message of `n` elements of `dt` is decoded: `buf`.
fn decode_into(
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

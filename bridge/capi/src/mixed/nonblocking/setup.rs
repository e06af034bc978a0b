//! What the mixed nonblocking collectives share: a schedule as a list of
//! [`Part`]s run one after the other — a collective over the local group
//! (issued in the operation's turn: the job's own `PMPI_I*` on a duplicate
//! of the group's native communicator, or the merged nonblocking
//! collective of its private merged one) or messages with remote ranks,
//! all posted at once (natively on the collective side's private handle
//! when the remote rank is in this job, over the bridge on the
//! intercommunicator's nonblocking side otherwise, tagged by the
//! operation's sequence number either way).

use std::any::Any;
use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::{BridgeError, CollMessage};
use mpi::ffi;

use crate::collbuf::Scratch;
use crate::datatype;
use crate::errors;
use crate::mixed::coll::steps::extents;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{Cx, Fail, Next, Op, Stage, Step, Wait};
use crate::requests::start_schedule;
use crate::state::{self, BridgeComm, LocalGroup, MixedInter, Place};
use crate::unsigned_ops::native_op;

/// The native tags of the schedules' messages with this job's remote
/// ranks on the collective side's handle: above the blocking collectives'
/// one (1), cycling with the sequence number.
fn native_tag(seq: u64) -> c_int {
    const FIRST: u64 = 2;
    const SPAN: u64 = 30_000;
    c_int::try_from(FIRST + seq % SPAN).unwrap_or(2)
}

/// A nonblocking collective call on a mixed intercommunicator.
pub(super) struct Call {
    pub(super) comm: MPI_Comm,
    pub(super) request: *mut MPI_Request,
    pub(super) name: &'static str,
}

/// A collective over the local group, rooted at its rank 0 where it has a
/// root (the pointers are the program's or the schedule's own buffers).
pub(super) enum Local {
    Barrier,
    Bcast(*mut c_void, c_int, MPI_Datatype),
    Reduce(*const c_void, *mut c_void, c_int, MPI_Datatype, ffi::MPI_Op),
    /// send, count, type; receive (significant at rank 0), count, type.
    Gather(
        (*const c_void, c_int, MPI_Datatype),
        (*mut c_void, c_int, MPI_Datatype),
    ),
    Scatter(
        (*const c_void, c_int, MPI_Datatype),
        (*mut c_void, c_int, MPI_Datatype),
    ),
    /// send (significant at rank 0): buffer, counts, displacements, type.
    Scatterv(
        (*const c_void, *const c_int, *const c_int, MPI_Datatype),
        (*mut c_void, c_int, MPI_Datatype),
    ),
}

/// A block for or from remote rank `.0`: `.2` elements of `.3` at `.1`.
pub(super) type Block = (u32, *mut c_void, c_int, MPI_Datatype);

/// One part of a schedule.
pub(super) enum Part {
    Local(Local),
    /// Sends and receives with remote ranks, all posted at once.
    Talk(Vec<Block>, Vec<Block>),
}

/// What a plan gives: its parts, and what to keep until the operation
/// ends (scratch buffers, arrays, derived types).
pub(super) struct Plan {
    pub(super) parts: Vec<Part>,
    pub(super) keep: Box<dyn Any>,
}

impl Plan {
    pub(super) fn of(parts: Vec<Part>) -> Plan {
        Plan::keeping(parts, Box::new(()))
    }
    pub(super) fn keeping(parts: Vec<Part>, keep: Box<dyn Any>) -> Plan {
        Plan { parts, keep }
    }
}

/// Checks what every initiation needs and starts the schedule of the
/// plan `plan` makes (an error there is raised as the call's).
///
/// # Safety
/// `call.request` is the program's; every buffer and handle the plan
/// names stays valid until the request completes (MPI's rule for a
/// nonblocking collective's arguments).
pub(super) unsafe fn start(
    mx: &Arc<MixedInter>,
    call: Call,
    plan: impl FnOnce() -> Result<Plan, Fail>,
) -> c_int {
    if call.request.is_null() {
        return errors::raise(call.comm, ffi::MPI_ERR_ARG as c_int);
    }
    let native = match mx.local {
        LocalGroup::Native(c) => c,
        LocalGroup::Merged(c) => {
            let Some(mc) = state::merged_comm(c) else {
                return errors::raise(call.comm, ffi::MPI_ERR_COMM as c_int);
            };
            // The merged collectives' own duplicate, begun here in program
            // order (their first one starts inside this schedule).
            if let Err(rc) = mc.nbc.coll.nbc().prepare(c) {
                return errors::raise(call.comm, rc);
            }
            // The schedule's local steps are the merged ones: its own
            // duplicate is of this process alone (no collective with
            // ranks that are not in the local group).
            self_comm()
        }
    };
    let mut op = match Op::begin_over(&mx.nbc, (call.comm, native), call.name) {
        Ok(op) => op,
        Err(rc) => return rc,
    };
    let plan = match plan() {
        Ok(p) => p,
        Err(Fail::Bridge(e)) => return op.fail(&e),
        Err(Fail::Mpi(rc)) => return errors::raise(call.comm, rc),
    };
    let locals = plan
        .parts
        .iter()
        .filter(|p| matches!(p, Part::Local(_)))
        .count();
    if locals == 0 {
        op.no_natives();
    }
    let run = Run {
        mx: Arc::clone(mx),
        bc: Arc::clone(&mx.nbc),
        seq: op.seq(),
        parts: plan.parts.into(),
        locals,
        keep: plan.keep,
    };
    let first = Stage::after(vec![], move |cx, _| run.next(cx));
    // SAFETY: this function's contract.
    unsafe { start_schedule(op, first, call.request) }
}

/// A schedule under way: the parts still to run.
struct Run {
    mx: Arc<MixedInter>,
    bc: Arc<BridgeComm>,
    seq: u64,
    parts: VecDeque<Part>,
    /// Local parts not yet issued.
    locals: usize,
    keep: Box<dyn Any>,
}

impl Run {
    /// Runs the next part, or ends.
    fn next(mut self, _cx: &mut Cx<'_>) -> Step<Next> {
        match self.parts.pop_front() {
            None => {
                drop(self.keep);
                Ok(Next::Done)
            }
            Some(Part::Local(l)) => Ok(Next::Stage(Stage::native(vec![], move |cx, _| {
                let req = issue(cx, &self.mx.local, l)?;
                self.locals -= 1;
                if self.locals == 0 {
                    cx.natives_done();
                }
                Ok(Next::Stage(Stage::after(
                    vec![Wait::Native(req)],
                    move |cx, a| {
                        rc(a.native_rc())?;
                        self.next(cx)
                    },
                )))
            }))),
            Some(Part::Talk(sends, recvs)) => {
                let (waits, bridged) = self.post(&sends, &recvs)?;
                Ok(Next::Stage(Stage::after(waits, move |cx, mut a| {
                    let native = a.native_rc();
                    let mut failed = a.sent().err().map(Fail::Bridge);
                    for (src, at, n, dt) in bridged {
                        let got = self.bc.inter.nbc_received(src, a.received());
                        let n = usize::try_from(n).unwrap_or(0);
                        // SAFETY: the block has room for its `n` elements
                        // (the plan's contract).
                        let put = got.map_err(Fail::from).and_then(|g| unsafe {
                            datatype::decode_received(&g.0, &g.1, at, n, dt)
                                .map(drop)
                                .map_err(Fail::from)
                        });
                        if failed.is_none() {
                            failed = put.err();
                        }
                    }
                    if let Some(f) = failed {
                        return Err(f);
                    }
                    rc(native)?;
                    self.next(cx)
                })))
            }
        }
    }

    /// Posts the sends and receives of a part: the waits, and the bridge
    /// receives to decode (in the order of their waits).
    fn post(&self, sends: &[Block], recvs: &[Block]) -> Step<(Vec<Wait>, Vec<Block>)> {
        let tag = native_tag(self.seq);
        let handle = self.mx.coll.native;
        let mut waits = Vec::with_capacity(sends.len() + recvs.len());
        let mut bridged = Vec::new();
        for &(to, at, n, dt) in sends {
            match place(&self.mx, to)? {
                Place::Local(h) => {
                    let mut req = crate::mpi_glue::request_null();
                    // SAFETY: the block holds `n` elements until the send
                    // completes (the plan's contract).
                    rc(unsafe { ffi::PMPI_Isend(at, n, dt, rank(h), tag, handle, &mut req) })?;
                    waits.push(Wait::Native(req));
                }
                Place::Remote(j) => {
                    // SAFETY: as above.
                    let msg = unsafe { message(at, n, dt) };
                    waits.push(Wait::Send(self.bc.inter.nbc_isend(j, self.seq, msg)?));
                }
            }
        }
        for &(from, at, n, dt) in recvs {
            match place(&self.mx, from)? {
                Place::Local(h) => {
                    let mut req = crate::mpi_glue::request_null();
                    // SAFETY: the block has room for `n` elements, the
                    // program's or ours until the operation ends.
                    rc(unsafe { ffi::PMPI_Irecv(at, n, dt, rank(h), tag, handle, &mut req) })?;
                    waits.push(Wait::Native(req));
                }
                Place::Remote(j) => {
                    let count = usize::try_from(n).unwrap_or(0);
                    let cap = datatype::capacity_bytes(count, dt)?;
                    waits.push(Wait::Recv(self.bc.inter.nbc_irecv(j, self.seq, cap)?));
                    bridged.push((j, at, n, dt));
                }
            }
        }
        Ok((waits, bridged))
    }
}

fn self_comm() -> MPI_Comm {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_COMM_SELF }
}

fn rank(h: u32) -> c_int {
    c_int::try_from(h).unwrap_or(c_int::MAX)
}

fn rc(code: c_int) -> Step<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Fail::Mpi(code))
    }
}

/// Scratch room for `count` elements of `dt` at the leader (none elsewhere).
pub(super) fn room(mx: &MixedInter, count: usize, dt: MPI_Datatype) -> Result<Scratch, Fail> {
    let n = if mx.rank == 0 { count } else { 0 };
    Ok(Scratch::new(n, &extents(dt)?)?)
}

/// Where remote rank `r` lives.
fn place(mx: &MixedInter, r: u32) -> Step<Place> {
    mx.coll.peers.place(r).ok_or_else(|| {
        Fail::Bridge(BridgeError::InvalidArgument(format!(
            "remote rank {r} does not exist: the remote group has {} ranks",
            mx.coll.peers.size()
        )))
    })
}

/// The message of `count` elements of `dt` at `buf`.
///
/// # Safety
/// `buf` holds `count` elements of `dt`, unchanged until the send completes.
unsafe fn message<'a>(
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

/// Issues the local group's collective `l`: natively on the operation's
/// duplicate of the group's communicator, or as the merged nonblocking
/// collective (its generalized request, completed by its own schedule).
fn issue(cx: &mut Cx<'_>, g: &LocalGroup, l: Local) -> Step<MPI_Request> {
    let merged = match *g {
        LocalGroup::Native(_) => None,
        LocalGroup::Merged(c) => Some((
            c,
            state::merged_comm(c).ok_or_else(|| {
                Fail::Bridge(BridgeError::InvalidArgument(
                    "the local group's communicator is gone".into(),
                ))
            })?,
        )),
    };
    // SAFETY: the buffers and arrays of a plan stay valid until the
    // operation ends (the program's, by MPI's rule, or kept by the plan).
    cx.issue(|native, r| unsafe {
        match (l, merged) {
            (Local::Barrier, None) => ffi::PMPI_Ibarrier(native, r),
            (Local::Barrier, Some((c, mc))) => crate::merged::ibarrier(&mc, c, r),
            (Local::Bcast(b, n, t), None) => ffi::PMPI_Ibcast(b, n, t, 0, native, r),
            (Local::Bcast(b, n, t), Some((c, mc))) => crate::merged::ibcast(&mc, b, n, t, 0, c, r),
            (Local::Reduce(s, b, n, t, op), None) => {
                ffi::PMPI_Ireduce(s, b, n, t, native_op(op, t), 0, native, r)
            }
            (Local::Reduce(s, b, n, t, op), Some((c, mc))) => {
                crate::merged::ireduce(&mc, s, b, n, t, op, 0, c, r)
            }
            (Local::Gather((s, sn, st), (b, rn, rt)), None) => {
                ffi::PMPI_Igather(s, sn, st, b, rn, rt, 0, native, r)
            }
            (Local::Gather((s, sn, st), (b, rn, rt)), Some((c, mc))) => {
                crate::merged::igather(&mc, s, sn, st, b, rn, rt, 0, c, r)
            }
            (Local::Scatter((s, sn, st), (b, rn, rt)), None) => {
                ffi::PMPI_Iscatter(s, sn, st, b, rn, rt, 0, native, r)
            }
            (Local::Scatter((s, sn, st), (b, rn, rt)), Some((c, mc))) => {
                crate::merged::iscatter(&mc, s, sn, st, b, rn, rt, 0, c, r)
            }
            (Local::Scatterv((s, sc, sd, st), (b, rn, rt)), None) => {
                ffi::PMPI_Iscatterv(s, sc, sd, st, b, rn, rt, 0, native, r)
            }
            (Local::Scatterv((s, sc, sd, st), (b, rn, rt)), Some((c, mc))) => {
                crate::merged::iscatterv(&mc, s, sc, sd, st, b, rn, rt, 0, c, r)
            }
        }
    })
}

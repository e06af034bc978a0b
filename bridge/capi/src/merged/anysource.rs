//! `MPI_Irecv(MPI_ANY_SOURCE)` on a merged communicator, and the receives
//! from the other job posted while one is pending.
//!
//! An `MPI_ANY_SOURCE` receive posts the job's own `PMPI_Irecv(ANY_SOURCE)`
//! on the communicator's handle at once, and joins the communicator's
//! queue of such receives. Every interposed wait and test of one walks the
//! queue from its front, so earlier receives are served first:
//! - a receive whose native request completed has its match (native
//!   matching already served the earlier native receives first);
//! - else, if the bridge holds a message it matches, its native receive is
//!   cancelled; if the cancel took, the message is taken with a receive
//!   for its exact source and tag (the earliest such message is the one
//!   probed, so MPI's order per source holds); if it did not, the native
//!   message is the match and the bridge message stays;
//! - a bridge message that an earlier receive still pending in the queue
//!   also matches is left to that one (MPI: the earliest posted matching
//!   receive gets a message). So is one for a receive from a given rank
//!   of the other job posted while the queue is not empty: it waits in the
//!   queue too, instead of being posted to the bridge, where it would
//!   take a message an earlier `MPI_ANY_SOURCE` receive matches.
//!
//! Native receives posted later from this job's ranks are the job's own
//! and need no queue: the native `ANY_SOURCE` receive was posted first.
//! Still not ordered against the queue: blocking probes (a probe may see a
//! bridge message a pending receive will take).

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use isthmus_bridge::{BridgeError, RecvRequest, Source, Tag};
use mpi::ffi;

use crate::collbuf::elements;
use crate::datatype;
use crate::mpi_glue::{
    any_source, any_tag, comm_key, empty_status, outcome_of, tag_of, MPI_Comm, MPI_Datatype,
    MPI_Request, Outcome,
};
use crate::requests::Polled;
use crate::state::{self, MergedComm, Place};

/// Where a queued receive stands.
enum State {
    /// Its native `ANY_SOURCE` receive is posted.
    Native(MPI_Request),
    /// A receive from rank `.0` of the other job, not posted yet.
    Waiting(u32),
    /// Taking a bridge message from rank `.1` of the other job.
    Bridge(RecvRequest, u32),
    /// Complete.
    Done(Result<Outcome, BridgeError>),
    /// Cancelled.
    Gone,
}

/// A queued receive: the program's buffer and what it matches.
struct Slot {
    buf: *mut c_void,
    count: c_int,
    /// Held until the receive decodes (the program may free it).
    dt: crate::datatype::HeldType,
    tag: c_int,
    comm: MPI_Comm,
    state: State,
}

// SAFETY: the raw pointers and handles are the program's, valid until the
// receive completes (MPI's rule for a nonblocking receive); a slot is only
// touched under `QUEUES`' lock.
unsafe impl Send for Slot {}

type Shared = Arc<Mutex<Slot>>;

/// Each merged communicator's queue (by handle), in posting order.
static QUEUES: Mutex<Option<HashMap<usize, Vec<Shared>>>> = Mutex::new(None);

fn queues() -> MutexGuard<'static, Option<HashMap<usize, Vec<Shared>>>> {
    QUEUES.lock().unwrap_or_else(|p| p.into_inner())
}

fn lock(s: &Shared) -> MutexGuard<'_, Slot> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `comm`'s queue has a receive still pending.
pub fn busy(comm: MPI_Comm) -> bool {
    queues()
        .as_ref()
        .and_then(|q| q.get(&comm_key(comm)))
        .is_some_and(|v| !v.is_empty())
}

/// What a pending receive could match: its tag, and a rank of the other
/// job or any.
struct Matches {
    tag: c_int,
    from: Option<u32>,
}

impl Matches {
    fn takes(&self, from: u32, tag: c_int) -> bool {
        (self.tag == any_tag() || self.tag == tag) && self.from.is_none_or(|r| r == from)
    }
}

/// Posts a receive into the queue of `mc` (`from`: a rank of the other
/// job, or `None` for `MPI_ANY_SOURCE`) and returns its request's
/// operation.
///
/// # Safety
/// As `MPI_Irecv`: `buf` stays valid until the receive completes.
pub unsafe fn post(
    comm: MPI_Comm,
    (buf, count, dt): (*mut c_void, c_int, MPI_Datatype),
    from: Option<u32>,
    tag: c_int,
) -> Result<Box<dyn Polled>, c_int> {
    let held = crate::datatype::HeldType::hold(dt)
        .map_err(|e| crate::errors::fail(comm, "MPI_Irecv", &e))?;
    let state = match from {
        Some(r) => State::Waiting(r),
        None => {
            let mut req = crate::mpi_glue::request_null();
            // SAFETY: the program's buffer, on its handle (this job's ranks).
            let rc = unsafe { ffi::PMPI_Irecv(buf, count, dt, any_source(), tag, comm, &mut req) };
            if rc != 0 {
                return Err(rc);
            }
            State::Native(req)
        }
    };
    let slot = Arc::new(Mutex::new(Slot {
        buf,
        count,
        dt: held,
        tag,
        comm,
        state,
    }));
    queues()
        .get_or_insert_with(HashMap::new)
        .entry(comm_key(comm))
        .or_default()
        .push(Arc::clone(&slot));
    Ok(Box::new(Queued {
        key: comm_key(comm),
        slot,
    }))
}

/// A native receive's outcome, its source a merged rank.
fn native_outcome(mc: &MergedComm, st: &crate::mpi_glue::MPI_Status, rc: c_int) -> Outcome {
    let mut o = outcome_of(st, rc);
    if let Ok(local) = u32::try_from(o.source) {
        o.source = c_int::try_from(mc.merged_rank(Place::Local(local))).unwrap_or(c_int::MAX);
    }
    o
}

/// Cancels a native receive: `None` if the cancel took, else its outcome.
fn cancel_native(mc: &MergedComm, mut req: MPI_Request) -> Option<Outcome> {
    let mut st = empty_status();
    let mut cancelled: c_int = 0;
    // SAFETY: our native request, completed here either way.
    let rc = unsafe {
        ffi::PMPI_Cancel(&mut req);
        let rc = ffi::PMPI_Wait(&mut req, &mut st);
        ffi::PMPI_Test_cancelled(&st, &mut cancelled);
        rc
    };
    if cancelled != 0 {
        None
    } else {
        Some(native_outcome(mc, &st, rc))
    }
}

/// Advances `s` one step (`earlier`: what the receives ahead of it that
/// are still pending could match).
fn advance(mc: &MergedComm, s: &mut Slot, earlier: &[Matches]) {
    let tag = s.tag;
    let free = |from: u32, t: c_int| !earlier.iter().any(|m| m.takes(from, t));
    let next = match std::mem::replace(&mut s.state, State::Gone) {
        State::Native(mut req) => {
            let mut st = empty_status();
            let mut done: c_int = 0;
            // SAFETY: our native request and status.
            let rc = unsafe { ffi::PMPI_Test(&mut req, &mut done, &mut st) };
            if rc != 0 || done != 0 {
                State::Done(Ok(native_outcome(mc, &st, rc)))
            } else {
                match mc.inter.iprobe(Source::Any, tag_of(tag)) {
                    Err(e) => State::Done(Err(e)),
                    Ok(Some(p)) if free(p.source, p.tag) => match cancel_native(mc, req) {
                        Some(o) => State::Done(Ok(o)),
                        None => take(mc, s, p.source, p.tag),
                    },
                    Ok(_) => State::Native(req),
                }
            }
        }
        State::Waiting(r) => match mc.inter.iprobe(Source::Rank(r), tag_of(tag)) {
            Err(e) => State::Done(Err(e)),
            Ok(Some(p)) if free(r, p.tag) => take(mc, s, r, p.tag),
            Ok(_) => State::Waiting(r),
        },
        other => other,
    };
    s.state = match next {
        State::Bridge(req, from) if req.test() => State::Done(received(mc, s, req, from)),
        other => other,
    };
}

/// Posts the receive of the bridge message from `from` with `tag` (the
/// earliest such one, which was probed).
fn take(mc: &MergedComm, s: &Slot, from: u32, tag: c_int) -> State {
    let req = elements(s.count)
        .and_then(|n| datatype::capacity_bytes(n, s.dt.get()))
        .and_then(|max| {
            mc.inter
                .irecv_bytes(Source::Rank(from), Tag::Value(tag), None, max)
        });
    match req {
        Ok(r) => State::Bridge(r, from),
        Err(e) => State::Done(Err(e)),
    }
}

/// A completed bridge receive, decoded into the program's buffer.
fn received(
    mc: &MergedComm,
    s: &Slot,
    req: RecvRequest,
    from: u32,
) -> Result<Outcome, BridgeError> {
    let (bytes, st) = req.wait()?;
    let n = elements(s.count)?;
    // SAFETY: the program's buffer holds `count` elements of `dt` until
    // the receive completes, which is now.
    let mut o = unsafe { datatype::decode_received(&bytes, &st, s.buf, n, s.dt.get()) }?;
    o.source = c_int::try_from(mc.merged_rank(Place::Remote(from))).unwrap_or(c_int::MAX);
    Ok(o)
}

/// What a slot still pending could match.
fn matches(s: &Slot) -> Option<Matches> {
    match s.state {
        State::Native(_) => Some(Matches {
            tag: s.tag,
            from: None,
        }),
        State::Waiting(r) => Some(Matches {
            tag: s.tag,
            from: Some(r),
        }),
        _ => None,
    }
}

/// Walks the queue of `key` from its front up to `upto`, advancing each
/// receive; completed ones leave the queue.
fn walk(key: usize, upto: &Shared) {
    let mut q = queues();
    let Some(list) = q.as_mut().and_then(|m| m.get_mut(&key)) else {
        return;
    };
    let mut earlier = Vec::new();
    for slot in list.iter() {
        let mut s = lock(slot);
        if let Some(mc) = state::merged_comm(s.comm) {
            advance(&mc, &mut s, &earlier);
        } else {
            s.state = State::Done(Err(BridgeError::InvalidArgument(
                "the merged communicator was freed while the receive was pending".into(),
            )));
        }
        if let Some(m) = matches(&s) {
            earlier.push(m);
        }
        drop(s);
        if Arc::ptr_eq(slot, upto) {
            break;
        }
    }
    list.retain(|slot| {
        matches!(
            lock(slot).state,
            State::Native(_) | State::Waiting(_) | State::Bridge(..)
        )
    });
    if list.is_empty() {
        if let Some(m) = q.as_mut() {
            m.remove(&key);
        }
    }
}

/// The request's side of a queued receive.
struct Queued {
    key: usize,
    slot: Shared,
}

impl Polled for Queued {
    fn poll(&mut self) -> Option<Result<Outcome, BridgeError>> {
        walk(self.key, &self.slot);
        let _q = queues();
        let mut s = lock(&self.slot);
        match std::mem::replace(&mut s.state, State::Gone) {
            State::Done(r) => Some(r),
            State::Gone => Some(Ok(Outcome {
                cancelled: true,
                ..Outcome::empty()
            })),
            other => {
                s.state = other;
                None
            }
        }
    }

    fn cancel(&mut self) -> bool {
        let mut q = queues();
        let mut s = lock(&self.slot);
        let cancelled = match std::mem::replace(&mut s.state, State::Gone) {
            State::Native(req) => match state::merged_comm(s.comm) {
                Some(mc) => match cancel_native(&mc, req) {
                    None => true,
                    Some(o) => {
                        s.state = State::Done(Ok(o));
                        false
                    }
                },
                None => true,
            },
            State::Waiting(_) | State::Gone => true,
            State::Bridge(req, from) => match req.cancel() {
                None => true,
                Some(r) => {
                    // Matched: delivered as a receive.
                    let o = r.and_then(|(bytes, st)| {
                        let n = elements(s.count)?;
                        // SAFETY: the program's buffer, until completion (now).
                        let mut o = unsafe {
                            datatype::decode_received(&bytes, &st, s.buf, n, s.dt.get())
                        }?;
                        if let Some(mc) = state::merged_comm(s.comm) {
                            o.source = c_int::try_from(mc.merged_rank(Place::Remote(from)))
                                .unwrap_or(c_int::MAX);
                        }
                        Ok(o)
                    });
                    s.state = State::Done(o);
                    false
                }
            },
            done @ State::Done(_) => {
                s.state = done;
                false
            }
        };
        drop(s);
        if let Some(list) = q.as_mut().and_then(|m| m.get_mut(&self.key)) {
            list.retain(|x| !Arc::ptr_eq(x, &self.slot));
        }
        cancelled
    }
}

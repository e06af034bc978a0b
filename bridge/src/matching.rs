//! MPI matching for one context id (one intercomm): what a receive accepts
//! ([`Source`], [`Tag`]), what it reports ([`Status`]), and the two queues —
//! posted receives and unexpected messages, both in arrival/posting order, so
//! a message matches the first posted receive that accepts it and a receive
//! takes the first unexpected message it accepts (MPI non-overtaking order
//! together with per-peer FIFO connections). [`Ctx::deliver`] is the whole
//! decision for an arriving message.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Condvar, Mutex};

use tracing::debug;
use uuid::Uuid;

use crate::completion::Completion;
use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::format::WireFormat;
use crate::frame::{discard_payload, read_payload_vec, FrameHeader, FrameKind};
use crate::sync::lock;

/// Which remote rank a receive or probe accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// MPI_ANY_SOURCE.
    Any,
    /// One rank of the remote group.
    Rank(u32),
}

/// Which tag a receive or probe accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// MPI_ANY_TAG.
    Any,
    /// One tag value (must be >= 0).
    Value(i32),
}

/// What a completed receive or a probe reports about the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// Sender's rank in the remote group.
    pub source: u32,
    pub tag: i32,
    /// Number of elements (as declared by the sender).
    pub count: u64,
    /// Payload size in bytes.
    pub bytes: u64,
    /// Type signature carried by the message.
    pub signature: u64,
    /// Wire format of the payload.
    pub format: WireFormat,
}

/// Result of a matched receive: payload bytes (None when written into a caller buffer) + status.
pub(crate) type RecvOutcome = (Option<Vec<u8>>, Status);

/// Caller memory a blocking receive lends to whichever thread holds the
/// reader token of the sender's connection (possibly the caller itself).
///
/// INVARIANT (soundness of the zero-copy receive): the `recv_bytes_into*` call
/// that created this pointer does not return until the receive's completion
/// has been set, and the completion is set only after the last write through
/// this pointer (by the token holder or by the caller itself). The call also
/// never withdraws-and-returns once the entry left the posted queue.
pub(crate) struct RawBuf {
    pub ptr: *mut u8,
    pub len: usize,
}
// SAFETY: see the invariant above — exactly one thread writes through the
// pointer, while the owning thread is blocked waiting for the completion.
unsafe impl Send for RawBuf {}

pub(crate) enum Target {
    /// Allocate a Vec for the payload (irecv / recv_bytes); `max_bytes` is the capacity limit.
    Owned { max_bytes: usize },
    /// Write into borrowed caller memory (blocking recv_bytes_into).
    Borrowed(RawBuf),
}

impl Target {
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Target::Owned { max_bytes } => *max_bytes,
            Target::Borrowed(b) => b.len,
        }
    }
}

pub(crate) struct PostedRecv {
    pub id: u64,
    pub source: Source,
    pub tag: Tag,
    pub expected: Option<u64>,
    pub target: Target,
    pub done: Arc<Completion<RecvOutcome>>,
}

impl Drop for PostedRecv {
    fn drop(&mut self) {
        // Whatever path drops a posted receive without completing it (engine
        // shutdown, context teardown), its waiter must not hang.
        self.done.complete(Err(BridgeError::EngineShutDown));
    }
}

/// A message that arrived before any receive matched it: an eager message
/// with its payload, or a rendezvous announcement (RTS, no payload yet).
pub(crate) struct Arrived {
    pub hdr: FrameHeader,
    pub payload: Vec<u8>,
    /// The process it came from.
    pub peer: Uuid,
    /// Eager credit it holds (returned to `peer` once consumed); 0 for an RTS.
    pub cost: u64,
}

/// What became of an arriving eager message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// A posted receive took it (its memory is free again).
    Matched,
    /// Held in the unexpected queue.
    Queued,
}

/// Remote group of a registered context.
pub(crate) struct Registration {
    pub remote: Vec<Endpoint>,
}

pub(crate) struct CtxState {
    pub registration: Option<Registration>,
    pub posted: VecDeque<PostedRecv>,
    pub unexpected: VecDeque<Arrived>,
    /// Remote ranks known to have failed, with the reason.
    /// (`true`: it left in order, BYE; `false`: it failed).
    pub failed_ranks: Vec<(u32, String, bool)>,
    /// Its channel was dropped while receives were posted: it stays
    /// registered until they have matched (see [`Ctx::defer_retire`]).
    pub retiring: bool,
}

/// Matching state of one context id.
pub(crate) struct Ctx {
    pub id: u64,
    pub state: Mutex<CtxState>,
    /// Notified when an unexpected message is queued or a failure is recorded (for probe).
    pub arrived: Condvar,
}

pub(crate) fn accepts(source: Source, tag: Tag, hdr: &FrameHeader) -> bool {
    (match source {
        Source::Any => true,
        Source::Rank(r) => r == hdr.source,
    }) && (match tag {
        Tag::Any => true,
        Tag::Value(t) => t == hdr.tag,
    })
}

pub(crate) fn status_of(hdr: &FrameHeader) -> Status {
    Status {
        source: hdr.source,
        tag: hdr.tag,
        count: hdr.count,
        bytes: hdr.payload_len,
        signature: hdr.signature,
        format: hdr.format,
    }
}

/// Signature and size checks of a matched message against its receive.
pub(crate) fn check_match(expected: Option<u64>, capacity: usize, hdr: &FrameHeader) -> Result<()> {
    if let Some(e) = expected {
        if e != hdr.signature {
            return Err(BridgeError::TypeMismatch {
                expected: e,
                actual: hdr.signature,
                from_rank: hdr.source,
                tag: hdr.tag,
            });
        }
    }
    if hdr.payload_len > capacity as u64 {
        return Err(BridgeError::Truncated {
            message_bytes: hdr.payload_len,
            buffer_bytes: capacity as u64,
        });
    }
    Ok(())
}

impl Ctx {
    pub(crate) fn new(id: u64) -> Arc<Ctx> {
        Arc::new(Ctx {
            id,
            state: Mutex::new(CtxState {
                registration: None,
                posted: VecDeque::new(),
                unexpected: VecDeque::new(),
                failed_ranks: Vec::new(),
                retiring: false,
            }),
            arrived: Condvar::new(),
        })
    }

    /// Reader side: an eager message for this context arrived from `peer`
    /// (holding `cost` bytes of its credit) and its payload is next in `rd`.
    /// Completes the first posted receive that accepts it (reading the
    /// payload straight into a borrowed buffer) or queues it as unexpected.
    /// `Err` when reading failed (the connection is lost).
    pub(crate) fn deliver<R: Read>(
        &self,
        hdr: FrameHeader,
        rd: &mut R,
        peer: Uuid,
        cost: u64,
    ) -> Result<Delivery> {
        let io_err = |e: std::io::Error| BridgeError::PeerFailed {
            rank: hdr.source,
            reason: format!("receiving a message failed: {e}"),
        };
        let len = usize::try_from(hdr.payload_len).map_err(|_| {
            BridgeError::Protocol(format!(
                "payload of {} bytes does not fit in memory",
                hdr.payload_len
            ))
        })?;
        let posted = lock(&self.state).take_posted_match(&hdr);
        if let Some(p) = posted {
            // Matched a posted receive before the payload was read: read straight into its target.
            return match check_match(p.expected, p.target.capacity(), &hdr) {
                Err(e) => {
                    let r = discard_payload(rd, hdr.payload_len).map_err(io_err);
                    p.done.complete(Err(e));
                    r.map(|()| Delivery::Matched)
                }
                Ok(()) => match read_into(&p.target, rd, len) {
                    Ok(v) => {
                        p.done.complete(Ok((v, status_of(&hdr))));
                        Ok(Delivery::Matched)
                    }
                    Err(e) => {
                        let e = io_err(e);
                        p.done.complete(Err(e.clone()));
                        Err(e)
                    }
                },
            };
        }
        // The caller checked `len` against the sender's credit: bounded memory.
        let payload = read_payload_vec(rd, len).map_err(io_err)?;
        let arrived = Arrived {
            hdr,
            payload,
            peer,
            cost,
        };
        let mut st = lock(&self.state);
        // A receive may have been posted while the payload was being read.
        if let Some(p) = st.take_posted_match(&hdr) {
            drop(st);
            p.done
                .complete(fill_from_arrived(&p.target, p.expected, arrived));
            Ok(Delivery::Matched)
        } else {
            st.unexpected.push_back(arrived);
            drop(st);
            self.arrived.notify_all();
            Ok(Delivery::Queued)
        }
    }

    /// Reader side: a rendezvous announcement (RTS) from `peer`. The first
    /// posted receive that accepts it is returned (the caller sends CTS);
    /// otherwise it is queued as unexpected, where probes see its envelope.
    pub(crate) fn announce(&self, hdr: FrameHeader, peer: Uuid) -> Option<PostedRecv> {
        let mut st = lock(&self.state);
        if let Some(p) = st.take_posted_match(&hdr) {
            return Some(p);
        }
        st.unexpected.push_back(Arrived {
            hdr,
            payload: Vec::new(),
            peer,
            cost: 0,
        });
        drop(st);
        self.arrived.notify_all();
        None
    }

    /// Pushed DATA (see `rendezvous`) for the announcement `seq` from
    /// `peer` while it is still unexpected here: the announcement becomes
    /// an eager message with this payload and credit, in its place in the
    /// queue. The payload comes back if the announcement is not queued (a
    /// receive is taking it) or announced another length (the receive
    /// that takes the announcement then fails with a protocol error
    /// instead of reporting the announced size for other bytes).
    pub(crate) fn attach_payload(
        &self,
        peer: Uuid,
        seq: u64,
        payload: Vec<u8>,
        cost: u64,
    ) -> std::result::Result<(), Vec<u8>> {
        let mut st = lock(&self.state);
        let found = st
            .unexpected
            .iter_mut()
            .find(|a| a.peer == peer && a.hdr.seq == seq && a.hdr.kind == FrameKind::Rts)
            .filter(|a| a.hdr.payload_len == payload.len() as u64);
        match found {
            Some(a) => {
                a.hdr.kind = FrameKind::Eager;
                a.hdr.flags = 0;
                a.payload = payload;
                a.cost = cost;
                Ok(())
            }
            None => Err(payload),
        }
    }

    /// Its channel is dropped (`MPI_Comm_free`): true when receives are
    /// still posted, which then keep the context registered until they
    /// have matched ([`Ctx::retire_due`]), as MPI's free leaves pending
    /// operations to complete (MPICH's `comm/cmfree`: an `MPI_Irecv`, the
    /// communicator freed, then the wait). A receive cancelled or failed
    /// meanwhile leaves the context registered until the engine stops.
    pub(crate) fn defer_retire(&self) -> bool {
        let mut st = lock(&self.state);
        st.retiring = !st.posted.is_empty();
        st.retiring
    }

    /// A deferred retirement's receives have all matched: retire it now.
    pub(crate) fn retire_due(&self) -> bool {
        let st = lock(&self.state);
        st.retiring && st.posted.is_empty()
    }

    /// The intercomm was dropped: forget its remote group and fail what is
    /// posted; returns what was queued (the caller discards it).
    pub(crate) fn retire(&self) -> Vec<Arrived> {
        let (posted, unexpected) = {
            let mut st = lock(&self.state);
            st.retiring = false;
            st.registration = None;
            (
                st.posted.drain(..).collect::<Vec<_>>(),
                st.unexpected.drain(..).collect::<Vec<_>>(),
            )
        };
        if !unexpected.is_empty() {
            debug!(
                context = self.id,
                count = unexpected.len(),
                "InterComm dropped with unreceived messages; discarding them"
            );
        }
        drop(posted); // PostedRecv::drop completes them with EngineShutDown
        unexpected
    }

    /// The engine stops: fail the posted receives and wake probes.
    pub(crate) fn shut_down(&self) {
        let posted: Vec<_> = lock(&self.state).posted.drain(..).collect();
        drop(posted); // PostedRecv::drop completes with EngineShutDown
        self.arrived.notify_all();
    }

    /// The sender's endpoint of a message from remote rank `source` (for its SYNC_ACK).
    pub(crate) fn remote_endpoint(&self, source: u32) -> Option<Endpoint> {
        let st = lock(&self.state);
        st.registration
            .as_ref()
            .and_then(|r| r.remote.get(source as usize).cloned())
    }

    /// Record that `process` failed or left; fail what can no longer complete and wake probes.
    pub(crate) fn process_gone(&self, process: Uuid, reason: &str, orderly: bool) {
        lock(&self.state).mark_process_failed(process, reason, orderly);
        self.arrived.notify_all();
    }

    /// What this context holds for the receive `id` that waits for a
    /// message from `peer` (see `request::wait_watched`): whether it is
    /// still posted, and the envelopes of the unexpected messages.
    pub(crate) fn describe_wait(&self, id: u64, peer: Option<Uuid>) -> String {
        let st = lock(&self.state);
        let posted = st.posted.iter().position(|p| p.id == id);
        let unexpected: Vec<String> = st
            .unexpected
            .iter()
            .take(8)
            .map(|a| {
                format!(
                    "{:?} from rank {} tag {}",
                    a.hdr.kind, a.hdr.source, a.hdr.tag
                )
            })
            .collect();
        format!(
            "context {:#x}, sender process {peer:?}, receive {} ({} posted), {} unexpected [{}], failed ranks {:?}",
            self.id,
            match posted {
                Some(i) => format!("posted at {i}"),
                None => "matched, its payload not yet in".to_owned(),
            },
            st.posted.len(),
            st.unexpected.len(),
            unexpected.join(", "),
            st.failed_ranks
        )
    }

    /// Remove a still-posted receive; false if it was already matched (claimed).
    pub(crate) fn withdraw(&self, id: u64) -> bool {
        let mut st = lock(&self.state);
        match st.posted.iter().position(|p| p.id == id) {
            Some(i) => {
                if let Some(p) = st.posted.remove(i) {
                    // Not an error the caller sees: it gets Timeout / already dropped the request.
                    p.done
                        .complete(Err(BridgeError::Timeout(Default::default())));
                }
                true
            }
            None => false,
        }
    }
}

impl CtxState {
    /// Whether `peer` (the authenticated process behind the connection a
    /// frame came on) is the remote rank the frame claims as its source.
    /// A context not registered yet cannot tell: its early messages are
    /// checked when it is (see `take_forged`).
    pub(crate) fn sender_is(&self, source: u32, peer: Uuid) -> bool {
        match &self.registration {
            Some(r) => r
                .remote
                .get(source as usize)
                .is_some_and(|e| e.process == peer),
            None => true,
        }
    }

    /// Takes out the early messages whose connection's process is not the
    /// remote rank they claim (checked once the remote group is known).
    pub(crate) fn take_forged(&mut self) -> Vec<Arrived> {
        let (keep, forged): (VecDeque<Arrived>, VecDeque<Arrived>) =
            std::mem::take(&mut self.unexpected)
                .into_iter()
                .partition(|a| self.sender_is(a.hdr.source, a.peer));
        self.unexpected = keep;
        forged.into_iter().collect()
    }

    pub(crate) fn take_posted_match(&mut self, hdr: &FrameHeader) -> Option<PostedRecv> {
        let i = self
            .posted
            .iter()
            .position(|p| accepts(p.source, p.tag, hdr))?;
        self.posted.remove(i)
    }

    pub(crate) fn take_unexpected_match(&mut self, source: Source, tag: Tag) -> Option<Arrived> {
        let i = self
            .unexpected
            .iter()
            .position(|a| accepts(source, tag, &a.hdr))?;
        self.unexpected.remove(i)
    }

    pub(crate) fn peek_unexpected(&self, source: Source, tag: Tag) -> Option<Status> {
        self.unexpected
            .iter()
            .find(|a| accepts(source, tag, &a.hdr))
            .map(|a| status_of(&a.hdr))
    }

    /// Error for an operation on `source` if that source (or, for ANY, some remote rank) failed.
    pub(crate) fn failure_for(&self, source: Source) -> Option<BridgeError> {
        let hit = match source {
            // A failure may have taken the sender with it; ranks that left in
            // order only matter once no remote rank is left to send.
            Source::Any => self
                .failed_ranks
                .iter()
                .find(|(_, _, orderly)| !orderly)
                .or_else(|| {
                    let remote = self.registration.as_ref().map_or(0, |r| r.remote.len());
                    if remote > 0 && self.failed_ranks.len() >= remote {
                        self.failed_ranks.first()
                    } else {
                        None
                    }
                }),
            Source::Rank(r) => self.failed_ranks.iter().find(|(fr, _, _)| *fr == r),
        };
        hit.map(|(rank, reason, _)| BridgeError::PeerFailed {
            rank: *rank,
            reason: reason.clone(),
        })
    }

    /// The failure a nonblocking probe reports for `source`: only a rank
    /// that failed. One that left in order (its BYE came after all it
    /// sent) has nothing more to match, so "no message" is the answer —
    /// what MPI's own `MPI_Iprobe` gives for a process that finalized
    /// (a blocking probe or receive fails instead: it would wait forever).
    pub(crate) fn failure_for_iprobe(&self, source: Source) -> Option<BridgeError> {
        let hit = match source {
            Source::Any => self.failed_ranks.iter().find(|(_, _, orderly)| !orderly),
            Source::Rank(r) => self
                .failed_ranks
                .iter()
                .find(|(fr, _, orderly)| *fr == r && !orderly),
        };
        hit.map(|(rank, reason, _)| BridgeError::PeerFailed {
            rank: *rank,
            reason: reason.clone(),
        })
    }

    /// Record that process `process` failed; fail the posted receives that can no longer complete.
    pub(crate) fn mark_process_failed(&mut self, process: Uuid, reason: &str, orderly: bool) {
        let Some(reg) = &self.registration else {
            return;
        };
        let ranks: Vec<u32> = reg
            .remote
            .iter()
            .enumerate()
            .filter(|(_, e)| e.process == process)
            .map(|(i, _)| i as u32)
            .collect();
        for r in ranks {
            if !self.failed_ranks.iter().any(|(fr, _, _)| *fr == r) {
                self.failed_ranks.push((r, reason.to_owned(), orderly));
            }
        }
        let mut keep = VecDeque::with_capacity(self.posted.len());
        while let Some(p) = self.posted.pop_front() {
            match self.failure_for(p.source) {
                Some(e) => p.done.complete(Err(e)),
                None => keep.push_back(p),
            }
        }
        self.posted = keep;
    }
}

/// Read a payload of `len` bytes (already checked against the target's
/// capacity) into a receive target: a borrowed buffer or a new vector.
pub(crate) fn read_into<R: Read>(
    target: &Target,
    rd: &mut R,
    len: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    match target {
        Target::Borrowed(b) => {
            // SAFETY: RawBuf invariant — the owner waits for the completion; `len` is
            // at most `b.len` (checked against the capacity by the caller).
            let dst = unsafe { std::slice::from_raw_parts_mut(b.ptr, len.min(b.len)) };
            rd.read_exact(dst).map(|()| None)
        }
        Target::Owned { .. } => read_payload_vec(rd, len).map(Some),
    }
}

/// Copy/move an arrived message into a receive target after matching.
pub(crate) fn fill_from_arrived(
    target: &Target,
    expected: Option<u64>,
    a: Arrived,
) -> Result<RecvOutcome> {
    check_match(expected, target.capacity(), &a.hdr)?;
    let st = status_of(&a.hdr);
    match target {
        Target::Owned { .. } => Ok((Some(a.payload), st)),
        Target::Borrowed(b) => {
            // SAFETY: RawBuf invariant — the owner is blocked until we complete; len checked above.
            let dst = unsafe { std::slice::from_raw_parts_mut(b.ptr, b.len) };
            let Some(dst) = dst.get_mut(..a.payload.len()) else {
                return Err(BridgeError::Protocol(format!(
                    "a {}-byte message matched a {}-byte buffer",
                    a.payload.len(),
                    b.len
                )));
            };
            dst.copy_from_slice(&a.payload);
            Ok((None, st))
        }
    }
}

//! MPI matching for one context id (one intercomm): the posted-receive queue
//! and the unexpected-message queue, both in arrival/posting order, so a
//! message matches the first posted receive that accepts it and a receive
//! takes the first unexpected message it accepts (MPI non-overtaking order
//! together with per-peer FIFO connections).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

use uuid::Uuid;

use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::frame::FrameHeader;
use crate::intercomm::{Source, Status, Tag};
use crate::request::{lock, Completion, RecvOutcome};

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
    fn capacity(&self) -> usize {
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

/// A message that arrived before any receive matched it.
pub(crate) struct Arrived {
    pub hdr: FrameHeader,
    pub payload: Vec<u8>,
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
            }),
            arrived: Condvar::new(),
        })
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
            dst[..a.payload.len()].copy_from_slice(&a.payload);
            Ok((None, st))
        }
    }
}

//! Receives and probes on a [`Channel`]: take a matching message from the
//! unexpected queue (an eager one is copied out, an announcement answered
//! with CTS) or post the receive; then wait, reading the sender's
//! connection from this thread when only one peer can deliver it.

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::{timeout_err, Channel};
use crate::completion::Completion;
use crate::error::{BridgeError, Result};
use crate::frame::FrameKind;
use crate::matching::{
    fill_from_arrived, PostedRecv, RawBuf, RecvOutcome, Source, Status, Tag, Target,
};
use crate::request::{wait_watched, RecvProgress, RecvRequest};
use crate::sync::{cv_wait, deadline_of, lock};

enum PostOutcome {
    Immediate(Result<RecvOutcome>),
    Posted {
        id: u64,
        done: Arc<Completion<RecvOutcome>>,
        /// The process the message comes from, when already known (a matched announcement).
        peer: Option<Uuid>,
    },
}

impl Channel {
    /// Try the unexpected queue; else post the receive (or fail if the source is dead).
    fn post(
        &self,
        source: Source,
        tag: Tag,
        expected: Option<u64>,
        target: Target,
    ) -> Result<PostOutcome> {
        self.check_source(source)?;
        Self::check_recv_tag(tag)?;
        let shared = &self.shared;
        let mut st = lock(&self.ctx.state);
        if let Some(a) = st.take_unexpected_match(source, tag) {
            drop(st);
            let (hdr, peer, cost) = (a.hdr, a.peer, a.cost);
            if hdr.kind == FrameKind::Rts {
                // Matched an announcement: CTS, then its DATA lands in `target`.
                shared.ledger.rts_done(peer);
                let done = Completion::new(Arc::clone(&shared.any));
                let id = shared.next_seq();
                let p = PostedRecv {
                    id,
                    source,
                    tag,
                    expected,
                    target,
                    done: Arc::clone(&done),
                };
                shared.rts_matched(peer, hdr, p);
                return Ok(PostOutcome::Posted {
                    id,
                    done,
                    peer: Some(peer),
                });
            }
            let r = fill_from_arrived(&target, expected, a);
            shared.release(peer, cost);
            if hdr.kind == FrameKind::SyncEager {
                shared.send_sync_ack(&self.ctx, &hdr);
            }
            return Ok(PostOutcome::Immediate(r));
        }
        if let Some(e) = st.failure_for(source) {
            return Err(e);
        }
        if shared.is_shutting_down() {
            return Err(BridgeError::EngineShutDown);
        }
        let done = Completion::new(Arc::clone(&shared.any));
        let id = shared.next_seq();
        st.posted.push_back(PostedRecv {
            id,
            source,
            tag,
            expected,
            target,
            done: Arc::clone(&done),
        });
        Ok(PostOutcome::Posted {
            id,
            done,
            peer: None,
        })
    }

    /// Blocking receive into `buf` (zero-copy when the receive is posted
    /// before the message arrives); on timeout nothing is consumed.
    pub(crate) fn recv_into(
        &self,
        source: Source,
        tag: Tag,
        expected: Option<u64>,
        buf: &mut [u8],
        timeout: Option<Duration>,
    ) -> Result<Status> {
        let target = Target::Borrowed(RawBuf {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
        });
        match self.post(source, tag, expected, target)? {
            PostOutcome::Immediate(r) => r.map(|(_, st)| st),
            PostOutcome::Posted { id, done, peer } => {
                // RawBuf invariant: from here we return only after `done` is complete
                // or after withdrawing the entry while it was still in the posted queue.
                let from = peer.or_else(|| self.peer_of(source));
                let r = match wait_watched(
                    |d| self.shared.wait_from(from, &done, d),
                    deadline_of(timeout),
                    || self.ctx.describe_wait(id, from),
                ) {
                    Some(r) => r,
                    None => {
                        if self.ctx.withdraw(id) {
                            return Err(timeout_err(timeout));
                        }
                        done.wait_until(None)
                            .unwrap_or(Err(BridgeError::EngineShutDown))
                    }
                };
                r.map(|(_, st)| st)
            }
        }
    }

    /// Non-blocking receive of a message of at most `max_bytes`.
    pub(crate) fn irecv(
        &self,
        source: Source,
        tag: Tag,
        expected: Option<u64>,
        max_bytes: usize,
    ) -> Result<RecvRequest> {
        match self.post(source, tag, expected, Target::Owned { max_bytes })? {
            PostOutcome::Immediate(r) => {
                let done = Completion::new(Arc::clone(&self.shared.any));
                done.complete(r);
                Ok(RecvRequest {
                    done,
                    ctx: Arc::clone(&self.ctx),
                    id: 0,
                    via: None,
                })
            }
            PostOutcome::Posted { id, done, peer } => {
                let progress: Arc<dyn RecvProgress> = self.shared.clone();
                let via = Some((progress, peer.or_else(|| self.peer_of(source))));
                Ok(RecvRequest {
                    done,
                    ctx: Arc::clone(&self.ctx),
                    id,
                    via,
                })
            }
        }
    }

    /// Non-blocking probe: status of the first matching unexpected message, without consuming it.
    pub(crate) fn iprobe(&self, source: Source, tag: Tag) -> Result<Option<Status>> {
        self.check_source(source)?;
        Self::check_recv_tag(tag)?;
        let st = lock(&self.ctx.state);
        if let Some(s) = st.peek_unexpected(source, tag) {
            return Ok(Some(s));
        }
        match st.failure_for_iprobe(source) {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Blocking probe, with an optional upper bound.
    pub(crate) fn probe(
        &self,
        source: Source,
        tag: Tag,
        timeout: Option<Duration>,
    ) -> Result<Status> {
        self.check_source(source)?;
        Self::check_recv_tag(tag)?;
        let deadline = deadline_of(timeout);
        let mut st = lock(&self.ctx.state);
        loop {
            if let Some(s) = st.peek_unexpected(source, tag) {
                return Ok(s);
            }
            if let Some(e) = st.failure_for(source) {
                return Err(e);
            }
            if self.shared.is_shutting_down() {
                return Err(BridgeError::EngineShutDown);
            }
            let (g, timed_out) = cv_wait(&self.ctx.arrived, st, deadline);
            st = g;
            if timed_out && st.peek_unexpected(source, tag).is_none() {
                return Err(timeout_err(timeout));
            }
        }
    }
}

//! Sends on a [`Channel`]: the protocol decision for each message. Eager
//! when it fits the eager limits and the receiver's credit; a small
//! blocking send without credit is held here (within the sender's budget)
//! and announced; anything else is a rendezvous (RTS, CTS, DATA).
//! Synchronous sends go SYNC_EAGER (answered by SYNC_ACK at the match) or
//! rendezvous, whose CTS already means "matched". Rendezvous sends are
//! registered in one place (`announce`). A nonblocking send of lent memory
//! (`SendBytes::Lent`, the C library's `MPI_Isend`) copies nothing: its
//! request completes once its bytes were written, so what the sender holds
//! for a receiver that does not receive is the program's own buffer; the
//! number of such waiting sends has a bound (`held`).
//! On a link that allows it (shared memory, the receiver may read our
//! memory: `Link::single_copy`), a message from the single-copy threshold
//! up goes as a single-copy rendezvous: its RTS carries the payload's
//! address and the receiver reads it from there; the payload (the caller's
//! memory, or the request's owned or lent bytes) stays where it is until
//! the receiver's answer, which completes the send.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::{timeout_err, Channel};
use crate::completion::Completion;
use crate::error::{BridgeError, Result};
use crate::frame::{FrameHeader, FrameKind, SINGLE_COPY, WANTS_CREDIT};
use crate::held::Held;
use crate::ledger::FRAME_COST;
use crate::payload::{Payload, SendBytes};
use crate::rendezvous::PendingSend;
use crate::request::{SendProgress, SendRequest};
use crate::sync::deadline_of;
use crate::transport::{single_copy_read_time, Link, Queued, TryInline};
use crate::wait;
use crate::wire::TypeSig;

/// Whether a rendezvous send's DATA may go before its CTS, on credit the
/// receiver returns after the RTS (standard mode only: a synchronous send
/// must not complete before the match).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Push {
    OnCredit,
    Never,
}

impl Channel {
    /// Blocking standard-mode send. A message up to the eager limit returns
    /// once the bytes are in the kernel (or, when the receiver has no credit
    /// left, once they are buffered in this process); a larger one returns
    /// once the receiver matched it and the payload went out. Either waits
    /// first, if the receiver has not formed its context yet, until it has
    /// and admitted our connection (as MPI allows a standard send to block).
    pub(crate) fn send(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
    ) -> Result<()> {
        let (hdr, ep) = self.header(dest, tag, sig, count, payload.len(), FrameKind::Eager)?;
        let conn = self.shared.link(ep, dest)?;
        if conn.single_copy(payload.len()) {
            return self.rendezvous_blocking(&*conn, hdr, ep.process, dest, payload, None);
        }
        if payload.len() <= self.shared.limits.eager_limit {
            conn.wait_granted();
        }
        if self.eager_ok(&*conn, payload.len()) {
            return conn.write_blocking(self.shared.as_ref(), &hdr, payload, dest);
        }
        if payload.len() <= self.shared.limits.eager_limit {
            // A small message the receiver has no credit for: buffer it here
            // (the sender's memory, not the receiver's) and announce it, so
            // that programs relying on eager sends of small messages (as
            // with every MPI library) keep working. It goes out once matched.
            // Within the sender's budget only: past it the send waits for
            // its match below, as MPI allows a standard send to.
            if let Some(held) = self.shared.budget.try_take(payload.len()) {
                let req = self.rendezvous_nonblocking(
                    &*conn,
                    hdr,
                    ep.process,
                    dest,
                    payload.to_vec().into(),
                    Some(held),
                    Push::OnCredit,
                )?;
                drop(req);
                return Ok(());
            }
        }
        self.rendezvous_blocking(&*conn, hdr, ep.process, dest, payload, None)
    }

    /// Whether a message of `len` bytes goes eagerly: within the (large)
    /// eager limit and the receiver's credit (which it then spends).
    fn eager_ok(&self, conn: &dyn Link, len: usize) -> bool {
        len <= self.shared.limits.large_eager_limit
            && conn.take_credit((len as u64).saturating_add(FRAME_COST))
    }

    /// Register a rendezvous send before its RTS goes out: `hdr` becomes
    /// the announcement (a single-copy one with `single_copy`); the
    /// returned completion is completed at the CTS (the blocked caller's
    /// memory, `payload` None) or once DATA was written (a payload owned or
    /// lent to the request), or at a single-copy CTS. For the blocked
    /// caller's single-copy send, the flag that says the receiver read it.
    fn announce(
        &self,
        hdr: &mut FrameHeader,
        peer: Uuid,
        dest: u32,
        payload: Option<(Payload, Option<Held>)>,
        single_copy: bool,
    ) -> (Arc<Completion<()>>, Option<Arc<AtomicBool>>) {
        hdr.kind = FrameKind::Rts;
        if single_copy {
            hdr.flags = SINGLE_COPY;
        }
        let done = Completion::new(Arc::clone(&self.shared.any));
        let read_by_peer =
            (single_copy && payload.is_none()).then(|| Arc::new(AtomicBool::new(false)));
        let (payload, held) = payload.map_or((None, None), |(p, h)| (Some(p), h));
        self.shared.rendezvous.add_send(
            hdr.seq,
            PendingSend {
                peer,
                dest_rank: dest,
                rts: *hdr,
                payload,
                held,
                done: Arc::clone(&done),
                read_by_peer: read_by_peer.clone(),
                pushed: false,
            },
        );
        (done, read_by_peer)
    }

    /// Rendezvous from the caller's memory: RTS, wait for the CTS (reading
    /// the peer's connection ourselves), then DATA. On timeout the payload is
    /// copied into the pending send, so the message still goes out once
    /// matched. Single copy (without a timeout only: the receiver reads the
    /// caller's memory, which must stay until its answer): RTS with the
    /// address, and the receiver's answer ends the send.
    fn rendezvous_blocking(
        &self,
        conn: &dyn Link,
        mut hdr: FrameHeader,
        peer: Uuid,
        dest: u32,
        payload: &[u8],
        timeout: Option<Duration>,
    ) -> Result<()> {
        let shared = &self.shared;
        let single_copy = timeout.is_none() && conn.single_copy(payload.len());
        let (done, read_by_peer) = self.announce(&mut hdr, peer, dest, None, single_copy);
        let trailer = (payload.as_ptr() as u64).to_le_bytes();
        let rts_payload: &[u8] = if single_copy { &trailer } else { &[] };
        if let Err(e) = conn.write_blocking(shared.as_ref(), &hdr, rts_payload, dest) {
            shared.rendezvous.remove_send(hdr.seq);
            return Err(e);
        }
        let work = if single_copy {
            single_copy_read_time(payload.len())
        } else {
            Duration::ZERO
        };
        let waited = wait::expecting(work, || {
            shared.wait_from(Some(peer), &done, deadline_of(timeout))
        });
        let cleared = match waited {
            Some(r) => r,
            None if single_copy => {
                // The receiver may read our memory until it answers: no detaching.
                done.wait_until(None)
                    .unwrap_or(Err(BridgeError::EngineShutDown))
            }
            None => {
                let held = shared.budget.take(payload.len());
                if shared.rendezvous.detach_caller(hdr.seq, payload, held) {
                    return Err(timeout_err(timeout));
                }
                // The CTS came meanwhile.
                done.wait_until(None)
                    .unwrap_or(Err(BridgeError::EngineShutDown))
            }
        };
        cleared?;
        if read_by_peer.is_some_and(|f| f.load(Ordering::Acquire)) {
            return Ok(());
        }
        let data = FrameHeader {
            kind: FrameKind::Data,
            flags: 0,
            ..hdr
        };
        conn.write_blocking(shared.as_ref(), &data, payload, dest)
    }

    /// Rendezvous of a payload owned by (or lent to) the request: RTS now
    /// (or queued behind earlier messages); the poller sends DATA when the
    /// CTS comes — or, with `Push::OnCredit`, as soon as the receiver's
    /// returned credit covers it (`engine::push`) — and the request
    /// completes once DATA was written.
    #[allow(clippy::too_many_arguments)]
    fn rendezvous_nonblocking(
        &self,
        conn: &dyn Link,
        mut hdr: FrameHeader,
        peer: Uuid,
        dest: u32,
        payload: Payload,
        held: Option<Held>,
        push: Push,
    ) -> Result<SendRequest> {
        let shared = &self.shared;
        // The payload's bytes do not move with it (a vector's heap, or lent
        // memory). Only lent memory (the program's own buffer) is offered
        // for single copy: a copy owned by the request is fresh heap, so the
        // receiver's `process_vm_readv` into its own fresh buffer faults in
        // both sides' pages with nothing overlapping, where the ring
        // pipelines the two copies — `bench/coll.sh` with one rank a job
        // (every collective message was such a copy): a 1 MiB Allreduce took
        // 4.0 ms by single copy and 1.0 ms through the ring. (Much of that
        // was the sender's wait for the receiver's answer, which the poller
        // read only a tick later; the waiting thread reads it now.)
        let len = payload.len();
        let single_copy = matches!(payload, Payload::Lent(_)) && conn.single_copy(len);
        let pushable =
            push == Push::OnCredit && !single_copy && len <= shared.limits.large_eager_limit;
        if pushable {
            // It would have gone eagerly: the receiver may grow our window.
            hdr.flags = WANTS_CREDIT;
        }
        let trailer = (payload.as_ptr() as u64).to_le_bytes();
        let rts_payload: &[u8] = if single_copy { &trailer } else { &[] };
        let (done, _) = self.announce(&mut hdr, peer, dest, Some((payload, held)), single_copy);
        let r = match conn.write_inline(shared.as_ref(), &hdr, rts_payload, dest, false) {
            Ok(TryInline::Done) => Ok(()),
            Ok(TryInline::Busy) => conn.enqueue(Queued {
                hdr,
                payload: rts_payload.to_vec().into(),
                dest_rank: dest,
                done: None,
                held: None,
            }),
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            shared.rendezvous.remove_send(hdr.seq);
            return Err(e);
        }
        if pushable {
            // After the RTS is written or queued: DATA may not overtake it.
            shared.rendezvous.make_pushable(peer, hdr.seq);
            shared.push_pending(peer, conn);
        }
        if !single_copy {
            // Its CTS (or the credit that pushes it) must be read promptly.
            shared.watch_replies(peer);
        }
        // A single-copy send completes on the receiver's answer, read from
        // its connection: the waiting thread reads it itself. Any other
        // completes when the writer thread wrote its DATA, which a thread
        // reading the connection would not notice.
        let via = single_copy.then(|| {
            let progress: Arc<dyn SendProgress> = shared.clone();
            (progress, peer, single_copy_read_time(len))
        });
        Ok(SendRequest { done, via })
    }

    /// The share of the sender's budget a nonblocking send takes while it
    /// waits for its receiver: one pending send, plus its payload's bytes
    /// unless the payload is lent (the program's memory). Past the bound
    /// on pending sends it fails, and nothing was sent.
    fn pending_share(&self, payload: &SendBytes<'_>) -> Result<Option<Held>> {
        let len = if payload.is_lent() { 0 } else { payload.len() };
        match self.shared.budget.take_pending(len) {
            Ok(held) => Ok(Some(held)),
            Err(full) => Err(BridgeError::TooManyPendingSends { limit: full.limit }),
        }
    }

    /// Blocking synchronous send: returns once the receiver MATCHED the
    /// message (or, with `timeout`, fails with `Timeout`; the message has
    /// then been sent and may still be matched later).
    pub(crate) fn ssend(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
        timeout: Option<Duration>,
    ) -> Result<()> {
        let shared = &self.shared;
        let (hdr, ep) = self.header(dest, tag, sig, count, payload.len(), FrameKind::SyncEager)?;
        let conn = shared.link(ep, dest)?;
        if conn.single_copy(payload.len()) || !self.eager_ok(&*conn, payload.len()) {
            // A CTS means "matched": rendezvous is synchronous by itself.
            return self.rendezvous_blocking(&*conn, hdr, ep.process, dest, payload, timeout);
        }
        let done = Completion::new(Arc::clone(&shared.any));
        shared
            .ssends
            .add(hdr.seq, ep.process, dest, Arc::clone(&done));
        if let Err(e) = conn.write_blocking(shared.as_ref(), &hdr, payload, dest) {
            shared.ssends.remove(hdr.seq);
            return Err(e);
        }
        // The SYNC_ACK comes in on the connection from the destination's process.
        match shared.wait_from(Some(ep.process), &done, deadline_of(timeout)) {
            Some(r) => r,
            None => {
                shared.ssends.remove(hdr.seq);
                Err(timeout_err(timeout))
            }
        }
    }

    /// Non-blocking standard-mode send: written inline from the caller
    /// when the connection is idle and the receiver has credit (any size, no
    /// copy), else handed to the writer thread (eager) or announced
    /// (rendezvous) with its payload: borrowed bytes are copied (the request
    /// never refers to them after this returns) and charged to the sender's
    /// budget, owned ones moved, lent ones referred to until the request
    /// completes (nothing copied or charged).
    pub(crate) fn isend(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: SendBytes<'_>,
    ) -> Result<SendRequest> {
        let shared = &self.shared;
        let (hdr, ep) = self.header(dest, tag, sig, count, payload.len(), FrameKind::Eager)?;
        let conn = shared.link(ep, dest)?;
        if conn.single_copy(payload.len()) || !self.eager_ok(&*conn, payload.len()) {
            let held = self.pending_share(&payload)?;
            return self.rendezvous_nonblocking(
                &*conn,
                hdr,
                ep.process,
                dest,
                payload.into_payload(),
                held,
                Push::OnCredit,
            );
        }
        let done = Completion::new(Arc::clone(&shared.any));
        let inline = conn.write_inline(shared.as_ref(), &hdr, payload.as_slice(), dest, false)?;
        if let TryInline::Done = inline {
            done.complete(Ok(()));
            return Ok(SendRequest { done, via: None });
        }
        // Within the receiver's credit: what is queued here is bounded by it.
        conn.enqueue(Queued {
            hdr,
            payload: payload.into_payload(),
            dest_rank: dest,
            done: Some(Arc::clone(&done)),
            held: None,
        })?;
        Ok(SendRequest { done, via: None })
    }

    /// Non-blocking synchronous send: the request completes once the
    /// receiver matched it. A lent payload is referred to only by a
    /// rendezvous (whose request completes once DATA was written); an
    /// eager one is copied, within the receiver's credit, since its
    /// SYNC_ACK, not its writer, completes the request.
    pub(crate) fn issend(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: SendBytes<'_>,
    ) -> Result<SendRequest> {
        let shared = &self.shared;
        let (hdr, ep) = self.header(dest, tag, sig, count, payload.len(), FrameKind::SyncEager)?;
        let conn = shared.link(ep, dest)?;
        if conn.single_copy(payload.len()) || !self.eager_ok(&*conn, payload.len()) {
            let held = self.pending_share(&payload)?;
            let payload = payload.into_payload();
            // Never pushed: its request completes at the match (the CTS).
            return self.rendezvous_nonblocking(
                &*conn,
                hdr,
                ep.process,
                dest,
                payload,
                held,
                Push::Never,
            );
        }
        let payload = Payload::Owned(payload.into_owned());
        let done = Completion::new(Arc::clone(&shared.any));
        shared
            .ssends
            .add(hdr.seq, ep.process, dest, Arc::clone(&done));
        if let Err(e) = conn.enqueue(Queued {
            hdr,
            payload,
            dest_rank: dest,
            done: None,
            held: None,
        }) {
            shared.ssends.remove(hdr.seq);
            return Err(e);
        }
        // Its SYNC_ACK must be read promptly.
        shared.watch_replies(ep.process);
        Ok(SendRequest { done, via: None })
    }
}

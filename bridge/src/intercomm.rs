//! [`InterComm`]: MPI point-to-point semantics between a local group (this
//! job) and a remote group (the other job), on top of the engine. Byte-level
//! methods (`*_bytes`) are the core; typed methods use [`WireType`].
//! [`Engine::intercomm`] is defined here, so the engine does not depend on
//! intercommunicators.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::address::Route;
use crate::completion::Completion;
use crate::datatype;
use crate::endpoint::Endpoint;
use crate::engine::Engine;
use crate::error::{BridgeError, Result};
use crate::format::WireFormat;
use crate::frame::{FrameHeader, FrameKind};
use crate::held::Held;
use crate::ledger::FRAME_COST;
use crate::matching::{
    fill_from_arrived, Ctx, PostedRecv, RawBuf, RecvOutcome, Source, Status, Tag, Target,
};
use crate::outgoing::{OutConn, Queued, TryInline};
use crate::rendezvous::PendingSend;
use crate::request::{RecvProgress, RecvRequest, SendRequest, TypedRecvRequest};
use crate::sync::{cv_wait, deadline_of, lock};
use crate::wire::{TypeSig, WireType};

/// An intercommunicator. `Send + Sync`; dropping it unregisters its context.
pub struct InterComm {
    pub(crate) engine: Arc<Engine>,
    pub(crate) ctx: Arc<Ctx>,
    pub(crate) local_rank: u32,
    pub(crate) local_size: u32,
    pub(crate) remote: Vec<Endpoint>,
}

impl Drop for InterComm {
    fn drop(&mut self) {
        self.engine.shared.retire_context(&self.ctx);
    }
}

impl Engine {
    /// Create an intercommunicator: `remote[i]` is the endpoint of remote rank i.
    /// Messages that arrived for `context` before this call are kept and matched.
    pub fn intercomm(
        self: &Arc<Self>,
        context: u64,
        local_rank: u32,
        local_size: u32,
        remote: Vec<Endpoint>,
    ) -> Result<InterComm> {
        if local_rank >= local_size {
            return Err(BridgeError::InvalidArgument(format!(
                "local rank {local_rank} is not below local size {local_size}"
            )));
        }
        // Admit data connections from these processes (their keys) first.
        self.shared.admission.learn(&remote)?;
        let (ctx, forged) = self.shared.contexts.register(context, remote.clone())?;
        self.shared.discard_forged(context, forged);
        self.shared.learn_peers(&remote);
        // Peers that already failed count against the new intercomm too.
        let failed = self.shared.failures.all();
        {
            let mut st = lock(&ctx.state);
            for (p, r, orderly) in &failed {
                st.mark_process_failed(*p, r, *orderly);
            }
        }
        Ok(InterComm {
            engine: Arc::clone(self),
            ctx,
            local_rank,
            local_size,
            remote,
        })
    }
}

fn check_tag(tag: i32) -> Result<()> {
    if tag < 0 {
        return Err(BridgeError::InvalidArgument(format!(
            "tag {tag} is negative; MPI tags must be >= 0 (use Tag::Any to receive any tag)"
        )));
    }
    Ok(())
}

fn timeout_err(t: Option<Duration>) -> BridgeError {
    BridgeError::Timeout(t.unwrap_or_default())
}

impl InterComm {
    /// The `n`-th communicator derived from this one (`MPI_Comm_dup`): same
    /// groups, a context both sides compute alike as long as they derive in
    /// the same order, as MPI requires of collective calls.
    pub fn derived(&self, n: u64) -> Result<InterComm> {
        let mut key = self.ctx.id.to_le_bytes().to_vec();
        key.extend_from_slice(b"\x1fdup\x1f");
        key.extend_from_slice(&n.to_le_bytes());
        let context = crate::hash::fnv1a64(&key, crate::hash::FNV_OFFSET);
        self.engine.intercomm(
            context,
            self.local_rank,
            self.local_size,
            self.remote.clone(),
        )
    }

    /// Context id of this intercomm.
    pub fn context(&self) -> u64 {
        self.ctx.id
    }
    /// This process's rank in the local group.
    pub fn rank(&self) -> u32 {
        self.local_rank
    }
    /// Size of the local group.
    pub fn local_size(&self) -> u32 {
        self.local_size
    }
    /// Size of the remote group.
    pub fn remote_size(&self) -> u32 {
        self.remote.len() as u32
    }
    /// The engine this intercomm runs on.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
    /// How the data connection to remote rank `rank` went (transport, our
    /// address, the address dialled); None until something was sent to it.
    pub fn route(&self, rank: u32) -> Result<Option<Route>> {
        let ep = self.remote.get(rank as usize).ok_or_else(|| {
            BridgeError::InvalidArgument(format!(
                "remote rank {rank} out of range (remote size {})",
                self.remote.len()
            ))
        })?;
        Ok(self.engine.route_to(ep.process))
    }

    fn check_source(&self, s: Source) -> Result<()> {
        if let Source::Rank(r) = s {
            if r as usize >= self.remote.len() {
                return Err(BridgeError::InvalidArgument(format!(
                    "source rank {r} does not exist: the remote group has {} ranks",
                    self.remote.len()
                )));
            }
        }
        Ok(())
    }

    /// The one peer process that can deliver a message accepted by `source`
    /// (None for ANY_SOURCE when the remote group spans several processes).
    fn peer_of(&self, source: Source) -> Option<Uuid> {
        match source {
            Source::Rank(r) => self.remote.get(r as usize).map(|e| e.process),
            Source::Any => {
                let first = self.remote.first()?.process;
                self.remote
                    .iter()
                    .all(|e| e.process == first)
                    .then_some(first)
            }
        }
    }

    fn check_recv_tag(tag: Tag) -> Result<()> {
        match tag {
            Tag::Any => Ok(()),
            Tag::Value(t) => check_tag(t),
        }
    }

    fn header(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        len: usize,
        kind: FrameKind,
    ) -> Result<(FrameHeader, &Endpoint)> {
        let ep = self.remote.get(dest as usize).ok_or_else(|| {
            BridgeError::InvalidArgument(format!(
                "destination rank {dest} does not exist: the remote group has {} ranks",
                self.remote.len()
            ))
        })?;
        check_tag(tag)?;
        if sig.elem_size > 0 && (count as u128) * (sig.elem_size as u128) != len as u128 {
            return Err(BridgeError::InvalidArgument(format!(
                "payload of {len} bytes does not hold {count} elements of {} bytes",
                sig.elem_size
            )));
        }
        let hdr = FrameHeader {
            kind,
            format: sig.format,
            source: self.local_rank,
            context: self.ctx.id,
            tag,
            seq: self.engine.shared.next_seq(),
            signature: sig.signature,
            count,
            payload_len: len as u64,
        };
        Ok((hdr, ep))
    }

    // ---------------------------------------------------------------- sends

    /// Blocking standard-mode send. A message up to the eager limit returns
    /// once the bytes are in the kernel (or, when the receiver has no credit
    /// left, once they are buffered in this process); a larger one returns
    /// once the receiver matched it and the payload went out. Either waits
    /// first, if the receiver has not formed its intercomm yet, until it has
    /// and admitted our connection (as MPI allows a standard send to block).
    pub fn send_bytes(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
    ) -> Result<()> {
        let (hdr, ep) = self.header(dest, tag, sig, count, payload.len(), FrameKind::Eager)?;
        let conn = self.engine.shared.conn(ep, dest)?;
        if payload.len() <= self.engine.shared.limits.eager_limit {
            conn.wait_granted();
        }
        if self.eager_ok(&conn, payload.len()) {
            return conn.write_blocking(self.engine.shared.as_ref(), &hdr, payload, dest);
        }
        if payload.len() <= self.engine.shared.limits.eager_limit {
            // A small message the receiver has no credit for: buffer it here
            // (the sender's memory, not the receiver's) and announce it, so
            // that programs relying on eager sends of small messages (as
            // with every MPI library) keep working. It goes out once matched.
            // Within the sender's budget only: past it the send waits for
            // its match below, as MPI allows a standard send to.
            if let Some(held) = self.engine.shared.budget.try_take(payload.len()) {
                let req = self.rendezvous_nonblocking(
                    &conn,
                    hdr,
                    ep.process,
                    dest,
                    payload.to_vec(),
                    held,
                )?;
                drop(req);
                return Ok(());
            }
        }
        self.rendezvous_blocking(&conn, hdr, ep.process, dest, payload, None)
    }

    /// Whether a message of `len` bytes goes eagerly: within the (large)
    /// eager limit and the receiver's credit (which it then spends).
    fn eager_ok(&self, conn: &OutConn, len: usize) -> bool {
        len <= self.engine.shared.limits.large_eager_limit
            && conn.take_credit((len as u64).saturating_add(FRAME_COST))
    }

    /// Rendezvous from the caller's memory: RTS, wait for the CTS (reading
    /// the peer's connection ourselves), then DATA. On timeout the payload is
    /// copied into the pending send, so the message still goes out once matched.
    fn rendezvous_blocking(
        &self,
        conn: &OutConn,
        mut hdr: FrameHeader,
        peer: Uuid,
        dest: u32,
        payload: &[u8],
        timeout: Option<Duration>,
    ) -> Result<()> {
        let shared = &self.engine.shared;
        hdr.kind = FrameKind::Rts;
        let done = Completion::new(Arc::clone(&shared.any));
        shared.rendezvous.add_send(
            hdr.seq,
            PendingSend {
                peer,
                dest_rank: dest,
                rts: hdr,
                payload: None,
                held: None,
                done: Arc::clone(&done),
            },
        );
        if let Err(e) = conn.write_blocking(shared.as_ref(), &hdr, &[], dest) {
            shared.rendezvous.remove_send(hdr.seq);
            return Err(e);
        }
        let cleared = match shared.wait_from(Some(peer), &done, deadline_of(timeout)) {
            Some(r) => r,
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
        let data = FrameHeader {
            kind: FrameKind::Data,
            ..hdr
        };
        conn.write_blocking(shared.as_ref(), &data, payload, dest)
    }

    /// Rendezvous of an owned payload: RTS now (or queued behind earlier
    /// messages); the poller sends DATA when the CTS comes and completes the request.
    fn rendezvous_nonblocking(
        &self,
        conn: &OutConn,
        mut hdr: FrameHeader,
        peer: Uuid,
        dest: u32,
        payload: Vec<u8>,
        held: Held,
    ) -> Result<SendRequest> {
        let shared = &self.engine.shared;
        hdr.kind = FrameKind::Rts;
        let done = Completion::new(Arc::clone(&shared.any));
        shared.rendezvous.add_send(
            hdr.seq,
            PendingSend {
                peer,
                dest_rank: dest,
                rts: hdr,
                payload: Some(payload),
                held: Some(held),
                done: Arc::clone(&done),
            },
        );
        let r = match conn.write_inline(shared.as_ref(), &hdr, &[], dest, false) {
            Ok(TryInline::Done) => Ok(()),
            Ok(TryInline::Busy) => conn.enqueue(Queued {
                hdr,
                payload: Vec::new(),
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
        Ok(SendRequest { done })
    }

    /// Blocking synchronous send: returns once the receiver MATCHED the message.
    pub fn ssend_bytes(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
    ) -> Result<()> {
        self.ssend_bytes_impl(dest, tag, sig, count, payload, None)
    }

    /// [`InterComm::ssend_bytes`] with an upper bound on the wait for the match.
    /// On timeout the message has been sent and may still be matched later.
    pub fn ssend_bytes_timeout(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
        timeout: Duration,
    ) -> Result<()> {
        self.ssend_bytes_impl(dest, tag, sig, count, payload, Some(timeout))
    }

    fn ssend_bytes_impl(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
        timeout: Option<Duration>,
    ) -> Result<()> {
        let shared = &self.engine.shared;
        let (hdr, ep) = self.header(dest, tag, sig, count, payload.len(), FrameKind::SyncEager)?;
        let conn = shared.conn(ep, dest)?;
        if !self.eager_ok(&conn, payload.len()) {
            // A CTS means "matched": rendezvous is synchronous by itself.
            return self.rendezvous_blocking(&conn, hdr, ep.process, dest, payload, timeout);
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

    /// Non-blocking standard-mode send; completes without the application calling in again.
    pub fn isend_bytes(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: Vec<u8>,
    ) -> Result<SendRequest> {
        self.isend_cow(dest, tag, sig, count, Cow::Owned(payload))
    }

    /// Non-blocking standard-mode send of borrowed bytes: written at once
    /// when the connection is idle (no copy), else copied and queued — the
    /// request never refers to `payload` after this returns.
    pub fn isend_borrowed(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
    ) -> Result<SendRequest> {
        self.isend_cow(dest, tag, sig, count, Cow::Borrowed(payload))
    }

    /// isend of borrowed or owned bytes: written inline from the caller when the
    /// connection is idle (any size, no copy), else copied (if borrowed) and
    /// handed to the writer thread.
    fn isend_cow(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: Cow<'_, [u8]>,
    ) -> Result<SendRequest> {
        let shared = &self.engine.shared;
        let (hdr, ep) = self.header(dest, tag, sig, count, payload.len(), FrameKind::Eager)?;
        let conn = shared.conn(ep, dest)?;
        if !self.eager_ok(&conn, payload.len()) {
            let held = shared.budget.take(payload.len());
            return self.rendezvous_nonblocking(
                &conn,
                hdr,
                ep.process,
                dest,
                payload.into_owned(),
                held,
            );
        }
        let done = Completion::new(Arc::clone(&shared.any));
        if let TryInline::Done = conn.write_inline(shared.as_ref(), &hdr, &payload, dest, false)? {
            done.complete(Ok(()));
            return Ok(SendRequest { done });
        }
        conn.enqueue(Queued {
            hdr,
            payload: payload.into_owned(),
            dest_rank: dest,
            done: Some(Arc::clone(&done)),
            held: None,
        })?;
        Ok(SendRequest { done })
    }

    /// Non-blocking synchronous send: the request completes once the receiver matched it.
    pub fn issend_bytes(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: Vec<u8>,
    ) -> Result<SendRequest> {
        let shared = &self.engine.shared;
        let (hdr, ep) = self.header(dest, tag, sig, count, payload.len(), FrameKind::SyncEager)?;
        let conn = shared.conn(ep, dest)?;
        if !self.eager_ok(&conn, payload.len()) {
            let held = shared.budget.take(payload.len());
            return self.rendezvous_nonblocking(&conn, hdr, ep.process, dest, payload, held);
        }
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
        Ok(SendRequest { done })
    }

    // ------------------------------------------------------------- receives

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
        let shared = &self.engine.shared;
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
        if self.engine.shared.is_shutting_down() {
            return Err(BridgeError::EngineShutDown);
        }
        let done = Completion::new(Arc::clone(&self.engine.shared.any));
        let id = self.engine.shared.next_seq();
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

    /// Blocking receive into `buf` (zero-copy when the receive is posted before the message arrives).
    pub fn recv_bytes_into(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        buf: &mut [u8],
    ) -> Result<Status> {
        self.recv_bytes_into_impl(source, tag, expected_sig, buf, None)
    }

    /// [`InterComm::recv_bytes_into`] with an upper bound; on timeout nothing is consumed.
    pub fn recv_bytes_into_timeout(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<Status> {
        self.recv_bytes_into_impl(source, tag, expected_sig, buf, Some(timeout))
    }

    fn recv_bytes_into_impl(
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
                let r = match self.engine.shared.wait_from(
                    peer.or_else(|| self.peer_of(source)),
                    &done,
                    deadline_of(timeout),
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

    /// Blocking receive of a message of at most `max_bytes`; returns its bytes.
    pub fn recv_bytes(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, Status)> {
        self.irecv_bytes(source, tag, expected_sig, max_bytes)?
            .wait()
    }

    /// [`InterComm::recv_bytes`] with an upper bound; on timeout nothing is consumed.
    pub fn recv_bytes_timeout(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<(Vec<u8>, Status)> {
        self.irecv_bytes(source, tag, expected_sig, max_bytes)?
            .wait_timeout(timeout)
    }

    /// Non-blocking receive of a message of at most `max_bytes`.
    pub fn irecv_bytes(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        max_bytes: usize,
    ) -> Result<RecvRequest> {
        match self.post(source, tag, expected_sig, Target::Owned { max_bytes })? {
            PostOutcome::Immediate(r) => {
                let done = Completion::new(Arc::clone(&self.engine.shared.any));
                done.complete(r);
                Ok(RecvRequest {
                    done,
                    ctx: Arc::clone(&self.ctx),
                    id: 0,
                    via: None,
                })
            }
            PostOutcome::Posted { id, done, peer } => {
                let progress: Arc<dyn RecvProgress> = self.engine.shared.clone();
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

    // --------------------------------------------------------------- probes

    /// Non-blocking probe: status of the first matching unexpected message, without consuming it.
    pub fn iprobe(&self, source: Source, tag: Tag) -> Result<Option<Status>> {
        self.check_source(source)?;
        Self::check_recv_tag(tag)?;
        let st = lock(&self.ctx.state);
        if let Some(s) = st.peek_unexpected(source, tag) {
            return Ok(Some(s));
        }
        match st.failure_for(source) {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Blocking probe.
    pub fn probe(&self, source: Source, tag: Tag) -> Result<Status> {
        self.probe_impl(source, tag, None)
    }

    /// Blocking probe with an upper bound.
    pub fn probe_timeout(&self, source: Source, tag: Tag, timeout: Duration) -> Result<Status> {
        self.probe_impl(source, tag, Some(timeout))
    }

    fn probe_impl(&self, source: Source, tag: Tag, timeout: Option<Duration>) -> Result<Status> {
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
            if self.engine.shared.is_shutting_down() {
                return Err(BridgeError::EngineShutDown);
            }
            let (g, timed_out) = cv_wait(&self.ctx.arrived, st, deadline);
            st = g;
            if timed_out && st.peek_unexpected(source, tag).is_none() {
                return Err(timeout_err(timeout));
            }
        }
    }

    // ---------------------------------------------------------- typed layer

    /// Typed blocking send.
    pub fn send<T: WireType>(&self, dest: u32, tag: i32, buf: &[T]) -> Result<()> {
        self.send_bytes(
            dest,
            tag,
            &T::type_sig()?,
            buf.len() as u64,
            &T::encode(buf)?,
        )
    }

    /// Typed synchronous send.
    pub fn ssend<T: WireType>(&self, dest: u32, tag: i32, buf: &[T]) -> Result<()> {
        self.ssend_bytes(
            dest,
            tag,
            &T::type_sig()?,
            buf.len() as u64,
            &T::encode(buf)?,
        )
    }

    /// Typed synchronous send with an upper bound on the wait for the match.
    pub fn ssend_timeout<T: WireType>(
        &self,
        dest: u32,
        tag: i32,
        buf: &[T],
        timeout: Duration,
    ) -> Result<()> {
        self.ssend_bytes_timeout(
            dest,
            tag,
            &T::type_sig()?,
            buf.len() as u64,
            &T::encode(buf)?,
            timeout,
        )
    }

    /// Typed non-blocking send. Written from the caller's memory when the
    /// connection is idle; otherwise the data are copied into the request.
    pub fn isend<T: WireType>(&self, dest: u32, tag: i32, buf: &[T]) -> Result<SendRequest> {
        self.isend_cow(
            dest,
            tag,
            &T::type_sig()?,
            buf.len() as u64,
            T::encode(buf)?,
        )
    }

    /// Typed non-blocking synchronous send.
    pub fn issend<T: WireType>(&self, dest: u32, tag: i32, buf: &[T]) -> Result<SendRequest> {
        self.issend_bytes(
            dest,
            tag,
            &T::type_sig()?,
            buf.len() as u64,
            T::encode(buf)?.into_owned(),
        )
    }

    /// Typed blocking receive into `buf`; `Status::count` says how many elements arrived.
    pub fn recv<T: WireType>(&self, source: Source, tag: Tag, buf: &mut [T]) -> Result<Status> {
        self.recv_typed(source, tag, buf, None)
    }

    /// Typed blocking receive with an upper bound.
    pub fn recv_timeout<T: WireType>(
        &self,
        source: Source,
        tag: Tag,
        buf: &mut [T],
        timeout: Duration,
    ) -> Result<Status> {
        self.recv_typed(source, tag, buf, Some(timeout))
    }

    fn recv_typed<T: WireType>(
        &self,
        source: Source,
        tag: Tag,
        buf: &mut [T],
        timeout: Option<Duration>,
    ) -> Result<Status> {
        let sig = T::type_sig()?;
        let capacity = buf.len().saturating_mul(sig.elem_size);
        if let Some(bytes) = T::wire_bytes_mut(buf) {
            let st = self.recv_bytes_into_impl(source, tag, Some(sig.signature), bytes, timeout)?;
            if st.format != sig.format {
                // Rare foreign-format message: convert in place through a copy.
                let copy = bytes[..st.bytes as usize].to_vec();
                T::decode_into(st.format, &copy, buf)?;
            }
            return Ok(st);
        }
        let (bytes, st) = match timeout {
            None => self.recv_bytes(source, tag, Some(sig.signature), capacity)?,
            Some(t) => self.recv_bytes_timeout(source, tag, Some(sig.signature), capacity, t)?,
        };
        T::decode_into(st.format, &bytes, buf)?;
        Ok(st)
    }

    /// Sends any rsmpi buffer, e.g. a `View` of a `UserDatatype` such as a
    /// strided vector: the data travel as external32 (or raw bytes when the
    /// datatype is a contiguous basic type).
    pub fn send_buffer<B: mpi::datatype::Buffer + ?Sized>(
        &self,
        dest: u32,
        tag: i32,
        buf: &B,
    ) -> Result<()> {
        let enc = datatype::encode_buffer(buf)?;
        let elem_size = enc.bytes.len().checked_div(enc.count).unwrap_or(0);
        let sig = TypeSig {
            signature: enc.signature,
            format: enc.format,
            elem_size,
        };
        self.send_bytes(dest, tag, &sig, enc.count as u64, &enc.bytes)
    }

    /// Receives into any rsmpi buffer (e.g. a `MutView` of a strided vector);
    /// the sender's element type signature must equal the buffer's.
    pub fn recv_buffer<B: mpi::datatype::BufferMut + ?Sized>(
        &self,
        source: Source,
        tag: Tag,
        buf: &mut B,
    ) -> Result<Status> {
        use mpi::raw::AsRaw;
        let info = datatype::datatype_info(buf.as_datatype().as_raw())?;
        let capacity = usize::try_from(buf.count()).unwrap_or(0);
        let max_bytes = [WireFormat::External32, WireFormat::native()]
            .iter()
            .filter_map(|f| info.payload_len(*f, capacity).ok())
            .max()
            .unwrap_or(0);
        let (bytes, st) = self.recv_bytes(source, tag, Some(info.signature), max_bytes)?;
        let sig = datatype::MessageSig {
            signature: st.signature,
            count: st.count,
            root_signature: 0,
            root_reps: 0,
        };
        datatype::decode_into_buffer(
            &sig,
            st.format,
            &bytes,
            buf,
            datatype::MatchRule::ExactElement,
        )?;
        Ok(st)
    }

    /// Typed non-blocking receive into `buf`.
    pub fn irecv<'a, T: WireType>(
        &self,
        source: Source,
        tag: Tag,
        buf: &'a mut [T],
    ) -> Result<TypedRecvRequest<'a, T>> {
        let sig = T::type_sig()?;
        let inner = self.irecv_bytes(
            source,
            tag,
            Some(sig.signature),
            buf.len().saturating_mul(sig.elem_size),
        )?;
        Ok(TypedRecvRequest { inner, out: buf })
    }
}

enum PostOutcome {
    Immediate(Result<RecvOutcome>),
    Posted {
        id: u64,
        done: Arc<Completion<RecvOutcome>>,
        /// The process the message comes from, when already known (a matched announcement).
        peer: Option<Uuid>,
    },
}

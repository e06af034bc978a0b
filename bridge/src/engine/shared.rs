//! [`Shared`]: the engine's state, shared with its threads and intercomms,
//! and the engine's answers to what connections report (a message arrived,
//! a SYNC_ACK arrived, a peer left or was lost). It composes the tables
//! (connections, contexts, failures, synchronous sends) and does the
//! bookkeeping that spans several of them; the tables know nothing of each other.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};
use uuid::Uuid;

use crate::admission::Admission;
use crate::completion::{AnyNotifier, Completion};
use crate::connections::Connections;
use crate::contexts::ContextTable;
use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::failures::FailureSet;
use crate::frame::{discard_payload, FrameHeader, FrameKind};
use crate::handshake::Identity;
use crate::incoming::{FrameHandler, FrameReader, InConn};
use crate::matching::{Ctx, RecvOutcome};
use crate::outgoing::{OutConn, PeerLost, Queued};
use crate::request::RecvProgress;
use crate::ssend_waiters::SsendWaiters;
use crate::sync::lock;
use crate::transport::{self, Stream};

/// Engine state shared with the engine's threads.
pub(crate) struct Shared {
    pub(crate) endpoint: Endpoint,
    /// Our key pair: proves who we are in handshakes; never leaves the process.
    identity: Identity,
    /// Keys of the processes that may connect to us.
    pub(crate) admission: Admission,
    admission_timeout: Duration,
    shutting_down: AtomicBool,
    next_seq: AtomicU64,
    pub(crate) any: Arc<AnyNotifier>,
    pub(crate) conns: Connections,
    pub(crate) contexts: ContextTable,
    pub(crate) failures: FailureSet,
    pub(crate) ssends: SsendWaiters,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .map_err(|e| BridgeError::io(format!("spawning thread {name}"), e))
}

impl Shared {
    pub(crate) fn new(endpoint: Endpoint, identity: Identity, admission_timeout: Duration) -> Self {
        Shared {
            endpoint,
            identity,
            admission: Admission::default(),
            admission_timeout,
            shutting_down: AtomicBool::new(false),
            next_seq: AtomicU64::new(1),
            any: Arc::new(AnyNotifier::default()),
            conns: Connections::default(),
            contexts: ContextTable::default(),
            failures: FailureSet::default(),
            ssends: SsendWaiters::default(),
            threads: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Set the shutdown flag; false if it already was set.
    pub(crate) fn begin_shutdown(&self) -> bool {
        !self.shutting_down.swap(true, Ordering::SeqCst)
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn add_threads(&self, handles: impl IntoIterator<Item = JoinHandle<()>>) {
        lock(&self.threads).extend(handles);
    }

    pub(crate) fn take_threads(&self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut *lock(&self.threads))
    }

    /// Serve an accepted connection on a reader thread of its own.
    pub(crate) fn spawn_reader(self: &Arc<Self>, s: Stream, addr: Option<SocketAddr>) {
        let me = Arc::clone(self);
        let via = addr
            .map(|a| a.to_string())
            .unwrap_or_else(|| "unix socket".into());
        match spawn("bridge-reader", move || me.serve(s, via)) {
            Ok(h) => self.add_threads([h]),
            Err(e) => warn!(error = %e, "cannot start a reader thread; connection dropped"),
        }
    }

    /// Reader thread body: handshake, register, then background reading.
    /// Until the handshake proved who the connector is, nothing it sends or
    /// does (closing included) touches any peer's state.
    fn serve(self: Arc<Self>, mut stream: Stream, via: String) {
        let deadline = Instant::now() + self.admission_timeout;
        let Some(peer) = transport::accept_handshake(&self.identity, &mut stream, &via, |p| {
            self.admission.key_of(p, deadline)
        }) else {
            stream.shutdown();
            return;
        };
        debug!(%peer, %via, "accepted data connection");
        if let Ok(h) = stream.try_clone() {
            self.conns.add_accepted(peer, h);
        }
        let conn = match InConn::new(peer, stream) {
            Ok(c) => c,
            Err(e) => {
                warn!(%peer, error = %e, "cannot create an eventfd; dropping the data connection");
                self.peer_failed(peer, &format!("cannot serve its connection: {e}"));
                return;
            }
        };
        self.conns.add_incoming(Arc::clone(&conn));
        conn.background(self);
    }

    /// Block until `done` completes (None on timeout). If what completes it can
    /// only come from `peer`, read that peer's connection from this thread
    /// (leader/follower, see `incoming`); otherwise wait for the background readers.
    pub(crate) fn wait_from<T>(
        self: &Arc<Self>,
        peer: Option<Uuid>,
        done: &Completion<T>,
        deadline: Option<Instant>,
    ) -> Option<Result<T>> {
        match peer.and_then(|p| self.conns.incoming(p)) {
            Some(c) => c.wait_reading(self, done, deadline),
            None => done.wait_until(deadline),
        }
    }

    /// The outgoing connection to `ep`, opened (with handshake) on first use.
    pub(crate) fn conn(self: &Arc<Self>, ep: &Endpoint, rank: u32) -> Result<Arc<OutConn>> {
        if self.is_shutting_down() {
            return Err(BridgeError::EngineShutDown);
        }
        if let Some(reason) = self.failures.reason(ep.process) {
            return Err(BridgeError::PeerFailed { rank, reason });
        }
        let slot = self.conns.out_slot(ep.process);
        let mut guard = lock(&slot);
        if let Some(c) = guard.as_ref() {
            return Ok(Arc::clone(c));
        }
        let stream = transport::connect(&self.endpoint, &self.identity, ep)?;
        let conn = OutConn::new(ep.process, stream)
            .map_err(|e| BridgeError::io("cloning a socket handle", e))?;
        let (c2, me) = (Arc::clone(&conn), Arc::clone(self));
        let h = spawn("bridge-writer", move || c2.writer_loop(me))?;
        self.add_threads([h]);
        *guard = Some(Arc::clone(&conn));
        debug!(peer = %ep.process, "opened data connection");
        // A failure or shutdown may have been recorded while we connected.
        if let Some(reason) = self.failures.reason(ep.process) {
            conn.fail(&reason);
        }
        if self.is_shutting_down() {
            conn.close();
        }
        Ok(conn)
    }

    /// An intercomm was dropped: unregister its context and fail its pending receives.
    pub(crate) fn retire_context(&self, ctx: &Arc<Ctx>) {
        self.contexts.retire(ctx);
        ctx.retire();
        // Receivers of this context blocked reading a socket must see their completion.
        self.conns.wake_all_readers();
    }

    /// Tell the sender of a matched SYNC_EAGER that its ssend may complete.
    pub(crate) fn send_sync_ack(self: &Arc<Self>, ctx: &Ctx, hdr: &FrameHeader) {
        let Some(ep) = ctx.remote_endpoint(hdr.source) else {
            warn!(
                context = ctx.id,
                source = hdr.source,
                "cannot acknowledge a synchronous send: unknown source rank"
            );
            return;
        };
        let ack = FrameHeader::control(FrameKind::SyncAck, hdr.context, hdr.seq);
        let r = self.conn(&ep, hdr.source).and_then(|c| {
            c.enqueue(Queued {
                hdr: ack,
                payload: Vec::new(),
                dest_rank: hdr.source,
                done: None,
            })
        });
        if let Err(e) = r {
            debug!(error = %e, "could not send SYNC_ACK");
        }
    }

    /// Record a failed peer and fail everything that depends on it.
    pub(crate) fn peer_failed(&self, process: Uuid, reason: &str) {
        self.peer_gone(process, reason, false)
    }

    /// A peer is gone: failed (`orderly` false) or said goodbye (BYE).
    /// Nothing more can come from it; a goodbye, unlike a failure, does not
    /// fail ANY_SOURCE operations while other remote ranks may still send.
    fn peer_gone(&self, process: Uuid, reason: &str, orderly: bool) {
        if !self.failures.record(process, reason, orderly) {
            return;
        }
        if !self.is_shutting_down() {
            info!(peer = %process, reason, "peer failed");
        }
        if let Some(c) = self.conns.outgoing(process) {
            c.fail(reason);
        }
        for c in self.contexts.live() {
            c.process_gone(process, reason, orderly);
        }
        self.ssends.peer_gone(process, reason);
        // Threads blocked reading the failed peer's socket must see their failed completions.
        if let Some(c) = self.conns.incoming(process) {
            c.wake();
        }
    }
}

impl PeerLost for Shared {
    fn peer_lost(&self, peer: Uuid, reason: &str) {
        self.peer_failed(peer, reason)
    }
}

impl FrameHandler for Shared {
    fn is_shutting_down(&self) -> bool {
        Shared::is_shutting_down(self)
    }

    fn message(self: &Arc<Self>, peer: Uuid, hdr: FrameHeader, rd: &mut FrameReader) -> Result<()> {
        let Some(ctx) = self
            .contexts
            .for_incoming(hdr.context, || self.is_shutting_down())
        else {
            debug!(%peer, context = hdr.context, bytes = hdr.payload_len, "message for a dropped context; discarding");
            return discard_payload(rd, hdr.payload_len).map_err(|e| BridgeError::PeerFailed {
                rank: hdr.source,
                reason: format!("receiving a message failed: {e}"),
            });
        };
        let matched = ctx.deliver(hdr, rd)?;
        if matched && hdr.kind == FrameKind::SyncEager {
            self.send_sync_ack(&ctx, &hdr);
        }
        Ok(())
    }

    fn sync_ack(&self, peer: Uuid, seq: u64) {
        self.ssends.acked(peer, seq)
    }

    fn peer_departed(&self, peer: Uuid, reason: &str) {
        self.peer_gone(peer, reason, true)
    }
}

impl RecvProgress for Shared {
    fn wait_recv(
        self: Arc<Self>,
        peer: Option<Uuid>,
        done: &Completion<RecvOutcome>,
        deadline: Option<Instant>,
    ) -> Option<Result<RecvOutcome>> {
        self.wait_from(peer, done, deadline)
    }
}

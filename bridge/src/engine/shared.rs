//! [`Shared`]: the engine's state, shared with its threads and intercomms,
//! and the engine's answers to what connections report (a message, an
//! announcement or a payload arrived, a SYNC_ACK, CTS or CREDIT arrived, a
//! peer left or was lost). It composes the tables (connections, contexts,
//! failures, synchronous sends, rendezvous, the credit ledger) and does the
//! bookkeeping that spans several of them; the tables know nothing of each other.

use std::collections::HashMap;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};
use uuid::Uuid;

use super::push::{self, PushCounts};
use crate::admission::{Admission, Arrival, Source};
use crate::completion::{AnyNotifier, Completion};
use crate::connections::Connections;
use crate::contexts::{ContextTable, Destination};
use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::failures::FailureSet;
use crate::frame::{
    discard_payload, read_payload_vec, FrameHeader, FrameKind, SINGLE_COPY, SINGLE_COPY_TRAILER,
};
use crate::handshake::Identity;
use crate::held::SendBudget;
use crate::ledger::{Ledger, FRAME_COST, MAX_UNEXPECTED_RTS};
use crate::matching::{
    check_match, read_into, status_of, Arrived, Ctx, Delivery, PostedRecv, RecvOutcome, Target,
};
use crate::payload::Payload;
use crate::rendezvous::{Landing, PendingData, Rendezvous, SingleCopyOffer};
use crate::request::{RecvProgress, SendProgress};
use crate::ssend_waiters::SsendWaiters;
use crate::sync::lock;

/// What a process does when a peer's program aborts: called with the peer
/// and the program's error code, on the thread that read the frame.
pub type AbortHandler = Arc<dyn Fn(Uuid, i32) + Send + Sync>;
use crate::transport::{
    self, FrameHandler, FrameReader, InConn, Link, OutConn, PeerLost, PeerMemory, Poller, Queued,
    ReadError, SingleCopyCounts, Stream,
};

/// The protocol limits of an engine (see `EngineConfig`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub eager_limit: usize,
    /// At least `eager_limit`.
    pub large_eager_limit: usize,
    pub admission_timeout: Duration,
    pub handshake_timeout: Duration,
    pub early_context_age: Duration,
    pub finalize_timeout: Duration,
    /// What carries frames to processes of this host (`ISTHMUS_TRANSPORT`).
    pub local_transport: transport::LocalTransport,
    /// The smallest message moved by single copy on shared memory; None: off.
    pub single_copy: Option<usize>,
    /// Offer TCP connections we open to carry the peer's frames too.
    pub tcp_duplex: bool,
}

/// What an orderly shutdown could not deliver to one peer process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undelivered {
    /// The peer process.
    pub process: Uuid,
    /// Frames still queued on our connection to it (messages, announcements, payloads).
    pub queued: usize,
    /// Announced messages its receives have not matched yet.
    pub unmatched: usize,
    /// Why they stay undelivered: the deadline passed, or the peer failed.
    pub reason: String,
}

impl std::fmt::Display for Undelivered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "undelivered to process {}: {} queued frames, {} messages its receives never matched ({})",
            self.process, self.queued, self.unmatched, self.reason
        )
    }
}

/// How often [`Shared::flush`] looks at the queues again. Shutdown only:
/// polling three tables beats threading a wake-up through all of them.
const FLUSH_POLL: Duration = Duration::from_millis(2);

/// Engine state shared with the engine's threads.
pub(crate) struct Shared {
    pub(crate) endpoint: Endpoint,
    /// Our key pair: proves who we are in handshakes; never leaves the process.
    pub(crate) identity: Identity,
    /// Keys of the processes that may connect to us, and the connections
    /// not admitted yet (counted per source; served by the lobby thread).
    pub(crate) admission: Admission,
    pub(crate) limits: Limits,
    shutting_down: AtomicBool,
    next_seq: AtomicU64,
    pub(crate) any: Arc<AnyNotifier>,
    pub(crate) conns: Connections,
    pub(crate) contexts: ContextTable,
    pub(crate) failures: FailureSet,
    pub(crate) ssends: SsendWaiters,
    pub(crate) rendezvous: Rendezvous,
    pub(crate) ledger: Ledger,
    /// What this process holds for its unreceived messages, against a bound.
    pub(crate) budget: Arc<SendBudget>,
    pub(crate) poller: Arc<Poller>,
    /// Endpoints of the processes of every remote group we were given (for control frames).
    peers: Mutex<HashMap<Uuid, Endpoint>>,
    /// Control frames for processes whose endpoint we do not know yet (a
    /// message for a context nobody registered); sent once we learn it.
    owed: Mutex<HashMap<Uuid, Vec<FrameHeader>>>,
    /// Messages lost with peers that failed or left before taking them
    /// (reported by the shutdown's flush).
    lost: Mutex<Vec<Undelivered>>,
    /// What to do when a peer's program aborts (an ABORT frame).
    pub(crate) on_abort: Mutex<Option<AbortHandler>>,
    /// Messages moved by single copy, both ways (`Engine::single_copy_stats`).
    pub(crate) single_copies: SingleCopyCounts,
    /// Rendezvous payloads pushed on returned credit (`push`).
    pub(crate) pushes: PushCounts,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .map_err(|e| BridgeError::io(format!("spawning thread {name}"), e))
}

impl Shared {
    pub(crate) fn new(
        endpoint: Endpoint,
        identity: Identity,
        limits: Limits,
        ledger: Ledger,
        budget: Arc<SendBudget>,
        poller: Arc<Poller>,
        admission: Admission,
    ) -> Self {
        Shared {
            endpoint,
            identity,
            admission,
            limits,
            shutting_down: AtomicBool::new(false),
            next_seq: AtomicU64::new(1),
            any: Arc::new(AnyNotifier::default()),
            conns: Connections::default(),
            contexts: ContextTable::default(),
            failures: FailureSet::default(),
            ssends: SsendWaiters::default(),
            rendezvous: Rendezvous::default(),
            ledger,
            budget,
            poller,
            peers: Mutex::new(HashMap::new()),
            owed: Mutex::new(HashMap::new()),
            lost: Mutex::new(Vec::new()),
            on_abort: Mutex::new(None),
            single_copies: SingleCopyCounts::default(),
            pushes: PushCounts::default(),
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

    /// Per live peer with something left to deliver: frames queued on our
    /// connection to it, announced sends waiting for its CTS.
    fn backlog(&self) -> HashMap<Uuid, (usize, usize)> {
        let mut left: HashMap<Uuid, (usize, usize)> = HashMap::new();
        for (peer, n) in self.rendezvous.unmatched_by_peer() {
            left.entry(peer).or_default().1 = n;
        }
        for c in self.conns.all_outgoing() {
            match c.backlog() {
                Some(0) => {}
                Some(n) => left.entry(c.peer).or_default().0 = n,
                // A failed connection writes nothing more; its peer's
                // failure fails (and removes) its pending sends.
                None => {}
            }
        }
        left
    }

    /// The flush of an orderly shutdown (see `Engine::flush`): wait until no
    /// live peer has anything left to take from us, or `deadline`. Returns
    /// what is left, and what was lost with peers that failed or left
    /// before taking it (meanwhile or earlier).
    pub(crate) fn flush(&self, deadline: Instant) -> Vec<Undelivered> {
        loop {
            let mut left = self.backlog();
            // A peer that died with no connection of its own to us is seen
            // only on ours (no vmd may report it: engines run without one).
            for peer in left.keys() {
                if let Some(c) = self.conns.outgoing(*peer) {
                    if c.peer_closed() {
                        self.peer_failed(
                            *peer,
                            "connection lost without BYE: the peer closed our data connection \
                             before taking what we sent",
                        );
                    }
                }
            }
            // A gone peer takes nothing more; what it did not take was
            // recorded as lost when it went (`peer_gone`).
            left.retain(|p, _| self.failures.reason(*p).is_none());
            let now = Instant::now();
            if left.is_empty() || now >= deadline {
                let mut report = std::mem::take(&mut *lock(&self.lost));
                let secs = self.limits.finalize_timeout.as_secs_f64();
                report.extend(left.into_iter().map(|(process, (queued, unmatched))| {
                    Undelivered {
                        process,
                        queued,
                        unmatched,
                        reason: format!(
                            "not taken within the finalize deadline (ISTHMUS_FINALIZE_TIMEOUT, {secs} s)"
                        ),
                    }
                }));
                return report;
            }
            std::thread::sleep(FLUSH_POLL.min(deadline - now));
        }
    }

    /// Remember how to reach the processes of a remote group, and send
    /// them what we owed them meanwhile.
    pub(crate) fn learn_peers(self: &Arc<Self>, remote: &[Endpoint]) {
        // Peers, then owed (as in `send_control`): a frame is either owed
        // before the endpoint is known, and taken here, or sent directly.
        let mut m = lock(&self.peers);
        for e in remote {
            m.entry(e.process).or_insert_with(|| e.clone());
        }
        let owed: Vec<(Uuid, Vec<FrameHeader>)> = {
            let mut o = lock(&self.owed);
            remote
                .iter()
                .filter_map(|e| o.remove(&e.process).map(|q| (e.process, q)))
                .collect()
        };
        drop(m);
        for (peer, frames) in owed {
            for hdr in frames {
                if let Err(err) = self.send_control(peer, hdr) {
                    debug!(%peer, error = %err, "could not send an owed control frame");
                }
            }
        }
    }

    /// An accepted connection: into the lobby (see `lobby`), unless its
    /// source or the lobby is full — then it is closed at once.
    pub(crate) fn accepted(self: &Arc<Self>, s: Stream, addr: Option<SocketAddr>) {
        let via = addr
            .map(|a| a.to_string())
            .unwrap_or_else(|| "unix socket".into());
        let source = Source::of(&s, addr);
        let arrival = Arrival {
            stream: s,
            source,
            via,
            at: Instant::now(),
        };
        if let Err((a, reason)) = self.admission.arrive(arrival) {
            warn!(via = %a.via, source = %a.source, %reason, "refusing data connection");
            a.stream.shutdown();
        }
    }

    /// An admitted connection (handshake checked, grant sent, blocking
    /// socket; see `transport::accepted`): the poller serves it from now on.
    pub(crate) fn serve(self: &Arc<Self>, peer: Uuid, rd: FrameReader) {
        let conn = match InConn::new(peer, rd, Arc::clone(&self.poller)) {
            Ok(c) => c,
            Err(e) => {
                warn!(%peer, error = %e, "cannot create an eventfd; dropping the data connection");
                self.ledger.close(peer);
                self.peer_failed(peer, &format!("cannot serve its connection: {e}"));
                return;
            }
        };
        if self.is_shutting_down() {
            self.ledger.close(peer);
            return;
        }
        self.conns.add_incoming(Arc::clone(&conn));
        conn.watch(self);
    }

    /// Block until `done` completes (None on timeout). If what completes it can
    /// only come from `peer`, read that peer's connection from this thread
    /// (leader/follower, see `transport::incoming`); otherwise wait for the poller.
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

    /// A nonblocking send to `peer` waits for a frame from it (CTS, credit,
    /// SYNC_ACK) that no application thread will read: have the poller
    /// read that connection now (`InConn::watch_now`).
    pub(crate) fn watch_replies(&self, peer: Uuid) {
        if let Some(c) = self.conns.incoming(peer) {
            c.watch_now();
        }
    }

    /// Push what credit now allows of the sends to `peer` (see `push`).
    pub(crate) fn push_pending(&self, peer: Uuid, conn: &dyn Link) {
        push::push_pending(&self.rendezvous, conn, peer, &self.pushes);
    }

    /// The link to `ep` for the point-to-point layer: whatever transport
    /// carries it (see [`Shared::conn`]).
    pub(crate) fn link(self: &Arc<Self>, ep: &Endpoint, rank: u32) -> Result<Arc<dyn Link>> {
        Ok(self.conn(ep, rank)?)
    }

    /// The outgoing connection to `ep`, opened (with handshake, see
    /// `transport::dial`) on first use.
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
        if let Some(conn) = self.reverse_conn(ep.process)? {
            *guard = Some(Arc::clone(&conn));
            return Ok(conn);
        }
        let transport::Dialed {
            conn,
            credit,
            grant_reader,
            reverse,
        } = transport::dial(
            &self.endpoint,
            &self.identity,
            ep,
            self.limits.handshake_timeout,
            self.limits.local_transport,
            self.limits.single_copy,
            self.limits.tcp_duplex,
        )?;
        if let Some(stream) = reverse {
            self.offer_duplex(&conn, stream, rank)?;
        }
        let route = &conn.route();
        info!(
            peer = %ep.process,
            rank,
            transport = %route.transport,
            shared_memory = route.shared_memory,
            local = %route.local,
            remote = %route.remote,
            "data connection open"
        );
        self.start_writer(&conn, grant_reader)?;
        *guard = Some(Arc::clone(&conn));
        debug!(peer = %ep.process, credit, "opened data connection");
        Ok(conn)
    }

    /// Start `conn`'s writer thread (which first reads the peer's grant
    /// from `grant_reader` when it follows), then apply a failure or a
    /// shutdown recorded while the connection was being opened (the
    /// caller holds its slot, so later ones find it there).
    fn start_writer(
        self: &Arc<Self>,
        conn: &Arc<OutConn>,
        grant_reader: Option<Stream>,
    ) -> Result<()> {
        let grant_deadline =
            Instant::now() + self.limits.admission_timeout + self.limits.handshake_timeout;
        let (c2, me) = (Arc::clone(conn), Arc::clone(self));
        let h = spawn("bridge-writer", move || {
            let granted = match grant_reader {
                Some(reader) => c2.await_grant(reader, grant_deadline, &*me),
                None => true,
            };
            if granted {
                c2.writer_loop(me)
            }
        })?;
        self.add_threads([h]);
        if let Some(reason) = self.failures.reason(conn.peer) {
            let _ = conn.fail(&reason);
        }
        if self.is_shutting_down() {
            conn.close();
        }
        Ok(())
    }

    /// Our outgoing connection to `peer` on the connection it opened to
    /// us, if it offered that (DUPLEX, see `transport::duplex`); its
    /// writer thread started. None: dial.
    fn reverse_conn(self: &Arc<Self>, peer: Uuid) -> Result<Option<Arc<OutConn>>> {
        if !self.limits.tcp_duplex {
            return Ok(None);
        }
        let Some((stream, window)) = self
            .conns
            .incoming(peer)
            .and_then(|c| c.take_duplex_offer())
        else {
            return Ok(None);
        };
        let conn = transport::reversed(peer, stream, window, self.limits.finalize_timeout)
            .map_err(|e| BridgeError::io("cloning a socket handle", e))?;
        let route = conn.route();
        info!(%peer, transport = "tcp", local = %route.local, remote = %route.remote,
            "data connection open (the peer's, both ways)");
        self.start_writer(&conn, None)?;
        Ok(Some(conn))
    }

    /// Offer `peer` (`conn`'s) to write to us on the TCP connection we just
    /// opened to it: DUPLEX, its first frame, with the window we grant
    /// there, and a reader of `stream` (a clone) watched by the poller.
    /// If the peer has a window here already (it connected to us too, at
    /// once), the offer grants nothing: its window moves with it if it
    /// moves to our connection (MOVED, see `transport::duplex`).
    fn offer_duplex(self: &Arc<Self>, conn: &OutConn, stream: Stream, rank: u32) -> Result<()> {
        let peer = conn.peer;
        let opened = self.ledger.open_duplex(peer);
        let window = opened.unwrap_or(0);
        if let Err(e) = conn.write_blocking(&**self, &FrameHeader::duplex(window), &[], rank) {
            if opened.is_some() {
                self.ledger.close_duplex(peer);
            }
            return Err(e);
        }
        let reader = match InConn::new_reverse(
            peer,
            transport::reverse_reader(stream),
            Arc::clone(&self.poller),
        ) {
            Ok(r) => r,
            Err(e) => {
                // The peer may write to us on it and nobody would read:
                // this connection cannot be used.
                if opened.is_some() {
                    self.ledger.close_duplex(peer);
                }
                let reason = format!("cannot read our connection to it: {e}");
                conn.fail(&reason);
                return Err(BridgeError::io("creating an eventfd", e));
            }
        };
        // The peer may write on it: our goodbye must not reset it (see `duplex`).
        conn.offered_duplex(self.limits.finalize_timeout);
        self.conns.add_offered(Arc::clone(&reader));
        reader.watch(self);
        Ok(())
    }

    /// Queue a control frame (SYNC_ACK, CTS, CREDIT) for process `peer`;
    /// kept (at most MAX_UNEXPECTED_RTS per peer) until we learn its endpoint.
    fn send_control(self: &Arc<Self>, peer: Uuid, hdr: FrameHeader) -> Result<()> {
        let peers = lock(&self.peers);
        let Some(ep) = peers.get(&peer).cloned() else {
            // Still holding `peers`: `learn_peers` cannot slip in between.
            let mut owed = lock(&self.owed);
            let q = owed.entry(peer).or_default();
            if q.len() >= MAX_UNEXPECTED_RTS as usize {
                return Err(BridgeError::Protocol(format!(
                    "too many control frames owed to process {peer}, whose endpoint is unknown"
                )));
            }
            q.push(hdr);
            return Ok(());
        };
        drop(peers);
        let conn = self.conn(&ep, 0)?;
        self.write_control(&conn, hdr, 0)
    }

    /// A control frame to the peer of `conn` (`dest_rank` names it in
    /// errors): written by this thread if nothing is ahead of it and the
    /// byte path takes it at once, else by the connection's writer.
    fn write_control(&self, conn: &OutConn, hdr: FrameHeader, dest_rank: u32) -> Result<()> {
        if conn.try_control_now(self, &hdr)? {
            return Ok(());
        }
        conn.enqueue(Queued {
            hdr,
            payload: Payload::none(),
            dest_rank,
            done: None,
            held: None,
        })
    }

    /// An eager message from `peer` holding `cost` bytes of its credit was consumed.
    pub(crate) fn release(self: &Arc<Self>, peer: Uuid, cost: u64) {
        if let Some(bytes) = self.ledger.release(peer, cost) {
            self.send_credit(peer, bytes);
        }
    }

    /// We matched an announcement from `peer`: grow its window if it
    /// lacked credit (see `ledger`), and grant the difference now.
    fn grow_window(self: &Arc<Self>, peer: Uuid) {
        if let Some(bytes) = self.ledger.grow(peer) {
            debug!(%peer, bytes, "window grown for a streaming peer");
            self.send_credit(peer, bytes);
        }
    }

    /// A CREDIT frame of `bytes` to `peer`; owed in the ledger if it cannot go.
    fn send_credit(self: &Arc<Self>, peer: Uuid, bytes: u64) {
        if let Err(e) = self.send_control(peer, FrameHeader::credit(bytes)) {
            debug!(%peer, error = %e, "could not send eager credit");
            self.ledger.unsent(peer, bytes);
        }
    }

    /// A receive matched the rendezvous announcement `rts` from `peer`:
    /// wait for its DATA (or discard it if the match failed) and send CTS.
    pub(crate) fn rts_matched(self: &Arc<Self>, peer: Uuid, rts: FrameHeader, p: PostedRecv) {
        if let Some(reason) = self.failures.reason(peer) {
            self.rendezvous.take_offer(peer, rts.seq);
            p.done.complete(Err(BridgeError::PeerFailed {
                rank: rts.source,
                reason,
            }));
            return;
        }
        self.grow_window(peer);
        let recv = match check_match(p.expected, p.target.capacity(), &rts) {
            Ok(()) => Some(p),
            Err(e) => {
                // MPI consumes a message that failed to match: its payload is discarded.
                p.done.complete(Err(e));
                None
            }
        };
        self.await_data(peer, rts, recv);
    }

    fn await_data(self: &Arc<Self>, peer: Uuid, rts: FrameHeader, recv: Option<PostedRecv>) {
        let offer = if rts.single_copy() {
            self.rendezvous.take_offer(peer, rts.seq)
        } else {
            None
        };
        let recv = match offer {
            Some(offer) => match self.read_offer(peer, &rts, offer, recv) {
                None => return,
                Some(recv) => recv,
            },
            None => recv,
        };
        let early = self.rendezvous.add_recv(
            peer,
            rts.seq,
            PendingData {
                len: rts.payload_len,
                status: status_of(&rts),
                recv,
            },
        );
        if let Some((d, early)) = early {
            // Its DATA was pushed and came while this receive took the
            // announcement (see `push`): done, the CTS only ends it.
            push::fill(d, early.payload);
            self.release(peer, early.cost);
        }
        let cts = FrameHeader::control(FrameKind::Cts, rts.context, rts.seq);
        if let Err(e) = self.send_control(peer, cts) {
            debug!(%peer, error = %e, "could not send CTS");
            if let Some(d) = self.rendezvous.take_recv(peer, rts.seq) {
                if let Some(p) = d.recv {
                    p.done.complete(Err(e));
                }
            }
        }
    }

    /// A single-copy announcement was matched by `recv` (None: discarded):
    /// read its payload from the sender's memory into the receive's
    /// target, complete the receive and tell the sender (single-copy CTS).
    /// Returns the receive back (Some) when it must go the usual way
    /// instead: we may not read that process, so a plain CTS asks for DATA.
    fn read_offer(
        self: &Arc<Self>,
        peer: Uuid,
        rts: &FrameHeader,
        offer: SingleCopyOffer,
        recv: Option<PostedRecv>,
    ) -> Option<Option<PostedRecv>> {
        let Some(mem) = offer.mem else {
            return Some(recv);
        };
        let mut answer = FrameHeader::control(FrameKind::Cts, rts.context, rts.seq);
        answer.flags = SINGLE_COPY;
        if let Some(p) = recv {
            match read_single_copy(&mem, offer.addr, rts, &p) {
                Ok(v) => {
                    self.single_copies.received(rts.payload_len);
                    p.done.complete(Ok((v, status_of(rts))));
                }
                Err(ReadError::NotAllowed(e)) => {
                    debug!(%peer, error = %e, "single-copy read refused; asking for DATA");
                    return Some(Some(p));
                }
                Err(ReadError::Gone(e)) => {
                    // Its socket's end fails the rest; this receive fails now.
                    p.done.complete(Err(BridgeError::PeerFailed {
                        rank: rts.source,
                        reason: format!("reading the message from its memory failed: {e}"),
                    }));
                    return None;
                }
                Err(ReadError::Failed(e)) => {
                    warn!(%peer, source = rts.source, seq = rts.seq, error = %e,
                        "a single-copy message could not be read from its sender's memory");
                    p.done.complete(Err(BridgeError::Protocol(format!(
                        "the {}-byte message from rank {} could not be read from the \
                         address {:#x} its sender advertised in its memory: {e}",
                        rts.payload_len, rts.source, offer.addr
                    ))));
                    answer.count = 1;
                }
            }
        }
        if let Err(e) = self.send_control(peer, answer) {
            debug!(%peer, error = %e, "could not answer a single-copy announcement");
        }
        None
    }

    /// Throw away a message nobody will receive (its context was retired or
    /// evicted): return its credit, or let a rendezvous sender finish.
    fn discard_arrived(self: &Arc<Self>, a: Arrived) {
        if a.hdr.kind == FrameKind::Rts {
            self.ledger.rts_done(a.peer);
            self.await_data(a.peer, a.hdr, None);
        } else {
            self.release(a.peer, a.cost);
        }
    }

    /// Discards messages that claimed a source rank whose process is not
    /// the one that sent them (another intercomm's member, or a forger):
    /// logged, credit returned, nobody failed.
    pub(crate) fn discard_forged(self: &Arc<Self>, context: u64, forged_early: Vec<Arrived>) {
        for a in forged_early {
            debug_assert_eq!(a.hdr.context, context);
            forged(&a.hdr, a.peer);
            self.discard_arrived(a);
        }
    }

    fn evict(self: &Arc<Self>, evicted: Vec<Arc<Ctx>>) {
        for ctx in evicted {
            let dropped = ctx.retire();
            warn!(
                context = ctx.id,
                messages = dropped.len(),
                age = ?self.limits.early_context_age,
                "no InterComm was created for this context in time; its messages are discarded"
            );
            for a in dropped {
                self.discard_arrived(a);
            }
        }
    }

    /// An intercomm was dropped: unregister its context and fail its pending receives.
    pub(crate) fn retire_context(self: &Arc<Self>, ctx: &Arc<Ctx>) {
        self.contexts.retire(ctx);
        let dropped = ctx.retire();
        if !dropped.is_empty() {
            debug!(
                context = ctx.id,
                count = dropped.len(),
                "InterComm dropped with unreceived messages; discarding them"
            );
        }
        for a in dropped {
            self.discard_arrived(a);
        }
        // Receivers of this context blocked reading a socket must see their completion.
        self.conns.wake_all_readers();
    }

    /// Sends ABORT with `code` to each of `peers` (processes of remote groups
    /// we were given) and waits until each frame is written or `deadline`
    /// passes. Returns the peers it did not reach, with why.
    pub(crate) fn abort_peers(
        self: &Arc<Self>,
        peers: &[Uuid],
        code: i32,
        deadline: Instant,
    ) -> Vec<(Uuid, String)> {
        let mut waiting = Vec::new();
        let mut missed = Vec::new();
        for &p in peers {
            let Some(ep) = lock(&self.peers).get(&p).cloned() else {
                missed.push((p, "its endpoint is unknown here".to_string()));
                continue;
            };
            let mut hdr = FrameHeader::control(FrameKind::Abort, 0, 0);
            hdr.tag = code;
            let done = Completion::new(Arc::clone(&self.any));
            let sent = self.conn(&ep, 0).and_then(|c| {
                c.enqueue(Queued {
                    hdr,
                    payload: Payload::none(),
                    dest_rank: 0,
                    done: Some(Arc::clone(&done)),
                    held: None,
                })
            });
            match sent {
                Ok(()) => waiting.push((p, done)),
                Err(e) => missed.push((p, e.to_string())),
            }
        }
        for (p, done) in waiting {
            match done.wait_until(Some(deadline)) {
                Some(Ok(())) => {}
                Some(Err(e)) => missed.push((p, e.to_string())),
                None => missed.push((p, "not written before the deadline".to_string())),
            }
        }
        missed
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
        let r = self
            .conn(&ep, hdr.source)
            .and_then(|c| self.write_control(&c, ack, hdr.source));
        if let Err(e) = r {
            debug!(error = %e, "could not send SYNC_ACK");
        }
    }

    /// Record a failed peer and fail everything that depends on it.
    pub(crate) fn peer_failed(&self, process: Uuid, reason: &str) {
        self.peer_gone(process, reason, false)
    }

    /// Sends to `process` that are lost (`queued` on our connection,
    /// `unmatched` announcements): some may have returned to the program
    /// already, so they are logged now and reported again by the
    /// shutdown's flush.
    fn record_lost(&self, process: Uuid, queued: usize, unmatched: usize, reason: &str) {
        if queued + unmatched == 0 {
            return;
        }
        warn!(peer = %process, queued, unmatched, reason,
            "messages sent to this peer are lost with it");
        lock(&self.lost).push(Undelivered {
            process,
            queued,
            unmatched,
            reason: reason.to_owned(),
        });
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
        let queued = self.conns.outgoing(process).map_or(0, |c| c.fail(reason));
        for c in self.contexts.live() {
            c.process_gone(process, reason, orderly);
        }
        self.ssends.peer_gone(process, reason);
        let unmatched = self.rendezvous.peer_gone(process, reason);
        self.record_lost(process, queued, unmatched, reason);
        // Threads blocked reading the failed peer's socket must see their failed completions.
        if let Some(c) = self.conns.incoming(process) {
            c.wake();
        }
    }

    /// EAGER / SYNC_EAGER from `peer`: checked against its credit before a byte of payload is read.
    fn eager(self: &Arc<Self>, peer: Uuid, hdr: FrameHeader, rd: &mut FrameReader) -> Result<()> {
        let cost = hdr
            .payload_len
            .checked_add(FRAME_COST)
            .ok_or_else(|| BridgeError::Protocol("eager payload length overflows".into()))?;
        self.ledger
            .charge(peer, cost)
            .map_err(BridgeError::Protocol)?;
        let (dest, evicted) = self.contexts.for_incoming(
            hdr.context,
            || self.is_shutting_down(),
            self.limits.early_context_age,
        );
        self.evict(evicted);
        match dest {
            Destination::Discard => {
                debug!(
                    context = hdr.context,
                    "message for a retired or refused context; discarded"
                );
                let r = discard_payload(rd, hdr.payload_len);
                self.release(peer, cost);
                r.map_err(|e| BridgeError::PeerFailed {
                    rank: hdr.source,
                    reason: format!("receiving a message failed: {e}"),
                })
            }
            Destination::Ctx(ctx) if !lock(&ctx.state).sender_is(hdr.source, peer) => {
                forged(&hdr, peer);
                let r = discard_payload(rd, hdr.payload_len);
                self.release(peer, cost);
                r.map_err(|e| BridgeError::PeerFailed {
                    rank: hdr.source,
                    reason: format!("receiving a message failed: {e}"),
                })
            }
            Destination::Ctx(ctx) => {
                if ctx.deliver(hdr, rd, peer, cost)? == Delivery::Matched {
                    self.release(peer, cost);
                    if hdr.kind == FrameKind::SyncEager {
                        self.send_sync_ack(&ctx, &hdr);
                    }
                    if ctx.retire_due() {
                        self.retire_context(&ctx);
                    }
                }
                Ok(())
            }
        }
    }

    /// RTS from `peer`: matched now (CTS goes out) or held where probes
    /// see it. A single-copy RTS's address is read first and its offer
    /// kept until then (see `rendezvous`).
    fn announcement(
        self: &Arc<Self>,
        peer: Uuid,
        hdr: FrameHeader,
        rd: &mut FrameReader,
    ) -> Result<()> {
        if hdr.single_copy() {
            let mut addr = [0u8; SINGLE_COPY_TRAILER];
            rd.read_exact(&mut addr)
                .map_err(|e| BridgeError::PeerFailed {
                    rank: hdr.source,
                    reason: format!("receiving a message failed: {e}"),
                })?;
            let offer = SingleCopyOffer {
                addr: u64::from_le_bytes(addr),
                mem: rd.peer_memory(),
            };
            self.rendezvous.add_offer(peer, hdr.seq, offer);
        }
        let (dest, evicted) = self.contexts.for_incoming(
            hdr.context,
            || self.is_shutting_down(),
            self.limits.early_context_age,
        );
        self.evict(evicted);
        match dest {
            Destination::Discard => {
                debug!(
                    context = hdr.context,
                    "announcement for a retired or refused context; discarded"
                );
                self.await_data(peer, hdr, None);
            }
            Destination::Ctx(ctx) if !lock(&ctx.state).sender_is(hdr.source, peer) => {
                forged(&hdr, peer);
                self.await_data(peer, hdr, None);
            }
            Destination::Ctx(ctx) => {
                self.ledger.rts_held(peer).map_err(BridgeError::Protocol)?;
                if hdr.wants_credit() {
                    self.ledger.wanted(peer, hdr.payload_len);
                }
                if let Some(p) = ctx.announce(hdr, peer) {
                    self.ledger.rts_done(peer);
                    self.rts_matched(peer, hdr, p);
                    if ctx.retire_due() {
                        self.retire_context(&ctx);
                    }
                }
            }
        }
        Ok(())
    }

    /// DATA from `peer`: the payload of a matched announcement, straight into the receive's buffer.
    /// Pushed DATA (see `push`) is charged to the sender's credit first,
    /// as an eager message is, and returned once read.
    fn payload(self: &Arc<Self>, peer: Uuid, hdr: FrameHeader, rd: &mut FrameReader) -> Result<()> {
        let pushed = if hdr.pushed() {
            let cost = hdr
                .payload_len
                .checked_add(FRAME_COST)
                .ok_or_else(|| BridgeError::Protocol("DATA payload length overflows".into()))?;
            self.ledger
                .charge(peer, cost)
                .map_err(BridgeError::Protocol)?;
            Some(cost)
        } else {
            None
        };
        let Some(d) = self.rendezvous.take_recv(peer, hdr.seq) else {
            if let Some(cost) = pushed {
                return self.pushed_early(peer, hdr, rd, cost);
            }
            return Err(BridgeError::Protocol(format!(
                "DATA for seq {} that no CTS asked for",
                hdr.seq
            )));
        };
        let r = self.payload_into(d, hdr, rd);
        if let Some(cost) = pushed {
            self.release(peer, cost);
        }
        r
    }

    /// Pushed DATA from `peer` (its credit, `cost`, already charged) that
    /// no matched receive waited for: read it and place it (`push::place`).
    fn pushed_early(
        self: &Arc<Self>,
        peer: Uuid,
        hdr: FrameHeader,
        rd: &mut FrameReader,
        cost: u64,
    ) -> Result<()> {
        let len = usize::try_from(hdr.payload_len)
            .map_err(|_| BridgeError::Protocol("payload does not fit in memory".into()))?;
        let payload = read_payload_vec(rd, len).map_err(|e| BridgeError::PeerFailed {
            rank: hdr.source,
            reason: format!("receiving a message failed: {e}"),
        })?;
        // Found before the receives' lock is taken: the lookup may evict
        // early contexts, whose discarded announcements take that lock.
        let (dest, evicted) = self.contexts.for_incoming(
            hdr.context,
            || self.is_shutting_down(),
            self.limits.early_context_age,
        );
        self.evict(evicted);
        let ctx = match &dest {
            Destination::Ctx(ctx) => Some(ctx),
            Destination::Discard => None,
        };
        match push::place(&self.rendezvous, ctx, peer, hdr.seq, payload, cost) {
            Landing::Matched(d, payload) => {
                push::fill(d, payload);
                self.release(peer, cost);
            }
            Landing::Attached => {
                self.pushes.held();
                self.ledger.rts_done(peer);
                let cts = FrameHeader::control(FrameKind::Cts, hdr.context, hdr.seq);
                if let Err(e) = self.send_control(peer, cts) {
                    debug!(%peer, error = %e, "could not answer a pushed announcement");
                }
            }
            Landing::Kept => {}
        }
        Ok(())
    }

    /// DATA for the matched receive (or discarded match) `d`.
    fn payload_into(&self, d: PendingData, hdr: FrameHeader, rd: &mut FrameReader) -> Result<()> {
        if hdr.payload_len != d.len {
            let e = BridgeError::Protocol(format!(
                "DATA of {} bytes for a message announced with {}",
                hdr.payload_len, d.len
            ));
            if let Some(p) = d.recv {
                p.done.complete(Err(e.clone()));
            }
            return Err(e);
        }
        let io_err = |e: std::io::Error| BridgeError::PeerFailed {
            rank: d.status.source,
            reason: format!("receiving a message failed: {e}"),
        };
        let Some(p) = d.recv else {
            return discard_payload(rd, d.len).map_err(io_err);
        };
        let len = usize::try_from(d.len)
            .map_err(|_| BridgeError::Protocol("payload does not fit in memory".into()))?;
        match read_into(&p.target, rd, len) {
            Ok(v) => {
                p.done.complete(Ok((v, d.status)));
                Ok(())
            }
            Err(e) => {
                let e = io_err(e);
                p.done.complete(Err(e.clone()));
                Err(e)
            }
        }
    }

    /// CTS from `peer`: send the payload of the announcement it answers
    /// (a single-copy CTS: the peer read it already; the send completes).
    fn cleared(self: &Arc<Self>, peer: Uuid, cts: FrameHeader) {
        let seq = cts.seq;
        let Some(p) = self.rendezvous.cleared(peer, seq) else {
            debug!(%peer, seq, "CTS for an unknown or withdrawn rendezvous send");
            return;
        };
        let conn = self.conns.outgoing(peer);
        if let Some(c) = &conn {
            c.rts_answered();
        }
        if p.pushed {
            // Its DATA went already (see `push`).
            self.rendezvous.handed_over(peer);
            return;
        }
        if cts.single_copy() {
            let r = if !p.rts.single_copy() {
                Err(BridgeError::Protocol(
                    "the receiver said it read a message announced without its address".into(),
                ))
            } else {
                if cts.count != 0 {
                    debug!(%peer, seq, "the receiver could not read this message from our memory");
                } else {
                    self.single_copies.sent();
                }
                if let Some(f) = &p.read_by_peer {
                    f.store(true, Ordering::Release);
                }
                Ok(())
            };
            // The peer is done with our memory: the payload may go.
            drop(p.payload);
            p.done.complete(r);
            self.rendezvous.handed_over(peer);
            return;
        }
        let Some(payload) = p.payload else {
            // The blocked caller writes DATA from its own memory.
            p.done.complete(Ok(()));
            self.rendezvous.handed_over(peer);
            return;
        };
        let data = FrameHeader {
            kind: FrameKind::Data,
            flags: 0,
            ..p.rts
        };
        let r = match conn {
            Some(c) => c.enqueue(Queued {
                hdr: data,
                payload,
                dest_rank: p.dest_rank,
                done: Some(Arc::clone(&p.done)),
                held: p.held,
            }),
            None => Err(BridgeError::Protocol(
                "CTS without an outgoing connection".into(),
            )),
        };
        self.rendezvous.handed_over(peer);
        if let Err(e) = r {
            p.done.complete(Err(e));
        }
    }
}

impl PeerLost for Shared {
    fn peer_lost(&self, peer: Uuid, reason: &str) {
        self.peer_failed(peer, reason)
    }

    fn write_failed(&self, peer: Uuid, reason: &str) {
        if self.conns.incoming(peer).is_none() {
            return self.peer_failed(peer, reason);
        }
        // It closed its end (ended, or died): our sends to it fail now,
        // but the messages it completed before are still in its
        // connection to us, and are received before its reader reaches
        // the end (BYE: it departed; else: it failed). A sender that ended
        // must not lose them because we wrote to it (issue 23).
        let queued = self.conns.outgoing(peer).map_or(0, |c| c.fail(reason));
        self.record_lost(peer, queued, 0, reason);
    }
}

impl FrameHandler for Shared {
    fn is_shutting_down(&self) -> bool {
        Shared::is_shutting_down(self)
    }

    fn message(self: &Arc<Self>, peer: Uuid, hdr: FrameHeader, rd: &mut FrameReader) -> Result<()> {
        match hdr.kind {
            FrameKind::Eager | FrameKind::SyncEager => self.eager(peer, hdr, rd),
            FrameKind::Rts => self.announcement(peer, hdr, rd),
            FrameKind::Data => self.payload(peer, hdr, rd),
            k => Err(BridgeError::Protocol(format!(
                "{k:?} is not a message frame"
            ))),
        }
    }

    fn control(self: &Arc<Self>, peer: Uuid, hdr: FrameHeader) -> Result<()> {
        match hdr.kind {
            FrameKind::SyncAck => self.ssends.acked(peer, hdr.seq),
            FrameKind::Cts => self.cleared(peer, hdr),
            FrameKind::Credit => {
                if let Some(c) = self.conns.outgoing(peer) {
                    c.add_credit(hdr.count);
                    self.push_pending(peer, &*c);
                }
            }
            FrameKind::Abort => {
                let handler = lock(&self.on_abort).clone();
                warn!(%peer, code = hdr.tag, "the peer's program aborted");
                if let Some(h) = handler {
                    h(peer, hdr.tag);
                }
            }
            k => {
                return Err(BridgeError::Protocol(format!(
                    "{k:?} is not a control frame"
                )))
            }
        }
        Ok(())
    }

    fn peer_departed(&self, peer: Uuid, reason: &str) {
        self.peer_gone(peer, reason, true)
    }

    fn reverse_in_use(self: &Arc<Self>, conn: &Arc<InConn>) -> Result<()> {
        if !self.ledger.duplex_used(conn.peer) || !self.conns.promote(conn) {
            return Err(BridgeError::Protocol(
                "frames on our connection from a process that writes to us on its own".into(),
            ));
        }
        debug!(peer = %conn.peer, "the peer writes to us on our connection");
        Ok(())
    }

    fn duplex_offered(
        self: &Arc<Self>,
        conn: &Arc<InConn>,
        tcp: std::net::TcpStream,
        window: u64,
    ) -> Result<()> {
        let peer = conn.peer;
        if !self.limits.tcp_duplex {
            return Ok(());
        }
        // Waits while our own connection to it is being opened.
        match self.conns.outgoing(peer) {
            // Taken at our first send to it (`reverse_conn`).
            None => conn.keep_duplex_offer(tcp, window),
            // Both connected at once and offered: the connection opened by
            // the smaller process id carries both ways; the larger moves.
            Some(out) if out.is_offered() && self.endpoint.process > peer => {
                debug!(%peer, "both connected at once: moving to the peer's connection");
                out.move_to(Stream::Tcp(tcp));
            }
            // Ours carries both ways (the peer moves), or one-way.
            Some(_) => {}
        }
        Ok(())
    }

    fn peer_moved(self: &Arc<Self>, conn: &Arc<InConn>) -> Result<()> {
        let peer = conn.peer;
        let ours = self
            .conns
            .outgoing(peer)
            .is_some_and(|out| out.is_offered());
        if !(ours && self.endpoint.process < peer && self.ledger.moved_to_ours(peer)) {
            return Err(BridgeError::Protocol(
                "MOVED from a process that may not move to our connection".into(),
            ));
        }
        self.conns.remove_incoming(conn);
        if let Some(reverse) = self.conns.offered(peer) {
            reverse.unpark();
        }
        Ok(())
    }

    fn may_read_reverse(&self, conn: &Arc<InConn>) -> bool {
        // Only a peer with a larger id moves to our connection; until its
        // MOVED is read on its own, what it wrote there comes first.
        self.endpoint.process > conn.peer
            || self
                .conns
                .incoming(conn.peer)
                .is_none_or(|c| Arc::ptr_eq(&c, conn))
    }

    fn connection_closed(&self, conn: &Arc<InConn>) {
        self.conns.remove_incoming(conn);
        if conn.moved() {
            // Its window now covers our connection (read in reverse).
        } else if conn.reverse {
            self.ledger.close_duplex(conn.peer);
        } else {
            self.ledger.close(conn.peer);
            // A reverse reader parked behind this connection reads on
            // (its end, if the peer closes it, is seen there).
            if let Some(reverse) = self.conns.offered(conn.peer) {
                reverse.unpark();
            }
        }
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

impl SendProgress for Shared {
    fn wait_send(
        self: Arc<Self>,
        peer: Uuid,
        done: &Completion<()>,
        deadline: Option<Instant>,
    ) -> Option<Result<()>> {
        // In steps: when the receiver may not read our memory it asks for
        // DATA instead, and the writer thread completes the send, which a
        // thread reading the connection would not notice until the next
        // frame came.
        loop {
            let step = Instant::now() + SEND_WAIT_STEP;
            let until = match deadline {
                Some(d) if d <= step => d,
                _ => step,
            };
            if let Some(r) = self.wait_from(Some(peer), done, Some(until)) {
                return Some(r);
            }
            if until != step {
                return None;
            }
        }
    }
}

/// How long a single-copy send's wait reads the receiver's connection
/// before it looks whether another thread completed the send.
const SEND_WAIT_STEP: Duration = Duration::from_millis(1);

/// Read a matched single-copy message (`rts`, at `addr` in the sender)
/// into the receive's target: the caller's buffer, or a new vector. The
/// length is the announced one, which the match checked against the
/// target's capacity (checked again here: never past the buffer).
fn read_single_copy(
    mem: &PeerMemory,
    addr: u64,
    rts: &FrameHeader,
    p: &PostedRecv,
) -> std::result::Result<Option<Vec<u8>>, ReadError> {
    let too_big = || {
        ReadError::Failed(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "a {}-byte message for a {}-byte receive",
                rts.payload_len,
                p.target.capacity()
            ),
        ))
    };
    let len = usize::try_from(rts.payload_len).map_err(|_| too_big())?;
    match &p.target {
        Target::Borrowed(b) => {
            if len > b.len {
                return Err(too_big());
            }
            // SAFETY: RawBuf invariant — the receive's owner waits for its
            // completion, which is set only after this read; `len <= b.len`.
            let dst = unsafe { std::slice::from_raw_parts_mut(b.ptr, len) };
            mem.read(addr, dst).map(|()| None)
        }
        Target::Owned { max_bytes } => {
            if len > *max_bytes {
                return Err(too_big());
            }
            mem.read_vec(addr, len).map(Some)
        }
    }
}

/// Logs a frame whose source rank is not the process that sent it.
fn forged(hdr: &FrameHeader, sender: Uuid) {
    warn!(
        context = format_args!("{:#x}", hdr.context),
        claimed_source = hdr.source,
        sender = %sender,
        "a frame claims a source rank its sender is not; discarded"
    );
}

//! The per-process bridge [`Engine`]: listening sockets, connection table,
//! context (intercomm) table, failure bookkeeping and synchronous-send
//! waiters. Not a global singleton — several engines can live in one process.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tracing::{debug, info, warn};
use uuid::Uuid;

use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::frame::{FrameHeader, FrameKind};
use crate::incoming::InConn;
use crate::intercomm::InterComm;
use crate::matching::{fill_from_arrived, status_of, Arrived, Ctx, Registration, Target};
use crate::request::{lock, AnyNotifier, Completion};
use crate::transport::{self, OutConn, Queued, Stream};

/// Configuration of an [`Engine`].
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Virtual-machine secret; only peers presenting the same secret may open data connections.
    pub secret: Vec<u8>,
    /// Name of this host; peers with the same host name connect over the Unix socket.
    pub host: String,
}

/// Outgoing connection of one peer, filled in on first use.
type ConnSlot = Arc<Mutex<Option<Arc<OutConn>>>>;

/// A synchronous send waiting for its SYNC_ACK.
struct SyncWaiter {
    peer: Uuid,
    dest_rank: u32,
    done: Arc<Completion<()>>,
}

struct Contexts {
    live: HashMap<u64, Arc<Ctx>>,
    /// Contexts whose InterComm was dropped: late messages for them are discarded.
    retired: HashSet<u64>,
}

/// Engine state shared with the engine's threads.
pub(crate) struct Inner {
    pub endpoint: Endpoint,
    pub secret: Vec<u8>,
    shutting_down: AtomicBool,
    next_seq: AtomicU64,
    pub any: Arc<AnyNotifier>,
    /// One slot per peer; the slot's mutex serializes connecting so there is exactly one outgoing connection.
    conns: Mutex<HashMap<Uuid, ConnSlot>>,
    incoming: Mutex<Vec<(Uuid, Stream)>>,
    /// Incoming connection of each peer, for application threads that read it themselves.
    in_conns: Mutex<HashMap<Uuid, Arc<InConn>>>,
    contexts: Mutex<Contexts>,
    /// Peers that are gone: reason, and whether they left in order (BYE).
    failed: Mutex<HashMap<Uuid, (String, bool)>>,
    sync_waiters: Mutex<HashMap<u64, SyncWaiter>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// One bridge engine (normally one per process).
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
    unix_name: String,
}

impl Engine {
    /// Bind the Unix (abstract namespace) and TCP (127.0.0.1:0) listeners and start accepting.
    pub fn start(config: EngineConfig) -> Result<Arc<Engine>> {
        let process = Uuid::new_v4();
        let unix_name = format!("@isthmus-bridge-{process}");
        let unix = UnixListener::bind_addr(
            &transport::unix_addr(&unix_name)
                .map_err(|e| BridgeError::io("building the Unix socket address", e))?,
        )
        .map_err(|e| BridgeError::io(format!("binding Unix socket {unix_name}"), e))?;
        let tcp = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| BridgeError::io("binding TCP 127.0.0.1:0", e))?;
        let tcp_addr = tcp
            .local_addr()
            .map_err(|e| BridgeError::io("reading the TCP listener address", e))?;
        let endpoint = Endpoint {
            process,
            host: config.host,
            unix: Some(unix_name.clone()),
            tcp: Some(tcp_addr),
        };
        let inner = Arc::new(Inner {
            endpoint,
            secret: config.secret,
            shutting_down: AtomicBool::new(false),
            next_seq: AtomicU64::new(1),
            any: Arc::new(AnyNotifier::default()),
            conns: Mutex::new(HashMap::new()),
            incoming: Mutex::new(Vec::new()),
            in_conns: Mutex::new(HashMap::new()),
            contexts: Mutex::new(Contexts {
                live: HashMap::new(),
                retired: HashSet::new(),
            }),
            failed: Mutex::new(HashMap::new()),
            sync_waiters: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
        });
        let i1 = Arc::clone(&inner);
        let t1 = spawn("bridge-accept-unix", move || {
            for s in unix.incoming() {
                if i1.is_shutting_down() {
                    break;
                }
                match s {
                    Ok(s) => i1.spawn_reader(Stream::Unix(s), None),
                    Err(e) => warn!(error = %e, "accept on the Unix socket failed"),
                }
            }
        })?;
        let i2 = Arc::clone(&inner);
        let t2 = spawn("bridge-accept-tcp", move || {
            for s in tcp.incoming() {
                if i2.is_shutting_down() {
                    break;
                }
                match s {
                    Ok(s) => {
                        let _ = s.set_nodelay(true);
                        let addr = s.peer_addr().ok();
                        i2.spawn_reader(Stream::Tcp(s), addr)
                    }
                    Err(e) => warn!(error = %e, "accept on the TCP socket failed"),
                }
            }
        })?;
        lock(&inner.threads).extend([t1, t2]);
        info!(process = %inner.endpoint.process, unix = %unix_name, tcp = %tcp_addr, "bridge engine started");
        Ok(Arc::new(Engine { inner, unix_name }))
    }

    /// How peers reach this engine (publish `endpoint().encode()`).
    pub fn endpoint(&self) -> Endpoint {
        self.inner.endpoint.clone()
    }

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
        let ctx = {
            let mut cs = lock(&self.inner.contexts);
            cs.retired.remove(&context);
            let ctx = Arc::clone(cs.live.entry(context).or_insert_with(|| Ctx::new(context)));
            let mut st = lock(&ctx.state);
            if st.registration.is_some() {
                return Err(BridgeError::ContextInUse(context));
            }
            st.registration = Some(Registration {
                remote: remote.clone(),
            });
            drop(st);
            ctx
        };
        // Peers that already failed count against the new intercomm too.
        let failed: Vec<(Uuid, (String, bool))> = lock(&self.inner.failed)
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        {
            let mut st = lock(&ctx.state);
            for (p, (r, orderly)) in &failed {
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

    /// Report that a peer process died (called by the group-service layer).
    /// Every pending and future operation involving it fails with `PeerFailed`.
    pub fn peer_failed(&self, process: Uuid, reason: &str) {
        self.inner.peer_failed(process, reason)
    }

    /// Orderly shutdown: flush queued frames, send BYE, close sockets, stop threads.
    /// Pending operations fail with `EngineShutDown`. Also done on drop.
    pub fn shutdown(&self) {
        self.stop(true)
    }

    /// Test hook: close every socket abruptly, without BYE (peers see a failure).
    #[doc(hidden)]
    pub fn abort_for_test(&self) {
        self.stop(false)
    }

    fn stop(&self, orderly: bool) {
        let inner = &self.inner;
        if inner.shutting_down.swap(true, Ordering::SeqCst) {
            return;
        }
        let conns: Vec<Arc<OutConn>> = lock(&inner.conns)
            .values()
            .filter_map(|slot| lock(slot).clone())
            .collect();
        for c in &conns {
            if orderly {
                c.close()
            } else {
                c.abort()
            }
        }
        // Wake the accept loops so they observe the flag.
        if let Ok(a) = transport::unix_addr(&self.unix_name) {
            let _ = UnixStream::connect_addr(&a);
        }
        if let Some(a) = inner.endpoint.tcp {
            let _ = TcpStream::connect(a);
        }
        inner.wake_all_readers();
        let handles: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&inner.threads));
        // Writers and acceptors exit on their own; readers after their socket is shut down.
        let (writers_and_acceptors, readers): (Vec<_>, Vec<_>) =
            handles.into_iter().partition(|h| {
                h.thread()
                    .name()
                    .is_some_and(|n| !n.starts_with("bridge-reader"))
            });
        for h in writers_and_acceptors {
            let _ = h.join();
        }
        for (_, s) in lock(&inner.incoming).drain(..) {
            s.shutdown();
        }
        for c in &conns {
            c.abort();
        }
        for h in readers {
            let _ = h.join();
        }
        // Fail whatever is still pending.
        let ctxs: Vec<Arc<Ctx>> = lock(&inner.contexts).live.drain().map(|(_, c)| c).collect();
        for c in ctxs {
            let posted: Vec<_> = lock(&c.state).posted.drain(..).collect();
            drop(posted); // PostedRecv::drop completes with EngineShutDown
            c.arrived.notify_all();
        }
        inner.wake_all_readers();
        for (_, w) in lock(&inner.sync_waiters).drain() {
            w.done.complete(Err(BridgeError::EngineShutDown));
        }
        debug!(process = %inner.endpoint.process, orderly, "bridge engine stopped");
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop(true);
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .map_err(|e| BridgeError::io(format!("spawning thread {name}"), e))
}

impl Inner {
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    fn spawn_reader(self: &Arc<Self>, s: Stream, addr: Option<std::net::SocketAddr>) {
        let me = Arc::clone(self);
        let via = addr
            .map(|a| a.to_string())
            .unwrap_or_else(|| "unix socket".into());
        match spawn("bridge-reader", move || crate::incoming::serve(me, s, via)) {
            Ok(h) => lock(&self.threads).push(h),
            Err(e) => warn!(error = %e, "cannot start a reader thread; connection dropped"),
        }
    }

    pub(crate) fn register_incoming(&self, peer: Uuid, s: Stream) {
        lock(&self.incoming).push((peer, s));
    }

    pub(crate) fn add_in_conn(&self, c: Arc<InConn>) {
        lock(&self.in_conns).insert(c.peer, c);
    }

    /// Make every thread waiting on an incoming connection re-check its completion.
    fn wake_all_readers(&self) {
        let all: Vec<Arc<InConn>> = lock(&self.in_conns).values().cloned().collect();
        for c in all {
            c.wake();
        }
    }

    /// Block until `done` completes (None on timeout). If what completes it can
    /// only come from `peer`, read that peer's connection from this thread
    /// (leader/follower, see [`crate::incoming`]); otherwise wait for the
    /// background readers.
    pub(crate) fn wait_from<T>(
        self: &Arc<Self>,
        peer: Option<Uuid>,
        done: &Completion<T>,
        deadline: Option<std::time::Instant>,
    ) -> Option<Result<T>> {
        let conn = peer.and_then(|p| lock(&self.in_conns).get(&p).cloned());
        match conn {
            Some(c) => c.wait_reading(self, done, deadline),
            None => done.wait_until(deadline),
        }
    }

    /// The outgoing connection to `ep`, opened (with handshake) on first use.
    pub(crate) fn conn(self: &Arc<Self>, ep: &Endpoint, rank: u32) -> Result<Arc<OutConn>> {
        if self.is_shutting_down() {
            return Err(BridgeError::EngineShutDown);
        }
        if let Some((reason, _)) = lock(&self.failed).get(&ep.process) {
            return Err(BridgeError::PeerFailed {
                rank,
                reason: reason.clone(),
            });
        }
        let slot = Arc::clone(lock(&self.conns).entry(ep.process).or_default());
        let mut guard = lock(&slot);
        if let Some(c) = guard.as_ref() {
            return Ok(Arc::clone(c));
        }
        let stream = transport::connect(self, ep)?;
        let conn = OutConn::new(ep.process, stream)
            .map_err(|e| BridgeError::io("cloning a socket handle", e))?;
        let (c2, me) = (Arc::clone(&conn), Arc::clone(self));
        let h = spawn("bridge-writer", move || c2.writer_loop(me))?;
        lock(&self.threads).push(h);
        *guard = Some(Arc::clone(&conn));
        debug!(peer = %ep.process, "opened data connection");
        // A failure or shutdown may have been recorded while we connected.
        if let Some((reason, _)) = lock(&self.failed).get(&ep.process) {
            conn.fail(reason);
        }
        if self.is_shutting_down() {
            conn.close();
        }
        Ok(conn)
    }

    pub(crate) fn ctx_for_incoming(&self, context: u64) -> Option<Arc<Ctx>> {
        let mut cs = lock(&self.contexts);
        if cs.retired.contains(&context) || self.is_shutting_down() {
            return None;
        }
        Some(Arc::clone(
            cs.live.entry(context).or_insert_with(|| Ctx::new(context)),
        ))
    }

    pub(crate) fn retire_context(&self, ctx: &Arc<Ctx>) {
        let mut cs = lock(&self.contexts);
        if cs.live.get(&ctx.id).is_some_and(|c| Arc::ptr_eq(c, ctx)) {
            cs.live.remove(&ctx.id);
            cs.retired.insert(ctx.id);
        }
        drop(cs);
        let (posted, unexpected) = {
            let mut st = lock(&ctx.state);
            st.registration = None;
            (
                st.posted.drain(..).collect::<Vec<_>>(),
                st.unexpected.drain(..).collect::<Vec<_>>(),
            )
        };
        if !unexpected.is_empty() {
            debug!(
                context = ctx.id,
                count = unexpected.len(),
                "InterComm dropped with unreceived messages; discarding them"
            );
        }
        drop(posted);
        // Receivers of this context blocked reading a socket must see their completion.
        self.wake_all_readers();
    }

    /// Register a synchronous send before its frame goes out.
    pub(crate) fn add_sync_waiter(
        &self,
        seq: u64,
        peer: Uuid,
        dest_rank: u32,
        done: Arc<Completion<()>>,
    ) {
        lock(&self.sync_waiters).insert(
            seq,
            SyncWaiter {
                peer,
                dest_rank,
                done,
            },
        );
    }

    pub(crate) fn remove_sync_waiter(&self, seq: u64) {
        lock(&self.sync_waiters).remove(&seq);
    }

    pub(crate) fn sync_acked(&self, from: Uuid, seq: u64) {
        let mut waiters = lock(&self.sync_waiters);
        // Only the peer the ssend went to may complete it.
        match waiters.get(&seq) {
            Some(w) if w.peer == from => {
                if let Some(w) = waiters.remove(&seq) {
                    w.done.complete(Ok(()));
                }
            }
            Some(_) => {
                debug!(seq, %from, "SYNC_ACK from a process the synchronous send did not go to; ignored")
            }
            None => debug!(seq, "SYNC_ACK for an unknown or withdrawn synchronous send"),
        }
    }

    /// Tell the sender of a matched SYNC_EAGER that its ssend may complete.
    pub(crate) fn send_sync_ack(self: &Arc<Self>, ctx: &Ctx, hdr: &FrameHeader) {
        let ep = {
            let st = lock(&ctx.state);
            st.registration
                .as_ref()
                .and_then(|r| r.remote.get(hdr.source as usize).cloned())
        };
        let Some(ep) = ep else {
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

    /// Record that a peer said goodbye: nothing more can come from it, but
    /// unlike a failure it does not fail ANY_SOURCE operations while other
    /// remote ranks may still send.
    pub(crate) fn peer_departed(&self, process: Uuid, reason: &str) {
        self.peer_gone(process, reason, true)
    }

    fn peer_gone(&self, process: Uuid, reason: &str, orderly: bool) {
        {
            let mut f = lock(&self.failed);
            if f.contains_key(&process) {
                return;
            }
            f.insert(process, (reason.to_owned(), orderly));
        }
        if !self.is_shutting_down() {
            info!(peer = %process, reason, "peer failed");
        }
        let slot = lock(&self.conns).get(&process).cloned();
        if let Some(slot) = slot {
            if let Some(c) = lock(&slot).as_ref() {
                c.fail(reason);
            }
        }
        let ctxs: Vec<Arc<Ctx>> = lock(&self.contexts).live.values().cloned().collect();
        for c in ctxs {
            lock(&c.state).mark_process_failed(process, reason, orderly);
            c.arrived.notify_all();
        }
        let waiters: Vec<SyncWaiter> = {
            let mut m = lock(&self.sync_waiters);
            let keys: Vec<u64> = m
                .iter()
                .filter(|(_, w)| w.peer == process)
                .map(|(k, _)| *k)
                .collect();
            keys.into_iter().filter_map(|k| m.remove(&k)).collect()
        };
        for w in waiters {
            w.done.complete(Err(BridgeError::PeerFailed {
                rank: w.dest_rank,
                reason: reason.to_owned(),
            }));
        }
        // Threads blocked reading the failed peer's socket must see their failed completions.
        let conn = lock(&self.in_conns).get(&process).cloned();
        if let Some(c) = conn {
            c.wake();
        }
    }

    /// Reader thread: a message frame arrived; match it or queue it as unexpected.
    pub(crate) fn deliver<R: Read>(
        self: &Arc<Self>,
        peer: Uuid,
        hdr: FrameHeader,
        rd: &mut R,
    ) -> Result<()> {
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
        let sync = hdr.kind == FrameKind::SyncEager;
        let Some(ctx) = self.ctx_for_incoming(hdr.context) else {
            debug!(%peer, context = hdr.context, bytes = len, "message for a dropped context; discarding");
            return transport::discard_payload(rd, hdr.payload_len).map_err(io_err);
        };
        let posted = lock(&ctx.state).take_posted_match(&hdr);
        if let Some(p) = posted {
            // Matched a posted receive before the payload was read: read straight into its target.
            let outcome = match crate::matching::check_match(
                p.expected,
                match &p.target {
                    Target::Owned { max_bytes } => *max_bytes,
                    Target::Borrowed(b) => b.len,
                },
                &hdr,
            ) {
                Err(e) => {
                    let r = transport::discard_payload(rd, hdr.payload_len).map_err(io_err);
                    p.done.complete(Err(e));
                    r
                }
                Ok(()) => match &p.target {
                    Target::Borrowed(b) => {
                        // SAFETY: RawBuf invariant (matching.rs) — the owner waits for `p.done`, len checked.
                        let dst = unsafe { std::slice::from_raw_parts_mut(b.ptr, len) };
                        match rd.read_exact(dst) {
                            Ok(()) => {
                                p.done.complete(Ok((None, status_of(&hdr))));
                                Ok(())
                            }
                            Err(e) => {
                                let e = io_err(e);
                                p.done.complete(Err(e.clone()));
                                Err(e)
                            }
                        }
                    }
                    Target::Owned { .. } => match transport::read_payload_vec(rd, len) {
                        Ok(v) => {
                            p.done.complete(Ok((Some(v), status_of(&hdr))));
                            Ok(())
                        }
                        Err(e) => {
                            let e = io_err(e);
                            p.done.complete(Err(e.clone()));
                            Err(e)
                        }
                    },
                },
            };
            if sync && outcome.is_ok() {
                self.send_sync_ack(&ctx, &hdr);
            }
            return outcome;
        }
        let payload = transport::read_payload_vec(rd, len).map_err(io_err)?;
        let arrived = Arrived { hdr, payload };
        let mut st = lock(&ctx.state);
        // A receive may have been posted while the payload was being read.
        if let Some(p) = st.take_posted_match(&hdr) {
            drop(st);
            p.done
                .complete(fill_from_arrived(&p.target, p.expected, arrived));
            if sync {
                self.send_sync_ack(&ctx, &hdr);
            }
        } else {
            st.unexpected.push_back(arrived);
            drop(st);
            ctx.arrived.notify_all();
        }
        Ok(())
    }
}

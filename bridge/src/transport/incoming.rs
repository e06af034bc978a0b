//! Incoming connections and who reads them: leader/follower progress over
//! one poller thread for all connections.
//!
//! Each incoming connection has one [`Reader`] (its [`Inbound`] byte path:
//! the buffered socket, or a shared-memory ring) that at
//! most one thread holds at a time — the "reader token". Whoever holds it
//! reads frames and acts on them through [`FrameHandler`].
//!
//! * While no application thread waits on this peer, the engine's one
//!   poller thread (see `poller`) watches the socket with epoll and, when it
//!   is readable, takes the token and reads the frames that are there. That
//!   keeps independent progress — messages arrive, SYNC_ACKs, CTSs and
//!   credits go out, rendezvous payloads drain — while the application
//!   computes, without a thread per connection.
//! * An application thread that blocks for something only this peer can
//!   deliver (a receive naming one of its ranks, the SYNC_ACK or CTS of a
//!   send to it) takes the token and reads the socket itself, blocking in
//!   `poll(2)` on the socket and the connection's wake-up eventfd (a ring
//!   is polled first, as `wait` says; under `ISTHMUS_WAIT=poll` the thread
//!   only glances at the two between polls of the ring): the frame
//!   that completes its wait is read, matched (straight into a posted
//!   buffer) and completed by the thread that wanted it — one wake-up per
//!   message.
//! * Handing the token back is lazy: the poller re-arms the socket only once
//!   no application thread waited during a whole tick (so a ping-pong that
//!   leaves the library between messages never wakes the poller). Threads
//!   blocked in probe, `wait_any`, or an ANY_SOURCE receive over several
//!   processes rely on the poller and may see a message up to two ticks late.
//! * Anything that completes a waiter without reading this socket (peer
//!   failure, engine shutdown, intercomm teardown) calls [`InConn::wake`] so
//!   token holders blocked in `poll` and threads waiting for the token
//!   re-check their completion.
//! * Over TCP our own outgoing connection is read too, in reverse (see
//!   `duplex`): the poller watches it from the start; it becomes the
//!   peer's incoming connection (for application threads) at its first
//!   frame, and if it ends without one, that is not the peer's failure.
//! * A connection that ends (EOF, error, malformed frame) is taken off the
//!   poller and its socket and eventfd are closed; only that connection is
//!   affected.
//! * Limitation: frames are read with blocking reads, so a peer that stops
//!   in the middle of a frame holds the poller until its bytes come or its
//!   connection closes (slow is not dead); meanwhile application threads
//!   waiting on other peers still read those peers' connections themselves.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant;

use tracing::{debug, warn};
use uuid::Uuid;

use crate::completion::Completion;
use crate::error::Result;
use crate::frame::{FrameHeader, FrameKind, HEADER_LEN};
use crate::sync::{cv_wait, lock};

use super::link::{Inbound, PeerLost};
use super::poller::{Poller, Watched};

/// The byte path a token holder reads frames (and payloads) from.
pub(crate) type FrameReader = Box<dyn Inbound>;

/// What reading a connection reports to its owner (the engine); a
/// connection that ends without BYE is reported through [`PeerLost`].
pub(crate) trait FrameHandler: PeerLost {
    fn is_shutting_down(&self) -> bool;
    /// A frame that may carry a payload (EAGER, SYNC_EAGER, RTS, DATA) from
    /// `peer`; its payload, if any, is next in `rd`. `Err` ends the connection.
    fn message(self: &Arc<Self>, peer: Uuid, hdr: FrameHeader, rd: &mut FrameReader) -> Result<()>;
    /// A control frame (SYNC_ACK, CTS, CREDIT) from `peer`. `Err` ends the connection.
    fn control(self: &Arc<Self>, peer: Uuid, hdr: FrameHeader) -> Result<()>;
    /// The first frame came on `conn`, our own connection to its peer read
    /// in reverse (see `duplex`): the peer writes to us there from now on.
    /// `Err` (it was not offered that, or writes elsewhere) ends it.
    fn reverse_in_use(self: &Arc<Self>, conn: &Arc<InConn>) -> Result<()>;
    /// The peer's first frame on `conn` (which it opened) was DUPLEX: it
    /// offers `tcp` (a clone) for our frames, with `window` bytes of credit
    /// (see `duplex`). `Err` ends the connection.
    fn duplex_offered(
        self: &Arc<Self>,
        conn: &Arc<InConn>,
        tcp: std::net::TcpStream,
        window: u64,
    ) -> Result<()>;
    /// The peer ended `conn` (which it opened) with MOVED: its frames come
    /// on our own connection to it from now on (see `duplex`). `Err`: it
    /// may not; either way `conn` ends.
    fn peer_moved(self: &Arc<Self>, conn: &Arc<InConn>) -> Result<()>;
    /// Whether `conn`, our own connection read in reverse, may be read
    /// now: not while the peer's frames still come on its own connection
    /// (before its MOVED was read there). Asked before its first frame.
    fn may_read_reverse(&self, conn: &Arc<InConn>) -> bool;
    /// `peer` said goodbye (BYE) and closed: nothing more will come from it.
    fn peer_departed(&self, peer: Uuid, reason: &str);
    /// The connection `conn` ended and was closed (after the two above).
    fn connection_closed(&self, conn: &Arc<InConn>);
}

/// The reader token: the byte path plus per-connection parse state.
pub(crate) struct Reader {
    rd: FrameReader,
    saw_bye: bool,
    /// Frames read so far (SHM is only valid as the first).
    frames: u64,
}

struct InState {
    /// None while some thread holds the token.
    reader: Option<Reader>,
    /// The connection ended (EOF, error, protocol violation); its socket is closed.
    ended: bool,
}

/// One accepted data connection from `peer`.
pub(crate) struct InConn {
    pub peer: Uuid,
    state: Mutex<InState>,
    /// Token hand-over and "your completion may be done" notifications.
    cv: Condvar,
    /// Application threads currently waiting on this peer.
    app_waiting: AtomicUsize,
    /// Bumped whenever an application thread starts waiting (for the lazy handback).
    activity: AtomicU64,
    /// eventfd that interrupts an application token holder blocked in poll().
    kick: OwnedFd,
    /// The socket's descriptor: valid while `ended` is false (for epoll and shutdown).
    fd: RawFd,
    poller: Arc<Poller>,
    /// Poller token (set once by `watch`).
    token: AtomicU64,
    /// This is our own outgoing connection, read for the frames the peer
    /// may write on it once it takes our DUPLEX offer (see `duplex`).
    pub reverse: bool,
    /// The peer's first frame here was DUPLEX: the socket to write to it
    /// on and the window it granted there, until our outgoing connection
    /// to it takes them.
    duplex_offer: Mutex<Option<(std::net::TcpStream, u64)>>,
    /// The peer ended this connection with MOVED (see `duplex`).
    moved: AtomicBool,
}

enum Step {
    /// Processed a frame or was interrupted: re-check what we wait for.
    Progress,
    Timeout,
}

/// The poller's view of a connection: the connection and its (weak) owner.
struct Served<H: FrameHandler> {
    conn: Arc<InConn>,
    owner: Weak<H>,
}

impl<H: FrameHandler> Watched for Served<H> {
    fn readable(&self) {
        if let Some(owner) = self.owner.upgrade() {
            self.conn.serve_ready(&owner);
        }
    }
    fn quiet_since(&self, seen: &mut u64) -> bool {
        let act = self.conn.activity.load(Ordering::SeqCst);
        let quiet = self.conn.app_waiting.load(Ordering::SeqCst) == 0 && *seen == act;
        *seen = act;
        quiet
    }
    fn take_over(&self) {
        self.conn.take_over();
    }
}

impl InConn {
    /// An accepted connection from `peer`.
    pub(crate) fn new(peer: Uuid, rd: FrameReader, poller: Arc<Poller>) -> io::Result<Arc<InConn>> {
        Self::build(peer, rd, poller, false)
    }

    /// Our own outgoing connection to `peer`, read in reverse (see `duplex`).
    pub(crate) fn new_reverse(
        peer: Uuid,
        rd: FrameReader,
        poller: Arc<Poller>,
    ) -> io::Result<Arc<InConn>> {
        Self::build(peer, rd, poller, true)
    }

    fn build(
        peer: Uuid,
        rd: FrameReader,
        poller: Arc<Poller>,
        reverse: bool,
    ) -> io::Result<Arc<InConn>> {
        // SAFETY: plain syscall without pointers; the result is checked below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        let kick = unsafe { OwnedFd::from_raw_fd(fd) };
        let sock = rd.fd();
        Ok(Arc::new(InConn {
            peer,
            state: Mutex::new(InState {
                reader: Some(Reader {
                    rd,
                    saw_bye: false,
                    frames: 0,
                }),
                ended: false,
            }),
            cv: Condvar::new(),
            app_waiting: AtomicUsize::new(0),
            activity: AtomicU64::new(0),
            kick,
            fd: sock,
            poller,
            token: AtomicU64::new(0),
            reverse,
            duplex_offer: Mutex::new(None),
            moved: AtomicBool::new(false),
        }))
    }

    /// Keep the socket the peer offered (DUPLEX) until our first send to it.
    pub(crate) fn keep_duplex_offer(&self, tcp: std::net::TcpStream, window: u64) {
        *lock(&self.duplex_offer) = Some((tcp, window));
    }

    /// Whether the peer moved its frames off this connection (MOVED).
    pub(crate) fn moved(&self) -> bool {
        self.moved.load(Ordering::SeqCst)
    }

    /// The socket the peer offered us to write to it on (DUPLEX) and the
    /// window it granted there, once (see `duplex`).
    pub(crate) fn take_duplex_offer(&self) -> Option<(std::net::TcpStream, u64)> {
        lock(&self.duplex_offer).take()
    }

    /// Hand the connection to the poller (it starts reading at once).
    pub(crate) fn watch<H: FrameHandler>(self: &Arc<Self>, owner: &Arc<H>) {
        let served: Arc<dyn Watched> = Arc::new(Served {
            conn: Arc::clone(self),
            owner: Arc::downgrade(owner),
        });
        let token = self.poller.add(served);
        self.token.store(token, Ordering::SeqCst);
        self.take_over();
    }

    fn token(&self) -> u64 {
        self.token.load(Ordering::SeqCst)
    }

    /// Poller side: arm the socket, or read at once if bytes are buffered.
    fn take_over(&self) {
        let mut st = lock(&self.state);
        if st.ended {
            return;
        }
        // Held by an application thread: it hands the connection back when it leaves.
        let Some(r) = st.reader.as_mut() else {
            return;
        };
        if r.rd.buffered() || r.rd.arm() {
            drop(st);
            self.poller.run_soon(self.token());
        } else if let Err(e) = self.poller.arm(self.token(), self.fd) {
            warn!(peer = %self.peer, error = %e, "cannot watch a data connection");
        }
    }

    /// Poller side: the socket is readable; read the frames that are there.
    fn serve_ready<H: FrameHandler>(self: &Arc<Self>, owner: &Arc<H>) {
        let mut st = lock(&self.state);
        if st.ended {
            return;
        }
        let Some(mut r) = st.reader.take() else {
            return;
        };
        drop(st);
        if self.reverse && r.frames == 0 && !owner.may_read_reverse(self) {
            // Parked, unwatched, until the peer's MOVED is read on its own
            // connection (`unpark`): its frames there come first.
            lock(&self.state).reader = Some(r);
            return;
        }
        if !r.rd.ready() {
            // A wake-up with nothing to read (a stale doorbell): watch again.
            lock(&self.state).reader = Some(r);
            self.take_over();
            return;
        }
        loop {
            if let Err(reason) = read_frame(owner, self, &mut r) {
                self.end(owner, r, reason);
                return;
            }
            if self.app_waiting.load(Ordering::SeqCst) > 0 || owner.is_shutting_down() {
                break;
            }
            if !r.rd.ready() {
                break;
            }
        }
        let mut st = lock(&self.state);
        st.reader = Some(r);
        drop(st);
        self.cv.notify_all();
        if self.app_waiting.load(Ordering::SeqCst) > 0 {
            self.poller.hand_back(self.token());
        } else {
            self.take_over();
        }
    }

    /// Read a parked reverse connection (see `serve_ready`) again.
    pub(crate) fn unpark(&self) {
        self.take_over();
    }

    /// A frame from this peer is now awaited by no application thread
    /// (the CTS or credit a nonblocking send needs): if none waits on the
    /// connection, the poller reads it from now on instead of after the
    /// lazy hand-back's tick (1–2 ms in which a window of rendezvous sends
    /// would see neither its CTSs nor returned credit).
    pub(crate) fn watch_now(&self) {
        if self.app_waiting.load(Ordering::SeqCst) == 0 {
            self.take_over();
        }
    }

    fn kick(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own eventfd. A full
        // counter (EAGAIN) already means "kicked", so the result is ignored.
        unsafe { libc::write(self.kick.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn drain_kick(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64 from our own non-blocking eventfd.
        unsafe { libc::read(self.kick.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// Make every thread waiting on this connection re-check its completion.
    pub(crate) fn wake(&self) {
        let _g = lock(&self.state);
        self.cv.notify_all();
        self.kick();
    }

    /// Shut the socket down (engine stop): its reader then sees EOF.
    pub(crate) fn shutdown_socket(&self) {
        let st = lock(&self.state);
        if !st.ended {
            // SAFETY: `fd` is open while `ended` is false, and it is closed only
            // with the state lock held after `ended` was set.
            unsafe { libc::shutdown(self.fd, libc::SHUT_RDWR) };
        }
    }

    /// Application token holder: wait for data (or a kick / the deadline), then process one frame.
    /// `Err` carries why the connection must end.
    fn pump<H: FrameHandler>(
        self: &Arc<Self>,
        owner: &Arc<H>,
        r: &mut Reader,
        deadline: Option<Instant>,
    ) -> std::result::Result<Step, String> {
        if !r.rd.buffered() && !r.rd.linger() && !r.rd.arm() {
            let timeout_ms: libc::c_int = match deadline {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(Step::Timeout);
                    }
                    // Round up so we never wake before the deadline.
                    left.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int
                }
            };
            // Never sleeping: only glance at the socket and the kick, then linger again.
            let timeout_ms = if r.rd.never_blocks() { 0 } else { timeout_ms };
            let mut fds = [
                libc::pollfd {
                    fd: self.fd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.kick.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: `fds` is a live array of two pollfd; both descriptors stay open
            // while we hold the token (the socket) or the InConn (the eventfd).
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    return Ok(Step::Progress);
                }
                return Err(format!("poll failed: {e}"));
            }
            if fds[1].revents != 0 {
                self.drain_kick();
            }
            if fds[0].revents == 0 {
                return Ok(if n == 0 && timeout_ms != 0 {
                    Step::Timeout
                } else {
                    Step::Progress
                });
            }
            if timeout_ms != 0 {
                r.rd.woke();
            }
            if !r.rd.readable_when_polled() && !r.rd.ready() {
                // A stale doorbell: nothing to read after all.
                return Ok(Step::Progress);
            }
        }
        read_frame(owner, self, r).map(|()| Step::Progress)
    }

    /// The connection ended: close it, then run failure detection (EOF without BYE → PeerFailed).
    fn end<H: FrameHandler>(self: &Arc<Self>, owner: &Arc<H>, r: Reader, reason: String) {
        let saw_bye = r.saw_bye;
        let r_frames = r.frames;
        {
            let mut st = lock(&self.state);
            st.ended = true;
            self.poller.remove(self.token(), self.fd);
            // Closes the socket, with the state lock held (see shutdown_socket).
            drop(r);
        }
        owner.connection_closed(self);
        let peer = self.peer;
        if !owner.is_shutting_down() {
            if self.moved() {
                debug!(%peer, "the peer's frames continue on our connection");
            } else if self.reverse && r_frames == 0 {
                // The peer never wrote on our connection: its departure
                // or death shows where it writes (or on our writes).
                debug!(%peer, %reason, "our connection to the peer ended; it never wrote on it");
            } else if saw_bye {
                debug!(%peer, "peer said goodbye");
                owner.peer_departed(peer, "peer engine shut down (BYE)");
            } else {
                warn!(%peer, %reason, "data connection from peer ended without BYE; treating the peer as failed");
                owner.peer_lost(peer, &format!("connection lost without BYE: {reason}"));
            }
        }
        self.wake();
    }

    /// Application thread: block until `done` completes (or `deadline`), reading
    /// this connection ourselves whenever nobody else does.
    /// Returns None on timeout with `done` still pending.
    pub(crate) fn wait_reading<H: FrameHandler, T>(
        self: &Arc<Self>,
        owner: &Arc<H>,
        done: &Completion<T>,
        deadline: Option<Instant>,
    ) -> Option<Result<T>> {
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.app_waiting.fetch_add(1, Ordering::SeqCst);
        self.activity.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.app_waiting);
        let mut st = lock(&self.state);
        loop {
            if !done.is_pending() {
                drop(st);
                return done.wait_until(None);
            }
            if st.ended {
                drop(st);
                return done.wait_until(deadline);
            }
            if let Some(mut r) = st.reader.take() {
                drop(st);
                let mut timed_out = false;
                while done.is_pending() {
                    match self.pump(owner, &mut r, deadline) {
                        Ok(Step::Progress) => {}
                        Ok(Step::Timeout) => {
                            timed_out = true;
                            break;
                        }
                        Err(reason) => {
                            self.end(owner, r, reason);
                            self.hand_back_done();
                            return done.wait_until(deadline);
                        }
                    }
                    if self.app_waiting.load(Ordering::SeqCst) > 1 {
                        // The frame may have completed another waiter of this peer.
                        let _g = lock(&self.state);
                        self.cv.notify_all();
                    }
                }
                st = lock(&self.state);
                st.reader = Some(r);
                // Only other application threads wait on the condvar for the token.
                if self.app_waiting.load(Ordering::SeqCst) > 1 {
                    self.cv.notify_all();
                }
                drop(st);
                self.hand_back_done();
                if timed_out && done.is_pending() {
                    return None;
                }
                st = lock(&self.state);
                continue;
            }
            let (g, timed_out) = cv_wait(&self.cv, st, deadline);
            st = g;
            if timed_out && done.is_pending() {
                return None;
            }
        }
    }

    fn hand_back_done(&self) {
        self.poller.hand_back(self.token());
    }
}

/// Read one frame and act on it. Err carries why the connection must end.
fn read_frame<H: FrameHandler>(
    owner: &Arc<H>,
    conn: &Arc<InConn>,
    r: &mut Reader,
) -> std::result::Result<(), String> {
    let peer = conn.peer;
    let mut hb = [0u8; HEADER_LEN];
    if let Err(e) = r.rd.read_exact(&mut hb) {
        return Err(if e.kind() == io::ErrorKind::UnexpectedEof {
            "connection closed".to_owned()
        } else {
            format!("read error: {e}")
        });
    }
    let hdr = FrameHeader::decode(&hb).map_err(|e| format!("{e}"))?;
    if r.saw_bye {
        return Err(format!("{:?} frame after BYE", hdr.kind));
    }
    let first = r.frames == 0;
    r.frames += 1;
    if first && conn.reverse {
        // The peer took our DUPLEX offer: this is where it writes now.
        owner.reverse_in_use(conn).map_err(|e| format!("{e}"))?;
    }
    if hdr.kind == FrameKind::Duplex {
        if !first || conn.reverse {
            return Err("DUPLEX frame that is not an accepted connection's first".to_owned());
        }
        r.rd.decline();
        let writer = r.rd.duplex_writer().map_err(|e| format!("{e}"))?;
        return owner
            .duplex_offered(conn, writer, hdr.count)
            .map_err(|e| format!("{e}"));
    }
    if hdr.kind == FrameKind::Moved {
        if first || conn.reverse {
            return Err("MOVED frame where the peer could not have moved".to_owned());
        }
        owner.peer_moved(conn).map_err(|e| format!("{e}"))?;
        conn.moved.store(true, Ordering::SeqCst);
        return Err("the peer moved to our connection".to_owned());
    }
    if hdr.kind == FrameKind::Shm {
        if !first {
            return Err("SHM frame after other frames".to_owned());
        }
        return r.rd.upgrade(hdr.count).map_err(|e| format!("{e}"));
    }
    if first {
        r.rd.decline();
    }
    let res = match hdr.kind {
        FrameKind::Eager | FrameKind::SyncEager | FrameKind::Rts | FrameKind::Data => {
            owner.message(peer, hdr, &mut r.rd)
        }
        FrameKind::SyncAck | FrameKind::Cts | FrameKind::Credit | FrameKind::Abort => {
            owner.control(peer, hdr)
        }
        FrameKind::Bye => {
            r.saw_bye = true;
            Ok(())
        }
        FrameKind::Shm | FrameKind::Duplex | FrameKind::Moved => Ok(()),
    };
    res.map_err(|e| format!("{e}"))
}

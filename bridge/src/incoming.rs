//! Incoming connections and who reads them: leader/follower progress.
//!
//! Each incoming connection has one [`Reader`] (the buffered socket) that at
//! most one thread holds at a time — the "reader token". Whoever holds it
//! reads frames and matches them exactly as described in the crate docs.
//!
//! * The connection's background thread holds the token while no application
//!   thread is waiting on this peer, and blocks in `poll(2)` on the socket and
//!   a wake-up eventfd (never spins). That keeps independent progress:
//!   messages arrive, SYNC_ACKs go out and large frames drain while the
//!   application computes.
//! * An application thread that blocks for something only this peer can
//!   deliver (a receive naming one of its ranks, the SYNC_ACK of an ssend to
//!   it) takes the token and reads the socket itself: the frame that
//!   completes its wait is read, matched (zero-copy into a posted buffer) and
//!   completed by the thread that wanted it — one wake-up per message instead
//!   of two (reader thread, then a Condvar). If the background thread holds
//!   the token it is kicked out of `poll` through the eventfd.
//! * Handing the token back is lazy: a leaving application thread does not
//!   wake the background thread (that would cost a wake-up per message); the
//!   parked background thread rechecks every [`HANDBACK_TICK`] and takes the
//!   token once no application thread waited during a whole tick (so a
//!   ping-pong that leaves the library between messages never has to kick
//!   it). Independent progress therefore resumes at most two ticks after the
//!   application stops calling in (threads blocked in probe, `wait_any`, an
//!   issend request or an ANY_SOURCE receive over several processes rely on
//!   the background readers and may see a message up to that late).
//! * Anything that completes a waiter without reading this socket (peer
//!   failure, engine shutdown, intercomm teardown) calls [`InConn::wake`] so
//!   token holders blocked in `poll` and threads waiting for the token
//!   re-check their completion.

use std::io::{self, BufReader, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tracing::{debug, warn};
use uuid::Uuid;

use crate::completion::Completion;
use crate::error::Result;
use crate::frame::{FrameHeader, FrameKind, HEADER_LEN};
use crate::outgoing::PeerLost;
use crate::sync::{cv_wait, lock};
use crate::transport::Stream;

/// The buffered socket a token holder reads frames (and payloads) from.
pub(crate) type FrameReader = BufReader<Stream>;

/// What reading a connection reports to its owner (the engine); a
/// connection that ends without BYE is reported through [`PeerLost`].
pub(crate) trait FrameHandler: PeerLost {
    fn is_shutting_down(&self) -> bool;
    /// A message frame (EAGER or SYNC_EAGER) from `peer`; its payload is next
    /// in `rd`. `Err` ends the connection.
    fn message(self: &Arc<Self>, peer: Uuid, hdr: FrameHeader, rd: &mut FrameReader) -> Result<()>;
    /// `peer` acknowledged our synchronous send `seq`.
    fn sync_ack(&self, peer: Uuid, seq: u64);
    /// `peer` said goodbye (BYE) and closed: nothing more will come from it.
    fn peer_departed(&self, peer: Uuid, reason: &str);
}

/// How often a parked background reader checks whether application threads left.
pub(crate) const HANDBACK_TICK: Duration = Duration::from_millis(1);
/// Read buffer of a connection; big enough to pick up many small frames per read().
const READ_BUFFER: usize = 256 * 1024;

/// The reader token: the buffered socket plus per-connection parse state.
pub(crate) struct Reader {
    rd: FrameReader,
    saw_bye: bool,
}

struct InState {
    /// None while some thread holds the token.
    reader: Option<Reader>,
    /// The background thread holds the token (so it must be kicked to get it).
    bg_holds: bool,
    /// The connection ended (EOF, error, protocol violation); nobody reads it any more.
    ended: bool,
}

/// One accepted data connection from `peer`.
pub(crate) struct InConn {
    pub peer: Uuid,
    state: Mutex<InState>,
    /// Token hand-over and "your completion may be done" notifications.
    cv: Condvar,
    /// Application threads currently waiting on this peer (read without the lock by token holders).
    app_waiting: AtomicUsize,
    /// Bumped whenever an application thread starts waiting: tells the parked
    /// background thread whether the application was active during its last tick.
    activity: AtomicU64,
    /// eventfd that interrupts a token holder blocked in poll().
    kick: OwnedFd,
}

enum Step {
    /// Processed a frame or was interrupted: re-check what we wait for.
    Progress,
    Timeout,
    /// The connection is gone; end handling already done.
    Ended,
}

impl InConn {
    pub(crate) fn new(peer: Uuid, stream: Stream) -> io::Result<Arc<InConn>> {
        // SAFETY: plain syscall without pointers; the result is checked below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        let kick = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Arc::new(InConn {
            peer,
            state: Mutex::new(InState {
                reader: Some(Reader {
                    rd: BufReader::with_capacity(READ_BUFFER, stream),
                    saw_bye: false,
                }),
                bg_holds: false,
                ended: false,
            }),
            cv: Condvar::new(),
            app_waiting: AtomicUsize::new(0),
            activity: AtomicU64::new(0),
            kick,
        }))
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

    /// Token holder: wait for data (or a kick / the deadline), then process one frame.
    fn pump<H: FrameHandler>(
        &self,
        owner: &Arc<H>,
        r: &mut Reader,
        deadline: Option<Instant>,
    ) -> Step {
        if r.rd.buffer().is_empty() {
            let timeout_ms: libc::c_int = match deadline {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Step::Timeout;
                    }
                    // Round up so we never wake before the deadline.
                    left.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int
                }
            };
            let mut fds = [
                libc::pollfd {
                    fd: r.rd.get_ref().as_raw_fd(),
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
                    return Step::Progress;
                }
                return self.end(owner, r, format!("poll failed: {e}"));
            }
            if fds[1].revents != 0 {
                self.drain_kick();
            }
            if fds[0].revents == 0 {
                return if n == 0 {
                    Step::Timeout
                } else {
                    Step::Progress
                };
            }
        }
        match read_frame(owner, self.peer, r) {
            Ok(()) => Step::Progress,
            Err(reason) => self.end(owner, r, reason),
        }
    }

    /// The connection ended: record it and run failure detection (EOF without BYE → PeerFailed).
    fn end<H: FrameHandler>(&self, owner: &Arc<H>, r: &Reader, reason: String) -> Step {
        lock(&self.state).ended = true;
        let peer = self.peer;
        if !owner.is_shutting_down() {
            if r.saw_bye {
                debug!(%peer, "peer said goodbye");
                owner.peer_departed(peer, "peer engine shut down (BYE)");
            } else {
                warn!(%peer, %reason, "data connection from peer ended without BYE; treating the peer as failed");
                owner.peer_lost(peer, &format!("connection lost without BYE: {reason}"));
            }
        }
        self.wake();
        Step::Ended
    }

    /// Background thread body: hold the token whenever no application thread wants it.
    pub(crate) fn background<H: FrameHandler>(self: Arc<Self>, owner: Arc<H>) {
        // At connection start nobody waits yet: take the token at once.
        let mut quiet_needed = false;
        loop {
            let mut r = {
                let mut st = lock(&self.state);
                let mut seen: Option<u64> = None;
                loop {
                    if st.ended || owner.is_shutting_down() {
                        return;
                    }
                    let act = self.activity.load(Ordering::SeqCst);
                    if self.app_waiting.load(Ordering::SeqCst) == 0
                        && (!quiet_needed || seen == Some(act))
                    {
                        if let Some(r) = st.reader.take() {
                            st.bg_holds = true;
                            break r;
                        }
                    }
                    seen = Some(act);
                    st = cv_wait(&self.cv, st, Some(Instant::now() + HANDBACK_TICK)).0;
                }
            };
            quiet_needed = true;
            loop {
                if let Step::Ended = self.pump(&owner, &mut r, None) {
                    return;
                }
                if self.app_waiting.load(Ordering::SeqCst) > 0 || owner.is_shutting_down() {
                    break;
                }
            }
            let mut st = lock(&self.state);
            st.reader = Some(r);
            st.bg_holds = false;
            drop(st);
            self.cv.notify_all();
        }
    }

    /// Application thread: block until `done` completes (or `deadline`), reading
    /// this connection ourselves whenever nobody else does.
    /// Returns None on timeout with `done` still pending.
    pub(crate) fn wait_reading<H: FrameHandler, T>(
        &self,
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
        self.activity.fetch_add(1, Ordering::Relaxed);
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
                let mut ended = false;
                while done.is_pending() {
                    match self.pump(owner, &mut r, deadline) {
                        Step::Progress => {}
                        Step::Timeout => {
                            timed_out = true;
                            break;
                        }
                        Step::Ended => {
                            ended = true;
                            break;
                        }
                    }
                    if self.app_waiting.load(Ordering::SeqCst) > 1 {
                        // The frame may have completed another waiter of this peer.
                        let _g = lock(&self.state);
                        self.cv.notify_all();
                    }
                }
                st = lock(&self.state);
                if !ended {
                    st.reader = Some(r);
                }
                if self.app_waiting.load(Ordering::SeqCst) > 1 {
                    self.cv.notify_all();
                }
                if timed_out && done.is_pending() {
                    return None;
                }
                continue;
            }
            if st.bg_holds {
                self.kick();
            }
            let (g, timed_out) = cv_wait(&self.cv, st, deadline);
            st = g;
            if timed_out && done.is_pending() {
                return None;
            }
        }
    }
}

/// Read one frame and act on it. Err carries why the connection must end.
fn read_frame<H: FrameHandler>(
    owner: &Arc<H>,
    peer: Uuid,
    r: &mut Reader,
) -> std::result::Result<(), String> {
    let mut hb = [0u8; HEADER_LEN];
    if let Err(e) = r.rd.read_exact(&mut hb) {
        return Err(if e.kind() == io::ErrorKind::UnexpectedEof {
            "connection closed".to_owned()
        } else {
            format!("read error: {e}")
        });
    }
    let hdr = FrameHeader::decode(&hb).map_err(|e| format!("{e}"))?;
    let res = match hdr.kind {
        FrameKind::Eager | FrameKind::SyncEager => owner.message(peer, hdr, &mut r.rd),
        FrameKind::SyncAck => {
            owner.sync_ack(peer, hdr.seq);
            Ok(())
        }
        FrameKind::Bye => {
            r.saw_bye = true;
            Ok(())
        }
    };
    res.map_err(|e| format!("{e}"))
}

//! Our one outgoing connection to each peer ([`OutConn`]): frames are
//! written inline by the sending thread when the connection is idle, else
//! queued for the connection's writer thread. A write error is reported to
//! the owner through [`PeerLost`].
//!
//! Two lanes: messages (EAGER, SYNC_EAGER, RTS, and pushed DATA, which
//! must follow its RTS) keep their posting order (MPI's non-overtaking
//! rule); control frames and rendezvous payloads asked for by a CTS
//! (SYNC_ACK, CTS, CREDIT, DATA) have no order to keep and are never held
//! back. The message lane stops while [`MAX_UNEXPECTED_RTS`] announcements
//! are unanswered; the control lane never waits for the peer, so two
//! processes sending to each other cannot block each other's CTSs.
//! A control frame may also go from the thread that read the frame it
//! answers, when nothing is queued ahead of it and the byte path takes it
//! without waiting (`try_control_now`); if a socket took only part of it,
//! the rest goes before anything else (the writer finishes it if no other
//! write does first). The connection also holds the eager credit the peer
//! granted us; the writer thread first waits for the initial grant (see
//! `await_grant`).

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::address::Route;
use crate::error::{BridgeError, Result};
use crate::frame::{FrameHeader, FrameKind};
use crate::ledger::MAX_UNEXPECTED_RTS;
use crate::sync::{cv_wait, lock};

use super::link::{Link, Outbound, PeerLost, Queued, TryInline};
use super::shm::SingleCopyGate;
use super::socket::{read_grant, Grant, Stream};

struct OutState {
    /// None while some thread is writing (it holds the byte path).
    stream: Option<Box<dyn Outbound>>,
    /// Message lane: EAGER, SYNC_EAGER, RTS in posting order.
    queue: VecDeque<Queued>,
    /// Control lane: SYNC_ACK, CTS, CREDIT, DATA.
    control: VecDeque<Queued>,
    /// Eager credit left (bytes the peer lets us make it hold).
    credit: u64,
    /// RTS written and not yet answered by CTS.
    rts_out: u32,
    /// RTS in `queue` (not written yet).
    rts_queued: u32,
    failed: Option<String>,
    closing: bool,
    /// Application threads blocked on `cv` (for the stream, a lane, the grant).
    waiting: usize,
    /// The writer thread sleeps on `writer_cv` for something to write.
    writer_idle: bool,
    /// The peer said its initial grant follows (it waits for the table
    /// naming us); cleared when the grant arrives.
    grant_pending: bool,
    /// A control frame written without waiting was taken only in part
    /// (`Outbound::unfinished`): the writer finishes it unless another
    /// write does first.
    unfinished: bool,
    /// The peer writes to us on this connection too (see `duplex`): how
    /// long our goodbye waits for its acknowledgements. None: one-way.
    duplex_linger: Option<Duration>,
    /// We opened this connection and offered it with DUPLEX.
    offered: bool,
    /// Move to this socket (the peer's connection, see `duplex`): the
    /// writer writes MOVED on the current one, then writes here.
    move_to: Option<Stream>,
}

/// What the writer thread does next.
enum WriterStep {
    Frame(Queued),
    /// Write the rest of a frame the socket took only part of.
    Finish,
    /// Write MOVED, then carry on on this socket (see `duplex`).
    Move(Stream),
    /// Closing and drained: say goodbye (see `duplex::goodbye` for `Some`).
    Bye(Option<Duration>),
}

/// Our one outgoing connection to a peer process. Frames are written either
/// inline by the caller (when the connection is idle and nothing is queued)
/// or by the connection's writer thread, always in FIFO order.
pub(crate) struct OutConn {
    pub peer: Uuid,
    /// How the connection reached the peer (see [`OutConn::route`]).
    route: Mutex<Route>,
    state: Mutex<OutState>,
    /// Application threads waiting to write inline or for the grant.
    cv: Condvar,
    /// The writer thread waiting for work. Kept apart from `cv` so that a
    /// frame written inline does not wake the writer for nothing: in a
    /// ping-pong every blocking send would otherwise cost a futex wake and a
    /// context switch to a thread that finds no work (two futex calls per
    /// message, measured with strace).
    writer_cv: Condvar,
    /// The socket (a clone), to shut it down from outside and to see it
    /// close; frames go through `stream` (the socket or shared memory).
    shutdown_handle: Mutex<Stream>,
    /// On shared memory: whether the peer may read our memory, and the
    /// smallest message it reads there (see `Link::single_copy`).
    single_copy: Option<(SingleCopyGate, usize)>,
}

impl OutConn {
    /// `grant_pending`: the peer's initial grant is still to come (see
    /// [`OutConn::await_grant`]), meanwhile `credit` is 0.
    pub(crate) fn new(
        peer: Uuid,
        stream: Box<dyn Outbound>,
        shutdown_handle: Stream,
        route: Route,
        credit: u64,
        grant_pending: bool,
        single_copy: Option<(SingleCopyGate, usize)>,
    ) -> Arc<OutConn> {
        Arc::new(OutConn {
            peer,
            route: Mutex::new(route),
            state: Mutex::new(OutState {
                stream: Some(stream),
                queue: VecDeque::new(),
                control: VecDeque::new(),
                credit,
                rts_out: 0,
                rts_queued: 0,
                failed: None,
                closing: false,
                waiting: 0,
                writer_idle: false,
                grant_pending,
                unfinished: false,
                duplex_linger: None,
                offered: false,
                move_to: None,
            }),
            cv: Condvar::new(),
            writer_cv: Condvar::new(),
            shutdown_handle: Mutex::new(shutdown_handle),
            single_copy,
        })
    }

    /// The peer writes to us on this connection too (see `duplex`); our
    /// goodbye waits up to `linger` for its acknowledgements.
    pub(crate) fn read_by_peer_too(&self, linger: Duration) {
        lock(&self.state).duplex_linger = Some(linger);
    }

    /// How the connection reached the peer (the peer's own, after a move).
    pub(crate) fn route(&self) -> Route {
        lock(&self.route).clone()
    }

    /// We opened this connection and offered it with DUPLEX.
    pub(crate) fn offered_duplex(&self, linger: Duration) {
        let mut st = lock(&self.state);
        st.duplex_linger = Some(linger);
        st.offered = true;
    }

    /// Whether we opened this connection and offered it with DUPLEX (and
    /// have not moved off it).
    pub(crate) fn is_offered(&self) -> bool {
        lock(&self.state).offered
    }

    /// Carry our frames on `stream` (the connection the peer opened to us
    /// and offered) from now on: the writer ends this one with MOVED
    /// first (see `duplex`). Once only.
    pub(crate) fn move_to(&self, stream: Stream) {
        let mut st = lock(&self.state);
        if !st.offered {
            return;
        }
        st.offered = false;
        st.move_to = Some(stream);
        self.writer_cv.notify_one();
    }

    /// Whether the peer may read our large messages from our memory.
    pub(crate) fn single_copy_allowed(&self) -> bool {
        self.single_copy
            .as_ref()
            .is_some_and(|(gate, _)| gate.open())
    }

    fn failed_err(reason: &str, dest_rank: u32) -> BridgeError {
        BridgeError::PeerFailed {
            rank: dest_rank,
            reason: reason.to_owned(),
        }
    }

    /// Frames not yet written (queued on either lane, or being written);
    /// None once the connection failed (nothing more will be written).
    pub(crate) fn backlog(&self) -> Option<usize> {
        let st = lock(&self.state);
        if st.failed.is_some() {
            return None;
        }
        let writing = usize::from(st.stream.is_none() || st.unfinished);
        Some(st.queue.len() + st.control.len() + writing)
    }

    /// Whether the peer closed its end of this connection (EOF or reset).
    /// A one-way connection's peer never writes to us on it after its
    /// grant (a duplex one's writes BYE before it closes), so anything but
    /// "no data yet" or data means it is gone — how a shutdown's flush
    /// learns that a peer it waits for died, when no connection from it
    /// would tell.
    pub(crate) fn peer_closed(&self) -> bool {
        use std::os::fd::AsRawFd;
        {
            let st = lock(&self.state);
            if st.grant_pending || st.failed.is_some() {
                return false;
            }
        }
        let mut byte = [0u8; 1];
        // SAFETY: the fd is this connection's open socket (a clone kept for
        // shutting it down); recv writes at most one byte into `byte`.
        let n = unsafe {
            libc::recv(
                lock(&self.shutdown_handle).as_raw_fd(),
                byte.as_mut_ptr().cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        match n {
            0 => true,
            n if n > 0 => false,
            _ => matches!(
                io::Error::last_os_error().raw_os_error(),
                Some(libc::ECONNRESET | libc::ENOTCONN | libc::EPIPE)
            ),
        }
    }

    /// The peer returned eager credit.
    pub(crate) fn add_credit(&self, bytes: u64) {
        let mut st = lock(&self.state);
        st.credit = st.credit.saturating_add(bytes);
    }

    /// A CTS answered one of our RTSs: the message lane may move again.
    pub(crate) fn rts_answered(&self) {
        let mut st = lock(&self.state);
        st.rts_out = st.rts_out.saturating_sub(1);
        self.notify(st);
    }

    /// Release the state lock and wake whoever may now proceed: application
    /// threads blocked on `cv`, and the writer thread only if it sleeps and
    /// has something to do (queued frames, closing, failed).
    fn notify(&self, st: MutexGuard<'_, OutState>) {
        let app = st.waiting > 0;
        let writer = st.writer_idle
            && (!st.control.is_empty()
                || !st.queue.is_empty()
                || st.unfinished
                || st.move_to.is_some()
                || st.closing
                || st.failed.is_some());
        drop(st);
        if app {
            self.cv.notify_all();
        }
        if writer {
            self.writer_cv.notify_one();
        }
    }

    /// Mark failed: queued frames error out; the socket is shut down.
    /// Returns how many messages (message-lane frames and payloads) were
    /// still queued and are lost.
    pub(crate) fn fail(&self, reason: &str) -> usize {
        let queued: Vec<Queued> = {
            let mut st = lock(&self.state);
            if st.failed.is_none() {
                st.failed = Some(reason.to_owned());
            }
            let mut all: Vec<Queued> = st.control.drain(..).collect();
            all.extend(st.queue.drain(..));
            st.rts_queued = 0;
            all
        };
        let messages = queued
            .iter()
            .filter(|q| is_message(&q.hdr) || q.hdr.kind == FrameKind::Data)
            .count();
        for q in queued {
            if let Some(d) = q.done {
                d.complete(Err(Self::failed_err(reason, q.dest_rank)));
            }
        }
        lock(&self.shutdown_handle).shutdown();
        self.cv.notify_all();
        self.writer_cv.notify_all();
        messages
    }

    /// Orderly close: the writer drains the queue, sends BYE and exits.
    pub(crate) fn close(&self) {
        let mut st = lock(&self.state);
        st.closing = true;
        let duplex = st.duplex_linger.is_some();
        drop(st);
        if !duplex {
            // Nothing but the credit grant is read from this socket: stop
            // waiting for it, if the writer still does.
            lock(&self.shutdown_handle).shutdown_read();
        }
        self.cv.notify_all();
        self.writer_cv.notify_all();
    }

    /// Writer thread, first, when the peer said its grant follows: the
    /// peer's initial credit grant, sent once it admitted our connection
    /// (once it formed the intercomm naming us). False if the connection is
    /// lost (reported).
    pub(crate) fn await_grant(
        &self,
        mut reader: Stream,
        deadline: Instant,
        lost: &dyn PeerLost,
    ) -> bool {
        let got = match read_grant(&mut reader, deadline) {
            Ok((Grant::Window(bytes), _)) => Ok(bytes),
            Ok((Grant::Follows, _)) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a second 'grant follows' notice",
            )),
            Err(e) => Err(e),
        };
        match got {
            Ok(bytes) => {
                let mut st = lock(&self.state);
                st.credit = st.credit.saturating_add(bytes);
                st.grant_pending = false;
                drop(st);
                self.cv.notify_all();
                true
            }
            Err(e) => {
                let st = lock(&self.state);
                if st.closing || st.failed.is_some() {
                    // The writer loop drains (or returns) as it would anyway.
                    return true;
                }
                drop(st);
                let reason = format!("the peer did not admit our data connection: {e}");
                let _ = self.fail(&reason);
                lost.peer_lost(self.peer, &reason);
                false
            }
        }
    }

    /// Abrupt close (tests / abort): no BYE.
    pub(crate) fn abort(&self) {
        let _ = self.fail("engine aborted");
    }

    /// Writer thread body.
    pub(crate) fn writer_loop(self: Arc<Self>, lost: Arc<impl PeerLost>) {
        loop {
            let mut st = lock(&self.state);
            let (item, mut stream) = loop {
                if st.failed.is_some() {
                    return;
                }
                if st.stream.is_some() {
                    if let Some(q) = st.control.pop_front() {
                        let s = st.stream.take();
                        break (WriterStep::Frame(q), s);
                    }
                    if std::mem::take(&mut st.unfinished) {
                        let s = st.stream.take();
                        break (WriterStep::Finish, s);
                    }
                    if let Some(to) = st.move_to.take() {
                        let s = st.stream.take();
                        break (WriterStep::Move(to), s);
                    }
                    let head_rts = st.queue.front().map(|q| q.hdr.kind == FrameKind::Rts);
                    let movable = match head_rts {
                        Some(true) => st.rts_out < MAX_UNEXPECTED_RTS,
                        Some(false) => true,
                        None => false,
                    };
                    if movable {
                        if let Some(q) = st.queue.pop_front() {
                            if q.hdr.kind == FrameKind::Rts {
                                st.rts_out += 1;
                                st.rts_queued = st.rts_queued.saturating_sub(1);
                            }
                            let s = st.stream.take();
                            break (WriterStep::Frame(q), s);
                        }
                    }
                    if st.closing {
                        // Whatever is still held back (RTSs over the limit)
                        // cannot go out any more: the engine's flush waited
                        // for it until the finalize deadline and reported it.
                        st.rts_queued = 0;
                        for q in st.queue.drain(..) {
                            if let Some(d) = q.done {
                                d.complete(Err(BridgeError::EngineShutDown));
                            }
                        }
                        let s = st.stream.take();
                        break (WriterStep::Bye(st.duplex_linger), s);
                    }
                }
                st.writer_idle = true;
                st = cv_wait(&self.writer_cv, st, None).0;
                st.writer_idle = false;
            };
            drop(st);
            let Some(stream_ref) = stream.as_mut() else {
                return;
            };
            // What completes with the write: a queued frame's request.
            let (res, done) = match item {
                WriterStep::Bye(linger) => {
                    let _ =
                        stream_ref.write_frame(&FrameHeader::control(FrameKind::Bye, 0, 0), &[]);
                    match linger {
                        None => stream_ref.shutdown(),
                        Some(t) => {
                            // A clone: the wait must not hold the handle's lock.
                            if let Ok(h) = lock(&self.shutdown_handle).try_clone() {
                                super::socket::goodbye(&h, self.peer, t)
                            }
                        }
                    }
                    return;
                }
                WriterStep::Finish => (stream_ref.finish(), None),
                WriterStep::Move(to) => (self.carry_on(stream_ref, to), None),
                WriterStep::Frame(q) => {
                    let res = stream_ref.write_frame(&q.hdr, &q.payload);
                    (res, q.done.map(|d| (d, q.dest_rank)))
                }
            };
            let mut st = lock(&self.state);
            st.stream = stream;
            let wake = st.waiting > 0;
            drop(st);
            // Only inline writers can be waiting: this thread is the writer.
            if wake {
                self.cv.notify_all();
            }
            match res {
                Ok(()) => {
                    if let Some((d, _)) = done {
                        d.complete(Ok(()));
                    }
                }
                Err(e) => {
                    let reason = format!("writing to the peer failed: {e}");
                    if let Some((d, rank)) = done {
                        d.complete(Err(Self::failed_err(&reason, rank)));
                    }
                    lost.write_failed(self.peer, &reason);
                    return;
                }
            }
        }
    }
}

impl OutConn {
    /// The move (see [`OutConn::move_to`]), by the writer holding `current`:
    /// MOVED as its last frame, its writing half shut, then `to` in its place.
    fn carry_on(&self, current: &mut Box<dyn Outbound>, to: Stream) -> io::Result<()> {
        let handle = to.try_clone()?;
        current.write_frame(&FrameHeader::control(FrameKind::Moved, 0, 0), &[])?;
        current.shutdown();
        if let Stream::Tcp(t) = &to {
            let mut route = lock(&self.route);
            route.local = t.local_addr().map(|a| a.to_string()).unwrap_or_default();
            route.remote = t.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        }
        *current = Box::new(super::socket::SocketOut::new(to));
        *lock(&self.shutdown_handle) = handle;
        Ok(())
    }
}

/// Frames of the message lane (posting order matters): pushed DATA too,
/// which must not overtake its RTS.
fn is_message(hdr: &FrameHeader) -> bool {
    matches!(
        hdr.kind,
        FrameKind::Eager | FrameKind::SyncEager | FrameKind::Rts
    ) || hdr.pushed()
}

impl Link for OutConn {
    /// Spend `cost` bytes of eager credit; false (nothing spent) if there is not enough.
    fn take_credit(&self, cost: u64) -> bool {
        let mut st = lock(&self.state);
        if st.credit >= cost {
            st.credit -= cost;
            true
        } else {
            false
        }
    }

    /// Block while the peer's initial grant is pending (it has not formed
    /// the intercomm naming us yet); returns once it came, or the
    /// connection failed or is closing. A blocking send of a small message
    /// waits here so that it goes out eagerly, into the socket: buffered in
    /// this process, it would be lost if the process ended before the match.
    fn wait_granted(&self) {
        let mut st = lock(&self.state);
        while st.grant_pending && st.failed.is_none() && !st.closing {
            st.waiting += 1;
            st = cv_wait(&self.cv, st, None).0;
            st.waiting -= 1;
        }
    }

    /// Write one frame from the calling thread, waiting for earlier frames first
    /// (messages keep FIFO order; DATA only waits for the control lane).
    fn write_blocking(
        &self,
        lost: &dyn PeerLost,
        hdr: &FrameHeader,
        payload: &[u8],
        dest_rank: u32,
    ) -> Result<()> {
        match self.write_inline(lost, hdr, payload, dest_rank, true)? {
            TryInline::Done => Ok(()),
            TryInline::Busy => Err(BridgeError::Protocol(
                "internal: blocking write reported busy".into(),
            )),
        }
    }

    /// Write inline if `wait` or the connection is idle; otherwise report Busy.
    fn write_inline(
        &self,
        lost: &dyn PeerLost,
        hdr: &FrameHeader,
        payload: &[u8],
        dest_rank: u32,
        wait: bool,
    ) -> Result<TryInline> {
        let is_message = is_message(hdr);
        let mut st = lock(&self.state);
        let mut stream = loop {
            if let Some(r) = &st.failed {
                return Err(Self::failed_err(r, dest_rank));
            }
            if st.closing {
                return Err(BridgeError::EngineShutDown);
            }
            let lane_free = st.control.is_empty() && (!is_message || st.queue.is_empty());
            let rts_ok = hdr.kind != FrameKind::Rts || st.rts_out < MAX_UNEXPECTED_RTS;
            if lane_free && rts_ok {
                if let Some(s) = st.stream.take() {
                    if hdr.kind == FrameKind::Rts {
                        st.rts_out += 1;
                    }
                    break s;
                }
            }
            if !wait {
                return Ok(TryInline::Busy);
            }
            st.waiting += 1;
            st = cv_wait(&self.cv, st, None).0;
            st.waiting -= 1;
        };
        drop(st);
        let res = stream.write_frame(hdr, payload);
        let mut st = lock(&self.state);
        st.stream = Some(stream);
        // Frames queued meanwhile are the writer's now.
        self.notify(st);
        match res {
            Ok(()) => Ok(TryInline::Done),
            Err(e) => {
                let reason = format!("writing to the peer failed: {e}");
                lost.write_failed(self.peer, &reason);
                Err(Self::failed_err(&reason, dest_rank))
            }
        }
    }

    fn try_control_now(&self, lost: &dyn PeerLost, hdr: &FrameHeader) -> Result<bool> {
        let mut st = lock(&self.state);
        if st.failed.is_some() || st.closing || st.grant_pending || !st.control.is_empty() {
            // The enqueue reports the failure, keeps the lane's order, or
            // leaves the frame to the writer, which writes once admitted.
            return Ok(false);
        }
        let Some(mut stream) = st.stream.take() else {
            return Ok(false);
        };
        drop(st);
        let res = stream.try_write_now(hdr, &[]);
        let mut st = lock(&self.state);
        if stream.unfinished() {
            st.unfinished = true;
        }
        st.stream = Some(stream);
        // Frames queued meanwhile are the writer's now.
        self.notify(st);
        match res {
            Ok(written) => Ok(written),
            Err(e) => {
                let reason = format!("writing to the peer failed: {e}");
                lost.write_failed(self.peer, &reason);
                Err(Self::failed_err(&reason, 0))
            }
        }
    }

    fn single_copy(&self, len: usize) -> bool {
        self.single_copy
            .as_ref()
            .is_some_and(|(gate, threshold)| len >= *threshold && gate.open())
    }

    /// Hand a frame to the writer thread.
    fn enqueue(&self, q: Queued) -> Result<()> {
        let mut st = lock(&self.state);
        if let Some(r) = &st.failed {
            return Err(Self::failed_err(r, q.dest_rank));
        }
        if st.closing {
            return Err(BridgeError::EngineShutDown);
        }
        if is_message(&q.hdr) {
            if q.hdr.kind == FrameKind::Rts {
                st.rts_queued += 1;
            }
            st.queue.push_back(q);
        } else {
            st.control.push_back(q);
        }
        self.notify(st);
        Ok(())
    }

    /// Queue pushed DATA behind its RTS (message lane) if `cost` bytes of
    /// credit are left — spending them — and every RTS ahead of it will be
    /// written without waiting for a CTS: behind an RTS held back by the
    /// announcement limit, the payload would wait for CTSs that its
    /// receiver, waiting for this payload, might never send. Else `q` comes
    /// back and nothing is spent.
    fn enqueue_on_credit(&self, cost: u64, q: Queued) -> std::result::Result<(), Queued> {
        let mut st = lock(&self.state);
        let room = st.rts_out.saturating_add(st.rts_queued) < MAX_UNEXPECTED_RTS;
        if st.failed.is_some() || st.closing || !room || st.credit < cost {
            return Err(q);
        }
        st.credit -= cost;
        st.queue.push_back(q);
        self.notify(st);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Transport;
    use crate::frame::HEADER_LEN;
    use crate::transport::socket::SocketOut;
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    struct Lost;
    impl PeerLost for Lost {
        fn peer_lost(&self, peer: Uuid, reason: &str) {
            panic!("{peer} lost: {reason}");
        }
    }

    fn read_header(s: &mut UnixStream) -> FrameHeader {
        let mut b = [0u8; HEADER_LEN];
        s.read_exact(&mut b).expect("a frame header");
        FrameHeader::decode(&b).expect("a valid header")
    }

    /// A control frame the socket took only in part (`Outbound::unfinished`)
    /// is finished by the writer thread although nothing else is queued,
    /// before any other frame, and the flush counts it until then.
    #[test]
    fn the_writer_finishes_a_frame_the_socket_took_in_part() {
        let (a, mut b) = UnixStream::pair().unwrap();
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let ack = FrameHeader::control(FrameKind::SyncAck, 1, 2).encode();
        let mut a2 = a.try_clone().unwrap();
        std::io::Write::write_all(&mut a2, &ack[..10]).unwrap();
        let out = SocketOut::taken_but(Stream::Unix(a.try_clone().unwrap()), ack[10..].to_vec());
        let route = Route {
            transport: Transport::Unix,
            local: String::new(),
            remote: "test".into(),
            shared_memory: false,
            single_copy: false,
        };
        let conn = OutConn::new(
            Uuid::new_v4(),
            Box::new(out),
            Stream::Unix(a),
            route,
            0,
            false,
            None,
        );
        // The rest goes first: this frame cannot go now (the caller queues it).
        assert!(!conn
            .try_control_now(&Lost, &FrameHeader::credit(1))
            .unwrap());
        assert_eq!(
            conn.backlog(),
            Some(1),
            "the unfinished frame is still to be written"
        );
        let writer = {
            let c = Arc::clone(&conn);
            std::thread::spawn(move || c.writer_loop(Arc::new(Lost)))
        };
        let h = read_header(&mut b);
        assert_eq!((h.kind, h.context, h.seq), (FrameKind::SyncAck, 1, 2));
        let deadline = Instant::now() + Duration::from_secs(10);
        while conn.backlog() != Some(0) {
            assert!(
                Instant::now() < deadline,
                "the writer did not finish the frame"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        conn.close();
        writer.join().unwrap();
        assert_eq!(read_header(&mut b).kind, FrameKind::Bye);
    }
}

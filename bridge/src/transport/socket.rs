//! The socket transport: the Unix/TCP stream abstraction, writing a frame, and running
//! the connector's side of the handshake (see `handshake`) on a socket with
//! a deadline, then reading the acceptor's credit grant. The acceptor's
//! side runs in `lobby`; reading incoming connections lives in `incoming`,
//! the outgoing connection in `outgoing`.

use std::io::{self, BufReader, IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixStream};
use std::time::{Duration, Instant};

use tracing::{debug, error};
use uuid::Uuid;

use crate::address::{Route, Transport};
use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::frame::{FrameHeader, FrameKind, GRANT_FOLLOWS, HEADER_LEN};
use crate::handshake::{self, Identity};
use crate::wait::{self, WaitMode};

use super::link::{Inbound, Outbound};

/// A connected byte stream, Unix or TCP.
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }
    pub(crate) fn shutdown(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }
    /// Shut down the writing half only: the peer reads what we wrote, then
    /// EOF; we may still read what it sends (a duplex connection's goodbye).
    pub(crate) fn shutdown_write(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
        };
    }
    /// Bytes we wrote that the peer's kernel has not acknowledged yet
    /// (TCP: unsent and unacknowledged, the FIN included; `SIOCOUTQ`).
    pub(crate) fn unacknowledged(&self) -> io::Result<usize> {
        let mut n: libc::c_int = 0;
        // SAFETY: SIOCOUTQ (= TIOCOUTQ) writes one int into `n`, a live local;
        // the descriptor is this stream's open socket.
        let r = unsafe { libc::ioctl(self.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(usize::try_from(n).unwrap_or(0))
    }
    /// A TCP connection that was reset or fully closed (state CLOSE):
    /// nothing written to it will be acknowledged any more.
    pub(crate) fn tcp_closed(&self) -> bool {
        const TCP_CLOSE: u8 = 7;
        let mut info = [0u8; 8];
        let mut len = info.len() as libc::socklen_t;
        // SAFETY: TCP_INFO writes at most `len` bytes into `info`, a live
        // buffer, and sets `len`; its first byte is `tcpi_state`.
        let r = unsafe {
            libc::getsockopt(
                self.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                info.as_mut_ptr().cast(),
                &mut len,
            )
        };
        r == 0 && len >= 1 && info[0] == TCP_CLOSE
    }
    /// Shut down the reading half only (wakes a thread blocked reading it).
    pub(crate) fn shutdown_read(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Read),
            Stream::Tcp(s) => s.shutdown(Shutdown::Read),
        };
    }
    pub(crate) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
        }
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
    fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Stream::Tcp(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
        }
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Stream::Unix(s) => s.as_fd(),
            Stream::Tcp(s) => s.as_fd(),
        }
    }
}

impl std::os::fd::AsRawFd for Stream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

/// One `sendmsg(2)` of `bufs` (at most IOV_MAX, 1024 on Linux; more
/// slices are left to a later call) with `flags`: the bytes taken.
fn sendmsg(s: &Stream, bufs: &[IoSlice<'_>], flags: libc::c_int) -> io::Result<usize> {
    let n = bufs.len().min(1024);
    // SAFETY: an all-zero msghdr is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // IoSlice is guaranteed ABI-compatible with iovec on Unix; sendmsg
    // only reads the slices, which outlive the call.
    msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = n as _;
    // SAFETY: the fd is this stream's open socket; `msg` points to `n`
    // valid iovecs for the duration of the call.
    let r = unsafe { libc::sendmsg(s.as_raw_fd(), &msg, flags) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Writes with `sendmsg(MSG_NOSIGNAL)`: writing to a peer that is gone is
/// an EPIPE error, not a SIGPIPE. A Rust `main` ignores SIGPIPE, but a C,
/// Fortran or Python program using libisthmus keeps the default action,
/// which kills it — e.g. in `MPI_Finalize` saying BYE to a peer that ended.
impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        sendmsg(self, bufs, libc::MSG_NOSIGNAL)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub(crate) fn unix_addr(name: &str) -> io::Result<UnixAddr> {
    match name.strip_prefix('@') {
        Some(abs) => UnixAddr::from_abstract_name(abs.as_bytes()),
        None => UnixAddr::from_pathname(name),
    }
}

/// Header + payload with writev, looping over partial writes.
pub(crate) fn write_frame(s: &mut Stream, hdr: &FrameHeader, payload: &[u8]) -> io::Result<()> {
    let h = hdr.encode();
    let mut storage = [IoSlice::new(&h), IoSlice::new(payload)];
    let mut bufs: &mut [IoSlice<'_>] = if payload.is_empty() {
        &mut storage[..1]
    } else {
        &mut storage[..]
    };
    while !bufs.is_empty() {
        match s.write_vectored(bufs) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "peer stopped accepting data",
                ))
            }
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Open a data connection to `ep` and run the connector handshake; returns
/// the stream and the route it took.
///
/// Where to dial (see `address`): the Unix socket first if `ep` has the
/// same host and the same [`Locality`](crate::address::Locality) as `me`,
/// then its TCP addresses in the order published. An attempt that fails
/// (connect or handshake: another process may answer at an address that is
/// not the peer's) moves on to the next. `me` is this engine's endpoint and
/// `identity` its key pair. All attempts together must finish within
/// `timeout`; each TCP connect gets an equal share of what is left, so one
/// unreachable address cannot use up the rest. Data reads and writes have
/// no timeout.
pub(crate) fn connect(
    me: &Endpoint,
    identity: &Identity,
    ep: &Endpoint,
    timeout: Duration,
) -> Result<(Stream, Route)> {
    let deadline = Instant::now() + timeout;
    let local = ep.host == me.host && me.locality.is_some() && ep.locality == me.locality;
    let mut targets: Vec<Target> = Vec::with_capacity(ep.tcp.len() + 1);
    if let (true, Some(path)) = (local, &ep.unix) {
        targets.push(Target::Unix(path));
    }
    targets.extend(ep.tcp.iter().map(|a| Target::Tcp(*a)));
    if targets.is_empty() {
        return Err(BridgeError::Connect {
            process: ep.process,
            address: format!("host {}", ep.host),
            reason: "endpoint has no TCP address and no Unix socket usable from here".into(),
        });
    }
    let mut failures: Vec<String> = Vec::new();
    let n = targets.len();
    for (i, target) in targets.into_iter().enumerate() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            failures.push(format!(
                "{target}: handshake deadline passed before trying it"
            ));
            continue;
        }
        match attempt(&target, identity, ep, deadline, left / (n - i) as u32) {
            Ok(done) => return Ok(done),
            Err(reason) => {
                debug!(peer = %ep.process, address = %target, %reason, "data connection attempt failed");
                failures.push(format!("{target}: {reason}"));
            }
        }
    }
    Err(BridgeError::Connect {
        process: ep.process,
        address: if n == 1 {
            "its only address".into()
        } else {
            format!("any of its {n} addresses")
        },
        reason: failures.join("; "),
    })
}

/// One address to dial.
enum Target<'a> {
    Unix(&'a str),
    Tcp(SocketAddr),
}

impl std::fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Unix(p) => write!(f, "unix {p}"),
            Target::Tcp(a) => write!(f, "tcp {a}"),
        }
    }
}

/// Connect to one target (TCP: within `connect_timeout`) and run the
/// handshake by `deadline`.
fn attempt(
    target: &Target<'_>,
    identity: &Identity,
    ep: &Endpoint,
    deadline: Instant,
    connect_timeout: Duration,
) -> std::result::Result<(Stream, Route), String> {
    let (mut stream, route) = match target {
        Target::Unix(path) => {
            let s = unix_addr(path)
                .and_then(|a| UnixStream::connect_addr(&a))
                .map_err(|e| e.to_string())?;
            let route = Route {
                transport: Transport::Unix,
                local: String::new(),
                remote: (*path).to_string(),
                shared_memory: false,
                single_copy: false,
            };
            (Stream::Unix(s), route)
        }
        Target::Tcp(addr) => {
            let s = TcpStream::connect_timeout(addr, connect_timeout).map_err(|e| e.to_string())?;
            let _ = s.set_nodelay(true);
            let route = Route {
                transport: Transport::Tcp,
                local: s.local_addr().map(|a| a.to_string()).unwrap_or_default(),
                remote: addr.to_string(),
                shared_memory: false,
                single_copy: false,
            };
            (Stream::Tcp(s), route)
        }
    };
    handshake::connect(&mut Bounded::new(&mut stream, deadline), identity, ep)?;
    stream.set_timeouts(None).map_err(|e| e.to_string())?;
    Ok((stream, route))
}

/// A stream whose reads and writes all end by one deadline (so a peer that
/// trickles bytes cannot stretch the handshake).
struct Bounded<'a> {
    stream: &'a mut Stream,
    deadline: Instant,
}

impl<'a> Bounded<'a> {
    fn new(stream: &'a mut Stream, deadline: Instant) -> Self {
        Bounded { stream, deadline }
    }
    fn arm(&self) -> io::Result<()> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "handshake deadline passed",
            ));
        }
        self.stream.set_timeouts(Some(left))
    }
}

impl Read for Bounded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.arm()?;
        self.stream.read(buf)
    }
}

impl Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.arm()?;
        self.stream.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What the acceptor's first frame after the handshake says.
pub(crate) enum Grant {
    /// Admitted: this many bytes of eager credit.
    Window(u64),
    /// Admission pending; the window follows once admitted.
    Follows,
}

/// Connector: read the acceptor's CREDIT frame by `deadline`, and the
/// descriptor that may come with it (a shared-memory offer, see
/// `transport::shm`). Only the read timeout is set: other threads may
/// write to the same socket meanwhile, and nothing but these frames is
/// ever read from it.
pub(crate) fn read_grant(
    stream: &mut Stream,
    deadline: Instant,
) -> io::Result<(Grant, Option<OwnedFd>)> {
    let mut b = [0u8; HEADER_LEN];
    let mut got = 0;
    let mut fd = None;
    while got < HEADER_LEN {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no credit grant by its deadline",
            ));
        }
        stream.set_read_timeout(Some(left))?;
        let Some(rest) = b.get_mut(got..) else {
            break;
        };
        match recv_with_fd(stream, rest) {
            Ok((0, _)) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection instead of admitting it",
                ))
            }
            Ok((n, f)) => {
                got += n;
                if fd.is_none() {
                    fd = f;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no credit grant by its deadline",
                ))
            }
            Err(e) => return Err(e),
        }
    }
    let grant = match FrameHeader::decode(&b) {
        Ok(h) if h.kind == FrameKind::Credit && h.seq == GRANT_FOLLOWS && h.count == 0 => {
            Grant::Follows
        }
        Ok(h) if h.kind == FrameKind::Credit => Grant::Window(h.count),
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "peer did not send its credit grant after the handshake",
            ))
        }
    };
    Ok((grant, fd))
}

/// One `recvmsg`: bytes into `buf`, and the first descriptor that came
/// with them (SCM_RIGHTS; any others are closed).
fn recv_with_fd(sock: &Stream, buf: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let m = rustix::net::recvmsg(
        sock.as_fd(),
        &mut [IoSliceMut::new(buf)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fd = None;
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = msg {
            for f in fds {
                fd.get_or_insert(f);
            }
        }
    }
    Ok((m.bytes, fd))
}

/// The sending half of a socket connection: whole frames, written by the
/// connection's writer or inline by a sending thread (blocking), or — a
/// control frame answering the peer — by the thread that read the peer's
/// frame, only if the socket takes it without waiting
/// ([`Outbound::try_write_now`]). Such a thread must not wait for the
/// peer, which may be waiting for it to read; and a socket may take part
/// of a frame (TCP, when its send buffer fills in the middle): the rest is
/// kept here and written before anything else, by the next
/// [`Outbound::write_frame`] or by the writer's [`Outbound::finish`].
pub(crate) struct SocketOut {
    stream: Stream,
    /// The unwritten tail of a frame the socket took only part of.
    rest: Vec<u8>,
}

impl SocketOut {
    pub(crate) fn new(stream: Stream) -> SocketOut {
        SocketOut {
            stream,
            rest: Vec::new(),
        }
    }

    /// As if the socket had taken all of a frame but `rest` (tests).
    #[cfg(test)]
    pub(crate) fn taken_but(stream: Stream, rest: Vec<u8>) -> SocketOut {
        SocketOut { stream, rest }
    }
}

/// Write `bufs` with `sendmsg(MSG_DONTWAIT | MSG_NOSIGNAL)`: how many bytes
/// the socket took (0 if it would have had to wait).
fn send_now(s: &Stream, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    loop {
        match sendmsg(s, bufs, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) => return Err(e),
        }
    }
}

impl Outbound for SocketOut {
    fn write_frame(&mut self, hdr: &FrameHeader, payload: &[u8]) -> io::Result<()> {
        self.finish()?;
        write_frame(&mut self.stream, hdr, payload)
    }
    fn try_write_now(&mut self, hdr: &FrameHeader, payload: &[u8]) -> io::Result<bool> {
        if !self.rest.is_empty() {
            return Ok(false);
        }
        let h = hdr.encode();
        let n = send_now(&self.stream, &[IoSlice::new(&h), IoSlice::new(payload)])?;
        if n == 0 {
            return Ok(false);
        }
        if n < h.len() + payload.len() {
            // Taken in part: what it did not take goes before anything else.
            self.rest = h.iter().chain(payload).skip(n).copied().collect();
        }
        Ok(true)
    }
    fn unfinished(&self) -> bool {
        !self.rest.is_empty()
    }
    fn finish(&mut self) -> io::Result<()> {
        if !self.rest.is_empty() {
            self.stream.write_all(&self.rest)?;
            self.rest = Vec::new();
        }
        Ok(())
    }
    fn shutdown(&mut self) {
        self.stream.shutdown()
    }
}

/// How long a `poll`-mode reader polls its socket before it looks at its
/// deadline and kick again (`ISTHMUS_WAIT`), as the ring's reader does.
const LINGER_CHUNK: Duration = wait::MAX_POLL;

/// Read buffer of a connection; big enough to pick up many small frames per read().
const READ_BUFFER: usize = 64 * 1024;

/// Reading frames from a socket (buffered).
pub(crate) struct SocketIn(BufReader<Stream>);

impl SocketIn {
    pub(crate) fn new(s: Stream) -> SocketIn {
        SocketIn(BufReader::with_capacity(READ_BUFFER, s))
    }
    /// The socket (what is buffered is dropped).
    pub(crate) fn into_stream(self) -> Stream {
        self.0.into_inner()
    }
}

impl Read for SocketIn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

/// Whether `fd` has bytes to read right now (never blocks).
fn readable_now(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents != 0
}

impl Inbound for SocketIn {
    fn fd(&self) -> RawFd {
        self.0.get_ref().as_raw_fd()
    }
    fn buffered(&mut self) -> bool {
        !self.0.buffer().is_empty()
    }
    fn ready(&mut self) -> bool {
        self.buffered() || readable_now(self.fd())
    }
    fn linger(&mut self) -> bool {
        // As the ring's reader does (`wait`): the frame a waiting thread
        // wants is often a few microseconds away, and its wake-up costs
        // more — on the thread that wakes it too: across two network
        // namespaces (veth) the sender's own system call delivers the
        // bytes and wakes the reader, and a stream of 64 KiB messages to
        // a reader that slept for each ran at 0.73-0.77x raw TCP's
        // bandwidth, 0.88-1.17x with a reader that polled first.
        // Only with a core to spare, though (`wait::core_free`); under
        // `block` not at all (nor a look at /proc).
        match wait::mode() {
            WaitMode::Block => return false,
            WaitMode::Adaptive if !wait::core_free() => return false,
            _ => {}
        }
        let fd = self.fd();
        wait::poll_until_within(LINGER_CHUNK, || readable_now(fd))
    }
    fn never_blocks(&self) -> bool {
        wait::mode() == WaitMode::Poll
    }
    fn readable_when_polled(&self) -> bool {
        // Asking `poll` again cost a system call per message (a sixth of
        // the bridge's extra CPU per message beside a CPU-bound process).
        true
    }
    fn arm(&mut self) -> bool {
        // The socket itself becomes readable; nothing to ask of the writer.
        self.buffered()
    }
    fn duplex_writer(&self) -> io::Result<TcpStream> {
        match self.0.get_ref() {
            Stream::Tcp(s) => s.try_clone(),
            Stream::Unix(_) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "DUPLEX frame on a Unix socket (only TCP connections carry frames both ways)",
            )),
        }
    }
}

/// How often a goodbye looks whether the peer acknowledged everything.
const ACK_POLL: Duration = Duration::from_millis(1);

/// Say goodbye on a duplex connection (see `duplex`) after BYE was written: shut the
/// writing half, then wait until the peer's kernel acknowledged all we
/// wrote (or `linger` passed: then say how much was not, on standard
/// error too, as a shutdown's undelivered messages are).
pub(crate) fn goodbye(stream: &Stream, peer: Uuid, linger: Duration) {
    stream.shutdown_write();
    let deadline = Instant::now() + linger;
    loop {
        match stream.unacknowledged() {
            Ok(0) => return,
            Ok(n) if Instant::now() >= deadline => {
                error!(%peer, bytes = n, "bytes written to this peer were not acknowledged before shutdown; they may be lost");
                eprintln!("isthmus: {n} bytes written to process {peer} were not acknowledged before shutdown; they may be lost");
                return;
            }
            // Reset: the peer is gone, nothing more will be acknowledged.
            Ok(_) if stream.tcp_closed() => return,
            Ok(_) => std::thread::sleep(ACK_POLL),
            Err(e) => {
                // The connection is gone (reset): nothing more to wait for.
                debug!(%peer, error = %e, "duplex goodbye: cannot read the send queue");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::FrameKind;
    use crate::transport::link::Outbound;
    use std::net::TcpListener;

    fn header(bytes: &[u8]) -> FrameHeader {
        let mut b = [0u8; HEADER_LEN];
        b.copy_from_slice(&bytes[..HEADER_LEN]);
        FrameHeader::decode(&b).expect("a frame header")
    }

    /// Fill `s`'s send buffer (its peer reads nothing meanwhile): the bytes written.
    fn fill(s: &Stream) -> usize {
        let chunk = [0xabu8; 4096];
        let mut n = 0;
        loop {
            match send_now(s, &[IoSlice::new(&chunk)]) {
                Ok(0) => return n,
                Ok(k) => n += k,
                Err(e) => panic!("filling the socket: {e}"),
            }
        }
    }

    fn read_all(mut s: Stream) -> Vec<u8> {
        let mut all = Vec::new();
        s.read_to_end(&mut all)
            .expect("reading the socket to its end");
        all
    }

    #[test]
    fn a_control_frame_goes_whole_at_once_or_not_at_all_when_the_socket_is_full() {
        let (a, b) = UnixStream::pair().unwrap();
        let (a, b) = (Stream::Unix(a), Stream::Unix(b));
        let mut out = SocketOut::new(a.try_clone().unwrap());
        assert!(out.try_write_now(&FrameHeader::credit(77), &[]).unwrap());
        assert!(!out.unfinished());
        let filled = fill(&a);
        assert!(filled > 0);
        // A Unix socket takes a small frame whole or not at all.
        assert!(!out
            .try_write_now(&FrameHeader::control(FrameKind::Cts, 5, 6), &[])
            .unwrap());
        assert!(!out.unfinished());
        drop(out);
        drop(a);
        let all = read_all(b);
        assert_eq!(
            all.len(),
            HEADER_LEN + filled,
            "nothing but the first frame and the filler"
        );
        let h = header(&all);
        assert_eq!((h.kind, h.count), (FrameKind::Credit, 77));
        assert!(all[HEADER_LEN..].iter().all(|&x| x == 0xab));
    }

    #[test]
    fn the_rest_of_a_frame_taken_in_part_goes_before_anything_else() {
        let (a, b) = UnixStream::pair().unwrap();
        let mut out = SocketOut::new(Stream::Unix(a));
        let first = FrameHeader::control(FrameKind::SyncAck, 1, 2).encode();
        out.stream.write_all(&first[..10]).unwrap();
        out.rest = first[10..].to_vec();
        assert!(out.unfinished());
        // Nothing may go before the rest: not even a frame that would fit.
        assert!(!out.try_write_now(&FrameHeader::credit(1), &[]).unwrap());
        out.write_frame(&FrameHeader::control(FrameKind::Cts, 3, 4), &[])
            .unwrap();
        assert!(!out.unfinished());
        out.finish().unwrap();
        drop(out);
        let all = read_all(Stream::Unix(b));
        assert_eq!(all.len(), 2 * HEADER_LEN);
        let (h1, h2) = (header(&all), header(&all[HEADER_LEN..]));
        assert_eq!((h1.kind, h1.context, h1.seq), (FrameKind::SyncAck, 1, 2));
        assert_eq!((h2.kind, h2.context, h2.seq), (FrameKind::Cts, 3, 4));
    }

    /// Over TCP a full send buffer may take part of a frame; whatever it
    /// took, the peer reads the filler, then the whole frame, then the next.
    #[test]
    fn over_tcp_a_frame_taken_in_part_is_finished_intact() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let a = Stream::Tcp(a);
        let filled = fill(&a);
        let reader = std::thread::spawn(move || read_all(Stream::Tcp(b)));
        let mut out = SocketOut::new(a);
        let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        let mut first = FrameHeader::control(FrameKind::Eager, 9, 9);
        first.payload_len = payload.len() as u64;
        // Keep trying while the reader drains: some attempt takes it (whole or in part).
        while !out.try_write_now(&first, &payload).unwrap() {
            std::thread::sleep(Duration::from_micros(50));
        }
        out.write_frame(&FrameHeader::credit(5), &[]).unwrap();
        out.shutdown();
        let all = reader.join().unwrap();
        assert_eq!(all.len(), filled + 2 * HEADER_LEN + payload.len());
        assert!(all[..filled].iter().all(|&x| x == 0xab));
        let h1 = header(&all[filled..]);
        assert_eq!(
            (h1.kind, h1.context, h1.payload_len),
            (FrameKind::Eager, 9, 3000)
        );
        let p = &all[filled + HEADER_LEN..filled + HEADER_LEN + payload.len()];
        assert_eq!(p, &payload[..]);
        let h2 = header(&all[filled + HEADER_LEN + payload.len()..]);
        assert_eq!((h2.kind, h2.count), (FrameKind::Credit, 5));
    }
}

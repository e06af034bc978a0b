//! The shared-memory transport between two processes of one host: a
//! connection's frames go through a lock-free byte ring in a sealed
//! `memfd` segment instead of the socket (see `ring`, `segment`).
//!
//! The Unix socket stays: it carries the handshake, hands the segment
//! over (SCM_RIGHTS, so no name exists that another process could open),
//! wakes a sleeping reader (a doorbell byte) and tells each side that the
//! other is gone (it closes). How a connection moves onto the ring:
//! * the acceptor, on a Unix connection, when its [`LocalTransport`] is
//!   `Shm` and the connector's process shares its IPC namespace, creates
//!   a segment and attaches it to its first CREDIT frame (the grant or
//!   the "grant follows" notice) — the offer ([`offer`]);
//! * the connector, if it allows shared memory too, maps it (after
//!   checking its seals and size) and sends one SHM frame on the socket;
//!   everything after goes into the ring ([`accept_offer`]). Otherwise it
//!   closes the descriptor and keeps writing to the socket;
//! * the acceptor's reader ([`Offered`]) reads the socket until that SHM
//!   frame (only as the first frame), then the ring.
//!
//! A connection is one direction (see `outgoing`): its ring carries the
//! connector's frames to the acceptor; the peer's own connection to us
//! has its own ring, so each pair of processes has one ring per direction.

mod ring;
mod segment;

use std::io::{self, IoSlice, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;

use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use tracing::debug;

use ring::{Ring, RingReader, RingWriter};
use segment::Segment;

use super::link::{Inbound, Outbound};
use super::socket::{SocketIn, Stream};

/// What carries frames between two processes of one host
/// (`ISTHMUS_TRANSPORT`): the Unix socket, or shared memory (with the
/// socket kept for the handshake, wake-ups and liveness). Processes on
/// other hosts (or network namespaces) use TCP either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalTransport {
    Socket,
    Shm,
}

impl LocalTransport {
    /// The environment variable that chooses it.
    pub const ENV: &'static str = "ISTHMUS_TRANSPORT";

    /// `socket` or `shm`.
    pub fn parse(s: &str) -> Option<LocalTransport> {
        match s.trim() {
            "socket" => Some(LocalTransport::Socket),
            "shm" => Some(LocalTransport::Shm),
            _ => None,
        }
    }
}

/// Ring size of a segment we create (one per incoming connection).
const RING: usize = 1 << 20;

/// Whether the process at the other end of `sock` shares our IPC
/// namespace (false when /proc cannot tell, e.g. another pid namespace).
fn same_ipc_namespace(sock: &Stream) -> bool {
    let Stream::Unix(s) = sock else {
        return false;
    };
    let Ok(cred) = rustix::net::sockopt::socket_peercred(s) else {
        return false;
    };
    let pid = cred.pid.as_raw_nonzero().get();
    let ns = |path: String| std::fs::metadata(path).map(|m| (m.dev(), m.ino())).ok();
    match (
        ns("/proc/self/ns/ipc".into()),
        ns(format!("/proc/{pid}/ns/ipc")),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// A segment offered to a connector (acceptor side), until it answers.
pub(crate) struct Offer {
    seg: Segment,
}

/// Acceptor: a segment to offer on this accepted connection, if any.
pub(crate) fn offer(sock: &Stream, mode: LocalTransport) -> Option<Offer> {
    if mode != LocalTransport::Shm || !same_ipc_namespace(sock) {
        return None;
    }
    match Segment::create(RING) {
        Ok(seg) => Some(Offer { seg }),
        Err(e) => {
            debug!(error = %e, "cannot create a shared-memory segment; staying on the socket");
            None
        }
    }
}

/// Write `bytes` with `offer`'s descriptor attached (SCM_RIGHTS); returns
/// how many bytes went (the rest is the caller's to write).
pub(crate) fn send_offer(sock: &Stream, bytes: &[u8], offer: &Offer) -> io::Result<usize> {
    let fds = [offer.seg.fd().as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other(
            "control buffer too small for one descriptor",
        ));
    }
    loop {
        match rustix::net::sendmsg(
            sock.as_fd(),
            &[IoSlice::new(bytes)],
            &mut control,
            SendFlags::NOSIGNAL,
        ) {
            Err(rustix::io::Errno::INTR) => {}
            r => return r.map_err(io::Error::from),
        }
    }
}

/// Connector: the peer offered `fd`. If we allow shared memory, map it,
/// tell the peer (one SHM frame on the socket) and return the writer that
/// puts our frames into the ring; otherwise None (stay on the socket).
pub(crate) fn accept_offer(
    sock: &mut Stream,
    fd: OwnedFd,
    mode: LocalTransport,
) -> io::Result<Option<Box<dyn Outbound>>> {
    if mode != LocalTransport::Shm {
        return Ok(None);
    }
    let seg = match Segment::open(fd) {
        Ok(s) => s,
        Err(e) => {
            debug!(error = %e, "refusing the peer's shared-memory segment; staying on the socket");
            return Ok(None);
        }
    };
    let doorbell = sock.try_clone()?;
    super::socket::write_frame(sock, &crate::frame::FrameHeader::shm(), &[])?;
    Ok(Some(Box::new(RingWriter::new(Ring::new(seg), doorbell))))
}

/// The acceptor's reader of a connection it offered a segment on: the
/// socket until the connector's SHM frame, then the ring.
pub(crate) enum Offered {
    Socket(SocketIn, Option<Segment>),
    Ring(RingReader),
    /// Only while switching.
    Switching,
}

impl Offered {
    pub(crate) fn new(sock: Stream, offer: Offer) -> Offered {
        Offered::Socket(SocketIn::new(sock), Some(offer.seg))
    }

    fn inner(&mut self) -> Option<&mut dyn Inbound> {
        match self {
            Offered::Socket(s, _) => Some(s),
            Offered::Ring(r) => Some(r),
            Offered::Switching => None,
        }
    }
}

impl Read for Offered {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner().map_or(Ok(0), |i| i.read(buf))
    }
}

impl Inbound for Offered {
    fn fd(&self) -> RawFd {
        match self {
            Offered::Socket(s, _) => s.fd(),
            Offered::Ring(r) => r.fd(),
            Offered::Switching => -1,
        }
    }
    fn buffered(&mut self) -> bool {
        self.inner().is_some_and(|i| i.buffered())
    }
    fn ready(&mut self) -> bool {
        self.inner().is_none_or(|i| i.ready())
    }
    fn linger(&mut self) -> bool {
        self.inner().is_some_and(|i| i.linger())
    }
    fn arm(&mut self) -> bool {
        self.inner().is_none_or(|i| i.arm())
    }
    fn decline(&mut self) {
        if let Offered::Socket(_, seg) = self {
            *seg = None;
        }
    }
    fn upgrade(&mut self) -> io::Result<()> {
        match std::mem::replace(self, Offered::Switching) {
            Offered::Socket(s, Some(seg)) => {
                // Bytes buffered past the SHM frame are doorbells: dropped.
                let sock = s.into_stream();
                debug!(
                    fd = sock.as_raw_fd(),
                    "data connection switched to shared memory"
                );
                *self = Offered::Ring(RingReader::new(Ring::new(seg), sock));
                Ok(())
            }
            other => {
                *self = other;
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "SHM frame on a connection that offered no segment",
                ))
            }
        }
    }
}

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
//!
//! Large messages may skip the ring (single copy, see `transport::cma`): the SHM
//! frame carries the address of the connector's probe word (`count`; 0
//! when the connector does not use single copy), and the acceptor that
//! can read it sets the ring's single-copy word and keeps the connector's
//! [`PeerMemory`] with the reader ([`Inbound::peer_memory`]).

mod ring;
mod segment;

use std::sync::Arc;

use std::io::{self, IoSlice, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;

use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use tracing::debug;

pub(crate) use ring::SingleCopyGate;
use ring::{Ring, RingReader, RingWriter};
use segment::Segment;

use super::cma::{self, PeerMemory};
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
    /// We read the connector's memory if it lets us (`ISTHMUS_SHM_CMA`).
    single_copy: bool,
}

/// Acceptor: a segment to offer on this accepted connection, if any;
/// `single_copy`: whether we would read the connector's large messages
/// from its memory.
pub(crate) fn offer(sock: &Stream, mode: LocalTransport, single_copy: bool) -> Option<Offer> {
    if mode != LocalTransport::Shm || !same_ipc_namespace(sock) {
        return None;
    }
    match Segment::create(RING) {
        Ok(seg) => Some(Offer { seg, single_copy }),
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

/// The connector's ring: its writer, and whether the acceptor may read
/// our memory (single copy).
pub(crate) struct Accepted {
    pub writer: Box<dyn Outbound>,
    pub gate: SingleCopyGate,
}

/// Connector: the peer offered `fd`. If we allow shared memory, map it,
/// tell the peer (one SHM frame on the socket, with our probe word's
/// address if `single_copy`) and return the writer that puts our frames
/// into the ring; otherwise None (stay on the socket).
pub(crate) fn accept_offer(
    sock: &mut Stream,
    fd: OwnedFd,
    mode: LocalTransport,
    single_copy: bool,
) -> io::Result<Option<Accepted>> {
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
    let mut shm = crate::frame::FrameHeader::shm();
    if single_copy {
        shm.count = cma::probe_address();
    }
    super::socket::write_frame(sock, &shm, &[])?;
    let ring = Ring::new(seg);
    let gate = ring.single_copy_gate();
    Ok(Some(Accepted {
        writer: Box::new(RingWriter::new(ring, doorbell)),
        gate,
    }))
}

/// The acceptor's reader of a connection it offered a segment on: the
/// socket until the connector's SHM frame, then the ring.
pub(crate) enum Offered {
    Socket(SocketIn, Option<Offer>),
    /// The ring, and the connector's memory if we may read it.
    Ring(RingReader, Option<Arc<PeerMemory>>),
    /// Only while switching.
    Switching,
}

impl Offered {
    pub(crate) fn new(sock: Stream, offer: Offer) -> Offered {
        Offered::Socket(SocketIn::new(sock), Some(offer))
    }

    fn inner(&mut self) -> Option<&mut dyn Inbound> {
        match self {
            Offered::Socket(s, _) => Some(s),
            Offered::Ring(r, _) => Some(r),
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
            Offered::Ring(r, _) => r.fd(),
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
        if let Offered::Socket(_, offer) = self {
            *offer = None;
        }
    }
    fn peer_memory(&self) -> Option<Arc<PeerMemory>> {
        match self {
            Offered::Ring(_, mem) => mem.clone(),
            _ => None,
        }
    }
    fn upgrade(&mut self, probe: u64) -> io::Result<()> {
        match std::mem::replace(self, Offered::Switching) {
            Offered::Socket(s, Some(offer)) => {
                // Bytes buffered past the SHM frame are doorbells: dropped.
                let sock = s.into_stream();
                let ring = Ring::new(offer.seg);
                let mem = if offer.single_copy && probe != 0 {
                    PeerMemory::probe(&sock, probe).map(Arc::new)
                } else {
                    debug!("single copy off on this connection (ISTHMUS_SHM_CMA)");
                    None
                };
                if mem.is_some() {
                    ring.allow_single_copy();
                }
                debug!(
                    fd = sock.as_raw_fd(),
                    single_copy = mem.is_some(),
                    "data connection switched to shared memory"
                );
                *self = Offered::Ring(RingReader::new(ring, sock), mem);
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

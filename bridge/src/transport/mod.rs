//! The transport layer: connections to peer processes and the frames,
//! credit and liveness they carry. The layers above (the point-to-point
//! layer `p2p`, the engine) see a connection as a [`Link`] (see `link`,
//! the interface) and report nothing down; the transports behind it know
//! nothing of contexts, matching or communicators.
//!
//! The connection logic is one: `outgoing` (our connection to a peer:
//! two lanes, credit, its writer thread), `incoming` (leader/follower
//! reading of the peers' connections) over `poller` (the one epoll
//! thread), and `connect` (opening a connection). What carries the bytes
//! sits behind `link`'s [`Outbound`]/[`Inbound`]: `socket` (Unix in the
//! abstract namespace on the same host and locality, TCP otherwise; the
//! handshake and credit grant run on it always) and `shm` (a shared-memory
//! ring between two processes of one host, set up over the Unix socket),
//! with `cma` beside it (large messages read from the sender's memory);
//! `duplex` lets a TCP connection carry both peers' frames.
//! [`accepted`] is the acceptor's side of choosing the path.

mod cma;
mod connect;
mod duplex;
mod incoming;
mod link;
mod outgoing;
mod poller;
mod shm;
mod socket;

pub(crate) use cma::{read_time as single_copy_read_time, PeerMemory, ReadError, SingleCopyCounts};
pub use cma::{
    SingleCopyStats, DEFAULT_THRESHOLD as DEFAULT_SINGLE_COPY_THRESHOLD, ENV as SINGLE_COPY_ENV,
    THRESHOLD_ENV as SINGLE_COPY_THRESHOLD_ENV,
};
pub(crate) use connect::{dial, Dialed};
pub(crate) use duplex::{reverse_reader, reversed};
pub(crate) use incoming::{FrameHandler, FrameReader, InConn};
pub(crate) use link::{Link, PeerLost, Queued, TryInline};
pub(crate) use outgoing::OutConn;
pub(crate) use poller::Poller;
pub use shm::LocalTransport;
pub(crate) use shm::{offer, send_offer, Offer};
pub(crate) use socket::{unix_addr, Stream};

/// The acceptor's reader of an admitted connection: the socket, or (if a
/// segment was offered on it) the socket until the connector switches to
/// the ring.
pub(crate) fn accepted(stream: Stream, offer: Option<Offer>) -> FrameReader {
    match offer {
        Some(o) => Box::new(shm::Offered::new(stream, o)),
        None => Box::new(socket::SocketIn::new(stream)),
    }
}

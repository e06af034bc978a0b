//! The transport layer: connections to peer processes and the frames,
//! credit and liveness they carry. The layers above (the point-to-point
//! layer `p2p`, the engine) see a connection as a [`Link`] (see `link`,
//! the interface) and report nothing down; the transports behind it know
//! nothing of contexts, matching or communicators.
//!
//! Today one transport, sockets (Unix in the abstract namespace on the
//! same host and locality, TCP otherwise): `socket` (the stream, frame
//! writing, the connector's handshake and credit grant), `outgoing` (our
//! connection to a peer: two lanes, credit, its writer thread), `poller`
//! (the one epoll thread) and `incoming` (leader/follower reading of
//! the peers' connections). A shared-memory transport would sit beside
//! these, implementing [`Link`] for its connections.

mod incoming;
mod link;
mod outgoing;
mod poller;
mod socket;

pub(crate) use incoming::{FrameHandler, FrameReader, InConn};
pub(crate) use link::{Link, PeerLost, Queued, TryInline};
pub(crate) use outgoing::OutConn;
pub(crate) use poller::Poller;
pub(crate) use socket::{connect, read_grant, unix_addr, Grant, Stream};

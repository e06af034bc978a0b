//! One TCP connection per pair of processes, carrying frames both ways.
//!
//! Each process writes its frames on its own outgoing connection
//! (`outgoing`), which gives MPI's order for free and needs no connect
//! races settled. Over TCP that has a price: a message and its answer
//! (the reply of a ping-pong, a CTS, a SYNC_ACK, returned credit) travel
//! on two connections, so no answer carries TCP's acknowledgement of what
//! it answers, and every message costs the receiver a segment of its own
//! (1.6 segments per ping-pong message against 1.0 for one connection,
//! measured with `nstat`); beside a CPU-bound process, raw TCP over two
//! one-way connections is 1.45x slower one-way than over one.
//!
//! So a connector over TCP whose window was granted at once offers the
//! acceptor its connection: its first frame is DUPLEX, with the window it
//! grants the acceptor there (see `frame`), and it reads the connection
//! too (a reverse [`InConn`](super::InConn), watched by the poller, known
//! to the engine only once the peer writes on it). An acceptor that has no
//! outgoing connection to the connector yet when it first sends to it
//! writes on the accepted connection ([`reversed`]) instead of dialling.
//! A process has exactly one connection it writes on to each peer at a
//! time. If both connect at once (each before reading the other's DUPLEX),
//! both offered: the one with the larger process id moves — its writer
//! ends its own connection with MOVED and writes on the other's from then
//! on (`OutConn::move_to`). The other reads what came on the moved
//! connection up to MOVED before anything on its own (its reverse reader
//! stays parked until then), so each direction keeps its order; the
//! window moves with the peer (`ledger`: one reservation, never two).
//!
//! What changes at the end: a duplex connection's goodbye (BYE) shuts only
//! its writing half, and waits (within the finalize timeout) until the
//! peer's kernel acknowledged everything we wrote before it closes the
//! socket (`socket::goodbye`): closing a TCP socket with unread bytes resets the
//! connection and drops what it had not sent yet, and on a duplex
//! connection the peer's frames may be unread when we leave. A reverse
//! reader that ends without having read a frame is not a failure (the
//! peer never wrote on it; its departure or death shows where it writes).
//! Unix sockets and shared memory keep one connection per direction
//! (there is no acknowledgement to save).

use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::address::{Route, Transport};

use super::incoming::FrameReader;
use super::outgoing::OutConn;
use super::socket::{SocketIn, SocketOut, Stream};

/// The reader of our own outgoing connection (frames the peer writes on it).
pub(crate) fn reverse_reader(stream: Stream) -> FrameReader {
    Box::new(SocketIn::new(stream))
}

/// Our outgoing connection to `peer` on the connection it opened to us
/// and offered with DUPLEX (`tcp`, a clone of the accepted socket),
/// with the `window` of eager credit it granted there; its goodbye waits
/// up to `linger` for acknowledgements.
pub(crate) fn reversed(
    peer: Uuid,
    tcp: TcpStream,
    window: u64,
    linger: Duration,
) -> std::io::Result<Arc<OutConn>> {
    let route = Route {
        transport: Transport::Tcp,
        local: tcp.local_addr().map(|a| a.to_string()).unwrap_or_default(),
        remote: tcp.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
        shared_memory: false,
        single_copy: false,
    };
    let stream = Stream::Tcp(tcp);
    let shutdown_handle = stream.try_clone()?;
    let conn = OutConn::new(
        peer,
        Box::new(SocketOut::new(stream)),
        shutdown_handle,
        route,
        window,
        false,
        None,
    );
    conn.read_by_peer_too(linger);
    Ok(conn)
}

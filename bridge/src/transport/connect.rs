//! Opening our outgoing connection to a peer, whatever carries it: dial
//! and authenticate (the socket, see `socket`), read the acceptor's first
//! CREDIT frame (the grant, or "grant follows", perhaps with a
//! shared-memory segment offered, see `shm`), pick the byte path and make
//! the [`OutConn`]. The engine then starts its writer thread (and, over
//! TCP, may offer the peer the connection for its own frames, see
//! `duplex`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::address::Transport;
use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::handshake::Identity;

use super::link::Outbound;
use super::outgoing::OutConn;
use super::shm::{self, LocalTransport};
use super::socket::{self, Grant, SocketOut, Stream};

/// A freshly opened outgoing connection.
pub(crate) struct Dialed {
    pub conn: Arc<OutConn>,
    /// The eager credit granted at once (0 while the grant is pending).
    pub credit: u64,
    /// When the grant follows: the socket to read it from (the writer thread does).
    pub grant_reader: Option<Stream>,
    /// A TCP connection granted at once, if `duplex` was asked: the socket
    /// to read the peer's frames from, should we offer it (see `duplex`).
    pub reverse: Option<Stream>,
}

/// Connect to `ep` (see `socket::connect` for where and how), within
/// `timeout`; `single_copy`: the smallest message we would let the peer
/// read from our memory (None: never), if the connection goes through
/// shared memory; `duplex`: the peer may write to us on it (TCP only).
pub(crate) fn dial(
    me: &Endpoint,
    identity: &Identity,
    ep: &Endpoint,
    timeout: Duration,
    local: LocalTransport,
    single_copy: Option<usize>,
    duplex: bool,
) -> Result<Dialed> {
    let (mut stream, mut route) = socket::connect(me, identity, ep, timeout)?;
    let io_err = |e: std::io::Error| BridgeError::Connect {
        process: ep.process,
        address: "its data socket".into(),
        reason: e.to_string(),
    };
    let (first, offered) =
        socket::read_grant(&mut stream, Instant::now() + timeout).map_err(io_err)?;
    let (credit, grant_reader) = match first {
        Grant::Window(bytes) => (bytes, None),
        // The peer waits for the table naming us (it has not formed its
        // intercomm yet): no credit until its grant comes. Nothing waits
        // for it here; blocking small sends wait for it (see
        // `OutConn::wait_granted`), others go by rendezvous meanwhile.
        Grant::Follows => {
            let reader = stream
                .try_clone()
                .map_err(|e| BridgeError::io("cloning a socket handle", e))?;
            (0, Some(reader))
        }
    };
    let shutdown_handle = stream
        .try_clone()
        .map_err(|e| BridgeError::io("cloning a socket handle", e))?;
    let ring = match offered {
        Some(fd) => {
            shm::accept_offer(&mut stream, fd, local, single_copy.is_some()).map_err(io_err)?
        }
        None => None,
    };
    let reverse = if duplex
        && ring.is_none()
        && grant_reader.is_none()
        && route.transport == Transport::Tcp
    {
        Some(
            stream
                .try_clone()
                .map_err(|e| BridgeError::io("cloning a socket handle", e))?,
        )
    } else {
        None
    };
    let (out, single_copy): (Box<dyn Outbound>, _) = match ring {
        Some(a) => {
            route.shared_memory = true;
            (a.writer, single_copy.map(|t| (a.gate, t)))
        }
        None => (Box::new(SocketOut::new(stream)), None),
    };
    let conn = OutConn::new(
        ep.process,
        out,
        shutdown_handle,
        route,
        credit,
        grant_reader.is_some(),
        single_copy,
    );
    Ok(Dialed {
        conn,
        credit,
        grant_reader,
        reverse,
    })
}

//! Sockets: the Unix/TCP stream abstraction, writing a frame, and the
//! connection handshake (connector and acceptor side). Reading incoming
//! connections lives in `incoming`, the outgoing connection in `outgoing`.

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixStream};
use std::time::{Duration, Instant};

use tracing::warn;
use uuid::Uuid;

use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::frame::{
    secrets_equal, FrameHeader, FrameKind, HANDSHAKE_BAD_SECRET, HANDSHAKE_BAD_VERSION,
    HANDSHAKE_MAGIC, HANDSHAKE_OK, HEADER_LEN, MAX_SECRET_LEN, PROTOCOL_VERSION,
};

/// Timeout for connect + handshake; data reads/writes have none.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write_vectored(bufs),
            Stream::Tcp(s) => s.write_vectored(bufs),
        }
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

/// Open a data connection to `ep` (Unix if same host, else TCP) and run the connector handshake.
///
/// `me` is this engine's endpoint and `secret` the virtual machine's secret.
pub(crate) fn connect(me: &Endpoint, secret: &[u8], ep: &Endpoint) -> Result<Stream> {
    let same_host = ep.host == me.host;
    let (mut stream, address) = match (&ep.unix, ep.tcp) {
        (Some(path), _) if same_host => {
            let s = unix_addr(path)
                .and_then(|a| UnixStream::connect_addr(&a))
                .map_err(|e| BridgeError::Connect {
                    process: ep.process,
                    address: path.clone(),
                    reason: e.to_string(),
                })?;
            (Stream::Unix(s), path.clone())
        }
        (_, Some(addr)) => {
            let s = TcpStream::connect_timeout(&addr, HANDSHAKE_TIMEOUT).map_err(|e| {
                BridgeError::Connect {
                    process: ep.process,
                    address: addr.to_string(),
                    reason: e.to_string(),
                }
            })?;
            let _ = s.set_nodelay(true);
            (Stream::Tcp(s), addr.to_string())
        }
        _ => {
            return Err(BridgeError::Connect {
                process: ep.process,
                address: format!("host {}", ep.host),
                reason: "endpoint has no TCP address and no Unix socket usable from this host"
                    .into(),
            })
        }
    };
    let fail = |reason: String| BridgeError::Connect {
        process: ep.process,
        address: address.clone(),
        reason,
    };
    stream
        .set_timeouts(Some(HANDSHAKE_TIMEOUT))
        .map_err(|e| fail(e.to_string()))?;
    let mut hello = Vec::with_capacity(32 + secret.len());
    hello.extend_from_slice(HANDSHAKE_MAGIC);
    hello.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    hello.extend_from_slice(&0u16.to_le_bytes());
    hello.extend_from_slice(&(secret.len() as u32).to_le_bytes());
    hello.extend_from_slice(me.process.as_bytes());
    hello.extend_from_slice(secret);
    stream
        .write_all(&hello)
        .map_err(|e| fail(format!("sending handshake: {e}")))?;
    let mut reply = [0u8; 17];
    stream.read_exact(&mut reply).map_err(|e| {
        fail(format!(
            "peer closed the connection during the handshake ({e}); wrong VM secret?"
        ))
    })?;
    match reply[0] {
        HANDSHAKE_OK => {}
        HANDSHAKE_BAD_SECRET => {
            return Err(fail(
                "peer rejected our VM secret (not a member of the same virtual machine)".into(),
            ))
        }
        HANDSHAKE_BAD_VERSION => return Err(fail("peer rejected our protocol version".into())),
        s => {
            return Err(fail(format!(
                "peer answered the handshake with unknown status {s}"
            )))
        }
    }
    let mut id = [0u8; 16];
    id.copy_from_slice(&reply[1..]);
    let got = Uuid::from_bytes(id);
    if got != ep.process {
        return Err(fail(format!(
            "reached process {got}, not the expected one (stale endpoint?)"
        )));
    }
    stream.set_timeouts(None).map_err(|e| fail(e.to_string()))?;
    Ok(stream)
}

/// Acceptor side of the handshake; returns the peer's process id, or None if rejected (already logged).
/// `me` is this process's id and `secret` the virtual machine's secret.
/// The whole handshake must finish within `timeout` (a peer that trickles
/// bytes is closed as one that sends nothing).
pub(crate) fn accept_handshake(
    me: Uuid,
    secret: &[u8],
    stream: &mut Stream,
    timeout: Duration,
) -> Option<Uuid> {
    let deadline = Instant::now() + timeout;
    let run = |stream: &mut Stream| -> io::Result<Option<Uuid>> {
        stream.set_timeouts(Some(timeout))?;
        let mut fixed = [0u8; 32];
        read_exact_by(stream, &mut fixed, deadline)?;
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        let secret_len = u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]);
        let mut id = [0u8; 16];
        id.copy_from_slice(&fixed[16..32]);
        let peer = Uuid::from_bytes(id);
        if &fixed[..8] != HANDSHAKE_MAGIC
            || version != PROTOCOL_VERSION
            || secret_len > MAX_SECRET_LEN
        {
            warn!(%peer, version, "rejecting data connection: bad magic, protocol version or secret length");
            let _ = stream.write_all(&[HANDSHAKE_BAD_VERSION]);
            return Ok(None);
        }
        let mut received = vec![0u8; secret_len as usize];
        read_exact_by(stream, &mut received, deadline)?;
        if !secrets_equal(&received, secret) {
            warn!(%peer, "rejecting data connection: wrong virtual-machine secret");
            let _ = stream.write_all(&[HANDSHAKE_BAD_SECRET]);
            return Ok(None);
        }
        let mut reply = [0u8; 17];
        reply[0] = HANDSHAKE_OK;
        reply[1..].copy_from_slice(me.as_bytes());
        stream.write_all(&reply)?;
        stream.set_timeouts(None)?;
        Ok(Some(peer))
    };
    match run(stream) {
        Ok(p) => p,
        Err(e) => {
            warn!(error = %e, "dropping data connection: handshake failed");
            None
        }
    }
}

/// `read_exact` that gives up at `deadline` however the bytes trickle in.
fn read_exact_by(stream: &mut Stream, mut buf: &mut [u8], deadline: Instant) -> io::Result<()> {
    while !buf.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "handshake did not finish within its deadline",
            ));
        }
        stream.set_timeouts(Some(left))?;
        match stream.read(buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf = &mut buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Acceptor, after a successful handshake: the connector's initial eager
/// window, as one CREDIT frame on the accepted socket.
pub(crate) fn send_grant(stream: &mut Stream, bytes: u64, timeout: Duration) -> io::Result<()> {
    stream.set_timeouts(Some(timeout))?;
    write_frame(stream, &FrameHeader::credit(bytes), &[])?;
    stream.set_timeouts(None)
}

/// Connector, after a successful handshake: read the initial eager window.
pub(crate) fn read_grant(stream: &mut Stream) -> io::Result<u64> {
    stream.set_timeouts(Some(HANDSHAKE_TIMEOUT))?;
    let mut b = [0u8; HEADER_LEN];
    stream.read_exact(&mut b)?;
    stream.set_timeouts(None)?;
    match FrameHeader::decode(&b) {
        Ok(h) if h.kind == FrameKind::Credit => Ok(h.count),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "peer did not send its credit grant after the handshake",
        )),
    }
}

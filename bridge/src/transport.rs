//! Sockets: the Unix/TCP stream abstraction, the connection handshake, and
//! the outgoing connection with its writer thread ([`OutConn`]). Reading
//! incoming connections lives in [`incoming`](crate::incoming).

use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tracing::warn;
use uuid::Uuid;

use crate::endpoint::Endpoint;
use crate::engine::Inner;
use crate::error::{BridgeError, Result};
use crate::frame::*;
use crate::request::{cv_wait, lock, Completion};

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
pub(crate) fn connect(inner: &Inner, ep: &Endpoint) -> Result<Stream> {
    let same_host = ep.host == inner.endpoint.host;
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
    let mut hello = Vec::with_capacity(32 + inner.secret.len());
    hello.extend_from_slice(HANDSHAKE_MAGIC);
    hello.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    hello.extend_from_slice(&0u16.to_le_bytes());
    hello.extend_from_slice(&(inner.secret.len() as u32).to_le_bytes());
    hello.extend_from_slice(inner.endpoint.process.as_bytes());
    hello.extend_from_slice(&inner.secret);
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
pub(crate) fn accept_handshake(inner: &Inner, stream: &mut Stream) -> Option<Uuid> {
    let run = |stream: &mut Stream| -> io::Result<Option<Uuid>> {
        stream.set_timeouts(Some(HANDSHAKE_TIMEOUT))?;
        let mut fixed = [0u8; 32];
        stream.read_exact(&mut fixed)?;
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
        let mut secret = vec![0u8; secret_len as usize];
        stream.read_exact(&mut secret)?;
        if !secrets_equal(&secret, &inner.secret) {
            warn!(%peer, "rejecting data connection: wrong virtual-machine secret");
            let _ = stream.write_all(&[HANDSHAKE_BAD_SECRET]);
            return Ok(None);
        }
        let mut reply = [0u8; 17];
        reply[0] = HANDSHAKE_OK;
        reply[1..].copy_from_slice(inner.endpoint.process.as_bytes());
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

/// A frame waiting for the writer thread.
pub(crate) struct Queued {
    pub hdr: FrameHeader,
    pub payload: Vec<u8>,
    pub dest_rank: u32,
    /// Completed when the frame is written (eager isend); None for issend (completed by SYNC_ACK) and control frames.
    pub done: Option<Arc<Completion<()>>>,
}

struct OutState {
    /// None while some thread is writing (it holds the stream).
    stream: Option<Stream>,
    queue: VecDeque<Queued>,
    failed: Option<String>,
    closing: bool,
    waiting: usize,
}

/// Our one outgoing connection to a peer process. Frames are written either
/// inline by the caller (when the connection is idle and nothing is queued)
/// or by the connection's writer thread, always in FIFO order.
pub(crate) struct OutConn {
    pub peer: Uuid,
    state: Mutex<OutState>,
    cv: Condvar,
    /// Clone of the socket used to shut it down from outside.
    shutdown_handle: Stream,
}

pub(crate) enum TryInline {
    Done,
    Busy,
}

impl OutConn {
    pub(crate) fn new(peer: Uuid, stream: Stream) -> io::Result<Arc<OutConn>> {
        let shutdown_handle = stream.try_clone()?;
        Ok(Arc::new(OutConn {
            peer,
            state: Mutex::new(OutState {
                stream: Some(stream),
                queue: VecDeque::new(),
                failed: None,
                closing: false,
                waiting: 0,
            }),
            cv: Condvar::new(),
            shutdown_handle,
        }))
    }

    fn failed_err(reason: &str, dest_rank: u32) -> BridgeError {
        BridgeError::PeerFailed {
            rank: dest_rank,
            reason: reason.to_owned(),
        }
    }

    /// Write one frame from the calling thread, waiting for earlier frames first (keeps FIFO order).
    pub(crate) fn write_blocking(
        &self,
        inner: &Inner,
        hdr: &FrameHeader,
        payload: &[u8],
        dest_rank: u32,
    ) -> Result<()> {
        match self.write_inline(inner, hdr, payload, dest_rank, true)? {
            TryInline::Done => Ok(()),
            TryInline::Busy => Err(BridgeError::Protocol(
                "internal: blocking write reported busy".into(),
            )),
        }
    }

    /// Write inline if `wait` or the connection is idle; otherwise report Busy.
    pub(crate) fn write_inline(
        &self,
        inner: &Inner,
        hdr: &FrameHeader,
        payload: &[u8],
        dest_rank: u32,
        wait: bool,
    ) -> Result<TryInline> {
        let mut st = lock(&self.state);
        let mut stream = loop {
            if let Some(r) = &st.failed {
                return Err(Self::failed_err(r, dest_rank));
            }
            if st.closing {
                return Err(BridgeError::EngineShutDown);
            }
            if st.queue.is_empty() {
                if let Some(s) = st.stream.take() {
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
        let res = write_frame(&mut stream, hdr, payload);
        let mut st = lock(&self.state);
        st.stream = Some(stream);
        let wake = st.waiting > 0;
        drop(st);
        if wake {
            self.cv.notify_all();
        }
        match res {
            Ok(()) => Ok(TryInline::Done),
            Err(e) => {
                let reason = format!("writing to the peer failed: {e}");
                inner.peer_failed(self.peer, &reason);
                Err(Self::failed_err(&reason, dest_rank))
            }
        }
    }

    /// Hand a frame to the writer thread.
    pub(crate) fn enqueue(&self, q: Queued) -> Result<()> {
        let mut st = lock(&self.state);
        if let Some(r) = &st.failed {
            return Err(Self::failed_err(r, q.dest_rank));
        }
        if st.closing {
            return Err(BridgeError::EngineShutDown);
        }
        st.queue.push_back(q);
        let wake = st.waiting > 0;
        drop(st);
        if wake {
            self.cv.notify_all();
        }
        Ok(())
    }

    /// Mark failed: queued frames error out; the socket is shut down.
    pub(crate) fn fail(&self, reason: &str) {
        let queued: Vec<Queued> = {
            let mut st = lock(&self.state);
            if st.failed.is_none() {
                st.failed = Some(reason.to_owned());
            }
            st.queue.drain(..).collect()
        };
        for q in queued {
            if let Some(d) = q.done {
                d.complete(Err(Self::failed_err(reason, q.dest_rank)));
            }
        }
        self.shutdown_handle.shutdown();
        self.cv.notify_all();
    }

    /// Orderly close: the writer drains the queue, sends BYE and exits.
    pub(crate) fn close(&self) {
        lock(&self.state).closing = true;
        self.cv.notify_all();
    }

    /// Abrupt close (tests / abort): no BYE.
    pub(crate) fn abort(&self) {
        self.fail("engine aborted");
    }

    /// Writer thread body.
    pub(crate) fn writer_loop(self: Arc<Self>, inner: Arc<Inner>) {
        loop {
            let mut st = lock(&self.state);
            let (item, mut stream) = loop {
                if st.failed.is_some() {
                    return;
                }
                if st.stream.is_some() {
                    if let Some(q) = st.queue.pop_front() {
                        let s = st.stream.take();
                        break (Some(q), s);
                    }
                    if st.closing {
                        let s = st.stream.take();
                        break (None, s);
                    }
                }
                st.waiting += 1;
                st = cv_wait(&self.cv, st, None).0;
                st.waiting -= 1;
            };
            drop(st);
            let Some(stream_ref) = stream.as_mut() else {
                return;
            };
            match item {
                None => {
                    // Closing and drained: say goodbye.
                    let _ =
                        write_frame(stream_ref, &FrameHeader::control(FrameKind::Bye, 0, 0), &[]);
                    stream_ref.shutdown();
                    return;
                }
                Some(q) => {
                    let res = write_frame(stream_ref, &q.hdr, &q.payload);
                    let mut st = lock(&self.state);
                    st.stream = stream;
                    let wake = st.waiting > 0;
                    drop(st);
                    if wake {
                        self.cv.notify_all();
                    }
                    match res {
                        Ok(()) => {
                            if let Some(d) = q.done {
                                d.complete(Ok(()));
                            }
                        }
                        Err(e) => {
                            let reason = format!("writing to the peer failed: {e}");
                            if let Some(d) = q.done {
                                d.complete(Err(Self::failed_err(&reason, q.dest_rank)));
                            }
                            inner.peer_failed(self.peer, &reason);
                            return;
                        }
                    }
                }
            }
        }
    }
}

pub(crate) fn read_payload_vec<R: Read>(rd: &mut R, len: usize) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|e| {
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!("cannot allocate {len} bytes for a message: {e}"),
        )
    })?;
    rd.take(len as u64).read_to_end(&mut v)?;
    if v.len() != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection ended in the middle of a message",
        ));
    }
    Ok(v)
}

pub(crate) fn discard_payload<R: Read>(rd: &mut R, len: u64) -> io::Result<()> {
    let n = io::copy(&mut rd.take(len), &mut io::sink())?;
    if n != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection ended in the middle of a message",
        ));
    }
    Ok(())
}

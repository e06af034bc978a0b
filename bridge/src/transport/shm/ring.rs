//! A single-producer single-consumer byte ring in a [`Segment`]: the
//! writer ([`RingWriter`], on the connector's side) appends frames exactly
//! as it would write them to the socket, the reader ([`RingReader`], the
//! acceptor's side) reads them as from a socket. Frames may be larger than
//! the ring: they are pipelined through it.
//!
//! Header words (each on a cache line of its own): `head` (bytes ever
//! written, advanced by the writer), `tail` (bytes ever read, advanced by
//! the reader), `reader_sleeping` (the reader is about to block on the
//! socket: the writer rings a doorbell byte), `writer_waiting` and
//! `space_seq` (the writer waits on a futex for space: the reader bumps
//! and wakes it), `doorbell_at` (when the writer rang: the reader, once
//! awake, tells `wait` how long its wake-up took), `single_copy` (set by
//! the reader once it may read the writer's memory, see `transport::cma`: the
//! writer's [`SingleCopyGate`] reads it).
//!
//! Either side that finds nothing to do polls the ring first, as long as
//! `crate::wait` says (`ISTHMUS_WAIT`: never sleeping, about a wake-up's
//! cost, or not at all), and only then blocks.
//!
//! The peer is a separate process that may write anything into the
//! header at any time: each side keeps its own copy of its index, reads
//! the peer's once per step and checks it (`0 <= head - tail <= ring`),
//! and an index out of range is an `InvalidData` error that ends the
//! connection. Offsets are taken modulo our own ring size, never the
//! peer's word, so no access leaves the mapping. Frame lengths are the
//! engine's to bound, as on the socket.

use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::net::{RecvFlags, SendFlags};
use rustix::thread::futex;

use super::segment::{Segment, HEADER};
use crate::frame::{FrameHeader, HEADER_LEN};
use crate::transport::link::{Inbound, Outbound};
use crate::transport::socket::Stream;
use crate::wait::{self, WaitMode};

const HEAD: usize = 0;
const TAIL: usize = 64;
const READER_SLEEPING: usize = 128;
const WRITER_WAITING: usize = 192;
const SPACE_SEQ: usize = 256;
const DOORBELL_AT: usize = 320;
const SINGLE_COPY: usize = 384;

/// The longest a side polls the ring between looks at its socket (the
/// peer's end), its wake-up eventfd and its deadline (`poll` mode; an
/// adaptive budget is never longer).
const POLL_CHUNK: Duration = wait::MAX_POLL;
/// How long a writer waiting for space sleeps before it checks that the
/// reader is still alive (its socket still open).
const SPACE_RECHECK: Duration = Duration::from_millis(1);

/// The ring over a mapped segment.
pub(crate) struct Ring {
    seg: Arc<Segment>,
    mask: u64,
}

impl Ring {
    pub(crate) fn new(seg: Segment) -> Ring {
        let mask = seg.ring_len() as u64 - 1;
        Ring {
            seg: Arc::new(seg),
            mask,
        }
    }

    /// The writer's view of the ring's single-copy word.
    pub(crate) fn single_copy_gate(&self) -> SingleCopyGate {
        SingleCopyGate(Ring {
            seg: Arc::clone(&self.seg),
            mask: self.mask,
        })
    }

    /// The reader may read the writer's memory (see `transport::cma`).
    pub(crate) fn allow_single_copy(&self) {
        self.word32(SINGLE_COPY).store(1, Ordering::Release);
    }

    fn cap(&self) -> u64 {
        self.mask + 1
    }

    fn word64(&self, off: usize) -> &AtomicU64 {
        // SAFETY: `off` is one of the 8-aligned header offsets above, inside
        // the page-aligned mapping, which lives as long as `self`; shared
        // memory is only ever accessed atomically at these offsets.
        unsafe { &*self.seg.base().as_ptr().add(off).cast::<AtomicU64>() }
    }

    fn word32(&self, off: usize) -> &AtomicU32 {
        // SAFETY: as in `word64` (4-aligned offsets).
        unsafe { &*self.seg.base().as_ptr().add(off).cast::<AtomicU32>() }
    }

    fn head(&self) -> &AtomicU64 {
        self.word64(HEAD)
    }
    fn tail(&self) -> &AtomicU64 {
        self.word64(TAIL)
    }
    fn reader_sleeping(&self) -> &AtomicU32 {
        self.word32(READER_SLEEPING)
    }
    fn writer_waiting(&self) -> &AtomicU32 {
        self.word32(WRITER_WAITING)
    }
    fn space_seq(&self) -> &AtomicU32 {
        self.word32(SPACE_SEQ)
    }
    fn doorbell_at(&self) -> &AtomicU64 {
        self.word64(DOORBELL_AT)
    }

    /// Bytes between `tail` and `head`, checked against the ring's size.
    fn used(&self, head: u64, tail: u64) -> io::Result<u64> {
        let used = head.wrapping_sub(tail);
        if used > self.cap() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "corrupted shared-memory ring: head {head} and tail {tail} are {used} bytes \
                     apart in a ring of {}",
                    self.cap()
                ),
            ));
        }
        Ok(used)
    }

    /// Copy `src` into the ring at stream position `pos` (wrapping).
    fn put(&self, pos: u64, src: &[u8]) {
        let off = (pos & self.mask) as usize;
        let first = src.len().min(self.cap() as usize - off);
        let data = self.data();
        // SAFETY: `off + first <= cap` and `src.len() - first <= cap`, so both
        // copies stay inside the ring's data; the SPSC protocol gives these
        // bytes (free space) to the writer alone.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), data.add(off), first);
            std::ptr::copy_nonoverlapping(src.as_ptr().add(first), data, src.len() - first);
        }
    }

    /// Copy from the ring at stream position `pos` into `dst` (wrapping).
    fn get(&self, pos: u64, dst: &mut [u8]) {
        let off = (pos & self.mask) as usize;
        let first = dst.len().min(self.cap() as usize - off);
        let data = self.data();
        // SAFETY: as in `put`; these bytes (filled space) are the reader's.
        // A peer writing them meanwhile changes only what we read, which
        // the engine checks like any bytes from a socket.
        unsafe {
            std::ptr::copy_nonoverlapping(data.add(off), dst.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(data, dst.as_mut_ptr().add(first), dst.len() - first);
        }
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: HEADER is inside the mapping (its length is HEADER + ring).
        unsafe { self.seg.base().as_ptr().add(HEADER) }
    }
}

/// Poll `f` as `wait` says (in `poll` mode for one [`POLL_CHUNK`], so
/// that the caller looks at its socket and deadline in between); true as
/// soon as it holds, false when the caller should block (or, polling,
/// look at its socket and poll again).
fn poll_ring(f: impl FnMut() -> bool) -> bool {
    wait::poll_until_within(POLL_CHUNK, f)
}

/// Whether a side never sleeps (`ISTHMUS_WAIT=poll`).
fn never_sleep() -> bool {
    wait::mode() == WaitMode::Poll
}

/// Whether the peer closed (or reset) the socket; never blocks.
fn socket_closed(sock: &Stream) -> bool {
    let mut b = [0u8; 1];
    match rustix::net::recv(sock.as_fd(), &mut b, RecvFlags::PEEK | RecvFlags::DONTWAIT) {
        Ok((0, _)) => true,
        Ok(_) => false,
        Err(e) => e != rustix::io::Errno::AGAIN && e != rustix::io::Errno::INTR,
    }
}

fn reader_gone() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "the peer closed its connection while we waited for ring space",
    )
}

/// The connector's side of the single-copy word: whether the reader said
/// it may read our memory (a peer that sets it falsely only makes our
/// large messages go by rendezvous, which it answers as it likes anyway).
pub(crate) struct SingleCopyGate(Ring);

impl SingleCopyGate {
    pub(crate) fn open(&self) -> bool {
        self.0.word32(SINGLE_COPY).load(Ordering::Acquire) == 1
    }
}

/// The connector's side: frames into the ring, a doorbell byte on the
/// socket when the reader sleeps.
pub(crate) struct RingWriter {
    ring: Ring,
    sock: Stream,
    /// Our own copy of `head` (the shared word is only written, never trusted).
    head: u64,
}

impl RingWriter {
    pub(crate) fn new(ring: Ring, sock: Stream) -> RingWriter {
        let head = ring.head().load(Ordering::Acquire);
        RingWriter { ring, sock, head }
    }

    /// Free bytes, from the reader's (checked) tail.
    fn free(&self) -> io::Result<u64> {
        let tail = self.ring.tail().load(Ordering::Acquire);
        Ok(self.ring.cap() - self.ring.used(self.head, tail)?)
    }

    /// Make the bytes written so far visible, and ring the doorbell if the
    /// reader sleeps. A doorbell that cannot be sent (the reader shut its
    /// socket) is not an error here: a peer that leaves in order shuts its
    /// sockets after its BYE, which we may not have read yet — the peer's
    /// end is reported by its own connection to us (BYE or not), or found
    /// when the ring is full (`wait_space`) or at shutdown's flush.
    fn publish(&mut self) {
        self.ring.head().store(self.head, Ordering::Release);
        // Pairs with the reader's fence between setting `reader_sleeping`
        // and re-reading `head`: one of us sees the other.
        fence(Ordering::SeqCst);
        let sleeping = self.ring.reader_sleeping();
        if sleeping.load(Ordering::Relaxed) != 0 && sleeping.swap(0, Ordering::SeqCst) != 0 {
            // When we rang, for the reader's measure of its wake-up.
            self.ring
                .doorbell_at()
                .store(wait::now_ns(), Ordering::Release);
            // A full socket already holds doorbells the reader will see.
            let _ = rustix::net::send(
                self.sock.as_fd(),
                &[1u8],
                SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
            );
        }
    }

    /// Wait until the ring has free space (or the peer is gone).
    fn wait_space(&self) -> io::Result<()> {
        loop {
            let mut err = None;
            if poll_ring(|| match self.free() {
                Ok(n) => n > 0,
                Err(e) => {
                    err = Some(e);
                    true
                }
            }) {
                return err.map_or(Ok(()), Err);
            }
            if !never_sleep() {
                break;
            }
            if socket_closed(&self.sock) {
                return Err(reader_gone());
            }
        }
        loop {
            let seq = self.ring.space_seq().load(Ordering::Acquire);
            self.ring.writer_waiting().store(1, Ordering::SeqCst);
            if self.free()? > 0 {
                return Ok(());
            }
            let t = futex::Timespec {
                tv_sec: 0,
                tv_nsec: SPACE_RECHECK.as_nanos() as _,
            };
            // Timeouts, spurious wake-ups and a changed word all just mean "look again".
            let _ = futex::wait(self.ring.space_seq(), futex::Flags::empty(), seq, Some(&t));
            if self.free()? > 0 {
                return Ok(());
            }
            if socket_closed(&self.sock) {
                return Err(reader_gone());
            }
        }
    }

    fn write_all(&mut self, mut src: &[u8]) -> io::Result<()> {
        while !src.is_empty() {
            let mut free = self.free()?;
            if free == 0 {
                self.publish();
                self.wait_space()?;
                free = self.free()?;
            }
            let n = (free as usize).min(src.len());
            let (now, rest) = src
                .split_at_checked(n)
                .ok_or_else(|| io::Error::other("shm ring: a write past its source"))?;
            self.ring.put(self.head, now);
            self.head = self.head.wrapping_add(n as u64);
            src = rest;
            if !src.is_empty() {
                // Let the reader start on what is there (pipelining).
                self.publish();
            }
        }
        Ok(())
    }
}

impl Outbound for RingWriter {
    fn write_frame(&mut self, hdr: &FrameHeader, payload: &[u8]) -> io::Result<()> {
        self.write_all(&hdr.encode())?;
        self.write_all(payload)?;
        self.publish();
        Ok(())
    }

    fn try_write_now(&mut self, hdr: &FrameHeader, payload: &[u8]) -> io::Result<bool> {
        let len = (HEADER_LEN + payload.len()) as u64;
        if self.free()? < len {
            return Ok(false);
        }
        // Room for all of it: neither write waits.
        self.write_all(&hdr.encode())?;
        self.write_all(payload)?;
        self.publish();
        Ok(true)
    }

    fn shutdown(&mut self) {
        self.sock.shutdown();
    }
}

/// The acceptor's side: frames out of the ring; blocks on the socket
/// (doorbell bytes, or its end: the peer is gone) when the ring is empty.
pub(crate) struct RingReader {
    ring: Ring,
    sock: Stream,
    /// Our own copy of `tail`.
    tail: u64,
    /// The socket ended at this head: nothing past it is read.
    end: Option<u64>,
    /// When we last told the writer we sleep (`wait::now_ns`).
    armed_at: u64,
}

impl RingReader {
    pub(crate) fn new(ring: Ring, sock: Stream) -> RingReader {
        let tail = ring.tail().load(Ordering::Acquire);
        RingReader {
            ring,
            sock,
            tail,
            end: None,
            armed_at: 0,
        }
    }

    /// Bytes readable now (checked; bounded by where the socket ended).
    fn available(&self) -> io::Result<u64> {
        let limit = match self.end {
            Some(end) => end,
            None => self.ring.head().load(Ordering::Acquire),
        };
        self.ring.used(limit, self.tail)
    }

    /// Read the doorbell bytes waiting on the socket; notes its end.
    fn drain_doorbells(&mut self) -> io::Result<()> {
        let mut b = [0u8; 64];
        loop {
            match rustix::net::recv(self.sock.as_fd(), &mut b, RecvFlags::DONTWAIT) {
                Ok((0, _)) => return self.ended(),
                Ok(_) => {}
                Err(rustix::io::Errno::AGAIN) => return Ok(()),
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return self.ended(),
            }
        }
    }

    /// The socket ended: what the writer put in the ring before is still read.
    fn ended(&mut self) -> io::Result<()> {
        if self.end.is_none() {
            let head = self.ring.head().load(Ordering::Acquire);
            self.ring.used(head, self.tail)?;
            self.end = Some(head);
        }
        Ok(())
    }

    /// Readable now: bytes in the ring, the end, or an error to report.
    fn ready_now(&mut self) -> bool {
        match self.available() {
            Ok(0) => {}
            _ => return true,
        }
        if self.end.is_some() {
            return true;
        }
        if self.drain_doorbells().is_err() || self.end.is_some() {
            return true;
        }
        !matches!(self.available(), Ok(0))
    }

    /// Tell the writer we are about to block; true if bytes came meanwhile.
    fn sleep_armed(&mut self) -> bool {
        self.armed_at = wait::now_ns();
        self.ring.reader_sleeping().store(1, Ordering::SeqCst);
        // Pairs with the writer's fence in `publish`.
        fence(Ordering::SeqCst);
        self.ready_now()
    }

    /// We slept and run again: how long the wake-up took, if a doorbell
    /// rung since we armed woke us.
    fn observe_wake(&self) {
        let rang = self.ring.doorbell_at().load(Ordering::Acquire);
        wait::observe_wake_since(self.armed_at, rang);
    }

    /// Poll the ring as `wait` says; true if bytes came.
    fn poll_data(&self) -> bool {
        poll_ring(|| !matches!(self.available(), Ok(0)))
    }

    /// Block until bytes, the end or an error (after polling as `wait` says).
    fn wait_data(&mut self) -> io::Result<()> {
        loop {
            if self.poll_data() {
                return Ok(());
            }
            if !never_sleep() {
                break;
            }
            // Never sleeping: look at the socket (the peer's end) and poll on.
            if self.ready_now() {
                return Ok(());
            }
        }
        while !self.sleep_armed() {
            let mut p = libc::pollfd {
                fd: self.sock.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one live pollfd on our open socket.
            let n = unsafe { libc::poll(&mut p, 1, -1) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            self.observe_wake();
        }
        self.ring.reader_sleeping().store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Bytes were taken: wake the writer if it waits for space.
    fn consumed(&self) {
        self.ring.tail().store(self.tail, Ordering::Release);
        fence(Ordering::SeqCst);
        let waiting = self.ring.writer_waiting();
        if waiting.load(Ordering::Relaxed) != 0 && waiting.swap(0, Ordering::SeqCst) != 0 {
            self.ring.space_seq().fetch_add(1, Ordering::Release);
            let _ = futex::wake(self.ring.space_seq(), futex::Flags::empty(), 1);
        }
    }
}

impl Read for RingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let n = self.available()?;
            if n > 0 {
                // Awake and reading: no doorbell needed until we arm again.
                let sleeping = self.ring.reader_sleeping();
                if sleeping.load(Ordering::Relaxed) != 0 {
                    sleeping.store(0, Ordering::Relaxed);
                }
                let k = (n as usize).min(buf.len());
                let Some(dst) = buf.get_mut(..k) else {
                    return Err(io::Error::other("shm ring: a read past its buffer"));
                };
                self.ring.get(self.tail, dst);
                self.tail = self.tail.wrapping_add(k as u64);
                self.consumed();
                return Ok(k);
            }
            if self.end.is_some() {
                return Ok(0);
            }
            self.wait_data()?;
            if self.available()? == 0 {
                self.drain_doorbells()?;
            }
        }
    }
}

impl Inbound for RingReader {
    fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
    fn buffered(&mut self) -> bool {
        !matches!(self.available(), Ok(0))
    }
    fn ready(&mut self) -> bool {
        self.ready_now()
    }
    fn linger(&mut self) -> bool {
        // Poll the ring as `wait` says: the frame a waiter wants is often
        // a few microseconds away, and a wake-up costs more.
        self.poll_data()
    }
    fn never_blocks(&self) -> bool {
        never_sleep()
    }
    fn woke(&mut self) {
        self.observe_wake();
    }
    fn arm(&mut self) -> bool {
        self.sleep_armed()
    }
    fn upgrade(&mut self, _probe: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a second switch to shared memory",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::FrameKind;
    use std::os::unix::net::UnixStream;

    fn pair(ring: usize) -> (RingWriter, RingReader) {
        let seg = Segment::create(ring).unwrap();
        let (a, b) = UnixStream::pair().unwrap();
        let fd = seg.fd().try_clone().unwrap();
        let w = RingWriter::new(Ring::new(Segment::open(fd).unwrap()), Stream::Unix(a));
        let r = RingReader::new(Ring::new(seg), Stream::Unix(b));
        (w, r)
    }

    #[test]
    fn frames_larger_than_the_ring_are_pipelined() {
        let (mut w, mut r) = pair(64 << 10);
        let payload: Vec<u8> = (0..1_000_003u32).map(|i| (i * 7) as u8).collect();
        let mut hdr = FrameHeader::control(FrameKind::Data, 3, 9);
        hdr.payload_len = payload.len() as u64;
        let p2 = payload.clone();
        let t = std::thread::spawn(move || {
            w.write_frame(&hdr, &p2).unwrap();
            w.write_frame(&FrameHeader::control(FrameKind::Bye, 0, 0), &[])
                .unwrap();
            w.shutdown();
        });
        let mut hb = [0u8; crate::frame::HEADER_LEN];
        r.read_exact(&mut hb).unwrap();
        assert_eq!(FrameHeader::decode(&hb).unwrap(), hdr);
        let mut got = vec![0u8; payload.len()];
        r.read_exact(&mut got).unwrap();
        assert!(got == payload);
        r.read_exact(&mut hb).unwrap();
        assert_eq!(FrameHeader::decode(&hb).unwrap().kind, FrameKind::Bye);
        t.join().unwrap();
        // The writer closed its socket: the end, not a hang.
        assert_eq!(r.read(&mut hb).unwrap(), 0);
    }

    #[test]
    fn a_frame_written_now_goes_whole_or_not_at_all() {
        let (mut w, mut r) = pair(64 << 10);
        // Fill the ring but for less than a header.
        let mut data = FrameHeader::control(FrameKind::Data, 3, 9);
        let fill = (64 << 10) - HEADER_LEN - 10;
        data.payload_len = fill as u64;
        w.write_frame(&data, &vec![7u8; fill]).unwrap();
        let cts = FrameHeader::control(FrameKind::Cts, 3, 10);
        // No room: nothing written, and no wait for the reader.
        assert!(!w.try_write_now(&cts, &[]).unwrap());
        let mut hb = [0u8; HEADER_LEN];
        r.read_exact(&mut hb).unwrap();
        let mut got = vec![0u8; fill];
        r.read_exact(&mut got).unwrap();
        // Room again: written whole, right after the frame before it.
        assert!(w.try_write_now(&cts, &[]).unwrap());
        r.read_exact(&mut hb).unwrap();
        assert_eq!(FrameHeader::decode(&hb).unwrap(), cts);
    }

    #[test]
    fn a_corrupted_head_is_invalid_data_not_an_out_of_bounds_read() {
        let (_w, mut r) = pair(64 << 10);
        // The peer claims more bytes than the ring holds.
        r.ring.head().store((64 << 10) + 1, Ordering::SeqCst);
        let mut b = [0u8; 16];
        let e = r.read(&mut b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(
            e.to_string().contains("corrupted shared-memory ring"),
            "{e}"
        );
        // A head behind the tail (wrapping) is caught too.
        r.ring.head().store(u64::MAX, Ordering::SeqCst);
        assert_eq!(
            r.read(&mut b).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }

    #[test]
    fn a_corrupted_tail_is_invalid_data_for_the_writer() {
        let (mut w, _r) = pair(64 << 10);
        w.ring.tail().store(12345, Ordering::SeqCst);
        let e = w
            .write_frame(&FrameHeader::control(FrameKind::Cts, 0, 1), &[])
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn segments_of_a_bad_size_or_unsealed_are_refused() {
        let fd =
            rustix::fs::memfd_create("t", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
        rustix::fs::ftruncate(&fd, (HEADER + (64 << 10)) as u64).unwrap();
        let e = Segment::open(fd.try_clone().unwrap()).err().unwrap();
        assert!(e.to_string().contains("not sealed"), "{e}");
        rustix::fs::ftruncate(&fd, (HEADER + 1000) as u64).unwrap();
        rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)
            .unwrap();
        let e = Segment::open(fd).err().unwrap();
        assert!(e.to_string().contains("size"), "{e}");
    }

    use rustix::fs::{MemfdFlags, SealFlags};

    #[test]
    fn the_readers_end_is_its_socket_closing() {
        let (w, mut r) = pair(64 << 10);
        drop(w);
        let mut b = [0u8; 8];
        assert_eq!(r.read(&mut b).unwrap(), 0);
    }
}

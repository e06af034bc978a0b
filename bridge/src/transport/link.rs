//! The transport interface: what the layers above (the point-to-point
//! layer, the engine's control frames) need of a connection to a peer
//! process, whatever carries it. A [`Link`] takes frames (header and
//! payload, see `frame`) in MPI's order, holds the eager credit the peer
//! granted, and reports the peer's loss through [`PeerLost`] (liveness).
//! The connection logic (`outgoing::OutConn`, `incoming::InConn`: lanes,
//! credit, who reads) is the same whatever carries the bytes; what
//! differs is behind [`Outbound`] (writing a frame) and [`Inbound`]
//! (reading frames, and knowing when there is something to read): the
//! socket (`socket`) and the shared-memory ring (`shm`) implement both.

use std::io::{self, Read};
use std::os::fd::RawFd;
use std::sync::Arc;

use uuid::Uuid;

use crate::completion::Completion;
use crate::error::Result;
use crate::frame::FrameHeader;
use crate::held::Held;
use crate::payload::Payload;

use super::cma::PeerMemory;

/// What a connection tells its owner (the engine) when the peer is lost.
pub(crate) trait PeerLost: Send + Sync + 'static {
    /// Writing to (or reading from) `peer` failed: fail everything that involves it.
    fn peer_lost(&self, peer: Uuid, reason: &str);
    /// Writing to `peer` failed (it closed its end): what we send it is
    /// lost; what it sent us may still be in its connection to us, whose
    /// end tells whether it said goodbye or failed. By default as
    /// [`PeerLost::peer_lost`].
    fn write_failed(&self, peer: Uuid, reason: &str) {
        self.peer_lost(peer, reason)
    }
}

/// A frame waiting for the writer thread.
pub(crate) struct Queued {
    pub hdr: FrameHeader,
    /// Owned, or lent by a nonblocking send whose `done` this frame holds
    /// (completed only once the frame was written or dropped unwritten).
    pub payload: Payload,
    pub dest_rank: u32,
    /// Completed when the frame is written (eager isend); None for issend (completed by SYNC_ACK) and control frames.
    pub done: Option<Arc<Completion<()>>>,
    /// The payload's share of the sender's budget, given back when this
    /// frame is dropped (written or failed): kept for its `Drop` only.
    #[allow(dead_code)]
    pub held: Option<Held>,
}

/// Whether an inline write went out or found the connection busy.
pub(crate) enum TryInline {
    Done,
    Busy,
}

/// Our one outgoing connection to a peer process, as the layers above use
/// it. Messages (EAGER, SYNC_EAGER, RTS) keep their posting order; control
/// frames and payloads (SYNC_ACK, CTS, CREDIT, DATA) are never held back
/// behind them. A write that fails reports the peer to `lost` and fails.
pub(crate) trait Link: Send + Sync {
    /// Spend `cost` bytes of eager credit; false (nothing spent) if there is not enough.
    fn take_credit(&self, cost: u64) -> bool;
    /// Wait until the peer's initial credit grant came (at once if it did).
    fn wait_granted(&self);
    /// Write one frame from the calling thread, after the frames before it.
    fn write_blocking(
        &self,
        lost: &dyn PeerLost,
        hdr: &FrameHeader,
        payload: &[u8],
        dest_rank: u32,
    ) -> Result<()>;
    /// Write one frame from the calling thread if `wait` or the link is
    /// idle; otherwise report Busy (nothing written).
    fn write_inline(
        &self,
        lost: &dyn PeerLost,
        hdr: &FrameHeader,
        payload: &[u8],
        dest_rank: u32,
        wait: bool,
    ) -> Result<TryInline>;
    /// Hand a frame to the link's own writer (independent progress).
    fn enqueue(&self, q: Queued) -> Result<()>;
    /// Write a control frame (no payload) from the calling thread if
    /// nothing is ahead of it on the control lane and the byte path takes
    /// it at once (see `Outbound::try_write_now`); false: nothing written,
    /// enqueue it. Spares a wake-up of the writer thread for the answers
    /// (CTS, credit) a peer's waiting thread is polling for.
    fn try_control_now(&self, lost: &dyn PeerLost, hdr: &FrameHeader) -> Result<bool>;
    /// Queue pushed DATA (see `frame`) behind its RTS if `cost` bytes of
    /// credit are left (spending them) and no RTS ahead of it can be held
    /// back; else give it back, nothing spent.
    fn enqueue_on_credit(&self, cost: u64, q: Queued) -> std::result::Result<(), Queued>;
    /// Whether a message of `len` bytes may go by single copy: announced
    /// with its address, read by the peer from our memory (see `cma`).
    fn single_copy(&self, len: usize) -> bool;
}

/// The sending half of a connection's byte path: whole frames, in order.
pub(crate) trait Outbound: Send {
    /// Write a frame (header and payload); blocks while the path is full.
    fn write_frame(&mut self, hdr: &FrameHeader, payload: &[u8]) -> io::Result<()>;
    /// Write a frame without blocking: true if the path took it (all of
    /// it, or — see [`Outbound::unfinished`] — a part, the rest kept to be
    /// written first), false (nothing written) if it would have had to
    /// wait, or if this path cannot write without blocking (the default).
    /// A thread that reads a peer's frames may answer through this (see
    /// `Link::try_control_now`): it must not wait for the peer to read,
    /// since the peer may be waiting for it to read.
    fn try_write_now(&mut self, _hdr: &FrameHeader, _payload: &[u8]) -> io::Result<bool> {
        Ok(false)
    }
    /// Part of a frame taken by [`Outbound::try_write_now`] is still to be
    /// written: nothing else may go before [`Outbound::finish`].
    fn unfinished(&self) -> bool {
        false
    }
    /// Write what [`Outbound::try_write_now`] left (blocks while the path is full).
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Close the path (after BYE, or when the connection fails).
    fn shutdown(&mut self);
}

/// The receiving half of a connection's byte path, read as a stream of
/// frames. Blocking reads block until bytes come or the path ends (EOF).
/// Readiness is told through a descriptor: [`Inbound::fd`] becomes
/// readable when [`Inbound::ready`] may have become true, provided
/// [`Inbound::arm`] was called since the last read.
pub(crate) trait Inbound: Read + Send {
    /// The descriptor to poll (the socket).
    fn fd(&self) -> RawFd;
    /// Bytes are here already (no system call).
    fn buffered(&mut self) -> bool;
    /// A read makes progress now: bytes are here, or the end (or an error) is known.
    fn ready(&mut self) -> bool;
    /// Poll for bytes a short while before blocking (a waiting application
    /// thread does); true if they came.
    fn linger(&mut self) -> bool {
        false
    }
    /// [`Inbound::linger`] looks at memory, not the descriptor, and the
    /// process never sleeps (`ISTHMUS_WAIT=poll`): a waiting thread only
    /// glances at the descriptor between lingers instead of blocking on it.
    fn never_blocks(&self) -> bool {
        false
    }
    /// A `poll` that found [`Inbound::fd`] readable means a read makes
    /// progress (a socket: bytes, the end or an error are there), so
    /// [`Inbound::ready`] need not be asked again; false where the
    /// descriptor is only a doorbell (the ring).
    fn readable_when_polled(&self) -> bool {
        false
    }
    /// The thread that blocked on [`Inbound::fd`] after [`Inbound::arm`]
    /// runs again with the descriptor readable (the path may measure what
    /// its wake-up cost, see `wait`).
    fn woke(&mut self) {}
    /// About to block on [`Inbound::fd`]: make sure it becomes readable
    /// when bytes come. Returns [`Inbound::ready`] (then do not block).
    fn arm(&mut self) -> bool;
    /// The peer asked to carry what follows on the faster path this
    /// connection offered it (the SHM frame, whose `count`, `probe`, is
    /// where the peer's single-copy probe word is, 0 for none); an error
    /// if none was offered.
    fn upgrade(&mut self, _probe: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "SHM frame on a connection that offered no shared memory",
        ))
    }
    /// The peer's first frame was not SHM: drop what was offered.
    fn decline(&mut self) {}
    /// The peer's first frame was DUPLEX: the socket to write our own
    /// frames to it on (a clone); an error if this path cannot carry them.
    fn duplex_writer(&self) -> io::Result<std::net::TcpStream> {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "DUPLEX frame on a connection that cannot carry frames both ways",
        ))
    }
    /// The peer's memory, if this path lets us read its large messages
    /// from there (single copy, see `cma`).
    fn peer_memory(&self) -> Option<Arc<PeerMemory>> {
        None
    }
}

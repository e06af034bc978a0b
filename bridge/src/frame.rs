//! Wire format of the data connections: the fixed 56-byte frame header
//! that precedes every payload, and reading a payload of a known length.
//!
//! Frame header (little-endian):
//! ```text
//! off size field
//!  0   1   kind         1 EAGER, 2 SYNC_EAGER (ssend), 3 SYNC_ACK, 4 BYE,
//!                       5 RTS, 6 CTS, 7 DATA, 8 CREDIT, 9 SHM, 10 ABORT,
//!                       11 DUPLEX, 12 MOVED
//!  1   1   wire format  0 raw LE, 1 raw BE, 2 external32
//!  2   1   flags        bit 0 SINGLE_COPY (RTS and CTS only, see below),
//!                       bit 1 PUSHED (DATA only, see below),
//!                       bit 2 WANTS_CREDIT (RTS only, see below)
//!  3   1   reserved (0)
//!  4   4   source rank  (u32, rank of the sender in ITS local group)
//!  8   8   context id   (u64, the intercomm)
//! 16   4   tag          (i32)
//! 20   4   reserved (0)
//! 24   8   seq          (u64, sender-unique; SYNC_ACK echoes the SYNC_EAGER's seq)
//! 32   8   signature    (u64 type-signature hash of one element)
//! 40   8   count        (u64 elements)
//! 48   8   payload len  (u64 bytes that follow the header)
//! ```
//! Rendezvous (see `rendezvous`): RTS carries a message's envelope and its
//! length in `payload len` but NO payload; CTS (receiver → sender, on the
//! receiver's own connection) echoes the RTS's seq; DATA echoes it too and
//! carries the payload. CREDIT returns eager credit: `count` bytes.
//! Pushed DATA (flag PUSHED): the sender did not wait for the CTS — the
//! receiver's credit, returned after the RTS went out, covered the payload
//! (`payload len` + 128, as an eager message), so it follows its RTS in
//! the message lane; the receiver reads it into the matched receive, or
//! holds it with the announcement as an eager message, and answers the
//! announcement's CTS all the same (it ends the sender's count of
//! unanswered RTS).
//! An RTS with the flag WANTS_CREDIT announces a message the sender would
//! have sent eagerly (within the large-eager limit) but for want of
//! credit, and will push once credit covers it: the receiver may grow the
//! sender's window (see `ledger`) and grant the difference at once in a
//! CREDIT frame. It is a hint; the RTS is an RTS either way.
//! Single copy (between two processes of one host whose shared-memory
//! connection allows it, see `transport::cma`): an RTS with the
//! SINGLE_COPY flag is followed by 8 bytes, the address (u64 LE) in the
//! sender's memory of the message's `payload len` contiguous bytes; the
//! receiver, once matched, reads them itself (`process_vm_readv`) and
//! answers a CTS with the SINGLE_COPY flag, whose `count` is 0 if it read
//! them (or discarded the message) and 1 if the read failed: no DATA
//! follows either way, and the send completes. A plain CTS to such an RTS
//! (the receiver may not read the sender's memory) asks for DATA as usual.
//! ABORT ("the sender's program called `MPI_Abort`": end this process
//! too) carries the program's error code as its tag.
//! The connection handshake that precedes the frames is in `handshake`.
//! Right after the handshake the acceptor sends one CREDIT frame on the
//! accepted socket: the connector's initial window if it admitted the
//! connector at once, or, if it must first wait for the table naming the
//! connector, a notice of 0 bytes with seq `GRANT_FOLLOWS`, followed by
//! the window once admitted. Nothing else travels in that direction,
//! except doorbell bytes once the connection moved to shared memory: the
//! connector's first frame may be SHM ("what follows goes through the
//! ring whose segment came with your grant", see `transport::shm`).
//! Over TCP the connector's first frame may instead be DUPLEX ("I read
//! this socket too: write to me on it"; `count` is the acceptor's initial
//! window, as the acceptor's first CREDIT frame is the connector's): the
//! acceptor may then carry its own frames to the connector on the same
//! connection instead of opening one of its own, so that each side's
//! answers carry TCP's acknowledgement of what they answer (see
//! `transport::duplex`). If both connected at once and both said DUPLEX,
//! the one with the larger process id ends its own connection with MOVED
//! ("what follows comes on the connection you opened to me") and writes
//! on the other's from then on.

use std::io::{self, Read};

use crate::error::{BridgeError, Result};
use crate::format::WireFormat;

pub(crate) const HEADER_LEN: usize = 56;
/// `seq` of the CREDIT frame that says "admission pending: the grant follows".
pub(crate) const GRANT_FOLLOWS: u64 = 1;
/// Header flag: a single-copy RTS (an address follows) or its CTS (read done).
pub(crate) const SINGLE_COPY: u8 = 1;
/// Header flag: DATA sent on returned credit, before any CTS (see the module's doc).
pub(crate) const PUSHED: u8 = 2;
/// Header flag: an RTS sent only for want of credit (see the module's doc).
pub(crate) const WANTS_CREDIT: u8 = 4;
/// Bytes after a single-copy RTS's header: the payload's address.
pub(crate) const SINGLE_COPY_TRAILER: usize = 8;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum FrameKind {
    /// A message, complete in this frame.
    Eager = 1,
    /// A synchronous-mode message: the receiver answers SYNC_ACK once a receive matched it.
    SyncEager = 2,
    /// "Your SYNC_EAGER with this seq was matched." Sent on the receiver's own outgoing connection.
    SyncAck = 3,
    /// Orderly goodbye: the sender will send nothing more.
    Bye = 4,
    /// Request to send: a message's envelope and length, payload to follow after CTS.
    Rts = 5,
    /// Clear to send: "a receive matched your RTS with this seq". Sent on the receiver's own connection.
    Cts = 6,
    /// The payload of a rendezvous message (seq of its RTS).
    Data = 7,
    /// Eager credit returned (or granted): `count` bytes.
    Credit = 8,
    /// First frame only: the frames that follow go through the shared-memory ring.
    Shm = 9,
    /// The sender's program aborted (`MPI_Abort`) with the error code in
    /// `tag`: the receiver ends too (see `Engine::on_abort`).
    Abort = 10,
    /// First frame only, over TCP: the connector reads this connection too
    /// and grants `count` bytes of eager credit on it (see the module's doc).
    Duplex = 11,
    /// Last frame on a connection: the sender's frames continue on the
    /// connection the receiver opened to it (see the module's doc).
    Moved = 12,
}

impl FrameKind {
    /// Whether `payload len` bytes follow the header on the wire.
    pub(crate) fn carries_payload(self) -> bool {
        matches!(
            self,
            FrameKind::Eager | FrameKind::SyncEager | FrameKind::Data
        )
    }
}

/// Decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHeader {
    pub kind: FrameKind,
    pub format: WireFormat,
    /// [`SINGLE_COPY`], [`PUSHED`], [`WANTS_CREDIT`] or 0.
    pub flags: u8,
    pub source: u32,
    pub context: u64,
    pub tag: i32,
    pub seq: u64,
    pub signature: u64,
    pub count: u64,
    pub payload_len: u64,
}

impl FrameHeader {
    pub(crate) fn control(kind: FrameKind, context: u64, seq: u64) -> Self {
        FrameHeader {
            kind,
            format: WireFormat::RawLe,
            flags: 0,
            source: 0,
            context,
            tag: 0,
            seq,
            signature: 0,
            count: 0,
            payload_len: 0,
        }
    }

    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = self.kind as u8;
        b[1] = self.format as u8;
        b[2] = self.flags;
        b[4..8].copy_from_slice(&self.source.to_le_bytes());
        b[8..16].copy_from_slice(&self.context.to_le_bytes());
        b[16..20].copy_from_slice(&self.tag.to_le_bytes());
        b[24..32].copy_from_slice(&self.seq.to_le_bytes());
        b[32..40].copy_from_slice(&self.signature.to_le_bytes());
        b[40..48].copy_from_slice(&self.count.to_le_bytes());
        b[48..56].copy_from_slice(&self.payload_len.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; HEADER_LEN]) -> Result<Self> {
        let kind = match b[0] {
            1 => FrameKind::Eager,
            2 => FrameKind::SyncEager,
            3 => FrameKind::SyncAck,
            4 => FrameKind::Bye,
            5 => FrameKind::Rts,
            6 => FrameKind::Cts,
            7 => FrameKind::Data,
            8 => FrameKind::Credit,
            9 => FrameKind::Shm,
            10 => FrameKind::Abort,
            11 => FrameKind::Duplex,
            12 => FrameKind::Moved,
            k => return Err(BridgeError::Protocol(format!("unknown frame kind {k}"))),
        };
        let format = WireFormat::from_u8(b[1])
            .ok_or_else(|| BridgeError::Protocol(format!("unknown wire format {}", b[1])))?;
        // Fixed offsets into a fixed-size header: always within it.
        let u64_at = |o: usize| -> Result<u64> {
            b.get(o..o + 8)
                .and_then(|w| w.try_into().ok())
                .map(u64::from_le_bytes)
                .ok_or_else(|| BridgeError::Protocol(format!("no 8-byte field at {o}")))
        };
        let flags = b[2];
        let allowed = match kind {
            FrameKind::Rts => SINGLE_COPY | WANTS_CREDIT,
            FrameKind::Cts => SINGLE_COPY,
            FrameKind::Data => PUSHED,
            _ => 0,
        };
        if flags & !allowed != 0 {
            return Err(BridgeError::Protocol(format!(
                "{kind:?} frame with flags {flags:#x}"
            )));
        }
        let hdr = FrameHeader {
            kind,
            format,
            flags,
            source: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            context: u64_at(8)?,
            tag: i32::from_le_bytes([b[16], b[17], b[18], b[19]]),
            seq: u64_at(24)?,
            signature: u64_at(32)?,
            count: u64_at(40)?,
            payload_len: u64_at(48)?,
        };
        if !kind.carries_payload() && kind != FrameKind::Rts && hdr.payload_len != 0 {
            return Err(BridgeError::Protocol(format!(
                "{kind:?} frame claims a payload of {} bytes",
                hdr.payload_len
            )));
        }
        Ok(hdr)
    }

    /// The SHM frame (see [`FrameKind::Shm`]).
    pub(crate) fn shm() -> Self {
        FrameHeader::control(FrameKind::Shm, 0, 0)
    }

    /// The DUPLEX frame (see [`FrameKind::Duplex`]) granting `window` bytes.
    pub(crate) fn duplex(window: u64) -> Self {
        let mut h = FrameHeader::control(FrameKind::Duplex, 0, 0);
        h.count = window;
        h
    }

    /// Whether this is a single-copy RTS or CTS (see the module's doc).
    pub(crate) fn single_copy(&self) -> bool {
        self.flags & SINGLE_COPY != 0
    }

    /// Whether this is an RTS sent only for want of credit (see the module's doc).
    pub(crate) fn wants_credit(&self) -> bool {
        self.kind == FrameKind::Rts && self.flags & WANTS_CREDIT != 0
    }

    /// Whether this is DATA the sender pushed on returned credit (see the module's doc).
    pub(crate) fn pushed(&self) -> bool {
        self.kind == FrameKind::Data && self.flags & PUSHED != 0
    }

    /// A CREDIT frame returning (or granting) `bytes` of eager credit.
    pub(crate) fn credit(bytes: u64) -> Self {
        let mut h = FrameHeader::control(FrameKind::Credit, 0, 0);
        h.count = bytes;
        h
    }
}

/// Read a payload of `len` bytes into a new vector (allocation failure is an error, not an abort).
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

/// Skip a payload of `len` bytes.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip() {
        let h = FrameHeader {
            kind: FrameKind::SyncEager,
            format: WireFormat::External32,
            flags: 0,
            source: 7,
            context: 0xdead_beef_0000_0001,
            tag: -1,
            seq: 42,
            signature: 0x1234,
            count: 9,
            payload_len: 1 << 40,
        };
        assert_eq!(FrameHeader::decode(&h.encode()).unwrap(), h);
        let mut bad = h.encode();
        bad[0] = 99;
        assert!(FrameHeader::decode(&bad).is_err());
        let mut flagged = h.encode();
        flagged[2] = SINGLE_COPY;
        assert!(
            FrameHeader::decode(&flagged).is_err(),
            "SINGLE_COPY on SYNC_EAGER"
        );
        let rts = FrameHeader {
            kind: FrameKind::Rts,
            flags: SINGLE_COPY,
            ..h
        };
        assert_eq!(FrameHeader::decode(&rts.encode()).unwrap(), rts);
        let mut unknown = rts.encode();
        unknown[2] = PUSHED;
        assert!(FrameHeader::decode(&unknown).is_err(), "PUSHED on RTS");
        let pushed = FrameHeader {
            kind: FrameKind::Data,
            flags: PUSHED,
            ..h
        };
        assert!(FrameHeader::decode(&pushed.encode()).unwrap().pushed());
        let mut copied = pushed.encode();
        copied[2] = SINGLE_COPY;
        assert!(FrameHeader::decode(&copied).is_err(), "SINGLE_COPY on DATA");
        let wants = FrameHeader {
            kind: FrameKind::Rts,
            flags: WANTS_CREDIT,
            ..h
        };
        assert!(FrameHeader::decode(&wants.encode()).unwrap().wants_credit());
        assert!(!FrameHeader::decode(&rts.encode()).unwrap().wants_credit());
        let cts = FrameHeader {
            kind: FrameKind::Cts,
            flags: WANTS_CREDIT,
            ..h
        };
        assert!(
            FrameHeader::decode(&cts.encode()).is_err(),
            "WANTS_CREDIT on CTS"
        );
    }

    #[test]
    fn an_abort_carries_its_error_code() {
        let mut h = FrameHeader::control(FrameKind::Abort, 0, 0);
        h.tag = -7;
        let back = FrameHeader::decode(&h.encode()).unwrap();
        assert_eq!((back.kind, back.tag), (FrameKind::Abort, -7));
        // No payload: an ABORT that claims one is refused.
        let mut bad = h;
        bad.payload_len = 8;
        assert!(FrameHeader::decode(&bad.encode()).is_err());
    }
}

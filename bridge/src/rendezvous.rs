//! Rendezvous bookkeeping. A message above the eager limit (or one its
//! sender has no credit for) travels in three steps: the sender announces
//! it (RTS: the envelope and length, no payload), the receiver answers
//! clear-to-send (CTS) once a receive MATCHED it, and only then the payload
//! follows (DATA), straight into the matched receive's buffer. This module
//! holds the two waiting sides: sends waiting for their CTS, by sequence
//! number, and matched receives waiting for their DATA, by (peer, sequence).
//!
//! Single copy (see `frame` and `transport::cma`): the RTS carries
//! the payload's address in the sender's memory; until a receive matches
//! it, that offer waits here, by (peer, sequence). The receiver then reads
//! the payload itself and its single-copy CTS completes the send: no DATA.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use crate::completion::Completion;
use crate::error::BridgeError;
use crate::frame::FrameHeader;
use crate::held::Held;
use crate::matching::{PostedRecv, Status};
use crate::payload::Payload;
use crate::sync::lock;
use crate::transport::PeerMemory;

/// A send whose RTS went out and that waits for the CTS.
pub(crate) struct PendingSend {
    pub peer: Uuid,
    pub dest_rank: u32,
    /// The announcement (DATA repeats its envelope).
    pub rts: FrameHeader,
    /// The payload when the request owns it or its caller lent it (the
    /// writer sends DATA on CTS); None when the blocked caller writes DATA
    /// itself from its memory.
    pub payload: Option<Payload>,
    /// The payload's share of the sender's budget (with an owned `payload`).
    pub held: Option<Held>,
    /// Owned: completed once DATA was written. Caller: completed at CTS.
    pub done: Arc<Completion<()>>,
    /// A single-copy send of the blocked caller's memory: set before `done`
    /// completes if the receiver read the payload itself (no DATA to write).
    pub read_by_peer: Option<Arc<AtomicBool>>,
}

/// Where a single-copy announcement's payload is in the sender's memory,
/// and that memory if this process may read it.
pub(crate) struct SingleCopyOffer {
    pub addr: u64,
    pub mem: Option<Arc<PeerMemory>>,
}

/// A matched receive (or a matched message to discard) waiting for DATA.
pub(crate) struct PendingData {
    /// Announced payload length; DATA must carry exactly this many bytes.
    pub len: u64,
    pub status: Status,
    /// None: the match failed (type mismatch, truncation) and the payload is discarded.
    pub recv: Option<PostedRecv>,
}

#[derive(Default)]
pub(crate) struct Sends {
    pending: HashMap<u64, PendingSend>,
    /// Per peer, sends cleared by a CTS whose DATA is not queued yet (so
    /// that a flush sees them between the two tables).
    handing_over: HashMap<Uuid, usize>,
}

#[derive(Default)]
pub(crate) struct Rendezvous {
    sends: Mutex<Sends>,
    recvs: Mutex<HashMap<(Uuid, u64), PendingData>>,
    /// Single-copy announcements not matched yet (as many as the
    /// announcements a peer may have held, see `ledger`).
    offers: Mutex<HashMap<(Uuid, u64), SingleCopyOffer>>,
}

impl Rendezvous {
    pub(crate) fn add_send(&self, seq: u64, p: PendingSend) {
        lock(&self.sends).pending.insert(seq, p);
    }

    /// The CTS for `seq` came from `peer`: the send it clears (only the
    /// destination may clear it). Counted as handed over until
    /// [`Rendezvous::handed_over`].
    pub(crate) fn cleared(&self, peer: Uuid, seq: u64) -> Option<PendingSend> {
        let mut s = lock(&self.sends);
        match s.pending.get(&seq) {
            Some(p) if p.peer == peer => {
                *s.handing_over.entry(peer).or_insert(0) += 1;
                s.pending.remove(&seq)
            }
            _ => None,
        }
    }

    /// The DATA of a send [`Rendezvous::cleared`] for `peer` is queued (or failed).
    pub(crate) fn handed_over(&self, peer: Uuid) {
        let mut s = lock(&self.sends);
        if let Some(n) = s.handing_over.get_mut(&peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                s.handing_over.remove(&peer);
            }
        }
    }

    /// Withdraw a send whose RTS could not be written.
    pub(crate) fn remove_send(&self, seq: u64) {
        lock(&self.sends).pending.remove(&seq);
    }

    /// A caller gives up waiting for the CTS: hand the payload to the request
    /// so that a later CTS still sends it. False if the CTS already came.
    pub(crate) fn detach_caller(&self, seq: u64, payload: &[u8], held: Held) -> bool {
        match lock(&self.sends).pending.get_mut(&seq) {
            Some(p) => {
                p.payload = Some(payload.to_vec().into());
                p.held = Some(held);
                true
            }
            None => false,
        }
    }

    /// Announced sends still waiting for their CTS, by destination process
    /// (what an orderly shutdown waits for).
    pub(crate) fn unmatched_by_peer(&self) -> HashMap<Uuid, usize> {
        let s = lock(&self.sends);
        let mut by_peer = s.handing_over.clone();
        for p in s.pending.values() {
            *by_peer.entry(p.peer).or_insert(0) += 1;
        }
        by_peer
    }

    pub(crate) fn add_recv(&self, peer: Uuid, seq: u64, p: PendingData) {
        lock(&self.recvs).insert((peer, seq), p);
    }

    /// A single-copy announcement `seq` from `peer` (before it is matched or discarded).
    pub(crate) fn add_offer(&self, peer: Uuid, seq: u64, o: SingleCopyOffer) {
        lock(&self.offers).insert((peer, seq), o);
    }

    /// The offer of the single-copy announcement `seq` from `peer`, now matched or discarded.
    pub(crate) fn take_offer(&self, peer: Uuid, seq: u64) -> Option<SingleCopyOffer> {
        lock(&self.offers).remove(&(peer, seq))
    }

    /// DATA for `seq` arrived from `peer`.
    pub(crate) fn take_recv(&self, peer: Uuid, seq: u64) -> Option<PendingData> {
        lock(&self.recvs).remove(&(peer, seq))
    }

    /// `peer` is gone: fail its pending sends and receives. Returns how
    /// many of the failed sends held their payload here (a blocking send
    /// of those may have returned already: their loss must be reported).
    pub(crate) fn peer_gone(&self, peer: Uuid, reason: &str) -> usize {
        lock(&self.offers).retain(|(p, _), _| *p != peer);
        let sends: Vec<PendingSend> = {
            let mut s = lock(&self.sends);
            s.handing_over.remove(&peer);
            let keys: Vec<u64> = s
                .pending
                .iter()
                .filter(|(_, p)| p.peer == peer)
                .map(|(k, _)| *k)
                .collect();
            keys.iter().filter_map(|k| s.pending.remove(k)).collect()
        };
        let held = sends.iter().filter(|p| p.payload.is_some()).count();
        for p in sends {
            p.done.complete(Err(BridgeError::PeerFailed {
                rank: p.dest_rank,
                reason: reason.to_owned(),
            }));
        }
        let recvs: Vec<PendingData> = {
            let mut r = lock(&self.recvs);
            let keys: Vec<(Uuid, u64)> = r.keys().filter(|(p, _)| *p == peer).copied().collect();
            keys.iter().filter_map(|k| r.remove(k)).collect()
        };
        for d in recvs {
            if let Some(p) = d.recv {
                p.done.complete(Err(BridgeError::PeerFailed {
                    rank: d.status.source,
                    reason: reason.to_owned(),
                }));
            }
        }
        held
    }

    /// The engine stops: fail everything.
    pub(crate) fn shut_down(&self) {
        lock(&self.offers).clear();
        let sends: Vec<PendingSend> = {
            let mut s = lock(&self.sends);
            s.handing_over.clear();
            s.pending.drain().map(|(_, p)| p).collect()
        };
        for p in sends {
            p.done.complete(Err(BridgeError::EngineShutDown));
        }
        // PostedRecv::drop completes the receives with EngineShutDown.
        let recvs: Vec<PendingData> = lock(&self.recvs).drain().map(|(_, d)| d).collect();
        drop(recvs);
    }
}

//! Rendezvous bookkeeping. A message above the eager limit (or one its
//! sender has no credit for) travels in three steps: the sender announces
//! it (RTS: the envelope and length, no payload), the receiver answers
//! clear-to-send (CTS) once a receive MATCHED it, and only then the payload
//! follows (DATA), straight into the matched receive's buffer. This module
//! holds the two waiting sides: sends waiting for their CTS, by sequence
//! number, and matched receives waiting for their DATA, by (peer, sequence).
//!
//! Pushed DATA (see `frame`): a nonblocking standard send that went by
//! rendezvous only for want of credit is also queued here to be pushed;
//! once the receiver's returned credit covers it, its DATA follows the RTS
//! without waiting for the CTS (so a stream of messages just above the
//! credit keeps the link busy, where a CTS round trip per message idled
//! it). Whichever comes first, the push or the CTS, sends the payload; the
//! other finds nothing to do. The receiver may get pushed DATA before its
//! receive matched the announcement: it is then held with the
//! announcement as an eager message, or — while a receive is taking the
//! announcement at that moment — here, until the receive asks for it.
//!
//! Single copy (see `frame` and `transport::cma`): the RTS carries
//! the payload's address in the sender's memory; until a receive matches
//! it, that offer waits here, by (peer, sequence). The receiver then reads
//! the payload itself and its single-copy CTS completes the send: no DATA.

use std::collections::{HashMap, VecDeque};
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
use crate::transport::{PeerMemory, Queued};

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
    /// Its DATA went out on returned credit (see the module's doc): the
    /// CTS, when it comes, only ends the announcement.
    pub pushed: bool,
}

/// A pushed payload that arrived while its announcement was being matched
/// (see the module's doc), waiting for that receive's [`Rendezvous::add_recv`].
pub(crate) struct EarlyData {
    pub payload: Vec<u8>,
    /// The credit it holds (returned to its sender once consumed).
    pub cost: u64,
}

/// Where pushed DATA went that found no matched receive waiting.
pub(crate) enum Landing {
    /// A receive matched meanwhile: complete it with the payload, return the credit.
    Matched(PendingData, Vec<u8>),
    /// Now an eager message in its context's queue: the announcement ends
    /// (its RTS count at the receiver, a CTS to the sender).
    Attached,
    /// Kept here for the receive that is taking the announcement.
    Kept,
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
    /// Per peer, sends whose DATA may be pushed on returned credit, oldest
    /// first (a sequence number whose send is gone is skipped).
    pushable: HashMap<Uuid, VecDeque<u64>>,
}

#[derive(Default)]
struct Recvs {
    /// Matched receives waiting for DATA.
    pending: HashMap<(Uuid, u64), PendingData>,
    /// Pushed payloads whose receive is being matched.
    early: HashMap<(Uuid, u64), EarlyData>,
}

#[derive(Default)]
pub(crate) struct Rendezvous {
    sends: Mutex<Sends>,
    recvs: Mutex<Recvs>,
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

    /// The RTS of `seq` (to `peer`) is written or queued: its DATA may be
    /// pushed once credit allows (see the module's doc).
    pub(crate) fn make_pushable(&self, peer: Uuid, seq: u64) {
        let mut s = lock(&self.sends);
        if !s.pending.contains_key(&seq) {
            return; // The CTS came already.
        }
        let Sends {
            pending, pushable, ..
        } = &mut *s;
        let q = pushable.entry(peer).or_default();
        while q.front().is_some_and(|f| !pending.contains_key(f)) {
            q.pop_front();
        }
        q.push_back(seq);
    }

    /// Push the oldest pushable sends to `peer`, in order: each one's
    /// DATA (`data` makes its header from the RTS) goes to `queue`, which
    /// spends its payload's credit (`payload len` + `frame_cost`) or gives
    /// it back; the first given back stops the round. A pushed send stays
    /// pending, marked, until its CTS. Returns how many were pushed.
    pub(crate) fn push(
        &self,
        peer: Uuid,
        frame_cost: u64,
        data: impl Fn(&FrameHeader) -> FrameHeader,
        mut queue: impl FnMut(u64, Queued) -> std::result::Result<(), Queued>,
    ) -> u64 {
        let mut s = lock(&self.sends);
        let Sends {
            pending, pushable, ..
        } = &mut *s;
        let Some(q) = pushable.get_mut(&peer) else {
            return 0;
        };
        let mut pushed = 0;
        while let Some(&seq) = q.front() {
            let Some(p) = pending.get_mut(&seq).filter(|p| !p.pushed) else {
                q.pop_front();
                continue;
            };
            let Some(payload) = p.payload.take() else {
                q.pop_front();
                continue;
            };
            let item = Queued {
                hdr: data(&p.rts),
                payload,
                dest_rank: p.dest_rank,
                done: Some(Arc::clone(&p.done)),
                held: p.held.take(),
            };
            match queue(p.rts.payload_len.saturating_add(frame_cost), item) {
                Ok(()) => {
                    q.pop_front();
                    p.pushed = true;
                    pushed += 1;
                }
                Err(item) => {
                    p.payload = Some(item.payload);
                    p.held = item.held;
                    break;
                }
            }
        }
        if q.is_empty() {
            pushable.remove(&peer);
        }
        pushed
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

    /// A matched announcement waits for its DATA; if the DATA was pushed
    /// and arrived meanwhile, it is handed back with it instead.
    pub(crate) fn add_recv(
        &self,
        peer: Uuid,
        seq: u64,
        p: PendingData,
    ) -> Option<(PendingData, EarlyData)> {
        let mut r = lock(&self.recvs);
        if let Some(early) = r.early.remove(&(peer, seq)) {
            return Some((p, early));
        }
        r.pending.insert((peer, seq), p);
        None
    }

    /// Pushed DATA `seq` from `peer` found no matched receive waiting
    /// ([`Rendezvous::take_recv`]) and its payload was read: under the
    /// receives' lock, take a receive matched meanwhile, else let `attach`
    /// give it to its announcement where a receive will find it (it
    /// gives the payload back if the announcement is not there: a receive
    /// is taking it now), else keep it for that receive's `add_recv`.
    pub(crate) fn land_pushed(
        &self,
        peer: Uuid,
        seq: u64,
        early: EarlyData,
        attach: impl FnOnce(Vec<u8>) -> std::result::Result<(), Vec<u8>>,
    ) -> Landing {
        let mut r = lock(&self.recvs);
        if let Some(d) = r.pending.remove(&(peer, seq)) {
            return Landing::Matched(d, early.payload);
        }
        match attach(early.payload) {
            Ok(()) => Landing::Attached,
            Err(payload) => {
                let cost = early.cost;
                r.early.insert((peer, seq), EarlyData { payload, cost });
                Landing::Kept
            }
        }
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
        lock(&self.recvs).pending.remove(&(peer, seq))
    }

    /// `peer` is gone: fail its pending sends and receives. Returns how
    /// many of the failed sends held their payload here (a blocking send
    /// of those may have returned already: their loss must be reported).
    pub(crate) fn peer_gone(&self, peer: Uuid, reason: &str) -> usize {
        lock(&self.offers).retain(|(p, _), _| *p != peer);
        let sends: Vec<PendingSend> = {
            let mut s = lock(&self.sends);
            s.handing_over.remove(&peer);
            s.pushable.remove(&peer);
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
            r.early.retain(|(p, _), _| *p != peer);
            let keys: Vec<(Uuid, u64)> = r
                .pending
                .keys()
                .filter(|(p, _)| *p == peer)
                .copied()
                .collect();
            keys.iter().filter_map(|k| r.pending.remove(k)).collect()
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
            s.pushable.clear();
            s.pending.drain().map(|(_, p)| p).collect()
        };
        for p in sends {
            p.done.complete(Err(BridgeError::EngineShutDown));
        }
        // PostedRecv::drop completes the receives with EngineShutDown.
        let recvs: Vec<PendingData> = {
            let mut r = lock(&self.recvs);
            r.early.clear();
            r.pending.drain().map(|(_, d)| d).collect()
        };
        drop(recvs);
    }
}

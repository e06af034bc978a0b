//! Rendezvous bookkeeping. A message above the eager limit (or one its
//! sender has no credit for) travels in three steps: the sender announces
//! it (RTS: the envelope and length, no payload), the receiver answers
//! clear-to-send (CTS) once a receive MATCHED it, and only then the payload
//! follows (DATA), straight into the matched receive's buffer. This module
//! holds the two waiting sides: sends waiting for their CTS, by sequence
//! number, and matched receives waiting for their DATA, by (peer, sequence).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use crate::completion::Completion;
use crate::error::BridgeError;
use crate::frame::FrameHeader;
use crate::matching::{PostedRecv, Status};
use crate::sync::lock;

/// A send whose RTS went out and that waits for the CTS.
pub(crate) struct PendingSend {
    pub peer: Uuid,
    pub dest_rank: u32,
    /// The announcement (DATA repeats its envelope).
    pub rts: FrameHeader,
    /// The payload when the request owns it (the writer sends DATA on CTS);
    /// None when the blocked caller writes DATA itself from its memory.
    pub payload: Option<Vec<u8>>,
    /// Owned: completed once DATA was written. Caller: completed at CTS.
    pub done: Arc<Completion<()>>,
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
pub(crate) struct Rendezvous {
    sends: Mutex<HashMap<u64, PendingSend>>,
    recvs: Mutex<HashMap<(Uuid, u64), PendingData>>,
}

impl Rendezvous {
    pub(crate) fn add_send(&self, seq: u64, p: PendingSend) {
        lock(&self.sends).insert(seq, p);
    }

    /// The CTS for `seq` came from `peer`: the send it clears (only the destination may clear it).
    pub(crate) fn cleared(&self, peer: Uuid, seq: u64) -> Option<PendingSend> {
        let mut s = lock(&self.sends);
        match s.get(&seq) {
            Some(p) if p.peer == peer => s.remove(&seq),
            _ => None,
        }
    }

    /// Withdraw a send whose RTS could not be written.
    pub(crate) fn remove_send(&self, seq: u64) {
        lock(&self.sends).remove(&seq);
    }

    /// A caller gives up waiting for the CTS: hand the payload to the request
    /// so that a later CTS still sends it. False if the CTS already came.
    pub(crate) fn detach_caller(&self, seq: u64, payload: &[u8]) -> bool {
        match lock(&self.sends).get_mut(&seq) {
            Some(p) => {
                p.payload = Some(payload.to_vec());
                true
            }
            None => false,
        }
    }

    pub(crate) fn add_recv(&self, peer: Uuid, seq: u64, p: PendingData) {
        lock(&self.recvs).insert((peer, seq), p);
    }

    /// DATA for `seq` arrived from `peer`.
    pub(crate) fn take_recv(&self, peer: Uuid, seq: u64) -> Option<PendingData> {
        lock(&self.recvs).remove(&(peer, seq))
    }

    /// `peer` is gone: fail its pending sends and receives.
    pub(crate) fn peer_gone(&self, peer: Uuid, reason: &str) {
        let sends: Vec<PendingSend> = {
            let mut s = lock(&self.sends);
            let keys: Vec<u64> = s
                .iter()
                .filter(|(_, p)| p.peer == peer)
                .map(|(k, _)| *k)
                .collect();
            keys.iter().filter_map(|k| s.remove(k)).collect()
        };
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
    }

    /// The engine stops: fail everything.
    pub(crate) fn shut_down(&self) {
        for (_, p) in lock(&self.sends).drain() {
            p.done.complete(Err(BridgeError::EngineShutDown));
        }
        // PostedRecv::drop completes the receives with EngineShutDown.
        let recvs: Vec<PendingData> = lock(&self.recvs).drain().map(|(_, d)| d).collect();
        drop(recvs);
    }
}

//! Synchronous sends waiting for their SYNC_ACK, by sequence number. Only the
//! process the ssend went to may complete it; its failure fails it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tracing::debug;
use uuid::Uuid;

use crate::completion::Completion;
use crate::error::BridgeError;
use crate::sync::lock;

/// A synchronous send waiting for its SYNC_ACK.
struct SsendWaiter {
    peer: Uuid,
    dest_rank: u32,
    done: Arc<Completion<()>>,
}

#[derive(Default)]
pub(crate) struct SsendWaiters {
    by_seq: Mutex<HashMap<u64, SsendWaiter>>,
}

impl SsendWaiters {
    /// Register a synchronous send before its frame goes out.
    pub(crate) fn add(&self, seq: u64, peer: Uuid, dest_rank: u32, done: Arc<Completion<()>>) {
        lock(&self.by_seq).insert(
            seq,
            SsendWaiter {
                peer,
                dest_rank,
                done,
            },
        );
    }

    /// Withdraw (the frame could not be sent, or the wait timed out).
    pub(crate) fn remove(&self, seq: u64) {
        lock(&self.by_seq).remove(&seq);
    }

    /// A SYNC_ACK for `seq` arrived from `from`.
    pub(crate) fn acked(&self, from: Uuid, seq: u64) {
        let mut waiters = lock(&self.by_seq);
        // Only the peer the ssend went to may complete it.
        match waiters.get(&seq) {
            Some(w) if w.peer == from => {
                if let Some(w) = waiters.remove(&seq) {
                    w.done.complete(Ok(()));
                }
            }
            Some(_) => {
                debug!(seq, %from, "SYNC_ACK from a process the synchronous send did not go to; ignored")
            }
            None => debug!(seq, "SYNC_ACK for an unknown or withdrawn synchronous send"),
        }
    }

    /// Fail every synchronous send to `process`.
    pub(crate) fn peer_gone(&self, process: Uuid, reason: &str) {
        let waiters: Vec<SsendWaiter> = {
            let mut m = lock(&self.by_seq);
            let keys: Vec<u64> = m
                .iter()
                .filter(|(_, w)| w.peer == process)
                .map(|(k, _)| *k)
                .collect();
            keys.into_iter().filter_map(|k| m.remove(&k)).collect()
        };
        for w in waiters {
            w.done.complete(Err(BridgeError::PeerFailed {
                rank: w.dest_rank,
                reason: reason.to_owned(),
            }));
        }
    }

    /// Fail every waiting synchronous send (engine shutdown).
    pub(crate) fn shut_down(&self) {
        for (_, w) in lock(&self.by_seq).drain() {
            w.done.complete(Err(BridgeError::EngineShutDown));
        }
    }
}

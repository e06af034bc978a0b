//! Pushed DATA (see `rendezvous` and `frame`), both ends. A nonblocking
//! standard send that went by rendezvous only because the receiver's
//! credit was spent is pushed once returned credit covers it: its DATA
//! follows its RTS in the message lane without waiting for the CTS. Across
//! hosts a stream of 1 MiB `MPI_Isend`s (a window of 16, as the bandwidth
//! benchmarks send) had three messages within the 4 MiB window and waited
//! one CTS round trip for each of the other thirteen: 0.66× raw TCP's
//! bandwidth across two network namespaces.
//!
//! The receiver reads pushed DATA straight into the receive that matched
//! its announcement; if none has yet, the announcement becomes an eager
//! message holding the payload (its credit returns when a receive takes
//! it, as an eager message's does). Either way the announcement is
//! answered with its CTS once, which ends it at the sender.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tracing::debug;
use uuid::Uuid;

use super::shared::Shared;
use crate::contexts::Destination;
use crate::error::{BridgeError, Result};
use crate::frame::{read_payload_vec, FrameHeader, FrameKind, PUSHED};
use crate::ledger::FRAME_COST;
use crate::matching::read_into;
use crate::rendezvous::{EarlyData, Landing, PendingData};
use crate::transport::{FrameReader, Link};

/// How many rendezvous payloads went on returned credit in this process
/// (`Engine::push_stats`): what a test or a benchmark reads to see which
/// path messages took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PushStats {
    /// Our sends whose DATA we pushed before their CTS.
    pub pushed: u64,
    /// Pushed payloads that came before a receive matched their
    /// announcement and were held as eager messages.
    pub held: u64,
}

/// The counters behind [`PushStats`].
#[derive(Debug, Default)]
pub(crate) struct PushCounts {
    pushed: AtomicU64,
    held: AtomicU64,
}

impl PushCounts {
    pub(crate) fn get(&self) -> PushStats {
        PushStats {
            pushed: self.pushed.load(Ordering::Relaxed),
            held: self.held.load(Ordering::Relaxed),
        }
    }
}

impl Shared {
    /// Queue the DATA of the sends to `peer` that its credit now covers,
    /// oldest first (after a CREDIT frame, or once a pushable RTS is out).
    pub(crate) fn push_pending(&self, peer: Uuid) {
        let Some(conn) = self.conns.outgoing(peer) else {
            return;
        };
        let data = |rts: &FrameHeader| FrameHeader {
            kind: FrameKind::Data,
            flags: PUSHED,
            ..*rts
        };
        let n = self.rendezvous.push(peer, FRAME_COST, data, |cost, q| {
            conn.enqueue_on_credit(cost, q)
        });
        self.pushes.pushed.fetch_add(n, Ordering::Relaxed);
    }

    /// Pushed DATA from `peer` (its credit, `cost`, already charged) that
    /// no matched receive waited for: read it, then give it to a receive
    /// matched meanwhile, or to its announcement (answered now), or keep it
    /// for the receive that is taking the announcement.
    pub(super) fn pushed_early(
        self: &Arc<Self>,
        peer: Uuid,
        hdr: FrameHeader,
        rd: &mut FrameReader,
        cost: u64,
    ) -> Result<()> {
        let len = usize::try_from(hdr.payload_len)
            .map_err(|_| BridgeError::Protocol("payload does not fit in memory".into()))?;
        let payload = read_payload_vec(rd, len).map_err(|e| BridgeError::PeerFailed {
            rank: hdr.source,
            reason: format!("receiving a message failed: {e}"),
        })?;
        // Found before the receives' lock is taken: the lookup may evict
        // early contexts, whose discarded announcements take that lock.
        let (dest, evicted) = self.contexts.for_incoming(
            hdr.context,
            || self.is_shutting_down(),
            self.limits.early_context_age,
        );
        self.evict(evicted);
        let ctx = match dest {
            Destination::Ctx(ctx) => Some(ctx),
            Destination::Discard => None,
        };
        let mut attached = false;
        let landing =
            self.rendezvous
                .land_pushed(
                    peer,
                    hdr.seq,
                    EarlyData { payload, cost },
                    |early| match &ctx {
                        Some(ctx) => match ctx.attach_payload(peer, hdr.seq, early.payload, cost) {
                            Ok(()) => {
                                attached = true;
                                None
                            }
                            Err(payload) => Some(EarlyData { payload, cost }),
                        },
                        None => Some(early),
                    },
                );
        match landing {
            Landing::Matched(d, payload) => {
                self.fill_pushed(d, payload);
                self.release(peer, cost);
            }
            Landing::Held if attached => {
                self.pushes.held.fetch_add(1, Ordering::Relaxed);
                // No longer an announcement: end it here and at the sender.
                self.ledger.rts_done(peer);
                let cts = FrameHeader::control(FrameKind::Cts, hdr.context, hdr.seq);
                if let Err(e) = self.send_control(peer, cts) {
                    debug!(%peer, error = %e, "could not answer a pushed announcement");
                }
            }
            Landing::Held => {}
        }
        Ok(())
    }

    /// Complete the receive that matched an announcement with its pushed
    /// payload, read earlier (a receive whose match failed discards it).
    pub(super) fn fill_pushed(&self, d: PendingData, payload: Vec<u8>) {
        let Some(p) = d.recv else {
            return;
        };
        if payload.len() as u64 != d.len {
            p.done.complete(Err(BridgeError::Protocol(format!(
                "DATA of {} bytes for a message announced with {}",
                payload.len(),
                d.len
            ))));
            return;
        }
        let r = read_into(&p.target, &mut payload.as_slice(), payload.len())
            .map(|v| (v, d.status))
            .map_err(|e| BridgeError::Protocol(format!("copying a received message: {e}")));
        p.done.complete(r);
    }
}

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
//!
//! The decisions only, over the tables (`rendezvous`, `matching`) and the
//! link; `engine::shared` reads the frames and acts on the outcome.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use uuid::Uuid;

use crate::error::BridgeError;
use crate::frame::{FrameHeader, FrameKind, PUSHED};
use crate::ledger::FRAME_COST;
use crate::matching::{read_into, Ctx};
use crate::rendezvous::{EarlyData, Landing, PendingData, Rendezvous};
use crate::transport::Link;

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

    fn pushed(&self, n: u64) {
        self.pushed.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn held(&self) {
        self.held.fetch_add(1, Ordering::Relaxed);
    }
}

/// Queue the DATA of the sends to `peer` over `conn` that its credit now
/// covers, oldest first (after a CREDIT frame, or once a pushable RTS is out).
pub(crate) fn push_pending(
    rendezvous: &Rendezvous,
    conn: &dyn Link,
    peer: Uuid,
    counts: &PushCounts,
) {
    let data = |rts: &FrameHeader| FrameHeader {
        kind: FrameKind::Data,
        flags: PUSHED,
        ..*rts
    };
    let n = rendezvous.push(peer, FRAME_COST, data, |cost, q| {
        conn.enqueue_on_credit(cost, q)
    });
    counts.pushed(n);
}

/// Pushed DATA `seq` from `peer`, read (`payload`, holding `cost` of its
/// credit), that found no matched receive waiting: give it to a receive
/// matched meanwhile, or to its announcement in `ctx`, or keep it for the
/// receive that is taking the announcement.
pub(crate) fn place(
    rendezvous: &Rendezvous,
    ctx: Option<&Arc<Ctx>>,
    peer: Uuid,
    seq: u64,
    payload: Vec<u8>,
    cost: u64,
) -> Landing {
    rendezvous.land_pushed(
        peer,
        seq,
        EarlyData { payload, cost },
        |payload| match ctx {
            Some(ctx) => ctx.attach_payload(peer, seq, payload, cost),
            None => Err(payload),
        },
    )
}

/// Complete the receive that matched an announcement with its pushed
/// payload, read earlier (a receive whose match failed discards it).
pub(crate) fn fill(d: PendingData, payload: Vec<u8>) {
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

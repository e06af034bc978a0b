//! The point-to-point layer: MPI's matched messages on one context between
//! this process (a rank of the local group) and the ranks of a remote group.
//! A [`Channel`] is that context as the protocol sees it; it decides eager,
//! rendezvous or synchronous for each send (`send`), posts and completes
//! receives and probes (`recv`), and knows nothing of communicators: the
//! communicators (`intercomm`, the collectives in `coll`) sit above it and
//! speak to the engine only through it. Below it are the engine's tables
//! and the transport layer (`engine::shared`, `transport`).
//!
//! Like Open MPI's PML (`ompi/mca/pml/ob1`) under its bindings: the layer
//! above says what to send to which rank; how it travels is decided here.

mod recv;
mod send;

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::endpoint::Endpoint;
use crate::engine::Shared;
use crate::error::{BridgeError, Result};
use crate::frame::{FrameHeader, FrameKind};
use crate::matching::{Ctx, Source, Tag};
use crate::sync::lock;
use crate::wire::TypeSig;

/// One registered context: its matching state, our rank on it and the
/// endpoints of the remote ranks. `Send + Sync`; dropping it unregisters
/// the context (late messages for it are then discarded).
pub(crate) struct Channel {
    shared: Arc<Shared>,
    ctx: Arc<Ctx>,
    local_rank: u32,
    remote: Vec<Endpoint>,
}

impl Drop for Channel {
    fn drop(&mut self) {
        // With receives posted, the last of them to match retires it.
        if !self.ctx.defer_retire() {
            self.shared.retire_context(&self.ctx);
        }
    }
}

impl Channel {
    /// Register `context`: `remote[i]` is the endpoint of remote rank i.
    /// Messages that arrived for `context` before this call are kept and matched.
    pub(crate) fn open(
        shared: &Arc<Shared>,
        context: u64,
        local_rank: u32,
        remote: Vec<Endpoint>,
    ) -> Result<Channel> {
        // Admit data connections from these processes (their keys) first.
        shared.admission.learn(&remote)?;
        let (ctx, forged) = shared.contexts.register(context, remote.clone())?;
        shared.discard_forged(context, forged);
        shared.learn_peers(&remote);
        // Peers that already failed count against the new context too.
        let failed = shared.failures.all();
        {
            let mut st = lock(&ctx.state);
            for (p, r, orderly) in &failed {
                st.mark_process_failed(*p, r, *orderly);
            }
        }
        Ok(Channel {
            shared: Arc::clone(shared),
            ctx,
            local_rank,
            remote,
        })
    }

    /// The context id.
    pub(crate) fn context(&self) -> u64 {
        self.ctx.id
    }

    /// Our rank on this context (the source of what we send).
    pub(crate) fn local_rank(&self) -> u32 {
        self.local_rank
    }

    /// The endpoints of the remote ranks, by rank.
    pub(crate) fn remote(&self) -> &[Endpoint] {
        &self.remote
    }

    fn check_source(&self, s: Source) -> Result<()> {
        if let Source::Rank(r) = s {
            if r as usize >= self.remote.len() {
                return Err(BridgeError::InvalidArgument(format!(
                    "source rank {r} does not exist: the remote group has {} ranks",
                    self.remote.len()
                )));
            }
        }
        Ok(())
    }

    /// The one peer process that can deliver a message accepted by `source`
    /// (None for ANY_SOURCE when the remote group spans several processes).
    fn peer_of(&self, source: Source) -> Option<Uuid> {
        match source {
            Source::Rank(r) => self.remote.get(r as usize).map(|e| e.process),
            Source::Any => {
                let first = self.remote.first()?.process;
                self.remote
                    .iter()
                    .all(|e| e.process == first)
                    .then_some(first)
            }
        }
    }

    fn check_recv_tag(tag: Tag) -> Result<()> {
        match tag {
            Tag::Any => Ok(()),
            Tag::Value(t) => check_tag(t),
        }
    }

    fn header(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        len: usize,
        kind: FrameKind,
    ) -> Result<(FrameHeader, &Endpoint)> {
        let ep = self.remote.get(dest as usize).ok_or_else(|| {
            BridgeError::InvalidArgument(format!(
                "destination rank {dest} does not exist: the remote group has {} ranks",
                self.remote.len()
            ))
        })?;
        check_tag(tag)?;
        if sig.elem_size > 0 && (count as u128) * (sig.elem_size as u128) != len as u128 {
            return Err(BridgeError::InvalidArgument(format!(
                "payload of {len} bytes does not hold {count} elements of {} bytes",
                sig.elem_size
            )));
        }
        let hdr = FrameHeader {
            kind,
            format: sig.format,
            flags: 0,
            source: self.local_rank,
            context: self.ctx.id,
            tag,
            seq: self.shared.next_seq(),
            signature: sig.signature,
            count,
            payload_len: len as u64,
        };
        Ok((hdr, ep))
    }
}

fn check_tag(tag: i32) -> Result<()> {
    if tag < 0 {
        return Err(BridgeError::InvalidArgument(format!(
            "tag {tag} is negative; MPI tags must be >= 0 (use Tag::Any to receive any tag)"
        )));
    }
    Ok(())
}

fn timeout_err(t: Option<Duration>) -> BridgeError {
    BridgeError::Timeout(t.unwrap_or_default())
}

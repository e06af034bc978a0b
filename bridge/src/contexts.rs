//! The engine's context table: which context ids have a live intercomm (or
//! are waiting for one, holding early messages), and which were retired so
//! that late messages for them are dropped.
//!
//! Contexts nobody registered yet are bounded: at most
//! [`MAX_EARLY_CONTEXTS`] at a time (messages for one more are discarded)
//! and each for at most the engine's `early_context_age`; an older one is
//! evicted, with its messages, when the next unknown context shows up.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::matching::{Ctx, Registration};
use crate::sync::lock;

#[derive(Default)]
struct Tables {
    live: HashMap<u64, Arc<Ctx>>,
    /// Contexts whose InterComm was dropped: late messages for them are discarded.
    retired: HashSet<u64>,
    /// Contexts that received messages before their InterComm existed, and since when.
    early: HashMap<u64, Instant>,
}

/// Unregistered contexts that may hold early messages at one time.
pub(crate) const MAX_EARLY_CONTEXTS: usize = 256;

/// Where an incoming message goes.
pub(crate) enum Destination {
    Ctx(Arc<Ctx>),
    /// Retired, refused (too many unknown contexts) or the engine stops: discard it.
    Discard,
}

/// Context id → matching state.
#[derive(Default)]
pub(crate) struct ContextTable {
    tables: Mutex<Tables>,
}

impl ContextTable {
    /// Give `context` its remote group. Messages that arrived for it before
    /// are kept, except those whose connection's process is not the rank
    /// they claim: those are returned, for the caller to discard.
    pub(crate) fn register(
        &self,
        context: u64,
        remote: Vec<Endpoint>,
    ) -> Result<(Arc<Ctx>, Vec<crate::matching::Arrived>)> {
        let mut t = lock(&self.tables);
        t.retired.remove(&context);
        t.early.remove(&context);
        let ctx = Arc::clone(t.live.entry(context).or_insert_with(|| Ctx::new(context)));
        let mut st = lock(&ctx.state);
        if st.registration.is_some() {
            return Err(BridgeError::ContextInUse(context));
        }
        st.registration = Some(Registration { remote });
        let forged = st.take_forged();
        drop(st);
        Ok((ctx, forged))
    }

    /// Where a message for `context` goes: discarded if the context was
    /// retired or `shutting_down()` says the engine stops (checked under the
    /// table's lock), or if it is one unknown context too many. Also returns
    /// the unknown contexts that outlived `max_age` (evicted; the caller
    /// discards their messages).
    pub(crate) fn for_incoming(
        &self,
        context: u64,
        shutting_down: impl FnOnce() -> bool,
        max_age: Duration,
    ) -> (Destination, Vec<Arc<Ctx>>) {
        let mut t = lock(&self.tables);
        if t.retired.contains(&context) || shutting_down() {
            return (Destination::Discard, Vec::new());
        }
        if let Some(c) = t.live.get(&context) {
            return (Destination::Ctx(Arc::clone(c)), Vec::new());
        }
        let now = Instant::now();
        let expired: Vec<u64> = t
            .early
            .iter()
            .filter(|(_, since)| now.duration_since(**since) > max_age)
            .map(|(c, _)| *c)
            .collect();
        let mut evicted = Vec::new();
        for c in expired {
            t.early.remove(&c);
            t.retired.insert(c);
            if let Some(ctx) = t.live.remove(&c) {
                evicted.push(ctx);
            }
        }
        if t.early.len() >= MAX_EARLY_CONTEXTS {
            return (Destination::Discard, evicted);
        }
        t.early.insert(context, now);
        let ctx = Ctx::new(context);
        t.live.insert(context, Arc::clone(&ctx));
        (Destination::Ctx(ctx), evicted)
    }

    /// The intercomm of `ctx` was dropped: later messages for its id are discarded.
    pub(crate) fn retire(&self, ctx: &Arc<Ctx>) {
        let mut t = lock(&self.tables);
        if t.live.get(&ctx.id).is_some_and(|c| Arc::ptr_eq(c, ctx)) {
            t.live.remove(&ctx.id);
            t.early.remove(&ctx.id);
            t.retired.insert(ctx.id);
        }
    }

    pub(crate) fn live(&self) -> Vec<Arc<Ctx>> {
        lock(&self.tables).live.values().cloned().collect()
    }

    /// Empty the table (engine shutdown).
    pub(crate) fn drain(&self) -> Vec<Arc<Ctx>> {
        lock(&self.tables).live.drain().map(|(_, c)| c).collect()
    }
}

//! The engine's context table: which context ids have a live intercomm (or
//! are waiting for one, holding early messages), and which were retired so
//! that late messages for them are dropped.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::matching::{Ctx, Registration};
use crate::sync::lock;

#[derive(Default)]
struct Tables {
    live: HashMap<u64, Arc<Ctx>>,
    /// Contexts whose InterComm was dropped: late messages for them are discarded.
    retired: HashSet<u64>,
}

/// Context id → matching state.
#[derive(Default)]
pub(crate) struct ContextTable {
    tables: Mutex<Tables>,
}

impl ContextTable {
    /// Give `context` its remote group. Messages that arrived for it before are kept.
    pub(crate) fn register(&self, context: u64, remote: Vec<Endpoint>) -> Result<Arc<Ctx>> {
        let mut t = lock(&self.tables);
        t.retired.remove(&context);
        let ctx = Arc::clone(t.live.entry(context).or_insert_with(|| Ctx::new(context)));
        let mut st = lock(&ctx.state);
        if st.registration.is_some() {
            return Err(BridgeError::ContextInUse(context));
        }
        st.registration = Some(Registration { remote });
        drop(st);
        Ok(ctx)
    }

    /// Where a message for `context` goes: None if the context was retired or
    /// `shutting_down()` says the engine stops (checked under the table's lock).
    pub(crate) fn for_incoming(
        &self,
        context: u64,
        shutting_down: impl FnOnce() -> bool,
    ) -> Option<Arc<Ctx>> {
        let mut t = lock(&self.tables);
        if t.retired.contains(&context) || shutting_down() {
            return None;
        }
        Some(Arc::clone(
            t.live.entry(context).or_insert_with(|| Ctx::new(context)),
        ))
    }

    /// The intercomm of `ctx` was dropped: later messages for its id are discarded.
    pub(crate) fn retire(&self, ctx: &Arc<Ctx>) {
        let mut t = lock(&self.tables);
        if t.live.get(&ctx.id).is_some_and(|c| Arc::ptr_eq(c, ctx)) {
            t.live.remove(&ctx.id);
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

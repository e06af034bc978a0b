//! The engine's connection table: the one outgoing connection per peer
//! (opened lazily; its slot's mutex makes sure there is exactly one), the
//! incoming connection from each peer (for threads that read it themselves
//! and to shut it down), removed when it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use crate::sync::lock;
use crate::transport::{InConn, OutConn};

/// Outgoing connection of one peer, filled in on first use.
pub(crate) type OutSlot = Arc<Mutex<Option<Arc<OutConn>>>>;

#[derive(Default)]
pub(crate) struct Connections {
    /// One slot per peer; the slot's mutex serializes connecting.
    outgoing: Mutex<HashMap<Uuid, OutSlot>>,
    /// Incoming connection of each peer.
    incoming: Mutex<HashMap<Uuid, Arc<InConn>>>,
}

impl Connections {
    /// The slot of `peer`'s outgoing connection (created empty on first use).
    pub(crate) fn out_slot(&self, peer: Uuid) -> OutSlot {
        Arc::clone(lock(&self.outgoing).entry(peer).or_default())
    }

    /// `peer`'s outgoing connection, if it was opened.
    pub(crate) fn outgoing(&self, peer: Uuid) -> Option<Arc<OutConn>> {
        let slot = lock(&self.outgoing).get(&peer).cloned()?;
        let conn = lock(&slot).clone();
        conn
    }

    pub(crate) fn all_outgoing(&self) -> Vec<Arc<OutConn>> {
        lock(&self.outgoing)
            .values()
            .filter_map(|slot| lock(slot).clone())
            .collect()
    }

    pub(crate) fn add_incoming(&self, c: Arc<InConn>) {
        lock(&self.incoming).insert(c.peer, c);
    }

    /// `c` ended: forget it (unless a newer connection of its peer replaced it).
    pub(crate) fn remove_incoming(&self, c: &Arc<InConn>) {
        let mut m = lock(&self.incoming);
        if m.get(&c.peer).is_some_and(|x| Arc::ptr_eq(x, c)) {
            m.remove(&c.peer);
        }
    }

    pub(crate) fn incoming(&self, peer: Uuid) -> Option<Arc<InConn>> {
        lock(&self.incoming).get(&peer).cloned()
    }

    /// Make every thread waiting on an incoming connection re-check its completion.
    pub(crate) fn wake_all_readers(&self) {
        let all: Vec<Arc<InConn>> = lock(&self.incoming).values().cloned().collect();
        for c in all {
            c.wake();
        }
    }

    /// Shut down every incoming socket (their readers then see EOF).
    pub(crate) fn shut_down_incoming(&self) {
        let all: Vec<Arc<InConn>> = lock(&self.incoming).values().cloned().collect();
        for c in all {
            c.shutdown_socket();
        }
    }
}

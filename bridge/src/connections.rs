//! The engine's connection table: the one outgoing connection per peer
//! (opened lazily; its slot's mutex makes sure there is exactly one), the
//! incoming connection from each peer (for threads that read it themselves
//! and to shut it down), removed when it ends. Over TCP the incoming
//! connection of a peer may be our own outgoing one read in reverse (see
//! `transport::duplex`): until the peer writes on it, it waits apart, so
//! that nobody waits on a connection the peer may never use.

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
    /// Our outgoing connections offered with DUPLEX, read in reverse,
    /// whose peer has not written on them yet.
    offered: Mutex<HashMap<Uuid, Arc<InConn>>>,
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

    /// Our outgoing connection `c`, read in reverse, waits for the peer's first frame.
    pub(crate) fn add_offered(&self, c: Arc<InConn>) {
        lock(&self.offered).insert(c.peer, c);
    }

    /// Our outgoing connection to `peer`, read in reverse, if the peer has
    /// not written on it yet.
    pub(crate) fn offered(&self, peer: Uuid) -> Option<Arc<InConn>> {
        lock(&self.offered).get(&peer).cloned()
    }

    /// The peer wrote its first frame on `c` (offered): `c` is its
    /// incoming connection from now on; false if it has another one.
    pub(crate) fn promote(&self, c: &Arc<InConn>) -> bool {
        let mut incoming = lock(&self.incoming);
        if incoming.contains_key(&c.peer) {
            return false;
        }
        incoming.insert(c.peer, Arc::clone(c));
        drop(incoming);
        remove_if_same(&mut lock(&self.offered), c);
        true
    }

    /// `c` ended: forget it (unless a newer connection of its peer replaced it).
    pub(crate) fn remove_incoming(&self, c: &Arc<InConn>) {
        remove_if_same(&mut lock(&self.incoming), c);
        remove_if_same(&mut lock(&self.offered), c);
    }

    pub(crate) fn incoming(&self, peer: Uuid) -> Option<Arc<InConn>> {
        lock(&self.incoming).get(&peer).cloned()
    }

    /// Make every thread waiting on an incoming connection re-check its completion.
    pub(crate) fn wake_all_readers(&self) {
        for c in self.all_incoming() {
            c.wake();
        }
    }

    /// Shut down every incoming socket (their readers then see EOF),
    /// the offered ones too.
    pub(crate) fn shut_down_incoming(&self) {
        for c in self.all_incoming() {
            c.shutdown_socket();
        }
    }

    fn all_incoming(&self) -> Vec<Arc<InConn>> {
        let mut all: Vec<Arc<InConn>> = lock(&self.incoming).values().cloned().collect();
        all.extend(lock(&self.offered).values().cloned());
        all
    }
}

fn remove_if_same(m: &mut HashMap<Uuid, Arc<InConn>>, c: &Arc<InConn>) {
    if m.get(&c.peer).is_some_and(|x| Arc::ptr_eq(x, c)) {
        m.remove(&c.peer);
    }
}

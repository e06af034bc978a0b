//! [`Core`]: what every operation of the store needs (the client, the key
//! layout, this vmd's lease, the meta cache, the replica, the barrier
//! waiters). Its methods live with the operations ([`crate::store`],
//! [`crate::barrier`]); the struct sits in a module of its own, below the
//! crate root that builds it and the modules that use it, so that none of
//! them imports another in a cycle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use isthmus_groups::store::TaskLease;
use isthmus_groups::TaskId;
use tokio::sync::watch as tokio_watch;

use crate::endpoints::Endpoints;
use crate::keys::Keys;
use crate::records::MetaRec;
use crate::replica::Replica;
use crate::waiters::Waiters;

/// Group metas remembered from reads of etcd and this store's commits.
pub(crate) const META_CACHE: usize = 4096;

/// What every operation needs: the client, the key layout, this vmd's
/// lease and the meta cache. Shared with the expiry sweeper.
pub(crate) struct Core {
    pub(crate) etcd: Arc<Endpoints>,
    pub(crate) keys: Keys,
    /// This vmd's etcd lease; its tasks' keys are attached to it.
    pub(crate) lease: i64,
    /// What this store last read from etcd or wrote, per group: a CAS
    /// right after a read need not read again, and the replica answers
    /// for the group only once it has caught up with it.
    pub(crate) metas: Mutex<HashMap<String, Seen>>,
    /// The group tables, kept by the change-log watch.
    pub(crate) replica: Arc<Replica>,
    /// The last change-log revision whose events went out on the store's
    /// channel: a change returns only once its own events have, as with
    /// the in-memory store, so a subscriber that subscribes after a call
    /// returns never sees that call's events.
    pub(crate) delivered: tokio_watch::Receiver<i64>,
    pub(crate) request_timeout: Duration,
    /// This store's callers waiting at barriers; the log's follower tells
    /// them how their episodes end.
    pub(crate) barriers: Arc<Waiters>,
    /// Withdrawals of dropped barrier calls still running.
    pub(crate) abandoning: tokio_watch::Sender<usize>,
    /// The leases of the tasks opened through this store, so that a join
    /// need not read its task's key: kept until the task is closed here or
    /// its key's deletion comes through the task watch
    /// ([`crate::expiry`]), and used only while the replica is current
    /// (the watches follow etcd).
    pub(crate) own_tasks: Mutex<HashMap<TaskId, TaskLease>>,
}

/// A group as this store last saw it in etcd.
pub(crate) struct Seen {
    /// The revision at which it was read or written.
    pub(crate) at: u64,
    /// Its meta then, with its mod-revision, if known.
    pub(crate) meta: Option<(u64, MetaRec)>,
}

//! [`EtcdStore`]: the group store of a virtual machine that spans hosts.
//!
//! Every vmd of the virtual machine opens an `EtcdStore` on the same etcd
//! cluster and prefix, so all of them serve one namespace: a group that a
//! task on host A joined is seen, with the same instances and generation,
//! by a task on host B. PVM's semantics stay in [`isthmus_groups::Groups`];
//! this crate only maps the store trait ([`isthmus_groups::GroupStore`]) onto etcd:
//!
//! * **CAS.** A group's revision is the mod-revision of its meta key; every
//!   change is one etcd transaction that compares it ([`keys`] has the
//!   layout).
//! * **Leases.** Each vmd holds one etcd lease, kept alive while it runs
//!   ([`lease`]); its tasks' keys are attached to it. If the vmd dies and
//!   does not come back within the lease's TTL, etcd deletes those keys and
//!   any vmd still running removes the tasks' memberships as deaths
//!   ([`expiry`]), so everyone is told. A vmd restarted within the TTL takes
//!   its lease back and nothing is lost.
//! * **Events.** Each transaction writes its changes to one log key; every
//!   store watches it from the revision it last saw, so a watch that breaks
//!   and reconnects misses nothing ([`watch`]). An event's `seq` is
//!   `revision << 12 | index in the transaction`.
//! * **Reads.** Lookups (by name, instance or task; sizes; tables; the
//!   list) are answered from a local replica of the group tables kept by
//!   the same watch ([`replica`]): read-your-writes for this vmd's changes,
//!   at most the watch's latency behind other vmds'. Joins and leaves take
//!   their CAS base from it, so each is one transaction when it is current;
//!   a join takes its task's lease from what this store granted.
//! * **Barriers.** A group's open barrier episode is one key, changed by
//!   transactions; releases and breaks reach every store's waiters through
//!   the same log ([`barrier`]).
//!
//! It sits in `groups/` because it is one implementation of
//! `isthmus_groups::GroupStore`, beside the memory and redb ones; the vmd
//! chooses among them.

mod barrier;
mod config;
pub mod endpoints;
mod expiry;
mod keys;
mod lease;
mod records;
mod replica;
mod shared;
mod store;
mod waiters;
mod watch;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use isthmus_groups::GroupEvent;
use tokio::sync::{broadcast, watch as tokio_watch};
use tokio::task::JoinHandle;
use tracing::info;

pub use config::EtcdConfig;
pub use endpoints::{Endpoints, EtcdTls};
use keys::Keys;
use replica::Replica;
use shared::Core;
use waiters::Waiters;

/// Capacity of the change stream; slow subscribers see `Lagged`.
const WATCH_CAPACITY: usize = 4096;

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum EtcdStoreError {
    #[error("connecting to etcd at {endpoints}: {source}")]
    Connect {
        endpoints: String,
        source: etcd_client::Error,
    },
    #[error("etcd at {endpoints}: {what}: {source}")]
    Request {
        endpoints: String,
        what: &'static str,
        source: etcd_client::Error,
    },
    #[error("the lease TTL must be between 2 s and 1 day, not {0:?}")]
    BadTtl(Duration),
}

/// A vmd's connection to etcd: the members (with failover), its lease and
/// the deadline of a request.
#[derive(Clone)]
pub struct Connection {
    pub etcd: Arc<Endpoints>,
    pub lease: i64,
    pub request_timeout: Duration,
}

/// A group store in etcd. See the crate docs.
pub struct EtcdStore {
    pub(crate) core: Arc<Core>,
    pub(crate) events: broadcast::Sender<GroupEvent>,
    lost: tokio_watch::Receiver<bool>,
    background: Vec<JoinHandle<()>>,
}

impl EtcdStore {
    /// Connects, takes back `resume_lease` or grants a new lease, and starts
    /// keeping it alive, watching the change log and sweeping expired
    /// tasks.
    pub async fn connect(config: EtcdConfig) -> Result<EtcdStore, EtcdStoreError> {
        if config.lease_ttl < Duration::from_secs(2)
            || config.lease_ttl > Duration::from_secs(86_400)
        {
            return Err(EtcdStoreError::BadTtl(config.lease_ttl));
        }
        let endpoints = config.endpoints.join(",");
        let etcd = Arc::new(
            Endpoints::connect(
                &config.endpoints,
                config.request_timeout,
                config.tls.as_ref(),
            )
            .await
            .map_err(|source| EtcdStoreError::Connect {
                endpoints: endpoints.clone(),
                source,
            })?,
        );
        let request = |what| {
            let endpoints = endpoints.clone();
            move |source| EtcdStoreError::Request {
                endpoints,
                what,
                source,
            }
        };
        let keys = Keys::new(&config.prefix);
        // The tables as of now; changes (and events) from the next revision.
        let tables = replica::load(&etcd, &keys, None)
            .await
            .map_err(request("reading the group tables"))?;
        let start = i64::try_from(tables.revision()).unwrap_or(i64::MAX - 1) + 1;
        let replica = Arc::new(Replica::default());
        replica.replace(tables, true);
        let lease = lease::acquire(&etcd, &config)
            .await
            .map_err(request("granting the vmd's lease"))?;
        let (delivered_tx, delivered) = tokio_watch::channel(start - 1);
        let barriers = Arc::new(Waiters::default());
        let core = Arc::new(Core {
            etcd: Arc::clone(&etcd),
            keys: keys.clone(),
            lease,
            metas: Mutex::new(HashMap::new()),
            replica: Arc::clone(&replica),
            delivered,
            request_timeout: config.request_timeout,
            barriers: Arc::clone(&barriers),
            abandoning: tokio_watch::Sender::new(0),
            own_tasks: Mutex::new(HashMap::new()),
        });
        let (events, _) = broadcast::channel(WATCH_CAPACITY);
        let (lost_tx, lost) = tokio_watch::channel(false);
        let background = vec![
            tokio::spawn(lease::keep_alive(
                Arc::clone(&etcd),
                lease,
                config.lease_ttl,
                lost_tx,
            )),
            tokio::spawn(watch::follow_log(
                etcd,
                keys,
                start,
                watch::Outlets {
                    events: events.clone(),
                    barriers,
                    delivered: delivered_tx,
                    replica,
                },
            )),
            tokio::spawn(expiry::follow(Arc::clone(&core), start)),
        ];
        // Tasks whose vmd stayed away past its lease, before we came. After
        // the follower started: each removal waits for its own events to
        // come back through it.
        expiry::sweep(&core).await;
        info!(endpoints, prefix = %config.prefix, lease = format!("{lease:x}"), "etcd group store open");
        Ok(EtcdStore {
            core,
            events,
            lost,
            background,
        })
    }

    /// This vmd's etcd lease (to pass as `resume_lease` after a restart).
    pub fn lease_id(&self) -> i64 {
        self.core.lease
    }

    /// This vmd's connection to etcd and its lease, for the other tables a
    /// vmd keeps there (the resource manager's: `isthmus-rm-etcd`), so that
    /// they fail over with the same members and die with the same lease.
    pub fn connection(&self) -> Connection {
        Connection {
            etcd: Arc::clone(&self.core.etcd),
            lease: self.core.lease,
            request_timeout: self.core.request_timeout,
        }
    }

    /// Becomes `true` when etcd no longer has this vmd's lease (it stayed
    /// unreachable past the TTL): its tasks were declared dead to the rest
    /// of the virtual machine, and the vmd should stop so that they learn.
    pub fn lease_lost(&self) -> tokio_watch::Receiver<bool> {
        self.lost.clone()
    }

    /// Revokes this vmd's lease: its tasks' keys go at once (a clean
    /// shutdown; a crash leaves them to the TTL).
    pub async fn revoke(&self) {
        let (_, mut client) = self.core.etcd.client();
        if let Err(e) = client.lease_revoke(self.core.lease).await {
            tracing::warn!(error = %e, "revoking the vmd's etcd lease");
        }
    }
}

impl Drop for EtcdStore {
    fn drop(&mut self) {
        for task in &self.background {
            task.abort();
        }
    }
}

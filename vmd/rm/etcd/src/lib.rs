//! [`Federation`]: the resource manager's tables shared in etcd, for a
//! virtual machine whose vmds share one etcd cluster.
//!
//! Each vmd keeps its own `isthmus_rm::ResourceManager` as the authority
//! for its own host: its taskers, its slots, the jobs that run there. This
//! crate carries between them what the others must see and what they ask,
//! so that every vmd can answer for every host ([`keys`] has the layout):
//!
//! * **Hosts.** Each vmd publishes its host row on its etcd lease. A row
//!   that vanishes without being marked `leaving` first went with its
//!   lease: the host failed.
//! * **Jobs.** Each vmd publishes the rows of the jobs that run on its host
//!   (on its lease too); job ids come from one counter, so they are unique
//!   across the virtual machine.
//! * **Events.** Task and job exits and output lines, put in batches on
//!   one key that every vmd watches from the revision it started at.
//! * **Orders.** A request for the vmd of another host (run this job there,
//!   kill, signal, ping, stop) is a key under that host's order prefix; the
//!   answer comes back under the order's id. Who may ask is decided by the
//!   vmd that took the caller's call; etcd is inside the virtual machine's
//!   trust (whoever can write it can do anything).
//!
//! It knows etcd and the domain types, not the resource manager or gRPC.
//!
//! It sits in `vmd/rm/` because it stores the resource manager's tables, as
//! `groups/etcd` stores the groups; it knows etcd, the manager does not.

mod follow;
mod keys;
pub mod records;

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, PutOptions, Txn, TxnOp};
use isthmus_groups_etcd::endpoints::first_answer;
use isthmus_groups_etcd::Connection;
use isthmus_types::event::RmEvent;
use isthmus_types::job::{Job, JobId};
use isthmus_types::refusal::{Refusal, RefusalKind};
use tokio::sync::mpsc;
use tracing::warn;

pub use follow::Change;
use keys::Keys;
use records::OrderRec;
pub use records::{Answer, EventRec, HostRow, Order};

/// Why a call on the shared tables failed.
#[derive(Debug, thiserror::Error)]
pub enum FederationError {
    #[error("etcd: {what}: {source}")]
    Etcd {
        what: &'static str,
        source: etcd_client::Error,
    },
    #[error("a record in etcd could not be read or written as JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the job counter in etcd holds {0:?}, not a number")]
    BadCounter(String),
}

impl From<FederationError> for Refusal {
    fn from(e: FederationError) -> Self {
        Refusal::unavailable(e.to_string())
    }
}

type Result<T, E = FederationError> = std::result::Result<T, E>;

fn etcd(what: &'static str) -> impl FnOnce(etcd_client::Error) -> FederationError {
    move |source| FederationError::Etcd { what, source }
}

/// One order a vmd was given, and where its answer goes.
#[derive(Clone, Debug)]
pub struct Asked {
    pub id: String,
    pub from: String,
    pub order: Order,
}

/// A change of the host table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostChange {
    Up(HostRow),
    /// The row is gone: deleted after `leaving` (a clean stop) or with its
    /// vmd's lease (a failure).
    Gone {
        name: String,
        leaving: bool,
    },
}

/// A change of the job table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobChange {
    Put(Box<Job>),
    Gone(JobId),
}

/// One vmd's access to the shared tables. Cheap to clone.
#[derive(Clone)]
pub struct Federation {
    conn: Connection,
    keys: Keys,
    host: String,
}

impl Federation {
    /// The tables of the virtual machine at `prefix`, for the vmd of `host`.
    pub fn new(conn: Connection, prefix: &str, host: &str) -> Self {
        Federation {
            conn,
            keys: Keys::new(prefix),
            host: host.to_string(),
        }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    async fn put(&self, key: String, value: Vec<u8>, what: &'static str) -> Result<i64> {
        let lease = self.conn.lease;
        let resp = first_answer(&self.conn.etcd, |mut c| {
            let (key, value) = (key.clone(), value.clone());
            async move {
                c.put(key, value, Some(PutOptions::new().with_lease(lease)))
                    .await
            }
        })
        .await
        .map_err(etcd(what))?;
        Ok(resp.header().map(|h| h.revision()).unwrap_or(0))
    }

    async fn delete(&self, key: String, what: &'static str) -> Result<()> {
        first_answer(&self.conn.etcd, |mut c| {
            let key = key.clone();
            async move { c.delete(key, None).await }
        })
        .await
        .map_err(etcd(what))?;
        Ok(())
    }

    /// Every value under `prefix` and the revision they were read at.
    async fn scan(
        &self,
        prefix: String,
        what: &'static str,
    ) -> Result<(Vec<(Vec<u8>, Vec<u8>)>, i64)> {
        let resp = first_answer(&self.conn.etcd, |mut c| {
            let prefix = prefix.clone();
            async move { c.get(prefix, Some(GetOptions::new().with_prefix())).await }
        })
        .await
        .map_err(etcd(what))?;
        let rev = resp.header().map(|h| h.revision()).unwrap_or(0);
        Ok((
            resp.kvs()
                .iter()
                .map(|kv| (kv.key().to_vec(), kv.value().to_vec()))
                .collect(),
            rev,
        ))
    }

    // ---- hosts ----

    /// Puts this vmd's host row (again).
    pub async fn publish_host(&self, row: &HostRow) -> Result<()> {
        let key = self.keys.host(&row.host.name);
        self.put(key, serde_json::to_vec(row)?, "publishing the host row")
            .await?;
        Ok(())
    }

    /// Marks this host's row as leaving, then deletes it and its job rows:
    /// the others report HOST_DELETED, not HOST_FAILED.
    pub async fn leave(&self, row: &HostRow, jobs: &[JobId]) -> Result<()> {
        let mut leaving = row.clone();
        leaving.leaving = true;
        self.publish_host(&leaving).await?;
        for id in jobs {
            self.delete(self.keys.job(*id), "deleting a job row")
                .await?;
        }
        self.delete(self.keys.host(&row.host.name), "deleting the host row")
            .await
    }

    /// Every host row, and the revision to follow changes from.
    pub async fn hosts(&self) -> Result<(Vec<HostRow>, i64)> {
        self.rows(self.keys.hosts(), "reading the host table").await
    }

    /// Changes of the host table from revision `from` on.
    pub fn follow_hosts(&self, from: i64) -> mpsc::Receiver<HostChange> {
        let keys = self.keys.clone();
        self.follow_as(
            self.keys.hosts(),
            true,
            from,
            Vec::new(),
            move |change| match change {
                Change::Put { value, .. } => {
                    decoded::<HostRow>(&value, "a host row").map(HostChange::Up)
                }
                Change::Delete { key, last } => {
                    let name = keys.host_of(&key)?;
                    let leaving = last
                        .and_then(|v| serde_json::from_slice::<HostRow>(&v).ok())
                        .is_some_and(|r| r.leaving);
                    Some(HostChange::Gone { name, leaving })
                }
            },
        )
    }

    /// Every record under `prefix` that decodes, and the revision to
    /// follow changes from.
    async fn rows<T: serde::de::DeserializeOwned>(
        &self,
        prefix: String,
        what: &'static str,
    ) -> Result<(Vec<T>, i64)> {
        let (kvs, rev) = self.scan(prefix, what).await?;
        let rows = kvs
            .iter()
            .filter_map(|(_, value)| decoded(value, what))
            .collect();
        Ok((rows, rev + 1))
    }

    /// Follows `key` (a prefix with `prefix`) from `from`, after the
    /// changes in `first` (what a read just before `from` found), each
    /// turned into a `T` by `decode` (`None`: skipped).
    fn follow_as<T: Send + 'static>(
        &self,
        key: String,
        prefix: bool,
        from: i64,
        first: Vec<Change>,
        decode: impl Fn(Change) -> Option<T> + Send + 'static,
    ) -> mpsc::Receiver<T> {
        let mut changes = follow::follow(Arc::clone(&self.conn.etcd), key, prefix, from);
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(async move {
            for change in first {
                if let Some(out) = decode(change) {
                    if tx.send(out).await.is_err() {
                        return;
                    }
                }
            }
            while let Some(change) = changes.recv().await {
                if let Some(out) = decode(change) {
                    if tx.send(out).await.is_err() {
                        return;
                    }
                }
            }
        });
        rx
    }

    // ---- jobs ----

    /// A job id no vmd of the virtual machine has given out.
    pub async fn next_job_id(&self) -> Result<JobId> {
        let key = self.keys.next_job();
        loop {
            let resp = first_answer(&self.conn.etcd, |mut c| {
                let key = key.clone();
                async move { c.get(key, None).await }
            })
            .await
            .map_err(etcd("reading the job counter"))?;
            let (last, rev) = match resp.kvs().first() {
                Some(kv) => {
                    let text = String::from_utf8_lossy(kv.value()).to_string();
                    let n = text
                        .parse::<JobId>()
                        .map_err(|_| FederationError::BadCounter(text))?;
                    (n, kv.mod_revision())
                }
                None => (0, 0),
            };
            let next = last + 1;
            let txn = Txn::new()
                .when([Compare::mod_revision(key.clone(), CompareOp::Equal, rev)])
                .and_then([TxnOp::put(key.clone(), next.to_string(), None)]);
            let resp = first_answer(&self.conn.etcd, |mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
            .await
            .map_err(etcd("taking a job id"))?;
            // A lost answer followed by a failed compare may have been ours:
            // skipping an id is harmless, giving one out twice is not, so
            // only a definite success counts.
            if resp.succeeded() {
                return Ok(next);
            }
        }
    }

    /// Puts the row of a job that runs on this host.
    pub async fn publish_job(&self, job: &Job) -> Result<()> {
        self.put(
            self.keys.job(job.id),
            serde_json::to_vec(job)?,
            "publishing a job row",
        )
        .await?;
        Ok(())
    }

    pub async fn forget_job(&self, id: JobId) -> Result<()> {
        self.delete(self.keys.job(id), "deleting a job row").await
    }

    /// One job row, if there is one.
    pub async fn job(&self, id: JobId) -> Result<Option<Job>> {
        let key = self.keys.job(id);
        let resp = first_answer(&self.conn.etcd, |mut c| {
            let key = key.clone();
            async move { c.get(key, None).await }
        })
        .await
        .map_err(etcd("reading a job row"))?;
        Ok(resp
            .kvs()
            .first()
            .and_then(|kv| decoded(kv.value(), "a job row")))
    }

    /// Every job row, and the revision to follow changes from.
    pub async fn jobs(&self) -> Result<(Vec<Job>, i64)> {
        self.rows(self.keys.jobs(), "reading the job table").await
    }

    /// Changes of the job table from revision `from` on.
    pub fn follow_jobs(&self, from: i64) -> mpsc::Receiver<JobChange> {
        let keys = self.keys.clone();
        self.follow_as(
            self.keys.jobs(),
            true,
            from,
            Vec::new(),
            move |change| match change {
                Change::Put { value, .. } => {
                    decoded::<Job>(&value, "a job row").map(|j| JobChange::Put(Box::new(j)))
                }
                Change::Delete { key, .. } => keys.job_of(&key).map(JobChange::Gone),
            },
        )
    }

    // ---- events ----

    /// Publishes events of this host's resource manager, in order, as one
    /// record (one etcd put; keep a batch well under etcd's request limit,
    /// 1.5 MiB by default).
    pub async fn publish_events(&self, events: Vec<RmEvent>) -> Result<()> {
        let rec = EventRec {
            host: self.host.clone(),
            events,
        };
        self.put(
            self.keys.events(),
            serde_json::to_vec(&rec)?,
            "publishing events",
        )
        .await?;
        Ok(())
    }

    /// The events of the other hosts from revision `from` on.
    pub fn follow_events(&self, from: i64) -> mpsc::Receiver<EventRec> {
        let own = self.host.clone();
        self.follow_as(
            self.keys.events(),
            false,
            from,
            Vec::new(),
            move |change| match change {
                Change::Put { value, .. } => {
                    decoded::<EventRec>(&value, "an event record").filter(|rec| rec.host != own)
                }
                Change::Delete { .. } => None,
            },
        )
    }

    /// The current revision + 1: where a follower that must miss nothing
    /// from now on starts.
    pub async fn next_revision(&self) -> Result<i64> {
        let key = self.keys.next_job();
        let resp = first_answer(&self.conn.etcd, |mut c| {
            let key = key.clone();
            async move { c.get(key, Some(GetOptions::new().with_count_only())).await }
        })
        .await
        .map_err(etcd("reading the revision"))?;
        Ok(resp.header().map(|h| h.revision()).unwrap_or(0) + 1)
    }

    // ---- orders ----

    /// Asks the vmd of `host` to carry out `order` and waits up to `deadline`
    /// for its answer. A vmd that does not answer in time is refused with
    /// `DeadlineExceeded` (the order is withdrawn; it may have been carried
    /// out).
    pub async fn ask(
        &self,
        host: &str,
        order: Order,
        deadline: Duration,
    ) -> Result<Answer, Refusal> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let rec = OrderRec {
            from: self.host.clone(),
            order,
        };
        let value = serde_json::to_vec(&rec).map_err(FederationError::from)?;
        // Follow the answer key from before the order exists: the answer
        // cannot come before it.
        let from = self.next_revision().await?;
        let mut answers = follow::follow(
            Arc::clone(&self.conn.etcd),
            self.keys.answer(&id),
            false,
            from,
        );
        let order_key = self.keys.order(host, &id);
        self.put(order_key.clone(), value, "placing an order")
            .await?;
        let waited = tokio::time::timeout(deadline, async {
            while let Some(change) = answers.recv().await {
                if let Change::Put { value, .. } = change {
                    return Some(value);
                }
            }
            None
        })
        .await;
        let _ = self.delete(order_key, "withdrawing an order").await;
        let _ = self
            .delete(self.keys.answer(&id), "deleting an answer")
            .await;
        match waited {
            Ok(Some(value)) => {
                Ok(serde_json::from_slice::<Answer>(&value).map_err(FederationError::from)?)
            }
            Ok(None) => Err(Refusal::unavailable(format!(
                "the answer of host {host}'s vmd was lost"
            ))),
            Err(_) => Err(Refusal::new(
                RefusalKind::DeadlineExceeded,
                format!("host {host}'s vmd did not answer within {deadline:?}"),
            )),
        }
    }

    /// The orders for this vmd's host: those waiting now, then each new one.
    /// An order outlives neither its asker's patience (the asker withdraws
    /// it at its deadline) nor its asker's vmd (it is on that vmd's lease),
    /// so a waiting one still has someone waiting for its answer.
    pub async fn follow_orders(&self) -> Result<mpsc::Receiver<Asked>> {
        let prefix = self.keys.orders_for(&self.host);
        let (waiting, rev) = self.scan(prefix.clone(), "reading waiting orders").await?;
        let waiting = waiting
            .into_iter()
            .map(|(key, value)| Change::Put { key, value })
            .collect();
        let queue = prefix.clone();
        Ok(
            self.follow_as(prefix, true, rev + 1, waiting, move |change| {
                let Change::Put { key, value } = change else {
                    return None;
                };
                let id = std::str::from_utf8(key.strip_prefix(queue.as_bytes())?).ok()?;
                let rec = decoded::<OrderRec>(&value, "an order")?;
                Some(Asked {
                    id: id.to_string(),
                    from: rec.from,
                    order: rec.order,
                })
            }),
        )
    }

    /// Answers an order and takes it off the queue.
    pub async fn answer(&self, asked: &Asked, answer: &Answer) -> Result<()> {
        let value = serde_json::to_vec(answer)?;
        let lease = self.conn.lease;
        let txn = Txn::new().and_then([
            TxnOp::put(
                self.keys.answer(&asked.id),
                value,
                Some(PutOptions::new().with_lease(lease)),
            ),
            TxnOp::delete(
                self.keys.order(&self.host, &asked.id),
                None::<DeleteOptions>,
            ),
        ]);
        first_answer(&self.conn.etcd, |mut c| {
            let txn = txn.clone();
            async move { c.txn(txn).await }
        })
        .await
        .map_err(etcd("answering an order"))?;
        Ok(())
    }
}

/// A record decoded from JSON, or `None` (logged) if it does not decode:
/// one bad record must not stop a follower.
fn decoded<T: serde::de::DeserializeOwned>(value: &[u8], what: &str) -> Option<T> {
    serde_json::from_slice(value)
        .map_err(|e| warn!(error = %e, "skipping {what}"))
        .ok()
}

//! [`RedbStore`]: the group store of a one-host vmd that survives the vmd's
//! restart, `kill -9` included.
//!
//! The semantics are [`MemoryStore`]'s, unchanged: every call is answered
//! from memory. Every change (a lease granted or revoked, a member created
//! or deleted, a freeze) is then written through to an embedded redb
//! database, one transaction per change with redb's default durability
//! (fsync before the commit returns), before the call returns: a task's
//! join is answered only once it is on disk. The records written are the
//! current ones of what the change touched (each group and lease whole,
//! and the counters), so the file always holds a state the store was in.
//!
//! At open, the file is read into a fresh [`MemoryStore`]
//! ([`MemoryStore::from_image`]): groups, members, the tasks' leases (with
//! the pid and uid that opened them) and the counters, so event `seq`s,
//! revisions and generations go on increasing. The leases of the previous
//! run are then the store's [`held_tasks`](GroupStore::held_tasks): the
//! vmd lets their sessions resume, as it does with etcd, and closes as
//! dead those that do not come back within its grace.
//!
//! Not kept: barrier episodes (their waiters were calls of sessions that
//! broke with the process) and the change stream (watchers reconnect and
//! read the tables again).
//!
//! A write that fails (disk full, I/O error) is logged and its records are
//! written again with the next change; the change itself stands in memory.

// Input must never be able to panic the daemon.
#![cfg_attr(
    not(test),
    warn(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod tables;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use isthmus_groups::store::{
    BarrierEntry, CreateOutcome, GroupSlots, GroupSnapshot, Guard, ImageError, LeaseId, Lookup,
    Membership, Removal, TaskLease, TaskProcess,
};
use isthmus_groups::{GroupEvent, GroupStore, GroupSummary, Member, MemoryStore, Result, TaskId};
use redb::Database;
use tokio::sync::{broadcast, Mutex};
use tracing::{error, info};

use tables::Change;

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum RedbStoreError {
    #[error("cannot create the directory of the group store {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the group store {0} is open in another process (each vmd needs its own file: its own --runtime-dir or --store-file)")]
    InUse(PathBuf),
    #[error("the group store {path}: {source}")]
    Open {
        path: PathBuf,
        source: Box<redb::Error>,
    },
    /// Boxed: redb's error is large, and this one travels by value.
    #[error("group store: {0}")]
    Db(Box<redb::Error>),
    #[error(
        "the group store's file is of format {0:?}, not this vmd's: move it away to start empty"
    )]
    Format(String),
    #[error("record {key:?} of the group store cannot be read: {reason}")]
    Record { key: String, reason: String },
    #[error("the group store's records are inconsistent ({0}): move the file away to start empty")]
    Image(#[from] ImageError),
}

impl From<redb::Error> for RedbStoreError {
    fn from(e: redb::Error) -> Self {
        RedbStoreError::Db(Box::new(e))
    }
}

/// The in-memory store, written through to a redb file (see the crate docs).
pub struct RedbStore {
    mem: MemoryStore,
    db: Arc<Database>,
    path: PathBuf,
    /// Held from a change until its records are written, so that the file
    /// receives changes in the order they were applied; holds the records
    /// whose last write failed, written again with the next change.
    write: Mutex<Dirty>,
}

#[derive(Default)]
struct Dirty {
    groups: BTreeSet<String>,
    tasks: BTreeSet<TaskId>,
}

impl RedbStore {
    /// Opens (or creates) the store in the file at `path`, creating its
    /// directory if needed, and loads what it holds.
    pub fn open(path: &Path) -> std::result::Result<Self, RedbStoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| RedbStoreError::Dir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let db = Database::create(path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => RedbStoreError::InUse(path.to_path_buf()),
            e => RedbStoreError::Open {
                path: path.to_path_buf(),
                source: Box::new(e.into()),
            },
        })?;
        let image = tables::load(&db)?;
        let (groups, tasks) = (image.groups.len(), image.leases.len());
        let mem = MemoryStore::from_image(image)?;
        info!(path = %path.display(), groups, tasks, "group store open");
        Ok(RedbStore {
            mem,
            db: Arc::new(db),
            path: path.to_path_buf(),
            write: Mutex::new(Dirty::default()),
        })
    }

    /// The file this store writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the current records of `groups` and `tasks` (and of whatever
    /// a failed write left), and the counters. Called with `dirty` locked,
    /// right after the change, so nothing else changed meanwhile.
    async fn persist(
        &self,
        dirty: &mut Dirty,
        groups: impl IntoIterator<Item = String>,
        tasks: impl IntoIterator<Item = TaskId>,
    ) {
        dirty.groups.extend(groups);
        dirty.tasks.extend(tasks);
        let mut change = Change::default();
        // The memory store's reads do not fail; if one ever did, nothing
        // is written (a missing record would read as a deletion).
        for g in &dirty.groups {
            match self.mem.snapshot(g).await {
                Ok(record) => change.groups.push((g.clone(), record)),
                Err(e) => return error!(group = %g, error = %e, "reading a group to write it"),
            }
        }
        for t in &dirty.tasks {
            match self.mem.lease(*t).await {
                Ok(record) => change.tasks.push((*t, record)),
                Err(e) => return error!(task = %t, error = %e, "reading a lease to write it"),
            }
        }
        change.counters = self.mem.counters();
        let db = self.db.clone();
        // A commit waits for fsync: off the runtime's thread, which serves
        // every session.
        match tokio::task::spawn_blocking(move || tables::write(&db, &change)).await {
            Ok(Ok(())) => {
                dirty.groups.clear();
                dirty.tasks.clear();
            }
            Ok(Err(e)) => {
                error!(path = %self.path.display(), error = %e, "writing the group store failed: the change stands in memory and is written again with the next one")
            }
            Err(e) => {
                error!(path = %self.path.display(), error = %e, "the group store's writer failed: the change stands in memory and is written again with the next one")
            }
        }
    }
}

#[async_trait]
impl GroupStore for RedbStore {
    async fn grant_lease(
        &self,
        task: TaskId,
        host: &str,
        process: Option<TaskProcess>,
    ) -> Result<Option<LeaseId>> {
        let mut dirty = self.write.lock().await;
        let granted = self.mem.grant_lease(task, host, process).await?;
        if granted.is_some() {
            self.persist(&mut dirty, [], [task]).await;
        }
        Ok(granted)
    }

    async fn held_tasks(&self) -> Result<Vec<TaskId>> {
        self.mem.held_tasks().await
    }

    async fn lease(&self, task: TaskId) -> Result<Option<TaskLease>> {
        self.mem.lease(task).await
    }

    async fn revoke_lease(&self, task: TaskId, died: bool) -> Result<Option<Vec<Removal>>> {
        let mut dirty = self.write.lock().await;
        let removals = self.mem.revoke_lease(task, died).await?;
        if let Some(removals) = &removals {
            let groups = removals.iter().map(|r| r.group.clone());
            self.persist(&mut dirty, groups, [task]).await;
        }
        Ok(removals)
    }

    async fn snapshot(&self, group: &str) -> Result<Option<GroupSnapshot>> {
        self.mem.snapshot(group).await
    }

    async fn slots(&self, group: &str) -> Result<Option<GroupSlots>> {
        self.mem.slots(group).await
    }

    async fn member(&self, group: &str, instance: u32) -> Result<Lookup<Member>> {
        self.mem.member(group, instance).await
    }

    async fn membership(&self, group: &str, task: TaskId) -> Result<Lookup<Membership>> {
        self.mem.membership(group, task).await
    }

    async fn list(&self) -> Result<Vec<GroupSummary>> {
        self.mem.list().await
    }

    async fn list_page(&self, after: &str, limit: usize) -> Result<Vec<GroupSummary>> {
        self.mem.list_page(after, limit).await
    }

    async fn create_member(
        &self,
        group: &str,
        guard: Guard,
        member: Member,
        lease: LeaseId,
    ) -> Result<CreateOutcome> {
        let mut dirty = self.write.lock().await;
        let outcome = self.mem.create_member(group, guard, member, lease).await?;
        if matches!(outcome, CreateOutcome::Created { .. }) {
            self.persist(&mut dirty, [group.to_string()], []).await;
        }
        Ok(outcome)
    }

    async fn delete_member(&self, group: &str, task: TaskId) -> Result<Lookup<Removal>> {
        let mut dirty = self.write.lock().await;
        let removal = self.mem.delete_member(group, task).await?;
        if matches!(removal, Lookup::Found(_)) {
            self.persist(&mut dirty, [group.to_string()], []).await;
        }
        Ok(removal)
    }

    async fn freeze(&self, group: &str, revision: u64, size: u32) -> Result<bool> {
        let mut dirty = self.write.lock().await;
        let frozen = self.mem.freeze(group, revision, size).await?;
        if frozen {
            self.persist(&mut dirty, [group.to_string()], []).await;
        }
        Ok(frozen)
    }

    async fn barrier_enter(
        &self,
        group: &str,
        task: TaskId,
        count: Option<u32>,
    ) -> Result<Lookup<BarrierEntry>> {
        self.mem.barrier_enter(group, task, count).await
    }

    async fn barrier_withdraw(&self, group: &str, episode: u64, task: TaskId) -> Result<bool> {
        self.mem.barrier_withdraw(group, episode, task).await
    }

    fn barrier_abandon(&self, group: &str, episode: u64, task: TaskId) {
        self.mem.barrier_abandon(group, episode, task)
    }

    fn watch(&self) -> broadcast::Receiver<GroupEvent> {
        self.mem.watch()
    }
}

//! [`RedbStore`]: the group store of a one-host vmd that survives the vmd's
//! restart, `kill -9` included.
//!
//! The semantics are [`MemoryStore`]'s, unchanged: every call is answered
//! from memory. Every change (a lease granted or revoked, a member created
//! or deleted, a freeze) is then written through to an embedded redb
//! database, one transaction per change with redb's default durability
//! (fsync before the commit returns), before the call returns: a task's
//! join is answered only once it is on disk. Changes made while a commit
//! is under way go together in the next one (group commit), so the ranks
//! of a job joining at once share their fsyncs. The records written are the
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
//!
//! It sits in `groups/` because it is one implementation of
//! `isthmus_groups::GroupStore`, beside the memory and etcd ones; the vmd
//! chooses among them.

mod error;
mod tables;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use isthmus_groups::store::{
    BarrierEntry, CreateOutcome, GroupAccess, GroupSlots, GroupSnapshot, Guard, LeaseId, Lookup,
    Membership, Removal, TaskLease, TaskProcess,
};
use isthmus_groups::{GroupEvent, GroupStore, GroupSummary, Member, MemoryStore, Result, TaskId};
use redb::Database;
use tokio::sync::{broadcast, watch, Mutex};
use tracing::{error, info};

pub use error::RedbStoreError;
use tables::Change;

/// The in-memory store, written through to a redb file (see the crate docs).
pub struct RedbStore {
    shared: Arc<Shared>,
}

struct Shared {
    mem: MemoryStore,
    db: Database,
    path: PathBuf,
    /// Held while a change is applied in memory and marked, and while a
    /// writer reads the records of its batch: so a batch is a state the
    /// store was in.
    pending: Mutex<Pending>,
    /// One writer at a time; the others' changes go in its next batch.
    writer: Arc<Mutex<()>>,
    /// The last change ticket written (or, if the write failed, given up
    /// on: its records are written again with the next batch).
    durable: watch::Sender<u64>,
}

/// Changes applied in memory and not yet on disk.
#[derive(Default)]
struct Pending {
    groups: BTreeSet<String>,
    tasks: BTreeSet<TaskId>,
    /// The last change's ticket.
    ticket: u64,
}

impl Pending {
    /// Marks one change's records; its ticket, to wait for.
    fn mark(
        &mut self,
        groups: impl IntoIterator<Item = String>,
        tasks: impl IntoIterator<Item = TaskId>,
    ) -> u64 {
        self.groups.extend(groups);
        self.tasks.extend(tasks);
        self.ticket += 1;
        self.ticket
    }
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
        // Only the vmd's user reads its tables (the vmd checks who asks;
        // a file readable by all would not).
        {
            use std::os::unix::fs::PermissionsExt;
            let owner_only = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(path, owner_only).map_err(|source| RedbStoreError::Dir {
                path: path.to_path_buf(),
                source,
            })?;
        }
        let image = tables::load(&db)?;
        let (groups, tasks) = (image.groups.len(), image.leases.len());
        let mem = MemoryStore::from_image(image)?;
        info!(path = %path.display(), groups, tasks, "group store open");
        Ok(RedbStore {
            shared: Arc::new(Shared {
                mem,
                db,
                path: path.to_path_buf(),
                pending: Mutex::new(Pending::default()),
                writer: Arc::new(Mutex::new(())),
                durable: watch::channel(0).0,
            }),
        })
    }

    /// The file this store writes to.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    fn mem(&self) -> &MemoryStore {
        &self.shared.mem
    }

    /// Returns once the change with `ticket` is on disk (or its write
    /// failed, and was logged). Group commit: whoever finds no writer at
    /// work becomes it and writes every change marked so far in one
    /// transaction; the others wait for it, then go again if their change
    /// came too late for its batch. Concurrent changes (the ranks of a job
    /// joining) so share their fsyncs.
    async fn settle(&self, ticket: u64) {
        let mut written = self.shared.durable.subscribe();
        loop {
            if *written.borrow_and_update() >= ticket {
                return;
            }
            if let Ok(turn) = self.shared.writer.clone().try_lock_owned() {
                // A task of its own: a caller that goes away does not
                // leave a batch half written.
                let shared = self.shared.clone();
                let batch = tokio::spawn(async move {
                    let upto = shared.write_batch().await;
                    // Free the turn before telling: a waiter woken by this
                    // finds it free if it must write next.
                    drop(turn);
                    shared.durable.send_modify(|d| *d = (*d).max(upto));
                });
                // Its outcome is in `durable`; if it died, the loop writes.
                let _ = batch.await;
                continue;
            }
            if written.changed().await.is_err() {
                // The sender lives as long as the store: never.
                return;
            }
        }
    }
}

impl Shared {
    /// Writes the current records of every marked group and task, and the
    /// counters, in one transaction; returns the last ticket it covers.
    async fn write_batch(self: &Arc<Self>) -> u64 {
        let (change, upto, groups, tasks) = {
            let mut p = self.pending.lock().await;
            let groups = std::mem::take(&mut p.groups);
            let tasks = std::mem::take(&mut p.tasks);
            let mut change = Change::default();
            // The memory store's reads do not fail; if one ever did, the
            // batch is not written (a missing record would read as a
            // deletion) and waits for the next.
            let mut failed = false;
            for g in &groups {
                match self.mem.snapshot(g).await {
                    Ok(record) => change.groups.push((g.clone(), record)),
                    Err(e) => {
                        error!(group = %g, error = %e, "reading a group to write it");
                        failed = true;
                    }
                }
            }
            for t in &tasks {
                match self.mem.lease(*t).await {
                    Ok(record) => change.tasks.push((*t, record)),
                    Err(e) => {
                        error!(task = %t, error = %e, "reading a lease to write it");
                        failed = true;
                    }
                }
            }
            if failed {
                p.groups.extend(groups);
                p.tasks.extend(tasks);
                return p.ticket;
            }
            change.counters = self.mem.counters();
            (change, p.ticket, groups, tasks)
        };
        if change.groups.is_empty() && change.tasks.is_empty() {
            return upto;
        }
        // A commit waits for fsync: off the runtime's thread, which serves
        // every session.
        let me = self.clone();
        let written = tokio::task::spawn_blocking(move || tables::write(&me.db, &change)).await;
        let failure = match written {
            Ok(Ok(())) => return upto,
            Ok(Err(e)) => e.to_string(),
            Err(e) => format!("the writer failed: {e}"),
        };
        error!(path = %self.path.display(), error = %failure, "writing the group store failed: the changes stand in memory and are written again with the next ones");
        let mut p = self.pending.lock().await;
        p.groups.extend(groups);
        p.tasks.extend(tasks);
        upto
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
        let ticket = {
            let mut p = self.shared.pending.lock().await;
            let granted = self.mem().grant_lease(task, host, process).await?;
            if granted.is_none() {
                return Ok(None);
            }
            (p.mark([], [task]), granted)
        };
        self.settle(ticket.0).await;
        Ok(ticket.1)
    }

    async fn held_tasks(&self) -> Result<Vec<TaskId>> {
        self.mem().held_tasks().await
    }

    async fn lease(&self, task: TaskId) -> Result<Option<TaskLease>> {
        self.mem().lease(task).await
    }

    async fn revoke_lease(&self, task: TaskId, died: bool) -> Result<Option<Vec<Removal>>> {
        let (ticket, removals) = {
            let mut p = self.shared.pending.lock().await;
            let Some(removals) = self.mem().revoke_lease(task, died).await? else {
                return Ok(None);
            };
            let groups = removals.iter().map(|r| r.group.clone());
            (p.mark(groups, [task]), removals)
        };
        self.settle(ticket).await;
        Ok(Some(removals))
    }

    async fn snapshot(&self, group: &str) -> Result<Option<GroupSnapshot>> {
        self.mem().snapshot(group).await
    }

    async fn slots(&self, group: &str) -> Result<Option<GroupSlots>> {
        self.mem().slots(group).await
    }

    async fn member(&self, group: &str, instance: u32) -> Result<Lookup<Member>> {
        self.mem().member(group, instance).await
    }

    async fn membership(&self, group: &str, task: TaskId) -> Result<Lookup<Membership>> {
        self.mem().membership(group, task).await
    }

    async fn list(&self) -> Result<Vec<GroupSummary>> {
        self.mem().list().await
    }

    async fn list_page(&self, after: &str, limit: usize) -> Result<Vec<GroupSummary>> {
        self.mem().list_page(after, limit).await
    }

    async fn create_member(
        &self,
        group: &str,
        guard: Guard,
        member: Member,
        lease: LeaseId,
        access: Option<&GroupAccess>,
    ) -> Result<CreateOutcome> {
        let ticket = {
            let mut p = self.shared.pending.lock().await;
            let outcome = self
                .mem()
                .create_member(group, guard, member, lease, access)
                .await?;
            if !matches!(outcome, CreateOutcome::Created { .. }) {
                return Ok(outcome);
            }
            (p.mark([group.to_string()], []), outcome)
        };
        self.settle(ticket.0).await;
        Ok(ticket.1)
    }

    async fn delete_member(&self, group: &str, task: TaskId) -> Result<Lookup<Removal>> {
        let ticket = {
            let mut p = self.shared.pending.lock().await;
            let removal = self.mem().delete_member(group, task).await?;
            if !matches!(removal, Lookup::Found(_)) {
                return Ok(removal);
            }
            (p.mark([group.to_string()], []), removal)
        };
        self.settle(ticket.0).await;
        Ok(ticket.1)
    }

    async fn freeze(&self, group: &str, revision: u64, size: u32) -> Result<bool> {
        let ticket = {
            let mut p = self.shared.pending.lock().await;
            if !self.mem().freeze(group, revision, size).await? {
                return Ok(false);
            }
            p.mark([group.to_string()], [])
        };
        self.settle(ticket).await;
        Ok(true)
    }

    async fn barrier_enter(
        &self,
        group: &str,
        task: TaskId,
        count: Option<u32>,
    ) -> Result<Lookup<BarrierEntry>> {
        self.mem().barrier_enter(group, task, count).await
    }

    async fn barrier_withdraw(&self, group: &str, episode: u64, task: TaskId) -> Result<bool> {
        self.mem().barrier_withdraw(group, episode, task).await
    }

    fn barrier_abandon(&self, group: &str, episode: u64, task: TaskId) {
        self.mem().barrier_abandon(group, episode, task)
    }

    fn watch(&self) -> broadcast::Receiver<GroupEvent> {
        self.mem().watch()
    }
}

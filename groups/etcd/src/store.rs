//! The store trait's operations as etcd transactions (see `keys` for the
//! layout and `records` for the values).
//!
//! Every change takes the group's meta from the replica (or from the read
//! or commit just before, or reads it), decides, and commits one
//! transaction that compares the meta's mod-revision: the CAS of the trait.
//! A compare that fails reads etcd before deciding again, so a replica
//! behind other vmds' changes costs a retry, never a wrong answer. Each
//! successful transaction also writes its events to the log key.
//!
//! Lookups are answered from the replica ([`crate::replica`]) when it may
//! answer for the group ([`Core::view`]), else from etcd.

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, GetOptions, KeyValue, PutOptions, Txn, TxnOp, TxnResponse};
use isthmus_groups::store::{
    BarrierEntry, CreateOutcome, GroupAccess, GroupSlots, GroupSnapshot, GroupStore, Guard,
    LeaseId, Lookup, Membership, Removal, TaskLease, TaskProcess,
};
use isthmus_groups::{GroupError, GroupEvent, GroupSummary, Member, Result, TaskId};
use tokio::sync::broadcast;

use crate::endpoints::{first_answer, first_answer_of};
use crate::keys::prefix_end;
use crate::records::{
    decode_member, encode_log, encode_member, gets, nth, rev, seq_at, BrokenRec, EventRec, KindRec,
    MetaRec, TaskRec, MAX_EVENTS_PER_TXN,
};
use crate::replica::{summary, State};
use crate::shared::{Core, Seen, META_CACHE};
use crate::EtcdStore;

/// Groups whose memberships one transaction removes (each costs three
/// operations; etcd allows 128 per transaction by default).
const GROUPS_PER_TXN: usize = 32;
/// Bound on re-reads after a lost compare-and-set inside the store.
pub(crate) const MAX_ATTEMPTS: u32 = 1000;

pub(crate) fn etcd_err(what: &'static str) -> impl Fn(etcd_client::Error) -> GroupError {
    move |e| GroupError::Store(format!("etcd: {what}: {e}"))
}

pub(crate) fn contention(what: &str) -> GroupError {
    GroupError::Store(format!(
        "etcd: {what}: gave up after {MAX_ATTEMPTS} conflicting transactions"
    ))
}

/// The change log's revision in the `i`-th get (see `Core::log_revision`).
fn logged_at(sets: &[Vec<KeyValue>], i: usize) -> u64 {
    nth(sets, i).first().map_or(0, |kv| rev(kv.mod_revision()))
}

pub(crate) fn decode_meta(kv: &KeyValue) -> Result<(u64, MetaRec)> {
    Ok((
        rev(kv.mod_revision()),
        MetaRec::decode(kv.key(), kv.value())?,
    ))
}

/// A committed transaction's answer, and whether an earlier attempt of it
/// may have been applied (its answer lost): then a failed compare may mean
/// "already done".
pub(crate) struct Committed {
    resp: TxnResponse,
    pub(crate) repeated: bool,
}

impl Committed {
    pub(crate) fn succeeded(&self) -> bool {
        self.resp.succeeded()
    }

    fn revision(&self) -> u64 {
        self.resp.header().map(|h| rev(h.revision())).unwrap_or(0)
    }
}

/// The membership a removal takes out, and whether its task died.
struct Gone {
    task: TaskId,
    instance: u32,
    died: bool,
}

/// One transaction under construction: compares, operations, events.
#[derive(Default)]
pub(crate) struct Change {
    pub(crate) compares: Vec<Compare>,
    pub(crate) ops: Vec<TxnOp>,
    pub(crate) events: Vec<EventRec>,
}

impl Change {
    fn into_txn(mut self, core: &Core) -> Txn {
        if !self.events.is_empty() {
            self.ops
                .push(TxnOp::put(core.keys.log(), encode_log(&self.events), None));
        }
        Txn::new().when(self.compares).and_then(self.ops)
    }
}

impl Core {
    /// A range read, on the first member that can be reached.
    pub(crate) async fn get(
        &self,
        key: impl Into<Vec<u8>>,
        options: Option<GetOptions>,
    ) -> std::result::Result<etcd_client::GetResponse, etcd_client::Error> {
        let key = key.into();
        first_answer(&self.etcd, |mut c| {
            let (key, options) = (key.clone(), options.clone());
            async move { c.get(key, options).await }
        })
        .await
    }

    /// A read-only transaction, on the first member that can be reached.
    pub(crate) async fn txn(
        &self,
        txn: Txn,
    ) -> std::result::Result<TxnResponse, etcd_client::Error> {
        self.write(txn).await.map(|(resp, _)| resp)
    }

    /// A transaction, on the first member that can be reached, and whether
    /// an earlier attempt may have been applied. Such a repeat fails its
    /// compares if the first one took: the caller then reads whether its
    /// change is in.
    async fn write(
        &self,
        txn: Txn,
    ) -> std::result::Result<(TxnResponse, bool), etcd_client::Error> {
        first_answer_of(&self.etcd, |mut c| {
            let txn = txn.clone();
            async move { c.txn(txn).await }
        })
        .await
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Seen>> {
        self.metas.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cached(&self, group: &str, revision: u64) -> Option<MetaRec> {
        match &self.seen().get(group)?.meta {
            Some((r, rec)) if *r == revision => Some(rec.clone()),
            _ => None,
        }
    }

    /// Notes that `group` was as `meta` (`None`: absent, or not known) at
    /// revision `at`, read from etcd or written by this store.
    pub(crate) fn remember(&self, group: &str, at: u64, meta: Option<(u64, &MetaRec)>) {
        let mut metas = self.seen();
        if metas.len() >= META_CACHE && !metas.contains_key(group) {
            metas.clear();
        }
        let meta = meta.map(|(r, rec)| (r, rec.clone()));
        let seen = metas
            .entry(group.to_string())
            .or_insert(Seen { at, meta: None });
        if seen.at <= at {
            *seen = Seen { at, meta };
        }
    }

    /// The replica, if it may answer for `group`: current, and at least as
    /// recent as what this store last read or wrote of it.
    pub(crate) fn view(&self, group: &str) -> Option<std::sync::MutexGuard<'_, State>> {
        let seen = self.seen().get(group).map_or(0, |s| s.at);
        self.replica.view(seen).filter(|v| v.knows(group))
    }

    /// The group's meta: from the replica if it may answer, else etcd.
    async fn current_meta(&self, group: &str) -> Result<Option<(u64, MetaRec)>> {
        if let Some(view) = self.view(group) {
            return Ok(view.meta(group));
        }
        self.read_meta(group).await
    }

    /// A get of the change log's revision, to read with a group: every
    /// change to a meta or member writes the log, so once the replica has
    /// reached that revision it holds what the read saw (a read's own
    /// revision may be one the watch never delivers).
    fn log_revision(&self) -> TxnOp {
        TxnOp::get(self.keys.log(), Some(GetOptions::new().with_keys_only()))
    }

    async fn read_meta(&self, group: &str) -> Result<Option<(u64, MetaRec)>> {
        let read =
            Txn::new().and_then([TxnOp::get(self.keys.meta(group), None), self.log_revision()]);
        let resp = self.txn(read).await.map_err(etcd_err("reading a group"))?;
        let sets = gets(&resp);
        let at = logged_at(&sets, 1);
        let Some(kv) = nth(&sets, 0).first() else {
            self.remember(group, at, None);
            return Ok(None);
        };
        let (r, rec) = decode_meta(kv)?;
        self.remember(group, at, Some((r, &rec)));
        Ok(Some((r, rec)))
    }

    /// The meta at exactly `revision`, from the replica, the cache or
    /// etcd; `None` if the group is no longer at that revision.
    async fn meta_at(&self, group: &str, revision: u64) -> Result<Option<MetaRec>> {
        if let Some(rec) = self.replica.exact(group, revision) {
            return Ok(Some(rec));
        }
        if let Some(rec) = self.cached(group, revision) {
            return Ok(Some(rec));
        }
        Ok(match self.read_meta(group).await? {
            Some((r, rec)) if r == revision => Some(rec),
            _ => None,
        })
    }

    /// Commits `change`; `repeated` tells whether it may already have been
    /// applied by an attempt whose answer was lost (see [`Self::write`]).
    pub(crate) async fn commit(&self, change: Change, what: &'static str) -> Result<Committed> {
        let logged = !change.events.is_empty();
        let (resp, repeated) = self
            .write(change.into_txn(self))
            .await
            .map_err(etcd_err(what))?;
        if logged && resp.succeeded() {
            if let Some(r) = resp.header().map(|h| h.revision()) {
                self.wait_delivered(r).await;
            }
        }
        Ok(Committed { resp, repeated })
    }

    /// Waits until the change log's follower has delivered `revision`.
    pub(crate) async fn wait_delivered(&self, revision: i64) {
        let mut delivered = self.delivered.clone();
        let wait = delivered.wait_for(|d| *d >= revision);
        if tokio::time::timeout(self.request_timeout, wait)
            .await
            .is_err()
        {
            tracing::warn!(
                revision,
                "the change log's events were not delivered in time; going on"
            );
        }
    }

    /// Adds to `change` the removal of `task` (at `instance`) from `group`,
    /// whose meta is `rec` at `revision`.
    fn remove_one(
        &self,
        change: &mut Change,
        group: &str,
        at: (u64, MetaRec),
        gone: Gone,
    ) -> Removal {
        let (revision, mut rec) = at;
        let Gone {
            task,
            instance,
            died,
        } = gone;
        rec.settle(revision);
        rec.slots.retain(|s| s.1 != task.0);
        if died && rec.frozen.is_some() && rec.broken.is_none() {
            rec.broken = Some(BrokenRec {
                instance,
                task: task.0,
                index: change.events.len(),
                rev: None,
            });
        }
        let size = rec.size();
        let broken = rec.broken.is_some();
        change.events.push(EventRec {
            kind: if died {
                KindRec::MemberDied
            } else {
                KindRec::Left
            },
            group: group.to_string(),
            member: Some((instance, task.0)),
            size,
            broken,
            episode: None,
        });
        let meta = self.keys.meta(group);
        change.compares.push(Compare::mod_revision(
            meta.clone(),
            CompareOp::Equal,
            i64::try_from(revision).unwrap_or(i64::MAX),
        ));
        // An empty broken group stays as a tombstone.
        let destroyed = size == 0 && !broken;
        if destroyed {
            change.ops.push(TxnOp::delete(meta, None));
            change.events.push(EventRec {
                kind: KindRec::Destroyed,
                group: group.to_string(),
                member: None,
                size: 0,
                broken,
                episode: None,
            });
        } else {
            change.ops.push(TxnOp::put(meta, rec.encode(), None));
        }
        change
            .ops
            .push(TxnOp::delete(self.keys.member(group, instance), None));
        // Any member gone breaks the group's barrier episode, in this very
        // change; waiters learn it from the log's Left/MemberDied. (No
        // compare needed: entries compare the meta, which this rewrites.)
        change
            .ops
            .push(TxnOp::delete(self.keys.barrier(group), None));
        Removal {
            group: group.to_string(),
            instance,
            task,
            size,
            destroyed,
        }
    }

    /// Removes every membership of `task`. As a revocation (`Some(opened)`:
    /// the task key's create-revision) the task key goes in the last
    /// transaction; as an expiry sweep (`None`) the task key must still be
    /// absent. `None` if a revocation finds no task.
    pub(crate) async fn remove_all(
        &self,
        task: TaskId,
        died: bool,
        revoke: bool,
    ) -> Result<Option<Vec<Removal>>> {
        let task_key = self.keys.task(task);
        let mut removals = Vec::new();
        for _ in 0..MAX_ATTEMPTS {
            let read = Txn::new().and_then([
                TxnOp::get(task_key.clone(), None),
                TxnOp::get(
                    self.keys.task_groups(task),
                    Some(GetOptions::new().with_prefix().with_keys_only()),
                ),
            ]);
            let resp = self
                .txn(read)
                .await
                .map_err(etcd_err("reading a task's groups"))?;
            let sets = gets(&resp);
            let opened = nth(&sets, 0).first().map(|kv| kv.create_revision());
            if revoke && opened.is_none() {
                return Ok(if removals.is_empty() {
                    None
                } else {
                    Some(removals)
                });
            }
            if !revoke && opened.is_some() {
                // The task is alive again (its vmd came back): nothing expired.
                return Ok(Some(removals));
            }
            let groups: Vec<String> = nth(&sets, 1)
                .iter()
                .filter_map(|kv| Some(self.keys.task_group_of(kv.key())?.1.to_string()))
                .collect();
            let mut chunks: Vec<&[String]> = groups.chunks(GROUPS_PER_TXN).collect();
            if chunks.is_empty() {
                chunks.push(&[]);
            }
            let last = chunks.len() - 1;
            let mut conflict = false;
            for (n, chunk) in chunks.into_iter().enumerate() {
                let metas = self.read_metas(chunk).await?;
                let mut change = Change::default();
                for (group, meta) in chunk.iter().zip(metas) {
                    change
                        .ops
                        .push(TxnOp::delete(self.keys.task_group(task, group), None));
                    let Some((r, rec)) = meta else {
                        change.compares.push(Compare::version(
                            self.keys.meta(group),
                            CompareOp::Equal,
                            0,
                        ));
                        continue;
                    };
                    let Some(instance) = rec.instance_of(task) else {
                        change.compares.push(Compare::mod_revision(
                            self.keys.meta(group),
                            CompareOp::Equal,
                            i64::try_from(r).unwrap_or(i64::MAX),
                        ));
                        continue;
                    };
                    removals.push(self.remove_one(
                        &mut change,
                        group,
                        (r, rec),
                        Gone {
                            task,
                            instance,
                            died,
                        },
                    ));
                }
                match opened {
                    Some(created) => {
                        change.compares.push(Compare::create_revision(
                            task_key.clone(),
                            CompareOp::Equal,
                            created,
                        ));
                        if n == last {
                            change.ops.push(TxnOp::delete(task_key.clone(), None));
                        }
                    }
                    None => change.compares.push(Compare::version(
                        task_key.clone(),
                        CompareOp::Equal,
                        0,
                    )),
                }
                let touched: Vec<String> = chunk.to_vec();
                let logged = !change.events.is_empty();
                let resp = self.commit(change, "removing a task's memberships").await?;
                // (A lost answer of an applied chunk shows as a conflict:
                // the re-read then finds those memberships gone, and its
                // events went out all the same.)
                if !resp.succeeded() {
                    // Drop this chunk's removals: it is read again.
                    removals.retain(|r| !touched.contains(&r.group));
                    conflict = true;
                    break;
                }
                // (A change without events wrote no meta.)
                for g in touched.iter().filter(|_| logged) {
                    self.remember(g, resp.revision(), None);
                }
            }
            if !conflict {
                return Ok(Some(removals));
            }
        }
        Err(contention("removing a task's memberships"))
    }

    pub(crate) fn own_tasks(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<TaskId, TaskLease>> {
        self.own_tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The task's lease as etcd has it.
    async fn read_lease(&self, task: TaskId) -> Result<Option<TaskLease>> {
        let core = self;
        let resp = core
            .get(core.keys.task(task), None)
            .await
            .map_err(etcd_err("reading a task"))?;
        let Some(kv) = resp.kvs().first() else {
            return Ok(None);
        };
        let rec = TaskRec::decode(kv.key(), kv.value())?;
        let created = rev(kv.create_revision());
        let process = rec
            .pid
            .zip(rec.uid)
            .map(|(pid, uid)| TaskProcess { pid, uid });
        Ok(Some(TaskLease {
            lease: LeaseId(created),
            host: rec.host,
            process,
            opened_at: seq_at(created),
        }))
    }

    async fn read_metas(&self, groups: &[String]) -> Result<Vec<Option<(u64, MetaRec)>>> {
        if groups.is_empty() {
            return Ok(Vec::new());
        }
        let ops: Vec<TxnOp> = groups
            .iter()
            .map(|g| TxnOp::get(self.keys.meta(g), None))
            .collect();
        let resp = self
            .txn(Txn::new().and_then(ops))
            .await
            .map_err(etcd_err("reading groups"))?;
        let sets = gets(&resp);
        (0..groups.len())
            .map(|i| nth(&sets, i).first().map(decode_meta).transpose())
            .collect()
    }
}

#[async_trait]
impl GroupStore for EtcdStore {
    async fn grant_lease(
        &self,
        task: TaskId,
        host: &str,
        process: Option<TaskProcess>,
    ) -> Result<Option<LeaseId>> {
        let core = &self.core;
        let key = core.keys.task(task);
        let record = TaskRec {
            host: host.into(),
            pid: process.map(|p| p.pid),
            uid: process.map(|p| p.uid),
        }
        .encode();
        let txn = Txn::new()
            .when([Compare::version(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key,
                record,
                Some(PutOptions::new().with_lease(core.lease)),
            )]);
        let (resp, repeated) = core.write(txn).await.map_err(etcd_err("opening a task"))?;
        if !resp.succeeded() {
            if repeated {
                // Our first attempt may be what is there: task ids are
                // fresh uuids, so a key on our lease is ours.
                let mine = core
                    .get(core.keys.task(task), None)
                    .await
                    .map_err(etcd_err("reading a task"))?;
                if let Some(kv) = mine.kvs().first().filter(|kv| kv.lease() == core.lease) {
                    return Ok(Some(LeaseId(rev(kv.create_revision()))));
                }
            }
            return Ok(None);
        }
        // The lease of a task is its key's incarnation: the revision that
        // created it.
        let Some(created) = resp.header().map(|h| rev(h.revision())) else {
            return Ok(None);
        };
        core.own_tasks().insert(
            task,
            TaskLease {
                lease: LeaseId(created),
                host: host.into(),
                process,
                opened_at: seq_at(created),
            },
        );
        Ok(Some(LeaseId(created)))
    }

    async fn lease(&self, task: TaskId) -> Result<Option<TaskLease>> {
        let core = &self.core;
        if core.replica.is_current() {
            if let Some(lease) = core.own_tasks().get(&task) {
                return Ok(Some(lease.clone()));
            }
        }
        core.read_lease(task).await
    }

    async fn held_tasks(&self) -> Result<Vec<TaskId>> {
        let core = &self.core;
        let resp = core
            .get(
                core.keys.tasks(),
                Some(GetOptions::new().with_prefix().with_keys_only()),
            )
            .await
            .map_err(etcd_err("listing tasks"))?;
        Ok(resp
            .kvs()
            .iter()
            .filter(|kv| kv.lease() == core.lease)
            .filter_map(|kv| core.keys.task_of(kv.key()))
            .collect())
    }

    async fn revoke_lease(&self, task: TaskId, died: bool) -> Result<Option<Vec<Removal>>> {
        // Forgotten first: from here on etcd says whether it is open.
        self.core.own_tasks().remove(&task);
        self.core.remove_all(task, died, true).await
    }

    async fn snapshot(&self, group: &str) -> Result<Option<GroupSnapshot>> {
        let core = &self.core;
        if let Some(view) = core.view(group) {
            return Ok(view.snapshot(group));
        }
        let members = core.keys.members(group);
        let txn = Txn::new().and_then([
            TxnOp::get(core.keys.meta(group), None),
            TxnOp::get(
                members.clone(),
                Some(GetOptions::new().with_range(prefix_end(&members))),
            ),
            core.log_revision(),
        ]);
        let resp = core.txn(txn).await.map_err(etcd_err("reading a group"))?;
        let sets = gets(&resp);
        let at = logged_at(&sets, 2);
        let Some(kv) = nth(&sets, 0).first() else {
            core.remember(group, at, None);
            return Ok(None);
        };
        let (r, rec) = decode_meta(kv)?;
        core.remember(group, at, Some((r, &rec)));
        let mut list = Vec::new();
        for kv in nth(&sets, 1) {
            let (_, instance) = core
                .keys
                .member_of(kv.key())
                .ok_or_else(|| crate::records::corrupt("member key", kv.key(), "no instance"))?;
            list.push(decode_member(kv.key(), kv.value(), instance)?);
        }
        Ok(Some(GroupSnapshot {
            name: group.to_string(),
            meta: rec.meta(r),
            members: list,
        }))
    }

    async fn slots(&self, group: &str) -> Result<Option<GroupSlots>> {
        if let Some(view) = self.core.view(group) {
            return Ok(view.slots(group));
        }
        Ok(self
            .core
            .read_meta(group)
            .await?
            .map(|(r, rec)| rec.group_slots(r)))
    }

    async fn member(&self, group: &str, instance: u32) -> Result<Lookup<Member>> {
        let core = &self.core;
        if let Some(view) = core.view(group) {
            return Ok(view.member(group, instance));
        }
        let txn = Txn::new().and_then([
            TxnOp::get(core.keys.meta(group), None),
            TxnOp::get(core.keys.member(group, instance), None),
        ]);
        let resp = core.txn(txn).await.map_err(etcd_err("reading a member"))?;
        let sets = gets(&resp);
        if nth(&sets, 0).is_empty() {
            return Ok(Lookup::NoGroup);
        }
        Ok(match nth(&sets, 1).first() {
            None => Lookup::NoEntry,
            Some(kv) => Lookup::Found(decode_member(kv.key(), kv.value(), instance)?),
        })
    }

    async fn membership(&self, group: &str, task: TaskId) -> Result<Lookup<Membership>> {
        if let Some(view) = self.core.view(group) {
            return Ok(view.membership(group, task));
        }
        Ok(match self.core.read_meta(group).await? {
            None => Lookup::NoGroup,
            Some((r, rec)) => rec.membership(r, task),
        })
    }

    async fn list(&self) -> Result<Vec<GroupSummary>> {
        self.list_page("", usize::MAX).await
    }

    async fn list_page(&self, after: &str, limit: usize) -> Result<Vec<GroupSummary>> {
        let core = &self.core;
        // The replica, unless this store knows of a newer group anywhere.
        let seen = core.seen().values().map(|s| s.at).max().unwrap_or(0);
        if let Some(page) = core.replica.view(seen).and_then(|v| v.page(after, limit)) {
            return Ok(page);
        }
        let metas = core.keys.metas();
        // The first key after `after`: names have no control characters.
        let from = if after.is_empty() {
            metas.clone()
        } else {
            format!("{}\0", core.keys.meta(after))
        };
        let mut options = GetOptions::new().with_range(prefix_end(&metas));
        if let Ok(limit) = i64::try_from(limit) {
            options = options.with_limit(limit);
        }
        let resp = core
            .get(from, Some(options))
            .await
            .map_err(etcd_err("listing groups"))?;
        let mut out = Vec::with_capacity(resp.kvs().len());
        for kv in resp.kvs() {
            let name = core
                .keys
                .group_of_meta(kv.key())
                .ok_or_else(|| crate::records::corrupt("group key", kv.key(), "no name"))?;
            out.push(summary(name, &MetaRec::decode(kv.key(), kv.value())?));
        }
        Ok(out)
    }

    async fn create_member(
        &self,
        group: &str,
        guard: Guard,
        member: Member,
        lease: LeaseId,
        access: Option<&GroupAccess>,
    ) -> Result<CreateOutcome> {
        let core = &self.core;
        let meta_key = core.keys.meta(group);
        let task = member.task;
        let instance = member.instance;
        let as_i64 = |r: u64| i64::try_from(r).unwrap_or(i64::MAX);
        let (mut rec, generation, meta_compare, replaced) = match guard {
            Guard::Absent => (
                MetaRec::created(instance, task, access),
                None,
                Compare::version(meta_key.clone(), CompareOp::Equal, 0),
                false,
            ),
            Guard::Tombstone(r) => match core.meta_at(group, r).await? {
                Some(old) if old.is_tombstone() => (
                    MetaRec::created(instance, task, access),
                    None,
                    Compare::mod_revision(meta_key.clone(), CompareOp::Equal, as_i64(r)),
                    true,
                ),
                _ => return Ok(CreateOutcome::Conflict),
            },
            Guard::Revision(r) => match core.meta_at(group, r).await? {
                Some(mut old)
                    if old.frozen.is_none()
                        && old.instance_of(task).is_none()
                        && !old.slots.iter().any(|s| s.0 == instance) =>
                {
                    old.settle(r);
                    if let Some(next) = old.access.as_ref().and_then(|a| a.after_join(access)) {
                        old.access = Some(next);
                    }
                    let generation = old.generation;
                    let at = old.slots.partition_point(|s| s.0 < instance);
                    old.slots.insert(at, (instance, task.0));
                    (
                        old,
                        generation,
                        Compare::mod_revision(meta_key.clone(), CompareOp::Equal, as_i64(r)),
                        false,
                    )
                }
                _ => return Ok(CreateOutcome::Conflict),
            },
        };
        let mut change = Change::default();
        if replaced {
            change.events.push(EventRec {
                kind: KindRec::Destroyed,
                group: group.to_string(),
                member: None,
                size: 0,
                broken: true,
                episode: None,
            });
        }
        let size = rec.size();
        change.events.push(EventRec {
            kind: KindRec::Joined,
            group: group.to_string(),
            member: Some((instance, task.0)),
            size,
            broken: false,
            episode: None,
        });
        let task_key = core.keys.task(task);
        change.compares = vec![
            meta_compare,
            Compare::create_revision(task_key.clone(), CompareOp::Equal, as_i64(lease.0)),
        ];
        change.ops = vec![
            TxnOp::put(meta_key, rec.encode(), None),
            TxnOp::put(
                core.keys.member(group, instance),
                encode_member(&member),
                None,
            ),
            TxnOp::put(
                core.keys.task_group(task, group),
                instance.to_string(),
                None,
            ),
        ];
        let resp = core.commit(change, "joining a group").await?;
        if !resp.succeeded() {
            // Read etcd (and note what it holds), so that the caller's
            // next decision is not made on a replica behind the group.
            let now = core.read_meta(group).await?;
            if resp.repeated {
                // An attempt whose answer was lost may have joined already.
                if let Some((r, now)) = now {
                    if now.instance_of(task) == Some(instance) {
                        let generation = now.meta(r).generation;
                        return Ok(CreateOutcome::Created {
                            generation,
                            size: now.size(),
                        });
                    }
                }
            }
            // Which compare failed: the task's, or the group's? (etcd's
            // answer, not this store's memory of the task.)
            return Ok(match core.read_lease(task).await? {
                Some(l) if l.lease == lease => CreateOutcome::Conflict,
                _ => CreateOutcome::LeaseGone,
            });
        }
        let committed = resp.revision();
        let generation = generation.unwrap_or(committed);
        if rec.generation.is_none() {
            rec.generation = Some(generation);
        }
        core.remember(group, committed, Some((committed, &rec)));
        Ok(CreateOutcome::Created { generation, size })
    }

    async fn delete_member(&self, group: &str, task: TaskId) -> Result<Lookup<Removal>> {
        let core = &self.core;
        for attempt in 0..MAX_ATTEMPTS {
            // The replica first; after a failed compare, etcd.
            let meta = if attempt == 0 {
                core.current_meta(group).await?
            } else {
                core.read_meta(group).await?
            };
            let Some((r, rec)) = meta else {
                return Ok(Lookup::NoGroup);
            };
            let Some(instance) = rec.instance_of(task) else {
                return Ok(Lookup::NoEntry);
            };
            let mut change = Change::default();
            let gone = Gone {
                task,
                instance,
                died: false,
            };
            let removal = core.remove_one(&mut change, group, (r, rec), gone);
            change
                .ops
                .push(TxnOp::delete(core.keys.task_group(task, group), None));
            let resp = core.commit(change, "leaving a group").await?;
            let done = resp.succeeded()
                || (resp.repeated
                    && core
                        .read_meta(group)
                        .await?
                        .is_none_or(|(_, now)| now.instance_of(task).is_none()));
            if done {
                // (A repeat that found itself done has just read etcd.)
                if resp.succeeded() {
                    core.remember(group, resp.revision(), None);
                }
                return Ok(Lookup::Found(removal));
            }
        }
        Err(contention("leaving a group"))
    }

    async fn freeze(&self, group: &str, revision: u64, size: u32) -> Result<bool> {
        let core = &self.core;
        let Some(mut rec) = core.meta_at(group, revision).await? else {
            return Ok(false);
        };
        if rec.frozen.is_some() || rec.size() != size {
            return Ok(false);
        }
        rec.settle(revision);
        rec.frozen = Some(size);
        let mut change = Change::default();
        change.events.push(EventRec {
            kind: KindRec::Frozen,
            group: group.to_string(),
            member: None,
            size,
            broken: rec.broken.is_some(),
            episode: None,
        });
        let meta_key = core.keys.meta(group);
        change.compares.push(Compare::mod_revision(
            meta_key.clone(),
            CompareOp::Equal,
            i64::try_from(revision).unwrap_or(i64::MAX),
        ));
        change.ops.push(TxnOp::put(meta_key, rec.encode(), None));
        let resp = core.commit(change, "freezing a group").await?;
        if resp.succeeded() {
            let committed = resp.revision();
            core.remember(group, committed, Some((committed, &rec)));
            return Ok(true);
        }
        if resp.repeated {
            // Frozen at this size by us (an attempt whose answer was lost),
            // or by a concurrent freezer of the same size: either way done.
            if let Some((_, now)) = core.read_meta(group).await? {
                return Ok(now.frozen == Some(size) && now.slots == rec.slots);
            }
        }
        Ok(false)
    }

    async fn barrier_enter(
        &self,
        group: &str,
        task: TaskId,
        count: Option<u32>,
    ) -> Result<Lookup<BarrierEntry>> {
        self.core.barrier_enter(group, task, count).await
    }

    async fn barrier_withdraw(&self, group: &str, episode: u64, task: TaskId) -> Result<bool> {
        self.core.barrier_withdraw(group, episode, task).await
    }

    fn barrier_abandon(&self, group: &str, episode: u64, task: TaskId) {
        self.core.abandon(group, episode, task)
    }

    fn watch(&self) -> broadcast::Receiver<GroupEvent> {
        self.events.subscribe()
    }
}

// A transaction carries at most one event per removed membership plus a
// Destroyed per group: well inside a seq's index bits.
const _: () = assert!(2 * GROUPS_PER_TXN + 2 <= MAX_EVENTS_PER_TXN);

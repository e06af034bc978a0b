//! A local replica of the group tables (metas and member records), so that
//! lookups cost no etcd round trip.
//!
//! **What it holds.** Every `P/g/<group>` meta (with its mod-revision) and
//! every `P/m/<group>\0<instance>` member record under the prefix: the
//! virtual machine's groups, no more than etcd holds for them. Memory is
//! about the size of those keys' values (a member's endpoint is at most
//! 64 KiB; a typical one is tens of bytes), once per vmd.
//!
//! **How it is kept.** It is loaded at connect by one read of both ranges
//! at one revision, then follows the same watch as the change log
//! ([`crate::watch`]): that watch covers the range from `P/g/` to the end of
//! `P/m/`, which holds the metas, `P/log` and the members and nothing else,
//! so the replica applies the keys' own values in revision order, before
//! the revision's log events go out and before it counts as delivered. It
//! mirrors the keys, not the log records, so nothing is derived and the
//! log format is unchanged.
//!
//! **How fresh it is.** A change made through this store returns only
//! once its revision is delivered, so the replica already holds it
//! (read-your-writes). Other vmds' changes arrive with the watch's latency,
//! as a pvmd's view of another's groups did in PVM. Where this store knows
//! of something newer than the replica (a read from etcd after a failed
//! compare, or its own commit whose delivery timed out), it reads etcd for
//! that group until the replica passes it.
//!
//! **When it is not used.** While the watch is broken, or after a reload
//! until the watch has passed the last logged change (every transaction
//! that writes a meta or member also writes `P/log`, so once the watch has
//! delivered `P/log`'s mod-revision as read after reopening, nothing in
//! the range is missing), lookups read etcd instead. If etcd compacted
//! past the watch, the replica is loaded again at the compacted revision
//! and the watch resumes from there; a failed reload leaves it unused and
//! is tried again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard, PoisonError};

use etcd_client::{Event, EventType, GetOptions, KeyValue, Txn, TxnOp};
use isthmus_groups::store::{GroupSlots, GroupSnapshot, Lookup, Membership};
use isthmus_groups::{GroupSummary, Member, TaskId};
use tracing::warn;

use crate::endpoints::{first_answer, Endpoints};
use crate::keys::{prefix_end, Keys};
use crate::records::{decode_member, gets, nth, rev, MetaRec};

/// The group tables as of one revision.
#[derive(Default)]
pub(crate) struct Tables {
    /// Every change at or before this revision is in.
    revision: u64,
    metas: BTreeMap<String, (u64, MetaRec)>,
    members: HashMap<String, BTreeMap<u32, Member>>,
    /// Groups with a record that does not decode: etcd answers for them,
    /// with its error, until the next reload.
    unreadable: BTreeSet<String>,
}

/// The replica and whether it may answer (see the module docs).
#[derive(Default)]
pub(crate) struct Replica {
    state: Mutex<State>,
}

#[derive(Default)]
pub(crate) struct State {
    current: bool,
    tables: Tables,
}

impl Replica {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tables, if the replica is current and has reached `seen` (a
    /// revision at which this store knows the group was as it read or
    /// wrote it).
    pub(crate) fn view(&self, seen: u64) -> Option<MutexGuard<'_, State>> {
        let state = self.lock();
        (state.current && state.tables.revision >= seen).then_some(state)
    }

    /// The meta of `group` at exactly `revision`, if the replica holds
    /// that version (a meta at a given mod-revision never changes, so this
    /// needs no freshness).
    pub(crate) fn exact(&self, group: &str, revision: u64) -> Option<MetaRec> {
        match self.lock().tables.metas.get(group) {
            Some((r, rec)) if *r == revision => Some(rec.clone()),
            _ => None,
        }
    }

    /// Replaces the tables; `current` if they are as of now.
    pub(crate) fn replace(&self, tables: Tables, current: bool) {
        let mut state = self.lock();
        state.tables = tables;
        state.current = current;
    }

    pub(crate) fn set_current(&self, current: bool) {
        self.lock().current = current;
    }

    pub(crate) fn is_current(&self) -> bool {
        self.lock().current
    }

    /// Applies the watch events of one revision (keys outside the tables,
    /// such as the log, are skipped).
    pub(crate) fn apply(&self, keys: &Keys, revision: u64, events: &[Event]) {
        let mut state = self.lock();
        let tables = &mut state.tables;
        for ev in events {
            let Some(kv) = ev.kv() else { continue };
            let put = ev.event_type() == EventType::Put;
            tables.apply(keys, kv, put);
        }
        tables.revision = tables.revision.max(revision);
    }
}

impl Tables {
    fn apply(&mut self, keys: &Keys, kv: &KeyValue, put: bool) {
        if let Some(group) = keys.group_of_meta(kv.key()) {
            if !put {
                self.metas.remove(group);
                return;
            }
            match MetaRec::decode(kv.key(), kv.value()) {
                Ok(rec) => {
                    self.metas
                        .insert(group.to_string(), (rev(kv.mod_revision()), rec));
                }
                Err(e) => self.unreadable(group, &e),
            }
        } else if let Some((group, instance)) = keys.member_of(kv.key()) {
            if !put {
                if let Some(table) = self.members.get_mut(group) {
                    table.remove(&instance);
                    if table.is_empty() {
                        self.members.remove(group);
                    }
                }
                return;
            }
            match decode_member(kv.key(), kv.value(), instance) {
                Ok(m) => {
                    self.members
                        .entry(group.to_string())
                        .or_default()
                        .insert(instance, m);
                }
                Err(e) => self.unreadable(group, &e),
            }
        }
    }

    fn unreadable(&mut self, group: &str, e: &isthmus_groups::GroupError) {
        warn!(group, error = %e, "a group record does not decode; reading that group from etcd");
        self.unreadable.insert(group.to_string());
    }
}

impl State {
    /// Whether the replica may answer for `group`.
    pub(crate) fn knows(&self, group: &str) -> bool {
        !self.tables.unreadable.contains(group)
    }

    pub(crate) fn meta(&self, group: &str) -> Option<(u64, MetaRec)> {
        self.tables.metas.get(group).cloned()
    }

    pub(crate) fn slots(&self, group: &str) -> Option<GroupSlots> {
        let (r, rec) = self.tables.metas.get(group)?;
        Some(rec.group_slots(*r))
    }

    pub(crate) fn membership(&self, group: &str, task: TaskId) -> Lookup<Membership> {
        match self.tables.metas.get(group) {
            None => Lookup::NoGroup,
            Some((r, rec)) => rec.membership(*r, task),
        }
    }

    pub(crate) fn member(&self, group: &str, instance: u32) -> Lookup<Member> {
        if !self.tables.metas.contains_key(group) {
            return Lookup::NoGroup;
        }
        match self
            .tables
            .members
            .get(group)
            .and_then(|t| t.get(&instance))
        {
            Some(m) => Lookup::Found(m.clone()),
            None => Lookup::NoEntry,
        }
    }

    pub(crate) fn snapshot(&self, group: &str) -> Option<GroupSnapshot> {
        let (r, rec) = self.tables.metas.get(group)?;
        Some(GroupSnapshot {
            name: group.to_string(),
            meta: rec.meta(*r),
            members: self
                .tables
                .members
                .get(group)
                .map(|t| t.values().cloned().collect())
                .unwrap_or_default(),
        })
    }

    /// Summaries of at most `limit` groups named after `after`, by name;
    /// `None` if one of them must be read from etcd.
    pub(crate) fn page(&self, after: &str, limit: usize) -> Option<Vec<GroupSummary>> {
        let from = if after.is_empty() {
            Bound::Unbounded
        } else {
            Bound::Excluded(after)
        };
        let mut out = Vec::new();
        for (name, (_, rec)) in self
            .tables
            .metas
            .range::<str, _>((from, Bound::Unbounded))
            .take(limit)
        {
            if !self.knows(name) {
                return None;
            }
            out.push(summary(name, rec));
        }
        Some(out)
    }
}

pub(crate) fn summary(name: &str, rec: &MetaRec) -> GroupSummary {
    GroupSummary {
        name: name.to_string(),
        size: rec.size(),
        frozen: rec.frozen.is_some(),
        broken: rec.broken.is_some(),
    }
}

/// Reads every meta and member record in one read, at `at` if given (the
/// revision a compaction left), else now.
pub(crate) async fn load(
    etcd: &Endpoints,
    keys: &Keys,
    at: Option<i64>,
) -> Result<Tables, etcd_client::Error> {
    let range = |prefix: String| {
        let mut options = GetOptions::new().with_range(prefix_end(&prefix));
        if let Some(at) = at {
            options = options.with_revision(at);
        }
        TxnOp::get(prefix, Some(options))
    };
    let txn = Txn::new().and_then([range(keys.metas()), range(keys.all_members())]);
    let resp = first_answer(etcd, |mut c| {
        let txn = txn.clone();
        async move { c.txn(txn).await }
    })
    .await?;
    let now = resp.header().map(|h| h.revision()).unwrap_or(0);
    let mut tables = Tables {
        revision: rev(at.unwrap_or(now)),
        ..Tables::default()
    };
    let sets = gets(&resp);
    for kv in nth(&sets, 0).iter().chain(nth(&sets, 1)) {
        tables.apply(keys, kv, true);
    }
    Ok(tables)
}

impl Tables {
    /// The revision these tables are at.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }
}

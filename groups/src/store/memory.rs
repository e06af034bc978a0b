//! The embedded, in-process [`GroupStore`]: one mutex over plain maps.
//!
//! The mutex is never held across an `.await` (the methods do not await),
//! so it is cheaper than an async lock; every method is a single critical
//! section, which is what makes each of them atomic. Barrier episodes are
//! kept under the same lock, so a removal breaks its group's episode in
//! the critical section that removes the member.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tokio::sync::{broadcast, oneshot};

use super::api::{
    BarrierEntry, BarrierOutcome, BarrierWait, CreateOutcome, GroupAccess, GroupMeta, GroupSlots,
    GroupSnapshot, GroupStore, Guard, LeaseId, Lookup, LostMember, Membership, Removal, TaskLease,
    TaskProcess,
};
use super::barrier::{self, Episode, Step};
use crate::{GroupEvent, GroupEventKind, GroupSummary, Member, Result, TaskId};

/// Capacity of the change stream; slow subscribers see `Lagged`.
const WATCH_CAPACITY: usize = 4096;

/// In-memory store; the default backend of [`crate::Groups`].
pub struct MemoryStore {
    inner: Mutex<Inner>,
    events: broadcast::Sender<GroupEvent>,
}

#[derive(Default)]
struct Inner {
    /// Last event seq handed out; doubles as the revision counter.
    seq: u64,
    last_generation: u64,
    last_lease: u64,
    leases: HashMap<TaskId, LeaseRec>,
    groups: HashMap<String, GroupRec>,
    last_episode: u64,
    /// The open barrier episode of each group that has one.
    barriers: HashMap<String, Barrier>,
}

/// An open episode and where each of its waiters is told the outcome.
struct Barrier {
    episode: Episode,
    waiters: HashMap<TaskId, oneshot::Sender<BarrierOutcome>>,
}

/// Sends every waiter of an episode that ended its outcome.
fn tell(waiters: HashMap<TaskId, oneshot::Sender<BarrierOutcome>>, outcome: &BarrierOutcome) {
    for (_, tx) in waiters {
        // A waiter that went away meanwhile does not matter.
        let _ = tx.send(outcome.clone());
    }
}

struct LeaseRec {
    id: LeaseId,
    host: String,
    process: Option<TaskProcess>,
    opened_at: u64,
    /// Groups the task is a member of, so revocation needs no scan.
    groups: BTreeSet<String>,
}

struct GroupRec {
    meta: GroupMeta,
    members: BTreeMap<u32, Member>,
    by_task: HashMap<TaskId, u32>,
}

impl GroupRec {
    fn size(&self) -> u32 {
        // Bounded by MAX_INSTANCE, which fits in u32.
        u32::try_from(self.members.len()).unwrap_or(u32::MAX)
    }
}

impl Inner {
    fn membership(&self, group: &str, task: TaskId) -> Lookup<Membership> {
        match self.groups.get(group) {
            None => Lookup::NoGroup,
            Some(rec) => match rec.by_task.get(&task) {
                None => Lookup::NoEntry,
                Some(&instance) => Lookup::Found(Membership {
                    instance,
                    size: rec.size(),
                    generation: rec.meta.generation,
                }),
            },
        }
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(WATCH_CAPACITY);
        MemoryStore {
            inner: Mutex::new(Inner::default()),
            events,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing under the lock panics; if something ever did, the maps
        // are still consistent between statements, so carry on.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes one change and returns its seq. Called under the lock so
    /// that events leave in the order the changes were applied.
    fn emit(
        &self,
        inner: &mut Inner,
        kind: GroupEventKind,
        group: &str,
        member: Option<(u32, TaskId)>,
        size: u32,
        group_broken: bool,
    ) -> u64 {
        inner.seq += 1;
        let event = GroupEvent {
            seq: inner.seq,
            kind,
            group: group.to_string(),
            instance: member.map(|m| m.0),
            task: member.map(|m| m.1),
            size,
            group_broken,
        };
        // No subscribers is fine.
        let _ = self.events.send(event);
        inner.seq
    }

    /// Removes one membership, emitting its events. The caller has checked
    /// that `task` is a member of `group`.
    fn remove(&self, inner: &mut Inner, group: &str, task: TaskId, died: bool) -> Option<Removal> {
        // `emit` below hands out exactly the next seq to this removal.
        let seq = inner.seq + 1;
        let rec = inner.groups.get_mut(group)?;
        let instance = rec.by_task.remove(&task)?;
        rec.members.remove(&instance);
        if died && rec.meta.frozen_size.is_some() && rec.meta.broken.is_none() {
            rec.meta.broken = Some(LostMember {
                instance,
                task,
                seq,
            });
        }
        let size = rec.size();
        let broken = rec.meta.broken.is_some();
        let kind = if died {
            GroupEventKind::MemberDied
        } else {
            GroupEventKind::Left
        };
        let seq = self.emit(inner, kind, group, Some((instance, task)), size, broken);
        // Any member gone breaks the group's barrier episode.
        if let Some(b) = inner.barriers.remove(group) {
            tell(
                b.waiters,
                &BarrierOutcome::Broken {
                    instance,
                    task,
                    died,
                },
            );
        }
        // An empty broken group stays as a tombstone, so that a late
        // `wait_frozen` still learns that it broke.
        let destroyed = size == 0 && !broken;
        if destroyed {
            inner.groups.remove(group);
            self.emit(inner, GroupEventKind::Destroyed, group, None, 0, broken);
        } else if let Some(rec) = inner.groups.get_mut(group) {
            rec.meta.revision = seq;
        }
        Some(Removal {
            group: group.to_string(),
            instance,
            task,
            size,
            destroyed,
        })
    }
}

#[async_trait]
impl GroupStore for MemoryStore {
    async fn grant_lease(
        &self,
        task: TaskId,
        host: &str,
        process: Option<TaskProcess>,
    ) -> Result<Option<LeaseId>> {
        let mut inner = self.lock();
        if inner.leases.contains_key(&task) {
            return Ok(None);
        }
        inner.last_lease += 1;
        let id = LeaseId(inner.last_lease);
        let opened_at = inner.seq;
        inner.leases.insert(
            task,
            LeaseRec {
                id,
                host: host.to_string(),
                process,
                opened_at,
                groups: BTreeSet::new(),
            },
        );
        Ok(Some(id))
    }

    async fn lease(&self, task: TaskId) -> Result<Option<TaskLease>> {
        let inner = self.lock();
        Ok(inner.leases.get(&task).map(|l| TaskLease {
            lease: l.id,
            host: l.host.clone(),
            process: l.process,
            opened_at: l.opened_at,
        }))
    }

    async fn held_tasks(&self) -> Result<Vec<TaskId>> {
        Ok(self.lock().leases.keys().copied().collect())
    }

    async fn revoke_lease(&self, task: TaskId, died: bool) -> Result<Option<Vec<Removal>>> {
        let mut inner = self.lock();
        let Some(lease) = inner.leases.remove(&task) else {
            return Ok(None);
        };
        let removals = lease
            .groups
            .iter()
            .filter_map(|group| self.remove(&mut inner, group, task, died))
            .collect();
        Ok(Some(removals))
    }

    async fn snapshot(&self, group: &str) -> Result<Option<GroupSnapshot>> {
        let inner = self.lock();
        Ok(inner.groups.get(group).map(|rec| GroupSnapshot {
            name: group.to_string(),
            meta: rec.meta.clone(),
            members: rec.members.values().cloned().collect(),
        }))
    }

    async fn slots(&self, group: &str) -> Result<Option<GroupSlots>> {
        let inner = self.lock();
        Ok(inner.groups.get(group).map(|rec| GroupSlots {
            meta: rec.meta.clone(),
            slots: rec.members.iter().map(|(i, m)| (*i, m.task)).collect(),
        }))
    }

    async fn member(&self, group: &str, instance: u32) -> Result<Lookup<Member>> {
        let inner = self.lock();
        Ok(match inner.groups.get(group) {
            None => Lookup::NoGroup,
            Some(rec) => match rec.members.get(&instance) {
                None => Lookup::NoEntry,
                Some(m) => Lookup::Found(m.clone()),
            },
        })
    }

    async fn membership(&self, group: &str, task: TaskId) -> Result<Lookup<Membership>> {
        Ok(self.lock().membership(group, task))
    }

    async fn list(&self) -> Result<Vec<GroupSummary>> {
        let inner = self.lock();
        let mut out: Vec<GroupSummary> = inner
            .groups
            .iter()
            .map(|(name, rec)| GroupSummary {
                name: name.clone(),
                size: rec.size(),
                frozen: rec.meta.frozen_size.is_some(),
                broken: rec.meta.broken.is_some(),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    async fn list_page(&self, after: &str, limit: usize) -> Result<Vec<GroupSummary>> {
        let inner = self.lock();
        let mut names: Vec<&String> = inner
            .groups
            .keys()
            .filter(|name| name.as_str() > after)
            .collect();
        // Linear in the number of groups per page, not n log n: only the
        // page itself is sorted.
        if names.len() > limit {
            names.select_nth_unstable(limit);
            names.truncate(limit);
        }
        names.sort_unstable();
        Ok(names
            .into_iter()
            .filter_map(|name| {
                inner.groups.get(name).map(|rec| GroupSummary {
                    name: name.clone(),
                    size: rec.size(),
                    frozen: rec.meta.frozen_size.is_some(),
                    broken: rec.meta.broken.is_some(),
                })
            })
            .collect())
    }

    async fn create_member(
        &self,
        group: &str,
        guard: Guard,
        member: Member,
        lease: LeaseId,
        access: Option<&GroupAccess>,
    ) -> Result<CreateOutcome> {
        let mut inner = self.lock();
        match inner.leases.get(&member.task) {
            Some(l) if l.id == lease => {}
            _ => return Ok(CreateOutcome::LeaseGone),
        }
        let existing = inner.groups.get(group);
        let ok = match (guard, existing) {
            (Guard::Absent, None) => true,
            (Guard::Revision(rev), Some(rec)) => {
                rec.meta.revision == rev
                    && rec.meta.frozen_size.is_none()
                    && !rec.members.contains_key(&member.instance)
                    && !rec.by_task.contains_key(&member.task)
            }
            (Guard::Tombstone(rev), Some(rec)) => {
                rec.meta.revision == rev && rec.meta.is_tombstone(rec.members.len())
            }
            _ => false,
        };
        if !ok {
            return Ok(CreateOutcome::Conflict);
        }
        if let Guard::Tombstone(_) = guard {
            // Same change: the old incarnation goes, a new one is created
            // below exactly as for an absent group.
            if let Some(old) = inner.groups.remove(group) {
                let broken = old.meta.broken.is_some();
                self.emit(
                    &mut inner,
                    GroupEventKind::Destroyed,
                    group,
                    None,
                    0,
                    broken,
                );
            }
        }
        let generation = match inner.groups.get(group) {
            Some(rec) => rec.meta.generation,
            None => {
                inner.last_generation += 1;
                inner.last_generation
            }
        };
        let (instance, task) = (member.instance, member.task);
        let rec = inner
            .groups
            .entry(group.to_string())
            .or_insert_with(|| GroupRec {
                meta: GroupMeta {
                    generation,
                    revision: 0,
                    frozen_size: None,
                    broken: None,
                    access: access.cloned(),
                },
                members: BTreeMap::new(),
                by_task: HashMap::new(),
            });
        if let Some(next) = rec.meta.access.as_ref().and_then(|a| a.after_join(access)) {
            rec.meta.access = Some(next);
        }
        rec.members.insert(instance, member);
        rec.by_task.insert(task, instance);
        let size = rec.size();
        let seq = self.emit(
            &mut inner,
            GroupEventKind::Joined,
            group,
            Some((instance, task)),
            size,
            false,
        );
        if let Some(rec) = inner.groups.get_mut(group) {
            rec.meta.revision = seq;
        }
        if let Some(l) = inner.leases.get_mut(&task) {
            l.groups.insert(group.to_string());
        }
        Ok(CreateOutcome::Created { generation, size })
    }

    async fn delete_member(&self, group: &str, task: TaskId) -> Result<Lookup<Removal>> {
        let mut inner = self.lock();
        match inner.groups.get(group) {
            None => return Ok(Lookup::NoGroup),
            Some(rec) if !rec.by_task.contains_key(&task) => return Ok(Lookup::NoEntry),
            Some(_) => {}
        }
        if let Some(l) = inner.leases.get_mut(&task) {
            l.groups.remove(group);
        }
        Ok(match self.remove(&mut inner, group, task, false) {
            Some(r) => Lookup::Found(r),
            None => Lookup::NoEntry,
        })
    }

    async fn freeze(&self, group: &str, revision: u64, size: u32) -> Result<bool> {
        let mut inner = self.lock();
        let broken = match inner.groups.get(group) {
            Some(rec)
                if rec.meta.revision == revision
                    && rec.meta.frozen_size.is_none()
                    && rec.size() == size =>
            {
                rec.meta.broken.is_some()
            }
            _ => return Ok(false),
        };
        let seq = self.emit(
            &mut inner,
            GroupEventKind::Frozen,
            group,
            None,
            size,
            broken,
        );
        if let Some(rec) = inner.groups.get_mut(group) {
            rec.meta.frozen_size = Some(size);
            rec.meta.revision = seq;
        }
        Ok(true)
    }

    async fn barrier_enter(
        &self,
        group: &str,
        task: TaskId,
        count: Option<u32>,
    ) -> Result<Lookup<BarrierEntry>> {
        let mut inner = self.lock();
        let m = match inner.membership(group, task) {
            Lookup::Found(m) => m,
            Lookup::NoGroup => return Ok(Lookup::NoGroup),
            Lookup::NoEntry => return Ok(Lookup::NoEntry),
        };
        let Inner {
            barriers,
            last_episode,
            ..
        } = &mut *inner;
        let (mut slot, mut waiters) = match barriers.remove(group) {
            Some(b) => (Some(b.episode), b.waiters),
            None => (None, HashMap::new()),
        };
        let before = slot.as_ref().map(|e| e.id);
        let step = barrier::enter(&mut slot, m, task, count, || {
            *last_episode += 1;
            *last_episode
        });
        if slot.as_ref().is_some_and(|e| Some(e.id) != before) {
            // A stale episode was replaced: nobody can be waiting in it.
            waiters.clear();
        }
        let entry = match step {
            Step::CountMismatch { expected } => BarrierEntry::CountMismatch { expected },
            Step::AlreadyWaiting => BarrierEntry::AlreadyWaiting,
            Step::Complete(_) => {
                tell(std::mem::take(&mut waiters), &BarrierOutcome::Released);
                BarrierEntry::Released
            }
            Step::Waiting { id } => {
                let (tx, outcome) = oneshot::channel();
                waiters.insert(task, tx);
                BarrierEntry::Waiting(BarrierWait {
                    episode: id,
                    outcome,
                })
            }
        };
        if let Some(episode) = slot {
            barriers.insert(group.to_string(), Barrier { episode, waiters });
        }
        Ok(Lookup::Found(entry))
    }

    async fn barrier_withdraw(&self, group: &str, episode: u64, task: TaskId) -> Result<bool> {
        Ok(self.withdraw(group, episode, task))
    }

    fn barrier_abandon(&self, group: &str, episode: u64, task: TaskId) {
        self.withdraw(group, episode, task);
    }

    fn watch(&self) -> broadcast::Receiver<GroupEvent> {
        self.events.subscribe()
    }
}

impl MemoryStore {
    /// Takes `task` out of episode `episode` of `group`; `false` if it was
    /// not waiting there (its outcome was sent when the episode ended).
    fn withdraw(&self, group: &str, episode: u64, task: TaskId) -> bool {
        let mut inner = self.lock();
        let Some(Barrier {
            episode: ep,
            mut waiters,
        }) = inner.barriers.remove(group)
        else {
            return false;
        };
        let mut slot = Some(ep);
        let was_waiting = barrier::withdraw(&mut slot, episode, task);
        if was_waiting {
            waiters.remove(&task);
        }
        if let Some(episode) = slot {
            inner
                .barriers
                .insert(group.to_string(), Barrier { episode, waiters });
        }
        was_waiting
    }
}

/// The counters a store's state continues from: the last event `seq`
/// (also every group's revision and every lease's `opened_at`), the last
/// group generation and the last lease id handed out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    pub seq: u64,
    pub last_generation: u64,
    pub last_lease: u64,
}

/// Everything a durable store keeps of a [`MemoryStore`], to build it
/// again after a restart: the counters, every live task's lease and every
/// group (tombstones included). Barrier episodes are not in it: their
/// waiters were calls of sessions that broke with the process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreImage {
    pub counters: Counters,
    pub leases: Vec<(TaskId, TaskLease)>,
    pub groups: Vec<GroupSnapshot>,
}

/// Why a [`StoreImage`] cannot be a store's state.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImageError {
    #[error("member {instance} of group {group:?} is task {task}, which has no lease")]
    MemberWithoutLease {
        group: String,
        instance: u32,
        task: TaskId,
    },
    #[error("group {group:?} lists instance {instance} or task {task} twice")]
    Duplicate {
        group: String,
        instance: u32,
        task: TaskId,
    },
    #[error("task {0} has two leases")]
    DuplicateLease(TaskId),
}

impl MemoryStore {
    /// The counters now (read under the store's lock, so consistent with
    /// every change applied before this call).
    pub fn counters(&self) -> Counters {
        let inner = self.lock();
        Counters {
            seq: inner.seq,
            last_generation: inner.last_generation,
            last_lease: inner.last_lease,
        }
    }

    /// A store whose state is `image`, checked for consistency: every
    /// member's task has a lease, no instance or task appears twice in a
    /// group. The counters never go back below what the image holds.
    pub fn from_image(image: StoreImage) -> std::result::Result<Self, ImageError> {
        let mut inner = Inner {
            seq: image.counters.seq,
            last_generation: image.counters.last_generation,
            last_lease: image.counters.last_lease,
            ..Inner::default()
        };
        for (task, lease) in image.leases {
            inner.last_lease = inner.last_lease.max(lease.lease.0);
            inner.seq = inner.seq.max(lease.opened_at);
            let rec = LeaseRec {
                id: lease.lease,
                host: lease.host,
                process: lease.process,
                opened_at: lease.opened_at,
                groups: BTreeSet::new(),
            };
            if inner.leases.insert(task, rec).is_some() {
                return Err(ImageError::DuplicateLease(task));
            }
        }
        for group in image.groups {
            inner.seq = inner.seq.max(group.meta.revision);
            inner.last_generation = inner.last_generation.max(group.meta.generation);
            let mut rec = GroupRec {
                meta: group.meta,
                members: BTreeMap::new(),
                by_task: HashMap::new(),
            };
            for m in group.members {
                let (instance, task) = (m.instance, m.task);
                let Some(lease) = inner.leases.get_mut(&task) else {
                    return Err(ImageError::MemberWithoutLease {
                        group: group.name,
                        instance,
                        task,
                    });
                };
                lease.groups.insert(group.name.clone());
                if rec.members.insert(instance, m).is_some()
                    || rec.by_task.insert(task, instance).is_some()
                {
                    return Err(ImageError::Duplicate {
                        group: group.name,
                        instance,
                        task,
                    });
                }
            }
            inner.groups.insert(group.name, rec);
        }
        let store = MemoryStore::new();
        *store.lock() = inner;
        Ok(store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(instance: u32, task: TaskId) -> Member {
        Member {
            instance,
            task,
            host: "h".into(),
            endpoint: vec![],
        }
    }

    #[tokio::test]
    async fn create_member_is_compare_and_set() -> Result<()> {
        let store = MemoryStore::new();
        let (a, b) = (TaskId::new_v4(), TaskId::new_v4());
        let la = store
            .grant_lease(a, "h", None)
            .await?
            .ok_or(crate::GroupError::TaskNotFound(a))?;
        let lb = store
            .grant_lease(b, "h", None)
            .await?
            .ok_or(crate::GroupError::TaskNotFound(b))?;
        assert_eq!(
            store.grant_lease(a, "h", None).await?,
            None,
            "one lease per task"
        );

        let created = store
            .create_member("g", Guard::Absent, member(0, a), la, None)
            .await?;
        assert!(matches!(created, CreateOutcome::Created { size: 1, .. }));
        // A second creator loses the race.
        let again = store
            .create_member("g", Guard::Absent, member(1, b), lb, None)
            .await?;
        assert_eq!(again, CreateOutcome::Conflict);

        let rev = store
            .slots("g")
            .await?
            .map(|s| s.meta.revision)
            .unwrap_or(0);
        // Stale revision, taken instance: both conflict.
        assert_eq!(
            store
                .create_member("g", Guard::Revision(rev - 1), member(1, b), lb, None)
                .await?,
            CreateOutcome::Conflict
        );
        assert_eq!(
            store
                .create_member("g", Guard::Revision(rev), member(0, b), lb, None)
                .await?,
            CreateOutcome::Conflict
        );
        // Wrong lease.
        assert_eq!(
            store
                .create_member("g", Guard::Revision(rev), member(1, b), la, None)
                .await?,
            CreateOutcome::LeaseGone
        );
        assert!(matches!(
            store
                .create_member("g", Guard::Revision(rev), member(1, b), lb, None)
                .await?,
            CreateOutcome::Created { size: 2, .. }
        ));
        Ok(())
    }

    #[tokio::test]
    async fn freeze_is_compare_and_set() -> Result<()> {
        let store = MemoryStore::new();
        let a = TaskId::new_v4();
        let la = store
            .grant_lease(a, "h", None)
            .await?
            .ok_or(crate::GroupError::TaskNotFound(a))?;
        store
            .create_member("g", Guard::Absent, member(0, a), la, None)
            .await?;
        let rev = store
            .slots("g")
            .await?
            .map(|s| s.meta.revision)
            .unwrap_or(0);
        assert!(!store.freeze("g", rev + 1, 1).await?, "stale revision");
        assert!(!store.freeze("g", rev, 2).await?, "wrong size");
        assert!(store.freeze("g", rev, 1).await?);
        assert!(!store.freeze("g", rev, 1).await?, "revision moved on");
        Ok(())
    }

    #[tokio::test]
    async fn tombstone_is_replaced_only_by_its_guard() -> Result<()> {
        let store = MemoryStore::new();
        let (a, b) = (TaskId::new_v4(), TaskId::new_v4());
        let la = store
            .grant_lease(a, "h", None)
            .await?
            .ok_or(crate::GroupError::TaskNotFound(a))?;
        let lb = store
            .grant_lease(b, "h", None)
            .await?
            .ok_or(crate::GroupError::TaskNotFound(b))?;
        store
            .create_member("g", Guard::Absent, member(0, a), la, None)
            .await?;
        let rev = store.slots("g").await?.map(|s| s.meta.revision);
        assert!(store.freeze("g", rev.unwrap_or(0), 1).await?);

        let removed = store.revoke_lease(a, true).await?.unwrap_or_default();
        assert_eq!(removed.len(), 1);
        assert!(!removed.iter().any(|r| r.destroyed), "kept as a tombstone");
        let tomb = store.slots("g").await?;
        let meta = tomb.as_ref().map(|s| s.meta.clone());
        let Some(meta) = meta else {
            return Err(crate::GroupError::GroupNotFound("g".into()));
        };
        assert!(meta.is_tombstone(0));
        assert_eq!(
            meta.broken,
            Some(LostMember {
                instance: 0,
                task: a,
                // The death's own event is the tombstone's last change.
                seq: meta.revision,
            })
        );

        for guard in [
            Guard::Absent,
            Guard::Revision(meta.revision),
            Guard::Tombstone(meta.revision - 1),
        ] {
            assert_eq!(
                store
                    .create_member("g", guard, member(0, b), lb, None)
                    .await?,
                CreateOutcome::Conflict,
                "{guard:?}"
            );
        }
        let mut events = store.watch();
        let created = store
            .create_member("g", Guard::Tombstone(meta.revision), member(0, b), lb, None)
            .await?;
        let CreateOutcome::Created { generation, size } = created else {
            return Err(crate::GroupError::Store(format!("{created:?}")));
        };
        assert!(generation > meta.generation);
        assert_eq!(size, 1);
        let kinds: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
            .map(|e| e.kind)
            .collect();
        assert_eq!(
            kinds,
            vec![GroupEventKind::Destroyed, GroupEventKind::Joined]
        );
        let fresh = store.slots("g").await?.map(|s| s.meta);
        assert!(matches!(
            fresh,
            Some(GroupMeta {
                frozen_size: None,
                broken: None,
                ..
            })
        ));
        // A live group is not a tombstone.
        let c = TaskId::new_v4();
        let lc = store
            .grant_lease(c, "h", None)
            .await?
            .ok_or(crate::GroupError::TaskNotFound(c))?;
        let rev = fresh.map(|m| m.revision).unwrap_or(0);
        assert_eq!(
            store
                .create_member("g", Guard::Tombstone(rev), member(1, c), lc, None)
                .await?,
            CreateOutcome::Conflict
        );
        Ok(())
    }

    #[tokio::test]
    async fn an_image_is_the_state_it_was_taken_from_and_must_be_consistent() -> Result<()> {
        let store = MemoryStore::new();
        let a = TaskId::new_v4();
        let la = store
            .grant_lease(a, "h", Some(TaskProcess { pid: 7, uid: 8 }))
            .await?
            .ok_or(crate::GroupError::TaskNotFound(a))?;
        store
            .create_member("g", Guard::Absent, member(0, a), la, None)
            .await?;
        let lease = store
            .lease(a)
            .await?
            .ok_or(crate::GroupError::TaskNotFound(a))?;
        let group = store
            .snapshot("g")
            .await?
            .ok_or(crate::GroupError::GroupNotFound("g".into()))?;
        let image = StoreImage {
            counters: store.counters(),
            leases: vec![(a, lease.clone())],
            groups: vec![group.clone()],
        };
        let back = MemoryStore::from_image(image.clone())
            .map_err(|e| crate::GroupError::Store(e.to_string()))?;
        assert_eq!(back.snapshot("g").await?, Some(group.clone()));
        assert_eq!(back.lease(a).await?, Some(lease));
        assert_eq!(back.counters(), store.counters());
        // The lease knows its groups again: revoking it removes the member.
        assert_eq!(back.revoke_lease(a, false).await?.map(|r| r.len()), Some(1));

        let orphan = StoreImage {
            leases: vec![],
            ..image
        };
        assert!(matches!(
            MemoryStore::from_image(orphan),
            Err(ImageError::MemberWithoutLease { instance: 0, .. })
        ));
        Ok(())
    }

    #[tokio::test]
    async fn revoke_removes_all_memberships_atomically() -> Result<()> {
        let store = MemoryStore::new();
        let (a, b) = (TaskId::new_v4(), TaskId::new_v4());
        let la = store
            .grant_lease(a, "h", None)
            .await?
            .ok_or(crate::GroupError::TaskNotFound(a))?;
        let lb = store
            .grant_lease(b, "h", None)
            .await?
            .ok_or(crate::GroupError::TaskNotFound(b))?;
        store
            .create_member("x", Guard::Absent, member(0, a), la, None)
            .await?;
        store
            .create_member("y", Guard::Absent, member(0, a), la, None)
            .await?;
        let rev = store
            .slots("y")
            .await?
            .map(|s| s.meta.revision)
            .unwrap_or(0);
        store
            .create_member("y", Guard::Revision(rev), member(1, b), lb, None)
            .await?;

        let removed = store.revoke_lease(a, true).await?.unwrap_or_default();
        assert_eq!(removed.len(), 2);
        assert!(store.snapshot("x").await?.is_none(), "x destroyed");
        assert_eq!(store.snapshot("y").await?.map(|s| s.members.len()), Some(1));
        assert_eq!(store.revoke_lease(a, true).await?, None);
        Ok(())
    }
}

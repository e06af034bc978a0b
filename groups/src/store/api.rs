//! The storage contract itself: the records a store keeps and the
//! [`GroupStore`] trait with what its barrier calls return (the rules are
//! described in [`super`]). A module
//! of its own, below the parent that re-exports it, so that the stores
//! implementing the trait ([`super::MemoryStore`], [`super::DynStore`])
//! and the barrier rule import it without importing their parent.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, oneshot};

use crate::{GroupEvent, GroupSummary, Member, Result, TaskId};

/// Handle on a task's liveness lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LeaseId(pub u64);

/// The process behind a task, as its vmd saw it (the kernel's peer
/// credentials of the task's session): what a task resuming after a vmd
/// restart must match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskProcess {
    pub pid: u32,
    pub uid: u32,
}

/// A live task as recorded by its lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLease {
    pub lease: LeaseId,
    pub host: String,
    /// The process that opened the task, if its vmd knew it.
    pub process: Option<TaskProcess>,
    /// The store's `seq` when the lease was granted: events with a higher
    /// seq happened after the task was opened.
    pub opened_at: u64,
}

/// The member whose death broke a frozen group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostMember {
    pub instance: u32,
    pub task: TaskId,
    /// The `seq` of the death that broke the group. A task opened at or
    /// after it never knew this incarnation (see `Groups::wait_frozen_as`).
    pub seq: u64,
}

/// Per-group flags and versioning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupMeta {
    /// Unique per creation of the group.
    pub generation: u64,
    /// Changes with every change to the group; the CAS token.
    pub revision: u64,
    /// Size the group was frozen at, if frozen.
    pub frozen_size: Option<u32>,
    /// Set when a member of the frozen group died (the first one to die).
    pub broken: Option<LostMember>,
    /// Who the group belongs to, set by the join that created it (`None`:
    /// created by a task whose process was not known, or recorded before
    /// groups had owners).
    #[serde(default)]
    pub access: Option<GroupAccess>,
}

/// Most uids a group's owner may allow: a bound on what one owner can make
/// every store hold per group.
pub const MAX_ALLOWED: usize = 64;

/// Who holds a group's name, as a join finds it (for an owner's rule, see
/// [`crate::Groups::join_as`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder<'a> {
    /// Nobody: no group, or a tombstone. The join creates the group.
    Free,
    /// A group with no owner recorded (made by a task of unknown process,
    /// or recorded before groups had owners).
    Unowned,
    /// A group of this owner.
    Owned(&'a GroupAccess),
}

/// Who a group belongs to: the uid whose task created it, and the other
/// uids it allowed in. Kept in the group's record, so that every vmd over
/// the same store, and a restarted one, sees the same owner.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupAccess {
    pub owner: u32,
    /// Sorted, without duplicates, at most [`MAX_ALLOWED`].
    #[serde(default)]
    pub allowed: Vec<u32>,
}

impl GroupAccess {
    /// `owner`'s access, allowing `allowed` (sorted, deduplicated, cut
    /// to [`MAX_ALLOWED`]).
    pub fn new(owner: u32, allowed: impl IntoIterator<Item = u32>) -> Self {
        let mut access = GroupAccess {
            owner,
            allowed: Vec::new(),
        };
        access.allow(allowed);
        access
    }

    /// Adds uids to the allowed ones, up to [`MAX_ALLOWED`].
    pub fn allow(&mut self, more: impl IntoIterator<Item = u32>) {
        for uid in more {
            if self.allowed.len() >= MAX_ALLOWED {
                break;
            }
            if let Err(at) = self.allowed.binary_search(&uid) {
                self.allowed.insert(at, uid);
            }
        }
    }

    /// Whether the owner allowed `uid` in.
    pub fn allows(&self, uid: u32) -> bool {
        self.allowed.binary_search(&uid).is_ok()
    }

    /// What the group's access becomes after a join carrying `joiner`:
    /// the owner allows more with each of its joins; other joins change
    /// nothing. `None` when nothing changes.
    pub fn after_join(&self, joiner: Option<&GroupAccess>) -> Option<GroupAccess> {
        let joiner = joiner.filter(|j| j.owner == self.owner)?;
        if joiner.allowed.iter().all(|u| self.allows(*u)) {
            return None;
        }
        let mut next = self.clone();
        next.allow(joiner.allowed.iter().copied());
        Some(next)
    }
}

impl GroupMeta {
    /// Whether a group with this meta and `members` members is a
    /// tombstone: broken, and nobody left in it.
    pub fn is_tombstone(&self, members: usize) -> bool {
        members == 0 && self.broken.is_some()
    }
}

/// Group flags plus the full member records, sorted by instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSnapshot {
    pub name: String,
    pub meta: GroupMeta,
    pub members: Vec<Member>,
}

/// Group flags plus `(instance, task)` of every member, sorted by
/// instance: what a join needs, without copying endpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSlots {
    pub meta: GroupMeta,
    pub slots: Vec<(u32, TaskId)>,
}

/// A task's membership in one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Membership {
    pub instance: u32,
    /// Current size of the group.
    pub size: u32,
    pub generation: u64,
}

/// Result of a keyed lookup inside a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup<T> {
    NoGroup,
    NoEntry,
    Found(T),
}

/// What the CAS of [`GroupStore::create_member`] compares against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guard {
    /// The group must not exist; it is created (with a new generation).
    Absent,
    /// The group must exist at exactly this revision.
    Revision(u64),
    /// The group must be a tombstone at exactly this revision; it is
    /// destroyed and a fresh group (new generation, neither frozen nor
    /// broken) is created in its place, in one atomic change that
    /// publishes `Destroyed` for the tombstone and then `Joined`.
    Tombstone(u64),
}

/// Outcome of [`GroupStore::create_member`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateOutcome {
    Created {
        generation: u64,
        size: u32,
    },
    /// The guard did not hold (or the instance or task slot was taken):
    /// re-read and decide again.
    Conflict,
    /// The lease is no longer live (the task was closed meanwhile).
    LeaseGone,
}

/// One membership removed by a leave or a lease revocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal {
    pub group: String,
    pub instance: u32,
    pub task: TaskId,
    /// Size after the removal.
    pub size: u32,
    /// The group became empty and was destroyed. `false` when a broken
    /// group became empty: it stays, as a tombstone.
    pub destroyed: bool,
}

/// Storage for groups, memberships and task leases.
///
/// Implementations must apply each method atomically and publish the
/// resulting events (in order, increasing `seq`) on `watch`.
#[async_trait]
pub trait GroupStore: Send + Sync + 'static {
    /// Registers a live task on `host`, run by `process` if known. `None`
    /// if the task already holds a lease.
    async fn grant_lease(
        &self,
        task: TaskId,
        host: &str,
        process: Option<TaskProcess>,
    ) -> Result<Option<LeaseId>>;

    /// The live tasks whose liveness this store instance holds: those a
    /// crash of this process would leave without a session (etcd: the
    /// tasks attached to this vmd's etcd lease, including those opened by
    /// its previous run when it took the lease back; in memory: every
    /// open task, so none after a restart).
    async fn held_tasks(&self) -> Result<Vec<TaskId>>;

    /// The task's lease, if it is live.
    async fn lease(&self, task: TaskId) -> Result<Option<TaskLease>>;

    /// Ends the task's lease, removing all its memberships at once
    /// (`MemberDied` events if `died`, else `Left`). If `died`, every
    /// frozen group it was in is marked broken in the same change.
    /// Groups left empty are destroyed (`Destroyed` event), except broken
    /// ones, which stay as tombstones (no further event).
    /// `None` if the task held no lease.
    async fn revoke_lease(&self, task: TaskId, died: bool) -> Result<Option<Vec<Removal>>>;

    /// Full snapshot of one group.
    async fn snapshot(&self, group: &str) -> Result<Option<GroupSnapshot>>;

    /// Light snapshot of one group, for instance allocation.
    async fn slots(&self, group: &str) -> Result<Option<GroupSlots>>;

    /// The member at `instance`.
    async fn member(&self, group: &str, instance: u32) -> Result<Lookup<Member>>;

    /// The membership of `task` in `group`.
    async fn membership(&self, group: &str, task: TaskId) -> Result<Lookup<Membership>>;

    /// Summaries of all groups, sorted by name.
    async fn list(&self) -> Result<Vec<GroupSummary>>;

    /// Summaries of the first `limit` groups whose names sort after
    /// `after` (all, if `after` is empty), sorted by name (etcd: a range
    /// read from a key with a limit).
    async fn list_page(&self, after: &str, limit: usize) -> Result<Vec<GroupSummary>>;

    /// CAS: adds `member` bound to `lease` if `guard` holds, the instance
    /// is free, the task is not yet a member and the group is not frozen
    /// (a tombstone is frozen: it can only be replaced, through
    /// [`Guard::Tombstone`]). `access` is the joiner's uid and the uids it
    /// allows: a group this creates belongs to it; joining an existing
    /// group of the same owner adds the allowed uids (see
    /// [`GroupAccess::after_join`]), any other join leaves it as it is.
    async fn create_member(
        &self,
        group: &str,
        guard: Guard,
        member: Member,
        lease: LeaseId,
        access: Option<&GroupAccess>,
    ) -> Result<CreateOutcome>;

    /// Removes `task` from `group` (a voluntary leave); destroys the group
    /// if it becomes empty, unless it is broken: then it stays as a
    /// tombstone.
    async fn delete_member(&self, group: &str, task: TaskId) -> Result<Lookup<Removal>>;

    /// CAS: freezes the group at `size` if it is at `revision`.
    /// `false` on conflict.
    async fn freeze(&self, group: &str, revision: u64, size: u32) -> Result<bool>;

    /// Enters `task` into the barrier of `group` (see
    /// [`super::barrier::enter`]), atomically with checking that it is a member.
    /// A waiting entry's outcome is sent once the episode ends, however
    /// it ends and whichever store's caller ended it.
    async fn barrier_enter(
        &self,
        group: &str,
        task: TaskId,
        count: Option<u32>,
    ) -> Result<Lookup<BarrierEntry>>;

    /// Takes `task` out of barrier episode `episode` of `group`. `false` if
    /// it was no longer waiting there: the episode ended, and its outcome
    /// has been sent to the entry's [`BarrierWait`] by the time this
    /// returns.
    async fn barrier_withdraw(&self, group: &str, episode: u64, task: TaskId) -> Result<bool>;

    /// [`barrier_withdraw`](Self::barrier_withdraw) for a call that was
    /// dropped (its caller went away), from a destructor: it cannot wait,
    /// so a store that must talk to a server withdraws in the background;
    /// its own later entries wait for that withdrawal, so on one store an
    /// abandoned call never counts.
    fn barrier_abandon(&self, group: &str, episode: u64, task: TaskId);

    /// Stream of all changes, starting now.
    fn watch(&self) -> broadcast::Receiver<GroupEvent>;
}

/// How an episode ended for its waiters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BarrierOutcome {
    Released,
    /// The member at `instance` (task `task`) left, or died, first.
    Broken {
        instance: u32,
        task: TaskId,
        died: bool,
    },
}

/// A waiting entry: the episode it waits in, and where the store sends its
/// outcome. The sender is dropped without a word only if the store itself
/// goes away.
#[derive(Debug)]
pub struct BarrierWait {
    pub episode: u64,
    pub outcome: oneshot::Receiver<BarrierOutcome>,
}

/// Outcome of [`GroupStore::barrier_enter`].
#[derive(Debug)]
pub enum BarrierEntry {
    /// This entry completed the count; every waiter was released.
    Released,
    Waiting(BarrierWait),
    CountMismatch {
        expected: u32,
    },
    AlreadyWaiting,
}

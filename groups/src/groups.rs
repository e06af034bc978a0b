//! The semantic layer: PVM group rules on top of a [`GroupStore`].
//!
//! This module holds the handle type, task registration, join/leave and
//! the queries. Waiting operations live in `freeze.rs` and `barrier.rs`.

use std::sync::Arc;

use tokio::sync::broadcast;
use tracing::debug;

use crate::store::{
    CreateOutcome, DynStore, GroupAccess, GroupSnapshot, GroupStore, Guard, Holder, Lookup,
    MemoryStore, TaskLease, TaskProcess,
};
use crate::{
    validate, GroupError, GroupEvent, GroupSummary, GroupTable, Member, Result, TaskId,
    MAX_INSTANCE,
};

/// Bound on compare-and-set retries of one join. Each retry means another
/// change to the same group won the race, so this is only reached under
/// absurd contention; the caller then gets `Contention` (Aborted).
const MAX_CAS_ATTEMPTS: u32 = 10_000;

/// Handle on the group service. Cheap to clone; all clones share state.
///
/// The default store is chosen at run time ([`DynStore`]: in memory, or a
/// replicated store such as etcd); `Groups<MemoryStore>` names one store
/// statically.
pub struct Groups<S: GroupStore = DynStore> {
    pub(crate) shared: Arc<Shared<S>>,
}

pub(crate) struct Shared<S> {
    pub(crate) store: S,
}

impl<S: GroupStore> Clone for Groups<S> {
    fn clone(&self) -> Self {
        Groups {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Groups<DynStore> {
    /// A service backed by the embedded in-memory store.
    pub fn in_memory() -> Self {
        Self::new(Box::new(MemoryStore::new()))
    }
}

impl Default for Groups<DynStore> {
    fn default() -> Self {
        Self::in_memory()
    }
}

impl<S: GroupStore> Groups<S> {
    pub fn new(store: S) -> Self {
        Groups {
            shared: Arc::new(Shared { store }),
        }
    }

    pub(crate) fn store(&self) -> &S {
        &self.shared.store
    }

    /// Registers a live task on `host`; memberships are bound to it.
    pub async fn open_task(&self, task: TaskId, host: &str) -> Result<()> {
        self.open_task_as(task, host, None).await
    }

    /// [`open_task`](Self::open_task), recording the process behind the
    /// task (which a resume after a vmd restart must match).
    pub async fn open_task_as(
        &self,
        task: TaskId,
        host: &str,
        process: Option<TaskProcess>,
    ) -> Result<()> {
        validate::host(host)?;
        match self.store().grant_lease(task, host, process).await? {
            Some(_) => {
                debug!(%task, host, "task opened");
                Ok(())
            }
            None => Err(GroupError::TaskAlreadyOpen(task)),
        }
    }

    /// The task's lease record (its host and process), if it is open.
    pub async fn task_lease(&self, task: TaskId) -> Result<Option<TaskLease>> {
        self.store().lease(task).await
    }

    /// The open tasks whose liveness this service's store holds (see
    /// [`GroupStore::held_tasks`]): after a vmd restart that took its lease
    /// back, the tasks of its previous run that have not resumed yet.
    pub async fn held_tasks(&self) -> Result<Vec<TaskId>> {
        self.store().held_tasks().await
    }

    /// Ends a task: removes all its memberships at once. If it `died`,
    /// frozen groups it was in become broken. Barriers of those groups are
    /// broken (by the store, in the same change).
    pub async fn close_task(&self, task: TaskId, died: bool) -> Result<()> {
        let removals = self
            .store()
            .revoke_lease(task, died)
            .await?
            .ok_or(GroupError::TaskNotFound(task))?;
        debug!(%task, died, groups = removals.len(), "task closed");
        Ok(())
    }

    /// Joins `group` (creating it if absent) and returns the instance:
    /// `instance` exactly if given, else the lowest free one.
    ///
    /// A tombstone (a broken group with no members left) counts as absent:
    /// the join replaces it with a fresh group under a new generation.
    /// A frozen group that still has members refuses the join (`Frozen`),
    /// broken or not.
    pub async fn join(
        &self,
        group: &str,
        task: TaskId,
        instance: Option<u32>,
        endpoint: Vec<u8>,
    ) -> Result<u32> {
        self.join_as(group, task, instance, endpoint, None, |_| Ok(()))
            .await
    }

    /// [`join`](Self::join) under an owner's rule. `joiner` is the task's
    /// uid and the uids it allows ([`GroupAccess`]): a group this join
    /// creates belongs to it; a join of its owner allows more (see
    /// [`GroupAccess::after_join`]). `admit` decides, from who holds the
    /// name in the store ([`Holder`]), whether the task may join; it runs
    /// on every attempt, and the compare-and-set that follows makes its
    /// decision hold (a group made or re-made by someone else meanwhile
    /// is decided again).
    pub async fn join_as<E: From<GroupError>>(
        &self,
        group: &str,
        task: TaskId,
        instance: Option<u32>,
        endpoint: Vec<u8>,
        joiner: Option<GroupAccess>,
        admit: impl Fn(Holder<'_>) -> std::result::Result<(), E> + Send + Sync,
    ) -> std::result::Result<u32, E> {
        validate::name(group)?;
        if let Some(i) = instance {
            validate::instance(i)?;
        }
        validate::endpoint(&endpoint)?;
        let lease = self
            .store()
            .lease(task)
            .await?
            .ok_or(GroupError::TaskNotFound(task))?;
        let mut member = Member {
            instance: 0,
            task,
            host: lease.host,
            endpoint,
        };

        for _ in 0..MAX_CAS_ATTEMPTS {
            let (guard, chosen) = match self.store().slots(group).await? {
                None => {
                    admit(Holder::Free)?;
                    (Guard::Absent, instance.unwrap_or(0))
                }
                // What is left of a broken job: the name is free again.
                Some(g) if g.meta.is_tombstone(g.slots.len()) => {
                    admit(Holder::Free)?;
                    (Guard::Tombstone(g.meta.revision), instance.unwrap_or(0))
                }
                Some(g) => {
                    admit(match &g.meta.access {
                        Some(a) => Holder::Owned(a),
                        None => Holder::Unowned,
                    })?;
                    if g.meta.frozen_size.is_some() {
                        return Err(GroupError::Frozen {
                            group: group.into(),
                        }
                        .into());
                    }
                    if let Some(&(i, _)) = g.slots.iter().find(|(_, t)| *t == task) {
                        return Err(GroupError::AlreadyMember {
                            group: group.into(),
                            task,
                            instance: i,
                        }
                        .into());
                    }
                    let chosen = match instance {
                        Some(want) => {
                            let at = g.slots.binary_search_by_key(&want, |s| s.0).ok();
                            if let Some(&(_, holder)) = at.and_then(|at| g.slots.get(at)) {
                                return Err(GroupError::InstanceTaken {
                                    group: group.into(),
                                    instance: want,
                                    task: holder,
                                }
                                .into());
                            }
                            want
                        }
                        None => lowest_free(&g.slots),
                    };
                    if chosen >= MAX_INSTANCE {
                        return Err(GroupError::GroupFull {
                            group: group.into(),
                            max: MAX_INSTANCE,
                        }
                        .into());
                    }
                    (Guard::Revision(g.meta.revision), chosen)
                }
            };
            member.instance = chosen;
            match self
                .store()
                .create_member(group, guard, member.clone(), lease.lease, joiner.as_ref())
                .await?
            {
                CreateOutcome::Created { generation, size } => {
                    debug!(group, %task, instance = chosen, size, generation, "joined");
                    return Ok(chosen);
                }
                CreateOutcome::LeaseGone => return Err(GroupError::TaskNotFound(task).into()),
                // Someone else changed the group first: decide again.
                CreateOutcome::Conflict => tokio::task::yield_now().await,
            }
        }
        Err(GroupError::Contention {
            group: group.into(),
            attempts: MAX_CAS_ATTEMPTS,
        }
        .into())
    }

    /// Who `group` belongs to, as its store records it: `None` when the
    /// group does not exist, is a tombstone (nobody's: the next joiner
    /// makes it anew), or was made by a task of unknown process.
    pub async fn access(&self, group: &str) -> Result<Option<GroupAccess>> {
        Ok(match self.store().slots(group).await? {
            Some(g) if !g.meta.is_tombstone(g.slots.len()) => g.meta.access,
            _ => None,
        })
    }

    /// Leaves `group`, leaving a gap at the instance; the last leave
    /// destroys the group, unless it is broken (then it stays as a
    /// tombstone). Pending barriers of the group are broken.
    pub async fn leave(&self, group: &str, task: TaskId) -> Result<()> {
        validate::name(group)?;
        match self.store().delete_member(group, task).await? {
            Lookup::Found(removal) => {
                debug!(group, %task, instance = removal.instance, "left");
                Ok(())
            }
            Lookup::NoGroup => Err(GroupError::GroupNotFound(group.into())),
            Lookup::NoEntry => Err(self.not_member(group, task).await),
        }
    }

    /// The member at `instance`.
    pub async fn gettid(&self, group: &str, instance: u32) -> Result<Member> {
        validate::name(group)?;
        validate::instance(instance)?;
        match self.store().member(group, instance).await? {
            Lookup::Found(m) => Ok(m),
            Lookup::NoGroup => Err(GroupError::GroupNotFound(group.into())),
            Lookup::NoEntry => Err(GroupError::InstanceNotFound {
                group: group.into(),
                instance,
            }),
        }
    }

    /// The instance of `task` in `group`.
    pub async fn getinst(&self, group: &str, task: TaskId) -> Result<u32> {
        validate::name(group)?;
        match self.store().membership(group, task).await? {
            Lookup::Found(m) => Ok(m.instance),
            Lookup::NoGroup => Err(GroupError::GroupNotFound(group.into())),
            Lookup::NoEntry => Err(self.not_member(group, task).await),
        }
    }

    /// Number of members of `group`.
    pub async fn gsize(&self, group: &str) -> Result<u32> {
        validate::name(group)?;
        match self.store().slots(group).await? {
            Some(g) => Ok(len_u32(g.slots.len())),
            None => Err(GroupError::GroupNotFound(group.into())),
        }
    }

    /// All groups, sorted by name.
    pub async fn list(&self) -> Result<Vec<GroupSummary>> {
        self.store().list().await
    }

    /// One page of [`list`](Self::list): at most `limit` groups whose names
    /// sort after `after` (empty: from the first), and whether more follow.
    pub async fn list_page(&self, after: &str, limit: usize) -> Result<(Vec<GroupSummary>, bool)> {
        if after.len() > crate::MAX_NAME_LEN {
            return Err(GroupError::InvalidArgument {
                what: "page token",
                reason: format!(
                    "is {} bytes long; group names have at most {}",
                    after.len(),
                    crate::MAX_NAME_LEN
                ),
            });
        }
        let limit = limit.max(1);
        // One more than asked tells whether another page follows.
        let mut page = self.store().list_page(after, limit + 1).await?;
        let more = page.len() > limit;
        page.truncate(limit);
        Ok((page, more))
    }

    /// The whole table of `group`, members sorted by instance.
    pub async fn table(&self, group: &str) -> Result<GroupTable> {
        validate::name(group)?;
        match self.store().snapshot(group).await? {
            Some(s) => Ok(to_table(s)),
            None => Err(GroupError::GroupNotFound(group.into())),
        }
    }

    /// Stream of all group changes from now on, in order.
    pub fn subscribe(&self) -> broadcast::Receiver<GroupEvent> {
        self.store().watch()
    }

    /// The precise error for "task is not in this group": an unknown task
    /// is reported as such, since that is usually the real mistake.
    pub(crate) async fn not_member(&self, group: &str, task: TaskId) -> GroupError {
        match self.store().lease(task).await {
            Ok(Some(_)) => GroupError::NotMember {
                group: group.into(),
                task,
            },
            Ok(None) => GroupError::TaskNotFound(task),
            Err(e) => e,
        }
    }
}

/// Lowest instance not in `slots` (sorted by instance, no duplicates).
fn lowest_free(slots: &[(u32, TaskId)]) -> u32 {
    // In a sorted list without gaps slot i holds instance i, so the first
    // mismatch is the first gap.
    let mut expected = 0u32;
    for &(instance, _) in slots {
        if instance != expected {
            break;
        }
        expected = expected.saturating_add(1);
    }
    expected
}

pub(crate) fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub(crate) fn to_table(s: GroupSnapshot) -> GroupTable {
    GroupTable {
        name: s.name,
        generation: s.meta.generation,
        frozen: s.meta.frozen_size.is_some(),
        broken: s.meta.broken.is_some(),
        members: s.members,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_free_finds_first_gap() {
        let t = TaskId::new_v4();
        assert_eq!(lowest_free(&[]), 0);
        assert_eq!(lowest_free(&[(0, t), (1, t), (2, t)]), 3);
        assert_eq!(lowest_free(&[(0, t), (2, t)]), 1);
        assert_eq!(lowest_free(&[(1, t), (2, t)]), 0);
    }
}

//! [`DynStore`]: a store chosen at run time (the daemon's `--store`), so
//! that [`crate::Groups`] and everything above it need not be generic.

use async_trait::async_trait;
use tokio::sync::broadcast;

use super::api::{
    BarrierEntry, CreateOutcome, GroupAccess, GroupSlots, GroupSnapshot, GroupStore, Guard,
    LeaseId, Lookup, Membership, Removal, TaskLease, TaskProcess,
};
use crate::{GroupEvent, GroupSummary, Member, Result, TaskId};

/// Any store, boxed. Every method forwards; the trait's futures are boxed
/// already, so this costs one indirect call.
pub type DynStore = Box<dyn GroupStore>;

#[async_trait]
impl GroupStore for DynStore {
    async fn grant_lease(
        &self,
        task: TaskId,
        host: &str,
        process: Option<TaskProcess>,
    ) -> Result<Option<LeaseId>> {
        (**self).grant_lease(task, host, process).await
    }
    async fn held_tasks(&self) -> Result<Vec<TaskId>> {
        (**self).held_tasks().await
    }
    async fn lease(&self, task: TaskId) -> Result<Option<TaskLease>> {
        (**self).lease(task).await
    }
    async fn revoke_lease(&self, task: TaskId, died: bool) -> Result<Option<Vec<Removal>>> {
        (**self).revoke_lease(task, died).await
    }
    async fn snapshot(&self, group: &str) -> Result<Option<GroupSnapshot>> {
        (**self).snapshot(group).await
    }
    async fn slots(&self, group: &str) -> Result<Option<GroupSlots>> {
        (**self).slots(group).await
    }
    async fn member(&self, group: &str, instance: u32) -> Result<Lookup<Member>> {
        (**self).member(group, instance).await
    }
    async fn membership(&self, group: &str, task: TaskId) -> Result<Lookup<Membership>> {
        (**self).membership(group, task).await
    }
    async fn list(&self) -> Result<Vec<GroupSummary>> {
        (**self).list().await
    }
    async fn list_page(&self, after: &str, limit: usize) -> Result<Vec<GroupSummary>> {
        (**self).list_page(after, limit).await
    }
    async fn create_member(
        &self,
        group: &str,
        guard: Guard,
        member: Member,
        lease: LeaseId,
        access: Option<&GroupAccess>,
    ) -> Result<CreateOutcome> {
        (**self)
            .create_member(group, guard, member, lease, access)
            .await
    }
    async fn delete_member(&self, group: &str, task: TaskId) -> Result<Lookup<Removal>> {
        (**self).delete_member(group, task).await
    }
    async fn freeze(&self, group: &str, revision: u64, size: u32) -> Result<bool> {
        (**self).freeze(group, revision, size).await
    }
    async fn barrier_enter(
        &self,
        group: &str,
        task: TaskId,
        count: Option<u32>,
    ) -> Result<Lookup<BarrierEntry>> {
        (**self).barrier_enter(group, task, count).await
    }
    async fn barrier_withdraw(&self, group: &str, episode: u64, task: TaskId) -> Result<bool> {
        (**self).barrier_withdraw(group, episode, task).await
    }
    fn barrier_abandon(&self, group: &str, episode: u64, task: TaskId) {
        (**self).barrier_abandon(group, episode, task)
    }
    fn watch(&self) -> broadcast::Receiver<GroupEvent> {
        (**self).watch()
    }
}

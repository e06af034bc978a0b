//! Waiting for a group to fill up and freeze (`freeze`), or for another
//! job's group to be frozen (`wait_frozen`).
//!
//! Waits are driven by the store's change stream: subscribe first, then
//! read, then sleep until an event for the group arrives, so no wakeup can
//! be missed and nothing polls. A deadline bounds the sleeping.

use std::time::Duration;

use tokio::sync::broadcast;

use crate::groups::{len_u32, to_table};
use crate::store::GroupStore;
use crate::{validate, GroupError, GroupEvent, GroupTable, Groups, Result, TaskId};

impl<S: GroupStore> Groups<S> {
    /// Waits until `group` has `size` members, then freezes it and returns
    /// its table. Idempotent for the same size.
    ///
    /// If more than `size` tasks join while this waits, the group may pass
    /// `size` between two looks; that is reported as `FreezeBelowSize`,
    /// exactly as if the extra joins had come before the call.
    ///
    /// A broken group (including a tombstone) fails with `GroupBroken`,
    /// whatever `size` is asked for: it can never be frozen again.
    pub async fn freeze(&self, group: &str, size: u32, deadline: Duration) -> Result<GroupTable> {
        validate::name(group)?;
        validate::size("freeze size", size)?;
        let mut changes = self.store().watch();
        let end = deadline_at(deadline);
        loop {
            let snap = self
                .store()
                .snapshot(group)
                .await?
                .ok_or_else(|| GroupError::GroupNotFound(group.into()))?;
            if let Some(lost) = snap.meta.broken {
                return Err(GroupError::GroupBroken {
                    group: group.into(),
                    instance: lost.instance,
                    task: lost.task,
                });
            }
            if let Some(frozen_size) = snap.meta.frozen_size {
                if frozen_size != size {
                    return Err(GroupError::FrozenAtOtherSize {
                        group: group.into(),
                        frozen_size,
                        size,
                    });
                }
                return Ok(to_table(snap));
            }
            let members = len_u32(snap.members.len());
            if members > size {
                return Err(GroupError::FreezeBelowSize {
                    group: group.into(),
                    members,
                    size,
                });
            }
            if members == size {
                if self.store().freeze(group, snap.meta.revision, size).await? {
                    tracing::info!(group, size, "group frozen");
                    let mut table = to_table(snap);
                    table.frozen = true;
                    return Ok(table);
                }
                // The group changed under us: read it again.
                continue;
            }
            next_change(&mut changes, group, end)
                .await
                .map_err(|e| e.deadline("freeze", group, deadline))?;
        }
    }

    /// Waits until `group` exists and is frozen and returns its table.
    /// Fails with `GroupBroken` if it is, or becomes, broken; that includes
    /// a tombstone, so a caller arriving after every member of the group
    /// died (an MPI launcher killing the rest of a job) fails at once
    /// instead of waiting for its deadline.
    pub async fn wait_frozen(&self, group: &str, deadline: Duration) -> Result<GroupTable> {
        self.wait_for_frozen(group, deadline, None).await
    }

    /// [`wait_frozen`](Self::wait_frozen) on behalf of `task`: a group that
    /// broke before `task` was opened belongs to an earlier run the task
    /// never knew (a crashed job whose re-run is starting), so for it the
    /// broken incarnation counts as absent and the wait goes on until a
    /// fresh generation is frozen. A group that breaks while the task
    /// lives, before or during the wait, still fails it at once.
    pub async fn wait_frozen_as(
        &self,
        task: TaskId,
        group: &str,
        deadline: Duration,
    ) -> Result<GroupTable> {
        let opened_at = self
            .store()
            .lease(task)
            .await?
            .ok_or(GroupError::TaskNotFound(task))?
            .opened_at;
        self.wait_for_frozen(group, deadline, Some(opened_at)).await
    }

    async fn wait_for_frozen(
        &self,
        group: &str,
        deadline: Duration,
        asker_opened_at: Option<u64>,
    ) -> Result<GroupTable> {
        validate::name(group)?;
        let mut changes = self.store().watch();
        let end = deadline_at(deadline);
        loop {
            if let Some(snap) = self.store().snapshot(group).await? {
                let before_asker = |seq: u64| asker_opened_at.is_some_and(|opened| seq <= opened);
                match snap.meta.broken {
                    // An earlier run's wreck: wait for its successor.
                    Some(lost) if before_asker(lost.seq) => {}
                    Some(lost) => {
                        return Err(GroupError::GroupBroken {
                            group: group.into(),
                            instance: lost.instance,
                            task: lost.task,
                        });
                    }
                    None if snap.meta.frozen_size.is_some() => return Ok(to_table(snap)),
                    None => {}
                }
            }
            next_change(&mut changes, group, end)
                .await
                .map_err(|e| e.deadline("wait_frozen", group, deadline))?;
        }
    }
}

/// The instant `deadline` from now; "never" for deadlines too long to add.
fn deadline_at(deadline: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(deadline)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

/// Why [`next_change`] returned without a change.
enum NoChange {
    Deadline,
    Failed(GroupError),
}

impl NoChange {
    fn deadline(self, op: &'static str, group: &str, waited: Duration) -> GroupError {
        match self {
            NoChange::Deadline => GroupError::DeadlineExceeded {
                op,
                group: group.into(),
                waited,
            },
            NoChange::Failed(e) => e,
        }
    }
}

/// Returns once something may have changed in `group`, or at `end`. The
/// deadline bounds only this waiting, not the reads between waits (the
/// store bounds those), so a zero deadline still gives one look.
async fn next_change(
    changes: &mut broadcast::Receiver<GroupEvent>,
    group: &str,
    end: tokio::time::Instant,
) -> std::result::Result<(), NoChange> {
    loop {
        let received = tokio::time::timeout_at(end, changes.recv())
            .await
            .map_err(|_| NoChange::Deadline)?;
        match received {
            Ok(event) if event.group == group => return Ok(()),
            Ok(_) => {}
            // Missed events might concern us: re-read to be safe.
            Err(broadcast::error::RecvError::Lagged(_)) => return Ok(()),
            Err(broadcast::error::RecvError::Closed) => {
                return Err(NoChange::Failed(GroupError::Store(
                    "change stream closed".into(),
                )))
            }
        }
    }
}

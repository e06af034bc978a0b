//! Group barriers (`pvm_barrier`).
//!
//! The episodes live in the store ([`crate::store::barrier`]), not here:
//! members of one group that enter through different daemons over one
//! replicated store (several vmds on one etcd) meet, and the change that
//! removes a member breaks its group's episode atomically. This module
//! turns the store's answers into PVM's: one episode per group, a count
//! fixed by the first entry (a caller asking for another count fails with
//! `BarrierCountMismatch`), waiters released all at once, `AlreadyInBarrier`
//! for a task already waiting.
//!
//! An episode is broken, releasing every waiter with `BarrierBroken`, when
//! any member leaves or dies, so a barrier can never hang on a member that
//! is gone. A call that ends without an outcome (its deadline passed, or it
//! was dropped) withdraws its entry, so an abandoned call never counts.

use std::time::Duration;

use crate::store::{BarrierEntry, BarrierOutcome, BarrierWait, GroupStore, Lookup};
use crate::{validate, GroupError, Groups, Result, TaskId};

/// Withdraws the entry if the barrier call is dropped while it counts
/// (the client went away, or the withdrawal after a deadline was itself
/// cut short), so an abandoned call never counts.
struct Abandon<'a, S: GroupStore> {
    store: &'a S,
    group: &'a str,
    episode: u64,
    task: TaskId,
    armed: bool,
}

impl<S: GroupStore> Drop for Abandon<'_, S> {
    fn drop(&mut self) {
        if self.armed {
            self.store
                .barrier_abandon(self.group, self.episode, self.task);
        }
    }
}

impl<S: GroupStore> Groups<S> {
    /// Waits until `count` members (default: the group size at the first
    /// entry of this episode) have entered the barrier of `group`.
    pub async fn barrier(
        &self,
        group: &str,
        task: TaskId,
        count: Option<u32>,
        deadline: Duration,
    ) -> Result<()> {
        validate::name(group)?;
        if let Some(c) = count {
            validate::size("barrier count", c)?;
        }
        let entry = match self.store().barrier_enter(group, task, count).await? {
            Lookup::Found(entry) => entry,
            Lookup::NoGroup => return Err(GroupError::GroupNotFound(group.into())),
            Lookup::NoEntry => return Err(self.not_member(group, task).await),
        };
        let BarrierWait {
            episode,
            mut outcome,
        } = match entry {
            BarrierEntry::Released => return Ok(()),
            BarrierEntry::Waiting(wait) => wait,
            BarrierEntry::CountMismatch { expected } => {
                return Err(GroupError::BarrierCountMismatch {
                    group: group.into(),
                    expected,
                    got: count.unwrap_or(expected),
                })
            }
            BarrierEntry::AlreadyWaiting => {
                return Err(GroupError::AlreadyInBarrier {
                    group: group.into(),
                    task,
                })
            }
        };
        let mut guard = Abandon {
            store: self.store(),
            group,
            episode,
            task,
            armed: true,
        };
        let ended = match tokio::time::timeout(deadline, &mut outcome).await {
            Ok(ended) => ended.ok(),
            Err(_) => {
                // Withdraw before reporting the deadline: either we were
                // still waiting (and no longer count) or the episode ended
                // and its outcome is in `outcome` by now.
                let was_waiting = self.store().barrier_withdraw(group, episode, task).await?;
                guard.armed = false;
                if was_waiting {
                    return Err(GroupError::DeadlineExceeded {
                        op: "barrier",
                        group: group.into(),
                        waited: deadline,
                    });
                }
                outcome.try_recv().ok()
            }
        };
        guard.armed = false;
        match ended {
            Some(BarrierOutcome::Released) => Ok(()),
            Some(BarrierOutcome::Broken {
                instance,
                task,
                died,
            }) => Err(GroupError::BarrierBroken {
                group: group.into(),
                instance,
                task,
                died,
            }),
            None => Err(GroupError::Store("barrier episode abandoned".into())),
        }
    }
}

//! Group barriers (`pvm_barrier`).
//!
//! Barrier episodes live in the semantic layer's memory, not in the store:
//! with one daemon that is all there is. A multi-host (etcd) deployment
//! would have to keep episodes in the store so that members entering
//! through different daemons meet; the shape (one episode per group, a
//! count fixed by the first entry, waiters released all at once) stays.
//!
//! An episode is broken, releasing every waiter with `BarrierBroken`, when
//! any member leaves or dies, so a barrier can never hang on a member that
//! is gone.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;
use tracing::debug;

use crate::store::{GroupStore, Lookup, Membership, Removal};
use crate::{validate, GroupError, Groups, Result, TaskId};

#[derive(Default)]
pub(crate) struct Barriers {
    episodes: Mutex<HashMap<String, Episode>>,
    last_id: AtomicU64,
}

/// One barrier round of one group. Never empty: the last waiter to
/// withdraw removes it.
struct Episode {
    id: u64,
    generation: u64,
    count: u32,
    waiters: HashMap<TaskId, oneshot::Sender<Result<()>>>,
}

enum Entered {
    /// This entry completed the barrier.
    Released,
    Waiting {
        episode: u64,
        rx: oneshot::Receiver<Result<()>>,
    },
}

impl Barriers {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Episode>> {
        self.episodes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn enter(
        &self,
        group: &str,
        task: TaskId,
        m: Membership,
        count: Option<u32>,
    ) -> Result<Entered> {
        let mut episodes = self.lock();
        let ep = match episodes.get_mut(group) {
            // An episode left over from an earlier incarnation of the group
            // cannot have live waiters (destruction breaks it); start anew.
            Some(ep) if ep.generation == m.generation => ep,
            _ => {
                let ep = Episode {
                    id: self.last_id.fetch_add(1, Ordering::Relaxed) + 1,
                    generation: m.generation,
                    count: count.unwrap_or(m.size),
                    waiters: HashMap::new(),
                };
                episodes.insert(group.to_string(), ep);
                match episodes.get_mut(group) {
                    Some(ep) => ep,
                    None => return Err(GroupError::Store("barrier table lost an entry".into())),
                }
            }
        };
        if let Some(got) = count {
            if got != ep.count {
                return Err(GroupError::BarrierCountMismatch {
                    group: group.into(),
                    expected: ep.count,
                    got,
                });
            }
        }
        if ep.waiters.contains_key(&task) {
            return Err(GroupError::AlreadyInBarrier {
                group: group.into(),
                task,
            });
        }
        if len_u64(ep.waiters.len()) + 1 >= u64::from(ep.count) {
            if let Some(ep) = episodes.remove(group) {
                debug!(group, count = ep.count, "barrier complete");
                for (_, tx) in ep.waiters {
                    // A waiter that went away meanwhile does not matter.
                    let _ = tx.send(Ok(()));
                }
            }
            return Ok(Entered::Released);
        }
        let (tx, rx) = oneshot::channel();
        ep.waiters.insert(task, tx);
        Ok(Entered::Waiting { episode: ep.id, rx })
    }

    /// Takes `task` out of episode `id`; `false` if it was no longer
    /// waiting there (released or broken meanwhile).
    fn withdraw(&self, group: &str, id: u64, task: TaskId) -> bool {
        let mut episodes = self.lock();
        let Some(ep) = episodes.get_mut(group) else {
            return false;
        };
        if ep.id != id {
            return false;
        }
        let was_waiting = ep.waiters.remove(&task).is_some();
        if ep.waiters.is_empty() {
            episodes.remove(group);
        }
        was_waiting
    }

    /// A member left or died: release every waiter of its group with an
    /// error naming it.
    pub(crate) fn break_group(&self, gone: &Removal, died: bool) {
        let Some(ep) = self.lock().remove(&gone.group) else {
            return;
        };
        debug!(group = %gone.group, instance = gone.instance, "barrier broken");
        for (_, tx) in ep.waiters {
            let _ = tx.send(Err(GroupError::BarrierBroken {
                group: gone.group.clone(),
                instance: gone.instance,
                task: gone.task,
                died,
            }));
        }
    }
}

fn len_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Withdraws the waiter if the barrier call is dropped (deadline, or the
/// client went away), so an abandoned call never counts.
struct Withdraw<'a> {
    barriers: &'a Barriers,
    group: &'a str,
    episode: u64,
    task: TaskId,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.barriers.withdraw(self.group, self.episode, self.task);
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
        let m = self.member_of(group, task).await?;
        let barriers = &self.shared.barriers;
        let (episode, mut rx) = match barriers.enter(group, task, m, count)? {
            Entered::Released => return Ok(()),
            Entered::Waiting { episode, rx } => (episode, rx),
        };
        let guard = Withdraw {
            barriers,
            group,
            episode,
            task,
        };

        // A leave that completed between the membership check and our entry
        // did not see us; check again now that we are visible.
        match self.member_of(group, task).await {
            Ok(now) if now.generation == m.generation => {}
            Ok(_) => {
                return Err(GroupError::NotMember {
                    group: group.into(),
                    task,
                })
            }
            Err(e) => return Err(e),
        }

        let outcome = tokio::time::timeout(deadline, &mut rx).await;
        // Withdraw before looking at a timeout: either we are still waiting
        // (and no longer count) or a result was sent and is in `rx`.
        drop(guard);
        match outcome {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(GroupError::Store("barrier episode abandoned".into())),
            Err(_) => match rx.try_recv() {
                Ok(result) => result,
                Err(_) => Err(GroupError::DeadlineExceeded {
                    op: "barrier",
                    group: group.into(),
                    waited: deadline,
                }),
            },
        }
    }

    async fn member_of(&self, group: &str, task: TaskId) -> Result<Membership> {
        match self.store().membership(group, task).await? {
            Lookup::Found(m) => Ok(m),
            Lookup::NoGroup => Err(GroupError::GroupNotFound(group.into())),
            Lookup::NoEntry => Err(self.not_member(group, task).await),
        }
    }
}

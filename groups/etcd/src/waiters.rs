//! This store's callers waiting at barriers ([`Waiters`]): registered by
//! an entry ([`crate::barrier`]) before it commits, and told how their
//! episode ended by the change-log watch ([`crate::watch`]). A module of
//! its own, below [`crate::shared::Core`] that holds it, so that the
//! barrier's transactions (methods of `Core`) and the watch both use it
//! without a cycle.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use isthmus_groups::store::BarrierOutcome;
use isthmus_groups::TaskId;
use tokio::sync::oneshot;

use crate::records::{EventRec, KindRec};

/// One local caller waiting in an episode.
pub(crate) struct Waiter {
    pub(crate) token: u64,
    pub(crate) episode: u64,
    pub(crate) task: TaskId,
    /// The meta revision its entry compared: removals after it break it.
    since: u64,
    tx: oneshot::Sender<BarrierOutcome>,
}

/// Which waiters of a group a log record ends.
enum Ends {
    /// A removal at this revision: the entries made before it.
    EnteredBefore(u64),
    /// A release: the waiters of this episode.
    Episode(u64),
}

impl Ends {
    fn ends(&self, w: &Waiter) -> bool {
        match *self {
            Ends::EnteredBefore(revision) => w.since < revision,
            Ends::Episode(id) => w.episode == id,
        }
    }
}

/// This store's waiting callers, by group, fed by the change-log watch.
#[derive(Default)]
pub(crate) struct Waiters {
    inner: Mutex<WaitersInner>,
}

#[derive(Default)]
struct WaitersInner {
    last_token: u64,
    by_group: HashMap<String, Vec<Waiter>>,
}

impl Waiters {
    fn lock(&self) -> MutexGuard<'_, WaitersInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn add(
        &self,
        group: &str,
        episode: u64,
        task: TaskId,
        since: u64,
    ) -> (u64, oneshot::Receiver<BarrierOutcome>) {
        let (tx, rx) = oneshot::channel();
        let mut inner = self.lock();
        inner.last_token += 1;
        let token = inner.last_token;
        inner
            .by_group
            .entry(group.to_string())
            .or_default()
            .push(Waiter {
                token,
                episode,
                task,
                since,
                tx,
            });
        (token, rx)
    }

    /// Drops the waiters of `group` that `gone` picks; `true` if any was
    /// still there (no outcome had reached it).
    pub(crate) fn remove(&self, group: &str, gone: impl Fn(&Waiter) -> bool) -> bool {
        let mut inner = self.lock();
        let Some(list) = inner.by_group.get_mut(group) else {
            return false;
        };
        let before = list.len();
        list.retain(|w| !gone(w));
        let removed = list.len() < before;
        if list.is_empty() {
            inner.by_group.remove(group);
        }
        removed
    }

    /// Hands the outcomes in one change-log entry (at `revision`) to the
    /// waiters they end.
    pub(crate) fn on_log(&self, revision: u64, recs: &[EventRec]) {
        let mut inner = self.lock();
        if inner.by_group.is_empty() {
            return;
        }
        for rec in recs {
            let Some(list) = inner.by_group.get_mut(&rec.group) else {
                continue;
            };
            let (outcome, ends) = match (rec.kind, rec.member, rec.episode) {
                (KindRec::Left | KindRec::MemberDied, Some((instance, task)), _) => (
                    BarrierOutcome::Broken {
                        instance,
                        task: TaskId(task),
                        died: rec.kind == KindRec::MemberDied,
                    },
                    Ends::EnteredBefore(revision),
                ),
                (KindRec::BarrierReleased, _, Some(id)) => {
                    (BarrierOutcome::Released, Ends::Episode(id))
                }
                _ => continue,
            };
            let (ended, waiting): (Vec<Waiter>, Vec<Waiter>) =
                std::mem::take(list).into_iter().partition(|w| ends.ends(w));
            *list = waiting;
            for w in ended {
                // A caller that went away meanwhile does not matter.
                let _ = w.tx.send(outcome.clone());
            }
            if list.is_empty() {
                inner.by_group.remove(&rec.group);
            }
        }
    }
}

//! Barrier episodes in etcd, so that members entering through different
//! vmds meet.
//!
//! `P/b/<group>` holds the group's open episode ([`BarrierRec`]); it exists
//! only while someone waits. Every change to it is a transaction:
//!
//! * **Entry** compares the group meta's mod-revision (so the task is a
//!   member at that revision, and no member has left since) and the
//!   episode key's, and writes the episode with the task added.
//! * **Completion** (the entry that reaches the count) deletes the key and
//!   writes a `BarrierReleased` record to the change log in the same
//!   transaction.
//! * **Breaking**: every transaction that removes a member (leave, death,
//!   expiry: `Core::remove_one`) deletes the key; its `Left`/`MemberDied`
//!   log record is what breaks the waiters.
//! * **Withdrawal** compares the episode key's mod-revision and writes the
//!   episode without the task (or deletes it if nobody is left).
//!
//! Each store's waiters hear the outcome from the change-log watch the
//! store already runs ([`crate::watch`]), in revision order: a
//! `BarrierReleased` releases the local waiters of that episode; a removal
//! at a revision after the meta revision an entry compared breaks it (no
//! removal can fall between that revision and the entry's commit, since
//! the entry compared it). Waiters are registered before their entry
//! commits, so no outcome can pass unheard.

use std::sync::Arc;

use etcd_client::{Compare, CompareOp, GetOptions, KeyValue, Txn, TxnOp};
use isthmus_groups::store::barrier::{self, Episode, Step};
use isthmus_groups::store::{BarrierEntry, BarrierOutcome, BarrierWait, Lookup, Membership};
use isthmus_groups::{GroupError, Result, TaskId};
use tracing::{debug, warn};

use crate::records::{gets, nth, rev, BarrierRec, EventRec, KindRec};
use crate::shared::Core;
use crate::store::{contention, decode_meta, etcd_err, Change, MAX_ATTEMPTS};
use crate::waiters::Waiter;

/// The episode in a read of the episode key, if any.
fn episode_of(kv: Option<&KeyValue>) -> Result<Option<Episode>> {
    kv.map(|kv| BarrierRec::decode(kv.key(), kv.value()).map(BarrierRec::episode))
        .transpose()
}

/// The compare that a change of the episode key read as `kv` needs.
fn unchanged(key: &str, kv: Option<&KeyValue>) -> Compare {
    match kv {
        Some(kv) => Compare::mod_revision(key, CompareOp::Equal, kv.mod_revision()),
        None => Compare::version(key, CompareOp::Equal, 0),
    }
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> i64 {
    header.map(|h| h.revision()).unwrap_or(0)
}

impl Core {
    pub(crate) async fn barrier_enter(
        self: &Arc<Self>,
        group: &str,
        task: TaskId,
        count: Option<u32>,
    ) -> Result<Lookup<BarrierEntry>> {
        self.settle_abandoned().await;
        let meta_key = self.keys.meta(group);
        let key = self.keys.barrier(group);
        for _ in 0..MAX_ATTEMPTS {
            let read = Txn::new().and_then([
                TxnOp::get(meta_key.clone(), None),
                TxnOp::get(key.clone(), None),
            ]);
            let resp = self
                .txn(read)
                .await
                .map_err(etcd_err("reading a barrier"))?;
            let read_at = header_revision(resp.header());
            let sets = gets(&resp);
            let Some(kv) = nth(&sets, 0).first() else {
                return Ok(Lookup::NoGroup);
            };
            let (r, rec) = decode_meta(kv)?;
            // (Seen at its own revision: one the replica reaches.)
            self.remember(group, r, Some((r, &rec)));
            let Some(instance) = rec.instance_of(task) else {
                return Ok(Lookup::NoEntry);
            };
            let m = Membership {
                instance,
                size: rec.size(),
                generation: rec.meta(r).generation,
            };
            let current = nth(&sets, 1).first();
            let mut slot = episode_of(current)?;
            // Two episodes of a group never share the revision of the read
            // that opened them: one ends (a write) before the next is read.
            let step = barrier::enter(&mut slot, m, task, count, || rev(read_at));
            let mut change = Change {
                compares: vec![
                    Compare::mod_revision(
                        meta_key.clone(),
                        CompareOp::Equal,
                        i64::try_from(r).unwrap_or(i64::MAX),
                    ),
                    unchanged(&key, current),
                ],
                ..Change::default()
            };
            let (episode, completes) = match step {
                Step::CountMismatch { expected } => {
                    return Ok(Lookup::Found(BarrierEntry::CountMismatch { expected }))
                }
                Step::AlreadyWaiting => return Ok(Lookup::Found(BarrierEntry::AlreadyWaiting)),
                // Nobody waits (a count of one): nothing to write.
                Step::Complete(_) if current.is_none() => {
                    return Ok(Lookup::Found(BarrierEntry::Released))
                }
                Step::Complete(ep) => {
                    change.ops.push(TxnOp::delete(key.clone(), None));
                    change.events.push(EventRec {
                        kind: KindRec::BarrierReleased,
                        group: group.to_string(),
                        member: None,
                        size: m.size,
                        broken: false,
                        episode: Some(ep.id),
                    });
                    (ep.id, true)
                }
                Step::Waiting { id } => {
                    let Some(ep) = &slot else {
                        return Err(GroupError::Store("barrier episode lost on entry".into()));
                    };
                    change
                        .ops
                        .push(TxnOp::put(key.clone(), BarrierRec::of(ep).encode(), None));
                    (id, false)
                }
            };
            // Registered before the commit, so no outcome passes unheard.
            let (token, mut outcome) = self.barriers.add(group, episode, task, r);
            let mine = |w: &Waiter| w.token == token;
            // A call dropped or failing from here until it returns (its
            // caller's own guard exists only then) may have had its entry
            // applied: it must not count. Seen under load with etcd: a call
            // aborted in the middle of its commit left its entry, and the
            // next member's barrier completed with it.
            let dropped = (!completes).then(|| Cancelled {
                core: Arc::clone(self),
                group,
                episode,
                task,
                armed: true,
            });
            let committed = match self.commit(change, "entering a barrier").await {
                Ok(c) => c,
                Err(e) => {
                    // `dropped` withdraws the entry, which may have been applied.
                    self.barriers.remove(group, mine);
                    return Err(e);
                }
            };
            let entered = committed.succeeded()
                || (committed.repeated
                    && self
                        .entry_applied(group, (episode, task, token), &key)
                        .await?);
            if let Some(d) = dropped {
                d.disarm();
            }
            if entered && completes {
                // The log's release reached our registration too, unless
                // a lost answer hides that a removal broke the episode.
                self.barriers.remove(group, mine);
                if committed.succeeded()
                    || matches!(outcome.try_recv(), Ok(BarrierOutcome::Released))
                {
                    debug!(group, episode, "barrier complete");
                    return Ok(Lookup::Found(BarrierEntry::Released));
                }
            } else if entered {
                return Ok(Lookup::Found(BarrierEntry::Waiting(BarrierWait {
                    episode,
                    outcome,
                })));
            } else {
                self.barriers.remove(group, mine);
            }
            // The group or its episode changed first: decide again.
            tokio::task::yield_now().await;
        }
        Err(contention("entering a barrier"))
    }

    /// After a repeated entry failed its compares: whether an earlier
    /// attempt (whose answer was lost) got in. It did if the task waits
    /// in the episode now, or if the episode already ended and its
    /// outcome reached the entry's registration. (An episode broken after
    /// a lost entry reads as entered: the member left as it entered.)
    async fn entry_applied(
        &self,
        group: &str,
        (episode, task, token): (u64, TaskId, u64),
        key: &str,
    ) -> Result<bool> {
        let (current, logged) = self.read_episode(key).await?;
        let now = episode_of(current.as_ref())?;
        if now.is_some_and(|ep| ep.id == episode && ep.arrived.contains(&task)) {
            return Ok(true);
        }
        self.wait_delivered(logged).await;
        Ok(!self.barriers.remove(group, |w| w.token == token))
    }

    pub(crate) async fn barrier_withdraw(
        &self,
        group: &str,
        episode: u64,
        task: TaskId,
    ) -> Result<bool> {
        let key = self.keys.barrier(group);
        let this = |w: &Waiter| w.episode == episode && w.task == task;
        for _ in 0..MAX_ATTEMPTS {
            let (current, logged) = self.read_episode(&key).await?;
            let current = current.as_ref();
            let mut slot = episode_of(current)?;
            if !barrier::withdraw(&mut slot, episode, task) {
                // The episode ended before this read, by a change that
                // wrote the log: its outcome is in what the watch delivers
                // up to the log's last revision.
                self.wait_delivered(logged).await;
                // Still registered: no outcome came (an earlier attempt of
                // ours withdrew, its answer lost), so it did not count.
                return Ok(self.barriers.remove(group, this));
            }
            let op = match &slot {
                Some(ep) => TxnOp::put(key.clone(), BarrierRec::of(ep).encode(), None),
                None => TxnOp::delete(key.clone(), None),
            };
            let change = Change {
                compares: vec![unchanged(&key, current)],
                ops: vec![op],
                events: Vec::new(),
            };
            if self
                .commit(change, "withdrawing from a barrier")
                .await?
                .succeeded()
            {
                self.barriers.remove(group, this);
                return Ok(true);
            }
            // The episode changed first: look again.
        }
        Err(contention("withdrawing from a barrier"))
    }

    /// The episode key, and the revision of the change log's last entry
    /// (0 if none): how far the watch must have delivered for every
    /// outcome before this read to be known. (Not the read's own revision:
    /// the newest change may be one the log does not carry, such as an
    /// entry, and the watch would never report it.)
    async fn read_episode(&self, key: &str) -> Result<(Option<KeyValue>, i64)> {
        let read = Txn::new().and_then([
            TxnOp::get(key, None),
            TxnOp::get(self.keys.log(), Some(GetOptions::new().with_keys_only())),
        ]);
        let resp = self
            .txn(read)
            .await
            .map_err(etcd_err("reading a barrier"))?;
        let mut sets = gets(&resp).into_iter();
        let current = sets.next().and_then(|kvs| kvs.into_iter().next());
        let logged = sets
            .next()
            .and_then(|kvs| kvs.first().map(KeyValue::mod_revision))
            .unwrap_or(0);
        Ok((current, logged))
    }

    /// Waits (at most a request's deadline) until this store's
    /// withdrawals of abandoned calls are done, so that on one store an
    /// abandoned call never counts, as in memory.
    async fn settle_abandoned(&self) {
        let mut pending = self.abandoning.subscribe();
        let settled = pending.wait_for(|n| *n == 0);
        if tokio::time::timeout(self.request_timeout, settled)
            .await
            .is_err()
        {
            warn!("withdrawals of abandoned barrier calls are slow; entering anyway");
        }
    }
}

/// An entering call's entry, withdrawn in the background if the call is
/// dropped (or fails) before it returns, unless disarmed.
struct Cancelled<'a> {
    core: Arc<Core>,
    group: &'a str,
    episode: u64,
    task: TaskId,
    armed: bool,
}

impl Cancelled<'_> {
    /// The call goes on knowing what became of its entry.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Cancelled<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.core.abandon(self.group, self.episode, self.task);
        }
    }
}

/// Counts one abandoned call's withdrawal in `Core::abandoning` while it
/// runs (also if its task is cancelled).
struct Abandoning(Arc<Core>);

impl Drop for Abandoning {
    fn drop(&mut self) {
        self.0.abandoning.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Core {
    /// Withdraws in the background (the caller cannot wait).
    pub(crate) fn abandon(self: &Arc<Self>, group: &str, episode: u64, task: TaskId) {
        let core = Arc::clone(self);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            warn!(group, %task, "a barrier call was dropped outside a runtime; its entry stays until the episode ends");
            return;
        };
        core.abandoning.send_modify(|n| *n += 1);
        let pending = Abandoning(core);
        let group = group.to_string();
        runtime.spawn(async move {
            if let Err(e) = pending.0.barrier_withdraw(&group, episode, task).await {
                warn!(group, %task, error = %e, "withdrawing an abandoned barrier call");
            }
            drop(pending);
        });
    }
}

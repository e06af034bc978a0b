//! Barrier episodes as the store keeps them: the state of one group's
//! current round and the one rule that changes it, shared by every store so
//! that each applies it inside its own atomic change (the in-memory store
//! under its lock, etcd in a transaction on the episode's key).
//!
//! An episode is open while at least one member waits; it ends when the
//! count is reached (released), when a member leaves or dies (broken, by
//! the same change that removes the member), or when its last waiter
//! withdraws. The entry that completes the count is not recorded: the
//! episode simply ends.

use super::api::Membership;
// What a barrier entry returns is part of the store's contract (`api`);
// re-exported so that `store::barrier::BarrierEntry` keeps naming it.
pub use super::api::{BarrierEntry, BarrierOutcome, BarrierWait};
use crate::TaskId;

/// One open barrier round of one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Episode {
    /// Unique per episode within the store (what a withdrawal names).
    pub id: u64,
    /// The incarnation of the group the episode belongs to.
    pub generation: u64,
    /// Entries that release the episode, fixed by its first entry.
    pub count: u32,
    /// Members waiting, in order of entry; fewer than `count`, so bounded
    /// by it (and by the group's size: only members enter, once each).
    pub arrived: Vec<TaskId>,
}

/// What one entry did to the episode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The episode waits for `expected` entries; the entry asked for
    /// another count and changed nothing.
    CountMismatch { expected: u32 },
    /// The task is already waiting in this episode; nothing changed.
    AlreadyWaiting,
    /// This entry completed the count: the episode (here as it was before
    /// the entry) is over and its waiters are released.
    Complete(Episode),
    /// The task now waits in episode `id`.
    Waiting { id: u64 },
}

/// Enters `task`, a member described by `m`, into the episode in `slot`,
/// opening one (count: `count`, else the group's size) if there is none
/// or it belongs to an earlier incarnation of the group. `new_id` names a
/// new episode. `slot` is left empty when the episode completes.
pub fn enter(
    slot: &mut Option<Episode>,
    m: Membership,
    task: TaskId,
    count: Option<u32>,
    new_id: impl FnOnce() -> u64,
) -> Step {
    let ep = match slot.take() {
        // An episode of an earlier incarnation cannot have live waiters
        // (removing its members ended it); start anew.
        Some(ep) if ep.generation == m.generation => ep,
        _ => Episode {
            id: new_id(),
            generation: m.generation,
            count: count.unwrap_or(m.size),
            arrived: Vec::new(),
        },
    };
    if let Some(got) = count {
        if got != ep.count {
            let expected = ep.count;
            *slot = keep(ep);
            return Step::CountMismatch { expected };
        }
    }
    if ep.arrived.contains(&task) {
        *slot = Some(ep);
        return Step::AlreadyWaiting;
    }
    let arrived = u64::try_from(ep.arrived.len()).unwrap_or(u64::MAX);
    if arrived + 1 >= u64::from(ep.count) {
        return Step::Complete(ep);
    }
    let id = ep.id;
    let mut ep = ep;
    ep.arrived.push(task);
    *slot = Some(ep);
    Step::Waiting { id }
}

/// An episode nobody waits in is no episode.
fn keep(ep: Episode) -> Option<Episode> {
    (!ep.arrived.is_empty()).then_some(ep)
}

/// Takes `task` out of episode `id` in `slot`, emptying the slot if nobody
/// is left; `false` if it was not waiting there (the episode ended).
pub fn withdraw(slot: &mut Option<Episode>, id: u64, task: TaskId) -> bool {
    let Some(mut ep) = slot.take() else {
        return false;
    };
    if ep.id != id {
        *slot = Some(ep);
        return false;
    }
    let before = ep.arrived.len();
    ep.arrived.retain(|t| *t != task);
    let was_waiting = ep.arrived.len() < before;
    *slot = keep(ep);
    was_waiting
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(size: u32, generation: u64) -> Membership {
        Membership {
            instance: 0,
            size,
            generation,
        }
    }

    #[test]
    fn count_is_fixed_by_the_first_entry_and_completion_empties_the_slot() {
        let (a, b, c) = (TaskId::new_v4(), TaskId::new_v4(), TaskId::new_v4());
        let mut slot = None;
        let m = member(3, 1);
        assert_eq!(enter(&mut slot, m, a, None, || 7), Step::Waiting { id: 7 });
        assert_eq!(
            enter(&mut slot, m, b, Some(2), || 8),
            Step::CountMismatch { expected: 3 }
        );
        assert_eq!(enter(&mut slot, m, a, None, || 8), Step::AlreadyWaiting);
        assert_eq!(enter(&mut slot, m, b, None, || 8), Step::Waiting { id: 7 });
        let Step::Complete(done) = enter(&mut slot, m, c, Some(3), || 8) else {
            panic!("the third entry completes");
        };
        assert_eq!(done.arrived, vec![a, b]);
        assert_eq!(slot, None);
    }

    #[test]
    fn a_stale_episode_is_replaced_and_the_last_withdrawal_ends_it() {
        let (a, b) = (TaskId::new_v4(), TaskId::new_v4());
        // An episode of another incarnation of the group.
        let mut slot = Some(Episode {
            id: 1,
            generation: 0,
            count: 5,
            arrived: vec![b],
        });
        assert_eq!(
            enter(&mut slot, member(2, 1), a, Some(2), || 2),
            Step::Waiting { id: 2 }
        );
        assert!(!withdraw(&mut slot, 1, a), "another episode");
        assert!(withdraw(&mut slot, 2, a));
        assert_eq!(slot, None);
        assert!(!withdraw(&mut slot, 2, a));
        assert_eq!(enter(&mut slot, member(1, 1), a, None, || 3), {
            Step::Complete(Episode {
                id: 3,
                generation: 1,
                count: 1,
                arrived: vec![],
            })
        });
    }
}

//! The storage contract under the group semantics.
//!
//! The trait is shaped like etcd so that a replicated store can replace
//! [`MemoryStore`] without touching [`crate::Groups`]:
//!
//! * every group has a `revision` that changes with every change to it
//!   (etcd: the mod-revision of a per-group meta key rewritten by each
//!   transaction), and mutations are compare-and-set against it; the
//!   semantic layer reads a snapshot, decides, and retries on conflict;
//! * memberships are bound to the task's liveness lease: revoking the lease
//!   removes them all at once (etcd: keys attached to a lease);
//! * every change is published, in order, on [`GroupStore::watch`] with a
//!   strictly increasing `seq` (etcd: the watch stream's revisions).
//!
//! Rules that need no read-modify-write (group creation on first join,
//! destruction on last leave, marking frozen groups broken when a member
//! dies, keeping a broken group as a tombstone when it empties) are
//! applied by the store inside the same atomic change.
//!
//! A *tombstone* is an ordinary group record with no members whose
//! `broken` is set (and so is `frozen_size`): what is left of a broken
//! group once its last member has gone. It keeps its generation and
//! revision, so replacing it on a later join is a plain CAS on that
//! revision ([`Guard::Tombstone`]); in etcd, the per-group meta key simply
//! stays when the last member key goes.
//!
//! Barrier episodes ([`barrier`]) live in the store too, so that members
//! entering through different stores over the same data (several vmds on
//! one etcd) meet: an entry is atomic with the membership it relies on, and
//! the change that removes a member breaks its group's episode.

mod api;
pub mod barrier;
mod dynamic;
mod memory;

pub use api::{
    BarrierEntry, BarrierOutcome, BarrierWait, CreateOutcome, GroupAccess, GroupMeta, GroupSlots,
    GroupSnapshot, GroupStore, Guard, Holder, LeaseId, Lookup, LostMember, Membership, Removal,
    TaskLease, TaskProcess, MAX_ALLOWED,
};
pub use dynamic::DynStore;
pub use memory::{Counters, ImageError, MemoryStore, StoreImage};

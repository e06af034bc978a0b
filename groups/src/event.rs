//! Change notifications: what subscribers of `Groups::subscribe` receive.
//!
//! Events are produced by the store at the moment a change is applied, so
//! their order is the order of the changes and `seq` strictly increases.

use crate::TaskId;

/// What changed: the clients' kinds, shared (a client's event and the
/// service's differ only in how they name the member and the sequence).
pub use isthmus_types::group::GroupEventKind;

/// One change to one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupEvent {
    /// Strictly increasing across all groups (the store's revision).
    pub seq: u64,
    pub kind: GroupEventKind,
    pub group: String,
    /// The member concerned (Joined, Left, MemberDied).
    pub instance: Option<u32>,
    pub task: Option<TaskId>,
    /// Group size after the change (0 for Destroyed).
    pub size: u32,
    /// Whether the group is broken after the change.
    pub group_broken: bool,
}

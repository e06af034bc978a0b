//! Groups as a vmd shows them to its clients (the console, tools): tables,
//! summaries and change notifications. These are views of what the group
//! service (`isthmus-groups`) holds; a task is named by the id the vmd gave
//! it (a UUID in text), so that clients need not know the store's types.

/// One member of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub instance: u32,
    /// The task's id, as the vmd handed it out.
    pub task: String,
    /// The host the task runs on.
    pub host: String,
    /// The opaque record the task published when joining (bridge addresses).
    pub endpoint: Vec<u8>,
}

/// A group's whole table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupTable {
    pub name: String,
    /// Changes every time a group of this name is created anew.
    pub generation: u64,
    pub frozen: bool,
    /// A member of the frozen group died.
    pub broken: bool,
    /// Sorted by instance.
    pub members: Vec<Member>,
}

/// One line of a group listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSummary {
    pub name: String,
    pub size: u32,
    pub frozen: bool,
    pub broken: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupEventKind {
    Joined,
    Left,
    Frozen,
    Destroyed,
    MemberDied,
}

impl GroupEventKind {
    /// Whether events of this kind name the member concerned.
    pub fn names_member(self) -> bool {
        matches!(
            self,
            GroupEventKind::Joined | GroupEventKind::Left | GroupEventKind::MemberDied
        )
    }
}

/// One change to one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupEvent {
    pub kind: GroupEventKind,
    pub group: String,
    /// The member concerned (Joined, Left, MemberDied).
    pub member: Option<GroupEventMember>,
    /// The group's size after the change.
    pub size: u32,
    /// The frozen group broke (MemberDied).
    pub group_broken: bool,
}

/// The member a [`GroupEvent`] is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupEventMember {
    pub instance: u32,
    pub task: String,
}

/// What a task's session hears about the groups it follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEvent {
    /// A change to a followed group.
    Group(GroupEvent),
    /// The stream to the vmd broke and was resumed, or the vmd dropped
    /// events for this session: changes may have been missed, so any
    /// table the listener holds may be stale.
    Lost,
}

impl SessionEvent {
    /// The group change, unless events were lost.
    pub fn group(&self) -> Option<&GroupEvent> {
        match self {
            SessionEvent::Group(e) => Some(e),
            SessionEvent::Lost => None,
        }
    }
}

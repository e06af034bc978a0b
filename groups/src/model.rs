//! Plain data returned by queries: members, whole tables, summaries.
//!
//! A summary is the same for the service and its clients, so it is
//! `isthmus-types`' own; a member and a table name their task by its
//! [`TaskId`] here (clients see it as text) and so stay the service's.

use serde::{Deserialize, Serialize};

use crate::TaskId;

/// One member of a group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub instance: u32,
    pub task: TaskId,
    /// Host the task was opened on (from `open_task`).
    pub host: String,
    /// Opaque record the task published when joining (e.g. an MPI port).
    pub endpoint: Vec<u8>,
}

/// A consistent snapshot of a whole group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupTable {
    pub name: String,
    /// Unique per creation of the group: a group destroyed and re-created
    /// under the same name gets a new generation.
    pub generation: u64,
    pub frozen: bool,
    pub broken: bool,
    /// Sorted by instance.
    pub members: Vec<Member>,
}

/// One line of `list()`: the clients' type, shared.
pub use isthmus_types::group::GroupSummary;

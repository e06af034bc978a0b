//! Task identity: the UUID a task is known by in every group.

use std::fmt;
use std::str::FromStr;

use crate::GroupError;

/// Identifier of a task (a process registered with the daemon).
///
/// Displayed and parsed as a hyphenated UUID.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct TaskId(pub uuid::Uuid);

impl TaskId {
    /// A fresh random id.
    pub fn new_v4() -> Self {
        TaskId(uuid::Uuid::new_v4())
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl FromStr for TaskId {
    type Err = GroupError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        uuid::Uuid::parse_str(s)
            .map(TaskId)
            .map_err(|e| GroupError::InvalidArgument {
                what: "task id",
                reason: format!("{}: {e}", crate::validate::escape_for_display(s)),
            })
    }
}

//! Task identity: the UUID a task is known by in every group.

use std::fmt;

/// Identifier of a task (a process registered with the daemon).
///
/// Displayed and parsed as a hyphenated UUID (parsed in [`crate::validate`],
/// with the other checks of untrusted input).
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

//! The one error type of the crate, and its coarse classification.
//!
//! Messages name the group, instance and task involved so that a log line
//! or a gRPC status message is enough to understand what went wrong.
//! [`ErrorKind`] lets the gRPC layer pick a status code without matching
//! every variant.

use std::time::Duration;

use crate::TaskId;

/// Result alias used throughout the crate.
pub type Result<T, E = GroupError> = std::result::Result<T, E>;

/// Coarse class of a [`GroupError`], one per gRPC status code we map to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    InvalidArgument,
    NotFound,
    AlreadyExists,
    FailedPrecondition,
    DeadlineExceeded,
    Aborted,
}

/// Everything that can go wrong in a group operation.
///
/// Whenever an operation returns one of these, the group state is exactly
/// as it was before the call (waits that time out leave no trace either).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// `name` is already escaped and truncated, safe to print.
    #[error("group name \"{name}\" {reason}")]
    InvalidName { name: String, reason: String },

    #[error("instance {instance} is out of range; instances must be below {max}")]
    InvalidInstance { instance: u32, max: u32 },

    #[error("invalid {what}: {reason}")]
    InvalidArgument { what: &'static str, reason: String },

    #[error("group {0:?} does not exist")]
    GroupNotFound(String),

    #[error("group {group:?} has no instance {instance}")]
    InstanceNotFound { group: String, instance: u32 },

    #[error("task {0} is not known (never opened, or already closed)")]
    TaskNotFound(TaskId),

    #[error("task {0} is already open")]
    TaskAlreadyOpen(TaskId),

    #[error("task {task} is not a member of group {group:?}")]
    NotMember { group: String, task: TaskId },

    #[error("task {task} is already instance {instance} of group {group:?}")]
    AlreadyMember {
        group: String,
        task: TaskId,
        instance: u32,
    },

    #[error("instance {instance} of group {group:?} is taken by task {task}")]
    InstanceTaken {
        group: String,
        instance: u32,
        task: TaskId,
    },

    #[error("group {group:?} is frozen; joins are refused")]
    Frozen { group: String },

    #[error("group {group:?} has {members} members; cannot freeze at size {size}")]
    FreezeBelowSize {
        group: String,
        members: u32,
        size: u32,
    },

    #[error(
        "group {group:?} is already frozen at size {frozen_size}; cannot freeze at size {size}"
    )]
    FrozenAtOtherSize {
        group: String,
        frozen_size: u32,
        size: u32,
    },

    #[error("group {group:?} is full ({max} instances)")]
    GroupFull { group: String, max: u32 },

    #[error("{op} on group {group:?} did not complete within {waited:?}")]
    DeadlineExceeded {
        op: &'static str,
        group: String,
        waited: Duration,
    },

    #[error("group {group:?} is broken: instance {instance} (task {task}) died after the group was frozen")]
    GroupBroken {
        group: String,
        instance: u32,
        task: TaskId,
    },

    #[error("barrier on group {group:?} was broken: instance {instance} (task {task}) {}", if *died { "died" } else { "left" })]
    BarrierBroken {
        group: String,
        instance: u32,
        task: TaskId,
        died: bool,
    },

    #[error(
        "barrier on group {group:?} is waiting for {expected} members; this caller asked for {got}"
    )]
    BarrierCountMismatch {
        group: String,
        expected: u32,
        got: u32,
    },

    #[error("task {task} is already waiting at the barrier of group {group:?}")]
    AlreadyInBarrier { group: String, task: TaskId },

    #[error("gave up on group {group:?} after {attempts} conflicting concurrent updates")]
    Contention { group: String, attempts: u32 },

    /// The backing store failed (never produced by [`crate::MemoryStore`]).
    #[error("group store failure: {0}")]
    Store(String),
}

impl GroupError {
    /// The status class of this error.
    ///
    /// `Contention` and `Store` map to `Aborted`: the operation did nothing
    /// and the client may retry it.
    pub fn kind(&self) -> ErrorKind {
        use GroupError::*;
        match self {
            InvalidName { .. }
            | InvalidInstance { .. }
            | InvalidArgument { .. }
            | BarrierCountMismatch { .. } => ErrorKind::InvalidArgument,
            GroupNotFound(_) | InstanceNotFound { .. } | TaskNotFound(_) | NotMember { .. } => {
                ErrorKind::NotFound
            }
            TaskAlreadyOpen(_) | AlreadyMember { .. } | InstanceTaken { .. } => {
                ErrorKind::AlreadyExists
            }
            Frozen { .. }
            | FreezeBelowSize { .. }
            | FrozenAtOtherSize { .. }
            | GroupFull { .. }
            | AlreadyInBarrier { .. } => ErrorKind::FailedPrecondition,
            DeadlineExceeded { .. } => ErrorKind::DeadlineExceeded,
            GroupBroken { .. } | BarrierBroken { .. } | Contention { .. } | Store(_) => {
                ErrorKind::Aborted
            }
        }
    }
}

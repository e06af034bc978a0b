//! Notifications. [`RmEvent`]s are the resource manager's own: hosts added,
//! deleted or failed, task (rank) and job exits, and the output lines of
//! ranks; each gets a sequence number of its own series (group events are
//! numbered apart). [`Notification`] is what a watcher (the console, a
//! manager program) receives from a vmd: those events as the vmd shows them,
//! the group service's events, and the snapshot of the current state it asked
//! for with [`WatchFilter::current_state`].

use std::str::FromStr;

use crate::group::GroupEvent;
use crate::host::{Host, HostView};
use crate::job::{ExitStatus, Job, JobId, JobState, OutputStream};

#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RmEvent {
    HostAdded(Host),
    HostDeleted {
        host: Host,
        reason: String,
    },
    HostFailed {
        host: Host,
        reason: String,
    },
    TaskExit {
        job: JobId,
        rank: Option<u32>,
        exit: ExitStatus,
        host: String,
    },
    JobExit {
        job: JobId,
        state: JobState,
        exit: Option<ExitStatus>,
        reason: String,
        host: String,
    },
    Output {
        job: JobId,
        rank: Option<u32>,
        stream: OutputStream,
        line: String,
    },
}

impl RmEvent {
    /// The job an event concerns, if any.
    pub fn job(&self) -> Option<JobId> {
        match self {
            RmEvent::TaskExit { job, .. }
            | RmEvent::JobExit { job, .. }
            | RmEvent::Output { job, .. } => Some(*job),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sequenced {
    pub seq: u64,
    pub event: RmEvent,
}

/// One notification as a watcher receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    /// Counts per source: group events and resource-manager events are
    /// numbered separately; 0 marks a snapshot of the current state.
    pub seq: u64,
    pub event: WatchEvent,
}

/// What a watcher is told about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    /// A change to a group (the group service's event).
    Group(GroupEvent),
    /// A host declared or joined (in a snapshot: a host that exists).
    HostAdded(HostView),
    HostDeleted {
        host: HostView,
        reason: String,
    },
    HostFailed {
        host: HostView,
        reason: String,
    },
    TaskExit {
        job: JobId,
        rank: Option<u32>,
        exit: ExitStatus,
        host: String,
    },
    JobExit {
        job: JobId,
        state: JobState,
        exit: Option<ExitStatus>,
        reason: String,
        host: String,
    },
    Output {
        job: JobId,
        /// Absent: the launcher's own line.
        rank: Option<u32>,
        stream: OutputStream,
        line: String,
    },
    /// A job as it stands (snapshot of the current state only).
    Job(Job),
    /// The end of the snapshot of the current state.
    Synced,
}

impl WatchEvent {
    /// The job an event concerns, if any.
    pub fn job(&self) -> Option<JobId> {
        match self {
            WatchEvent::TaskExit { job, .. }
            | WatchEvent::JobExit { job, .. }
            | WatchEvent::Output { job, .. } => Some(*job),
            WatchEvent::Job(j) => Some(j.id),
            _ => None,
        }
    }
}

/// The kinds of notification a watcher can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NotificationKind {
    Group,
    HostAdded,
    HostDeleted,
    HostFailed,
    TaskExit,
    JobExit,
    /// Only sent when asked for by name: output can be plentiful.
    TaskOutput,
}

impl NotificationKind {
    pub const ALL: [NotificationKind; 7] = [
        NotificationKind::Group,
        NotificationKind::HostAdded,
        NotificationKind::HostDeleted,
        NotificationKind::HostFailed,
        NotificationKind::TaskExit,
        NotificationKind::JobExit,
        NotificationKind::TaskOutput,
    ];

    /// The kind's name: `group`, `host_added`, …, `task_output`.
    pub fn name(self) -> &'static str {
        match self {
            NotificationKind::Group => "group",
            NotificationKind::HostAdded => "host_added",
            NotificationKind::HostDeleted => "host_deleted",
            NotificationKind::HostFailed => "host_failed",
            NotificationKind::TaskExit => "task_exit",
            NotificationKind::JobExit => "job_exit",
            NotificationKind::TaskOutput => "task_output",
        }
    }
}

/// A name that is no [`NotificationKind`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown event kind {0:?} (group, host_added, host_deleted, host_failed, task_exit, job_exit, task_output)")]
pub struct UnknownKind(pub String);

impl FromStr for NotificationKind {
    type Err = UnknownKind;
    /// A kind by its [`name`](NotificationKind::name), in any case.
    fn from_str(s: &str) -> Result<Self, UnknownKind> {
        let wanted = s.trim();
        NotificationKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| UnknownKind(s.to_string()))
    }
}

/// What a watcher asks for. The default: every kind but task output, of
/// every group and job, from now on.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct WatchFilter {
    /// Group events of these groups only; empty: all.
    pub groups: Vec<String>,
    /// Only these kinds; empty: every kind except task output.
    pub kinds: Vec<NotificationKind>,
    /// Task and job events of these jobs only; empty: all.
    pub jobs: Vec<JobId>,
    /// First the current state: groups as joined/frozen events, hosts as
    /// [`WatchEvent::HostAdded`], jobs as [`WatchEvent::Job`] (all with
    /// seq 0), then [`WatchEvent::Synced`].
    pub current_state: bool,
}

impl WatchFilter {
    /// Only these kinds, of every group and job.
    pub fn kinds(kinds: impl IntoIterator<Item = NotificationKind>) -> Self {
        WatchFilter {
            kinds: kinds.into_iter().collect(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_by_name_in_any_case() {
        for k in NotificationKind::ALL {
            assert_eq!(k.name().parse(), Ok(k));
            assert_eq!(k.name().to_ascii_uppercase().parse(), Ok(k));
        }
        assert_eq!(
            "hosts".parse::<NotificationKind>(),
            Err(UnknownKind("hosts".into()))
        );
    }
}

//! Notifications of the resource manager: hosts added, deleted or failed,
//! task (rank) and job exits, and the output lines of ranks. Each event gets
//! a sequence number of its own series (group events are numbered apart).

use crate::host::Host;
use crate::job::{ExitStatus, JobId, JobState, OutputStream};

#[derive(Clone, Debug, PartialEq, Eq)]
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

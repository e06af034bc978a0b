//! The JSON records the vmds exchange through etcd: host rows, events,
//! orders and answers. Job rows are [`isthmus_types::job::Job`] as they are.

use isthmus_types::event::RmEvent;
use isthmus_types::host::Host;
use isthmus_types::job::{JobId, SpawnSpec};
use isthmus_types::refusal::Refusal;
use serde::{Deserialize, Serialize};

/// A host row: the host as its own vmd's resource manager sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRow {
    pub host: Host,
    /// Set just before a clean stop deletes the row: its disappearance is
    /// then a deletion, not a failure.
    #[serde(default)]
    pub leaving: bool,
}

/// Events of one host's resource manager, in the order they happened, for
/// the others to relay: one etcd put carries a batch (a job's output lines
/// of a few milliseconds, then the exit that ends them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRec {
    pub host: String,
    pub events: Vec<RmEvent>,
}

/// What one vmd asks of the vmd of another host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Order {
    /// Run this job on your host under this id (placement already decided).
    Spawn {
        spec: SpawnSpec,
        job: JobId,
    },
    Kill {
        job: JobId,
    },
    Signal {
        job: JobId,
        signal: i32,
        rank: Option<u32>,
    },
    /// Answer (a host check).
    Ping,
    /// Leave the virtual machine: stop cleanly (a deleted host).
    Stop,
}

/// What the asked vmd answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    Spawned { job: JobId, host: String },
    Signalled { ranks: u32 },
    Done,
    Refused(Refusal),
}

/// An order as it sits in etcd: who asked, and what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OrderRec {
    pub(crate) from: String,
    pub(crate) order: Order,
}

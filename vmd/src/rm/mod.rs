//! The general resource manager (GRM) of the virtual machine, in plain Rust:
//! no gRPC types here, the service translates (as `isthmus-groups` is to the
//! group service).
//!
//! Which room is which:
//!
//! * [`model`]     — jobs, ranks, exit statuses, orders to taskers and their reports.
//! * [`error`]     — refusals, each with the kind of mistake it is.
//! * [`hosts`]     — the host table: slots, offered implementations, taskers.
//! * [`hostfile`]  — the TOML hostfile read at start.
//! * [`placement`] — choosing a host for a job, or saying why none fits.
//! * [`events`]    — notifications: hosts added/deleted/failed, task and job exits, output.
//! * [`manager`]   — [`ResourceManager`]: hosts + jobs + events behind one lock.
//! * [`hub`]       — [`TaskerHub`]: the taskers registered with one vmd, and
//!   the routing of orders to them and of their reports upwards.

pub mod error;
pub mod events;
pub mod hostfile;
pub mod hosts;
pub mod hub;
pub mod manager;
pub mod model;
pub mod placement;

pub use error::{RmError, RmErrorKind};
pub use events::{RmEvent, Sequenced};
pub use hosts::{Host, HostDecl, HostState};
pub use hub::{HubUp, TaskerHub};
pub use manager::{PortMsg, ResourceManager};
pub use model::{
    ExitStatus, Job, JobId, JobOrder, JobReport, JobState, LaunchSpec, OutputStream, Rank,
};
pub use placement::Placement;

/// Environment variables a rank finds its way home with (no flags needed).
pub use isthmus_types::env::{JOB as ENV_JOB, SECRET as ENV_SECRET};

/// Whether `name` may name a host or an implementation: 1–64 characters of
/// letters, digits, `.`, `_`, `-`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

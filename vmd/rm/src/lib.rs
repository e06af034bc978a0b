//! The general resource manager (GRM) of the virtual machine, in plain Rust:
//! no gRPC types here, the vmd's service and links translate (as
//! `isthmus-groups` is to the group service). Its vocabulary — jobs, orders,
//! reports, hosts, events, refusals — is [`isthmus_types`]'s, shared with
//! the taskers and the wire edge.
//!
//! Which room is which:
//!
//! * [`hosts`]     — the host table, and the checks a host declaration passes.
//! * [`hostfile`]  — the TOML hostfile read at start.
//! * [`slurm`]     — the hosts and slots of the Slurm allocation a vmd runs in.
//! * [`placement`] — choosing a host for a job, or saying why none fits.
//! * [`manager`]   — [`ResourceManager`]: hosts + jobs + events behind one lock.
//! * [`hub`]       — [`TaskerHub`]: the taskers registered with one vmd, and
//!   the routing of orders to them and of their reports upwards.
//! * `vocabulary`  — [`Result`] and [`valid_name`], which every room above
//!   uses: beside the root, not in it, so that no room imports the root
//!   that re-exports it.
//!
//! It sits in `vmd/` because only the vmd hosts it; it is a crate of its own
//! so that its rules are tested without gRPC.

pub mod hostfile;
pub mod hosts;
pub mod hub;
pub mod manager;
pub mod placement;
pub mod slurm;
mod vocabulary;

pub use hub::{HubUp, TaskerHub};
pub use isthmus_types::event::{RmEvent, Sequenced};
pub use isthmus_types::host::{Host, HostDecl, HostState};
pub use isthmus_types::job::{
    ExitStatus, Job, JobId, JobOrder, JobReport, JobState, LaunchSpec, OutputStream, Placement,
    Rank, SpawnSpec,
};
pub use isthmus_types::refusal::{Refusal, RefusalKind};
pub use manager::{JobChanges, PortMsg, ResourceManager};
pub use vocabulary::{valid_name, Result};

//! The vmd's gRPC services, one per audience, all served on the same port.
//! Each is a thin layer: it turns wire calls into calls on the group
//! service, the resource manager or a stream's own module, and back.
//!
//! * [`tasks`]   — `Tasks`: a task's session ([`crate::session`]).
//! * [`console`] — `Console`: groups, watch ([`crate::watch`]), halt and the
//!   resource manager's calls.
//! * [`taskers`] — `Taskers`: a tasker's stream ([`crate::tasker_link`]).
//! * [`peers`]   — `Peers`: a joined vmd's host link ([`crate::host_link`]).
//! * `role`      — whether this vmd holds the resource manager ([`Role`]).

pub mod console;
pub mod peers;
mod role;
pub mod taskers;
pub mod tasks;

pub use console::ConsoleService;
pub use peers::PeersService;
pub use role::Role;
pub use taskers::TaskersService;
pub use tasks::TasksService;

//! The Isthmus virtual machine daemon (vmd) and its client.
//!
//! The daemon is a thin tonic service over [`isthmus_groups`]: it turns wire
//! messages into calls on the group semantics and back. Which room is which:
//!
//! * [`convert`]  — group types ⇄ wire types, group errors → gRPC codes.
//! * [`session`]  — one client task's long-lived session stream: requests in,
//!   replies and events out, memberships removed when the stream ends.
//! * [`service`]  — the `Vmd` gRPC service: sessions, console calls, watch, halt.
//! * [`daemon`]   — binding, serving and shutting down a vmd (also embedded
//!   in demos and tests).
//! * [`client`]   — the client side of a session, used by the bridge, the
//!   console and the benchmark.
//! * [`rm_convert`]  — the resource manager's ([`isthmus_rm`]) refusals as
//!   gRPC statuses (its types meet the wire in [`isthmus_proto::convert`]).
//! * [`tasker_link`] — the vmd's side of a tasker's stream.
//! * [`host_link`]   — links between the vmds (hosts) of one virtual machine.

pub mod client;
pub mod convert;
pub mod daemon;
pub mod host_link;
pub mod rm_convert;
pub mod service;
pub mod session;
pub mod tasker_link;

pub use isthmus_types::env::{DEFAULT_VMD_ADDR as DEFAULT_ADDR, VMD_ADDR as ENV_VMD_ADDR};

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
//! * [`rm`]       — the resource manager: host table, job table, placement,
//!   tasker hub, notifications (plain Rust, no gRPC types).
//! * [`rm_convert`]  — resource-manager types ⇄ wire types, refusals → gRPC codes.
//! * [`tasker_link`] — the vmd's side of a tasker's stream.
//! * [`host_link`]   — links between the vmds (hosts) of one virtual machine.

pub mod client;
pub mod convert;
pub mod daemon;
pub mod host_link;
pub mod rm;
pub mod rm_convert;
pub mod service;
pub mod session;
pub mod tasker_link;

/// The address a vmd listens on when none is given, and where clients look
/// for it when `ISTHMUS_VMD` is unset.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7711";

/// Environment variable that tells clients (the bridge, the console) where
/// their vmd listens, as `host:port` or `http://host:port`.
pub const ENV_VMD_ADDR: &str = "ISTHMUS_VMD";

//! The Isthmus virtual machine daemon (vmd). Its clients (tasks, the
//! console, taskers, joining vmds) talk to it through `isthmus-client`.
//!
//! The daemon only wires: thin tonic services, one per audience, over
//! [`isthmus_groups`] and the resource manager. Which room is which:
//!
//! * [`auth`]     — who is calling (socket uid, token, TLS certificate) and
//!   the rule of each RPC family.
//! * [`convert`]  — group types → wire types.
//! * [`status`]   — every error of the services as a gRPC status.
//! * [`session`]  — one client task's long-lived session stream: requests in,
//!   replies and events out, memberships removed when the stream ends.
//! * [`service`]  — the gRPC services: `Tasks`, `Console`, `Taskers`, `Peers`.
//! * [`watch`]    — notifications for watchers: snapshot, merge, filter.
//! * [`stream`]   — the hello-first stream skeleton shared by session,
//!   tasker link and host link.
//! * [`heap`]     — the heap's free memory given back to the kernel.
//! * [`hello_gate`] — how many session streams may wait for their Hello,
//!   per uid and in all.
//! * [`daemon`]   — binding, serving and shutting down a vmd (also embedded
//!   in demos and tests).
//! * [`tasker_link`] — the vmd's side of a tasker's stream.
//! * [`host_link`]   — links between the vmds (hosts) of one virtual machine.
//! * [`run`]        — `isthmus run FILE`: a coupling file's components
//!   started through the resource manager and followed to the end.
//! * [`federation`]  — with etcd: this vmd's resource manager sharing its
//!   host and jobs with every other vmd's, and carrying their orders.

pub mod auth;
pub mod convert;
pub mod daemon;
pub mod federation;
pub mod heap;
pub mod hello_gate;
pub mod host_link;
pub mod resume;
pub mod run;
pub mod service;
pub mod session;
pub mod status;
pub mod stream;
pub mod tasker_link;
pub mod watch;

pub use isthmus_types::env::VMD_ADDR as ENV_VMD_ADDR;

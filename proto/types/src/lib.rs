//! Domain types shared by the vmd, its clients (tasks, console, taskers) and
//! the resource manager: plain Rust, no wire encoding, no I/O. The wire types
//! live in `isthmus-proto`, which converts to and from these at its edge.
//!
//! * [`env`](mod@env) — the `ISTHMUS_*` environment variables and default addresses.
//! * [`job`]     — the job protocol: job ids, exit statuses, job states, spawn
//!   requests, the orders taskers receive and the reports they send.
//! * [`refusal`] — why the resource manager or a tasker will not do something.
//! * [`host`]    — hosts of the virtual machine: declarations and table rows.
//! * [`group`]   — groups as a vmd shows them: tables, summaries, events.
//! * [`event`]   — notifications: the resource manager's events, and what a
//!   watcher of a vmd receives (with the filter it asks with).
//!
//! It sits in `proto/` because it is the vocabulary on both sides of the
//! wire: `proto` converts to it, and every crate that talks to a vmd speaks
//! it.

pub mod env;
pub mod event;
pub mod group;
pub mod host;
pub mod job;
pub mod refusal;
pub mod tls;

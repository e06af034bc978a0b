//! Talking to a vmd, for everything that is not the vmd: a task's
//! [`Session`] (groups, frozen-table cache, events) as the bridge holds it,
//! the [`Console`]'s calls (groups, watch, halt, the resource manager), and
//! the pieces taskers and joining vmds share ([`channel()`], [`stream::open`]).
//! No gRPC server in here: the bridge, linked into every MPI program,
//! depends on this crate and not on the daemon.
//!
//! * [`channel`](mod@channel) — the address forms and the connection's keepalive.
//! * [`auth`]     — how a client proves who it is (socket uid, token, TLS).
//! * [`error`]    — [`ClientError`] and the [`ErrorKind`]s callers branch on.
//! * [`session`]  — a task's long-lived session stream, answering in the
//!   domain types of `isthmus-types` as the console does.
//! * `frozen`     — the session's cache of frozen tables.
//! * [`console`]  — unary calls and notifications for tools, in the domain
//!   types of `isthmus-types`.
//! * [`stream`]   — opening a hello-first stream.
//!
//! It sits in `proto/` because it is the one client of the wire types: the
//! bridge, the console and the taskers reach a vmd through it and never
//! handle wire types themselves.

pub mod auth;
pub mod channel;
pub mod console;
pub mod error;
mod frozen;
pub mod session;
pub mod stream;
#[cfg(feature = "tracing-init")]
mod tracing_init;

pub use channel::{channel, channel_tls, channel_tls_to_host, default_addr, Keepalive, VmdChannel};
pub use console::{Console, Events};
pub use error::{ClientError, ErrorKind, Result};
/// The `ISTHMUS_*` names and the default address, defined once.
pub use isthmus_types::env;
pub use session::{Session, SessionOptions, CALL_TIMEOUT, DEFAULT_RESUME_WINDOW};
#[cfg(feature = "tracing-init")]
pub use tracing_init::init_tracing;

//! Isthmus bridge data path: point-to-point MPI semantics between
//! separately started MPI jobs over direct sockets.
//!
//! # Design
//! * One [`Engine`] per process (not a singleton). It listens on a Unix socket
//!   in the Linux abstract namespace (`@isthmus-bridge-<uuid>`) and on TCP
//!   `127.0.0.1:0`; [`Endpoint`] describes both plus the process uuid and host.
//!   A peer on the same host (equal host strings) is reached over the Unix
//!   socket, otherwise over TCP (TCP_NODELAY on).
//! * Connections: exactly one OUTGOING connection per peer process, opened
//!   lazily on first send and used only for frames we send. Frames from a peer
//!   arrive on the connection it opened to us. Per-pair, per-direction FIFO
//!   gives MPI's non-overtaking order; there are no connect races. The
//!   connector's handshake carries magic, version, its uuid and the VM secret;
//!   the acceptor compares the secret in constant time and rejects (logged)
//!   connections from outside the virtual machine.
//! * Progress (leader/follower, see the `incoming` module): each
//!   incoming connection has one reader token. Whoever holds it reads frames
//!   (see the `frame` module for the 56-byte header) and either
//!   completes a posted receive or queues the message as unexpected. A thread
//!   blocked in a receive naming a rank (or an ssend) takes the token of that
//!   peer's connection and reads it itself, so the message completes its wait
//!   without a second thread's wake-up; otherwise the connection's background
//!   thread holds the token and blocks in `poll()` on the socket and an
//!   eventfd (kicked when an application thread wants the token; it takes
//!   the token back once no application thread waited for a whole 1 ms tick,
//!   so at most 2 ms after the application stopped waiting). Waiters
//!   on anything else use Condvars. Nothing spins. Blocking sends write from
//!   the caller's thread (header + payload in one `writev`, no copy).
//!   Non-blocking sends are written inline from the caller's memory when the
//!   connection is idle (any size; `isend` then returns complete); otherwise
//!   they are copied and go to the connection's writer thread, so `isend`
//!   completes without the application calling in (independent progress).
//! * Protocol: eager only. Every message is sent in one frame as soon as it is
//!   posted; a message that arrives before its receive is held in the
//!   unexpected queue (memory is the only bound). If the receive was posted
//!   first, the token holder reads the payload directly into the caller's
//!   buffer (blocking `recv_bytes_into`/typed `recv`) — zero copies on receive.
//!   Synchronous sends use SYNC_EAGER; the receiver answers SYNC_ACK (on its own
//!   outgoing connection) when a receive MATCHES the message.
//! * Failure: a connection that ends without BYE, a write error, or
//!   [`Engine::peer_failed`] marks the peer failed: its pending receives,
//!   synchronous sends and queued sends fail with `PeerFailed`, as do later
//!   operations that name it and ANY_SOURCE receives/probes on an intercomm
//!   with a failed remote member (messages that already arrived can still be
//!   received). A BYE (orderly shutdown) fails operations that name that
//!   peer, since nothing more can arrive from it, but not ANY_SOURCE ones
//!   while other remote ranks remain: a job whose ranks finish at different
//!   times is not a failure.
//! * Contexts: messages for a context id not (yet) registered are kept until
//!   its [`InterComm`] is created; after an InterComm is dropped, late messages
//!   for its context are discarded (debug log).
//!
//! # Modules (each imports only those listed before it; no cycles)
//! * `format` — [`WireFormat`]; `hash` — the one FNV-1a; `sync` — locking
//!   and Condvar waits with deadlines.
//! * [`datatype`] — MPI datatypes: `basic`, `signature` (flattening,
//!   hashing), `info` ([`datatype::TypeInfo`], cache, matching rules),
//!   `pack` (MPI_Pack / external32 calls), `swap`, `codec` (encode/decode).
//! * `error` — [`BridgeError`]; `endpoint` — [`Endpoint`]; `wire` — the
//!   datatype seam ([`TypeSig`], [`WireType`]); `frame` — header, handshake
//!   constants, payload reading.
//! * `completion` — one-shot completions and `wait_any`'s notifier;
//!   `matching` — [`Source`], [`Tag`], [`Status`], the per-context queues
//!   and the delivery decision for an arriving message.
//! * Engine tables, each ignorant of the others: `contexts` (context id →
//!   matching state), `failures` (peers that are gone), `ssend_waiters`
//!   (ssends awaiting SYNC_ACK), `connections` (outgoing/incoming per peer).
//! * `transport` — sockets, frame writing, handshake; `outgoing` — the
//!   outgoing connection and its writer thread, reports through `PeerLost`;
//!   `incoming` — leader/follower reading, reports through `FrameHandler`.
//! * `request` — request handles, [`wait_all`], [`wait_any`];
//!   `engine` — [`Engine`] (listeners, shutdown) over `engine::shared`,
//!   which composes the tables and implements the reporting traits;
//!   `intercomm` — [`InterComm`] and `Engine::intercomm`; `vm` —
//!   [`Bridge`]: PVMPI's calls over the vmd session.

// Library code reports errors instead of panicking (tests may unwrap).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

// Leaves first: each module imports only modules above it in this list
// (checked by scripts/check-module-cycles.sh).
mod completion;
mod connections;
mod contexts;
pub mod datatype;
mod endpoint;
mod engine;
mod error;
mod failures;
mod format;
mod frame;
mod hash;
mod incoming;
mod intercomm;
mod ledger;
mod matching;
mod outgoing;
mod poller;
mod rendezvous;
mod request;
mod ssend_waiters;
mod sync;
mod transport;
mod vm;
mod wire;

pub use endpoint::Endpoint;
pub use engine::{
    Engine, EngineConfig, DEFAULT_EAGER_LIMIT, DEFAULT_EAGER_WINDOW, DEFAULT_EARLY_CONTEXT_AGE,
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_UNEXPECTED_LIMIT,
};
pub use error::{BridgeError, Result};
pub use format::WireFormat;
pub use intercomm::InterComm;
pub use matching::{Source, Status, Tag};
pub use request::{wait_all, wait_any, RecvRequest, Request, SendRequest, TypedRecvRequest};
pub use vm::{Bridge, Handle, PendingInterComm, DEFAULT_CONNECT_TIMEOUT};
pub use wire::{TypeSig, WireType};

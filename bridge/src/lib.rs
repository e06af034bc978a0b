//! Isthmus bridge data path: point-to-point MPI semantics between
//! separately started MPI jobs over direct sockets.
//!
//! # Design
//! * One [`Engine`] per process (not a singleton). It listens on a Unix socket
//!   in the Linux abstract namespace (`@isthmus-bridge-<uuid>`) and on TCP
//!   at [`EngineConfig::listen`] (`ISTHMUS_DATA_ADDR`; `0.0.0.0`/`::` for
//!   all), port 0; [`Endpoint`] describes the Unix socket, the TCP addresses
//!   peers should dial (see [`address`]), the process uuid, its public key,
//!   the host and the [`Locality`] (kernel boot id, network namespace).
//!   A peer with the same host and locality is reached over the Unix
//!   socket, otherwise over TCP (TCP_NODELAY on), trying the published
//!   addresses in order. Over the Unix socket, frames then go through a
//!   shared-memory ring (`transport::shm`: a sealed memfd segment the
//!   acceptor hands over with its credit grant, SCM_RIGHTS) unless either
//!   end sets `ISTHMUS_TRANSPORT=socket`; the socket stays for the
//!   handshake, wake-ups (a doorbell byte to a sleeping reader) and
//!   liveness (a peer's death is still its socket closing).
//! * Connections: exactly one OUTGOING connection per peer process, opened
//!   lazily on first send and used only for frames we send. Frames from a peer
//!   arrive on the connection it opened to us. Per-pair, per-direction FIFO
//!   gives MPI's non-overtaking order; there are no connect races.
//! * Admission (see the `handshake` and `admission` modules): each engine
//!   generates its own Ed25519 key pair at start; the private key never
//!   leaves the process, and the process id is derived from the public key.
//!   The public key is in the [`Endpoint`] record that the process publishes
//!   through its own authenticated vmd session at `register`, so a group
//!   table binds (group, instance) → (process id, public key). A connection
//!   is a challenge–response: the connector sends its id and a fresh nonce,
//!   the acceptor answers with its id, a fresh nonce and its signature (so
//!   the connector knows it reached the process it meant), the connector
//!   signs both ids and both nonces. The acceptor checks that signature with
//!   the key of the member named by the claimed id in the remote tables it
//!   holds; a connection that arrives before the table naming it waits
//!   (up to [`EngineConfig::admission_timeout`]; see below for the bounds).
//!   Replays fail (fresh nonce), so does a spoofed id (no private key). A
//!   refused connection is logged (address, claimed id, reason) and closed
//!   and changes nothing: only an admitted connection is ever registered as
//!   a peer's, so only its end (BYE or EOF) can affect that peer's state.
//!   The virtual machine's secret plays no part in the data path.
//! * Progress (leader/follower, see `transport::incoming`): each
//!   incoming connection has one reader token. Whoever holds it reads frames
//!   (see the `frame` module for the 56-byte header) and either
//!   completes a posted receive or queues the message as unexpected. A thread
//!   blocked in a receive naming a rank (or an ssend, or a rendezvous send
//!   waiting for its CTS) takes the token of that peer's connection and
//!   reads it itself, so the message completes its wait without a second
//!   thread's wake-up; otherwise ONE poller thread for all incoming
//!   connections (epoll, see `transport::poller`) reads whatever socket is readable.
//!   The poller takes a connection back once no application thread waited on
//!   it for a whole 1 ms tick. Waiters on anything else use Condvars. A
//!   shared-memory reader polls its ring before it sleeps, as [`wait`]
//!   says (`ISTHMUS_WAIT`); a socket reader never spins. Blocking sends write from the caller's thread (header + payload
//!   in one `writev`, no copy). Non-blocking eager sends are written inline
//!   when the connection is idle; otherwise they are copied and go to the
//!   connection's writer thread, so `isend` completes without the
//!   application calling in (independent progress).
//! * Connections are bounded: until admitted, a connection is in the lobby
//!   (`lobby`): ONE thread runs every handshake on non-blocking sockets
//!   (the exchange within [`EngineConfig::handshake_timeout`], one deadline
//!   over all of it, so trickled bytes cannot stretch it), and connections
//!   waiting for the table naming them sit there unwatched until it comes
//!   or [`EngineConfig::admission_timeout`] passes. A waiting connection
//!   costs a descriptor and a few hundred bytes, no thread; at most
//!   [`EngineConfig::admission_per_source`] per source (uid on the Unix
//!   socket, IP address on TCP) and 1024 in all, more are closed at
//!   accept. An admitted connection gets one CREDIT frame (its
//!   eager window) and is handed to the poller; the connector reads that
//!   frame within the handshake deadline. If the acceptor must first wait
//!   for the table, it says "grant follows" at once instead, and the
//!   connector's writer thread waits for the window. Until then the
//!   connection has no credit: a small blocking send waits for the grant
//!   (MPI lets a standard send block), so that it still goes out eagerly,
//!   into the socket, and survives its sender; other sends go by
//!   rendezvous. A connection that
//!   ends (EOF, error, malformed or over-credit frame) is closed and
//!   forgotten — only that connection (and the peer process behind it) is
//!   affected.
//! * Protocol: eager up to [`EngineConfig::eager_limit`] (64 KiB), within
//!   credit, and up to [`EngineConfig::large_eager_limit`] (4 MiB) when the
//!   credit covers the message at once (it never waits for credit);
//!   rendezvous above it. An eager message is sent in one frame at
//!   once if the receiver granted enough credit (each accepted peer gets a
//!   window of [`EngineConfig::eager_window`] from the process-wide bound
//!   [`EngineConfig::unexpected_limit`], grown up to
//!   [`EngineConfig::eager_window_max`] for a peer that streams; see
//!   `ledger`); the receiver checks
//!   the header against that credit before reading a byte of payload, holds
//!   the message in the unexpected queue if no receive is posted, and
//!   returns the credit once it is consumed. Anything larger, or without
//!   credit, is a rendezvous (see `rendezvous`): RTS (envelope + length;
//!   probes see it), CTS once a receive MATCHED it, then DATA straight into
//!   the receive's buffer — so `send` of a large message returns, and its
//!   `isend` request completes, only once the receiver matched it, as MPI
//!   allows. Outgoing connections keep messages in FIFO order (MPI's
//!   non-overtaking rule) in one lane, and CTS/SYNC_ACK/CREDIT/DATA in a
//!   lane that never waits for the peer, so two processes sending large
//!   messages to each other with receives posted (isend+irecv+waitall,
//!   sendrecv) cannot deadlock. Synchronous sends use SYNC_EAGER (the
//!   receiver answers SYNC_ACK when a receive MATCHES the message) or
//!   rendezvous, whose CTS already means "matched".
//! * Shutdown and the sender's bound: a send that completed is received
//!   even if its sender then ends. [`Engine::shutdown`] (also on drop, and
//!   the C library's `MPI_Finalize`) first delivers what is queued or
//!   announced to every live peer, within
//!   [`EngineConfig::finalize_timeout`], then says BYE; what is left is
//!   reported per peer ([`Undelivered`]). Payloads a sender holds for
//!   unreceived messages are bounded by
//!   [`EngineConfig::send_buffer_limit`], and the sends waiting for their
//!   receivers by [`EngineConfig::max_pending_sends`]; past either a
//!   blocking send waits for its match, and past the second a nonblocking
//!   one fails with [`BridgeError::TooManyPendingSends`] (see `held`).
//! * Failure: a connection that ends without BYE, a write error, or
//!   [`Engine::peer_failed`] marks the peer failed: its pending receives,
//!   synchronous sends and queued sends fail with `PeerFailed`, as do later
//!   operations that name it and ANY_SOURCE receives/probes on an intercomm
//!   with a failed remote member (messages that already arrived can still be
//!   received). A BYE (orderly shutdown) fails operations that name that
//!   peer, since nothing more can arrive from it, but not ANY_SOURCE ones
//!   while other remote ranks remain: a job whose ranks finish at different
//!   times is not a failure.
//! * Abort: [`Engine::abort_peers`] sends an ABORT frame (the program's
//!   error code) on the control lane to each named peer and waits until
//!   it is written; the receiver calls the handler set by
//!   [`Engine::on_abort`] (libisthmus: its MPI's own `PMPI_Abort`), on
//!   the thread that read the frame.
//! * Contexts: messages for a context id not (yet) registered are kept until
//!   its [`InterComm`] is created (at most 256 such contexts, each for at most
//!   [`EngineConfig::early_context_age`]); after an InterComm is dropped, late
//!   messages for its context are discarded (debug log) and their senders
//!   released.
//!
//! # Layers
//! Each layer calls only the ones below it and knows nothing of those
//! above (checked by `scripts/check-module-cycles.sh`):
//!
//! ```text
//!  machine: the virtual machine's calls (spawn, kill, signal, jobs,
//!           hosts, notifications) on a Bridge, over a console connection
//!  vm: Bridge (PVMPI calls over the vmd session)
//!  ───────────────────────────────────────────────────────────────────
//!  coll/        collectives on an InterComm: barrier_inter_*, bcast_inter_*
//!               (native MPI in each job + O(1) bridge messages between leaders)
//!  ───────────────────────────────────────────────────────────────────
//!  intercomm    communicators: InterComm (ranks, groups, contexts; typed
//!               and buffer wrappers), Engine::intercomm
//!  ───────────────────────────────────────────────────────────────────
//!  p2p          point-to-point on one context (Channel): send, ssend,
//!               isend, recv, probe; eager / rendezvous / synchronous
//!  ───────────────────────────────────────────────────────────────────
//!  engine       Engine (listeners, shutdown) over engine::shared, which
//!               composes the tables: contexts, matching, rendezvous,
//!               ssend_waiters, ledger, failures, connections, admission
//!  ───────────────────────────────────────────────────────────────────
//!  transport/   Link (frames, credit, liveness) — link.rs is the interface;
//!               connect, outgoing, incoming, poller over the byte paths
//!               Outbound/Inbound: socket (Unix | TCP) and shm (rings)
//!  ───────────────────────────────────────────────────────────────────
//!  frame, handshake, address, endpoint, wire, datatype, error, sync, ...
//! ```
//!
//! # Modules (each imports only those listed before it; no cycles)
//! * `format` — [`WireFormat`]; `hash` — the one FNV-1a; `sync` — locking
//!   and Condvar waits with deadlines; [`wait`] — how a waiting thread
//!   polls before it sleeps (`ISTHMUS_WAIT`: poll, adaptive, block), the
//!   one policy of the shared-memory ring and the C library's waits.
//! * [`datatype`] — MPI datatypes: `basic`, `signature` (flattening,
//!   hashing), `info` ([`datatype::TypeInfo`], cache, matching rules),
//!   `pack` (MPI_Pack / external32 calls), `swap`, `codec` (encode/decode).
//! * `error` — [`BridgeError`]; [`address`] — listen and published
//!   addresses, [`Locality`], [`Route`]; `endpoint` — [`Endpoint`]; `wire` — the
//!   datatype seam ([`TypeSig`], [`WireType`]); `frame` — header, payload
//!   reading; `handshake` — key pair, challenge–response messages.
//! * `completion` — one-shot completions and `wait_any`'s notifier;
//!   `matching` — [`Source`], [`Tag`], [`Status`], the per-context queues
//!   and the delivery decision for an arriving message.
//! * Engine tables, each ignorant of the others: `contexts` (context id →
//!   matching state), `failures` (peers that are gone), `ssend_waiters`
//!   (ssends awaiting SYNC_ACK), `rendezvous` (sends awaiting CTS, receives
//!   awaiting DATA), `ledger` (eager credit per peer, the unexpected-memory
//!   bound), `connections` (outgoing/incoming per peer), `admission` (keys
//!   of the processes that may connect, lobby counts per source); `engine::lobby` —
//!   the one thread that handshakes and parks unadmitted connections.
//! * `transport` — the transport layer: `transport::link` (the interface:
//!   `Link`, `PeerLost`, `Queued`, and the byte paths `Outbound`/`Inbound`);
//!   `transport::socket` — sockets, frame
//!   writing, the connector's handshake run under its deadline, reading
//!   the credit grant; `transport::shm` — shared-memory rings between
//!   processes of one host; `transport::connect` — opening a connection
//!   (dial, grant, choice of path); `transport::poller` — the one epoll thread;
//!   `transport::outgoing` — the outgoing connection (two lanes, credit)
//!   and its writer thread, reports through `PeerLost`;
//!   `transport::incoming` — leader/follower reading over the poller,
//!   reports through `FrameHandler`.
//! * `request` — request handles, [`wait_all`], [`wait_any`];
//!   `engine` — [`Engine`] (listeners, shutdown) over `engine::shared`,
//!   which composes the tables and implements the reporting traits;
//!   `engine::push` — rendezvous payloads sent on returned credit.
//! * `p2p` — the point-to-point layer: a `Channel` (one context, our rank,
//!   the remote ranks) sends (the eager/rendezvous/synchronous decision,
//!   over a transport `Link`), receives and probes.
//! * `intercomm` — [`InterComm`] over two channels (the user's, the
//!   collectives') and `Engine::intercomm`.
//! * [`native`] — a collective's native step in the job's own MPI, its
//!   nonblocking call tested in a loop that yields (as [`wait`] says).
//! * `coll` — collectives on an [`InterComm`], one file per algorithm
//!   (MPICH's `src/mpi/coll` naming), [`BcastRole`]; `vm` — [`Bridge`]:
//!   PVMPI's calls over the vmd session; `machine` — the virtual machine's
//!   resource calls and notifications ([`Subscription`]) on it.

// Leaves first: each module imports only modules above it in this list
// (checked by scripts/check-module-cycles.sh).
pub mod address;
mod admission;
mod coll;
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
mod handshake;
mod hash;
mod held;
mod intercomm;
mod ledger;
mod lending;
pub mod machine;
mod matching;
pub mod native;
mod p2p;
mod payload;
mod rendezvous;
mod request;
mod ssend_waiters;
mod sync;
mod transport;
mod vm;
pub mod wait;
mod wire;

pub use address::{Locality, Route, Transport};
pub use coll::{
    shares as coll_shares, BcastRole, BlockRecv as CollBlockRecv, Message as CollMessage,
    Share as CollShare,
};
pub use endpoint::{process_id, Endpoint, PUBLIC_KEY_LEN};
pub use engine::{
    AbortHandler, Engine, EngineConfig, PushStats, Undelivered, DEFAULT_ADMISSION_PER_SOURCE,
    DEFAULT_ADMISSION_TIMEOUT, DEFAULT_EAGER_LIMIT, DEFAULT_EAGER_WINDOW, DEFAULT_EAGER_WINDOW_MAX,
    DEFAULT_EARLY_CONTEXT_AGE, DEFAULT_FINALIZE_TIMEOUT, DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_LARGE_EAGER_LIMIT, DEFAULT_LOCAL_TRANSPORT, DEFAULT_SEND_BUFFER_LIMIT,
    DEFAULT_UNEXPECTED_LIMIT, TCP_DUPLEX_ENV,
};
pub use error::{BridgeError, Result};
pub use format::WireFormat;
pub use intercomm::InterComm;
pub use lending::{send_scope, SendScope};
pub use machine::{Delivery, Subscription};
pub use matching::{Source, Status, Tag};
pub use request::{wait_all, wait_any, RecvRequest, Request, SendRequest, TypedRecvRequest};
pub use transport::{LocalTransport, SingleCopyStats, DEFAULT_SINGLE_COPY_THRESHOLD};
pub use vm::{Bridge, Handle, PendingInterComm, DEFAULT_CONNECT_TIMEOUT};
pub use wire::{TypeSig, WireType};

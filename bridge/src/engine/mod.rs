//! The per-process bridge [`Engine`]: its listening sockets and accept
//! loops, the lobby where connections wait to be admitted (`lobby`),
//! rendezvous payloads pushed on returned credit (`push`), and
//! orderly or abrupt shutdown. Its state lives in [`Shared`];
//! intercommunicators are created by `Engine::intercomm` (defined with
//! [`InterComm`](crate::InterComm), so the engine knows nothing of them).
//! Not a global singleton — several engines can live in one process.

mod lobby;
mod push;
mod shared;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tracing::{debug, error, info, warn};
use uuid::Uuid;

use crate::address::{self, Locality, Route};
use crate::admission::Admission;
use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::handshake::Identity;
use crate::held::SendBudget;
use crate::ledger::Ledger;

use crate::sync::lock;
use crate::transport::{self, LocalTransport, Poller, SingleCopyStats, Stream};
pub use push::PushStats;
pub(crate) use shared::Shared;
use shared::{spawn, Limits};
pub use shared::{AbortHandler, Undelivered};

/// How long an incoming connection from a process that no remote table names
/// yet may wait for one (the remote job may form its intercommunicator first).
pub const DEFAULT_ADMISSION_TIMEOUT: Duration = Duration::from_secs(300);

/// Default eager limit: 64 KiB, Open MPI's TCP eager limit. Above it a
/// message waits for its receive (rendezvous), which costs a round trip and
/// two thread wake-ups (~20-30 µs here) — a few percent of the time a
/// 1 MiB payload takes, but a third of a 64 KiB one's, so the limit sits at
/// the largest size where the round trip would still dominate.
pub const DEFAULT_EAGER_LIMIT: usize = 64 << 10;
/// Default limit of credit-only eager sends: 4 MiB. A message above the
/// eager limit and up to this goes at once as well when the receiver's
/// credit covers it whole at that moment (else by rendezvous; it never
/// waits for credit nor is buffered by the sender). A stream of such
/// messages then flows like a raw socket: measured across two network
/// namespaces, 1 MiB messages by rendezvous reached 0.71× raw TCP's
/// bandwidth (the CTS round trip and its wake-ups idle the link once per
/// message), eagerly 0.87-0.96×; 4 MiB ones 0.67-0.81× by rendezvous and
/// 0.91× eagerly (with the window grown to 16 MiB, which such a stream
/// asks for: `ledger`; 0.92× with 32 MiB, the largest window now).
/// Messages from the single-copy threshold up to a process of this host
/// go single-copy instead, where the kernel allows.
pub const DEFAULT_LARGE_EAGER_LIMIT: usize = 4 << 20;
/// Default eager window per peer: 4 MiB — 63 messages at the eager limit,
/// three of 1 MiB (a stream of larger ones grows it, up to
/// [`DEFAULT_EAGER_WINDOW_MAX`]; credit comes back every quarter window), and many times
/// the bandwidth-delay product of loopback or a LAN (10 Gbit/s × 100 µs =
/// 125 KB).
pub const DEFAULT_EAGER_WINDOW: u64 = 4 << 20;
/// Default largest window: 32 MiB. A peer that streams messages it would
/// send eagerly but lacks credit for gets its window doubled, up to this
/// (`ledger`), as long as half the unexpected-memory bound has room (two
/// such peers fill it): seven messages of the large-eager limit in
/// flight. Across two network namespaces (TCP, reno; eight alternating
/// rounds, `bench/hosts-data.sh`'s streams) 16 MiB ran 1 MiB messages at
/// 0.92× raw TCP and 4 MiB ones at 0.83× (a 16 MiB window holds three of
/// them, and every fourth waited for returned credit); 32 MiB at 0.97×
/// and 0.92×; 64 MiB was no better than 32.
pub const DEFAULT_EAGER_WINDOW_MAX: u64 = 32 << 20;
/// Default bound on memory for unexpected eager messages: 128 MiB, i.e. full
/// windows for 16 peer processes (half the bound) and reduced ones (256 KiB,
/// for small messages) for 256 more; later peers send everything by
/// rendezvous.
pub const DEFAULT_UNEXPECTED_LIMIT: u64 = 128 << 20;
/// Default bound on what a sender holds for unreceived messages: 64 MiB
/// (copies of small blocking sends the receiver had no credit for, and
/// owned payloads of nonblocking rendezvous sends). Past it a blocking
/// standard send waits for its match instead of returning at once; 64 MiB
/// keeps a flood of small messages flowing (tens of thousands of them
/// outstanding) at a fraction of what a rank usually has.
pub const DEFAULT_SEND_BUFFER_LIMIT: u64 = 64 << 20;
/// Default bound on the sends that wait for their receivers in one process
/// holding a message (a copy, an owned payload, or memory lent by
/// `MPI_Isend`): 65,536. Each costs bookkeeping whatever its payload (about
/// 1.3 KiB per `MPI_Isend` with MPI's generalized request), so this bounds
/// that at about 85 MiB; past it a blocking send waits for its match and a
/// nonblocking one fails (`BridgeError::TooManyPendingSends`).
pub const DEFAULT_MAX_PENDING_SENDS: u64 = 65_536;
/// Default deadline of an orderly shutdown (`Engine::shutdown`, dropping
/// the engine, `MPI_Finalize`): how long it waits for every peer to take
/// what was sent to it (queued frames, announced messages waiting for their
/// receive) before it reports, per peer, what could not be delivered. Five
/// minutes, like the admission deadline: a receiver may be computing for a
/// long time before it posts its receives.
pub const DEFAULT_FINALIZE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default limit of data connections from one source (a uid on the Unix
/// socket, an IP address on TCP) waiting to be admitted (in their handshake
/// or for the table naming them): 128, more than the ranks of one job on
/// one host that may all connect before we formed our intercommunicator.
/// `ISTHMUS_ADMISSION_PER_SOURCE`.
pub const DEFAULT_ADMISSION_PER_SOURCE: usize = 128;
/// Default deadline of a data-connection handshake: 30 s. A stranger who
/// connects and says nothing holds a descriptor that long (bounded per
/// source by the admission limit); a rank that is merely slow — a two-core
/// host running two jobs and their launchers — must not fail its connect
/// (10 s did, under CI's load, between two network namespaces).
/// `ISTHMUS_HANDSHAKE_TIMEOUT` (seconds).
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default age after which messages for a context nobody registered are dropped.
pub const DEFAULT_EARLY_CONTEXT_AGE: Duration = Duration::from_secs(120);

/// Configuration of an [`Engine`]. Build it with [`EngineConfig::new`]
/// (defaults, overridden by the environment) and adjust fields as needed.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Name of this host; peers with the same host name connect over the Unix socket.
    pub host: String,
    /// How long a data connection from a process not (yet) named by any
    /// remote group of ours waits for such a table before it is refused;
    /// also how long a connector waits for the acceptor's credit grant.
    pub admission_timeout: Duration,
    /// Messages up to this many bytes are sent at once when the receiver's
    /// credit allows; larger ones wait until the receiver matched them.
    /// Environment: `ISTHMUS_EAGER_LIMIT` (bytes, `k`/`m`/`g` suffixes).
    pub eager_limit: usize,
    /// Messages above `eager_limit` and up to this many bytes are sent at
    /// once only if the receiver's credit covers them when sent; otherwise
    /// by rendezvous (never buffered here, never waiting for credit).
    /// `ISTHMUS_LARGE_EAGER_LIMIT`; at most the eager window is useful.
    pub large_eager_limit: usize,
    /// Eager credit granted to each connecting peer: unreceived bytes (plus
    /// 128 per message) it may make this process hold. `ISTHMUS_EAGER_WINDOW`.
    pub eager_window: u64,
    /// The largest a peer's window grows to while it streams messages it
    /// lacks credit for (never less than `eager_window`).
    /// `ISTHMUS_EAGER_WINDOW_MAX`.
    pub eager_window_max: u64,
    /// Bound on the memory of unexpected eager messages over all peers (the
    /// sum of the granted windows). `ISTHMUS_UNEXPECTED_LIMIT`.
    pub unexpected_limit: u64,
    /// A data connection's handshake must finish within this.
    pub handshake_timeout: Duration,
    /// Data connections from one source (uid on the Unix socket, IP address
    /// on TCP) that may wait at once to be admitted; more are closed at
    /// accept. `ISTHMUS_ADMISSION_PER_SOURCE`.
    pub admission_per_source: usize,
    /// Messages for a context nobody created an InterComm for are dropped after this.
    pub early_context_age: Duration,
    /// Bound on the memory this process holds for its unreceived messages;
    /// past it blocking sends wait for their match. `ISTHMUS_SEND_BUFFER_LIMIT`.
    pub send_buffer_limit: u64,
    /// Bound on the sends holding a message for a receiver that has not
    /// taken it; past it nonblocking sends fail. `ISTHMUS_MAX_PENDING_SENDS`.
    pub max_pending_sends: u64,
    /// How long an orderly shutdown waits for peers to take what was sent
    /// to them. `ISTHMUS_FINALIZE_TIMEOUT` (seconds).
    pub finalize_timeout: Duration,
    /// The IP address the TCP listener binds (on a port the kernel picks);
    /// `0.0.0.0` or `::` for all. [`EngineConfig::new`]: `127.0.0.1`;
    /// [`EngineConfig::from_env`]: `ISTHMUS_DATA_ADDR`, see
    /// [`address::default_listen`] when unset.
    pub listen: IpAddr,
    /// Addresses to publish instead of the listen address (with the
    /// listener's port), in order; empty: the listen address, or the
    /// host's interface addresses when it is unspecified.
    /// `ISTHMUS_DATA_ADVERTISE`.
    pub advertise: Vec<IpAddr>,
    /// What carries frames between this process and processes of the
    /// same host and locality: shared memory (default) or the Unix socket.
    /// Shared memory is used on a connection only when both ends allow it.
    /// `ISTHMUS_TRANSPORT` (`shm` or `socket`).
    pub local_transport: LocalTransport,
    /// On shared memory, messages of at least this many bytes go by single
    /// copy (the receiver reads them from the sender's memory with
    /// `process_vm_readv`) where the kernel lets the receiver; None: never.
    /// `ISTHMUS_SHM_CMA` (`on`, the default, or `off`) and
    /// `ISTHMUS_SHM_CMA_THRESHOLD` (512 KiB by default).
    pub single_copy: Option<usize>,
    /// Over TCP, offer a peer we connect to that it write to us on the same
    /// connection (see `transport::duplex`): its answers then carry TCP's
    /// acknowledgements; and take such an offer. Off: neither (one
    /// connection per direction, as on Unix sockets and shared memory).
    /// `ISTHMUS_TCP_DUPLEX` (`on`, the default, or `off`).
    pub tcp_duplex: bool,
}

impl EngineConfig {
    /// Defaults (see the `DEFAULT_*` constants), overridden by `ISTHMUS_EAGER_LIMIT`,
    /// `ISTHMUS_LARGE_EAGER_LIMIT`, `ISTHMUS_EAGER_WINDOW`, `ISTHMUS_EAGER_WINDOW_MAX`,
    /// `ISTHMUS_UNEXPECTED_LIMIT`, `ISTHMUS_ADMISSION_PER_SOURCE`,
    /// `ISTHMUS_SEND_BUFFER_LIMIT`, `ISTHMUS_MAX_PENDING_SENDS`,
    /// `ISTHMUS_FINALIZE_TIMEOUT` and `ISTHMUS_HANDSHAKE_TIMEOUT` when set.
    pub fn new(host: impl Into<String>) -> Self {
        let env = |name: &str, default: u64| {
            std::env::var(name).ok().map_or(default, |v| match parse_size(&v) {
                Some(n) => n,
                None => {
                    warn!(variable = name, value = %v, "not a size in bytes; using the default");
                    default
                }
            })
        };
        EngineConfig {
            host: host.into(),
            admission_timeout: DEFAULT_ADMISSION_TIMEOUT,
            eager_limit: env("ISTHMUS_EAGER_LIMIT", DEFAULT_EAGER_LIMIT as u64)
                .try_into()
                .unwrap_or(usize::MAX),
            large_eager_limit: env(
                "ISTHMUS_LARGE_EAGER_LIMIT",
                DEFAULT_LARGE_EAGER_LIMIT as u64,
            )
            .try_into()
            .unwrap_or(usize::MAX),
            eager_window: env("ISTHMUS_EAGER_WINDOW", DEFAULT_EAGER_WINDOW),
            eager_window_max: env("ISTHMUS_EAGER_WINDOW_MAX", DEFAULT_EAGER_WINDOW_MAX),
            unexpected_limit: env("ISTHMUS_UNEXPECTED_LIMIT", DEFAULT_UNEXPECTED_LIMIT),
            handshake_timeout: env_seconds("ISTHMUS_HANDSHAKE_TIMEOUT", DEFAULT_HANDSHAKE_TIMEOUT),
            admission_per_source: env(
                "ISTHMUS_ADMISSION_PER_SOURCE",
                DEFAULT_ADMISSION_PER_SOURCE as u64,
            )
            .try_into()
            .unwrap_or(usize::MAX),
            early_context_age: DEFAULT_EARLY_CONTEXT_AGE,
            send_buffer_limit: env("ISTHMUS_SEND_BUFFER_LIMIT", DEFAULT_SEND_BUFFER_LIMIT),
            max_pending_sends: env("ISTHMUS_MAX_PENDING_SENDS", DEFAULT_MAX_PENDING_SENDS).max(1),
            finalize_timeout: env_seconds("ISTHMUS_FINALIZE_TIMEOUT", DEFAULT_FINALIZE_TIMEOUT),
            listen: IpAddr::V4(Ipv4Addr::LOCALHOST),
            advertise: Vec::new(),
            local_transport: env_transport(),
            single_copy: env_single_copy(env(
                transport::SINGLE_COPY_THRESHOLD_ENV,
                transport::DEFAULT_SINGLE_COPY_THRESHOLD as u64,
            )),
            tcp_duplex: env_on_off(TCP_DUPLEX_ENV),
        }
    }

    /// [`EngineConfig::new`] plus the data addresses from the environment
    /// (`ISTHMUS_DATA_ADDR`, `ISTHMUS_DATA_ADVERTISE`; see [`address`]); an
    /// unset listen address follows from `vmd_addr`, the address this
    /// process reaches its vmd at ([`address::default_listen`]). A
    /// malformed value is an error naming the variable.
    pub fn from_env(host: impl Into<String>, vmd_addr: &str, host_data_addr: &str) -> Result<Self> {
        let (listen, advertise) = address::from_env(vmd_addr, host_data_addr)?;
        Ok(EngineConfig {
            listen,
            advertise,
            ..EngineConfig::new(host)
        })
    }
}

/// `ISTHMUS_TRANSPORT`, else the default.
fn env_transport() -> LocalTransport {
    let Ok(v) = std::env::var(LocalTransport::ENV) else {
        return DEFAULT_LOCAL_TRANSPORT;
    };
    LocalTransport::parse(&v).unwrap_or_else(|| {
        warn!(variable = LocalTransport::ENV, value = %v, "not 'shm' or 'socket'; using the default");
        DEFAULT_LOCAL_TRANSPORT
    })
}

/// `ISTHMUS_SHM_CMA`: the single-copy threshold `threshold` (at least 1
/// byte), or None when it says `off`.
fn env_single_copy(threshold: u64) -> Option<usize> {
    env_on_off(transport::SINGLE_COPY_ENV)
        .then(|| usize::try_from(threshold.max(1)).unwrap_or(usize::MAX))
}

/// Whether TCP connections carry frames both ways (see [`EngineConfig::tcp_duplex`]).
pub const TCP_DUPLEX_ENV: &str = "ISTHMUS_TCP_DUPLEX";

/// A switch from the environment: `on` (also when unset) or `off`.
fn env_on_off(name: &str) -> bool {
    match std::env::var(name) {
        Err(_) => true,
        Ok(v) => match v.trim() {
            "on" => true,
            "off" => false,
            _ => {
                warn!(variable = name, value = %v, "not 'on' or 'off'; using 'on'");
                true
            }
        },
    }
}

/// What carries frames on one host unless `ISTHMUS_TRANSPORT` says otherwise.
pub const DEFAULT_LOCAL_TRANSPORT: LocalTransport = LocalTransport::Shm;

/// A duration in seconds from the environment ("30", "0.5"), else `default`.
fn env_seconds(name: &str, default: Duration) -> Duration {
    let Ok(v) = std::env::var(name) else {
        return default;
    };
    match parse_seconds(&v) {
        Some(d) => d,
        None => {
            warn!(variable = name, value = %v, "not a duration in seconds; using the default");
            default
        }
    }
}

/// "30", "0.5", "2s" → a duration.
fn parse_seconds(s: &str) -> Option<Duration> {
    let s = s.trim();
    let s = s.strip_suffix('s').unwrap_or(s);
    let secs = s.trim().parse::<f64>().ok()?;
    Duration::try_from_secs_f64(secs).ok()
}

/// "65536", "64k", "1M", "2g" → bytes.
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, shift) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 10),
        (i, 'm' | 'M') => (&s[..i], 20),
        (i, 'g' | 'G') => (&s[..i], 30),
        _ => (s, 0),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// How long a death reported by the group service waits for the dead
/// process's data connection to close before the peer fails anyway
/// ([`Engine::peer_reported_dead`]).
pub const DEATH_NOTICE_GRACE: Duration = Duration::from_secs(30);

/// One bridge engine (normally one per process).
pub struct Engine {
    pub(crate) shared: Arc<Shared>,
    unix_name: String,
    /// Where this process itself can reach its TCP listener (to wake it).
    tcp_wake: SocketAddr,
}

impl Engine {
    /// Generate this engine's key pair (its process id derives from the public
    /// key), bind the Unix (abstract namespace) and TCP (`config.listen`,
    /// port 0) listeners and start accepting. The endpoint publishes the
    /// TCP addresses peers should dial (see [`address::published`]) and the
    /// calling thread's [`Locality`].
    pub fn start(config: EngineConfig) -> Result<Arc<Engine>> {
        let identity = Identity::generate()?;
        let process = identity.process();
        let unix_name = format!("@isthmus-bridge-{process}");
        let unix = UnixListener::bind_addr(
            &transport::unix_addr(&unix_name)
                .map_err(|e| BridgeError::io("building the Unix socket address", e))?,
        )
        .map_err(|e| BridgeError::io(format!("binding Unix socket {unix_name}"), e))?;
        let tcp = TcpListener::bind((config.listen, 0)).map_err(|e| {
            BridgeError::io(
                format!("binding TCP {}", SocketAddr::new(config.listen, 0)),
                e,
            )
        })?;
        let tcp_addr = tcp
            .local_addr()
            .map_err(|e| BridgeError::io("reading the TCP listener address", e))?;
        let interfaces = if tcp_addr.ip().is_unspecified() && config.advertise.is_empty() {
            address::interface_addresses()?
        } else {
            Vec::new()
        };
        let published = address::published(
            tcp_addr,
            &config.advertise,
            &interfaces,
            address::v4_on_v6(),
        );
        let tcp_wake = match tcp_addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => {
                SocketAddr::from((Ipv4Addr::LOCALHOST, tcp_addr.port()))
            }
            IpAddr::V6(ip) if ip.is_unspecified() => {
                SocketAddr::from((Ipv6Addr::LOCALHOST, tcp_addr.port()))
            }
            _ => tcp_addr,
        };
        let endpoint = Endpoint {
            process,
            public_key: identity.public_key(),
            host: config.host,
            locality: Locality::current(),
            unix: Some(unix_name.clone()),
            tcp: published,
        };
        let poller = Poller::new().map_err(|e| BridgeError::io("creating the epoll poller", e))?;
        let limits = Limits {
            eager_limit: config.eager_limit,
            large_eager_limit: config.large_eager_limit.max(config.eager_limit),
            admission_timeout: config.admission_timeout,
            handshake_timeout: config.handshake_timeout,
            early_context_age: config.early_context_age,
            finalize_timeout: config.finalize_timeout,
            local_transport: config.local_transport,
            single_copy: config.single_copy,
            tcp_duplex: config.tcp_duplex,
        };
        let ledger = Ledger::new(
            config.unexpected_limit,
            config.eager_window,
            config.eager_window_max,
        );
        let (admission, lobby_poll) = Admission::new(config.admission_per_source)
            .map_err(|e| BridgeError::io("creating the admission poll", e))?;
        let shared = Arc::new(Shared::new(
            endpoint,
            identity,
            limits,
            ledger,
            SendBudget::new(config.send_buffer_limit, config.max_pending_sends),
            Arc::clone(&poller),
            admission,
        ));
        let t0 = spawn("bridge-poller", move || poller.run())?;
        let s0 = Arc::clone(&shared);
        let t_lobby = spawn("bridge-admission", move || lobby::run(s0, lobby_poll))?;
        shared.add_threads([t0, t_lobby]);
        let s1 = Arc::clone(&shared);
        let t1 = spawn("bridge-accept-unix", move || {
            for s in unix.incoming() {
                if s1.is_shutting_down() {
                    break;
                }
                match s {
                    Ok(s) => s1.accepted(Stream::Unix(s), None),
                    Err(e) => warn!(error = %e, "accept on the Unix socket failed"),
                }
            }
        })?;
        let s2 = Arc::clone(&shared);
        let t2 = spawn("bridge-accept-tcp", move || {
            for s in tcp.incoming() {
                if s2.is_shutting_down() {
                    break;
                }
                match s {
                    Ok(s) => {
                        let _ = s.set_nodelay(true);
                        let addr = s.peer_addr().ok();
                        s2.accepted(Stream::Tcp(s), addr)
                    }
                    Err(e) => warn!(error = %e, "accept on the TCP socket failed"),
                }
            }
        })?;
        shared.add_threads([t1, t2]);
        let published: Vec<String> = shared.endpoint.tcp.iter().map(|a| a.to_string()).collect();
        info!(
            process = %shared.endpoint.process,
            unix = %unix_name,
            tcp = %tcp_addr,
            published = %published.join(","),
            "bridge engine started"
        );
        Ok(Arc::new(Engine {
            shared,
            unix_name,
            tcp_wake,
        }))
    }

    /// How the outgoing data connection to `process` reached it (transport,
    /// our address, the address dialled), if one is open.
    pub fn route_to(&self, process: Uuid) -> Option<Route> {
        self.shared.conns.outgoing(process).map(|c| Route {
            single_copy: c.single_copy_allowed(),
            ..c.route()
        })
    }

    /// How many messages went by single copy (read from the sender's
    /// memory, `transport::cma`) since the engine started, each way.
    pub fn single_copy_stats(&self) -> SingleCopyStats {
        self.shared.single_copies.get()
    }

    /// How many rendezvous payloads went on returned credit, before their
    /// CTS, since the engine started (see `engine::push`).
    pub fn push_stats(&self) -> PushStats {
        self.shared.pushes.get()
    }

    /// How peers reach this engine (publish `endpoint().encode()`).
    pub fn endpoint(&self) -> Endpoint {
        self.shared.endpoint.clone()
    }

    /// What to do when a peer's program aborts (`MPI_Abort`, an ABORT frame
    /// from a process of a remote group we were given): `handler` is called
    /// with the peer and the program's error code, on the thread that read
    /// the frame. Without one the abort is only logged.
    pub fn on_abort(&self, handler: AbortHandler) {
        *lock(&self.shared.on_abort) = Some(handler);
    }

    /// Tells each of `peers` (processes of remote groups this engine was
    /// given) that this process's program aborts with `code`, over the data
    /// connections, and waits until each notice is written or `timeout`
    /// passes. Returns the peers not reached, with why.
    pub fn abort_peers(&self, peers: &[Uuid], code: i32, timeout: Duration) -> Vec<(Uuid, String)> {
        self.shared
            .abort_peers(peers, code, std::time::Instant::now() + timeout)
    }

    /// Report that a peer process died (called by the group-service layer).
    /// Every pending and future operation involving it fails with `PeerFailed`.
    pub fn peer_failed(&self, process: Uuid, reason: &str) {
        self.shared.peer_failed(process, reason)
    }

    /// Report that the group service saw a peer process die. If the peer
    /// has an open data connection to us, what it sent before dying is
    /// still in that socket: it is read first, and the end of the
    /// connection (the kernel closes a dead process's sockets) fails the
    /// peer, as a process is dead when its connection closes. Should the
    /// connection stay open, the peer fails [`DEATH_NOTICE_GRACE`] later
    /// anyway. With no connection from it, the peer fails at once.
    pub fn peer_reported_dead(&self, process: Uuid, reason: &str) {
        if self.shared.conns.incoming(process).is_none() {
            return self.shared.peer_failed(process, reason);
        }
        let shared = Arc::downgrade(&self.shared);
        let reason = reason.to_string();
        let grace = std::thread::Builder::new()
            .name("bridge-death-grace".into())
            .spawn(move || {
                std::thread::sleep(DEATH_NOTICE_GRACE);
                if let Some(shared) = shared.upgrade() {
                    shared.peer_failed(process, &reason);
                }
            });
        if grace.is_err() {
            // No thread to wait with: fail now rather than never.
            self.shared
                .peer_failed(process, "death reported by the group service");
        }
    }

    /// Orderly shutdown, what `MPI_Finalize` does: deliver what was sent
    /// (see [`Engine::flush`], within [`EngineConfig::finalize_timeout`]),
    /// then send BYE, close sockets, stop threads. Pending operations fail
    /// with `EngineShutDown`. Also done on drop. What could not be
    /// delivered is logged and written to standard error, per peer.
    pub fn shutdown(&self) {
        self.stop(true)
    }

    /// Waits until every live peer took what this process sent it: frames
    /// queued on our connection to it are written, and every announced
    /// (rendezvous) message was matched by a receive and its payload
    /// written. Returns, per peer, what was left when `timeout` passed or
    /// when the peer failed meanwhile (empty: all delivered). Sends keep
    /// working meanwhile; the engine stays up.
    pub fn flush(&self, timeout: Duration) -> Vec<Undelivered> {
        self.shared.flush(std::time::Instant::now() + timeout)
    }

    /// Test hook: close every socket abruptly, without BYE (peers see a failure).
    #[doc(hidden)]
    pub fn abort_for_test(&self) {
        self.stop(false)
    }

    fn stop(&self, orderly: bool) {
        let shared = &self.shared;
        if shared.is_shutting_down() {
            return;
        }
        if orderly {
            // Completed sends are delivered before the goodbye (MPI: a send
            // that completed is received even if its sender finalizes).
            let timeout = shared.limits.finalize_timeout;
            for u in shared.flush(std::time::Instant::now() + timeout) {
                error!(peer = %u.process, queued = u.queued, unmatched = u.unmatched, reason = %u.reason,
                    "messages sent to this peer could not be delivered before shutdown");
                // Also on standard error: a program without a log
                // subscriber must not lose messages silently.
                eprintln!("isthmus: {u}");
            }
        }
        if !shared.begin_shutdown() {
            return;
        }
        let conns = shared.conns.all_outgoing();
        for c in &conns {
            if orderly {
                c.close()
            } else {
                c.abort()
            }
        }
        // Wake the accept loops so they observe the flag.
        if let Ok(a) = transport::unix_addr(&self.unix_name) {
            let _ = UnixStream::connect_addr(&a);
        }
        let _ = TcpStream::connect_timeout(&self.tcp_wake, Duration::from_secs(1));
        shared.conns.wake_all_readers();
        shared.admission.close();
        let handles: Vec<JoinHandle<()>> = shared.take_threads();
        // Writers and acceptors exit on their own; the poller once stopped.
        let (writers_and_acceptors, poller): (Vec<_>, Vec<_>) = handles
            .into_iter()
            .partition(|h| h.thread().name().is_some_and(|n| n != "bridge-poller"));
        for h in writers_and_acceptors {
            let _ = h.join();
        }
        shared.conns.shut_down_incoming();
        for c in &conns {
            c.abort();
        }
        shared.poller.stop();
        for h in poller {
            let _ = h.join();
        }
        // Fail whatever is still pending.
        for c in shared.contexts.drain() {
            c.shut_down();
        }
        shared.conns.wake_all_readers();
        shared.ssends.shut_down();
        shared.rendezvous.shut_down();
        debug!(process = %shared.endpoint.process, orderly, "bridge engine stopped");
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop(true);
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_seconds, parse_size};
    use std::time::Duration;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("30"), Some(Duration::from_secs(30)));
        assert_eq!(parse_seconds("0.5s"), Some(Duration::from_millis(500)));
        assert_eq!(parse_seconds("-1"), None);
        assert_eq!(parse_seconds("soon"), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536"), Some(65536));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size(" 2G "), Some(2 << 30));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("99999999999999999999g"), None);
    }
}

//! The per-process bridge [`Engine`]: its listening sockets and accept
//! loops, and orderly or abrupt shutdown. Its state lives in [`Shared`];
//! intercommunicators are created by `Engine::intercomm` (defined with
//! [`InterComm`](crate::InterComm), so the engine knows nothing of them).
//! Not a global singleton — several engines can live in one process.

mod shared;

use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tracing::{debug, info, warn};
use uuid::Uuid;

use crate::endpoint::Endpoint;
use crate::error::{BridgeError, Result};
use crate::handshake::Identity;
use crate::transport::{self, Stream};
use shared::spawn;
pub(crate) use shared::Shared;

/// How long an incoming connection from a process that no remote table names
/// yet may wait for one (the remote job may form its intercommunicator first).
pub const DEFAULT_ADMISSION_TIMEOUT: Duration = Duration::from_secs(300);

/// Configuration of an [`Engine`].
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Name of this host; peers with the same host name connect over the Unix socket.
    pub host: String,
    /// How long a data connection from a process not (yet) named by any
    /// remote group of ours waits for such a table before it is refused.
    pub admission_timeout: Duration,
}

impl EngineConfig {
    /// Defaults for `host`.
    pub fn new(host: impl Into<String>) -> Self {
        EngineConfig {
            host: host.into(),
            admission_timeout: DEFAULT_ADMISSION_TIMEOUT,
        }
    }
}

/// One bridge engine (normally one per process).
pub struct Engine {
    pub(crate) shared: Arc<Shared>,
    unix_name: String,
}

impl Engine {
    /// Generate this engine's key pair (its process id derives from the public
    /// key), bind the Unix (abstract namespace) and TCP (127.0.0.1:0)
    /// listeners and start accepting.
    pub fn start(config: EngineConfig) -> Result<Arc<Engine>> {
        let identity = Identity::generate()?;
        let process = identity.process();
        let unix_name = format!("@isthmus-bridge-{process}");
        let unix = UnixListener::bind_addr(
            &transport::unix_addr(&unix_name)
                .map_err(|e| BridgeError::io("building the Unix socket address", e))?,
        )
        .map_err(|e| BridgeError::io(format!("binding Unix socket {unix_name}"), e))?;
        let tcp = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| BridgeError::io("binding TCP 127.0.0.1:0", e))?;
        let tcp_addr = tcp
            .local_addr()
            .map_err(|e| BridgeError::io("reading the TCP listener address", e))?;
        let endpoint = Endpoint {
            process,
            public_key: identity.public_key(),
            host: config.host,
            unix: Some(unix_name.clone()),
            tcp: Some(tcp_addr),
        };
        let shared = Arc::new(Shared::new(endpoint, identity, config.admission_timeout));
        let s1 = Arc::clone(&shared);
        let t1 = spawn("bridge-accept-unix", move || {
            for s in unix.incoming() {
                if s1.is_shutting_down() {
                    break;
                }
                match s {
                    Ok(s) => s1.spawn_reader(Stream::Unix(s), None),
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
                        s2.spawn_reader(Stream::Tcp(s), addr)
                    }
                    Err(e) => warn!(error = %e, "accept on the TCP socket failed"),
                }
            }
        })?;
        shared.add_threads([t1, t2]);
        info!(process = %shared.endpoint.process, unix = %unix_name, tcp = %tcp_addr, "bridge engine started");
        Ok(Arc::new(Engine { shared, unix_name }))
    }

    /// How peers reach this engine (publish `endpoint().encode()`).
    pub fn endpoint(&self) -> Endpoint {
        self.shared.endpoint.clone()
    }

    /// Report that a peer process died (called by the group-service layer).
    /// Every pending and future operation involving it fails with `PeerFailed`.
    pub fn peer_failed(&self, process: Uuid, reason: &str) {
        self.shared.peer_failed(process, reason)
    }

    /// Orderly shutdown: flush queued frames, send BYE, close sockets, stop threads.
    /// Pending operations fail with `EngineShutDown`. Also done on drop.
    pub fn shutdown(&self) {
        self.stop(true)
    }

    /// Test hook: close every socket abruptly, without BYE (peers see a failure).
    #[doc(hidden)]
    pub fn abort_for_test(&self) {
        self.stop(false)
    }

    fn stop(&self, orderly: bool) {
        let shared = &self.shared;
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
        if let Some(a) = shared.endpoint.tcp {
            let _ = TcpStream::connect(a);
        }
        shared.conns.wake_all_readers();
        shared.admission.close();
        let handles: Vec<JoinHandle<()>> = shared.take_threads();
        // Writers and acceptors exit on their own; readers after their socket is shut down.
        let (writers_and_acceptors, readers): (Vec<_>, Vec<_>) =
            handles.into_iter().partition(|h| {
                h.thread()
                    .name()
                    .is_some_and(|n| !n.starts_with("bridge-reader"))
            });
        for h in writers_and_acceptors {
            let _ = h.join();
        }
        shared.conns.shut_down_accepted();
        for c in &conns {
            c.abort();
        }
        for h in readers {
            let _ = h.join();
        }
        // Fail whatever is still pending.
        for c in shared.contexts.drain() {
            c.shut_down();
        }
        shared.conns.wake_all_readers();
        shared.ssends.shut_down();
        debug!(process = %shared.endpoint.process, orderly, "bridge engine stopped");
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop(true);
    }
}

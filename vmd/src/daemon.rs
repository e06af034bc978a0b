//! Binding, serving and stopping a vmd. The `vmd` binary, the demo and the
//! tests all start a daemon through [`Daemon::bind`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use isthmus_groups::Groups;
use isthmus_proto::vmd_server::VmdServer;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_stream::wrappers::TcpListenerStream;
use tracing::info;

use crate::service::VmdService;
use crate::session::SessionContext;

/// How long a stopping daemon waits for open sessions to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// How a daemon is set up.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    /// Where to listen; port 0 picks a free one.
    pub listen: SocketAddr,
    /// The name this host goes by in group tables.
    pub host: String,
}

/// A bound, not yet serving, daemon.
pub struct Daemon {
    listener: TcpListener,
    local_addr: SocketAddr,
    ctx: SessionContext,
    halt: Arc<Notify>,
}

/// Errors of starting a daemon.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("serving failed: {0}")]
    Serve(#[from] tonic::transport::Error),
}

impl Daemon {
    pub async fn bind(config: DaemonConfig) -> Result<Self, DaemonError> {
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|source| DaemonError::Bind { addr: config.listen, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| DaemonError::Bind { addr: config.listen, source })?;
        let ctx = SessionContext { groups: Groups::in_memory(), host: config.host, secret: Arc::new(new_secret()) };
        Ok(Self { listener, local_addr, ctx, halt: Arc::new(Notify::new()) })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle that stops the daemon when notified (what `Halt` uses too).
    pub fn halt_handle(&self) -> Arc<Notify> {
        self.halt.clone()
    }

    /// Serves until halted through the API or until `shutdown` completes.
    pub async fn serve(self, shutdown: impl std::future::Future<Output = ()> + Send) -> Result<(), DaemonError> {
        let halt = self.halt.clone();
        let service = VmdService::new(self.ctx, self.halt);
        info!(addr = %self.local_addr, "vmd serving");
        let stopping = Arc::new(Notify::new());
        let stop = {
            let stopping = stopping.clone();
            async move {
                tokio::select! {
                    () = shutdown => {},
                    () = halt.notified() => {},
                }
                info!("vmd shutting down");
                stopping.notify_one();
            }
        };
        let server = tonic::transport::Server::builder()
            .tcp_nodelay(true)
            // A peer whose host vanished without closing its socket is found
            // out by keepalive pings; a process that died is found at once
            // because its kernel closes the socket.
            .http2_keepalive_interval(Some(Duration::from_millis(500)))
            .http2_keepalive_timeout(Some(Duration::from_millis(500)))
            .add_service(VmdServer::new(service))
            .serve_with_incoming_shutdown(TcpListenerStream::new(self.listener), stop);
        // A graceful shutdown waits for open streams, and sessions are open
        // for as long as their clients live: give them a moment, then go.
        tokio::select! {
            r = server => r?,
            () = async { stopping.notified().await; tokio::time::sleep(SHUTDOWN_GRACE).await } => {
                info!("sessions still open after {SHUTDOWN_GRACE:?}; closing them");
            }
        }
        Ok(())
    }
}

/// 32 random bytes that members of this virtual machine show each other on
/// data connections.
fn new_secret() -> Vec<u8> {
    let mut secret = Vec::with_capacity(32);
    secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    secret
}

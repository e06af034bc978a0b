//! Binding, serving and stopping a vmd. The `vmd` binary, the demo and the
//! tests all start a daemon through [`Daemon::bind`].
//!
//! A daemon is either the virtual machine's first vmd, holding the resource
//! manager (host and job tables), or a vmd that joined it (`join`) as one
//! more host. Either way it has a [`TaskerHub`] for the taskers of its host.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use isthmus_groups::Groups;
use isthmus_proto as pb;
use isthmus_proto::console_server::ConsoleServer;
use isthmus_proto::peers_server::PeersServer;
use isthmus_proto::taskers_server::TaskersServer;
use isthmus_proto::tasks_server::TasksServer;
use isthmus_rm::{HostDecl, HubUp, PortMsg, Refusal, ResourceManager, TaskerHub};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_stream::wrappers::TcpListenerStream;
use tracing::info;

use crate::host_link::{self, JoinedLink};
use crate::service::{ConsoleService, PeersService, Role, TaskersService, TasksService};
use crate::session::{SessionContext, SessionLimits};
pub use isthmus_client::Keepalive;

/// How long a stopping daemon waits for open sessions to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// How a daemon is set up.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    /// Where to listen; port 0 picks a free one.
    pub listen: SocketAddr,
    /// The name this host goes by in group and host tables.
    pub host: String,
}

/// How this daemon's host takes part in the virtual machine's resource
/// management (all defaults: a new virtual machine of one host).
#[derive(Clone, Debug, Default)]
pub struct HostOptions {
    /// Slots of this host (overrides its hostfile entry); `None`: the
    /// hostfile's, else the number of CPUs.
    pub slots: Option<u32>,
    /// Implementations this host may run (overrides its hostfile entry);
    /// empty: the hostfile's, else any its taskers register.
    pub offers: Vec<String>,
    /// Hosts read from a hostfile (the entry named like this host describes it).
    pub hostfile: Vec<HostDecl>,
    /// Join the virtual machine whose manager listens here instead of
    /// starting a new one.
    pub join: Option<String>,
}

/// A bound, not yet serving, daemon.
pub struct Daemon {
    listener: TcpListener,
    local_addr: SocketAddr,
    ctx: SessionContext,
    role: Role,
    hub: TaskerHub,
    link: Option<JoinedLink>,
    halt: Arc<Notify>,
    keepalive: Option<Keepalive>,
}

/// Errors of starting a daemon.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("serving failed: {0}")]
    Serve(#[from] tonic::transport::Error),
    #[error("host table: {0}")]
    Hosts(#[from] Refusal),
    #[error("cannot join the virtual machine at {addr}: {source}")]
    Join {
        addr: String,
        source: isthmus_client::ClientError,
    },
}

impl Daemon {
    pub async fn bind(config: DaemonConfig) -> Result<Self, DaemonError> {
        Self::bind_with(config, HostOptions::default()).await
    }

    pub async fn bind_with(
        config: DaemonConfig,
        options: HostOptions,
    ) -> Result<Self, DaemonError> {
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| DaemonError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let local_addr = listener.local_addr().map_err(|source| DaemonError::Bind {
            addr: config.listen,
            source,
        })?;
        let halt = Arc::new(Notify::new());
        let mine = options.hostfile.iter().find(|d| d.name == config.host);
        let local = isthmus_rm::hosts::validated(HostDecl {
            name: config.host.clone(),
            slots: options.slots.or(mine.map(|d| d.slots)).unwrap_or_else(cpus),
            offers: if options.offers.is_empty() {
                mine.map(|d| d.offers.clone()).unwrap_or_default()
            } else {
                options.offers.clone()
            },
            addr: local_addr.to_string(),
        })?;
        let (hub, hub_up) = TaskerHub::new();
        let (secret, role, link) = match &options.join {
            Some(master) => {
                let hello = pb::HostHello {
                    name: local.name.clone(),
                    addr: local.addr.clone(),
                    slots: local.slots,
                    offers: local.offers.clone(),
                };
                let (secret, link) =
                    host_link::join(master, hello, hub.clone(), hub_up, halt.clone())
                        .await
                        .map_err(|source| DaemonError::Join {
                            addr: master.clone(),
                            source,
                        })?;
                (
                    secret,
                    Role::Member {
                        master: master.clone(),
                    },
                    Some(link),
                )
            }
            None => {
                let secret = new_secret();
                let (rm, port) = ResourceManager::new(local, options.hostfile.clone(), &secret)?;
                wire_local(&rm, &hub, hub_up, port);
                (secret, Role::Manager(rm), None)
            }
        };
        let ctx = SessionContext {
            groups: Groups::in_memory(),
            host: config.host,
            secret: Arc::new(secret),
            limits: SessionLimits::default(),
        };
        Ok(Self {
            listener,
            local_addr,
            ctx,
            role,
            hub,
            link,
            halt,
            keepalive: Some(Keepalive::REMOTE),
        })
    }

    /// Sets the HTTP/2 keepalive of client connections (`None`: no pings;
    /// only closed connections end sessions). Default [`Keepalive::REMOTE`].
    pub fn set_keepalive(&mut self, keepalive: Option<Keepalive>) {
        self.keepalive = keepalive;
    }

    /// Sets what each session may hold (default [`SessionLimits::default`]).
    pub fn set_limits(&mut self, limits: SessionLimits) {
        self.ctx.limits = limits;
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle that stops the daemon when notified (what `Halt` uses too).
    pub fn halt_handle(&self) -> Arc<Notify> {
        self.halt.clone()
    }

    /// The resource manager, if this daemon holds it.
    pub fn resource_manager(&self) -> Option<ResourceManager> {
        self.role.manager().cloned()
    }

    /// Serves until halted through the API or until `shutdown` completes.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), DaemonError> {
        let halt = self.halt.clone();
        let hub = self.hub.clone();
        // One service per audience, all on this one server.
        let tasks = TasksService::new(self.ctx.clone());
        let console = ConsoleService::new(self.ctx.clone(), self.role.clone(), self.halt.clone());
        let taskers = TaskersService::new(self.hub, self.ctx.host.clone());
        let peers = PeersService::new(self.role, self.ctx.host.clone(), self.ctx.secret.clone());
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
        let server = with_keepalive(tonic::transport::Server::builder(), self.keepalive)
            .tcp_nodelay(true)
            .add_service(TasksServer::new(tasks))
            .add_service(ConsoleServer::new(console))
            .add_service(TaskersServer::new(taskers))
            .add_service(PeersServer::new(peers))
            .serve_with_incoming_shutdown(TcpListenerStream::new(self.listener), stop);
        // A graceful shutdown waits for open streams, and sessions are open
        // for as long as their clients live: give them a moment, then go.
        tokio::select! {
            r = server => r?,
            () = async { stopping.notified().await; tokio::time::sleep(SHUTDOWN_GRACE).await } => {
                info!("sessions still open after {SHUTDOWN_GRACE:?}; closing them");
            }
        }
        // Jobs of a stopping vmd have nobody left to report to.
        hub.kill_all();
        if let Some(link) = self.link {
            link.leave().await;
        }
        Ok(())
    }
}

/// A process that died is found at once because its kernel closes the
/// socket; keepalive pings only find peers whose host vanished without
/// closing it, with a grace long enough for a stopped process (see
/// `isthmus_client::channel`).
fn with_keepalive(
    builder: tonic::transport::Server,
    keepalive: Option<Keepalive>,
) -> tonic::transport::Server {
    builder
        .http2_keepalive_interval(keepalive.map(|k| k.interval))
        .http2_keepalive_timeout(keepalive.map(|k| k.timeout))
}

/// On the manager's own host, the hub's reports go straight to the manager
/// and the manager's orders for this host straight to the hub.
fn wire_local(
    rm: &ResourceManager,
    hub: &TaskerHub,
    mut hub_up: tokio::sync::mpsc::UnboundedReceiver<HubUp>,
    mut port: tokio::sync::mpsc::UnboundedReceiver<PortMsg>,
) {
    let (rm_up, host) = (rm.clone(), rm.local_host().to_string());
    tokio::spawn(async move {
        while let Some(msg) = hub_up.recv().await {
            match msg {
                HubUp::Taskers(t) => rm_up.set_taskers(&host, t),
                HubUp::Job(r) => rm_up.report(&host, r),
            }
        }
    });
    let hub = hub.clone();
    tokio::spawn(async move {
        while let Some(msg) = port.recv().await {
            if let PortMsg::Order(o) = msg {
                hub.order(o);
            }
        }
    });
}

fn cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// 32 random bytes that members of this virtual machine show each other on
/// data connections.
fn new_secret() -> Vec<u8> {
    let mut secret = Vec::with_capacity(32);
    secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    secret
}

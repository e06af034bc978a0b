//! Binding, serving and stopping a vmd. The `vmd` binary, the demo and the
//! tests all start a daemon through [`Daemon::bind`].
//!
//! A daemon is either the virtual machine's first vmd, holding the resource
//! manager (host and job tables), or a vmd that joined it (`join`) as one
//! more host. Either way it has a [`TaskerHub`] for the taskers of its host.
//!
//! Where it listens (see [`crate::auth`] for who gets in): always on the Unix
//! socket `vmd.sock` in its runtime directory (peers identified by uid); on
//! TCP only if asked (`listen`): a loopback address takes the token from the
//! runtime directory's 0600 file, any other address requires mutual TLS with
//! the virtual machine's CA, unless `insecure_no_tls` (then the token, and a
//! loud warning at every start).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use isthmus_groups::Groups;
use isthmus_proto as pb;
use isthmus_proto::console_server::ConsoleServer;
use isthmus_proto::peers_server::PeersServer;
use isthmus_proto::taskers_server::TaskersServer;
use isthmus_proto::tasks_server::TasksServer;
use isthmus_rm::{HostDecl, HubUp, PortMsg, Refusal, ResourceManager, TaskerHub};
use isthmus_rm_etcd::Federation;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::Notify;
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Identity as TlsIdentity, ServerTlsConfig};
use tracing::{error, info, warn};

use crate::auth::{self, Authenticator, Policy, Rule, RuntimeDir};

use crate::federation::{Federated, HostStart};
use crate::hello_gate::{HelloGate, HelloLimits};
use crate::host_link::{self, JoinedLink};
use crate::resume::{Resumes, DEFAULT_RESUME_GRACE};
use crate::service::{ConsoleService, PeersService, Role, TaskersService, TasksService};
use crate::session::{SessionContext, SessionLimits};
pub use isthmus_client::Keepalive;

/// How long a stopping daemon waits for open sessions to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// How a daemon is set up.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    /// A TCP address to listen on besides the Unix socket; port 0 picks a
    /// free one.
    pub listen: Option<SocketAddr>,
    /// The name this host goes by in group and host tables.
    pub host: String,
    /// Runtime directory, allowed users, TLS.
    pub security: Security,
}

/// Who may reach the daemon and how (see [`crate::auth`]).
#[derive(Clone, Debug)]
pub struct Security {
    /// Holds `vmd.sock` and `token`; created 0700 (0711 with `allow_uids`).
    pub runtime_dir: PathBuf,
    /// Local uids let in besides the vmd's own and root.
    pub allow_uids: Vec<u32>,
    /// Holds the virtual machine's CA (if this vmd holds it) and this
    /// host's certificate; used only when TLS is.
    pub state_dir: PathBuf,
    /// The CA's certificate and key, given by the operator.
    pub ca: Option<(PathBuf, PathBuf)>,
    /// Serve a non-loopback TCP address without TLS (token only).
    pub insecure_no_tls: bool,
    /// Extra names and addresses for this host's certificate.
    pub tls_names: Vec<String>,
}

impl Default for Security {
    fn default() -> Self {
        Self::in_dir(auth::runtime_dir::default_path())
    }
}

impl Security {
    /// Defaults with the runtime directory `dir`; the state directory is
    /// the default one (created only when TLS is used).
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            runtime_dir: dir.into(),
            allow_uids: Vec::new(),
            state_dir: auth::ca::default_state_dir(),
            ca: None,
            insecure_no_tls: false,
            tls_names: Vec::new(),
        }
    }
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
    unix: UnixListener,
    socket: PathBuf,
    tcp: Option<(TcpListener, Option<ServerTlsConfig>)>,
    local_addr: Option<SocketAddr>,
    policy: Arc<Policy>,
    ctx: SessionContext,
    role: Role,
    hub: TaskerHub,
    link: Option<JoinedLink>,
    halt: Arc<Notify>,
    keepalive: Option<Keepalive>,
    /// This host's certificate, shown when it calls other vmds.
    peer_tls: Option<isthmus_client::auth::TlsIdentity>,
    /// How long the tasks of a previous run may take to resume.
    resume_grace: Duration,
    /// This vmd's part of the shared host and job tables, if any.
    federated: Option<Federated>,
}

/// Errors of starting a daemon.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot listen on {path}: {source}")]
    BindUnix {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("a vmd already listens on {0}")]
    SocketInUse(PathBuf),
    #[error(transparent)]
    RuntimeDir(#[from] auth::runtime_dir::RuntimeDirError),
    #[error("TLS: {0}")]
    Tls(#[from] auth::ca::CaError),
    #[error("serving failed: {0}")]
    Serve(#[from] tonic::transport::Error),
    #[error("host table: {0}")]
    Hosts(#[from] Refusal),
    #[error("sharing the host and job tables in etcd: {0}")]
    Federation(String),
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
        let sec = &config.security;
        let runtime = RuntimeDir::prepare(&sec.runtime_dir, !sec.allow_uids.is_empty())?;
        let token = runtime.write_token()?;
        let (unix, socket) = bind_unix(&runtime, !sec.allow_uids.is_empty()).await?;
        let policy = Arc::new(Policy {
            operator_uid: auth::runtime_dir::own_uid(),
            allowed: sec.allow_uids.iter().copied().collect::<BTreeSet<u32>>(),
            token,
        });
        let mut tls_client = None;
        // What other vmds dial: the mutual-TLS listener, if there is one at
        // a definite address.
        let mut peer_addr = String::new();
        let (tcp, local_addr) = match config.listen {
            Some(addr) => {
                let (listener, bound, tls) = bind_tcp(addr, &config.host, sec)?;
                let tls = tls.map(|(server, client)| {
                    if !bound.ip().is_unspecified() {
                        peer_addr = format!("https://{bound}");
                    } else {
                        info!(%bound, "listening on an unspecified address: other vmds get no address to check this host at");
                    }
                    tls_client = Some(client);
                    server
                });
                (Some((listener, tls)), Some(bound))
            }
            None => (None, None),
        };
        if options
            .join
            .as_deref()
            .is_some_and(|j| j.starts_with("https://"))
        {
            let m = auth::ca::material(
                &sec.state_dir,
                ca_of(sec),
                &config.host,
                &sec.tls_names,
                false,
            )?;
            tls_client = Some(isthmus_client::auth::TlsIdentity {
                ca_pem: m.ca_pem.into_bytes(),
                cert_pem: m.host.cert_pem.into_bytes(),
                key_pem: m.host.key_pem.into_bytes(),
            });
        }
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
            // Jobs on this host find their vmd here.
            addr: format!("unix:{}", socket.display()),
            // Other vmds find it here.
            peer_addr,
        })?;
        let (hub, hub_up) = TaskerHub::new();
        let (role, link) = match &options.join {
            Some(master) => {
                let hello = pb::HostHello {
                    name: local.name.clone(),
                    addr: local.addr.clone(),
                    slots: local.slots,
                    offers: local.offers.clone(),
                    peer_addr: local.peer_addr.clone(),
                };
                let link = host_link::join(
                    master,
                    tls_client.as_ref(),
                    hello,
                    hub.clone(),
                    hub_up,
                    halt.clone(),
                )
                .await
                .map_err(|source| DaemonError::Join {
                    addr: master.clone(),
                    source,
                })?;
                (
                    Role::Member {
                        master: master.clone(),
                    },
                    Some(link),
                )
            }
            None => {
                let (rm, port) = ResourceManager::new(local, options.hostfile.clone())?;
                wire_local(&rm, &hub, hub_up, port);
                (Role::Manager(rm), None)
            }
        };
        let ctx = SessionContext {
            groups: Groups::in_memory(),
            hellos: HelloGate::default(),
            host: config.host,
            data_addr: String::new(),
            limits: SessionLimits::default(),
            resumes: Resumes::default(),
            stopping: Arc::new(tokio::sync::watch::channel(false).0),
        };
        Ok(Self {
            unix,
            socket,
            tcp,
            local_addr,
            policy,
            ctx,
            role,
            hub,
            link,
            halt,
            keepalive: Some(Keepalive::REMOTE),
            peer_tls: tls_client,
            resume_grace: DEFAULT_RESUME_GRACE,
            federated: None,
        })
    }

    /// Sets how long the tasks of this vmd's previous run (kept by a
    /// durable store: its redb file, or etcd) may take to resume their
    /// sessions before they are closed as dead. Default
    /// [`DEFAULT_RESUME_GRACE`].
    pub fn set_resume_grace(&mut self, grace: Duration) {
        self.resume_grace = grace;
    }

    /// Sets the HTTP/2 keepalive of client connections (`None`: no pings;
    /// only closed connections end sessions). Default [`Keepalive::REMOTE`].
    pub fn set_keepalive(&mut self, keepalive: Option<Keepalive>) {
        self.keepalive = keepalive;
    }

    /// Tells every task that this host's data connections use `addr`
    /// (its data path listens there unless `ISTHMUS_DATA_ADDR` says
    /// otherwise).
    pub fn set_data_addr(&mut self, addr: std::net::IpAddr) {
        self.ctx.data_addr = addr.to_string();
    }

    /// Serves groups from `groups` instead of the embedded in-memory store
    /// (the `vmd` binary's default: a redb file that survives a restart;
    /// or etcd, shared by every vmd of a multi-host virtual machine).
    pub fn set_groups(&mut self, groups: Groups) {
        self.ctx.groups = groups;
    }

    /// Shares this vmd's host and jobs through etcd with every vmd of the
    /// same prefix, and shows theirs ([`crate::federation`]): any vmd then
    /// answers for every host. Only for a vmd that holds its resource
    /// manager (not one that joined another with `join`).
    pub async fn federate(&mut self, fed: Federation, start: HostStart) -> Result<(), DaemonError> {
        let Some(rm) = self.role.manager() else {
            return Err(DaemonError::Federation(
                "a vmd that joined another vmd's virtual machine cannot also share tables in etcd"
                    .into(),
            ));
        };
        let federated = Federated::join(rm.clone(), fed, start, self.halt.clone())
            .await
            .map_err(|e| DaemonError::Federation(e.message))?;
        self.federated = Some(federated);
        Ok(())
    }

    /// Starts the vmds of `hosts` through the host-start command, as
    /// `add-host` of each would, in tasks of their own (they run once the
    /// daemon serves); a host that does not come up is logged. Only with a
    /// federation ([`Daemon::federate`]); without one, nothing.
    pub fn start_hosts(&self, hosts: Vec<HostDecl>) {
        let Some(fed) = self.federated.clone() else {
            return;
        };
        for decl in hosts {
            let fed = fed.clone();
            tokio::spawn(async move {
                let name = decl.name.clone();
                match fed.add_host(decl).await {
                    Ok(host) => info!(host = %name, slots = host.slots, "host started"),
                    // A vmd started this way finds the first one there.
                    Err(e) if e.kind == isthmus_rm::RefusalKind::AlreadyExists => {
                        info!(host = %name, "host already in the virtual machine")
                    }
                    Err(e) => warn!(host = %name, error = %e.message, "starting the host's vmd"),
                }
            });
        }
    }

    /// Sets how many session streams may wait for their Hello (default
    /// [`HelloLimits::default`]).
    pub fn set_hello_limits(&mut self, limits: HelloLimits) {
        self.ctx.hellos = HelloGate::new(limits);
    }

    /// Sets what each session may hold (default [`SessionLimits::default`]).
    pub fn set_limits(&mut self, limits: SessionLimits) {
        self.ctx.limits = limits;
    }

    /// The bound TCP address, if listening on TCP.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    /// The address local clients use: `unix:` and the socket's path.
    pub fn client_addr(&self) -> String {
        format!("unix:{}", self.socket.display())
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
        // Before any session: the tasks of the previous run are the store's
        // tasks on this vmd's lease now. They may resume for a while.
        match self.ctx.groups.held_tasks().await {
            Ok(orphans) if !orphans.is_empty() => {
                info!(tasks = orphans.len(), grace = ?self.resume_grace, "tasks of this vmd's previous run may resume their sessions");
                self.ctx.resumes.set_orphans(orphans);
                tokio::spawn(crate::resume::reap_after(
                    self.ctx.groups.clone(),
                    self.ctx.resumes.clone(),
                    self.resume_grace,
                ));
            }
            Ok(_) => {}
            Err(e) => warn!(error = %e, "listing the tasks of this vmd's previous run"),
        }
        // One service per audience, each behind the one authenticator with
        // its family's rule (the console's calls check theirs per call).
        let auth = |rule| Authenticator::new(self.policy.clone(), rule);
        // A session request is small but for the endpoint record it may
        // publish: a stream cannot make the vmd buffer more than that.
        let tasks = InterceptedService::new(
            TasksServer::new(TasksService::new(self.ctx.clone())).max_decoding_message_size(
                self.ctx.limits.max_endpoint_bytes + SESSION_REQUEST_SLACK,
            ),
            auth(Rule::Session),
        );
        let console = ConsoleServer::with_interceptor(
            ConsoleService::new(
                self.ctx.clone(),
                self.role.clone(),
                self.halt.clone(),
                self.peer_tls.clone(),
                self.federated.clone(),
            ),
            auth(Rule::Read),
        );
        let taskers = TaskersServer::with_interceptor(
            TaskersService::new(self.hub, self.ctx.host.clone()),
            auth(Rule::Tasker),
        );
        let peers = PeersServer::with_interceptor(
            PeersService::new(self.role, self.ctx.host.clone()),
            auth(Rule::HostLink),
        );
        info!(socket = %self.socket.display(), tcp = ?self.local_addr, "vmd serving");
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopping = self.ctx.stopping.clone();
        let stopped = move || {
            let mut rx = stop_rx.clone();
            async move {
                let _ = rx.wait_for(|s| *s).await;
            }
        };
        // The Unix socket's peers are this host's processes, whose deaths
        // are always seen as closes: no pings there.
        let keepalive = self.keepalive;
        let router = |tls: Option<ServerTlsConfig>, keepalive| -> Result<_, DaemonError> {
            let mut builder = server_builder(keepalive);
            if let Some(tls) = tls {
                builder = builder.tls_config(tls)?;
            }
            Ok(builder
                .add_service(tasks.clone())
                .add_service(console.clone())
                .add_service(taskers.clone())
                .add_service(peers.clone()))
        };
        let unix_server = router(None, None)?
            .serve_with_incoming_shutdown(UnixListenerStream::new(self.unix), stopped());
        let tcp_server = match self.tcp {
            Some((listener, tls)) => Some(
                router(tls, keepalive)?
                    .serve_with_incoming_shutdown(TcpListenerStream::new(listener), stopped()),
            ),
            None => None,
        };
        let servers = async move {
            let tcp = async move {
                match tcp_server {
                    Some(s) => s.await,
                    None => Ok(()),
                }
            };
            let (u, t) = tokio::join!(unix_server, tcp);
            u.and(t)
        };
        let stop = async move {
            tokio::select! {
                () = shutdown => {},
                () = halt.notified() => {},
            }
            info!("vmd shutting down");
            stopping.send_replace(true);
            let _ = stop_tx.send(true);
        };
        // A graceful shutdown waits for open streams, and sessions are open
        // for as long as their clients live: give them a moment, then go.
        tokio::pin!(servers);
        tokio::select! {
            r = &mut servers => r?,
            () = async { stop.await; tokio::time::sleep(SHUTDOWN_GRACE).await } => {
                info!("sessions still open after {SHUTDOWN_GRACE:?}; closing them");
            }
        }
        let _ = std::fs::remove_file(&self.socket);
        if let Some(dir) = self.socket.parent() {
            let _ = std::fs::remove_file(dir.join(isthmus_types::env::TOKEN_FILE));
        }
        // Jobs of a stopping vmd have nobody left to report to.
        hub.kill_all();
        if let Some(link) = self.link {
            link.leave().await;
        }
        if let Some(federated) = &self.federated {
            federated.leave().await;
        }
        Ok(())
    }
}

/// The server's transport settings for a listener.
///
/// A process that died is found at once because its kernel closes the
/// socket; keepalive pings only find peers whose host vanished without
/// closing it, with a grace long enough for a stopped process (see
/// `isthmus_client::channel`).
///
/// What one connection can make the vmd hold is bounded by HTTP/2's own
/// settings: streams open at once ([`MAX_STREAMS_PER_CONNECTION`]; tonic
/// otherwise lifts hyper's limit), unread bytes per stream and per
/// connection (the windows), and header size.
fn server_builder(keepalive: Option<Keepalive>) -> tonic::transport::Server {
    tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .http2_keepalive_interval(keepalive.map(|k| k.interval))
        .http2_keepalive_timeout(keepalive.map(|k| k.timeout))
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .http2_max_header_list_size(MAX_HEADER_LIST)
}

/// Streams one client connection may have open at once. A process holds a
/// session and a few console calls; more queue at the client.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 1024;
/// Bytes a client may send on one stream before the vmd has read them
/// (HTTP/2's own default; requests are small).
const STREAM_WINDOW: u32 = 64 * 1024;
/// Bytes a client may send on one connection before the vmd has read them.
const CONNECTION_WINDOW: u32 = 1024 * 1024;
/// Largest header block a client may send (hyper's default, said here).
const MAX_HEADER_LIST: u32 = 16 * 1024;
/// How long a TCP client may take over its TLS handshake.
const TLS_HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);
/// Largest session request beyond the endpoint record it may carry.
const SESSION_REQUEST_SLACK: usize = 64 * 1024;

fn ca_of(sec: &Security) -> Option<(&std::path::Path, &std::path::Path)> {
    sec.ca.as_ref().map(|(c, k)| (c.as_path(), k.as_path()))
}

/// Binds the runtime directory's socket: a stale one (no vmd answers) is
/// replaced, a live one is refused. Mode 0600, or 0666 when other users
/// are allowed (each connection's uid is checked anyway).
async fn bind_unix(
    runtime: &RuntimeDir,
    shared: bool,
) -> Result<(UnixListener, PathBuf), DaemonError> {
    use std::os::unix::fs::PermissionsExt;
    let path = runtime.socket();
    if std::fs::symlink_metadata(&path).is_ok() {
        if tokio::net::UnixStream::connect(&path).await.is_ok() {
            return Err(DaemonError::SocketInUse(path));
        }
        std::fs::remove_file(&path).map_err(|source| DaemonError::BindUnix {
            path: path.clone(),
            source,
        })?;
    }
    let io = |source| DaemonError::BindUnix {
        path: path.clone(),
        source,
    };
    let listener = UnixListener::bind(&path).map_err(io)?;
    let mode = if shared { 0o666 } else { 0o600 };
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(io)?;
    Ok((listener, path))
}

/// Binds the TCP listener and decides its protection: loopback → token;
/// otherwise mutual TLS, or the token with a loud warning when the operator
/// said `insecure_no_tls`.
/// The server side of mutual TLS, and the same certificate as a client's.
type TlsPair = (ServerTlsConfig, isthmus_client::auth::TlsIdentity);

fn bind_tcp(
    addr: SocketAddr,
    host: &str,
    sec: &Security,
) -> Result<(TcpListener, SocketAddr, Option<TlsPair>), DaemonError> {
    let bind_err = |source| DaemonError::Bind { addr, source };
    let std_listener = std::net::TcpListener::bind(addr).map_err(bind_err)?;
    std_listener.set_nonblocking(true).map_err(bind_err)?;
    let listener = TcpListener::from_std(std_listener).map_err(bind_err)?;
    let bound = listener.local_addr().map_err(bind_err)?;
    if addr.ip().is_loopback() {
        return Ok((listener, bound, None));
    }
    if sec.insecure_no_tls {
        for _ in 0..3 {
            error!(%bound, "INSECURE: listening on a non-loopback address WITHOUT TLS (--insecure-no-tls); the token crosses the network in clear and anyone who sees it controls this vmd");
        }
        warn!("run across hosts with the virtual machine's certificates instead (see the README's security model)");
        return Ok((listener, bound, None));
    }
    let mut names = sec.tls_names.clone();
    if !addr.ip().is_unspecified() {
        names.push(addr.ip().to_string());
    }
    let m = auth::ca::material(&sec.state_dir, ca_of(sec), host, &names, true)?;
    let tls = ServerTlsConfig::new()
        .timeout(TLS_HANDSHAKE_DEADLINE)
        .identity(TlsIdentity::from_pem(&m.host.cert_pem, &m.host.key_pem))
        .client_ca_root(Certificate::from_pem(&m.ca_pem));
    info!(%bound, "TCP listener requires a host certificate of the virtual machine (mutual TLS)");
    let client = isthmus_client::auth::TlsIdentity {
        ca_pem: m.ca_pem.into_bytes(),
        cert_pem: m.host.cert_pem.into_bytes(),
        key_pem: m.host.key_pem.into_bytes(),
    };
    Ok((listener, bound, Some((tls, client))))
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

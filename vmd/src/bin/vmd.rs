//! `vmd`: the Isthmus virtual machine daemon, one per host.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use isthmus_vmd::daemon::{Daemon, DaemonConfig, HostOptions, Keepalive, Security};
use isthmus_vmd::hello_gate::HelloLimits;
use isthmus_vmd::session::SessionLimits;

#[derive(Parser, Debug)]
#[command(
    name = "vmd",
    about = "Isthmus virtual machine daemon: group service and more, over gRPC"
)]
struct Args {
    /// A TCP address to listen on besides the Unix socket (port 0 picks a
    /// free port). Loopback: clients send the token from the runtime
    /// directory; any other address requires mutual TLS with the virtual
    /// machine's certificates.
    #[arg(long, env = isthmus_types::env::VMD_LISTEN)]
    listen: Option<SocketAddr>,
    /// Directory of the Unix socket (vmd.sock) and the token file (default:
    /// $XDG_RUNTIME_DIR/isthmus, else /tmp/isthmus-<uid>).
    #[arg(long, env = isthmus_types::env::RUNTIME_DIR)]
    runtime_dir: Option<std::path::PathBuf>,
    /// Let this local uid in besides the vmd's own and root (repeatable).
    #[arg(long = "allow-uid")]
    allow_uids: Vec<u32>,
    /// Directory of the virtual machine's CA and this host's certificate
    /// (default: $XDG_STATE_HOME/isthmus, else ~/.local/state/isthmus).
    #[arg(long)]
    state_dir: Option<std::path::PathBuf>,
    /// The virtual machine's CA certificate (PEM), given by the operator.
    #[arg(long, requires = "ca_key")]
    ca_cert: Option<std::path::PathBuf>,
    /// The virtual machine's CA key (PEM).
    #[arg(long, requires = "ca_cert")]
    ca_key: Option<std::path::PathBuf>,
    /// Extra names or addresses for this host's certificate (repeatable).
    #[arg(long = "tls-name")]
    tls_names: Vec<String>,
    /// Serve a non-loopback --listen address WITHOUT TLS (token only).
    /// Dangerous: warned about at every start.
    #[arg(long)]
    insecure_no_tls: bool,
    /// Name this host goes by in group tables (default: inside a Slurm
    /// allocation, its node name, SLURMD_NODENAME; else the system host name).
    #[arg(long)]
    host_name: Option<String>,
    /// Ignore the Slurm allocation this vmd runs in (SLURM_JOB_ID): no hosts,
    /// slots, host name or host-start command taken from it.
    #[arg(long)]
    no_slurm: bool,
    /// Write the address local clients use (`unix:` and the socket) to this
    /// file once listening; the bound TCP address, if any, goes to
    /// `listen` in the runtime directory.
    #[arg(long)]
    addr_file: Option<std::path::PathBuf>,
    /// TOML hostfile: the virtual machine's hosts, their slots and offered
    /// implementations (default: inside a Slurm allocation, its nodes, with
    /// SLURM_JOB_CPUS_PER_NODE as their slots).
    #[arg(long)]
    hostfile: Option<std::path::PathBuf>,
    /// Slots of this host (default: its hostfile entry, else the number of CPUs).
    #[arg(long)]
    slots: Option<u32>,
    /// Implementations this host may run, comma-separated (default: its
    /// hostfile entry, else any its taskers register).
    #[arg(long, value_delimiter = ',')]
    offers: Vec<String>,
    /// Join the virtual machine of the vmd at this address as one more host,
    /// instead of starting a new virtual machine (`https://HOST:PORT` across
    /// hosts, with this host's certificate in --state-dir).
    #[arg(long, conflicts_with = "hostfile")]
    join: Option<String>,
    /// Seconds without traffic after which a client connection is pinged;
    /// 0: never (a process that dies is still seen at once: its kernel
    /// closes the connection). Pings only find hosts that vanished.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    keepalive_interval: u64,
    /// Seconds a ping may go unanswered before the connection, and every
    /// session on it, is given up: a client stopped (debugger, SIGSTOP,
    /// swapping) for less than this keeps its memberships.
    #[arg(long, default_value_t = 60, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    keepalive_timeout: u64,
    /// Seconds a new session, tasker or host stream may take to say Hello.
    #[arg(long, default_value_t = 10, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    hello_deadline: u64,
    /// Session streams that may wait for their Hello at once, all callers
    /// together; past it a new one is refused (RESOURCE_EXHAUSTED).
    #[arg(long, default_value_t = HelloLimits::default().total)]
    max_pending_hellos: usize,
    /// Session streams one uid may have waiting for their Hello at once.
    #[arg(long, default_value_t = HelloLimits::default().per_uid)]
    max_pending_hellos_per_uid: usize,
    /// Seconds between returns of the heap's free memory to the kernel
    /// (glibc keeps what bursts of connections freed); 0: never.
    #[arg(long, default_value_t = isthmus_vmd::heap::TRIM_PERIOD.as_secs(), value_name = "SECS")]
    heap_trim_secs: u64,
    /// Groups one session may be a member of at once.
    #[arg(long, default_value_t = SessionLimits::default().max_memberships)]
    max_memberships: usize,
    /// Freeze, barrier and wait-frozen calls one session may have pending.
    #[arg(long, default_value_t = SessionLimits::default().max_pending_waits)]
    max_pending_waits: usize,
    /// Largest endpoint record a session may publish, in bytes.
    #[arg(long, default_value_t = SessionLimits::default().max_endpoint_bytes)]
    max_endpoint_bytes: usize,
    /// Groups whose events one session may follow.
    #[arg(long, default_value_t = SessionLimits::default().max_followed_groups)]
    max_followed_groups: usize,
    /// This host's IP address for data connections between jobs: every task
    /// is told it, and its data path listens there (a job's
    /// ISTHMUS_DATA_ADDR still wins). Default: none (loopback, one host).
    #[arg(long, value_name = "IP")]
    data_addr: Option<std::net::IpAddr>,
    /// Where this vmd keeps its groups and tasks without --etcd: `redb`, in
    /// a file (--store-file) written at every change, so that a vmd killed
    /// (kill -9 included) and started again loses nothing and its tasks
    /// resume their sessions; `memory`, nothing kept (for tests).
    #[arg(long, value_enum, default_value_t = StoreKind::Redb, conflicts_with = "etcd")]
    store: StoreKind,
    /// The redb store's file (default: groups.redb in the runtime
    /// directory: one vmd per runtime directory, and what it holds, live
    /// tasks, means nothing after a reboot, when that directory is
    /// emptied). Give each vmd its own.
    #[arg(long, value_name = "FILE", conflicts_with = "etcd")]
    store_file: Option<std::path::PathBuf>,
    /// With --store redb, the file of this vmd's job table (default:
    /// jobs.redb in the runtime directory): after a restart, ended jobs
    /// are still listed, the jobs that were running are reported lost and
    /// job ids go on. A file of its own beside --store-file.
    #[arg(long, value_name = "FILE", conflicts_with = "etcd")]
    jobs_file: Option<std::path::PathBuf>,
    /// Keep group tables in etcd at these client URLs (comma-separated),
    /// shared by every vmd given the same URLs and --etcd-prefix: one
    /// namespace across hosts. Default: this host's own store (--store).
    #[arg(long, env = isthmus_types::env::ETCD, value_delimiter = ',', conflicts_with = "join")]
    etcd: Vec<String>,
    /// With https:// etcd URLs: the CA that signed etcd's server
    /// certificate (PEM). `isthmus cert` can issue etcd's server
    /// certificate and the vmds' client certificates from the virtual
    /// machine's CA; give etcd that CA as --trusted-ca-file with
    /// --client-cert-auth.
    #[arg(long, value_name = "FILE", requires_all = ["etcd", "etcd_cert", "etcd_key"])]
    etcd_ca: Option<std::path::PathBuf>,
    /// This vmd's client certificate for etcd (PEM).
    #[arg(long, value_name = "FILE", requires = "etcd_ca")]
    etcd_cert: Option<std::path::PathBuf>,
    /// The key of --etcd-cert (PEM; keep it 0600).
    #[arg(long, value_name = "FILE", requires = "etcd_ca")]
    etcd_key: Option<std::path::PathBuf>,
    /// The virtual machine's key prefix in etcd.
    #[arg(long, default_value = "/isthmus/vm", requires = "etcd")]
    etcd_prefix: String,
    /// Seconds this host's tasks outlive a vmd that stops answering: a vmd
    /// restarted within them takes its tasks back; past them, their
    /// memberships are removed as deaths and everyone is told.
    #[arg(long, default_value_t = 15, value_name = "SECS", requires = "etcd",
          value_parser = clap::value_parser!(u64).range(2..=86_400))]
    etcd_lease_ttl: u64,
    /// With --etcd: the command that starts the vmd of a host added to the
    /// virtual machine (`isthmus add-host NAME`), as PVM ran rsh; `{host}` is
    /// replaced by the host's name, and the command runs under `sh -c`, its
    /// output in the runtime directory's host-start-NAME.log. For example:
    /// `ssh -f {host} vmd --etcd http://10.0.0.1:2379 --host-name {host}`.
    /// Without it an added host waits for its vmd to be started by hand.
    /// Default inside a Slurm allocation: `srun --overlap --nodes=1
    /// --ntasks=1 -w {host}` running this vmd with the same etcd options.
    #[arg(long, value_name = "COMMAND", requires = "etcd")]
    host_start: Option<String>,
    /// Seconds a started host's vmd may take to appear in the virtual machine.
    #[arg(long, default_value_t = 30, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    host_start_timeout: u64,
    /// Seconds the tasks of this vmd's previous run (kept in its redb file,
    /// or in etcd because it took its lease back) may take to resume their
    /// sessions; those that do not are then closed as dead and everyone is
    /// told.
    #[arg(long, default_value_t = 60, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    resume_grace: u64,
}

/// The store of a vmd without etcd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum StoreKind {
    Redb,
    Memory,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    isthmus_client::init_tracing();
    let mut args = Args::parse();
    // Inside a Slurm allocation: its nodes are the hosts, its CPUs the slots.
    let allocation = match isthmus_rm::slurm::Allocation::from_env() {
        Some(read) if !args.no_slurm => {
            Some(read.context("reading the Slurm allocation (--no-slurm ignores it)")?)
        }
        _ => None,
    };
    let host = args
        .host_name
        .clone()
        .or_else(|| allocation.as_ref().and_then(|a| a.this_node.clone()))
        .unwrap_or_else(system_host_name);
    let mut hostfile = match (&args.hostfile, &allocation) {
        (Some(path), _) => isthmus_rm::hostfile::load(path)?,
        (None, Some(a)) if args.join.is_none() => {
            tracing::info!(job = %a.job, hosts = a.hosts.len(), "hosts and slots from the Slurm allocation");
            a.hosts.clone()
        }
        _ => Vec::new(),
    };
    // With etcd, the allocation's other nodes are started (as PVM started
    // its hostfile's hosts), not declared: each comes up as its vmd joins.
    let mut start_hosts = Vec::new();
    if allocation.is_some() && args.hostfile.is_none() && !args.etcd.is_empty() {
        if args.host_start.is_none() {
            args.host_start = Some(slurm_host_start(&args)?);
        }
        let (own, others) = hostfile.into_iter().partition(|d| d.name == host);
        hostfile = own;
        start_hosts = others;
    }
    let options = HostOptions {
        slots: args.slots,
        offers: args.offers,
        hostfile,
        join: args.join,
    };
    let keepalive = (args.keepalive_interval > 0).then(|| Keepalive {
        interval: Duration::from_secs(args.keepalive_interval),
        timeout: Duration::from_secs(args.keepalive_timeout),
    });
    let limits = SessionLimits {
        hello_deadline: Duration::from_secs(args.hello_deadline),
        max_memberships: args.max_memberships,
        max_pending_waits: args.max_pending_waits,
        max_endpoint_bytes: args.max_endpoint_bytes,
        max_followed_groups: args.max_followed_groups,
    };
    let mut security = Security::default();
    if let Some(dir) = args.runtime_dir {
        security.runtime_dir = dir;
    }
    if let Some(dir) = args.state_dir {
        security.state_dir = dir;
    }
    security.allow_uids = args.allow_uids;
    security.ca = args.ca_cert.zip(args.ca_key);
    security.tls_names = args.tls_names;
    security.insecure_no_tls = args.insecure_no_tls;
    let runtime_dir = security.runtime_dir.clone();
    let mut daemon = Daemon::bind_with(
        DaemonConfig {
            listen: args.listen,
            host: host.clone(),
            security,
        },
        options,
    )
    .await?;
    daemon.set_keepalive(keepalive);
    daemon.set_limits(limits);
    if args.heap_trim_secs > 0 {
        isthmus_vmd::heap::spawn_trimmer(Duration::from_secs(args.heap_trim_secs));
    }
    daemon.set_hello_limits(HelloLimits {
        total: args.max_pending_hellos,
        per_uid: args.max_pending_hellos_per_uid,
    });
    if let Some(addr) = args.data_addr {
        daemon.set_data_addr(addr);
    }
    daemon.set_resume_grace(Duration::from_secs(args.resume_grace));
    let mut lease_lost = None;
    if args.etcd.is_empty() && args.store == StoreKind::Redb {
        let path = args
            .store_file
            .unwrap_or_else(|| runtime_dir.join("groups.redb"));
        let store = isthmus_groups_redb::RedbStore::open(&path)
            .with_context(|| format!("opening the group store {}", path.display()))?;
        daemon.set_groups(isthmus_groups::Groups::new(Box::new(store)));
        // A vmd that joined another's virtual machine has no job table.
        if let Some(rm) = daemon.resource_manager() {
            let path = args
                .jobs_file
                .unwrap_or_else(|| runtime_dir.join("jobs.redb"));
            let (jobs, restored) = isthmus_rm_redb::JobStore::open(&path)
                .with_context(|| format!("opening the job store {}", path.display()))?;
            jobs.keep(&rm, restored);
        }
    }
    if !args.etcd.is_empty() {
        let tls = etcd_tls(&args.etcd, args.etcd_ca, args.etcd_cert, args.etcd_key)?;
        let store = open_etcd(
            &args.etcd,
            &args.etcd_prefix,
            args.etcd_lease_ttl,
            &runtime_dir,
            tls,
        )
        .await?;
        lease_lost = Some(store.lease_lost());
        let federation =
            isthmus_rm_etcd::Federation::new(store.connection(), &args.etcd_prefix, &host);
        daemon.set_groups(isthmus_groups::Groups::new(Box::new(store)));
        // Hosts and jobs too: any vmd answers for every host.
        daemon
            .federate(
                federation,
                isthmus_vmd::federation::HostStart {
                    command: args.host_start,
                    timeout: Duration::from_secs(args.host_start_timeout),
                    log_dir: runtime_dir.clone(),
                },
            )
            .await?;
        daemon.start_hosts(start_hosts);
    }
    let listen_file = runtime_dir.join("listen");
    match daemon.local_addr() {
        Some(tcp) => std::fs::write(&listen_file, tcp.to_string())
            .with_context(|| format!("writing {}", listen_file.display()))?,
        None => {
            let _ = std::fs::remove_file(&listen_file);
        }
    }
    if let Some(path) = &args.addr_file {
        std::fs::write(path, daemon.client_addr())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let lost = async {
        match &mut lease_lost {
            Some(lost) => {
                let _ = lost.wait_for(|l| *l).await;
            }
            None => std::future::pending().await,
        }
    };
    let mut lease_expired = false;
    daemon
        .serve(async {
            tokio::select! {
                () = shutdown_signal() => {}
                () = lost => lease_expired = true,
            }
        })
        .await?;
    if lease_expired {
        anyhow::bail!("this vmd's etcd lease expired: the virtual machine declared its tasks dead");
    }
    Ok(())
}

/// Opens the etcd group store, taking back the lease of this vmd's previous
/// run if etcd still has it (its id is kept in the runtime directory), so a
/// vmd restarted within the lease's TTL keeps its tasks' memberships.
async fn open_etcd(
    endpoints: &[String],
    prefix: &str,
    ttl: u64,
    runtime_dir: &std::path::Path,
    tls: Option<isthmus_groups_etcd::EtcdTls>,
) -> anyhow::Result<isthmus_groups_etcd::EtcdStore> {
    let lease_file = runtime_dir.join("etcd-lease");
    let mut config = isthmus_groups_etcd::EtcdConfig::new(endpoints.to_vec());
    config.tls = tls;
    config.prefix = prefix.to_string();
    config.lease_ttl = Duration::from_secs(ttl);
    config.resume_lease = std::fs::read_to_string(&lease_file)
        .ok()
        .and_then(|s| i64::from_str_radix(s.trim(), 16).ok());
    let store = isthmus_groups_etcd::EtcdStore::connect(config).await?;
    std::fs::write(&lease_file, format!("{:x}\n", store.lease_id()))
        .with_context(|| format!("writing {}", lease_file.display()))?;
    Ok(store)
}

/// The TLS material for etcd, read from its files; without it, a loud
/// warning for every plain URL that is not loopback: whoever reaches that
/// etcd controls the virtual machine.
fn etcd_tls(
    urls: &[String],
    ca: Option<std::path::PathBuf>,
    cert: Option<std::path::PathBuf>,
    key: Option<std::path::PathBuf>,
) -> anyhow::Result<Option<isthmus_groups_etcd::EtcdTls>> {
    let read =
        |p: &std::path::Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    if let (Some(ca), Some(cert), Some(key)) = (&ca, &cert, &key) {
        return Ok(Some(isthmus_groups_etcd::EtcdTls {
            ca_pem: read(ca)?,
            cert_pem: read(cert)?,
            key_pem: read(key)?,
        }));
    }
    for url in urls {
        let host = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .and_then(|authority| authority.rsplit_once(':').map(|(h, _)| h))
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'));
        let loopback = host.is_some_and(|h| {
            h == "localhost"
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        if host.is_some() && !loopback {
            tracing::error!(%url, "INSECURE: etcd over plain HTTP off loopback, without client certificates: anyone who reaches it can change this virtual machine's groups, hosts and jobs (use https:// with --etcd-ca/--etcd-cert/--etcd-key, or keep etcd on a network only the VM's hosts reach)");
        }
    }
    Ok(None)
}

/// The host-start command under Slurm: a job step on that one node
/// (`--overlap`: beside the steps already running, the batch script's
/// `isthmus run` included) running this same vmd with the same etcd and
/// the host's name.
fn slurm_host_start(args: &Args) -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("finding this vmd's own path")?;
    let mut words = vec![
        "exec srun --overlap --nodes=1 --ntasks=1 -w {host}".to_string(),
        quote(&exe.to_string_lossy()),
        "--etcd".into(),
        quote(&args.etcd.join(",")),
        "--etcd-prefix".into(),
        quote(&args.etcd_prefix),
        "--etcd-lease-ttl".into(),
        args.etcd_lease_ttl.to_string(),
        "--host-name {host}".into(),
    ];
    for (flag, file) in [
        ("--etcd-ca", &args.etcd_ca),
        ("--etcd-cert", &args.etcd_cert),
        ("--etcd-key", &args.etcd_key),
    ] {
        if let Some(file) = file {
            words.push(flag.into());
            words.push(quote(&file.to_string_lossy()));
        }
    }
    Ok(words.join(" "))
}

/// One word for `sh -c`.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

fn system_host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch SIGTERM; stopping on SIGINT only");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT"),
        _ = term.recv() => tracing::info!("SIGTERM"),
    }
}

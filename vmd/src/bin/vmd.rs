//! `vmd`: the Isthmus virtual machine daemon, one per host.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use isthmus_vmd::daemon::{Daemon, DaemonConfig, HostOptions, Keepalive};
use isthmus_vmd::session::SessionLimits;

#[derive(Parser, Debug)]
#[command(
    name = "vmd",
    about = "Isthmus virtual machine daemon: group service and more, over gRPC"
)]
struct Args {
    /// Address to listen on (loopback by default; port 0 picks a free port).
    #[arg(long, default_value = isthmus_types::env::DEFAULT_VMD_ADDR, env = isthmus_types::env::VMD_LISTEN)]
    listen: SocketAddr,
    /// Name this host goes by in group tables (default: the system host name).
    #[arg(long)]
    host_name: Option<String>,
    /// Print the bound address on this file once listening (for scripts that use port 0).
    #[arg(long)]
    addr_file: Option<std::path::PathBuf>,
    /// TOML hostfile: the virtual machine's hosts, their slots and offered implementations.
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
    /// instead of starting a new virtual machine.
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
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    isthmus_client::init_tracing();
    let args = Args::parse();
    let host = args.host_name.unwrap_or_else(system_host_name);
    let hostfile = match &args.hostfile {
        Some(path) => isthmus_rm::hostfile::load(path)?,
        None => Vec::new(),
    };
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
    let mut daemon = Daemon::bind_with(
        DaemonConfig {
            listen: args.listen,
            host,
        },
        options,
    )
    .await?;
    daemon.set_keepalive(keepalive);
    daemon.set_limits(limits);
    let addr = daemon.local_addr();
    if let Some(path) = &args.addr_file {
        std::fs::write(path, addr.to_string())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    daemon.serve(shutdown_signal()).await?;
    Ok(())
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

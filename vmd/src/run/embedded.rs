//! The embedded default of `isthmus run` when no vmd answers: a `vmd` child
//! process for this one host and one `tasker` per implementation the file
//! needs, as `scripts/demo-rm.sh` starts them by hand, in a private
//! directory (its Unix socket, its logs; memory store: nothing outlives
//! the run), each in a process group of its own so that the terminal's
//! Ctrl-C reaches `isthmus run` alone, which then stops the components
//! first and these last, by PID. Every wait has a deadline. Across the
//! nodes of a Slurm allocation ([`super::allocation`]) the first node's
//! also starts the etcd the nodes' vmds share (TLS with client
//! certificates of a CA the run makes, [`super::run_tls`]), each vmd
//! gets its node's address as its data address, and each other node runs
//! the same for itself (`isthmus node`), on that etcd; the first node's
//! stop deletes the other hosts (their vmds stop, then their `isthmus
//! node`).

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use isthmus_client::Console;
use tokio::time::Instant;

use super::allocation::Shared;
use super::run_tls::{self, RunTls};
use super::spec::Impl;

/// How long the vmd may take to listen.
const VMD_START: Duration = Duration::from_secs(15);
/// How long the taskers may take to register (on every node: the other
/// nodes' vmds are job steps that start theirs).
const TASKERS_START: Duration = Duration::from_secs(60);
/// How long the run's etcd may take to answer healthy.
const ETCD_START: Duration = Duration::from_secs(20);
/// How long a child may take to stop after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How long the other nodes' vmds may take to stop when the run ends.
const NODES_STOP: Duration = Duration::from_secs(20);

/// Why the embedded vmd could not be started.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("creating the private directory {}: {source}", dir.display())]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("starting {} ({hint}): {source}", program.display())]
    Spawn {
        program: PathBuf,
        hint: &'static str,
        source: std::io::Error,
    },
    #[error("{what} did not come up within {within:?}{}", log_tail(log))]
    NotReady {
        what: String,
        within: Duration,
        log: PathBuf,
    },
    #[error("the run's certificates: {0}")]
    Tls(#[from] run_tls::TlsError),
    #[error("{what} exited at start ({status}){}", log_tail(log))]
    Exited {
        what: String,
        status: std::process::ExitStatus,
        log: PathBuf,
    },
}

/// The last lines of a child's log, for an error about it.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines.get(lines.len().saturating_sub(8)..).unwrap_or(&[]);
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its log ({}) ends:\n{}", log.display(), tail.join("\n"))
    }
}

/// A started child with its log.
struct Kid {
    what: String,
    child: Child,
    log: PathBuf,
}

/// A vmd and its taskers started for this run; [`Embedded::stop`] (or
/// dropping it) stops them by PID and removes the directory.
pub struct Embedded {
    /// The vmd's address (its Unix socket).
    pub addr: String,
    dir: PathBuf,
    vmd: Option<Kid>,
    taskers: Vec<Kid>,
    /// The etcd the nodes share, started by the first node's run.
    etcd: Option<Kid>,
    /// The other nodes of the allocation (the first node's run deletes
    /// them, so that their vmds and taskers end with the run).
    others: Vec<String>,
}

/// Where this run's vmd stands among the nodes of an allocation.
pub enum Role {
    /// Alone (one host): its tables in memory.
    Alone,
    /// The first node: starts an etcd on `addr` (this node's address, its
    /// vmd's data address), and its vmd starts every other node of `nodes`
    /// (by `host_start`, given the shared etcd).
    First {
        addr: IpAddr,
        prefix: String,
        nodes: Vec<String>,
        this: String,
    },
    /// A node the first one started: its vmd on the shared etcd (the
    /// client certificate from the environment, [`run_tls::from_env`]),
    /// named `host`, its data address `addr`.
    Started {
        shared: Shared,
        host: String,
        addr: IpAddr,
    },
}

/// A sibling binary of this `isthmus` (an install puts them together),
/// else the name, found on `PATH`.
fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

impl Embedded {
    /// Starts a vmd with `slots` slots (`None`: the vmd's own default, the
    /// Slurm allocation's inside one) and a tasker for each of `impls`;
    /// returns once the vmd lists every tasker.
    pub async fn start(
        impls: &BTreeSet<Impl>,
        slots: Option<u32>,
        role: Role,
    ) -> Result<Self, EmbedError> {
        let dir = std::env::temp_dir().join(format!(
            "isthmus-run-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|source| EmbedError::Dir {
                dir: dir.clone(),
                source,
            })?;
        let mut me = Embedded {
            addr: String::new(),
            dir,
            vmd: None,
            taskers: Vec::new(),
            etcd: None,
            others: Vec::new(),
        };
        let addr_file = me.dir.join("addr");
        let mut vmd = Command::new(sibling("vmd"));
        vmd.arg("--runtime-dir")
            .arg(me.dir.join("run"))
            .arg("--state-dir")
            .arg(me.dir.join("state"))
            .arg("--addr-file")
            .arg(&addr_file);
        // The hosts whose taskers the run waits for (none named: this one).
        let mut hosts = Vec::new();
        match role {
            Role::Alone => {
                vmd.args(["--store", "memory"]);
            }
            Role::First {
                addr,
                prefix,
                nodes,
                this,
            } => {
                let tls = RunTls::create(&me.dir, addr)?;
                let shared = Shared {
                    etcd: me.start_etcd(addr, &tls).await?,
                    prefix,
                };
                let ordered: Vec<Impl> = impls.iter().copied().collect();
                let start = super::allocation::host_start(&shared, &ordered).map_err(|e| {
                    EmbedError::Spawn {
                        program: PathBuf::from("isthmus"),
                        hint: "the other nodes run it",
                        source: std::io::Error::other(e.to_string()),
                    }
                })?;
                vmd.args(["--etcd", &shared.etcd, "--etcd-prefix", &shared.prefix])
                    .args(tls.client.vmd_args())
                    .args(["--host-name", &this, "--host-start", &start])
                    .args(["--data-addr", &addr.to_string()])
                    // Through srun's environment to the other nodes' `isthmus
                    // node` (no file system shared with them needed).
                    .envs(tls.client.env());
                me.others = nodes.iter().filter(|n| **n != this).cloned().collect();
                hosts = nodes;
            }
            Role::Started { shared, host, addr } => {
                let client = run_tls::from_env(&me.dir)?;
                vmd.args(["--etcd", &shared.etcd, "--etcd-prefix", &shared.prefix])
                    .args(client.vmd_args())
                    .args(["--host-name", &host])
                    .args(["--data-addr", &addr.to_string()]);
                hosts.push(host);
            }
        }
        if let Some(slots) = slots {
            vmd.args(["--slots", &slots.to_string()]);
        }
        let kid = me.launch("the embedded vmd", "vmd", vmd)?;
        let vmd = me.vmd.insert(kid);
        let end = Instant::now() + VMD_START;
        me.addr = loop {
            if let Ok(a) = std::fs::read_to_string(&addr_file) {
                if !a.trim().is_empty() {
                    break a.trim().to_string();
                }
            }
            check_running(vmd)?;
            if Instant::now() > end {
                return Err(not_ready(vmd, VMD_START));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        for i in impls {
            let mut tasker = Command::new(sibling("tasker"));
            tasker.args(["--impl", i.as_str(), "--vmd", &me.addr]);
            let kid = me.launch(&format!("the {i} tasker"), &format!("tasker-{i}"), tasker)?;
            me.taskers.push(kid);
        }
        me.wait_taskers(impls, &hosts).await?;
        Ok(me)
    }

    /// Starts a one-member etcd listening on `addr` (a free port) for the
    /// allocation's nodes, over TLS with `tls`'s server certificate,
    /// letting in only clients with a certificate of the run's CA; its
    /// data in the private directory; returns its client URL once it
    /// answers healthy (on a plain loopback metrics port: /health).
    async fn start_etcd(&mut self, addr: IpAddr, tls: &RunTls) -> Result<String, EmbedError> {
        let client = format!("https://{}", SocketAddr::new(addr, free_port(addr)));
        let loopback = IpAddr::from([127, 0, 0, 1]);
        let peer = format!("http://{}", SocketAddr::new(loopback, free_port(loopback)));
        let metrics = SocketAddr::new(loopback, free_port(loopback));
        let mut etcd = Command::new("etcd");
        etcd.args(["--name", "isthmus-run"])
            .arg("--data-dir")
            .arg(self.dir.join("etcd"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(tls.etcd_args())
            .args(["--listen-metrics-urls", &format!("http://{metrics}")])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("isthmus-run={peer}")])
            .args(["--logger", "zap", "--log-level", "warn"]);
        let kid = self.launch("the run's etcd", "etcd", etcd)?;
        let kid = self.etcd.insert(kid);
        let end = Instant::now() + ETCD_START;
        loop {
            let probe = metrics;
            let healthy = tokio::task::spawn_blocking(move || etcd_healthy(probe))
                .await
                .unwrap_or(false);
            if healthy {
                return Ok(client);
            }
            check_running(kid)?;
            if Instant::now() > end {
                return Err(not_ready(kid, ETCD_START));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts `command` in a process group of its own, its output in
    /// `<dir>/<log>.log`.
    fn launch(&self, what: &str, log: &str, mut command: Command) -> Result<Kid, EmbedError> {
        let log = self.dir.join(format!("{log}.log"));
        let program = PathBuf::from(command.get_program());
        let spawn_err = |source| EmbedError::Spawn {
            program: program.clone(),
            hint: "install it beside isthmus or on PATH",
            source,
        };
        let out = std::fs::File::create(&log).map_err(spawn_err)?;
        let err = out.try_clone().map_err(spawn_err)?;
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "warn");
        }
        // The client key came to `isthmus node` this way; its children
        // get it as files (the vmd) or not at all. Only the first node's
        // vmd is given it, to pass on to the other nodes' steps.
        for name in run_tls::ENV {
            let given = command.get_envs().any(|(k, v)| k == name && v.is_some());
            if !given {
                command.env_remove(name);
            }
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(spawn_err)?;
        Ok(Kid {
            what: what.to_string(),
            child,
            log,
        })
    }

    /// Waits until every host of `hosts` (none: any one host) answers with
    /// a tasker of each of `impls`.
    async fn wait_taskers(
        &mut self,
        impls: &BTreeSet<Impl>,
        hosts: &[String],
    ) -> Result<(), EmbedError> {
        let end = Instant::now() + TASKERS_START;
        let mut console = None;
        let mut seen = String::new();
        loop {
            for kid in &mut self.taskers {
                check_running(kid)?;
            }
            if console.is_none() {
                console = Console::connect(&self.addr).await.ok();
            }
            if let Some(c) = &console {
                if let Ok(Ok(listed)) =
                    tokio::time::timeout(Duration::from_secs(2), c.hosts()).await
                {
                    // Alone: the host of the vmd asked; else any named one up.
                    let ready = |h: &isthmus_types::host::HostView| {
                        (h.answering
                            || (!hosts.is_empty() && h.state == isthmus_types::host::HostState::Up))
                            && impls
                                .iter()
                                .all(|i| h.taskers.iter().any(|t| t == i.as_str()))
                    };
                    seen = listed
                        .iter()
                        .map(|h| {
                            format!(
                                "{} answering={} taskers={:?}",
                                h.name, h.answering, h.taskers
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("; ");
                    let registered = match hosts {
                        [] => listed.iter().any(ready),
                        names => names
                            .iter()
                            .all(|n| listed.iter().any(|h| &h.name == n && ready(h))),
                    };
                    if registered {
                        return Ok(());
                    }
                }
            }
            if Instant::now() > end && !hosts.is_empty() {
                // Another node's: its vmd's listing and its start's log.
                let started: Vec<String> = hosts
                    .iter()
                    .map(|h| log_tail(&self.dir.join("run").join(format!("host-start-{h}.log"))))
                    .collect();
                return Err(EmbedError::NotReady {
                    what: format!(
                        "the taskers of every node (the vmd lists: {seen}){}",
                        started.concat()
                    ),
                    within: TASKERS_START,
                    log: self.dir.join("vmd.log"),
                });
            }
            if Instant::now() > end {
                let late = self.taskers.first().or(self.vmd.as_ref());
                return Err(match late {
                    Some(k) => not_ready(k, TASKERS_START),
                    None => EmbedError::NotReady {
                        what: "the taskers".into(),
                        within: TASKERS_START,
                        log: self.dir.join("vmd.log"),
                    },
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Why the vmd is no longer running, if it is not.
    pub fn vmd_ended(&mut self) -> Option<String> {
        let kid = self.vmd.as_mut()?;
        check_running(kid).err().map(|e| e.to_string())
    }

    /// The PIDs of the vmd and its taskers (the tests check they are gone).
    pub fn pids(&self) -> Vec<u32> {
        self.vmd
            .iter()
            .chain(&self.taskers)
            .map(|k| k.child.id())
            .collect()
    }

    /// Stops the other nodes (deletes their hosts: their vmds stop, and
    /// with them their `isthmus node`), the taskers, then the vmd and the
    /// etcd: SIGTERM, SIGKILL after a grace, reaped; removes the private
    /// directory.
    pub async fn stop(mut self) {
        self.stop_others().await;
        for kid in self
            .taskers
            .drain(..)
            .chain(self.vmd.take())
            .chain(self.etcd.take())
        {
            stop(kid).await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Embedded {
    /// Deletes the other nodes' hosts through the vmd, all at once, each
    /// within [`NODES_STOP`]; a node that does not stop is logged (its
    /// `isthmus node` still ends when it finds the etcd gone).
    async fn stop_others(&mut self) {
        if self.others.is_empty() {
            return;
        }
        let console = match tokio::time::timeout(
            Duration::from_secs(5),
            Console::connect(&self.addr),
        )
        .await
        {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                eprintln!("isthmus: stopping the other nodes: {}", e.message());
                return;
            }
            Err(_) => {
                eprintln!("isthmus: stopping the other nodes: the vmd did not answer");
                return;
            }
        };
        let mut deletes = tokio::task::JoinSet::new();
        for node in std::mem::take(&mut self.others) {
            let console = console.clone();
            deletes.spawn(async move {
                let done = tokio::time::timeout(NODES_STOP, console.delete_host(&node)).await;
                (node, done)
            });
        }
        while let Some(joined) = deletes.join_next().await {
            match joined {
                Ok((_, Ok(Ok(_)))) => {}
                Ok((node, Ok(Err(e)))) => {
                    eprintln!("isthmus: stopping node {node}: {}", e.message())
                }
                Ok((node, Err(_))) => {
                    eprintln!("isthmus: node {node} did not stop within {NODES_STOP:?}")
                }
                Err(e) => eprintln!("isthmus: stopping a node: {e}"),
            }
        }
    }
}

impl Drop for Embedded {
    /// The last resort (a panic, an early return): SIGKILL, by PID.
    fn drop(&mut self) {
        for kid in self
            .taskers
            .iter_mut()
            .chain(self.vmd.as_mut())
            .chain(self.etcd.as_mut())
        {
            let _ = kid.child.kill();
            let _ = kid.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port free a moment ago on `addr` (0 if none could be bound: etcd then
/// fails to listen and says so in its log).
fn free_port(addr: IpAddr) -> u16 {
    std::net::TcpListener::bind((addr, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// Whether the etcd whose metrics listen at `addr` answers `/health` with
/// true (plain HTTP/1.0, one second at most).
fn etcd_healthy(addr: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let second = Duration::from_secs(1);
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, second) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(second));
    let _ = stream.set_write_timeout(Some(second));
    if stream.write_all(b"GET /health HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.take(4096).read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}

fn check_running(kid: &mut Kid) -> Result<(), EmbedError> {
    match kid.child.try_wait() {
        Ok(Some(status)) => Err(EmbedError::Exited {
            what: kid.what.clone(),
            status,
            log: kid.log.clone(),
        }),
        _ => Ok(()),
    }
}

fn not_ready(kid: &Kid, within: Duration) -> EmbedError {
    EmbedError::NotReady {
        what: kid.what.clone(),
        within,
        log: kid.log.clone(),
    }
}

/// SIGTERM, then SIGKILL if it has not exited within [`STOP_GRACE`].
async fn stop(mut kid: Kid) {
    if let Ok(pid) = i32::try_from(kid.child.id()) {
        // SAFETY: kill(2) on our own child, not yet reaped (so the PID is
        // still ours).
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let end = Instant::now() + STOP_GRACE;
    while Instant::now() < end {
        if let Ok(Some(_)) = kid.child.try_wait() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tracing::warn!("{} did not stop within {STOP_GRACE:?}: killed", kid.what);
    let _ = kid.child.kill();
    let _ = kid.child.wait();
}

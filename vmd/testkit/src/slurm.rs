//! A real Slurm cluster for a test, on this machine: Debian's `slurmctld`
//! and `slurmd` (package `slurm-wlm`) with a `munged` of its own, every
//! file in a temporary directory (the munge key, its socket, `slurm.conf`,
//! state, spool and logs), the daemons on free loopback ports, run in the
//! foreground as children and stopped by their PIDs on drop, after the
//! cluster's jobs were cancelled. Nothing of the system's Slurm or munge
//! is used or touched: the clients find this cluster by `SLURM_CONF`
//! ([`Slurm::command`]), the daemons their munged by `AuthInfo=socket=`.
//!
//! One node: the machine's own host name at 127.0.0.1, as `slurmd` finds it
//! by itself. Several nodes: network namespaces (`netns`), one slurmd in
//! each under its node name (`-N h1`, `h2`, …; the namespaces share the
//! host name and the file system, so each node has its own spool by `%n`). The node is declared with as many CPUs as the test asks,
//! whatever the machine has (`SlurmdParameters=config_overrides`), so that
//! a four-rank coupling fits in an allocation on a two-core machine.
//!
//! Needs root (`SlurmUser=root`) and the packages `slurm-wlm` and `munge`
//! (`scripts/install-deps.sh`). Every wait has a deadline.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::etcd::free_port;
use crate::{Proc, TempDir, T};

/// A Slurm cluster of one controller, one or more nodes, one munged.
pub struct Slurm {
    /// `slurm.conf`, what `SLURM_CONF` names.
    pub conf: PathBuf,
    /// The nodes' names, in order.
    pub nodes: Vec<String>,
    /// The namespace of the controller and the clients, if not this one.
    netns: Option<String>,
    // Stopped in this order (the nodes first), by Drop.
    slurmds: Vec<Proc>,
    slurmctld: Option<Proc>,
    munged: Option<Proc>,
    /// Everything the cluster writes; last to go.
    pub dir: TempDir,
}

impl Slurm {
    /// A one-node cluster for a test, or `None` (the test is skipped, and
    /// says so) when `ISTHMUS_SKIP_SLURM` is set; panics if it cannot be
    /// started.
    pub fn for_test(cpus: u32) -> Option<Slurm> {
        (!Self::skipped()).then(|| Slurm::one_node(cpus))
    }

    /// Whether Slurm tests are to be skipped (`ISTHMUS_SKIP_SLURM` set;
    /// then it says so).
    pub fn skipped() -> bool {
        let skip = std::env::var_os("ISTHMUS_SKIP_SLURM").is_some();
        if skip {
            eprintln!("skipped: ISTHMUS_SKIP_SLURM is set");
        }
        skip
    }

    /// Starts munged, slurmctld and one slurmd with `cpus` CPUs; returns
    /// once `sinfo` shows the node idle.
    pub fn one_node(cpus: u32) -> Slurm {
        Self::start(
            vec![Node {
                name: short_host_name(),
                addr: "127.0.0.1".into(),
                netns: None,
            }],
            cpus,
        )
    }

    /// A cluster whose nodes are the network namespaces of `hosts`
    /// (`h1`, `h2`, … at their addresses, `cpus` each), the controller
    /// beside `h1`'s slurmd, in its namespace: the clients of
    /// [`Slurm::command`] run there too. Nothing listens outside the
    /// namespaces.
    pub fn in_namespaces(hosts: &crate::netns::Hosts, cpus: u32) -> Slurm {
        let nodes = hosts
            .hosts()
            .iter()
            .enumerate()
            .map(|(i, h)| Node {
                name: format!("h{}", i + 1),
                addr: h.addr.to_string(),
                netns: Some(h.netns.clone()),
            })
            .collect();
        Self::start(nodes, cpus)
    }

    /// Starts munged, slurmctld (beside the first node) and a slurmd per
    /// node; returns once `sinfo` shows every node idle.
    fn start(nodes: Vec<Node>, cpus: u32) -> Slurm {
        let dir = TempDir::new("slurm");
        let first = nodes.first().expect("at least one node").clone();
        let munge = dir.0.join("munge");
        std::fs::create_dir_all(&munge).expect("munge dir");
        let key = munge.join("munge.key");
        write_key(&key);
        let socket = munge.join("munge.socket");
        let conf = dir.0.join("slurm.conf");
        let spool = dir.0.join("spool");
        for n in &nodes {
            std::fs::create_dir_all(spool.join(&n.name)).expect("spool dir");
        }
        let node_lines: String = nodes
            .iter()
            .map(|n| {
                format!(
                    "NodeName={} NodeAddr={} CPUs={cpus} RealMemory=1000 State=UNKNOWN\n",
                    n.name, n.addr
                )
            })
            .collect();
        std::fs::create_dir_all(dir.0.join("state")).expect("state dir");
        std::fs::create_dir_all(dir.0.join("log")).expect("log dir");
        let text = format!(
            "ClusterName=isthmus\n\
             SlurmctldHost={ctld_host}({ctld_addr})\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={d_port}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={dir}/state\n\
             SlurmdSpoolDir={dir}/spool/%n\n\
             SlurmctldPidFile={dir}/slurmctld.pid\n\
             SlurmdPidFile={dir}/spool/slurmd-%n.pid\n\
             SlurmctldLogFile={dir}/log/slurmctld.log\n\
             SlurmdLogFile={dir}/log/slurmd-%n.log\n\
             SlurmdParameters=config_overrides\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             JobCompType=jobcomp/none\n\
             MpiDefault=none\n\
             MailProg=/bin/true\n\
             ReturnToService=2\n\
             SchedulerType=sched/backfill\n\
             InactiveLimit=0\n\
             KillWait=5\n\
             {node_lines}\
             PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            ctld_host = short_host_name(),
            ctld_addr = first.addr,
            ctld_port = free_port(),
            d_port = free_port(),
            socket = socket.display(),
            dir = dir.0.display(),
        );
        std::fs::write(&conf, text).expect("write slurm.conf");
        let logs = dir.0.join("log");
        let log =
            |name: &str| std::fs::File::create(logs.join(format!("{name}.out"))).expect("log file");
        let munged = Command::new("munged")
            .args(["--foreground", "--force"])
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", munge.join("munged.pid").display()))
            .arg(format!(
                "--seed-file={}",
                munge.join("munged.seed").display()
            ))
            .arg(format!("--log-file={}", munge.join("munged.log").display()))
            .stdin(Stdio::null())
            .stdout(log("munged"))
            .stderr(log("munged"))
            .spawn()
            .expect("start munged (package munge, scripts/install-deps.sh)");
        let mut me = Slurm {
            conf,
            nodes: nodes.iter().map(|n| n.name.clone()).collect(),
            netns: first.netns.clone(),
            slurmds: Vec::new(),
            slurmctld: None,
            munged: Some(Proc(munged)),
            dir,
        };
        me.wait("munged's socket", || socket.exists());
        me.slurmctld = Some(me.daemon(first.netns.as_deref(), "slurmctld", &[], "slurmctld"));
        for n in &nodes {
            let slurmd = me.daemon(
                n.netns.as_deref(),
                "slurmd",
                &["-N", &n.name],
                &format!("slurmd-{}", n.name),
            );
            me.slurmds.push(slurmd);
        }
        me.wait_idle();
        me
    }

    /// Starts `slurmctld` or `slurmd` in the foreground on this cluster's
    /// configuration, its output in `log/<log>.out`.
    fn daemon(&self, netns: Option<&str>, program: &str, args: &[&str], log: &str) -> Proc {
        let out = std::fs::File::create(self.dir.0.join("log").join(format!("{log}.out")))
            .expect("log file");
        let err = out.try_clone().expect("log file");
        let child = in_netns(netns, program)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .arg("-D")
            .arg("-f")
            .arg(&self.conf)
            .args(args)
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("start {program} (package slurm-wlm, scripts/install-deps.sh): {e}")
            });
        Proc(child)
    }

    /// `program` (sbatch, srun, sinfo, ...) talking to this cluster.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = in_netns(self.netns.as_deref(), program);
        c.env("SLURM_CONF", &self.conf).stdin(Stdio::null());
        c
    }

    /// Submits `script` with `sbatch --wait` and these options, its output
    /// in `output`; returns sbatch's exit code (the job's, for `--wait`),
    /// or panics with the cluster's logs at `deadline`.
    pub fn sbatch_wait(
        &self,
        options: &[&str],
        script: &Path,
        output: &Path,
        deadline: Duration,
    ) -> i32 {
        let child = self
            .command("sbatch")
            .arg("--wait")
            .args(options)
            .arg("-o")
            .arg(output)
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run sbatch");
        let started = Instant::now();
        let mut child = Proc(child);
        loop {
            match child.0.try_wait() {
                Ok(Some(status)) => {
                    let mut err = String::new();
                    if let Some(mut e) = child.0.stderr.take() {
                        let _ = e.read_to_string(&mut err);
                    }
                    if !status.success() {
                        eprintln!("sbatch: {status}: {err}");
                    }
                    return status.code().unwrap_or(-1);
                }
                Ok(None) if started.elapsed() > deadline => {
                    panic!(
                        "sbatch --wait {} did not end within {deadline:?}; its output:\n{}\n{}",
                        script.display(),
                        std::fs::read_to_string(output).unwrap_or_default(),
                        self.logs()
                    );
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => panic!("waiting for sbatch: {e}"),
            }
        }
    }

    /// The daemons' logs, for a failing test's message.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        if let Ok(entries) = std::fs::read_dir(self.dir.0.join("log")) {
            for e in entries.flatten() {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines.get(lines.len().saturating_sub(30)..).unwrap_or(&[]);
                out.push_str(&format!(
                    "--- {}\n{}\n",
                    e.path().display(),
                    tail.join("\n")
                ));
            }
        }
        out
    }

    /// Waits until `sinfo` lists every node idle.
    fn wait_idle(&mut self) {
        let end = Instant::now() + T * 2;
        loop {
            let out = self
                .command("sinfo")
                .args(["-h", "-N", "-o", "%N %t"])
                .output()
                .expect("run sinfo");
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let idle = self.nodes.iter().all(|n| {
                text.lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>() == [n.as_str(), "idle"])
            });
            if idle {
                return;
            }
            self.check_running();
            assert!(
                Instant::now() < end,
                "the Slurm nodes are not idle within {:?}: sinfo says {text:?}\n{}",
                T * 2,
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Panics with the logs if a daemon exited.
    fn check_running(&mut self) {
        let logs = self.logs();
        for p in self
            .slurmds
            .iter_mut()
            .chain(self.slurmctld.as_mut())
            .chain(self.munged.as_mut())
        {
            if let Ok(Some(s)) = p.0.try_wait() {
                panic!("a Slurm daemon exited ({s}):\n{logs}");
            }
        }
    }

    fn wait(&mut self, what: &str, ready: impl Fn() -> bool) {
        let end = Instant::now() + T;
        while !ready() {
            self.check_running();
            assert!(
                Instant::now() < end,
                "{what} not there within {T:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Slurm {
    /// Cancels the cluster's jobs and waits (bounded) until none is left,
    /// so that no job step outlives its slurmd; then stops the daemons.
    fn drop(&mut self) {
        if self.slurmctld.is_some() {
            let _ = self
                .command("scancel")
                .arg("--full")
                .arg("--user=root")
                .status();
            let end = Instant::now() + T;
            while Instant::now() < end {
                let out = self.command("squeue").args(["-h", "-o", "%i"]).output();
                match out {
                    Ok(o) if o.status.success() && o.stdout.iter().all(u8::is_ascii_whitespace) => {
                        break
                    }
                    Ok(_) => std::thread::sleep(Duration::from_millis(100)),
                    Err(_) => break,
                }
            }
        }
        self.slurmds.clear();
        self.slurmctld.take();
        self.munged.take();
    }
}

/// One node: its name, its address, its network namespace.
#[derive(Clone)]
struct Node {
    name: String,
    addr: String,
    netns: Option<String>,
}

/// `program` run in network namespace `netns` (by `nsenter --net`, which,
/// unlike `ip netns exec`, leaves /sys as it is: slurmd needs the cgroup
/// file system there even with `proctrack/linuxproc`), or here.
fn in_netns(netns: Option<&str>, program: impl AsRef<std::ffi::OsStr>) -> Command {
    match netns {
        Some(ns) => {
            let mut c = Command::new("nsenter");
            c.arg(format!("--net=/run/netns/{ns}")).arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// The machine's host name up to its first dot, as slurmctld and slurmd
/// compare it.
fn short_host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name");
    let name = name.trim();
    name.split('.').next().unwrap_or(name).to_string()
}

/// A fresh munge key (1 KiB from the kernel's generator), readable by its
/// owner only, as munged requires.
fn write_key(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut bytes = vec![0u8; 1024];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut r| r.read_exact(&mut bytes))
        .expect("random bytes for the munge key");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o400)
        .open(path)
        .expect("create the munge key");
    std::io::Write::write_all(&mut f, &bytes).expect("write the munge key");
}

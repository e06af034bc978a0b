//! Real processes for the resource-manager tests: vmds (started on port 0
//! with --addr-file), taskers, the console. Every process is stopped by its
//! PID when its handle drops; every wait has a deadline.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use isthmus_proto as pb;
use pb::console_client::ConsoleClient as VmdClient;
use tokio_stream::StreamExt;

pub const T: Duration = Duration::from_secs(30);

/// The directory holding the workspace's binaries (vmd, isthmus, tasker).
pub fn bin_dir() -> PathBuf {
    let tasker = PathBuf::from(env!("CARGO_BIN_EXE_tasker"));
    tasker.parent().expect("bin dir").to_path_buf()
}

pub fn bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.exists(),
        "{} not built: run `cargo build --workspace` (or `cargo test --workspace`) first",
        p.display()
    );
    p
}

/// A child process killed (by its PID) and reaped on drop.
pub struct Proc(pub Child);

impl Proc {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on a child we started and have not reaped.
        unsafe { libc::kill(self.0.id() as i32, sig) };
    }
    /// Waits (with a deadline) for the process to exit on its own.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + within;
        while Instant::now() < end {
            if let Ok(Some(s)) = self.0.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "isthmus-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub struct Vmd {
    pub proc: Proc,
    pub addr: String,
    pub dir: TempDir,
}

impl Vmd {
    /// Starts a vmd named `host` with extra arguments.
    pub fn start(host: &str, extra: &[&str]) -> Vmd {
        let dir = TempDir::new("rm");
        let addr_file = dir.0.join("addr");
        let child = Command::new(bin("vmd"))
            // Its own runtime directory: its socket and token, nobody else's.
            .arg("--runtime-dir")
            .arg(dir.0.join("run"))
            .args([
                "--listen",
                "127.0.0.1:0",
                "--host-name",
                host,
                "--addr-file",
            ])
            .arg(&addr_file)
            .args(extra)
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn vmd");
        let mut proc = Proc(child);
        let started = Instant::now();
        let addr = loop {
            if let Ok(a) = std::fs::read_to_string(&addr_file) {
                if !a.is_empty() {
                    break a;
                }
            }
            if let Ok(Some(s)) = proc.0.try_wait() {
                panic!("vmd {host} exited early: {s}");
            }
            assert!(started.elapsed() < T, "vmd did not start");
            std::thread::sleep(Duration::from_millis(10));
        };
        Vmd { proc, addr, dir }
    }

    /// A first vmd with a hostfile giving it `slots` and `offers`.
    pub fn with_hostfile(host: &str, slots: u32, offers: &[&str]) -> Vmd {
        let dir = TempDir::new("hostfile");
        let path = dir.0.join("hosts.toml");
        let offers: Vec<String> = offers.iter().map(|o| format!("{o:?}")).collect();
        std::fs::write(
            &path,
            format!(
                "[[host]]\nname = {host:?}\nslots = {slots}\noffers = [{}]\n",
                offers.join(", ")
            ),
        )
        .expect("write hostfile");
        let vmd = Vmd::start(host, &["--hostfile", path.to_str().expect("utf-8 path")]);
        drop(dir); // read at start
        vmd
    }

    pub async fn client(&self) -> VmdClient<isthmus_client::VmdChannel> {
        VmdClient::new(isthmus_client::channel(&self.addr).await.expect("connect"))
    }

    /// Starts a tasker for `implementation` on this vmd and waits until the
    /// host table shows it.
    pub async fn tasker(&self, implementation: &str) -> Proc {
        tasker_on(self, &self.addr, implementation, None).await
    }
}

/// Starts a tasker registering with `vmd_addr`; waits until the manager
/// `rm` lists it on `host` (default: rm's own host).
pub async fn tasker_on(rm: &Vmd, vmd_addr: &str, implementation: &str, host: Option<&str>) -> Proc {
    let child = Command::new(bin("tasker"))
        .args(["--impl", implementation, "--vmd", vmd_addr])
        .env("RUST_LOG", "error")
        .env("OMPI_MCA_btl_tcp_if_include", "lo")
        .env("OMPI_MCA_oob_tcp_if_include", "lo")
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn tasker");
    let proc = Proc(child);
    let mut c = rm.client().await;
    let end = Instant::now() + T;
    loop {
        let hosts = c
            .list_hosts(pb::ListHostsRequest {})
            .await
            .expect("list hosts")
            .into_inner()
            .hosts;
        let found = hosts.iter().any(|h| {
            host.map_or(h.local, |n| h.name == n) && h.taskers.iter().any(|t| t == implementation)
        });
        if found {
            return proc;
        }
        assert!(
            Instant::now() < end,
            "tasker {implementation} did not register"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub type Events = tonic::Streaming<pb::Event>;

pub async fn watch(vmd: &Vmd, kinds: &[pb::EventKind], current_state: bool) -> Events {
    let mut c = vmd.client().await;
    let req = pb::WatchRequest {
        kinds: kinds.iter().map(|k| *k as i32).collect(),
        current_state,
        ..Default::default()
    };
    c.watch(req).await.expect("watch").into_inner()
}

/// The next event satisfying `pred`, skipping others; panics at the deadline.
pub async fn next_where(
    events: &mut Events,
    what: &str,
    pred: impl Fn(&pb::Event) -> bool,
) -> pb::Event {
    let end = tokio::time::Instant::now() + T;
    loop {
        match tokio::time::timeout_at(end, events.next()).await {
            Ok(Some(Ok(ev))) if pred(&ev) => return ev,
            Ok(Some(Ok(_))) => {}
            Ok(Some(Err(s))) => panic!("watch failed while waiting for {what}: {s}"),
            Ok(None) => panic!("watch ended while waiting for {what}"),
            Err(_) => panic!("no {what} within {T:?}"),
        }
    }
}

/// Every event of `job` up to and including its JOB_EXIT.
pub async fn job_events(events: &mut Events, job: u64) -> Vec<pb::Event> {
    let mut out = Vec::new();
    loop {
        let ev = next_where(events, &format!("events of job {job}"), |e| {
            event_job(e) == Some(job)
        })
        .await;
        let end = matches!(ev.kind, Some(pb::event::Kind::JobExit(_)));
        out.push(ev);
        if end {
            return out;
        }
    }
}

pub fn event_job(e: &pb::Event) -> Option<u64> {
    match &e.kind {
        Some(pb::event::Kind::Output(o)) => Some(o.job),
        Some(pb::event::Kind::TaskExit(t)) => Some(t.job),
        Some(pb::event::Kind::JobExit(j)) => Some(j.job),
        _ => None,
    }
}

/// Output lines of one rank, in order.
pub fn lines(events: &[pb::Event], rank: u32, stream: pb::OutputStream) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            Some(pb::event::Kind::Output(o))
                if o.rank == Some(rank) && o.stream == stream as i32 =>
            {
                Some(o.line.clone())
            }
            _ => None,
        })
        .collect()
}

/// The rank exits of a job: rank → exit.
pub fn rank_exits(events: &[pb::Event]) -> std::collections::BTreeMap<u32, pb::exit_status::How> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            Some(pb::event::Kind::TaskExit(t)) => Some((t.rank?, t.exit.as_ref()?.how?)),
            _ => None,
        })
        .collect()
}

pub fn job_exit(events: &[pb::Event]) -> pb::JobExit {
    match events.last().and_then(|e| e.kind.clone()) {
        Some(pb::event::Kind::JobExit(j)) => j,
        other => panic!("last event is not a job exit: {other:?}"),
    }
}

pub fn spawn_req(implementation: &str, np: u32, program: &str, args: &[&str]) -> pb::SpawnRequest {
    pb::SpawnRequest {
        program: program.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        np,
        implementation: implementation.into(),
        ..Default::default()
    }
}

/// Waits until every rank of `job` has a pid; returns the pids by rank.
pub async fn rank_pids(c: &mut VmdClient<isthmus_client::VmdChannel>, job: u64) -> Vec<u32> {
    let end = Instant::now() + T;
    loop {
        let jobs = c
            .list_jobs(pb::ListJobsRequest { all: true })
            .await
            .expect("ps")
            .into_inner()
            .jobs;
        if let Some(j) = jobs.iter().find(|j| j.job == job) {
            if j.ranks.iter().all(|r| r.pid != 0) {
                return j.ranks.iter().map(|r| r.pid).collect();
            }
        }
        assert!(Instant::now() < end, "ranks of job {job} did not all start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn alive(pid: u32) -> bool {
    // A zombie is dead for our purpose.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// Runs the console against `addr`, returning (exit code, stdout, stderr).
pub fn console(addr: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin("isthmus"))
        .arg("--vmd")
        .arg(addr)
        .args(args)
        .output()
        .expect("run console");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}

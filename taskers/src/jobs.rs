//! The jobs one tasker runs: starting their processes through the launcher,
//! forwarding output line by line, delivering signals and kills, and
//! reporting rank exits and, once every rank is accounted for, the
//! launcher's exit. Orders come in and reports go out as the job protocol's
//! domain types ([`isthmus_types::job`]); [`crate::tasker`] puts them on the wire.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use isthmus_types::job::{ExitStatus, JobId, JobOrder, JobReport, LaunchSpec, OutputStream};
use isthmus_types::refusal::{Refusal, RefusalKind};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::mpsc;
use tracing::info;

use crate::launcher::{JobSpec, Launcher, Start};
use crate::rank_reports::{Reporters, ShimEvent};

/// The variables of a Slurm allocation (`SLURM_JOB_ID`, `SLURM_NODELIST`,
/// …) that make `mpirun`/`mpiexec` launch across it.
const SLURM_PREFIX: &str = "SLURM_";

/// How long a job's end waits for the exit reports of ranks that have not
/// closed their shim connection yet (only when something went wrong).
const RANK_REPORT_GRACE: Duration = Duration::from_secs(1);
/// How long a killed launcher gets to take its ranks down before SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// Longest output line forwarded whole; longer ones are cut.
const MAX_LINE: usize = 64 * 1024;

pub type ReportSender = mpsc::Sender<JobReport>;

/// A launcher process (or the set of exec ranks) has ended.
#[derive(Debug)]
pub struct LauncherDone {
    pub job: JobId,
    pub exit: Option<ExitStatus>,
    pub reason: String,
}

struct RankProc {
    rank: Option<u32>,
    pid: u32,
    exited: bool,
}

struct Job {
    np: u32,
    pgids: Vec<i32>,
    ranks: Vec<RankProc>,
    closed: u32,
    killed: bool,
    kill_deadline: Option<Instant>,
    done: Option<(LauncherDone, Instant)>,
}

pub struct Jobs {
    launcher: Arc<dyn Launcher>,
    /// The library preloaded into the jobs that ask for it (`preload`).
    libisthmus: Option<PathBuf>,
    shim: Vec<OsString>,
    socket: PathBuf,
    reporters: Reporters,
    reports: ReportSender,
    done_tx: mpsc::UnboundedSender<LauncherDone>,
    jobs: HashMap<JobId, Job>,
}

fn kill(pid: i32, sig: i32) {
    if pid > 0 {
        // SAFETY: plain kill(2); a negative pid addresses a process group we made.
        unsafe { libc::kill(pid, sig) };
    }
}

impl Jobs {
    pub fn new(
        launcher: Arc<dyn Launcher>,
        libisthmus: Option<PathBuf>,
        shim: Vec<OsString>,
        socket: &Path,
        reporters: Reporters,
        reports: ReportSender,
        done_tx: mpsc::UnboundedSender<LauncherDone>,
    ) -> Self {
        Self {
            launcher,
            libisthmus,
            shim,
            socket: socket.to_path_buf(),
            reporters,
            reports,
            done_tx,
            jobs: HashMap::new(),
        }
    }

    async fn send(&self, r: JobReport) {
        // The stream to the vmd is gone only when the tasker is stopping.
        let _ = self.reports.send(r).await;
    }

    async fn refuse(&self, job: JobId, kind: RefusalKind, message: String) {
        info!(job, %message, "launch refused");
        let error = Refusal::new(kind, message);
        self.send(JobReport::Refused { job, error }).await;
    }

    pub async fn order(&mut self, order: JobOrder) {
        match order {
            JobOrder::Launch(l) => self.launch(l).await,
            JobOrder::Signal { job, signal, rank } => self.signal(job, signal, rank),
            JobOrder::Kill { job } => self.kill(job),
        }
    }

    async fn launch(&mut self, l: LaunchSpec) {
        let job = l.job;
        if self.jobs.contains_key(&job) {
            return self
                .refuse(
                    job,
                    RefusalKind::AlreadyExists,
                    format!("job {job} is already running here"),
                )
                .await;
        }
        if l.np == 0 {
            return self
                .refuse(
                    job,
                    RefusalKind::InvalidArgument,
                    "np must be at least 1".into(),
                )
                .await;
        }
        let cwd = if l.cwd.is_empty() {
            std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
        } else {
            PathBuf::from(&l.cwd)
        };
        if !cwd.is_dir() {
            let msg = format!(
                "working directory {} does not exist on this host",
                cwd.display()
            );
            return self.refuse(job, RefusalKind::NotFound, msg).await;
        }
        let run_as = match crate::run_as::for_owner(l.owner) {
            Ok(r) => r,
            Err(msg) => return self.refuse(job, RefusalKind::FailedPrecondition, msg).await,
        };
        let path_var = l.env.get("PATH").map(OsString::from);
        let program = match crate::program::resolve(&l.program, &cwd, path_var.as_deref()) {
            Ok(p) => p,
            Err(msg) => return self.refuse(job, RefusalKind::NotFound, msg).await,
        };
        let mut env = l.env;
        if let Err(msg) = crate::preload::answer(
            &mut env,
            self.launcher.implementation(),
            self.libisthmus.as_deref(),
        ) {
            return self.refuse(job, RefusalKind::FailedPrecondition, msg).await;
        }
        let spec = JobSpec {
            job,
            program: &program,
            args: &l.args,
            np: l.np,
            env: &env,
        };
        if let Err(msg) = self.launcher.check(&spec) {
            return self.refuse(job, RefusalKind::FailedPrecondition, msg).await;
        }
        let plan = self.launcher.plan(&spec, &self.shim);
        self.send(JobReport::Accepted { job }).await;
        // Its ranks run as its owner (this tasker's uid, or the one it
        // drops to): only that uid may report for them, from now on.
        self.reporters.expect(job, l.owner);

        let mut children = Vec::new();
        let mut failure = None;
        for start in plan {
            match self.start(&start, &env, &cwd, run_as.as_ref()) {
                Ok(child) => children.push((child, start.rank)),
                Err(e) => {
                    failure = Some(format!(
                        "cannot start {}: {e}",
                        start.program.to_string_lossy()
                    ));
                    break;
                }
            }
        }
        let pgids: Vec<i32> = children
            .iter()
            .filter_map(|(c, _)| c.id())
            .map(|p| p as i32)
            .collect();
        if failure.is_some() {
            for p in &pgids {
                kill(-p, libc::SIGKILL);
            }
        }
        info!(job, program = %program.display(), np = l.np, launcher = self.launcher.command(), "job started");
        self.jobs.insert(
            job,
            Job {
                np: l.np,
                pgids,
                ranks: Vec::new(),
                closed: 0,
                killed: false,
                kill_deadline: None,
                done: None,
            },
        );
        let (reports, done_tx) = (self.reports.clone(), self.done_tx.clone());
        let launcher = self.launcher.clone();
        tokio::spawn(async move {
            let mut readers = Vec::new();
            let mut waits = Vec::new();
            for (mut child, rank) in children {
                for (pipe, stream) in [
                    (
                        child
                            .stdout
                            .take()
                            .map(|p| Box::new(p) as Box<dyn AsyncRead + Unpin + Send>),
                        OutputStream::Stdout,
                    ),
                    (
                        child
                            .stderr
                            .take()
                            .map(|p| Box::new(p) as Box<dyn AsyncRead + Unpin + Send>),
                        OutputStream::Stderr,
                    ),
                ] {
                    if let Some(pipe) = pipe {
                        let (reports, launcher) = (reports.clone(), launcher.clone());
                        readers.push(tokio::spawn(forward_lines(
                            job, rank, stream, pipe, reports, launcher,
                        )));
                    }
                }
                waits.push(tokio::spawn(async move { child.wait().await }));
            }
            let mut exit = Some(ExitStatus::Code(0));
            let mut reason = failure.clone().unwrap_or_default();
            for w in waits {
                match w.await {
                    Ok(Ok(status)) => {
                        if exit == Some(ExitStatus::Code(0)) {
                            exit = Some(status.into());
                        }
                    }
                    Ok(Err(e)) => reason = format!("waiting for the launcher: {e}"),
                    Err(e) => reason = format!("launcher watch failed: {e}"),
                }
            }
            if failure.is_some() {
                exit = None;
            }
            for r in readers {
                let _ = r.await;
            }
            let _ = done_tx.send(LauncherDone { job, exit, reason });
        });
    }

    fn start(
        &self,
        start: &Start,
        env: &BTreeMap<String, String>,
        cwd: &Path,
        run_as: Option<&crate::run_as::RunAs>,
    ) -> std::io::Result<tokio::process::Child> {
        let mut cmd = tokio::process::Command::new(&start.program);
        // The resource manager placed this job on this host: its launcher
        // stays here, not reading a Slurm allocation as its own to spread
        // over (the job's own variables may still name one).
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with(SLURM_PREFIX) {
                cmd.env_remove(name);
            }
        }
        cmd.args(&start.args)
            .envs(env)
            .envs(start.env.iter().map(|(k, v)| (k, v)))
            .env(crate::ENV_TASKER_SOCKET, &self.socket)
            .env(crate::ENV_RANK_VAR, self.launcher.rank_variable())
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so that a kill reaches whatever the
            // launcher started.
            .process_group(0);
        // First become the job's owner (a change of credentials clears the
        // parent-death signal set below).
        if let Some(r) = run_as {
            crate::run_as::apply(&mut cmd, r);
        }
        // SAFETY: prctl is async-signal-safe. The launcher gets SIGTERM when
        // the tasker dies (the tasker's runtime has one thread, so "parent
        // thread" and "parent" coincide).
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        cmd.spawn()
    }

    fn signal(&mut self, job: JobId, sig: i32, rank: Option<u32>) {
        let Some(j) = self.jobs.get(&job) else { return };
        for r in j
            .ranks
            .iter()
            .filter(|r| !r.exited && (rank.is_none() || r.rank == rank))
        {
            kill(r.pid as i32, sig);
        }
    }

    fn kill(&mut self, job: JobId) {
        let Some(j) = self.jobs.get_mut(&job) else {
            return;
        };
        info!(job, "killing job");
        j.killed = true;
        for r in j.ranks.iter().filter(|r| !r.exited) {
            kill(r.pid as i32, libc::SIGKILL);
        }
        for p in &j.pgids {
            kill(-p, libc::SIGTERM);
        }
        j.kill_deadline = Some(Instant::now() + KILL_GRACE);
    }

    /// Kills everything (the tasker is stopping).
    pub fn kill_all(&mut self) {
        for j in self.jobs.values() {
            for r in j.ranks.iter().filter(|r| !r.exited) {
                kill(r.pid as i32, libc::SIGKILL);
            }
            for p in &j.pgids {
                kill(-p, libc::SIGKILL);
            }
        }
    }

    pub async fn shim_event(&mut self, ev: ShimEvent) {
        match ev {
            ShimEvent::Started { job, rank, pid } => {
                let Some(j) = self.jobs.get_mut(&job).filter(|j| !j.killed) else {
                    // A rank of a job that is over or being killed.
                    kill(pid as i32, libc::SIGKILL);
                    return;
                };
                j.ranks.push(RankProc {
                    rank,
                    pid,
                    exited: false,
                });
                if let Some(rank) = rank {
                    self.send(JobReport::RankStarted { job, rank, pid }).await;
                }
            }
            ShimEvent::Exited { job, rank, exit } => {
                let Some(j) = self.jobs.get_mut(&job) else {
                    return;
                };
                if let Some(r) = j.ranks.iter_mut().find(|r| r.rank == rank && !r.exited) {
                    r.exited = true;
                }
                self.send(JobReport::RankExit { job, rank, exit }).await;
            }
            ShimEvent::Closed { job: Some(job) } => {
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.closed += 1;
                }
                self.try_finish(job).await;
            }
            ShimEvent::Closed { job: None } => {}
        }
    }

    pub async fn launcher_done(&mut self, done: LauncherDone) {
        let job = done.job;
        if let Some(j) = self.jobs.get_mut(&job) {
            j.done = Some((done, Instant::now() + RANK_REPORT_GRACE));
        }
        self.try_finish(job).await;
    }

    /// Reports the job's end once its launcher ended and every rank's shim
    /// has reported (or the grace period is over).
    async fn try_finish(&mut self, job: JobId) {
        let ready = self.jobs.get(&job).is_some_and(|j| match &j.done {
            Some((_, deadline)) => j.closed >= j.np || Instant::now() >= *deadline,
            None => false,
        });
        if !ready {
            return;
        }
        let Some(j) = self.jobs.remove(&job) else {
            return;
        };
        self.reporters.forget(job);
        let Some((done, _)) = j.done else { return };
        info!(job, exit = ?done.exit, "job ended");
        self.send(JobReport::LauncherExit {
            job,
            exit: done.exit,
            reason: done.reason,
        })
        .await;
    }

    /// Deadlines: kill escalation and the rank-report grace.
    pub async fn tick(&mut self) {
        let now = Instant::now();
        let mut due = Vec::new();
        for (id, j) in &mut self.jobs {
            if j.done.is_none() && j.kill_deadline.is_some_and(|d| now >= d) {
                for p in &j.pgids {
                    kill(-p, libc::SIGKILL);
                }
                j.kill_deadline = None;
            }
            if j.done.as_ref().is_some_and(|(_, d)| now >= *d) {
                due.push(*id);
            }
        }
        for id in due {
            self.try_finish(id).await;
        }
    }
}

async fn forward_lines(
    job: JobId,
    rank: Option<u32>,
    stream: OutputStream,
    pipe: Box<dyn AsyncRead + Unpin + Send>,
    reports: ReportSender,
    launcher: Arc<dyn Launcher>,
) {
    let mut reader = BufReader::new(pipe);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        buf.truncate(MAX_LINE);
        let text = String::from_utf8_lossy(&buf);
        // A process that is one rank needs no tags; a launcher's lines do.
        let (rank, line) = match rank {
            Some(r) => (Some(r), text.into_owned()),
            None => {
                let (r, line) = launcher.split_rank(&text);
                (r, line.to_string())
            }
        };
        let r = JobReport::Output {
            job,
            rank,
            stream,
            line,
        };
        if reports.send(r).await.is_err() {
            return;
        }
    }
}

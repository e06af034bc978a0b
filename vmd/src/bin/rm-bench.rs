//! `rm-bench`: the resource manager against direct launches.
//!
//! 1. spawn-to-exit of a trivial MPI job (`bench/reference/mpi_hello.c`,
//!    MPI_Init + MPI_Finalize) with np = 1 and 4 under Open MPI and MPICH,
//!    through a vmd and its taskers: from the Spawn call to the JOB_EXIT
//!    notification at a subscriber;
//! 2. beside it, the same job launched directly by its launcher, measured in
//!    the same run by `bench/reference/launch.sh` (its RESULT lines);
//! 3. the time from a rank's SIGKILL to the TASK_EXIT notification.
//!
//! Prints one table with ratios. Not a test: the numbers depend on load.
//!
//!   rm-bench [--reps 10] [--kill-reps 20]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use isthmus_client::{Console, Events};
use isthmus_types::event::{Notification, NotificationKind, WatchEvent, WatchFilter};
use isthmus_types::job::{JobState, SpawnSpec};
use isthmus_vmd::daemon::{Daemon, DaemonConfig, HostOptions, Security};

#[derive(Parser)]
struct Args {
    /// Timed repetitions per configuration (after one warm-up).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// SIGKILL-to-notification repetitions.
    #[arg(long, default_value_t = 20)]
    kill_reps: usize,
}

const DEADLINE: Duration = Duration::from_secs(60);

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    // `n` is at least 1 here, so every index below is in bounds.
    let at = |i: usize| v.get(i).copied().unwrap_or(f64::NAN);
    let median = if n % 2 == 1 {
        at(n / 2)
    } else {
        (at(n / 2 - 1) + at(n / 2)) / 2.0
    };
    let p99 = at(((0.99 * n as f64).ceil() as usize).clamp(1, n) - 1);
    (median, p99)
}

fn repo_root() -> anyhow::Result<PathBuf> {
    let mut dir = std::env::current_dir()?;
    loop {
        if dir.join("bench/reference/launch.sh").exists() {
            return Ok(dir);
        }
        if !dir.pop() {
            bail!("run rm-bench from inside the repository (bench/reference/launch.sh not found)");
        }
    }
}

/// Direct-launch timings by name: (median_us, p99_us).
type Reference = BTreeMap<String, (f64, f64)>;

/// Runs launch.sh; returns its timings and the build dir.
fn reference(root: &Path, reps: usize) -> anyhow::Result<(Reference, PathBuf)> {
    let out_dir = root.join("target/reference");
    eprintln!("rm-bench: timing direct launches with bench/reference/launch.sh ({reps} reps)");
    let out = Command::new("bash")
        .arg(root.join("bench/reference/launch.sh"))
        .arg(reps.to_string())
        .env("REFERENCE_BUILD_DIR", &out_dir)
        .stderr(Stdio::inherit())
        .output()
        .context("running launch.sh")?;
    if !out.status.success() {
        bail!("launch.sh failed: {}", out.status);
    }
    let mut results = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // RESULT launch_openmpi_np1 median_us=… p99_us=… n=…
        let mut words = line.split_whitespace();
        if words.next() != Some("RESULT") {
            continue;
        }
        let Some(name) = words.next() else { continue };
        let mut median = f64::NAN;
        let mut p99 = f64::NAN;
        for w in words {
            if let Some(v) = w.strip_prefix("median_us=") {
                median = v.parse().unwrap_or(f64::NAN);
            } else if let Some(v) = w.strip_prefix("p99_us=") {
                p99 = v.parse().unwrap_or(f64::NAN);
            }
        }
        results.insert(name.to_string(), (median, p99));
    }
    Ok((results, out_dir))
}

async fn next_job_event(
    events: &mut Events,
    job: u64,
    want_exit: bool,
) -> anyhow::Result<Notification> {
    let end = tokio::time::Instant::now() + DEADLINE;
    loop {
        let ev = tokio::time::timeout_at(end, events.next())
            .await
            .context("no notification within the deadline")?;
        let ev = ev?.context("watch ended")?;
        if ev.event.job() != Some(job) {
            continue;
        }
        match &ev.event {
            WatchEvent::JobExit { .. } if want_exit => return Ok(ev),
            WatchEvent::TaskExit { .. } if !want_exit => return Ok(ev),
            WatchEvent::JobExit { .. } => {
                bail!("job {job} ended before its task exit: {:?}", ev.event)
            }
            _ => {}
        }
    }
}

async fn spawn_to_exit(
    c: &Console,
    events: &mut Events,
    implementation: &str,
    program: &Path,
    np: u32,
) -> anyhow::Result<f64> {
    let spec = SpawnSpec {
        program: program.display().to_string(),
        np,
        implementation: implementation.into(),
        ..Default::default()
    };
    let t0 = Instant::now();
    let job = c.spawn(spec).await?.job;
    let ev = next_job_event(events, job, true).await?;
    let us = t0.elapsed().as_secs_f64() * 1e6;
    if let WatchEvent::JobExit { state, .. } = &ev.event {
        if *state != JobState::Exited {
            bail!("job {job} did not exit cleanly: {:?}", ev.event);
        }
    }
    Ok(us)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let root = repo_root()?;
    let (reference, ref_dir) = reference(&root, args.reps)?;
    let bin_dir = std::env::current_exe()?
        .parent()
        .context("no bin dir")?
        .to_path_buf();
    let tasker_bin = bin_dir.join("tasker");
    if !tasker_bin.exists() {
        bail!(
            "{} not built (cargo build -p isthmus-taskers)",
            tasker_bin.display()
        );
    }

    let options = HostOptions {
        slots: Some(16),
        ..Default::default()
    };
    let daemon = Daemon::bind_with(
        DaemonConfig {
            listen: None,
            host: "bench".into(),
            // A runtime directory of its own: no clash with a running vmd.
            security: Security::in_dir(
                std::env::temp_dir().join(format!("isthmus-rm-bench-{}", std::process::id())),
            ),
        },
        options,
    )
    .await?;
    let addr = daemon.client_addr();
    let halt = daemon.halt_handle();
    let server = tokio::spawn(daemon.serve(std::future::pending()));

    let mut taskers = Vec::new();
    let mut impls = Vec::new();
    for (imp, launcher) in [("openmpi", "mpirun.openmpi"), ("mpich", "mpiexec.mpich")] {
        if ref_dir.join(format!("mpi_hello.{imp}")).exists() && which(launcher) {
            let child = Command::new(&tasker_bin)
                .args(["--impl", imp, "--vmd", &addr])
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .spawn()
                .with_context(|| format!("starting the {imp} tasker"))?;
            taskers.push(Killed(child));
            impls.push(imp);
        }
    }
    let c = Console::connect(&addr).await?;
    let end = Instant::now() + DEADLINE;
    loop {
        let hosts = c.hosts().await?;
        if hosts
            .first()
            .is_some_and(|h| impls.iter().all(|i| h.taskers.iter().any(|t| t == i)))
        {
            break;
        }
        if Instant::now() > end {
            bail!("taskers did not register");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut events = c
        .watch(WatchFilter::kinds([
            NotificationKind::TaskExit,
            NotificationKind::JobExit,
        ]))
        .await?;

    let mut rows = Vec::new();
    for imp in &impls {
        let program = ref_dir.join(format!("mpi_hello.{imp}"));
        for np in [1u32, 4] {
            eprintln!("rm-bench: spawn-to-exit {imp} np={np}");
            spawn_to_exit(&c, &mut events, imp, &program, np).await?; // warm-up
            let mut times = Vec::new();
            for _ in 0..args.reps {
                times.push(spawn_to_exit(&c, &mut events, imp, &program, np).await?);
            }
            let (median, p99) = stats(times);
            let direct = reference.get(&format!("launch_{imp}_np{np}")).copied();
            rows.push((format!("spawn-to-exit {imp} np={np}"), median, p99, direct));
        }
    }

    // SIGKILL of a rank → TASK_EXIT at the subscriber.
    let mut kill_times = Vec::new();
    let kill_impl = impls.first().copied().unwrap_or("openmpi");
    eprintln!(
        "rm-bench: SIGKILL-to-notification ({kill_impl}, {} reps)",
        args.kill_reps
    );
    for _ in 0..args.kill_reps {
        let spec = SpawnSpec {
            program: "sleep".into(),
            args: vec!["30".into()],
            np: 1,
            implementation: kill_impl.into(),
            ..Default::default()
        };
        let job = c.spawn(spec).await?.job;
        let end = Instant::now() + DEADLINE;
        let pid = loop {
            let jobs = c.jobs(false).await?;
            if let Some(pid) = jobs
                .iter()
                .find(|j| j.id == job)
                .and_then(|j| j.ranks.first())
                .and_then(|r| r.pid)
            {
                break pid;
            }
            if Instant::now() > end {
                bail!("rank of job {job} did not start");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let t0 = Instant::now();
        // SAFETY: kill(2) of the rank the resource manager reported.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        next_job_event(&mut events, job, false).await?;
        kill_times.push(t0.elapsed().as_secs_f64() * 1e6);
        next_job_event(&mut events, job, true).await.ok();
    }
    let (kill_median, kill_p99) = stats(kill_times);

    println!();
    println!(
        "{:<34} {:>12} {:>12} {:>14} {:>14} {:>8} {:>8}",
        "measure", "median_us", "p99_us", "direct_med_us", "direct_p99_us", "ratio", "target"
    );
    for (name, median, p99, direct) in &rows {
        let (dm, dp) = direct.unwrap_or((f64::NAN, f64::NAN));
        println!(
            "{name:<34} {median:>12.0} {p99:>12.0} {dm:>14.0} {dp:>14.0} {:>8.2} {:>8}",
            median / dm,
            "<=1.10"
        );
    }
    println!(
        "{:<34} {kill_median:>12.0} {kill_p99:>12.0} {:>14} {:>14} {:>8} {:>8}",
        format!("SIGKILL-to-TASK_EXIT {kill_impl} np=1"),
        "-",
        "-",
        "-",
        "p99<100ms"
    );
    for (name, median, p99, _) in &rows {
        println!(
            "RESULT rm_{} median_us={median:.0} p99_us={p99:.0} n={}",
            name.replace([' ', '='], "_"),
            args.reps
        );
    }
    println!(
        "RESULT rm_sigkill_to_task_exit median_us={kill_median:.0} p99_us={kill_p99:.0} n={}",
        args.kill_reps
    );

    drop(taskers);
    halt.notify_one();
    let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
    Ok(())
}

fn which(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).exists()))
}

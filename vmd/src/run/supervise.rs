//! Starting a coupling's components through the resource manager and
//! following them: one status line per change (starting, running, exited
//! with its code), their output tagged `component:rank`, and the end:
//! every component stopped on Ctrl-C (SIGINT or SIGTERM), on the first
//! failure when the file says `on_failure = "abort"`, or when `[run]
//! timeout` passes. The exit code is the first failing component's.

use std::collections::BTreeMap;
use std::time::Duration;

use isthmus_client::{Console, Events};
use isthmus_types::event::{NotificationKind, WatchEvent, WatchFilter};
use isthmus_types::job::{ExitStatus, JobId, JobState, OutputStream, Placement, SpawnSpec};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::time::Instant;

use super::spec::{Component, Impl, OnFailure};

/// How long one RPC (watch, spawn, kill) may take.
const CALL: Duration = Duration::from_secs(30);
/// How long the stopped components may take to be reported ended.
const STOP_WAIT: Duration = Duration::from_secs(20);

/// Exit code after Ctrl-C (128 + SIGINT, as a shell reports it).
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit code when `[run] timeout` passed (as timeout(1)).
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit code when a component could not be started or the vmd failed us.
pub const EXIT_FAILED: i32 = 1;

/// A component with its implementation decided.
#[derive(Clone, Debug)]
pub struct Planned {
    pub component: Component,
    pub implementation: Impl,
    /// Read from the binary rather than given in the file.
    pub detected: bool,
    /// A part of one `MPI_COMM_WORLD` (`isthmus run`'s MPMD form): its
    /// ranks' output is tagged with their world rank, this plus the rank.
    pub world_offset: Option<u32>,
}

/// Where a component stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    NotStarted,
    Running(JobId),
    Ended,
}

/// Ctrl-C and SIGTERM, both meaning "stop everything".
pub struct Interrupts {
    int: Signal,
    term: Signal,
}

impl Interrupts {
    /// Installs the handlers (from here on the signals no longer kill us).
    pub fn install() -> std::io::Result<Self> {
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// Completes at the next SIGINT or SIGTERM.
    pub async fn recv(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}

/// One run: the plan, the vmd, what each component is at.
struct Run<'a> {
    console: &'a Console,
    plan: &'a [Planned],
    stages: Vec<Stage>,
    jobs: BTreeMap<JobId, usize>,
    /// The first failing component's exit code.
    first_failure: Option<i32>,
    /// Jobs this run killed (reported "stopped", not failures).
    stopping: Vec<JobId>,
}

/// Starts every component of `plan` and follows them to the end; returns
/// the exit code.
pub async fn supervise(
    console: &Console,
    plan: &[Planned],
    on_failure: OnFailure,
    timeout: Option<Duration>,
    interrupts: &mut Interrupts,
) -> i32 {
    // Subscribed before spawning, so not even a fast job's end is missed.
    let filter = WatchFilter::kinds([
        NotificationKind::TaskOutput,
        NotificationKind::TaskExit,
        NotificationKind::JobExit,
    ]);
    let mut events = match tokio::time::timeout(CALL, console.watch(filter)).await {
        Ok(Ok(e)) => e,
        Ok(Err(e)) => {
            eprintln!("isthmus: watching the vmd's events: {}", e.message());
            return EXIT_FAILED;
        }
        Err(_) => {
            eprintln!("isthmus: the vmd did not answer a watch within {CALL:?}");
            return EXIT_FAILED;
        }
    };
    let mut run = Run {
        console,
        plan,
        stages: vec![Stage::NotStarted; plan.len()],
        jobs: BTreeMap::new(),
        first_failure: None,
        stopping: Vec::new(),
    };
    let deadline = timeout.map(|t| Instant::now() + t);
    let abort = on_failure == OnFailure::Abort;
    for i in 0..=plan.len() {
        // A spawn under way is not abandoned (its job would run on,
        // unknown to us): a Ctrl-C is seen before each and after the last.
        if tokio::time::timeout(Duration::ZERO, interrupts.recv())
            .await
            .is_ok()
        {
            status("interrupted: stopping every component");
            run.stop_all(&mut events).await;
            return EXIT_INTERRUPTED;
        }
        if i == plan.len() {
            break;
        }
        run.start(i).await;
        if abort && run.first_failure.is_some() {
            status("a component failed: stopping the others (on_failure = \"abort\")");
            run.stop_all(&mut events).await;
            return run.first_failure.unwrap_or(EXIT_FAILED);
        }
    }
    while run.any_running() {
        let passed = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            next = events.next() => match next {
                Ok(Some(n)) => {
                    if run.on_event(n.event) && abort {
                        status("a component failed: stopping the others (on_failure = \"abort\")");
                        run.stop_all(&mut events).await;
                        break;
                    }
                }
                Ok(None) => {
                    eprintln!("isthmus: the vmd closed the event stream");
                    run.stop_all(&mut events).await;
                    return EXIT_FAILED;
                }
                Err(e) => {
                    eprintln!("isthmus: the vmd's event stream failed: {}", e.message());
                    run.stop_all(&mut events).await;
                    return EXIT_FAILED;
                }
            },
            _ = interrupts.recv() => {
                status("interrupted: stopping every component");
                run.stop_all(&mut events).await;
                return EXIT_INTERRUPTED;
            }
            _ = passed => {
                status(&format!("the run's timeout ({:?}) passed: stopping every component", timeout.unwrap_or_default()));
                run.stop_all(&mut events).await;
                return EXIT_TIMEOUT;
            }
        }
    }
    run.first_failure.unwrap_or(0)
}

/// A status line (output lines are `[component:rank] …`).
fn status(line: &str) {
    println!("== {line}");
}

impl Run<'_> {
    /// Asks the resource manager to start component `i`.
    async fn start(&mut self, i: usize) {
        let Some(p) = self.plan.get(i) else { return };
        let c = &p.component;
        let how = if p.detected {
            " (read from the binary)"
        } else {
            ""
        };
        status(&format!(
            "{}: starting ({}{how}, {} rank{})",
            c.name,
            p.implementation,
            c.np,
            if c.np == 1 { "" } else { "s" }
        ));
        let spec = SpawnSpec {
            program: c.program.clone(),
            args: c.args.clone(),
            np: c.np,
            implementation: p.implementation.as_str().to_string(),
            // Without a host: the one with the most free slots, so that the
            // components spread over the hosts (one host: that one).
            placement: c.host.clone().map_or(Placement::MostFree, Placement::Host),
            env: c.env.clone(),
            cwd: c.cwd.display().to_string(),
            // Not sent: the vmd sets it from this caller's identity.
            owner: u32::MAX,
        };
        let failed = match tokio::time::timeout(CALL, self.console.spawn(spec)).await {
            Ok(Ok(s)) => {
                status(&format!(
                    "{}: running (job {} on {})",
                    c.name, s.job, s.host
                ));
                self.jobs.insert(s.job, i);
                self.set(i, Stage::Running(s.job));
                return;
            }
            Ok(Err(e)) => e.message().to_string(),
            Err(_) => format!("the vmd did not answer within {CALL:?}"),
        };
        status(&format!("{}: failed to start: {failed}", c.name));
        self.set(i, Stage::Ended);
        self.first_failure.get_or_insert(EXIT_FAILED);
    }

    fn set(&mut self, i: usize, stage: Stage) {
        if let Some(s) = self.stages.get_mut(i) {
            *s = stage;
        }
    }

    fn any_running(&self) -> bool {
        self.stages.iter().any(|s| matches!(s, Stage::Running(_)))
    }

    fn name(&self, i: usize) -> &str {
        self.plan.get(i).map_or("?", |p| p.component.name.as_str())
    }

    /// Prints what an event says of our jobs; true if it is a component's
    /// failure (not one this run stopped).
    fn on_event(&mut self, event: WatchEvent) -> bool {
        let Some(&i) = event.job().and_then(|j| self.jobs.get(&j)) else {
            return false; // another run's or user's job
        };
        match event {
            WatchEvent::Output {
                rank, stream, line, ..
            } => {
                let offset = self.plan.get(i).and_then(|p| p.world_offset);
                let rank = rank.map_or("-".to_string(), |r| {
                    offset.map_or(r, |o| o.saturating_add(r)).to_string()
                });
                let tagged = format!("[{}:{rank}] {line}", self.name(i));
                match stream {
                    OutputStream::Stdout => println!("{tagged}"),
                    OutputStream::Stderr => eprintln!("{tagged}"),
                }
                false
            }
            WatchEvent::JobExit {
                job,
                state,
                exit,
                reason,
                ..
            } => {
                self.set(i, Stage::Ended);
                let name = self.name(i).to_string();
                if self.stopping.contains(&job) {
                    status(&format!(
                        "{name}: stopped ({})",
                        ended_text(state, exit, &reason)
                    ));
                    return false;
                }
                status(&format!("{name}: {}", ended_text(state, exit, &reason)));
                match failure_code(state, exit) {
                    Some(code) => {
                        self.first_failure.get_or_insert(code);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }

    /// Kills every running component and waits (at most [`STOP_WAIT`]) for
    /// the vmd to report them ended.
    async fn stop_all(&mut self, events: &mut Events) {
        let running: Vec<(usize, JobId)> = self
            .stages
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Stage::Running(j) => Some((i, *j)),
                _ => None,
            })
            .collect();
        for &(i, job) in &running {
            self.stopping.push(job);
            match tokio::time::timeout(CALL, self.console.kill(job)).await {
                Ok(Ok(())) => {}
                // It may have ended meanwhile: its JobExit tells.
                Ok(Err(e)) => tracing::debug!("kill job {job}: {}", e.message()),
                Err(_) => eprintln!(
                    "isthmus: the vmd did not answer killing {} (job {job}) within {CALL:?}",
                    self.name(i)
                ),
            }
        }
        let end = Instant::now() + STOP_WAIT;
        while self.any_running() {
            match tokio::time::timeout_at(end, events.next()).await {
                Ok(Ok(Some(n))) => {
                    self.on_event(n.event);
                }
                Ok(_) => break,
                Err(_) => {
                    let left: Vec<&str> = (0..self.stages.len())
                        .filter(|&i| matches!(self.stages.get(i), Some(Stage::Running(_))))
                        .map(|i| self.name(i))
                        .collect();
                    eprintln!(
                        "isthmus: not reported stopped within {STOP_WAIT:?}: {}",
                        left.join(", ")
                    );
                    break;
                }
            }
        }
    }
}

/// How a job ended, in words.
fn ended_text(state: JobState, exit: Option<ExitStatus>, reason: &str) -> String {
    let how = match exit {
        Some(ExitStatus::Code(c)) => format!("exited with code {c}"),
        Some(ExitStatus::Signal(s)) => format!("killed by signal {s}"),
        None => match state {
            JobState::Killed => "killed".to_string(),
            JobState::Lost => "lost".to_string(),
            _ => "failed".to_string(),
        },
    };
    if reason.is_empty() || state == JobState::Exited {
        how
    } else {
        format!("{how}: {reason}")
    }
}

/// The exit code a job's end gives the run: `None` for a success.
fn failure_code(state: JobState, exit: Option<ExitStatus>) -> Option<i32> {
    match (state, exit) {
        (JobState::Exited, Some(ExitStatus::Code(0))) => None,
        (_, Some(ExitStatus::Code(c))) if (1..=255).contains(&c) => Some(c),
        (_, Some(ExitStatus::Signal(s))) if (1..=127).contains(&s) => Some(128 + s),
        _ => Some(EXIT_FAILED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_failing_job() {
        assert_eq!(
            failure_code(JobState::Exited, Some(ExitStatus::Code(0))),
            None
        );
        assert_eq!(
            failure_code(JobState::Exited, Some(ExitStatus::Code(3))),
            Some(3)
        );
        assert_eq!(
            failure_code(JobState::Killed, Some(ExitStatus::Signal(9))),
            Some(137)
        );
        assert_eq!(failure_code(JobState::Failed, None), Some(1));
        assert_eq!(
            failure_code(JobState::Lost, Some(ExitStatus::Code(0))),
            Some(1)
        );
        assert_eq!(
            failure_code(JobState::Exited, Some(ExitStatus::Code(-1))),
            Some(1)
        );
    }

    #[test]
    fn ends_read_plainly() {
        assert_eq!(
            ended_text(JobState::Exited, Some(ExitStatus::Code(2)), ""),
            "exited with code 2"
        );
        assert_eq!(
            ended_text(JobState::Failed, None, "launcher died"),
            "failed: launcher died"
        );
    }
}

//! The one edge between the domain types of [`isthmus_types`] and the wire
//! types of this crate: `From` where every value has a wire form, `TryFrom`
//! where a wire message may be malformed (then it is refused, never a panic).
//!
//! Both ends of every stream use these: the vmd (its service, tasker and
//! host links), the taskers and the clients.

use isthmus_types::event::{RmEvent, Sequenced};
use isthmus_types::host::{Host, HostDecl, HostState};
use isthmus_types::job::{
    ExitStatus, Job, JobOrder, JobReport, JobState, LaunchSpec, OutputStream, Placement, Rank,
    SpawnSpec,
};
use isthmus_types::refusal::{Refusal, RefusalKind};
use tonic::Code;

use crate::v1 as pb;

/// A wire message that lacks a part it must have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed message: {}", self.0)
    }
}

impl std::error::Error for Malformed {}

// ---- refusals ----

/// The gRPC code a refusal of this kind travels with.
pub fn code_of(kind: RefusalKind) -> Code {
    match kind {
        RefusalKind::InvalidArgument => Code::InvalidArgument,
        RefusalKind::NotFound => Code::NotFound,
        RefusalKind::AlreadyExists => Code::AlreadyExists,
        RefusalKind::FailedPrecondition => Code::FailedPrecondition,
        RefusalKind::ResourceExhausted => Code::ResourceExhausted,
        RefusalKind::Unavailable => Code::Unavailable,
        RefusalKind::DeadlineExceeded => Code::DeadlineExceeded,
    }
}

/// The kind of refusal a gRPC code stands for; codes no refusal uses count
/// as a failed precondition.
pub fn refusal_kind(code: Code) -> RefusalKind {
    match code {
        Code::InvalidArgument => RefusalKind::InvalidArgument,
        Code::NotFound => RefusalKind::NotFound,
        Code::AlreadyExists => RefusalKind::AlreadyExists,
        Code::ResourceExhausted => RefusalKind::ResourceExhausted,
        Code::DeadlineExceeded => RefusalKind::DeadlineExceeded,
        Code::Unavailable => RefusalKind::Unavailable,
        _ => RefusalKind::FailedPrecondition,
    }
}

// ---- exit statuses, states, streams ----

impl From<ExitStatus> for pb::ExitStatus {
    fn from(e: ExitStatus) -> Self {
        pb::ExitStatus {
            how: Some(match e {
                ExitStatus::Code(c) => pb::exit_status::How::Code(c),
                ExitStatus::Signal(s) => pb::exit_status::How::Signal(s),
            }),
        }
    }
}

impl TryFrom<pb::ExitStatus> for ExitStatus {
    type Error = Malformed;
    fn try_from(e: pb::ExitStatus) -> Result<Self, Malformed> {
        match e.how {
            Some(pb::exit_status::How::Code(c)) => Ok(ExitStatus::Code(c)),
            Some(pb::exit_status::How::Signal(s)) => Ok(ExitStatus::Signal(s)),
            None => Err(Malformed("exit status without code or signal")),
        }
    }
}

/// An optional wire exit status; a malformed one counts as absent.
fn exit_from(e: Option<pb::ExitStatus>) -> Option<ExitStatus> {
    e.and_then(|e| ExitStatus::try_from(e).ok())
}

impl From<JobState> for pb::JobState {
    fn from(s: JobState) -> Self {
        match s {
            JobState::Starting => pb::JobState::JobStarting,
            JobState::Running => pb::JobState::JobRunning,
            JobState::Exited => pb::JobState::JobExited,
            JobState::Failed => pb::JobState::JobFailed,
            JobState::Killed => pb::JobState::JobKilled,
            JobState::Lost => pb::JobState::JobLost,
        }
    }
}

impl TryFrom<pb::JobState> for JobState {
    type Error = Malformed;
    fn try_from(s: pb::JobState) -> Result<Self, Malformed> {
        Ok(match s {
            pb::JobState::JobStarting => JobState::Starting,
            pb::JobState::JobRunning => JobState::Running,
            pb::JobState::JobExited => JobState::Exited,
            pb::JobState::JobFailed => JobState::Failed,
            pb::JobState::JobKilled => JobState::Killed,
            pb::JobState::JobLost => JobState::Lost,
            pb::JobState::Unspecified => return Err(Malformed("job state unspecified")),
        })
    }
}

impl From<OutputStream> for pb::OutputStream {
    fn from(s: OutputStream) -> Self {
        match s {
            OutputStream::Stdout => pb::OutputStream::Stdout,
            OutputStream::Stderr => pb::OutputStream::Stderr,
        }
    }
}

/// A wire stream number: stderr if it says so, otherwise stdout.
fn stream_from(s: i32) -> OutputStream {
    if s == pb::OutputStream::Stderr as i32 {
        OutputStream::Stderr
    } else {
        OutputStream::Stdout
    }
}

// ---- orders and reports (tasker streams and host links) ----

impl From<LaunchSpec> for pb::LaunchOrder {
    fn from(l: LaunchSpec) -> Self {
        pb::LaunchOrder {
            job: l.job,
            implementation: l.implementation,
            program: l.program,
            args: l.args,
            np: l.np,
            env: l.env.into_iter().collect(),
            cwd: l.cwd,
            owner_uid: l.owner,
        }
    }
}

impl From<pb::LaunchOrder> for LaunchSpec {
    fn from(l: pb::LaunchOrder) -> Self {
        LaunchSpec {
            job: l.job,
            implementation: l.implementation,
            program: l.program,
            args: l.args,
            np: l.np,
            env: l.env.into_iter().collect(),
            cwd: l.cwd,
            owner: l.owner_uid,
        }
    }
}

impl From<JobOrder> for pb::JobOrder {
    fn from(o: JobOrder) -> Self {
        use pb::job_order::Order;
        pb::JobOrder {
            order: Some(match o {
                JobOrder::Launch(l) => Order::Launch(l.into()),
                JobOrder::Signal { job, signal, rank } => {
                    Order::Signal(pb::SignalOrder { job, signal, rank })
                }
                JobOrder::Kill { job } => Order::Kill(pb::KillOrder { job }),
            }),
        }
    }
}

impl TryFrom<pb::JobOrder> for JobOrder {
    type Error = Malformed;
    fn try_from(o: pb::JobOrder) -> Result<Self, Malformed> {
        use pb::job_order::Order;
        Ok(match o.order.ok_or(Malformed("empty job order"))? {
            Order::Launch(l) => JobOrder::Launch(l.into()),
            Order::Signal(s) => JobOrder::Signal {
                job: s.job,
                signal: s.signal,
                rank: s.rank,
            },
            Order::Kill(k) => JobOrder::Kill { job: k.job },
        })
    }
}

impl From<JobReport> for pb::JobReport {
    fn from(r: JobReport) -> Self {
        use pb::job_report::Report;
        pb::JobReport {
            report: Some(match r {
                JobReport::Accepted { job } => Report::Accepted(pb::Accepted { job }),
                JobReport::Refused { job, error } => Report::Refused(pb::Refused {
                    job,
                    code: code_of(error.kind) as i32,
                    message: error.message,
                }),
                JobReport::RankStarted { job, rank, pid } => {
                    Report::RankStarted(pb::RankStarted { job, rank, pid })
                }
                JobReport::Output {
                    job,
                    rank,
                    stream,
                    line,
                } => Report::Output(pb::TaskOutput {
                    job,
                    rank,
                    stream: pb::OutputStream::from(stream) as i32,
                    line,
                }),
                JobReport::RankExit { job, rank, exit } => Report::RankExit(pb::TaskExit {
                    job,
                    rank,
                    exit: Some(exit.into()),
                    host: String::new(),
                }),
                JobReport::LauncherExit { job, exit, reason } => {
                    Report::LauncherExit(pb::LauncherExit {
                        job,
                        exit: exit.map(Into::into),
                        reason,
                    })
                }
                JobReport::Lost { job, reason } => Report::Lost(pb::JobLost { job, reason }),
            }),
        }
    }
}

impl TryFrom<pb::JobReport> for JobReport {
    type Error = Malformed;
    fn try_from(r: pb::JobReport) -> Result<Self, Malformed> {
        use pb::job_report::Report;
        Ok(match r.report.ok_or(Malformed("empty job report"))? {
            Report::Accepted(a) => JobReport::Accepted { job: a.job },
            Report::Refused(x) => JobReport::Refused {
                job: x.job,
                error: Refusal::new(refusal_kind(Code::from_i32(x.code)), x.message),
            },
            Report::RankStarted(s) => JobReport::RankStarted {
                job: s.job,
                rank: s.rank,
                pid: s.pid,
            },
            Report::Output(o) => JobReport::Output {
                job: o.job,
                rank: o.rank,
                stream: stream_from(o.stream),
                line: o.line,
            },
            Report::RankExit(x) => JobReport::RankExit {
                job: x.job,
                rank: x.rank,
                exit: x
                    .exit
                    .ok_or(Malformed("rank exit without exit status"))?
                    .try_into()?,
            },
            Report::LauncherExit(x) => JobReport::LauncherExit {
                job: x.job,
                exit: exit_from(x.exit),
                reason: x.reason,
            },
            Report::Lost(l) => JobReport::Lost {
                job: l.job,
                reason: l.reason,
            },
        })
    }
}

// ---- requests to the resource manager ----

impl From<pb::SpawnRequest> for SpawnSpec {
    fn from(r: pb::SpawnRequest) -> Self {
        let placement = match r.placement {
            None | Some(pb::spawn_request::Placement::AnyHost(_)) => Placement::Any,
            Some(pb::spawn_request::Placement::Host(h)) => Placement::Host(h),
            Some(pb::spawn_request::Placement::MostFree(_)) => Placement::MostFree,
        };
        SpawnSpec {
            program: r.program,
            args: r.args,
            np: r.np,
            implementation: r.implementation,
            placement,
            env: r.env.into_iter().collect(),
            cwd: r.cwd,
            // The vmd sets the owner from the caller's identity.
            owner: u32::MAX,
        }
    }
}

impl From<pb::AddHostRequest> for HostDecl {
    fn from(r: pb::AddHostRequest) -> Self {
        HostDecl {
            name: r.name,
            slots: r.slots,
            offers: r.offers,
            addr: r.addr,
        }
    }
}

impl From<pb::HostHello> for HostDecl {
    fn from(h: pb::HostHello) -> Self {
        HostDecl {
            name: h.name,
            slots: h.slots,
            offers: h.offers,
            addr: h.addr,
        }
    }
}

// ---- what the resource manager shows: hosts, jobs, events ----

impl From<HostState> for pb::HostState {
    fn from(s: HostState) -> Self {
        match s {
            HostState::Up => pb::HostState::HostUp,
            HostState::Waiting => pb::HostState::HostWaiting,
        }
    }
}

/// A host as the vmd on host `answering` shows it (`local` says whether
/// that vmd runs there).
pub fn host_info(h: &Host, answering: &str) -> pb::HostInfo {
    pb::HostInfo {
        name: h.name.clone(),
        addr: h.addr.clone(),
        slots: h.slots,
        slots_used: h.slots_used,
        offers: h.offers.iter().cloned().collect(),
        taskers: h.taskers.keys().cloned().collect(),
        state: pb::HostState::from(h.state) as i32,
        local: h.name == answering,
        jobs: h.jobs.len() as u32,
    }
}

impl From<&Rank> for pb::RankInfo {
    fn from(r: &Rank) -> Self {
        pb::RankInfo {
            rank: r.rank,
            state: match (r.pid, r.exit) {
                (_, Some(_)) => pb::RankState::RankExited,
                (Some(_), None) => pb::RankState::RankRunning,
                (None, None) => pb::RankState::RankPending,
            } as i32,
            pid: r.pid.unwrap_or(0),
            exit: r.exit.map(Into::into),
        }
    }
}

impl From<&Job> for pb::JobInfo {
    fn from(j: &Job) -> Self {
        pb::JobInfo {
            job: j.id,
            program: j.program.clone(),
            args: j.args.clone(),
            np: j.np,
            implementation: j.implementation.clone(),
            host: j.host.clone(),
            state: pb::JobState::from(j.state) as i32,
            ranks: j.ranks.iter().map(Into::into).collect(),
            exit: j.exit.map(Into::into),
            reason: j.reason.clone(),
            owner_uid: j.owner,
        }
    }
}

/// The kind a watcher filters on.
impl From<&RmEvent> for pb::EventKind {
    fn from(e: &RmEvent) -> Self {
        match e {
            RmEvent::HostAdded(_) => pb::EventKind::HostAdded,
            RmEvent::HostDeleted { .. } => pb::EventKind::HostDeleted,
            RmEvent::HostFailed { .. } => pb::EventKind::HostFailed,
            RmEvent::TaskExit { .. } => pb::EventKind::TaskExit,
            RmEvent::JobExit { .. } => pb::EventKind::JobExit,
            RmEvent::Output { .. } => pb::EventKind::TaskOutput,
        }
    }
}

/// A host event as the vmd on host `answering` shows it.
pub fn host_event(
    kind: pb::HostEventKind,
    h: &Host,
    reason: &str,
    answering: &str,
    seq: u64,
) -> pb::Event {
    pb::Event {
        seq,
        kind: Some(pb::event::Kind::Host(pb::HostEvent {
            kind: kind as i32,
            host: Some(host_info(h, answering)),
            reason: reason.to_string(),
        })),
    }
}

/// A resource-manager event as the vmd on host `answering` shows it.
pub fn event(e: &Sequenced, answering: &str) -> pb::Event {
    use pb::event::Kind;
    let seq = e.seq;
    let kind = match &e.event {
        RmEvent::HostAdded(h) => {
            return host_event(pb::HostEventKind::Added, h, "", answering, seq)
        }
        RmEvent::HostDeleted { host, reason } => {
            return host_event(pb::HostEventKind::Deleted, host, reason, answering, seq)
        }
        RmEvent::HostFailed { host, reason } => {
            return host_event(pb::HostEventKind::Failed, host, reason, answering, seq)
        }
        RmEvent::TaskExit {
            job,
            rank,
            exit,
            host,
        } => Kind::TaskExit(pb::TaskExit {
            job: *job,
            rank: *rank,
            exit: Some((*exit).into()),
            host: host.clone(),
        }),
        RmEvent::JobExit {
            job,
            state,
            exit,
            reason,
            host,
        } => Kind::JobExit(pb::JobExit {
            job: *job,
            state: pb::JobState::from(*state) as i32,
            exit: exit.map(Into::into),
            reason: reason.clone(),
            host: host.clone(),
        }),
        RmEvent::Output {
            job,
            rank,
            stream,
            line,
        } => Kind::Output(pb::TaskOutput {
            job: *job,
            rank: *rank,
            stream: pb::OutputStream::from(*stream) as i32,
            line: line.clone(),
        }),
    };
    pb::Event {
        seq,
        kind: Some(kind),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip_report(r: JobReport) {
        let wire = pb::JobReport::from(r.clone());
        assert_eq!(JobReport::try_from(wire), Ok(r));
    }

    #[test]
    fn reports_and_orders_survive_the_wire() {
        round_trip_report(JobReport::Accepted { job: 1 });
        round_trip_report(JobReport::Refused {
            job: 2,
            error: Refusal::not_found("program nope not found"),
        });
        round_trip_report(JobReport::RankStarted {
            job: 3,
            rank: 1,
            pid: 42,
        });
        round_trip_report(JobReport::Output {
            job: 4,
            rank: None,
            stream: OutputStream::Stderr,
            line: "x".into(),
        });
        round_trip_report(JobReport::RankExit {
            job: 5,
            rank: Some(0),
            exit: ExitStatus::Signal(9),
        });
        round_trip_report(JobReport::LauncherExit {
            job: 6,
            exit: None,
            reason: "cannot start".into(),
        });
        round_trip_report(JobReport::Lost {
            job: 7,
            reason: "gone".into(),
        });
        for o in [
            JobOrder::Launch(LaunchSpec {
                job: 1,
                implementation: "exec".into(),
                program: "true".into(),
                args: vec!["a".into()],
                np: 2,
                env: [("K".to_string(), "V".to_string())].into(),
                cwd: "/".into(),
                owner: 1001,
            }),
            JobOrder::Signal {
                job: 1,
                signal: 15,
                rank: Some(0),
            },
            JobOrder::Kill { job: 1 },
        ] {
            assert_eq!(JobOrder::try_from(pb::JobOrder::from(o.clone())), Ok(o));
        }
    }

    #[test]
    fn malformed_messages_are_refused_not_panicked_on() {
        assert!(JobReport::try_from(pb::JobReport { report: None }).is_err());
        assert!(JobOrder::try_from(pb::JobOrder { order: None }).is_err());
        let exitless = pb::JobReport {
            report: Some(pb::job_report::Report::RankExit(pb::TaskExit::default())),
        };
        assert!(JobReport::try_from(exitless).is_err());
        assert!(ExitStatus::try_from(pb::ExitStatus { how: None }).is_err());
        // An unknown code is a refusal all the same.
        let odd = pb::JobReport {
            report: Some(pb::job_report::Report::Refused(pb::Refused {
                job: 1,
                code: 999,
                message: "?".into(),
            })),
        };
        assert!(matches!(
            JobReport::try_from(odd),
            Ok(JobReport::Refused { error, .. }) if error.kind == RefusalKind::FailedPrecondition
        ));
    }
}

//! Conversions between the resource manager's types ([`crate::rm`]) and the
//! wire types, and the mapping of its refusals onto gRPC codes. Wire input is
//! checked here: a malformed message becomes a refusal, never a panic.

use std::collections::BTreeMap;

use isthmus_proto as pb;
use tonic::{Code, Status};

use crate::rm::manager::SpawnSpec;
use crate::rm::{
    ExitStatus, Host, HostDecl, HostState, Job, JobOrder, JobReport, JobState, LaunchSpec,
    OutputStream, Placement, RmError, RmErrorKind, RmEvent, Sequenced,
};

pub fn code_of(kind: RmErrorKind) -> Code {
    match kind {
        RmErrorKind::InvalidArgument => Code::InvalidArgument,
        RmErrorKind::NotFound => Code::NotFound,
        RmErrorKind::AlreadyExists => Code::AlreadyExists,
        RmErrorKind::FailedPrecondition => Code::FailedPrecondition,
        RmErrorKind::ResourceExhausted => Code::ResourceExhausted,
        RmErrorKind::Unavailable => Code::Unavailable,
        RmErrorKind::DeadlineExceeded => Code::DeadlineExceeded,
    }
}

fn kind_of(code: i32) -> RmErrorKind {
    match Code::from_i32(code) {
        Code::InvalidArgument => RmErrorKind::InvalidArgument,
        Code::NotFound => RmErrorKind::NotFound,
        Code::AlreadyExists => RmErrorKind::AlreadyExists,
        Code::ResourceExhausted => RmErrorKind::ResourceExhausted,
        Code::DeadlineExceeded => RmErrorKind::DeadlineExceeded,
        Code::Unavailable => RmErrorKind::Unavailable,
        _ => RmErrorKind::FailedPrecondition,
    }
}

pub fn status_of(e: &RmError) -> Status {
    Status::new(code_of(e.kind), e.message.clone())
}

pub fn host(h: &Host, local_name: &str) -> pb::HostInfo {
    pb::HostInfo {
        name: h.name.clone(),
        addr: h.addr.clone(),
        slots: h.slots,
        slots_used: h.slots_used,
        offers: h.offers.iter().cloned().collect(),
        taskers: h.taskers.keys().cloned().collect(),
        state: match h.state {
            HostState::Up => pb::HostState::HostUp,
            HostState::Waiting => pb::HostState::HostWaiting,
        } as i32,
        local: h.name == local_name,
        jobs: h.jobs.len() as u32,
    }
}

pub fn exit(e: ExitStatus) -> pb::ExitStatus {
    pb::ExitStatus {
        how: Some(match e {
            ExitStatus::Code(c) => pb::exit_status::How::Code(c),
            ExitStatus::Signal(s) => pb::exit_status::How::Signal(s),
        }),
    }
}

pub fn exit_from(e: Option<&pb::ExitStatus>) -> Option<ExitStatus> {
    match e?.how? {
        pb::exit_status::How::Code(c) => Some(ExitStatus::Code(c)),
        pb::exit_status::How::Signal(s) => Some(ExitStatus::Signal(s)),
    }
}

pub fn job_state(s: JobState) -> pb::JobState {
    match s {
        JobState::Starting => pb::JobState::JobStarting,
        JobState::Running => pb::JobState::JobRunning,
        JobState::Exited => pb::JobState::JobExited,
        JobState::Failed => pb::JobState::JobFailed,
        JobState::Killed => pb::JobState::JobKilled,
        JobState::Lost => pb::JobState::JobLost,
    }
}

pub fn job(j: &Job) -> pb::JobInfo {
    pb::JobInfo {
        job: j.id,
        program: j.program.clone(),
        args: j.args.clone(),
        np: j.np,
        implementation: j.implementation.clone(),
        host: j.host.clone(),
        state: job_state(j.state) as i32,
        ranks: j
            .ranks
            .iter()
            .map(|r| pb::RankInfo {
                rank: r.rank,
                state: match (r.pid, r.exit) {
                    (_, Some(_)) => pb::RankState::RankExited,
                    (Some(_), None) => pb::RankState::RankRunning,
                    (None, None) => pb::RankState::RankPending,
                } as i32,
                pid: r.pid.unwrap_or(0),
                exit: r.exit.map(exit),
            })
            .collect(),
        exit: j.exit.map(exit),
        reason: j.reason.clone(),
    }
}

fn stream(s: OutputStream) -> pb::OutputStream {
    match s {
        OutputStream::Stdout => pb::OutputStream::Stdout,
        OutputStream::Stderr => pb::OutputStream::Stderr,
    }
}

/// The kind a watcher filters on.
pub fn event_kind(e: &RmEvent) -> pb::EventKind {
    match e {
        RmEvent::HostAdded(_) => pb::EventKind::HostAdded,
        RmEvent::HostDeleted { .. } => pb::EventKind::HostDeleted,
        RmEvent::HostFailed { .. } => pb::EventKind::HostFailed,
        RmEvent::TaskExit { .. } => pb::EventKind::TaskExit,
        RmEvent::JobExit { .. } => pb::EventKind::JobExit,
        RmEvent::Output { .. } => pb::EventKind::TaskOutput,
    }
}

pub fn host_event(
    kind: pb::HostEventKind,
    h: &Host,
    reason: &str,
    local: &str,
    seq: u64,
) -> pb::Event {
    pb::Event {
        seq,
        kind: Some(pb::event::Kind::Host(pb::HostEvent {
            kind: kind as i32,
            host: Some(host(h, local)),
            reason: reason.to_string(),
        })),
    }
}

pub fn event(e: &Sequenced, local: &str) -> pb::Event {
    use pb::event::Kind;
    let seq = e.seq;
    match &e.event {
        RmEvent::HostAdded(h) => host_event(pb::HostEventKind::Added, h, "", local, seq),
        RmEvent::HostDeleted { host: h, reason } => {
            host_event(pb::HostEventKind::Deleted, h, reason, local, seq)
        }
        RmEvent::HostFailed { host: h, reason } => {
            host_event(pb::HostEventKind::Failed, h, reason, local, seq)
        }
        RmEvent::TaskExit {
            job,
            rank,
            exit: x,
            host,
        } => pb::Event {
            seq,
            kind: Some(Kind::TaskExit(pb::TaskExit {
                job: *job,
                rank: *rank,
                exit: Some(exit(*x)),
                host: host.clone(),
            })),
        },
        RmEvent::JobExit {
            job,
            state,
            exit: x,
            reason,
            host,
        } => pb::Event {
            seq,
            kind: Some(Kind::JobExit(pb::JobExit {
                job: *job,
                state: job_state(*state) as i32,
                exit: x.map(exit),
                reason: reason.clone(),
                host: host.clone(),
            })),
        },
        RmEvent::Output {
            job,
            rank,
            stream: s,
            line,
        } => pb::Event {
            seq,
            kind: Some(Kind::Output(pb::TaskOutput {
                job: *job,
                rank: *rank,
                stream: stream(*s) as i32,
                line: line.clone(),
            })),
        },
    }
}

pub fn spawn_spec(r: pb::SpawnRequest) -> SpawnSpec {
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
    }
}

pub fn decl(name: String, slots: u32, offers: Vec<String>, addr: String) -> HostDecl {
    HostDecl {
        name,
        slots,
        offers,
        addr,
    }
}

pub fn order(o: &JobOrder) -> pb::JobOrder {
    use pb::job_order::Order;
    pb::JobOrder {
        order: Some(match o {
            JobOrder::Launch(l) => Order::Launch(pb::LaunchOrder {
                job: l.job,
                implementation: l.implementation.clone(),
                program: l.program.clone(),
                args: l.args.clone(),
                np: l.np,
                env: l.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                cwd: l.cwd.clone(),
            }),
            JobOrder::Signal { job, signal, rank } => Order::Signal(pb::SignalOrder {
                job: *job,
                signal: *signal,
                rank: *rank,
            }),
            JobOrder::Kill { job } => Order::Kill(pb::KillOrder { job: *job }),
        }),
    }
}

/// An order from the wire (a joined host receives these from its link).
pub fn order_from(o: pb::JobOrder) -> Option<JobOrder> {
    use pb::job_order::Order;
    Some(match o.order? {
        Order::Launch(l) => JobOrder::Launch(LaunchSpec {
            job: l.job,
            implementation: l.implementation,
            program: l.program,
            args: l.args,
            np: l.np,
            env: l.env.into_iter().collect::<BTreeMap<_, _>>(),
            cwd: l.cwd,
        }),
        Order::Signal(s) => JobOrder::Signal {
            job: s.job,
            signal: s.signal,
            rank: s.rank,
        },
        Order::Kill(k) => JobOrder::Kill { job: k.job },
    })
}

pub fn report(r: &JobReport) -> pb::JobReport {
    use pb::job_report::Report;
    pb::JobReport {
        report: Some(match r {
            JobReport::Accepted { job } => Report::Accepted(pb::Accepted { job: *job }),
            JobReport::Refused { job, error } => Report::Refused(pb::Refused {
                job: *job,
                code: code_of(error.kind) as i32,
                message: error.message.clone(),
            }),
            JobReport::RankStarted { job, rank, pid } => Report::RankStarted(pb::RankStarted {
                job: *job,
                rank: *rank,
                pid: *pid,
            }),
            JobReport::Output {
                job,
                rank,
                stream: s,
                line,
            } => Report::Output(pb::TaskOutput {
                job: *job,
                rank: *rank,
                stream: stream(*s) as i32,
                line: line.clone(),
            }),
            JobReport::RankExit { job, rank, exit: x } => Report::RankExit(pb::TaskExit {
                job: *job,
                rank: *rank,
                exit: Some(exit(*x)),
                host: String::new(),
            }),
            JobReport::LauncherExit {
                job,
                exit: x,
                reason,
            } => Report::LauncherExit(pb::LauncherExit {
                job: *job,
                exit: x.map(exit),
                reason: reason.clone(),
            }),
            JobReport::Lost { job, reason } => Report::Lost(pb::JobLost {
                job: *job,
                reason: reason.clone(),
            }),
        }),
    }
}

/// A report from the wire; `None` if it is malformed (and is then dropped).
pub fn report_from(r: pb::JobReport) -> Option<JobReport> {
    use pb::job_report::Report;
    Some(match r.report? {
        Report::Accepted(a) => JobReport::Accepted { job: a.job },
        Report::Refused(x) => JobReport::Refused {
            job: x.job,
            error: RmError::new(kind_of(x.code), x.message),
        },
        Report::RankStarted(s) => JobReport::RankStarted {
            job: s.job,
            rank: s.rank,
            pid: s.pid,
        },
        Report::Output(o) => JobReport::Output {
            job: o.job,
            rank: o.rank,
            stream: if o.stream == pb::OutputStream::Stderr as i32 {
                OutputStream::Stderr
            } else {
                OutputStream::Stdout
            },
            line: o.line,
        },
        Report::RankExit(x) => JobReport::RankExit {
            job: x.job,
            rank: x.rank,
            exit: exit_from(x.exit.as_ref())?,
        },
        Report::LauncherExit(x) => JobReport::LauncherExit {
            job: x.job,
            exit: exit_from(x.exit.as_ref()),
            reason: x.reason,
        },
        Report::Lost(l) => JobReport::Lost {
            job: l.job,
            reason: l.reason,
        },
    })
}

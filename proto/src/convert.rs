//! The one edge between the domain types of [`isthmus_types`] and the wire
//! types of this crate: `From` where every value has a wire form, `TryFrom`
//! where a wire message may be malformed (then it is refused, never a panic).
//!
//! Both ends of every stream use these: the vmd (its service, tasker and
//! host links), the taskers and the clients. What a client receives (hosts,
//! jobs, groups, notifications) is checked strictly: an unspecified or
//! unknown enum value, or a missing part, is [`Malformed`].

use isthmus_types::event::{
    Notification, NotificationKind, RmEvent, Sequenced, WatchEvent, WatchFilter,
};
use isthmus_types::group::{
    GroupEvent, GroupEventKind, GroupEventMember, GroupSummary, GroupTable, Member,
};
use isthmus_types::host::{Host, HostCheck, HostDecl, HostState, HostView};
use isthmus_types::job::{
    ExitStatus, Job, JobOrder, JobReport, JobState, LaunchSpec, OutputStream, Placement, Rank,
    SpawnSpec, Spawned,
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

/// A wire exit status that may be absent but, if present, must be whole.
fn exit_strict(e: Option<pb::ExitStatus>) -> Result<Option<ExitStatus>, Malformed> {
    e.map(ExitStatus::try_from).transpose()
}

/// A wire enum value as the enum, refusing unknown and unspecified values.
fn known<E: TryFrom<i32>>(value: i32, what: &'static str) -> Result<E, Malformed> {
    E::try_from(value).map_err(|_| Malformed(what))
}

/// A wire stream number, strictly (what clients receive).
fn output_stream(s: i32) -> Result<OutputStream, Malformed> {
    match known(s, "unknown output stream")? {
        pb::OutputStream::Stdout => Ok(OutputStream::Stdout),
        pb::OutputStream::Stderr => Ok(OutputStream::Stderr),
        pb::OutputStream::Unspecified => Err(Malformed("output stream unspecified")),
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
            peer_addr: String::new(),
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
            peer_addr: h.peer_addr,
        }
    }
}

impl From<SpawnSpec> for pb::SpawnRequest {
    fn from(s: SpawnSpec) -> Self {
        use pb::spawn_request::Placement as Wire;
        let placement = match s.placement {
            Placement::Any => Wire::AnyHost(true),
            Placement::Host(h) => Wire::Host(h),
            Placement::MostFree => Wire::MostFree(true),
        };
        pb::SpawnRequest {
            program: s.program,
            args: s.args,
            np: s.np,
            implementation: s.implementation,
            placement: Some(placement),
            env: s.env.into_iter().collect(),
            cwd: s.cwd,
        }
    }
}

impl From<HostDecl> for pb::AddHostRequest {
    fn from(d: HostDecl) -> Self {
        pb::AddHostRequest {
            name: d.name,
            slots: d.slots,
            offers: d.offers,
            addr: d.addr,
        }
    }
}

impl From<pb::SpawnReply> for Spawned {
    fn from(r: pb::SpawnReply) -> Self {
        Spawned {
            job: r.job,
            host: r.host,
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

fn host_state(s: i32) -> Result<HostState, Malformed> {
    match known(s, "unknown host state")? {
        pb::HostState::HostUp => Ok(HostState::Up),
        pb::HostState::HostWaiting => Ok(HostState::Waiting),
        pb::HostState::Unspecified => Err(Malformed("host state unspecified")),
    }
}

/// A host as a client sees it; `local` on the wire means that the vmd that
/// answered runs there ([`HostView::answering`]).
impl TryFrom<pb::HostInfo> for HostView {
    type Error = Malformed;
    fn try_from(h: pb::HostInfo) -> Result<Self, Malformed> {
        Ok(HostView {
            state: host_state(h.state)?,
            name: h.name,
            addr: h.addr,
            peer_addr: h.peer_addr,
            slots: h.slots,
            slots_used: h.slots_used,
            offers: h.offers,
            taskers: h.taskers,
            answering: h.local,
            jobs: h.jobs,
        })
    }
}

impl From<pb::HostCheck> for HostCheck {
    fn from(c: pb::HostCheck) -> Self {
        HostCheck {
            name: c.name,
            responding: c.responding,
            detail: c.detail,
            round_trip: std::time::Duration::from_micros(c.round_trip_us.into()),
        }
    }
}

/// A host as the vmd on host `answering` shows it (`local` says whether
/// that vmd runs there).
pub fn host_info(h: &Host, answering: &str) -> pb::HostInfo {
    pb::HostInfo {
        name: h.name.clone(),
        addr: h.addr.clone(),
        peer_addr: h.peer_addr.clone(),
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

fn job_state(s: i32) -> Result<JobState, Malformed> {
    JobState::try_from(known::<pb::JobState>(s, "unknown job state")?)
}

/// A rank as a client sees it: no pid (0 on the wire) until it started;
/// an exited rank must say how it ended.
impl TryFrom<pb::RankInfo> for Rank {
    type Error = Malformed;
    fn try_from(r: pb::RankInfo) -> Result<Self, Malformed> {
        let exit = exit_strict(r.exit)?;
        let pid = (r.pid != 0).then_some(r.pid);
        match known(r.state, "unknown rank state")? {
            pb::RankState::RankExited if exit.is_none() => {
                return Err(Malformed("exited rank without exit status"))
            }
            pb::RankState::RankRunning if pid.is_none() => {
                return Err(Malformed("running rank without pid"))
            }
            pb::RankState::Unspecified => return Err(Malformed("rank state unspecified")),
            _ => {}
        }
        Ok(Rank {
            rank: r.rank,
            pid,
            exit,
        })
    }
}

/// A job as a client sees it: the resource manager's own view, whole.
impl TryFrom<pb::JobInfo> for Job {
    type Error = Malformed;
    fn try_from(j: pb::JobInfo) -> Result<Self, Malformed> {
        Ok(Job {
            id: j.job,
            state: job_state(j.state)?,
            ranks: j
                .ranks
                .into_iter()
                .map(Rank::try_from)
                .collect::<Result<_, _>>()?,
            exit: exit_strict(j.exit)?,
            program: j.program,
            args: j.args,
            np: j.np,
            implementation: j.implementation,
            host: j.host,
            reason: j.reason,
            owner: j.owner_uid,
        })
    }
}

// ---- groups, as clients see them ----

impl From<pb::Member> for Member {
    fn from(m: pb::Member) -> Self {
        Member {
            instance: m.instance,
            task: m.task,
            host: m.host,
            endpoint: m.endpoint,
        }
    }
}

impl From<pb::GroupTable> for GroupTable {
    fn from(t: pb::GroupTable) -> Self {
        GroupTable {
            name: t.group,
            generation: t.generation,
            frozen: t.frozen,
            broken: t.broken,
            members: t.members.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<pb::GroupSummary> for GroupSummary {
    fn from(g: pb::GroupSummary) -> Self {
        GroupSummary {
            name: g.group,
            size: g.size,
            frozen: g.frozen,
            broken: g.broken,
        }
    }
}

impl TryFrom<pb::GroupEvent> for GroupEvent {
    type Error = Malformed;
    fn try_from(e: pb::GroupEvent) -> Result<Self, Malformed> {
        let kind = match known(e.kind, "unknown group event kind")? {
            pb::GroupEventKind::Joined => GroupEventKind::Joined,
            pb::GroupEventKind::Left => GroupEventKind::Left,
            pb::GroupEventKind::Frozen => GroupEventKind::Frozen,
            pb::GroupEventKind::Destroyed => GroupEventKind::Destroyed,
            pb::GroupEventKind::MemberDied => GroupEventKind::MemberDied,
            pb::GroupEventKind::Unspecified => {
                return Err(Malformed("group event kind unspecified"))
            }
        };
        let member = kind.names_member().then_some(GroupEventMember {
            instance: e.instance,
            task: e.task,
        });
        Ok(GroupEvent {
            kind,
            group: e.group,
            member,
            size: e.size,
            group_broken: e.group_broken,
        })
    }
}

// ---- notifications, as watchers ask for and receive them ----

impl From<NotificationKind> for pb::EventKind {
    fn from(k: NotificationKind) -> Self {
        match k {
            NotificationKind::Group => pb::EventKind::Group,
            NotificationKind::HostAdded => pb::EventKind::HostAdded,
            NotificationKind::HostDeleted => pb::EventKind::HostDeleted,
            NotificationKind::HostFailed => pb::EventKind::HostFailed,
            NotificationKind::TaskExit => pb::EventKind::TaskExit,
            NotificationKind::JobExit => pb::EventKind::JobExit,
            NotificationKind::TaskOutput => pb::EventKind::TaskOutput,
        }
    }
}

impl From<WatchFilter> for pb::WatchRequest {
    fn from(f: WatchFilter) -> Self {
        pb::WatchRequest {
            groups: f.groups,
            current_state: f.current_state,
            kinds: f
                .kinds
                .into_iter()
                .map(|k| pb::EventKind::from(k) as i32)
                .collect(),
            jobs: f.jobs,
        }
    }
}

impl TryFrom<pb::Event> for Notification {
    type Error = Malformed;
    fn try_from(e: pb::Event) -> Result<Self, Malformed> {
        use pb::event::Kind;
        let event = match e.kind.ok_or(Malformed("event without kind"))? {
            Kind::Group(g) => WatchEvent::Group(g.try_into()?),
            Kind::Host(h) => {
                let host = h
                    .host
                    .ok_or(Malformed("host event without host"))?
                    .try_into()?;
                let reason = h.reason;
                match known(h.kind, "unknown host event kind")? {
                    pb::HostEventKind::Added => WatchEvent::HostAdded(host),
                    pb::HostEventKind::Deleted => WatchEvent::HostDeleted { host, reason },
                    pb::HostEventKind::Failed => WatchEvent::HostFailed { host, reason },
                    pb::HostEventKind::Unspecified => {
                        return Err(Malformed("host event kind unspecified"))
                    }
                }
            }
            Kind::TaskExit(t) => WatchEvent::TaskExit {
                job: t.job,
                rank: t.rank,
                exit: t
                    .exit
                    .ok_or(Malformed("task exit without exit status"))?
                    .try_into()?,
                host: t.host,
            },
            Kind::JobExit(j) => WatchEvent::JobExit {
                job: j.job,
                state: job_state(j.state)?,
                exit: exit_strict(j.exit)?,
                reason: j.reason,
                host: j.host,
            },
            Kind::Output(o) => WatchEvent::Output {
                job: o.job,
                rank: o.rank,
                stream: output_stream(o.stream)?,
                line: o.line,
            },
            Kind::Job(j) => WatchEvent::Job(j.try_into()?),
            Kind::Synced(_) => WatchEvent::Synced,
        };
        Ok(Notification { seq: e.seq, event })
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

    fn job() -> Job {
        Job {
            id: 9,
            program: "sleep".into(),
            args: vec!["1".into()],
            np: 3,
            implementation: "exec".into(),
            host: "h".into(),
            state: JobState::Failed,
            ranks: vec![
                Rank {
                    rank: 0,
                    pid: None,
                    exit: None,
                },
                Rank {
                    rank: 1,
                    pid: Some(77),
                    exit: None,
                },
                Rank {
                    rank: 2,
                    pid: Some(78),
                    exit: Some(ExitStatus::Signal(9)),
                },
            ],
            owner: 1001,
            exit: Some(ExitStatus::Code(1)),
            reason: "rank 2 killed".into(),
        }
    }

    #[test]
    fn what_the_resource_manager_shows_reaches_clients_whole() {
        let j = job();
        assert_eq!(Job::try_from(pb::JobInfo::from(&j)), Ok(j.clone()));

        let mut host = Host::from_decl(
            HostDecl {
                name: "h".into(),
                slots: 4,
                offers: vec!["exec".into()],
                addr: "127.0.0.1:1".into(),
                peer_addr: String::new(),
            },
            HostState::Up,
            true,
        );
        host.taskers.insert("exec".into(), 2);
        host.jobs.insert(9);
        let seen_here = HostView::try_from(host_info(&host, "h")).expect("host");
        assert!(seen_here.answering);
        assert_eq!(seen_here.taskers, vec!["exec".to_string()]);
        assert_eq!((seen_here.jobs, seen_here.state), (1, HostState::Up));
        let seen_elsewhere = HostView::try_from(host_info(&host, "other")).expect("host");
        assert!(!seen_elsewhere.answering);

        let events = [
            RmEvent::HostFailed {
                host: host.clone(),
                reason: "link closed".into(),
            },
            RmEvent::TaskExit {
                job: 9,
                rank: Some(2),
                exit: ExitStatus::Signal(9),
                host: "h".into(),
            },
            RmEvent::JobExit {
                job: 9,
                state: JobState::Failed,
                exit: None,
                reason: "r".into(),
                host: "h".into(),
            },
            RmEvent::Output {
                job: 9,
                rank: None,
                stream: OutputStream::Stderr,
                line: "l".into(),
            },
        ];
        let got: Vec<_> = events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let seq = i as u64 + 1;
                let wire = event(
                    &Sequenced {
                        seq,
                        event: e.clone(),
                    },
                    "h",
                );
                Notification::try_from(wire).expect("notification")
            })
            .collect();
        assert_eq!(
            got[0].event,
            WatchEvent::HostFailed {
                host: seen_here,
                reason: "link closed".into()
            }
        );
        assert_eq!(got[1].seq, 2);
        assert!(matches!(
            got[1].event,
            WatchEvent::TaskExit {
                job: 9,
                rank: Some(2),
                exit: ExitStatus::Signal(9),
                ..
            }
        ));
        assert!(matches!(
            got[2].event,
            WatchEvent::JobExit {
                state: JobState::Failed,
                exit: None,
                ..
            }
        ));
        assert!(matches!(
            got[3].event,
            WatchEvent::Output {
                rank: None,
                stream: OutputStream::Stderr,
                ..
            }
        ));
    }

    #[test]
    fn requests_built_from_domain_values() {
        let spec = SpawnSpec {
            program: "p".into(),
            np: 2,
            implementation: "exec".into(),
            placement: Placement::MostFree,
            env: [("A".to_string(), "1".to_string())].into(),
            ..Default::default()
        };
        // The owner never travels: the vmd sets it from the caller's identity.
        assert_eq!(
            SpawnSpec::from(pb::SpawnRequest::from(spec.clone())),
            SpawnSpec {
                owner: u32::MAX,
                ..spec
            }
        );
        let filter = WatchFilter {
            groups: vec!["g".into()],
            kinds: vec![NotificationKind::TaskOutput, NotificationKind::Group],
            jobs: vec![3],
            current_state: true,
        };
        let req = pb::WatchRequest::from(filter);
        assert_eq!(
            req.kinds,
            vec![
                pb::EventKind::TaskOutput as i32,
                pb::EventKind::Group as i32
            ]
        );
        assert!(req.current_state && req.jobs == [3] && req.groups == ["g"]);
    }

    #[test]
    fn malformed_notifications_are_refused_not_panicked_on() {
        let refused = |kind| Notification::try_from(pb::Event { seq: 1, kind });
        assert!(refused(None).is_err());
        use pb::event::Kind;
        let bad_group = pb::GroupEvent {
            kind: 99,
            ..Default::default()
        };
        assert!(refused(Some(Kind::Group(bad_group))).is_err());
        let good_group = pb::GroupEvent {
            kind: pb::GroupEventKind::Frozen as i32,
            group: "g".into(),
            size: 2,
            ..Default::default()
        };
        assert!(matches!(
            refused(Some(Kind::Group(good_group))),
            Ok(Notification {
                event: WatchEvent::Group(GroupEvent { member: None, .. }),
                ..
            })
        ));
        let hostless = pb::HostEvent {
            kind: pb::HostEventKind::Added as i32,
            host: None,
            reason: String::new(),
        };
        assert!(refused(Some(Kind::Host(hostless))).is_err());
        assert!(refused(Some(Kind::TaskExit(pb::TaskExit::default()))).is_err());
        let stateless = pb::JobExit::default();
        assert!(refused(Some(Kind::JobExit(stateless))).is_err());
        assert!(refused(Some(Kind::Output(pb::TaskOutput::default()))).is_err());
        let mut info = pb::JobInfo::from(&job());
        info.ranks[2].exit = None;
        assert_eq!(
            Job::try_from(info),
            Err(Malformed("exited rank without exit status"))
        );
        let mut info = pb::JobInfo::from(&job());
        info.state = 42;
        assert!(Job::try_from(info).is_err());
        let host = pb::HostInfo::default();
        assert_eq!(
            HostView::try_from(host),
            Err(Malformed("host state unspecified"))
        );
    }
}

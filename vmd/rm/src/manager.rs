//! [`ResourceManager`]: the host table, the job table and the event series
//! behind one lock, so that a snapshot and a subscription taken together
//! miss nothing and a slot is never counted twice.
//!
//! Flow of a spawn: check the request, choose a host, reserve its slots and
//! send a launch order down the host's port (to the local hub, or up a
//! joined host's link), then wait — briefly — for the tasker to accept or
//! refuse it. A refused job leaves no trace; an accepted one returns its id.
//! Reports from taskers then move the job along, and its end frees its slots
//! and is announced.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tracing::{info, warn};

use isthmus_types::env;

mod durable;
mod mirror;
mod state;

pub use durable::{JobChanges, DURABLE_TIMEOUT};
use state::{Port, State, Tracked};
pub use state::{PortMsg, ResourceManager};

use crate::hosts::{validated, HostTable, MAX_SLOTS};
use crate::placement;
use crate::{
    valid_name, Host, HostDecl, HostState, Job, JobId, JobOrder, JobReport, JobState, LaunchSpec,
    Rank, Refusal, RefusalKind, Result, RmEvent, Sequenced, SpawnSpec,
};

/// How long a tasker may take to accept or refuse a launch order.
pub const ACCEPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How many events may wait for a slow subscriber before it is cut off.
const EVENT_BACKLOG: usize = 4096;
/// The highest signal number Linux knows (SIGRTMAX).
const MAX_SIGNAL: i32 = 64;

impl ResourceManager {
    /// A manager whose own host is `local` (always up; its orders come out of
    /// the returned receiver, for the local tasker hub) and whose other
    /// declared hosts wait for their vmds.
    pub fn new(
        local: HostDecl,
        declared: Vec<HostDecl>,
    ) -> Result<(Self, mpsc::UnboundedReceiver<PortMsg>)> {
        let local = validated(local)?;
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        let mut hosts = HostTable::default();
        let name = local.name.clone();
        hosts.insert(Host::from_decl(local, HostState::Up, true))?;
        for d in declared {
            let d = validated(d)?;
            if d.name != name {
                hosts.insert(Host::from_decl(d, HostState::Waiting, false))?;
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let mut ports = HashMap::new();
        ports.insert(name.clone(), Port { link: 0, tx });
        let state = State {
            hosts,
            jobs: BTreeMap::new(),
            peers: BTreeSet::new(),
            peer_jobs: BTreeMap::new(),
            ports,
            waiters: HashMap::new(),
            next_job: 0,
            next_link: 0,
            seq: 0,
            events,
            version: watch::channel(0).0,
            durable: None,
            dirty: BTreeSet::new(),
        };
        let rm = Self {
            state: Arc::new(Mutex::new(state)),
            local: name,
            accept_timeout: ACCEPT_TIMEOUT,
        };
        Ok((rm, rx))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The name of the manager's own host.
    pub fn local_host(&self) -> &str {
        &self.local
    }

    /// The hosts, the jobs and a subscription to what happens next, taken
    /// together: nothing falls between the snapshot and the first event.
    pub fn subscribe(&self) -> (Vec<Host>, Vec<Job>, broadcast::Receiver<Arc<Sequenced>>) {
        let st = self.lock();
        (
            st.hosts.iter().cloned().collect(),
            st.jobs
                .values()
                .map(|t| t.job.clone())
                .chain(st.peer_jobs.values().cloned())
                .collect(),
            st.events.subscribe(),
        )
    }

    pub fn hosts(&self) -> Vec<Host> {
        self.lock().hosts.iter().cloned().collect()
    }

    pub fn host(&self, name: &str) -> Result<Host> {
        self.lock()
            .hosts
            .get(name)
            .cloned()
            .ok_or_else(|| Refusal::not_found(format!("no host named {name:?}")))
    }

    /// Jobs holding slots, or (`all`) also the recently ended ones.
    pub fn jobs(&self, all: bool) -> Vec<Job> {
        let st = self.lock();
        let mut jobs: Vec<Job> = st
            .jobs
            .values()
            .map(|t| &t.job)
            .chain(st.peer_jobs.values())
            .filter(|j| all || !j.state.is_final())
            .cloned()
            .collect();
        jobs.sort_by_key(|j| j.id);
        jobs
    }

    pub fn job(&self, id: JobId) -> Result<Job> {
        let st = self.lock();
        st.jobs
            .get(&id)
            .map(|t| t.job.clone())
            .or_else(|| st.peer_jobs.get(&id).cloned())
            .ok_or_else(|| Refusal::not_found(format!("no job {id}")))
    }

    /// The owner (uid) of job `id`, own or mirrored, if it is known here;
    /// without copying the job (a watcher asks for every output line).
    pub fn job_owner(&self, id: JobId) -> Option<u32> {
        let st = self.lock();
        st.jobs
            .get(&id)
            .map(|t| t.job.owner)
            .or_else(|| st.peer_jobs.get(&id).map(|j| j.owner))
    }

    /// Declares a host; it is up once its vmd joins under that name.
    pub fn add_host(&self, decl: HostDecl) -> Result<Host> {
        let decl = validated(decl)?;
        let mut st = self.lock();
        let host = st
            .hosts
            .insert(Host::from_decl(decl, HostState::Waiting, false))?
            .clone();
        info!(host = %host.name, "host declared");
        st.emit(RmEvent::HostAdded(host.clone()));
        Ok(host)
    }

    /// Deletes a host: its vmd is told to stop, its jobs are lost. Returns
    /// how many jobs were lost.
    pub fn delete_host(&self, name: &str) -> Result<u32> {
        let mut st = self.lock();
        let host = st
            .hosts
            .get(name)
            .ok_or_else(|| Refusal::not_found(format!("no host named {name:?}")))?;
        if host.local {
            return Err(Refusal::precondition(format!(
                "host {name} runs the resource manager and cannot be deleted (halt the vmd instead)"
            )));
        }
        if st.peers.contains(name) {
            return Err(Refusal::precondition(format!(
                "host {name} is served by its own vmd: ask that vmd to stop"
            )));
        }
        let jobs: Vec<JobId> = host.jobs.iter().copied().collect();
        for job in &jobs {
            st.send(name, PortMsg::Order(JobOrder::Kill { job: *job }));
        }
        st.send(
            name,
            PortMsg::Deleted("deleted from the virtual machine".into()),
        );
        let (host, lost) = st
            .drop_host(name, "was deleted")
            .ok_or_else(|| Refusal::not_found(format!("no host named {name:?}")))?;
        info!(host = %name, lost, "host deleted");
        st.emit(RmEvent::HostDeleted {
            host,
            reason: "deleted".into(),
        });
        Ok(lost)
    }

    /// A vmd joins as host `decl.name`. A declared host takes the declared
    /// slots and offers; an unknown one is added as it describes itself.
    pub fn link_host(&self, decl: HostDecl) -> Result<(u64, mpsc::UnboundedReceiver<PortMsg>)> {
        let decl = validated(decl)?;
        let mut st = self.lock();
        st.next_link += 1;
        let link = st.next_link;
        let host = match st.hosts.get_mut(&decl.name) {
            Some(h) if h.state == HostState::Up => {
                return Err(Refusal::already_exists(format!(
                    "host {} is already up",
                    decl.name
                )));
            }
            Some(h) => {
                h.state = HostState::Up;
                h.addr = decl.addr;
                h.peer_addr = decl.peer_addr;
                h.clone()
            }
            None => st
                .hosts
                .insert(Host::from_decl(decl, HostState::Up, false))?
                .clone(),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        st.ports.insert(host.name.clone(), Port { link, tx });
        info!(host = %host.name, addr = %host.addr, peer_addr = %host.peer_addr, "host joined");
        st.emit(RmEvent::HostAdded(host));
        Ok((link, rx))
    }

    /// A host's link ended: `failure` says why if it did not leave cleanly.
    pub fn unlink_host(&self, name: &str, link: u64, failure: Option<String>) {
        let mut st = self.lock();
        if st.ports.get(name).is_none_or(|p| p.link != link) {
            return; // deleted already, or a newer link took its place
        }
        let why = if failure.is_some() { "failed" } else { "left" };
        let Some((host, lost)) = st.drop_host(name, why) else {
            return;
        };
        match failure {
            Some(reason) => {
                warn!(host = %name, %reason, lost, "host failed");
                st.emit(RmEvent::HostFailed { host, reason });
            }
            None => {
                info!(host = %name, lost, "host left");
                st.emit(RmEvent::HostDeleted {
                    host,
                    reason: "left".into(),
                });
            }
        }
    }

    /// A host's registered taskers changed.
    pub fn set_taskers(&self, host: &str, taskers: BTreeMap<String, u32>) {
        let mut st = self.lock();
        if let Some(h) = st.hosts.get_mut(host) {
            h.taskers = taskers
                .into_iter()
                .filter(|(i, n)| *n > 0 && valid_name(i))
                .collect();
        }
    }

    /// Starts a job; returns its id and host once a tasker accepted it.
    pub async fn spawn(&self, spec: SpawnSpec) -> Result<(JobId, String)> {
        self.spawn_as(spec, None).await
    }

    /// [`Self::spawn`] under a job id given out elsewhere (`Some`: a
    /// federation's counter, unique across its managers) or the next of
    /// this manager's own (`None`).
    pub async fn spawn_as(&self, spec: SpawnSpec, given: Option<JobId>) -> Result<(JobId, String)> {
        check_spawn(&spec)?;
        let (id, host, rx, version) = {
            let mut st = self.lock();
            let host =
                placement::choose(&st.hosts, &spec.implementation, spec.np, &spec.placement)?;
            let (name, addr) = (host.name.clone(), host.addr.clone());
            if st.peers.contains(&name) {
                return Err(Refusal::precondition(format!(
                    "host {name} is served by its own vmd: its manager places jobs there"
                )));
            }
            let id = match given {
                Some(id) if st.jobs.contains_key(&id) || st.peer_jobs.contains_key(&id) => {
                    return Err(Refusal::already_exists(format!("job {id} exists already")));
                }
                Some(id) => id,
                None => {
                    st.next_job += 1;
                    st.next_job
                }
            };
            // An address and a job id: nothing secret goes into a job's
            // environment (a rank authenticates to its vmd by its uid).
            let mut vars = spec.env.clone();
            vars.insert(env::VMD_ADDR.to_string(), addr);
            vars.insert(env::JOB.to_string(), id.to_string());
            let launch = LaunchSpec {
                job: id,
                implementation: spec.implementation.clone(),
                program: spec.program.clone(),
                args: spec.args.clone(),
                np: spec.np,
                env: vars,
                cwd: spec.cwd.clone(),
                owner: spec.owner,
            };
            if let Some(h) = st.hosts.get_mut(&name) {
                h.slots_used += spec.np;
                h.jobs.insert(id);
            }
            st.jobs.insert(
                id,
                Tracked {
                    job: Job {
                        id,
                        program: spec.program.clone(),
                        args: spec.args.clone(),
                        np: spec.np,
                        implementation: spec.implementation.clone(),
                        host: name.clone(),
                        state: JobState::Starting,
                        ranks: (0..spec.np)
                            .map(|rank| Rank {
                                rank,
                                pid: None,
                                exit: None,
                            })
                            .collect(),
                        exit: None,
                        reason: String::new(),
                        owner: spec.owner,
                    },
                    kill_requested: false,
                    first_failure: None,
                },
            );
            let version = st.touch(id);
            let (tx, rx) = oneshot::channel();
            st.waiters.insert(id, tx);
            if !st.send(&name, PortMsg::Order(JobOrder::Launch(launch))) {
                st.waiters.remove(&id);
                st.forget(id);
                return Err(Refusal::unavailable(format!(
                    "host {name} cannot take orders (its link is closing)"
                )));
            }
            (id, name, rx, version)
        };
        match tokio::time::timeout(self.accept_timeout, rx).await {
            Ok(Ok(Ok(()))) => {
                info!(job = id, %host, program = %spec.program, np = spec.np, implementation = %spec.implementation, "job accepted");
                // An id given out is on disk first: a restart never gives it again.
                self.wait_durable(version).await;
                Ok((id, host))
            }
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(Refusal::unavailable(format!(
                "job {id} was dropped before a tasker answered"
            ))),
            Err(_) => {
                let mut st = self.lock();
                st.waiters.remove(&id);
                st.send(&host, PortMsg::Order(JobOrder::Kill { job: id }));
                let reason = format!(
                    "the tasker on {host} did not answer within {:?}",
                    self.accept_timeout
                );
                st.finish(id, JobState::Lost, None, reason.clone());
                Err(Refusal::new(RefusalKind::DeadlineExceeded, reason))
            }
        }
    }

    /// Kills every rank of a job.
    pub fn kill(&self, id: JobId) -> Result<()> {
        let mut st = self.lock();
        let tracked = running_job(&mut st, id)?;
        tracked.kill_requested = true;
        let host = tracked.job.host.clone();
        st.send(&host, PortMsg::Order(JobOrder::Kill { job: id }));
        Ok(())
    }

    /// Sends `signal` to every running rank of a job, or to one rank.
    /// Returns how many ranks were running when it was sent.
    pub fn signal(&self, id: JobId, signal: i32, rank: Option<u32>) -> Result<u32> {
        if !(1..=MAX_SIGNAL).contains(&signal) {
            return Err(Refusal::invalid(format!(
                "signal {signal} is not a signal number (1-{MAX_SIGNAL})"
            )));
        }
        let mut st = self.lock();
        let job = &running_job(&mut st, id)?.job;
        if let Some(r) = rank {
            if r >= job.np {
                return Err(Refusal::invalid(format!(
                    "job {id} has ranks 0-{}; there is no rank {r}",
                    job.np - 1
                )));
            }
        }
        let targets = job
            .ranks
            .iter()
            .filter(|r| r.is_running() && rank.is_none_or(|want| want == r.rank))
            .count() as u32;
        let host = job.host.clone();
        st.send(
            &host,
            PortMsg::Order(JobOrder::Signal {
                job: id,
                signal,
                rank,
            }),
        );
        Ok(targets)
    }

    /// A report from a tasker on `host`.
    pub fn report(&self, host: &str, report: JobReport) {
        let mut st = self.lock();
        let id = report.job();
        let Some(Tracked {
            job,
            kill_requested,
            first_failure,
        }) = st.jobs.get_mut(&id)
        else {
            return;
        };
        if job.host != host {
            warn!(
                job = id,
                from = host,
                "report about a job of another host; dropped"
            );
            return;
        }
        if job.state.is_final() {
            return;
        }
        match report {
            JobReport::Accepted { .. } => {
                if let Some(w) = st.waiters.remove(&id) {
                    let _ = w.send(Ok(()));
                }
            }
            JobReport::Refused { error, .. } => {
                if let Some(w) = st.waiters.remove(&id) {
                    st.forget(id);
                    let _ = w.send(Err(error));
                } else {
                    st.finish(id, JobState::Failed, None, error.message);
                }
            }
            JobReport::RankStarted { rank, pid, .. } => {
                if let Some(r) = job.ranks.get_mut(rank as usize) {
                    r.pid = Some(pid);
                }
                if job.state == JobState::Starting && job.ranks.iter().all(|r| r.pid.is_some()) {
                    job.state = JobState::Running;
                }
                st.touch(id);
            }
            JobReport::Output {
                rank, stream, line, ..
            } => st.emit(RmEvent::Output {
                job: id,
                rank,
                stream,
                line,
            }),
            JobReport::RankExit { rank, exit, .. } => {
                if let Some(r) = rank.and_then(|r| job.ranks.get_mut(r as usize)) {
                    r.exit = Some(exit);
                    if !exit.success() && first_failure.is_none() {
                        *first_failure = Some((r.rank, exit));
                    }
                }
                let host = job.host.clone();
                st.touch(id);
                st.emit(RmEvent::TaskExit {
                    job: id,
                    rank,
                    exit,
                    host,
                });
            }
            JobReport::LauncherExit { exit, reason, .. } => {
                let (state, reason) = if *kill_requested {
                    (JobState::Killed, "killed on request".to_string())
                } else if let Some((rank, how)) = *first_failure {
                    (JobState::Failed, format!("rank {rank} ended with {how}"))
                } else {
                    match exit {
                        Some(e) if e.success() => (JobState::Exited, reason),
                        Some(e) => (
                            JobState::Failed,
                            if reason.is_empty() {
                                format!("launcher ended with {e}")
                            } else {
                                reason
                            },
                        ),
                        None => (JobState::Failed, reason),
                    }
                };
                st.finish(id, state, exit, reason);
            }
            JobReport::Lost { reason, .. } => {
                if let Some(w) = st.waiters.remove(&id) {
                    st.forget(id);
                    let _ = w.send(Err(Refusal::unavailable(format!(
                        "job {id} could not start: {reason}"
                    ))));
                } else {
                    st.finish(id, JobState::Lost, None, reason);
                }
            }
        }
    }
}

fn running_job(st: &mut State, id: JobId) -> Result<&mut Tracked> {
    let tracked = st
        .jobs
        .get_mut(&id)
        .ok_or_else(|| Refusal::not_found(format!("no job {id}")))?;
    if tracked.job.state.is_final() {
        return Err(Refusal::precondition(format!(
            "job {id} has already ended ({:?})",
            tracked.job.state
        )));
    }
    Ok(tracked)
}

fn check_spawn(spec: &SpawnSpec) -> Result<()> {
    if spec.np == 0 {
        return Err(Refusal::invalid("np must be at least 1"));
    }
    if spec.np > MAX_SLOTS {
        return Err(Refusal::invalid(format!(
            "np {} is more than any host may have ({MAX_SLOTS})",
            spec.np
        )));
    }
    if spec.program.is_empty() {
        return Err(Refusal::invalid("no program given"));
    }
    if !valid_name(&spec.implementation) {
        return Err(Refusal::invalid(format!(
            "implementation name {:?} is not valid",
            spec.implementation
        )));
    }
    let has_nul = |s: &str| s.contains('\0');
    if has_nul(&spec.program) || has_nul(&spec.cwd) || spec.args.iter().any(|a| has_nul(a)) {
        return Err(Refusal::invalid(
            "program, arguments and cwd may not contain NUL bytes",
        ));
    }
    for (k, v) in &spec.env {
        if k.is_empty() || k.contains('=') || has_nul(k) || has_nul(v) {
            return Err(Refusal::invalid(format!(
                "environment variable name {k:?} is not valid"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExitStatus;

    fn rm() -> (ResourceManager, mpsc::UnboundedReceiver<PortMsg>) {
        let local = HostDecl {
            name: "h1".into(),
            slots: 4,
            offers: vec![],
            addr: "127.0.0.1:1".into(),
            peer_addr: String::new(),
        };
        let (rm, rx) = ResourceManager::new(local, vec![]).unwrap();
        rm.set_taskers("h1", [("exec".to_string(), 1)].into());
        (rm, rx)
    }

    fn spec(np: u32) -> SpawnSpec {
        SpawnSpec {
            program: "true".into(),
            np,
            implementation: "exec".into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn spawn_reserves_slots_and_exit_frees_them() {
        let (rm, mut port) = rm();
        let rm2 = rm.clone();
        let answer = tokio::spawn(async move {
            let Some(PortMsg::Order(JobOrder::Launch(l))) = port.recv().await else {
                panic!()
            };
            assert_eq!(l.env.get("ISTHMUS_JOB").map(String::as_str), Some("1"));
            assert!(
                !l.env.keys().any(|k| k.contains("SECRET")),
                "nothing secret in a job's environment: {:?}",
                l.env
            );
            rm2.report("h1", JobReport::Accepted { job: l.job });
            port
        });
        let (id, host) = rm.spawn(spec(3)).await.unwrap();
        let _port = answer.await.unwrap();
        assert_eq!((id, host.as_str()), (1, "h1"));
        assert_eq!(rm.host("h1").unwrap().slots_used, 3);
        assert_eq!(
            rm.spawn(spec(2)).await.unwrap_err().kind,
            RefusalKind::ResourceExhausted
        );
        let (_, _, mut events) = rm.subscribe();
        rm.report(
            "h1",
            JobReport::RankExit {
                job: 1,
                rank: Some(1),
                exit: ExitStatus::Signal(9),
            },
        );
        rm.report(
            "h1",
            JobReport::LauncherExit {
                job: 1,
                exit: Some(ExitStatus::Code(137)),
                reason: String::new(),
            },
        );
        assert!(matches!(
            events.recv().await.unwrap().event,
            RmEvent::TaskExit { rank: Some(1), .. }
        ));
        let ev = events.recv().await.unwrap();
        assert!(
            matches!(&ev.event, RmEvent::JobExit { state: JobState::Failed, reason, .. } if reason.contains("rank 1"))
        );
        assert_eq!(rm.host("h1").unwrap().slots_used, 0);
        assert_eq!(
            rm.kill(1).unwrap_err().kind,
            RefusalKind::FailedPrecondition
        );
        assert_eq!(rm.kill(9).unwrap_err().kind, RefusalKind::NotFound);
    }

    #[tokio::test]
    async fn refused_spawn_leaves_nothing() {
        let (rm, mut port) = rm();
        let rm2 = rm.clone();
        tokio::spawn(async move {
            while let Some(PortMsg::Order(JobOrder::Launch(l))) = port.recv().await {
                rm2.report(
                    "h1",
                    JobReport::Refused {
                        job: l.job,
                        error: Refusal::not_found("program nope not found"),
                    },
                );
            }
        });
        let e = rm.spawn(spec(1)).await.unwrap_err();
        assert_eq!(e.kind, RefusalKind::NotFound);
        assert!(rm.jobs(true).is_empty());
        assert_eq!(rm.host("h1").unwrap().slots_used, 0);
        assert_eq!(
            rm.spawn(spec(0)).await.unwrap_err().kind,
            RefusalKind::InvalidArgument
        );
    }

    #[tokio::test]
    async fn joined_host_failing_loses_its_jobs_and_is_announced() {
        let (rm, _port) = rm();
        let (_, _, mut events) = rm.subscribe();
        let decl = HostDecl {
            name: "h2".into(),
            slots: 2,
            offers: vec![],
            addr: "127.0.0.1:2".into(),
            peer_addr: String::new(),
        };
        let (link, _rx) = rm.link_host(decl.clone()).unwrap();
        assert!(
            matches!(events.recv().await.unwrap().event, RmEvent::HostAdded(ref h) if h.name == "h2")
        );
        assert_eq!(
            rm.link_host(decl).unwrap_err().kind,
            RefusalKind::AlreadyExists
        );
        rm.unlink_host("h2", link, Some("link broke".into()));
        assert!(
            matches!(events.recv().await.unwrap().event, RmEvent::HostFailed { ref host, .. } if host.name == "h2")
        );
        assert_eq!(
            rm.delete_host("h1").unwrap_err().kind,
            RefusalKind::FailedPrecondition
        );
        assert_eq!(
            rm.delete_host("h2").unwrap_err().kind,
            RefusalKind::NotFound
        );
    }
}

//! The state behind a [`ResourceManager`]: the host, job and port tables
//! and the event series under its one lock, and what changes them
//! together. A module of its own, below `manager` and the rooms its impl
//! is split over (`durable`, `mirror`), so that each of them imports it
//! and none imports another in a cycle.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tracing::info;

use crate::hosts::HostTable;
use crate::{
    ExitStatus, Host, Job, JobId, JobOrder, JobState, Refusal, Result, RmEvent, Sequenced,
};

/// How many ended jobs `ps --all` still shows.
pub(super) const KEEP_ENDED: usize = 1000;

/// What travels down a host's port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortMsg {
    Order(JobOrder),
    /// The host was deleted from the virtual machine.
    Deleted(String),
}

/// A job and the manager's bookkeeping about it, which nobody else sees.
pub(super) struct Tracked {
    pub(super) job: Job,
    pub(super) kill_requested: bool,
    /// The first rank seen to fail (others may then be stopped by the launcher).
    pub(super) first_failure: Option<(u32, ExitStatus)>,
}

pub(super) struct Port {
    pub(super) link: u64,
    pub(super) tx: mpsc::UnboundedSender<PortMsg>,
}

pub(super) struct State {
    pub(super) hosts: HostTable,
    pub(super) jobs: BTreeMap<JobId, Tracked>,
    /// Hosts served by their own vmd's manager (a federation): their rows
    /// are mirrored here, their jobs are that manager's ([`super::mirror`]).
    pub(super) peers: BTreeSet<String>,
    /// The jobs of peer hosts, as their managers publish them.
    pub(super) peer_jobs: BTreeMap<JobId, Job>,
    pub(super) ports: HashMap<String, Port>,
    pub(super) waiters: HashMap<JobId, oneshot::Sender<Result<()>>>,
    pub(super) next_job: JobId,
    pub(super) next_link: u64,
    pub(super) seq: u64,
    pub(super) events: broadcast::Sender<Arc<Sequenced>>,
    /// Bumped at every change of the own job table ([`super::durable`]).
    pub(super) version: watch::Sender<u64>,
    /// The last version a durable store has written, if one keeps the table.
    pub(super) durable: Option<watch::Receiver<u64>>,
    /// Jobs changed or gone since the store last took them (only while a
    /// store keeps the table: it takes them at every change).
    pub(super) dirty: BTreeSet<JobId>,
}

impl State {
    pub(super) fn emit(&mut self, event: RmEvent) {
        self.seq += 1;
        // No subscriber is not an error.
        let _ = self.events.send(Arc::new(Sequenced {
            seq: self.seq,
            event,
        }));
    }

    /// Marks job `id` of the own table changed (or gone); returns the
    /// table's new version.
    pub(super) fn touch(&mut self, id: JobId) -> u64 {
        if self.durable.is_some() {
            self.dirty.insert(id);
        }
        self.version.send_modify(|v| *v += 1);
        *self.version.borrow()
    }

    pub(super) fn send(&self, host: &str, msg: PortMsg) -> bool {
        self.ports.get(host).is_some_and(|p| p.tx.send(msg).is_ok())
    }

    /// Ends a job: frees its slots, answers a waiting spawn, announces it.
    pub(super) fn finish(
        &mut self,
        id: JobId,
        state: JobState,
        exit: Option<ExitStatus>,
        reason: String,
    ) {
        let Some(Tracked { job, .. }) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.state.is_final() {
            return;
        }
        job.state = state;
        job.exit = exit;
        job.reason = reason.clone();
        let (np, host) = (job.np, job.host.clone());
        if let Some(h) = self.hosts.get_mut(&host) {
            if h.jobs.remove(&id) {
                h.slots_used = h.slots_used.saturating_sub(np);
            }
        }
        if let Some(w) = self.waiters.remove(&id) {
            let _ = w.send(Err(Refusal::unavailable(format!(
                "job {id} ended before it was accepted: {reason}"
            ))));
        }
        info!(job = id, ?state, %host, "job ended");
        self.emit(RmEvent::JobExit {
            job: id,
            state,
            exit,
            reason,
            host,
        });
        self.prune();
        self.touch(id);
    }

    /// Forgets a job that never ran (refused): slots back, no event.
    pub(super) fn forget(&mut self, id: JobId) {
        if let Some(Tracked { job, .. }) = self.jobs.remove(&id) {
            if let Some(h) = self.hosts.get_mut(&job.host) {
                if h.jobs.remove(&id) {
                    h.slots_used = h.slots_used.saturating_sub(job.np);
                }
            }
            self.touch(id);
        }
    }

    pub(super) fn prune(&mut self) {
        let ended: Vec<JobId> = self
            .jobs
            .values()
            .filter(|t| t.job.state.is_final())
            .map(|t| t.job.id)
            .collect();
        if ended.len() > KEEP_ENDED {
            for id in ended.iter().take(ended.len() - KEEP_ENDED) {
                self.jobs.remove(id);
                self.touch(*id);
            }
        }
    }

    /// Removes a host and loses its jobs (the host's vmd left, failed or was deleted).
    pub(super) fn drop_host(&mut self, name: &str, why: &str) -> Option<(Host, u32)> {
        let jobs: Vec<JobId> = self.hosts.get(name)?.jobs.iter().copied().collect();
        let lost = jobs.len() as u32;
        for job in jobs {
            self.finish(job, JobState::Lost, None, format!("host {name} {why}"));
        }
        self.ports.remove(name);
        self.hosts.remove(name).map(|h| (h, lost))
    }
}

/// The resource manager; cheap to clone (shared state).
#[derive(Clone)]
pub struct ResourceManager {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) local: String,
    pub(super) accept_timeout: Duration,
}

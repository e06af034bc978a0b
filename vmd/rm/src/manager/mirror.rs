//! Hosts and jobs of other managers, mirrored (a federation: every vmd the
//! manager of its own host, sharing its rows through a common store).
//!
//! A peer host's row is its own manager's: here it only shows in listings,
//! snapshots and placement. Jobs are placed on it by asking its manager
//! (the caller's business), never by an order down a port from here; its
//! jobs are listed as its manager published them. Events of other hosts
//! are relayed to this manager's subscribers as they are.

use tracing::{info, warn};

use super::state::{ResourceManager, KEEP_ENDED};
use crate::{placement, Host, HostState, Job, JobId, JobState, Result, RmEvent, SpawnSpec};

impl ResourceManager {
    /// A peer host appeared or its row changed. A host declared here and
    /// waiting becomes that peer; a host linked here is left alone.
    pub fn mirror_host(&self, mut host: Host) {
        if host.name == self.local {
            return;
        }
        host.local = false;
        host.state = HostState::Up;
        let mut st = self.lock();
        let name = host.name.clone();
        if st.peers.contains(&name) {
            if let Some(row) = st.hosts.get_mut(&name) {
                *row = host;
            }
            return;
        }
        match st.hosts.get_mut(&name) {
            Some(row) if row.state == HostState::Waiting => *row = host.clone(),
            Some(_) => {
                warn!(host = %name, "a peer manager publishes a host that is linked here; ignored");
                return;
            }
            None => {
                if let Err(e) = st.hosts.insert(host.clone()) {
                    warn!(host = %name, error = %e, "mirroring a peer host");
                    return;
                }
            }
        }
        st.peers.insert(name.clone());
        info!(host = %name, "peer host up");
        st.emit(RmEvent::HostAdded(host));
    }

    /// A peer host is gone: deleted (`failure` is `None`) or failed. Its
    /// jobs that had not ended are lost, and announced so. Returns how many.
    pub fn unmirror_host(&self, name: &str, failure: Option<String>) -> u32 {
        let mut st = self.lock();
        if !st.peers.remove(name) {
            return 0;
        }
        let Some(host) = st.hosts.remove(name) else {
            return 0;
        };
        let why = if failure.is_some() {
            "failed"
        } else {
            "was deleted"
        };
        let lost: Vec<JobId> = st
            .peer_jobs
            .values()
            .filter(|j| j.host == name && !j.state.is_final())
            .map(|j| j.id)
            .collect();
        for id in &lost {
            if let Some(job) = st.peer_jobs.get_mut(id) {
                job.state = JobState::Lost;
                job.reason = format!("host {name} {why}");
                let event = RmEvent::JobExit {
                    job: *id,
                    state: JobState::Lost,
                    exit: None,
                    reason: job.reason.clone(),
                    host: name.to_string(),
                };
                st.emit(event);
            }
        }
        match failure {
            Some(reason) => {
                warn!(host = %name, %reason, lost = lost.len(), "peer host failed");
                st.emit(RmEvent::HostFailed { host, reason });
            }
            None => {
                info!(host = %name, lost = lost.len(), "peer host deleted");
                st.emit(RmEvent::HostDeleted {
                    host,
                    reason: "left the virtual machine".into(),
                });
            }
        }
        lost.len() as u32
    }

    /// A peer manager's job row appeared or changed.
    pub fn mirror_job(&self, job: Job) {
        let mut st = self.lock();
        if st.jobs.contains_key(&job.id) {
            return;
        }
        st.peer_jobs.insert(job.id, job);
        let ended: Vec<JobId> = st
            .peer_jobs
            .values()
            .filter(|j| j.state.is_final())
            .map(|j| j.id)
            .collect();
        for id in ended.iter().take(ended.len().saturating_sub(KEEP_ENDED)) {
            st.peer_jobs.remove(id);
        }
    }

    /// A peer manager's job row is gone (pruned there, or its host left).
    pub fn unmirror_job(&self, id: JobId) {
        self.lock().peer_jobs.remove(&id);
    }

    /// Passes on an event of a peer host to this manager's subscribers.
    pub fn relay(&self, event: RmEvent) {
        self.lock().emit(event);
    }

    /// Whether `host` is a peer's (served by its own vmd).
    pub fn is_peer(&self, host: &str) -> bool {
        self.lock().peers.contains(host)
    }

    /// The host a job of `spec` would go to now, peers included, other
    /// than those in `except` (unless the spec names one).
    pub fn place(&self, spec: &SpawnSpec, except: &[String]) -> Result<String> {
        super::check_spawn(spec)?;
        let st = self.lock();
        placement::choose_except(
            &st.hosts,
            &spec.implementation,
            spec.np,
            &spec.placement,
            except,
        )
        .map(|h| h.name.clone())
    }

    /// The jobs of this manager's own table (what it publishes).
    pub fn own_jobs(&self) -> Vec<Job> {
        self.lock().jobs.values().map(|t| t.job.clone()).collect()
    }

    /// Whether a job is in this manager's own table.
    pub fn owns_job(&self, id: JobId) -> bool {
        self.lock().jobs.contains_key(&id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::{HostDecl, Placement, Rank};

    fn rm() -> ResourceManager {
        let local = HostDecl {
            name: "a".into(),
            slots: 2,
            offers: vec![],
            addr: "unix:/a.sock".into(),
            peer_addr: String::new(),
        };
        let (rm, _rx) = ResourceManager::new(local, vec![]).unwrap();
        rm.set_taskers("a", [("exec".to_string(), 1)].into());
        rm
    }

    fn peer(name: &str, slots: u32, taskers: &[&str]) -> Host {
        Host {
            name: name.into(),
            addr: format!("unix:/{name}.sock"),
            peer_addr: String::new(),
            slots,
            slots_used: 0,
            offers: BTreeSet::new(),
            taskers: taskers.iter().map(|t| (t.to_string(), 1)).collect(),
            state: HostState::Up,
            local: true,
            jobs: BTreeSet::new(),
        }
    }

    fn job(id: JobId, host: &str) -> Job {
        Job {
            id,
            program: "p".into(),
            args: vec![],
            np: 1,
            implementation: "mpich".into(),
            host: host.into(),
            state: JobState::Running,
            ranks: vec![Rank {
                rank: 0,
                pid: Some(7),
                exit: None,
            }],
            owner: 0,
            exit: None,
            reason: String::new(),
        }
    }

    #[tokio::test]
    async fn peers_are_listed_placed_on_and_lost_with_their_jobs() {
        let rm = rm();
        let mut events = rm.subscribe().2;
        rm.mirror_host(peer("b", 8, &["mpich"]));
        // Published again (a new tasker): the row changes, no second HostAdded.
        rm.mirror_host(peer("b", 8, &["mpich", "exec"]));
        let b = rm.host("b").unwrap();
        assert!(!b.local, "a peer's row is never this manager's own host");
        assert!(rm.is_peer("b") && !rm.is_peer("a"));
        let mut first = peer("b", 8, &["mpich"]);
        first.local = false;
        assert_eq!(events.try_recv().unwrap().event, RmEvent::HostAdded(first));
        assert!(events.try_recv().is_err());

        // Placement sees the peer; spawning there is its manager's business.
        let spec = SpawnSpec {
            program: "p".into(),
            np: 4,
            implementation: "mpich".into(),
            ..Default::default()
        };
        assert_eq!(rm.place(&spec, &[]).unwrap(), "b");
        // A host that refused (its row here was stale) is passed over; with
        // no other host able to take it, the refusal says so.
        rm.mirror_host(peer("c", 8, &["mpich"]));
        assert_eq!(rm.place(&spec, &["b".into()]).unwrap(), "c");
        let none = rm.place(&spec, &["b".into(), "c".into()]).unwrap_err();
        assert!(none.message.contains("mpich"), "{none}");
        // A spec that names the host is placed there all the same.
        let mut named = spec.clone();
        named.placement = Placement::Host("b".into());
        assert_eq!(rm.place(&named, &["b".into()]).unwrap(), "b");
        rm.unmirror_host("c", None);
        while events.try_recv().is_ok() {}
        let refused = rm.spawn_as(spec.clone(), Some(9)).await.unwrap_err();
        assert!(refused.message.contains("its own vmd"), "{refused}");
        let mut on_a = spec;
        on_a.np = 1;
        on_a.implementation = "exec".into();
        on_a.placement = Placement::Host("a".into());
        let closed = rm.spawn_as(on_a, Some(5)).await.unwrap_err();
        assert!(
            closed.message.contains("host a cannot take orders"),
            "{closed}"
        );

        rm.mirror_job(job(41, "b"));
        assert_eq!(rm.job(41).unwrap().host, "b");
        assert!(!rm.owns_job(41));
        assert_eq!(rm.jobs(false).len(), 1);

        // The peer fails: its running job is lost, and both are announced.
        while events.try_recv().is_ok() {}
        assert_eq!(rm.unmirror_host("b", Some("lease expired".into())), 1);
        let lost = events.try_recv().unwrap().event.clone();
        assert!(
            matches!(
                lost,
                RmEvent::JobExit {
                    job: 41,
                    state: JobState::Lost,
                    ..
                }
            ),
            "{lost:?}"
        );
        let failed = events.try_recv().unwrap().event.clone();
        assert!(
            matches!(&failed, RmEvent::HostFailed { host, reason } if host.name == "b" && reason == "lease expired"),
            "{failed:?}"
        );
        assert!(rm.host("b").is_err());
        assert_eq!(rm.job(41).unwrap().state, JobState::Lost);
        assert_eq!(rm.unmirror_host("b", None), 0, "gone already");
    }
}

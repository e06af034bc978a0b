//! The taskers registered with one vmd. Every vmd has a hub: on the vmd that
//! holds the resource manager its reports go straight to the manager; on a
//! joined vmd they travel up the host link. The hub routes a launch order to
//! a tasker of the job's implementation (the least busy one) and later
//! orders to the tasker running the job; when a tasker goes away, its jobs
//! are reported lost so that none stays "running".

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::{valid_name, JobId, JobOrder, JobReport, Refusal, Result};

/// What a hub tells whoever is above it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HubUp {
    /// The registered taskers changed: implementation → how many.
    Taskers(BTreeMap<String, u32>),
    Job(JobReport),
}

pub type TaskerId = u64;

struct Tasker {
    implementation: String,
    orders: mpsc::UnboundedSender<JobOrder>,
    jobs: BTreeSet<JobId>,
}

#[derive(Default)]
struct HubState {
    taskers: BTreeMap<TaskerId, Tasker>,
    job_tasker: HashMap<JobId, TaskerId>,
    next: TaskerId,
}

impl HubState {
    fn summary(&self) -> BTreeMap<String, u32> {
        let mut m = BTreeMap::new();
        for t in self.taskers.values() {
            *m.entry(t.implementation.clone()).or_insert(0) += 1;
        }
        m
    }
}

#[derive(Clone)]
pub struct TaskerHub {
    state: Arc<Mutex<HubState>>,
    up: mpsc::UnboundedSender<HubUp>,
}

impl TaskerHub {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<HubUp>) {
        let (up, rx) = mpsc::unbounded_channel();
        (
            Self {
                state: Arc::default(),
                up,
            },
            rx,
        )
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        // A panic while holding the lock cannot leave the maps inconsistent
        // in a way worse than losing the panicking call: keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn send_up(&self, msg: HubUp) {
        if self.up.send(msg).is_err() {
            warn!("tasker hub: nobody above listens any more");
        }
    }

    /// Registers a tasker for `implementation`; orders arrive on the receiver.
    pub fn register(
        &self,
        implementation: &str,
    ) -> Result<(TaskerId, mpsc::UnboundedReceiver<JobOrder>)> {
        if !valid_name(implementation) {
            return Err(Refusal::invalid(format!(
                "implementation name {implementation:?} is not valid (1-64 letters, digits, '.', '_', '-')"
            )));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let summary = {
            let mut st = self.lock();
            st.next += 1;
            let id = st.next;
            st.taskers.insert(
                id,
                Tasker {
                    implementation: implementation.to_string(),
                    orders: tx,
                    jobs: BTreeSet::new(),
                },
            );
            info!(tasker = id, implementation, "tasker registered");
            (id, st.summary())
        };
        self.send_up(HubUp::Taskers(summary.1));
        Ok((summary.0, rx))
    }

    /// A tasker's stream ended: its unfinished jobs are lost.
    pub fn deregister(&self, tasker: TaskerId) {
        let (gone, summary) = {
            let mut st = self.lock();
            let Some(t) = st.taskers.remove(&tasker) else {
                return;
            };
            for job in &t.jobs {
                st.job_tasker.remove(job);
            }
            (t, st.summary())
        };
        info!(tasker, implementation = %gone.implementation, jobs = gone.jobs.len(), "tasker gone");
        for job in gone.jobs {
            let reason = format!("the {} tasker running it went away", gone.implementation);
            self.send_up(HubUp::Job(JobReport::Lost { job, reason }));
        }
        self.send_up(HubUp::Taskers(summary));
    }

    /// The current taskers: implementation → how many.
    pub fn taskers(&self) -> BTreeMap<String, u32> {
        self.lock().summary()
    }

    /// A report from `tasker`; reports about jobs it does not run are dropped.
    pub fn report(&self, tasker: TaskerId, report: JobReport) {
        let job = report.job();
        {
            let mut st = self.lock();
            if st.job_tasker.get(&job) != Some(&tasker) {
                warn!(
                    tasker,
                    job, "report about a job this tasker does not run; dropped"
                );
                return;
            }
            if report.ends_job() {
                st.job_tasker.remove(&job);
                if let Some(t) = st.taskers.get_mut(&tasker) {
                    t.jobs.remove(&job);
                }
            }
        }
        self.send_up(HubUp::Job(report));
    }

    /// Routes an order from above.
    pub fn order(&self, order: JobOrder) {
        let job = order.job();
        let refused = {
            let mut st = self.lock();
            match &order {
                JobOrder::Launch(spec) => {
                    let pick = st
                        .taskers
                        .iter()
                        .filter(|(_, t)| t.implementation == spec.implementation)
                        .min_by_key(|(_, t)| t.jobs.len())
                        .map(|(id, _)| *id);
                    match pick {
                        Some(id) => {
                            let sent = st
                                .taskers
                                .get(&id)
                                .is_some_and(|t| t.orders.send(order.clone()).is_ok());
                            if sent {
                                st.job_tasker.insert(job, id);
                                if let Some(t) = st.taskers.get_mut(&id) {
                                    t.jobs.insert(job);
                                }
                                None
                            } else {
                                Some(format!("the {} tasker went away", spec.implementation))
                            }
                        }
                        None => Some(format!(
                            "no {} tasker is registered on this host",
                            spec.implementation
                        )),
                    }
                }
                JobOrder::Signal { .. } | JobOrder::Kill { .. } => {
                    // A job no tasker runs has ended; its end is reported already.
                    if let Some(t) = st.job_tasker.get(&job).and_then(|id| st.taskers.get(id)) {
                        let _ = t.orders.send(order.clone());
                    }
                    None
                }
            }
        };
        if let Some(message) = refused {
            self.send_up(HubUp::Job(JobReport::Refused {
                job,
                error: Refusal::precondition(message),
            }));
        }
    }

    /// Orders every running job killed (the host is being deleted).
    pub fn kill_all(&self) {
        let jobs: Vec<JobId> = self.lock().job_tasker.keys().copied().collect();
        for job in jobs {
            self.order(JobOrder::Kill { job });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ExitStatus, LaunchSpec};

    fn launch(job: JobId, imp: &str) -> JobOrder {
        JobOrder::Launch(LaunchSpec {
            job,
            implementation: imp.into(),
            program: "true".into(),
            args: vec![],
            np: 1,
            env: Default::default(),
            cwd: String::new(),
            owner: 0,
        })
    }

    #[tokio::test]
    async fn routes_launches_and_reports_lost_jobs_of_a_dead_tasker() {
        let (hub, mut up) = TaskerHub::new();
        let (a, mut a_orders) = hub.register("exec").unwrap();
        assert_eq!(
            up.recv().await,
            Some(HubUp::Taskers([("exec".to_string(), 1)].into()))
        );
        hub.order(launch(1, "exec"));
        assert_eq!(a_orders.recv().await, Some(launch(1, "exec")));
        hub.order(launch(2, "mpich"));
        assert!(matches!(
            up.recv().await,
            Some(HubUp::Job(JobReport::Refused { job: 2, .. }))
        ));
        // A report about somebody else's job is dropped.
        hub.report(a + 1, JobReport::Accepted { job: 1 });
        hub.report(a, JobReport::Accepted { job: 1 });
        assert_eq!(
            up.recv().await,
            Some(HubUp::Job(JobReport::Accepted { job: 1 }))
        );
        hub.order(launch(3, "exec"));
        hub.report(
            a,
            JobReport::LauncherExit {
                job: 3,
                exit: Some(ExitStatus::Code(0)),
                reason: String::new(),
            },
        );
        assert!(matches!(
            up.recv().await,
            Some(HubUp::Job(JobReport::LauncherExit { job: 3, .. }))
        ));
        hub.deregister(a);
        assert!(matches!(
            up.recv().await,
            Some(HubUp::Job(JobReport::Lost { job: 1, .. }))
        ));
        assert_eq!(up.recv().await, Some(HubUp::Taskers(BTreeMap::new())));
        assert!(hub.register("bad name").is_err());
    }
}

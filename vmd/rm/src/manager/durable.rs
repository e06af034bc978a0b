//! The seam for a durable store of the manager's own job table (a one-host
//! vmd's jobs file): the table's changes are counted, a store reads the
//! table at a version and says which version it has written, and a spawn is
//! answered once its job's row is written. At start, the rows of the
//! previous run are put back: ended jobs as they ended, the others lost
//! (their taskers went with the previous vmd and killed them), as a
//! federation does with its rows in etcd.

use std::time::Duration;

use tokio::sync::watch;
use tracing::{info, warn};

use super::state::{ResourceManager, Tracked};
use crate::{Job, JobId, JobState, RmEvent};

/// How long a spawn's answer waits for its job's row to be written; past
/// it the job is answered all the same (it runs), and the wait is logged.
pub const DURABLE_TIMEOUT: Duration = Duration::from_secs(10);

/// What changed in the own job table since a store last took it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobChanges {
    /// The table's version these changes bring it to (see
    /// [`ResourceManager::job_changes`]).
    pub version: u64,
    /// The jobs changed, as they are now.
    pub changed: Vec<Job>,
    /// The jobs gone from the table (pruned, or refused and forgotten).
    pub gone: Vec<JobId>,
    /// The highest job id given out so far (ids go on from there).
    pub last_id: JobId,
}

impl ResourceManager {
    /// A receiver of the own job table's version, bumped at every change
    /// (a job added, moved along, ended, pruned or forgotten).
    pub fn job_changes(&self) -> watch::Receiver<u64> {
        self.lock().version.subscribe()
    }

    /// Takes the own job table's changes since the last take (those made
    /// since [`Self::set_durable`]), with the version they bring it to.
    pub fn take_job_changes(&self) -> JobChanges {
        let mut st = self.lock();
        let version = *st.version.borrow();
        let (mut changed, mut gone) = (Vec::new(), Vec::new());
        for id in std::mem::take(&mut st.dirty) {
            match st.jobs.get(&id) {
                Some(t) => changed.push(t.job.clone()),
                None => gone.push(id),
            }
        }
        JobChanges {
            version,
            changed,
            gone,
            last_id: st.next_job,
        }
    }

    /// From now on the own job table's changes are kept for
    /// [`Self::take_job_changes`], and a spawn is answered once `written`
    /// reaches its job's version (a durable store's progress), or after
    /// [`DURABLE_TIMEOUT`].
    pub fn set_durable(&self, written: watch::Receiver<u64>) {
        self.lock().durable = Some(written);
    }

    pub(super) async fn wait_durable(&self, version: u64) {
        let Some(mut written) = self.lock().durable.clone() else {
            return;
        };
        let reached = tokio::time::timeout(DURABLE_TIMEOUT, async {
            written.wait_for(|w| *w >= version).await.map(|_| ())
        })
        .await;
        match reached {
            Ok(Ok(())) => {}
            Ok(Err(_)) => warn!(version, "the job store stopped; answering the spawn unwritten"),
            Err(_) => warn!(
                version,
                "the job store did not write within {DURABLE_TIMEOUT:?}; answering the spawn unwritten"
            ),
        }
    }

    /// Puts back the job rows of this manager's previous run (read from a
    /// durable store) before any tasker registers. Ended jobs stay as they
    /// ended; the others are lost, and announced so. Job ids go on after
    /// `last_id` and after every row's. Rows whose id is in the table
    /// already are skipped. Returns how many jobs were lost.
    pub fn restore_jobs(&self, rows: Vec<Job>, last_id: JobId) -> u32 {
        let mut st = self.lock();
        let mut lost = 0;
        let top = rows.iter().map(|j| j.id).max().unwrap_or(0);
        st.next_job = st.next_job.max(last_id).max(top);
        for mut job in rows {
            if st.jobs.contains_key(&job.id) {
                continue;
            }
            let id = job.id;
            let ended = job.state.is_final();
            if !ended {
                lost += 1;
                job.state = JobState::Lost;
                job.exit = None;
                job.reason = format!("the vmd of host {} restarted", job.host);
            }
            let event = (!ended).then(|| RmEvent::JobExit {
                job: id,
                state: JobState::Lost,
                exit: None,
                reason: job.reason.clone(),
                host: job.host.clone(),
            });
            st.jobs.insert(
                id,
                Tracked {
                    job,
                    kill_requested: false,
                    first_failure: None,
                },
            );
            if let Some(event) = event {
                st.emit(event);
            }
            st.touch(id);
        }
        st.prune();
        info!(
            jobs = st.jobs.len(),
            lost,
            next = st.next_job + 1,
            "job table of the previous run restored"
        );
        lost
    }
}

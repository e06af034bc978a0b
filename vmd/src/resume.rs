//! Tasks that outlive a restart of their vmd.
//!
//! With a durable store, a vmd killed and restarted finds the tasks of its
//! previous run: in its redb file (the default, one host), or in etcd when
//! it took its lease back within the lease's TTL. Their memberships were
//! never removed. Those tasks' processes still run; their sessions
//! reconnect and say `Hello { resume_task }`. A task may resume only if:
//!
//! * it is one of the tasks the store held for this vmd when it started
//!   (an *orphan*), not yet resumed or reaped;
//! * the store still has it, on this vmd's host;
//! * the connection comes from the process that opened it: its
//!   SO_PEERCRED pid and uid equal those recorded when the task was
//!   opened. Nothing the client says is trusted, and no secret is needed.
//!
//! An orphan that has not resumed within the grace period is closed as
//! dead ([`reap_after`]): its groups report `MEMBER_DIED`, as if its
//! session had ended. In memory (`--store memory`), a restart keeps
//! nothing, so there are no orphans.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use isthmus_groups::{Groups, TaskId, TaskProcess};
use tonic::Status;
use tracing::{info, warn};

use crate::auth::Identity;

/// How long the tasks of a previous run may take to resume, by default.
pub const DEFAULT_RESUME_GRACE: Duration = Duration::from_secs(60);

/// The tasks with a session on this vmd, and those of its previous run
/// that may still resume. Cheap to clone; clones share state.
#[derive(Clone, Default)]
pub struct Resumes {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Tasks with a session open on this vmd.
    live: HashSet<TaskId>,
    /// Tasks of the previous run that have not resumed yet.
    orphans: HashSet<TaskId>,
}

impl Resumes {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new task's session opened.
    pub fn opened(&self, task: TaskId) {
        self.lock().live.insert(task);
    }

    /// A task's session ended.
    pub fn ended(&self, task: TaskId) {
        self.lock().live.remove(&task);
    }

    /// Records the tasks of the previous run, which may resume until
    /// [`take_orphans`](Self::take_orphans).
    pub fn set_orphans(&self, tasks: impl IntoIterator<Item = TaskId>) {
        let mut state = self.lock();
        let fresh: Vec<TaskId> = tasks
            .into_iter()
            .filter(|t| !state.live.contains(t))
            .collect();
        state.orphans.extend(fresh);
    }

    /// The orphans that have not resumed; none may resume after this.
    pub fn take_orphans(&self) -> Vec<TaskId> {
        self.lock().orphans.drain().collect()
    }

    /// Claims an orphan for a resuming session: it becomes live.
    fn adopt(&self, task: TaskId) -> bool {
        let mut state = self.lock();
        if state.orphans.remove(&task) {
            state.live.insert(task);
            true
        } else {
            false
        }
    }

    /// Checks that `caller` may resume `task` (see the module docs) and,
    /// if so, makes it live again. The refusal is the status the session
    /// ends with.
    pub async fn resume(
        &self,
        groups: &Groups,
        host: &str,
        caller: &Identity,
        task: &str,
    ) -> Result<TaskId, Status> {
        let task: TaskId = task
            .parse()
            .map_err(|e: isthmus_groups::GroupError| crate::status::group(&e))?;
        let lease = groups
            .task_lease(task)
            .await
            .map_err(|e| crate::status::group(&e))?
            .ok_or_else(|| {
                Status::not_found(format!(
                    "task {task} is no longer open: its vmd closed it or its lease expired"
                ))
            })?;
        if lease.host != host {
            return Err(Status::failed_precondition(format!(
                "task {task} runs on host {:?}, not on this vmd's host {host:?}",
                lease.host
            )));
        }
        let proves = matches!(
            (lease.process, caller.pid, caller.uid),
            (Some(TaskProcess { pid, uid }), Some(p), Some(u)) if pid == p && uid == u
        );
        if !proves {
            warn!(%task, caller = %caller, pid = ?caller.pid, "refused a resume from another process");
            return Err(Status::permission_denied(format!(
                "task {task} was opened by another process: only it may resume the task"
            )));
        }
        if !self.adopt(task) {
            return Err(Status::failed_precondition(format!(
                "task {task} is not waiting to resume (its session is open, or it was closed)"
            )));
        }
        Ok(task)
    }
}

/// After `grace`, closes as dead every orphan that has not resumed, so
/// that the members of its groups learn (`MEMBER_DIED`).
pub async fn reap_after(groups: Groups, resumes: Resumes, grace: Duration) {
    tokio::time::sleep(grace).await;
    for task in resumes.take_orphans() {
        match groups.close_task(task, true).await {
            Ok(()) => {
                info!(%task, ?grace, "task of the previous run did not resume: closed as dead")
            }
            Err(e) => warn!(%task, error = %e, "closing a task that did not resume"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::identity::Kind;

    fn caller(pid: u32, uid: u32) -> Identity {
        Identity {
            uid: Some(uid),
            pid: Some(pid),
            kind: Kind::Local,
        }
    }

    #[tokio::test]
    async fn only_the_process_that_opened_a_task_resumes_it_on_its_host() {
        let groups = Groups::in_memory();
        let r = Resumes::default();
        let task = TaskId::new_v4();
        let process = TaskProcess { pid: 40, uid: 1000 };
        groups
            .open_task_as(task, "host-a", Some(process))
            .await
            .unwrap();
        r.set_orphans([task]);
        let id = task.to_string();
        let code = |res: Result<TaskId, Status>| res.map_err(|s| s.code());

        let other_pid = r.resume(&groups, "host-a", &caller(41, 1000), &id).await;
        assert_eq!(code(other_pid), Err(tonic::Code::PermissionDenied));
        let other_uid = r.resume(&groups, "host-a", &caller(40, 1001), &id).await;
        assert_eq!(code(other_uid), Err(tonic::Code::PermissionDenied));
        let no_pid = Identity {
            pid: None,
            ..caller(40, 1000)
        };
        let unknown = r.resume(&groups, "host-a", &no_pid, &id).await;
        assert_eq!(code(unknown), Err(tonic::Code::PermissionDenied));
        let other_host = r.resume(&groups, "host-b", &caller(40, 1000), &id).await;
        assert_eq!(code(other_host), Err(tonic::Code::FailedPrecondition));
        let stranger = TaskId::new_v4().to_string();
        let gone = r
            .resume(&groups, "host-a", &caller(40, 1000), &stranger)
            .await;
        assert_eq!(code(gone), Err(tonic::Code::NotFound));
        let garbage = r.resume(&groups, "host-a", &caller(40, 1000), "x").await;
        assert_eq!(code(garbage), Err(tonic::Code::InvalidArgument));

        // Refusals took nothing: the right process still resumes, once.
        let ok = r.resume(&groups, "host-a", &caller(40, 1000), &id).await;
        assert_eq!(code(ok), Ok(task));
        let twice = r.resume(&groups, "host-a", &caller(40, 1000), &id).await;
        assert_eq!(code(twice), Err(tonic::Code::FailedPrecondition));
        assert!(r.take_orphans().is_empty(), "a resumed task is not reaped");
    }

    #[tokio::test]
    async fn orphans_that_do_not_resume_are_closed_as_dead() {
        let groups = Groups::in_memory();
        let r = Resumes::default();
        let (gone, back) = (TaskId::new_v4(), TaskId::new_v4());
        let process = TaskProcess { pid: 40, uid: 1000 };
        for t in [gone, back] {
            groups.open_task_as(t, "h", Some(process)).await.unwrap();
            groups.join(&t.to_string(), t, None, vec![]).await.unwrap();
        }
        r.set_orphans([gone, back]);
        let mut events = groups.subscribe();
        r.resume(&groups, "h", &caller(40, 1000), &back.to_string())
            .await
            .unwrap();
        reap_after(groups.clone(), r.clone(), Duration::ZERO).await;
        let ev = events.try_recv().expect("an event");
        assert_eq!(ev.kind, isthmus_groups::GroupEventKind::MemberDied);
        assert_eq!(ev.task, Some(gone));
        while let Ok(ev) = events.try_recv() {
            assert_eq!(
                ev.group,
                gone.to_string(),
                "only the orphan's group changed"
            );
        }
        assert!(groups.task_lease(gone).await.unwrap().is_none());
        assert!(groups.task_lease(back).await.unwrap().is_some());
    }

    #[test]
    fn an_orphan_resumes_once_and_not_after_the_reaping() {
        let r = Resumes::default();
        let (a, b, live) = (TaskId::new_v4(), TaskId::new_v4(), TaskId::new_v4());
        r.opened(live);
        r.set_orphans([a, b, live]);
        assert!(r.adopt(a));
        assert!(!r.adopt(a), "a task resumes once");
        assert!(!r.adopt(live), "a live task is no orphan");
        assert_eq!(r.take_orphans(), vec![b]);
        assert!(!r.adopt(b), "nothing resumes after the reaping");
    }
}

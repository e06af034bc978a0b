//! Notifications for watchers (the console's `Watch`): the current state as
//! a snapshot, then group events and resource-manager events merged into
//! one stream, filtered by kind, group and job. Plain Rust over the group
//! service and the resource manager; the gRPC service only hands the
//! stream out.
//!
//! Jobs are their owners': a watcher sees the task and job events (exits,
//! output lines, snapshots) of its own uid's jobs only, unless it is an
//! administrator ([`Viewer`]).

use std::collections::HashMap;
use std::sync::Arc;

use isthmus_groups::Groups;
use isthmus_proto as pb;
use tokio::sync::{broadcast, mpsc};
use tracing::warn;

use crate::convert;
use crate::stream::QUEUE;
use isthmus_rm::{ResourceManager, Sequenced};

/// Job owners one watcher remembers.
const OWNER_CACHE: usize = 1024;

/// Why a watch could not start or ended early.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("event kind {0} is not known")]
    UnknownKind(i32),
    #[error("watcher fell behind and missed {0} events")]
    Lagged(u64),
}

/// Whose jobs a watcher may see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Viewer {
    /// An administrator (the vmd's operator): every job.
    Admin,
    /// The jobs of this uid only (`None`: a caller without a uid, which
    /// sees no job).
    User(Option<u32>),
}

impl Viewer {
    /// Whether a job owned by `owner` (`None`: not known here, e.g.
    /// forgotten) may be shown.
    pub fn sees(&self, owner: Option<u32>) -> bool {
        match self {
            Viewer::Admin => true,
            Viewer::User(uid) => uid.is_some() && owner == *uid,
        }
    }
}

/// Which events a watcher asked for, and may see.
pub struct WatchFilter {
    /// Empty: every kind except TASK_OUTPUT.
    kinds: Vec<pb::EventKind>,
    /// Group events of these groups only; empty: all.
    groups: Vec<String>,
    /// Task and job events of these jobs only; empty: all.
    jobs: Vec<u64>,
    viewer: Viewer,
}

impl WatchFilter {
    pub fn new(req: &pb::WatchRequest, viewer: Viewer) -> Result<Self, WatchError> {
        let mut kinds = Vec::new();
        for k in &req.kinds {
            match pb::EventKind::try_from(*k) {
                Ok(pb::EventKind::Unspecified) | Err(_) => return Err(WatchError::UnknownKind(*k)),
                Ok(kind) => kinds.push(kind),
            }
        }
        Ok(Self {
            kinds,
            groups: req.groups.clone(),
            jobs: req.jobs.clone(),
            viewer,
        })
    }

    pub fn wants(&self, kind: pb::EventKind) -> bool {
        if self.kinds.is_empty() {
            kind != pb::EventKind::TaskOutput
        } else {
            self.kinds.contains(&kind)
        }
    }

    pub fn wants_job(&self, job: u64) -> bool {
        self.jobs.is_empty() || self.jobs.contains(&job)
    }

    pub fn wants_group(&self, ev: &isthmus_groups::GroupEvent) -> bool {
        self.wants(pb::EventKind::Group) && convert::event_matches(&self.groups, ev)
    }

    /// Whether `ev` is wanted and may be shown; `owner_of` gives a job's
    /// owner.
    pub fn wants_rm(&self, ev: &Sequenced, mut owner_of: impl FnMut(u64) -> Option<u32>) -> bool {
        self.wants(pb::EventKind::from(&ev.event))
            && ev.event.job().is_none_or(|j| {
                self.wants_job(j) && (self.viewer == Viewer::Admin || self.viewer.sees(owner_of(j)))
            })
    }
}

/// Events of one watcher, ending with an error if it fell behind.
pub type Watcher = mpsc::Receiver<Result<pb::Event, WatchError>>;

/// Starts a watcher for `req` over `groups` and, on the vmd that holds it,
/// the resource manager. Subscribes before reading the current state, so
/// that nothing falls between the two: a group event may be seen twice,
/// never missed; hosts and jobs are read and subscribed to under one lock.
pub fn start(
    req: &pb::WatchRequest,
    viewer: Viewer,
    groups: &Groups,
    rm: Option<&ResourceManager>,
) -> Result<Watcher, WatchError> {
    let filter = WatchFilter::new(req, viewer)?;
    let group_events = groups.subscribe();
    let manager = rm.cloned();
    let rm = rm.map(|rm| (rm.local_host().to_string(), rm.subscribe()));
    let (tx, rx) = mpsc::channel(QUEUE);
    let groups = groups.clone();
    let current_state = req.current_state;
    tokio::spawn(async move {
        let mut snapshot = Vec::new();
        let mut rm_events = None;
        let mut local = String::new();
        if current_state && filter.wants(pb::EventKind::Group) {
            snapshot.extend(group_snapshot(&groups, &filter.groups).await);
        }
        if let Some((host, (hosts, jobs, events))) = rm {
            local = host;
            if current_state {
                snapshot.extend(rm_snapshot(&filter, &hosts, &jobs, &local));
            }
            rm_events = Some(events);
        }
        if current_state {
            snapshot.push(pb::Event {
                seq: 0,
                kind: Some(pb::event::Kind::Synced(pb::Synced {})),
            });
        }
        for ev in snapshot {
            if tx.send(Ok(ev)).await.is_err() {
                return;
            }
        }
        merge(&filter, group_events, rm_events, manager, &local, &tx).await;
    });
    Ok(rx)
}

/// Forwards the wanted group and resource-manager events as they happen,
/// until the watcher goes away, a source closes or the watcher lags.
async fn merge(
    filter: &WatchFilter,
    mut group_events: broadcast::Receiver<isthmus_groups::GroupEvent>,
    mut rm_events: Option<broadcast::Receiver<Arc<Sequenced>>>,
    manager: Option<ResourceManager>,
    local: &str,
    tx: &mpsc::Sender<Result<pb::Event, WatchError>>,
) {
    // A job's owner never changes: each watcher remembers the owners it
    // looked up (a bounded few), so that output lines do not each take the
    // manager's lock. Unknown jobs are looked up again.
    let mut owners: HashMap<u64, u32> = HashMap::new();
    let mut owner_of = move |job: u64| {
        if let Some(o) = owners.get(&job) {
            return Some(*o);
        }
        let owner = manager.as_ref().and_then(|rm| rm.job_owner(job))?;
        if owners.len() >= OWNER_CACHE {
            owners.clear();
        }
        owners.insert(job, owner);
        Some(owner)
    };
    loop {
        let next = tokio::select! {
            ev = group_events.recv() => ev.map(|ev| {
                filter.wants_group(&ev).then(|| convert::group_event(&ev))
            }),
            ev = recv_rm(&mut rm_events) => ev.map(|ev| {
                filter.wants_rm(&ev, &mut owner_of).then(|| pb::convert::event(&ev, local))
            }),
        };
        match next {
            Ok(Some(ev)) => {
                if tx.send(Ok(ev)).await.is_err() {
                    return;
                }
            }
            Ok(None) => {}
            Err(broadcast::error::RecvError::Lagged(n)) => {
                warn!(missed = n, "watcher lagged");
                let _ = tx.send(Err(WatchError::Lagged(n))).await;
                return;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// The next resource-manager event, or never if this vmd has none.
async fn recv_rm(
    events: &mut Option<broadcast::Receiver<Arc<Sequenced>>>,
) -> Result<Arc<Sequenced>, broadcast::error::RecvError> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The current groups as synthetic events: a JOINED per member and a FROZEN
/// per frozen group (seq 0 marks them as a snapshot).
async fn group_snapshot(groups: &Groups, filter: &[String]) -> Vec<pb::Event> {
    let mut out = Vec::new();
    let Ok(list) = groups.list().await else {
        return out;
    };
    for summary in list {
        if !(filter.is_empty() || filter.contains(&summary.name)) {
            continue;
        }
        let Ok(table) = groups.table(&summary.name).await else {
            continue;
        };
        let size = table.members.len() as u32;
        for m in &table.members {
            out.push(snapshot_event(
                pb::GroupEventKind::Joined,
                &table.name,
                m.instance,
                m.task.to_string(),
                size,
            ));
        }
        if table.frozen {
            out.push(snapshot_event(
                pb::GroupEventKind::Frozen,
                &table.name,
                0,
                String::new(),
                size,
            ));
        }
    }
    out
}

/// The current hosts (as HOST_ADDED) and jobs (as `job` snapshots).
fn rm_snapshot(
    filter: &WatchFilter,
    hosts: &[isthmus_rm::Host],
    jobs: &[isthmus_rm::Job],
    local: &str,
) -> Vec<pb::Event> {
    let mut out = Vec::new();
    if filter.wants(pb::EventKind::HostAdded) {
        for h in hosts {
            out.push(pb::convert::host_event(
                pb::HostEventKind::Added,
                h,
                "",
                local,
                0,
            ));
        }
    }
    if filter.wants(pb::EventKind::TaskExit) || filter.wants(pb::EventKind::JobExit) {
        for j in jobs
            .iter()
            .filter(|j| filter.wants_job(j.id) && filter.viewer.sees(Some(j.owner)))
        {
            out.push(pb::Event {
                seq: 0,
                kind: Some(pb::event::Kind::Job(j.into())),
            });
        }
    }
    out
}

fn snapshot_event(
    kind: pb::GroupEventKind,
    group: &str,
    instance: u32,
    task: String,
    size: u32,
) -> pb::Event {
    pb::Event {
        seq: 0,
        kind: Some(pb::event::Kind::Group(pb::GroupEvent {
            kind: kind as i32,
            group: group.to_string(),
            instance,
            task,
            size,
            group_broken: false,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(kinds: &[pb::EventKind], jobs: &[u64]) -> pb::WatchRequest {
        pb::WatchRequest {
            kinds: kinds.iter().map(|k| *k as i32).collect(),
            jobs: jobs.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn no_kinds_means_all_but_output() {
        let f = WatchFilter::new(&request(&[], &[]), Viewer::Admin).unwrap();
        assert!(f.wants(pb::EventKind::Group));
        assert!(f.wants(pb::EventKind::JobExit));
        assert!(!f.wants(pb::EventKind::TaskOutput));
        assert!(f.wants_job(7));
    }

    #[test]
    fn named_kinds_and_jobs_only() {
        let f =
            WatchFilter::new(&request(&[pb::EventKind::TaskOutput], &[3]), Viewer::Admin).unwrap();
        assert!(f.wants(pb::EventKind::TaskOutput));
        assert!(!f.wants(pb::EventKind::Group));
        assert!(f.wants_job(3));
        assert!(!f.wants_job(4));
    }

    #[test]
    fn users_see_only_their_own_jobs() {
        assert!(Viewer::Admin.sees(Some(1001)));
        assert!(Viewer::Admin.sees(None));
        assert!(Viewer::User(Some(1001)).sees(Some(1001)));
        assert!(!Viewer::User(Some(1001)).sees(Some(1002)));
        assert!(!Viewer::User(Some(1001)).sees(None));
        assert!(!Viewer::User(None).sees(None));
    }

    #[test]
    fn unknown_kind_is_refused() {
        let req = pb::WatchRequest {
            kinds: vec![0],
            ..Default::default()
        };
        assert!(matches!(
            WatchFilter::new(&req, Viewer::Admin),
            Err(WatchError::UnknownKind(0))
        ));
    }

    #[tokio::test]
    async fn snapshot_ends_with_synced() {
        let groups = Groups::in_memory();
        let req = pb::WatchRequest {
            current_state: true,
            ..Default::default()
        };
        let mut rx = start(&req, Viewer::Admin, &groups, None).unwrap();
        let first = rx.recv().await.unwrap().unwrap();
        assert!(matches!(first.kind, Some(pb::event::Kind::Synced(_))));
    }
}

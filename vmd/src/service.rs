//! The `Vmd` gRPC service: a thin layer that hands sessions to [`session`],
//! answers the console's calls from the group service and the resource
//! manager ([`isthmus_rm`]), hands tasker streams to [`crate::tasker_link`]
//! and host links to [`crate::host_link`], streams events to watchers and
//! halts the daemon on request.

use std::pin::Pin;
use std::sync::Arc;

use isthmus_proto as pb;
use isthmus_rm::{ResourceManager, Sequenced, TaskerHub};
use pb::vmd_server::Vmd;
use tokio::sync::{broadcast, mpsc, Notify};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};
use tracing::{info, warn};

use crate::session::{self, SessionContext};
use crate::{convert, host_link, rm_convert, tasker_link};

/// Whether this vmd holds the virtual machine's resource manager or joined
/// the virtual machine of another vmd as one more host.
#[derive(Clone)]
pub enum Role {
    Manager(ResourceManager),
    Member { master: String },
}

/// The service state shared by all calls.
pub struct VmdService {
    ctx: SessionContext,
    role: Role,
    hub: TaskerHub,
    halt: Arc<Notify>,
}

impl VmdService {
    pub fn new(ctx: SessionContext, role: Role, hub: TaskerHub, halt: Arc<Notify>) -> Self {
        Self {
            ctx,
            role,
            hub,
            halt,
        }
    }

    /// The resource manager, or the refusal of a vmd that is not it.
    fn rm(&self) -> Result<&ResourceManager, Status> {
        match &self.role {
            Role::Manager(rm) => Ok(rm),
            Role::Member { master } => Err(Status::failed_precondition(format!(
                "this vmd is host {} of a virtual machine whose resource manager is the vmd at {master}; ask that one",
                self.ctx.host
            ))),
        }
    }
}

fn rm_status(e: isthmus_rm::Refusal) -> Status {
    rm_convert::status_of(&e)
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send>>;

/// How many replies may queue for a slow session or watcher before its
/// producer waits.
const QUEUE: usize = 1024;

#[tonic::async_trait]
impl Vmd for VmdService {
    type SessionStream = ReceiverStream<Result<pb::SessionReply, Status>>;
    type WatchStream = EventStream;
    type TaskerStream = ReceiverStream<Result<pb::TaskerOrder, Status>>;
    type HostLinkStream = ReceiverStream<Result<pb::HostDown, Status>>;

    async fn session(
        &self,
        request: Request<Streaming<pb::SessionRequest>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(session::run(self.ctx.clone(), request.into_inner(), tx));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn list_groups(
        &self,
        _: Request<pb::ListGroupsRequest>,
    ) -> Result<Response<pb::GroupList>, Status> {
        let list = self
            .ctx
            .groups
            .list()
            .await
            .map_err(|e| convert::status_of(&e))?;
        Ok(Response::new(pb::GroupList {
            groups: list.iter().map(convert::summary).collect(),
        }))
    }

    async fn get_group(
        &self,
        request: Request<pb::GroupRef>,
    ) -> Result<Response<pb::GroupTable>, Status> {
        let group = request.into_inner().group;
        let table = self
            .ctx
            .groups
            .table(&group)
            .await
            .map_err(|e| convert::status_of(&e))?;
        Ok(Response::new(convert::table(&table)))
    }

    async fn watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let req = request.into_inner();
        let filter = WatchFilter::new(&req)?;
        // Subscribe before reading the current state, so that nothing falls
        // between the two: a group event may be seen twice, never missed;
        // hosts and jobs are read and subscribed to under one lock.
        let mut group_events = self.ctx.groups.subscribe();
        let rm = match &self.role {
            Role::Manager(rm) => Some((rm.clone(), rm.subscribe())),
            Role::Member { .. } => None,
        };
        let (tx, rx) = mpsc::channel(QUEUE);
        let groups = self.ctx.groups.clone();
        tokio::spawn(async move {
            let mut rm_events = None;
            let mut local = String::new();
            let mut snapshot = Vec::new();
            if req.current_state && filter.wants(pb::EventKind::Group) {
                snapshot.extend(current_state(&groups, &req.groups).await);
            }
            if let Some((rm, (hosts, jobs, events))) = rm {
                local = rm.local_host().to_string();
                if req.current_state {
                    if filter.wants(pb::EventKind::HostAdded) {
                        for h in &hosts {
                            snapshot.push(pb::convert::host_event(
                                pb::HostEventKind::Added,
                                h,
                                "",
                                &local,
                                0,
                            ));
                        }
                    }
                    if filter.wants(pb::EventKind::TaskExit) || filter.wants(pb::EventKind::JobExit)
                    {
                        for j in jobs.iter().filter(|j| filter.wants_job(j.id)) {
                            snapshot.push(pb::Event {
                                seq: 0,
                                kind: Some(pb::event::Kind::Job(j.into())),
                            });
                        }
                    }
                }
                rm_events = Some(events);
            }
            if req.current_state {
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
            loop {
                let next = tokio::select! {
                    ev = group_events.recv() => match ev {
                        Ok(ev) if filter.wants(pb::EventKind::Group) && convert::event_matches(&req.groups, &ev) => {
                            Ok(Some(convert::group_event(&ev)))
                        }
                        Ok(_) => Ok(None),
                        Err(e) => Err(e),
                    },
                    ev = recv_rm(&mut rm_events) => match ev {
                        Ok(ev) if filter.wants_rm(&ev) => Ok(Some(pb::convert::event(&ev, &local))),
                        Ok(_) => Ok(None),
                        Err(e) => Err(e),
                    },
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
                        let status =
                            Status::data_loss(format!("watcher fell behind and missed {n} events"));
                        let _ = tx.send(Err(status)).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn list_hosts(
        &self,
        _: Request<pb::ListHostsRequest>,
    ) -> Result<Response<pb::HostList>, Status> {
        let rm = self.rm()?;
        let local = rm.local_host();
        Ok(Response::new(pb::HostList {
            hosts: rm
                .hosts()
                .iter()
                .map(|h| pb::convert::host_info(h, local))
                .collect(),
        }))
    }

    async fn add_host(
        &self,
        request: Request<pb::AddHostRequest>,
    ) -> Result<Response<pb::HostInfo>, Status> {
        let rm = self.rm()?;
        let host = rm
            .add_host(request.into_inner().into())
            .map_err(rm_status)?;
        Ok(Response::new(pb::convert::host_info(
            &host,
            rm.local_host(),
        )))
    }

    async fn delete_host(
        &self,
        request: Request<pb::HostRef>,
    ) -> Result<Response<pb::DeleteHostReply>, Status> {
        let jobs_lost = self
            .rm()?
            .delete_host(&request.into_inner().name)
            .map_err(rm_status)?;
        Ok(Response::new(pb::DeleteHostReply { jobs_lost }))
    }

    async fn check_host(
        &self,
        request: Request<pb::HostRef>,
    ) -> Result<Response<pb::HostCheck>, Status> {
        let rm = self.rm()?;
        let name = request.into_inner().name;
        let host = rm.host(&name).map_err(rm_status)?;
        Ok(Response::new(check(&host, rm.local_host()).await))
    }

    async fn spawn(
        &self,
        request: Request<pb::SpawnRequest>,
    ) -> Result<Response<pb::SpawnReply>, Status> {
        let spec = request.into_inner().into();
        let (job, host) = self.rm()?.spawn(spec).await.map_err(rm_status)?;
        Ok(Response::new(pb::SpawnReply { job, host }))
    }

    async fn list_jobs(
        &self,
        request: Request<pb::ListJobsRequest>,
    ) -> Result<Response<pb::JobList>, Status> {
        let jobs = self.rm()?.jobs(request.into_inner().all);
        Ok(Response::new(pb::JobList {
            jobs: jobs.iter().map(pb::JobInfo::from).collect(),
        }))
    }

    async fn kill_job(
        &self,
        request: Request<pb::KillRequest>,
    ) -> Result<Response<pb::KillReply>, Status> {
        self.rm()?
            .kill(request.into_inner().job)
            .map_err(rm_status)?;
        Ok(Response::new(pb::KillReply {}))
    }

    async fn signal_job(
        &self,
        request: Request<pb::SignalRequest>,
    ) -> Result<Response<pb::SignalReply>, Status> {
        let r = request.into_inner();
        let delivered_to = self
            .rm()?
            .signal(r.job, r.signal, r.rank)
            .map_err(rm_status)?;
        Ok(Response::new(pb::SignalReply { delivered_to }))
    }

    async fn tasker(
        &self,
        request: Request<Streaming<pb::TaskerReport>>,
    ) -> Result<Response<Self::TaskerStream>, Status> {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(tasker_link::run(
            self.hub.clone(),
            self.ctx.host.clone(),
            request.into_inner(),
            tx,
        ));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn host_link(
        &self,
        request: Request<Streaming<pb::HostUp>>,
    ) -> Result<Response<Self::HostLinkStream>, Status> {
        let rm = self.rm()?.clone();
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(host_link::serve(
            rm,
            self.ctx.secret.clone(),
            request.into_inner(),
            tx,
        ));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn halt(&self, _: Request<pb::HaltRequest>) -> Result<Response<pb::HaltReply>, Status> {
        info!("halt requested");
        self.halt.notify_one();
        Ok(Response::new(pb::HaltReply {}))
    }
}

/// The current groups as synthetic events: a JOINED per member and a FROZEN
/// per frozen group (seq 0 marks them as a snapshot).
async fn current_state(groups: &isthmus_groups::Groups, filter: &[String]) -> Vec<pb::Event> {
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

/// Which events a watcher asked for.
struct WatchFilter {
    /// Empty: every kind except TASK_OUTPUT.
    kinds: Vec<pb::EventKind>,
    jobs: Vec<u64>,
}

impl WatchFilter {
    fn new(req: &pb::WatchRequest) -> Result<Self, Status> {
        let mut kinds = Vec::new();
        for k in &req.kinds {
            match pb::EventKind::try_from(*k) {
                Ok(pb::EventKind::Unspecified) | Err(_) => {
                    return Err(Status::invalid_argument(format!(
                        "event kind {k} is not known"
                    )));
                }
                Ok(kind) => kinds.push(kind),
            }
        }
        Ok(Self {
            kinds,
            jobs: req.jobs.clone(),
        })
    }

    fn wants(&self, kind: pb::EventKind) -> bool {
        if self.kinds.is_empty() {
            kind != pb::EventKind::TaskOutput
        } else {
            self.kinds.contains(&kind)
        }
    }

    fn wants_job(&self, job: u64) -> bool {
        self.jobs.is_empty() || self.jobs.contains(&job)
    }

    fn wants_rm(&self, ev: &Sequenced) -> bool {
        self.wants(pb::EventKind::from(&ev.event))
            && ev.event.job().is_none_or(|j| self.wants_job(j))
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

/// Whether a host's vmd answers, and how fast.
async fn check(host: &isthmus_rm::Host, local: &str) -> pb::HostCheck {
    let mut out = pb::HostCheck {
        name: host.name.clone(),
        responding: false,
        detail: String::new(),
        round_trip_us: 0,
    };
    if host.name == local {
        out.responding = true;
        out.detail = "this vmd".into();
        return out;
    }
    if host.state == isthmus_rm::HostState::Waiting {
        out.detail = "declared; its vmd has not joined".into();
        return out;
    }
    let started = std::time::Instant::now();
    let answer = tokio::time::timeout(std::time::Duration::from_secs(3), async {
        let channel = crate::client::channel(&host.addr)
            .await
            .map_err(|e| e.to_string())?;
        pb::vmd_client::VmdClient::new(channel)
            .list_groups(pb::ListGroupsRequest {})
            .await
            .map_err(|s| s.message().to_string())
    })
    .await;
    match answer {
        Ok(Ok(_)) => {
            out.responding = true;
            out.round_trip_us = started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
            out.detail = format!("vmd at {} answered", host.addr);
        }
        Ok(Err(e)) => out.detail = format!("vmd at {} did not answer: {e}", host.addr),
        Err(_) => out.detail = format!("vmd at {} did not answer within 3 s", host.addr),
    }
    out
}

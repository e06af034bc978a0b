//! The `Vmd` gRPC service: a thin layer that hands sessions to [`session`],
//! answers the console's calls from the group service, streams events to
//! watchers and halts the daemon on request.

use std::pin::Pin;
use std::sync::Arc;

use isthmus_proto as pb;
use pb::vmd_server::Vmd;
use tokio::sync::{broadcast, mpsc, Notify};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};
use tracing::{info, warn};

use crate::convert;
use crate::session::{self, SessionContext};

/// The service state shared by all calls.
pub struct VmdService {
    ctx: SessionContext,
    halt: Arc<Notify>,
}

impl VmdService {
    pub fn new(ctx: SessionContext, halt: Arc<Notify>) -> Self {
        Self { ctx, halt }
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send>>;

/// How many replies may queue for a slow session or watcher before its
/// producer waits.
const QUEUE: usize = 1024;

#[tonic::async_trait]
impl Vmd for VmdService {
    type SessionStream = ReceiverStream<Result<pb::SessionReply, Status>>;
    type WatchStream = EventStream;

    async fn session(
        &self,
        request: Request<Streaming<pb::SessionRequest>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(session::run(self.ctx.clone(), request.into_inner(), tx));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn list_groups(&self, _: Request<pb::ListGroupsRequest>) -> Result<Response<pb::GroupList>, Status> {
        let list = self.ctx.groups.list().await.map_err(|e| convert::status_of(&e))?;
        Ok(Response::new(pb::GroupList { groups: list.iter().map(convert::summary).collect() }))
    }

    async fn get_group(&self, request: Request<pb::GroupRef>) -> Result<Response<pb::GroupTable>, Status> {
        let group = request.into_inner().group;
        let table = self.ctx.groups.table(&group).await.map_err(|e| convert::status_of(&e))?;
        Ok(Response::new(convert::table(&table)))
    }

    async fn watch(&self, request: Request<pb::WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let req = request.into_inner();
        // Subscribe before reading the current state, so that nothing falls
        // between the two: an event may be seen twice, never missed.
        let mut events = self.ctx.groups.subscribe();
        let (tx, rx) = mpsc::channel(QUEUE);
        let groups = self.ctx.groups.clone();
        tokio::spawn(async move {
            if req.current_state {
                for snapshot in current_state(&groups, &req.groups).await {
                    if tx.send(Ok(snapshot)).await.is_err() {
                        return;
                    }
                }
            }
            loop {
                match events.recv().await {
                    Ok(ev) if convert::event_matches(&req.groups, &ev) => {
                        if tx.send(Ok(convert::group_event(&ev))).await.is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        warn!(missed = n, "watcher lagged");
                        let status = Status::data_loss(format!("watcher fell behind and missed {n} events"));
                        let _ = tx.send(Err(status)).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
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
    let Ok(list) = groups.list().await else { return out };
    for summary in list {
        if !(filter.is_empty() || filter.contains(&summary.name)) {
            continue;
        }
        let Ok(table) = groups.table(&summary.name).await else { continue };
        let size = table.members.len() as u32;
        for m in &table.members {
            out.push(snapshot_event(pb::GroupEventKind::Joined, &table.name, m.instance, m.task.to_string(), size));
        }
        if table.frozen {
            out.push(snapshot_event(pb::GroupEventKind::Frozen, &table.name, 0, String::new(), size));
        }
    }
    out
}

fn snapshot_event(kind: pb::GroupEventKind, group: &str, instance: u32, task: String, size: u32) -> pb::Event {
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

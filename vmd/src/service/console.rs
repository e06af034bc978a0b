//! The `Console` service: groups and their tables, notifications (the
//! merge itself is [`crate::watch`]), halting the daemon, and the resource
//! manager's calls (hosts, spawn, jobs, kill, signal), which only the vmd
//! holding the resource manager answers.
//!
//! Every call came through the `read` rule's interceptor (any authenticated
//! caller); calls that change things check their own rule here
//! ([`crate::auth::rules`]): `operator` for halt and hosts, `spawn` (the job
//! is owned by the caller's uid), `job-control` for kill and signal.
//! Jobs are their owners': `ListJobs` lists the caller's own jobs (every
//! user's only for an administrator who asks), and `Watch` shows task and
//! job events of the caller's jobs only (every job to an administrator).

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use isthmus_client::auth::TlsIdentity;
use isthmus_proto as pb;
use pb::console_server::Console;
use tokio::sync::Notify;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};
use tracing::info;

use super::Role;
use crate::auth::{self, rules, Rule};
use crate::federation::Federated;
use crate::session::SessionContext;
use crate::watch::{self, Viewer};
use crate::{convert, status};
use isthmus_rm::{HostState, Job, JobId, Refusal, ResourceManager};

pub struct ConsoleService {
    ctx: SessionContext,
    role: Role,
    halt: Arc<Notify>,
    /// This host's certificate, to reach other hosts' vmds (CheckHost).
    peer_tls: Option<TlsIdentity>,
    /// With etcd: every host's vmd, reached through the shared tables.
    federated: Option<Federated>,
}

impl ConsoleService {
    pub fn new(
        ctx: SessionContext,
        role: Role,
        halt: Arc<Notify>,
        peer_tls: Option<TlsIdentity>,
        federated: Option<Federated>,
    ) -> Self {
        Self {
            ctx,
            role,
            halt,
            peer_tls,
            federated,
        }
    }

    /// The resource manager, or the refusal of a vmd that is not it.
    fn rm(&self) -> Result<&ResourceManager, Status> {
        self.role.require_manager(&self.ctx.host)
    }

    /// Job `id` for an order on it: with etcd, also a job another vmd has
    /// just started and whose row has not reached this one yet.
    async fn job(&self, rm: &ResourceManager, id: JobId) -> Result<Job, Refusal> {
        match &self.federated {
            Some(f) => f.job(id).await,
            None => rm.job(id),
        }
    }
}

/// Whose jobs `caller` sees in a watch: an administrator every job, anyone
/// else its own uid's.
fn viewer(caller: &auth::Identity) -> Viewer {
    if caller.is_operator() {
        Viewer::Admin
    } else {
        Viewer::User(caller.uid)
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send>>;

#[tonic::async_trait]
impl Console for ConsoleService {
    type WatchStream = EventStream;

    async fn list_groups(
        &self,
        request: Request<pb::ListGroupsRequest>,
    ) -> Result<Response<pb::GroupList>, Status> {
        convert::group_page(&self.ctx.groups, request.get_ref())
            .await
            .map(Response::new)
            .map_err(|e| status::group(&e))
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
            .map_err(|e| status::group(&e))?;
        Ok(Response::new(convert::table(&table)))
    }

    async fn watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let viewer = viewer(&auth::identity::of(&request)?);
        let events = watch::start(
            &request.into_inner(),
            viewer,
            &self.ctx.groups,
            self.role.manager(),
        )
        .map_err(|e| status::watch(&e))?;
        let events = ReceiverStream::new(events).map(|ev| ev.map_err(|e| status::watch(&e)));
        Ok(Response::new(Box::pin(events)))
    }

    async fn halt(
        &self,
        request: Request<pb::HaltRequest>,
    ) -> Result<Response<pb::HaltReply>, Status> {
        let caller = auth::identity::of(&request)?;
        rules::check(Rule::Operator, &caller, None)?;
        info!(%caller, "halt requested");
        self.halt.notify_one();
        Ok(Response::new(pb::HaltReply {}))
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
        rules::check(Rule::Operator, &auth::identity::of(&request)?, None)?;
        let rm = self.rm()?;
        let r = request.into_inner();
        let host = match &self.federated {
            Some(f) => f.add_host(r.into()).await,
            None => rm.add_host(r.into()),
        }
        .map_err(|e| status::refusal(&e))?;
        Ok(Response::new(pb::convert::host_info(
            &host,
            rm.local_host(),
        )))
    }

    async fn delete_host(
        &self,
        request: Request<pb::HostRef>,
    ) -> Result<Response<pb::DeleteHostReply>, Status> {
        rules::check(Rule::Operator, &auth::identity::of(&request)?, None)?;
        let rm = self.rm()?;
        let name = request.into_inner().name;
        let jobs_lost = match &self.federated {
            Some(f) => f.delete_host(&name).await,
            None => rm.delete_host(&name),
        }
        .map_err(|e| status::refusal(&e))?;
        Ok(Response::new(pb::DeleteHostReply { jobs_lost }))
    }

    async fn check_host(
        &self,
        request: Request<pb::HostRef>,
    ) -> Result<Response<pb::HostCheck>, Status> {
        let rm = self.rm()?;
        let name = request.into_inner().name;
        let host = rm.host(&name).map_err(|e| status::refusal(&e))?;
        if let Some(f) = self.federated.as_ref().filter(|f| f.is_peer(&name)) {
            return Ok(Response::new(ping(f, &name).await));
        }
        Ok(Response::new(
            check(&host, rm.local_host(), self.peer_tls.as_ref()).await,
        ))
    }

    async fn spawn(
        &self,
        request: Request<pb::SpawnRequest>,
    ) -> Result<Response<pb::SpawnReply>, Status> {
        let caller = auth::identity::of(&request)?;
        rules::check(Rule::Spawn, &caller, None)?;
        let mut spec: isthmus_rm::SpawnSpec = request.into_inner().into();
        spec.owner = caller
            .uid
            .ok_or_else(|| Status::permission_denied("rule spawn: a caller without a uid"))?;
        let rm = self.rm()?;
        let (job, host) = match &self.federated {
            Some(f) => f.spawn(spec).await,
            None => rm.spawn(spec).await,
        }
        .map_err(|e| status::refusal(&e))?;
        Ok(Response::new(pb::SpawnReply { job, host }))
    }

    async fn list_jobs(
        &self,
        request: Request<pb::ListJobsRequest>,
    ) -> Result<Response<pb::JobList>, Status> {
        let caller = auth::identity::of(&request)?;
        let r = request.into_inner();
        let viewer = if r.every_user {
            rules::check(Rule::Operator, &caller, None).map_err(|e| {
                Status::permission_denied(format!(
                    "{} (every user's jobs are for administrators; without --every-user you see your own)",
                    e.message()
                ))
            })?;
            Viewer::Admin
        } else {
            // An administrator too sees its own jobs unless it asks.
            Viewer::User(caller.uid)
        };
        let jobs = self.rm()?.jobs(r.all);
        Ok(Response::new(pb::JobList {
            jobs: jobs
                .iter()
                .filter(|j| viewer.sees(Some(j.owner)))
                .map(pb::JobInfo::from)
                .collect(),
        }))
    }

    async fn kill_job(
        &self,
        request: Request<pb::KillRequest>,
    ) -> Result<Response<pb::KillReply>, Status> {
        let caller = auth::identity::of(&request)?;
        let rm = self.rm()?;
        let job = self
            .job(rm, request.into_inner().job)
            .await
            .map_err(|e| status::refusal(&e))?;
        rules::check(Rule::JobControl, &caller, Some(job.owner))?;
        match &self.federated {
            Some(f) => f.kill(&job).await,
            None => rm.kill(job.id),
        }
        .map_err(|e| status::refusal(&e))?;
        Ok(Response::new(pb::KillReply {}))
    }

    async fn signal_job(
        &self,
        request: Request<pb::SignalRequest>,
    ) -> Result<Response<pb::SignalReply>, Status> {
        let caller = auth::identity::of(&request)?;
        let rm = self.rm()?;
        let r = request.into_inner();
        let job = self.job(rm, r.job).await.map_err(|e| status::refusal(&e))?;
        rules::check(Rule::JobControl, &caller, Some(job.owner))?;
        let delivered_to = match &self.federated {
            Some(f) => f.signal(&job, r.signal, r.rank).await,
            None => rm.signal(job.id, r.signal, r.rank),
        }
        .map_err(|e| status::refusal(&e))?;
        Ok(Response::new(pb::SignalReply { delivered_to }))
    }
}

/// Whether a peer host's vmd answers an order through the shared tables.
async fn ping(f: &Federated, name: &str) -> pb::HostCheck {
    let mut out = pb::HostCheck {
        name: name.to_string(),
        responding: false,
        detail: String::new(),
        round_trip_us: 0,
    };
    match f.ping(name).await {
        Ok(took) => {
            out.responding = true;
            out.round_trip_us = took.as_micros().min(u128::from(u32::MAX)) as u32;
            out.detail = "its vmd answered an order through etcd".into();
        }
        Err(e) => out.detail = e.message,
    }
    out
}

/// How long a host check waits for the other vmd.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// Whether a host's vmd answers, and how fast: at the address it
/// advertised for other vmds (mutual TLS, its certificate must be the VM's
/// for that host name), else at its local address (which only works from
/// the same machine).
async fn check(host: &isthmus_rm::Host, local: &str, tls: Option<&TlsIdentity>) -> pb::HostCheck {
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
    if host.state == HostState::Waiting {
        out.detail = "declared; its vmd has not joined".into();
        return out;
    }
    let addr = if host.peer_addr.is_empty() {
        &host.addr
    } else {
        &host.peer_addr
    };
    let started = Instant::now();
    let answer = tokio::time::timeout(CHECK_TIMEOUT, async {
        let console = match (host.peer_addr.is_empty(), tls) {
            (true, _) => isthmus_client::Console::connect(&host.addr).await?,
            (false, Some(tls)) => isthmus_client::Console::over(
                isthmus_client::channel_tls_to_host(&host.peer_addr, tls, &host.name).await?,
            ),
            (false, None) => {
                return Err(isthmus_client::ClientError::BadAddress {
                    addr: host.peer_addr.clone(),
                    reason: "this vmd has no host certificate to call other vmds with (it listens without TLS)".into(),
                })
            }
        };
        console.groups().await
    })
    .await;
    match answer {
        Ok(Ok(_)) => {
            out.responding = true;
            out.round_trip_us = started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
            out.detail = format!("vmd at {addr} answered");
        }
        Ok(Err(e)) => out.detail = format!("vmd at {addr} did not answer: {}", e.message()),
        Err(_) => out.detail = format!("vmd at {addr} did not answer within 3 s"),
    }
    out
}

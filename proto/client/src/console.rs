//! The console's calls, for tools that are not group members: groups,
//! notifications, halting, and the resource manager (hosts, spawn, jobs,
//! kill, signal). Calls take and return the domain types of
//! `isthmus-types`; the wire types stay behind `isthmus_proto::convert`.
//! A refusal keeps the vmd's words and its [`crate::ErrorKind`]; an answer
//! this client cannot read is an error of kind [`crate::ErrorKind::Protocol`].

use isthmus_proto as pb;
use isthmus_types::event::{Notification, WatchFilter};
use isthmus_types::group::{GroupSummary, GroupTable};
use isthmus_types::host::{HostCheck, HostDecl, HostView};
use isthmus_types::job::{Job, JobId, SpawnSpec, Spawned};
use pb::console_client::ConsoleClient;
use tonic::Streaming;

use crate::channel::{channel, VmdChannel};
use crate::error::Result;

/// A connection for console calls to one vmd. Cheap to clone.
#[derive(Clone)]
pub struct Console {
    client: ConsoleClient<VmdChannel>,
}

/// A stream of notifications from [`Console::watch`].
pub struct Events {
    stream: Streaming<pb::Event>,
}

impl Events {
    /// The next notification; `None` once the vmd closed the stream. A
    /// watcher that fell behind gets an error of kind
    /// [`crate::ErrorKind::DataLoss`].
    pub async fn next(&mut self) -> Result<Option<Notification>> {
        match self.stream.message().await? {
            Some(ev) => Ok(Some(ev.try_into()?)),
            None => Ok(None),
        }
    }
}

impl Console {
    /// Connects to the vmd at `addr` (`host:port` or `http://host:port`).
    pub async fn connect(addr: &str) -> Result<Self> {
        Ok(Self {
            client: ConsoleClient::new(channel(addr).await?),
        })
    }

    /// Console calls over a channel opened elsewhere (e.g. with
    /// [`crate::channel_tls_to_host`]).
    pub fn over(channel: VmdChannel) -> Self {
        Self {
            client: ConsoleClient::new(channel),
        }
    }

    /// A fresh handle on the shared channel (tonic's calls take `&mut`).
    fn client(&self) -> ConsoleClient<VmdChannel> {
        self.client.clone()
    }

    /// Every group, with its size and state, sorted by name; fetched a
    /// page at a time, so any number of groups fits the message limit.
    pub async fn groups(&self) -> Result<Vec<GroupSummary>> {
        let mut groups = Vec::new();
        let mut page_token = String::new();
        loop {
            let req = pb::ListGroupsRequest {
                page_size: 0,
                page_token,
            };
            let page = self.client().list_groups(req).await?.into_inner();
            groups.extend(page.groups.into_iter().map(GroupSummary::from));
            if page.next_page_token.is_empty() {
                return Ok(groups);
            }
            page_token = page.next_page_token;
        }
    }

    /// A group's table.
    pub async fn group(&self, group: &str) -> Result<GroupTable> {
        let req = pb::GroupRef {
            group: group.to_string(),
        };
        Ok(self.client().get_group(req).await?.into_inner().into())
    }

    /// Notifications as `filter` asks for them (kinds, groups, jobs, the
    /// current state first).
    pub async fn watch(&self, filter: WatchFilter) -> Result<Events> {
        let req = pb::WatchRequest::from(filter);
        let stream = self.client().watch(req).await?.into_inner();
        Ok(Events { stream })
    }

    /// Stops the vmd.
    pub async fn halt(&self) -> Result<()> {
        self.client().halt(pb::HaltRequest {}).await?;
        Ok(())
    }

    /// The virtual machine's hosts.
    pub async fn hosts(&self) -> Result<Vec<HostView>> {
        let list = self.client().list_hosts(pb::ListHostsRequest {}).await?;
        let hosts = list.into_inner().hosts.into_iter();
        Ok(hosts.map(HostView::try_from).collect::<Result<_, _>>()?)
    }

    /// Declares a host; it is up once a vmd joins under its name.
    pub async fn add_host(&self, host: HostDecl) -> Result<HostView> {
        let req = pb::AddHostRequest::from(host);
        Ok(self.client().add_host(req).await?.into_inner().try_into()?)
    }

    /// Deletes a host. Returns how many of its jobs were lost.
    pub async fn delete_host(&self, name: &str) -> Result<u32> {
        let req = pb::HostRef {
            name: name.to_string(),
        };
        Ok(self.client().delete_host(req).await?.into_inner().jobs_lost)
    }

    /// Whether a host's vmd answers, and how fast.
    pub async fn check_host(&self, name: &str) -> Result<HostCheck> {
        let req = pb::HostRef {
            name: name.to_string(),
        };
        Ok(self.client().check_host(req).await?.into_inner().into())
    }

    /// Starts a job. Returns its id and host once a tasker accepted it.
    pub async fn spawn(&self, spec: SpawnSpec) -> Result<Spawned> {
        let req = pb::SpawnRequest::from(spec);
        Ok(self.client().spawn(req).await?.into_inner().into())
    }

    /// The caller's jobs holding slots, or (`all`) also those that ended
    /// recently.
    pub async fn jobs(&self, all: bool) -> Result<Vec<Job>> {
        self.jobs_of(all, false).await
    }

    /// Like [`Console::jobs`]; with `every_user`, every user's jobs (for an
    /// administrator; anyone else is refused).
    pub async fn jobs_of(&self, all: bool, every_user: bool) -> Result<Vec<Job>> {
        let req = pb::ListJobsRequest { all, every_user };
        let jobs = self.client().list_jobs(req).await?.into_inner().jobs;
        Ok(jobs
            .into_iter()
            .map(Job::try_from)
            .collect::<Result<_, _>>()?)
    }

    /// Kills every rank of a job.
    pub async fn kill(&self, job: JobId) -> Result<()> {
        self.client().kill_job(pb::KillRequest { job }).await?;
        Ok(())
    }

    /// Sends `signal` to a job's ranks (or one rank). Returns how many ranks
    /// were known running when it was sent.
    pub async fn signal(&self, job: JobId, signal: i32, rank: Option<u32>) -> Result<u32> {
        let req = pb::SignalRequest { job, signal, rank };
        Ok(self
            .client()
            .signal_job(req)
            .await?
            .into_inner()
            .delivered_to)
    }
}

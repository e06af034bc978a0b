//! The console's calls, for tools that are not group members: groups,
//! notifications, halting, and the resource manager (hosts, spawn, jobs,
//! kill, signal).
//!
//! NOTE (issue #7): the resource-manager calls still take and return the
//! wire types (`isthmus_proto`) because the job domain types (`JobId`,
//! `ExitStatus`, `LaunchSpec`, …) are being moved into `isthmus-types` on
//! another branch; once they are there, these signatures switch to them.
//! Errors already are this crate's own ([`crate::ClientError`] and its kinds).

use isthmus_proto as pb;
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
    /// The next event; `None` once the vmd closed the stream. A watcher that
    /// fell behind gets an error of kind [`crate::ErrorKind::DataLoss`].
    pub async fn next(&mut self) -> Result<Option<pb::Event>> {
        Ok(self.stream.message().await?)
    }
}

impl Console {
    /// Connects to the vmd at `addr` (`host:port` or `http://host:port`).
    pub async fn connect(addr: &str) -> Result<Self> {
        Ok(Self {
            client: ConsoleClient::new(channel(addr).await?),
        })
    }

    /// A fresh handle on the shared channel (tonic's calls take `&mut`).
    fn client(&self) -> ConsoleClient<VmdChannel> {
        self.client.clone()
    }

    /// Every group, with its size and state.
    pub async fn groups(&self) -> Result<Vec<pb::GroupSummary>> {
        let list = self.client().list_groups(pb::ListGroupsRequest {}).await?;
        Ok(list.into_inner().groups)
    }

    /// A group's table.
    pub async fn group(&self, group: &str) -> Result<pb::GroupTable> {
        let req = pb::GroupRef {
            group: group.to_string(),
        };
        Ok(self.client().get_group(req).await?.into_inner())
    }

    /// Notifications as asked for by `req` (kinds, groups, jobs, current
    /// state first).
    pub async fn watch(&self, req: pb::WatchRequest) -> Result<Events> {
        let stream = self.client().watch(req).await?.into_inner();
        Ok(Events { stream })
    }

    /// Stops the vmd.
    pub async fn halt(&self) -> Result<()> {
        self.client().halt(pb::HaltRequest {}).await?;
        Ok(())
    }

    /// The virtual machine's hosts.
    pub async fn hosts(&self) -> Result<Vec<pb::HostInfo>> {
        let list = self.client().list_hosts(pb::ListHostsRequest {}).await?;
        Ok(list.into_inner().hosts)
    }

    /// Declares a host; it is up once a vmd joins under its name.
    pub async fn add_host(&self, req: pb::AddHostRequest) -> Result<pb::HostInfo> {
        Ok(self.client().add_host(req).await?.into_inner())
    }

    /// Deletes a host. Returns how many of its jobs were lost.
    pub async fn delete_host(&self, name: &str) -> Result<u32> {
        let req = pb::HostRef {
            name: name.to_string(),
        };
        Ok(self.client().delete_host(req).await?.into_inner().jobs_lost)
    }

    /// Whether a host's vmd answers, and how fast.
    pub async fn check_host(&self, name: &str) -> Result<pb::HostCheck> {
        let req = pb::HostRef {
            name: name.to_string(),
        };
        Ok(self.client().check_host(req).await?.into_inner())
    }

    /// Starts a job. Returns its id and host once a tasker accepted it.
    pub async fn spawn(&self, req: pb::SpawnRequest) -> Result<pb::SpawnReply> {
        Ok(self.client().spawn(req).await?.into_inner())
    }

    /// Jobs holding slots, or (`all`) also those that ended recently.
    pub async fn jobs(&self, all: bool) -> Result<Vec<pb::JobInfo>> {
        let req = pb::ListJobsRequest { all };
        Ok(self.client().list_jobs(req).await?.into_inner().jobs)
    }

    /// Kills every rank of a job.
    pub async fn kill(&self, job: u64) -> Result<()> {
        self.client().kill_job(pb::KillRequest { job }).await?;
        Ok(())
    }

    /// Sends `signal` to a job's ranks (or one rank). Returns how many ranks
    /// were known running when it was sent.
    pub async fn signal(&self, job: u64, signal: i32, rank: Option<u32>) -> Result<u32> {
        let req = pb::SignalRequest { job, signal, rank };
        Ok(self
            .client()
            .signal_job(req)
            .await?
            .into_inner()
            .delivered_to)
    }
}

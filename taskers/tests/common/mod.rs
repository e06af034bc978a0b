//! The resource-manager tests' helpers over the wire types: watching,
//! picking events, spawn requests. The processes themselves (vmds, taskers,
//! the console) come from `isthmus-testkit`, shared with the vmd's and the
//! client's tests.

#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use isthmus_proto as pb;
pub use isthmus_testkit::*;
use pb::console_client::ConsoleClient as VmdClient;
use tokio_stream::StreamExt;

/// A raw gRPC console client, for tests that look at the wire itself.
#[allow(async_fn_in_trait)]
pub trait WireClient {
    async fn client(&self) -> VmdClient<isthmus_client::VmdChannel>;
}

impl WireClient for Vmd {
    async fn client(&self) -> VmdClient<isthmus_client::VmdChannel> {
        VmdClient::new(isthmus_client::channel(&self.addr).await.expect("connect"))
    }
}

pub type Events = tonic::Streaming<pb::Event>;

pub async fn watch(vmd: &Vmd, kinds: &[pb::EventKind], current_state: bool) -> Events {
    let mut c = vmd.client().await;
    let req = pb::WatchRequest {
        kinds: kinds.iter().map(|k| *k as i32).collect(),
        current_state,
        ..Default::default()
    };
    c.watch(req).await.expect("watch").into_inner()
}

/// The next event satisfying `pred`, skipping others; panics at the deadline.
pub async fn next_where(
    events: &mut Events,
    what: &str,
    pred: impl Fn(&pb::Event) -> bool,
) -> pb::Event {
    let end = tokio::time::Instant::now() + T;
    loop {
        match tokio::time::timeout_at(end, events.next()).await {
            Ok(Some(Ok(ev))) if pred(&ev) => return ev,
            Ok(Some(Ok(_))) => {}
            Ok(Some(Err(s))) => panic!("watch failed while waiting for {what}: {s}"),
            Ok(None) => panic!("watch ended while waiting for {what}"),
            Err(_) => panic!("no {what} within {T:?}"),
        }
    }
}

/// Every event of `job` up to and including its JOB_EXIT.
pub async fn job_events(events: &mut Events, job: u64) -> Vec<pb::Event> {
    let mut out = Vec::new();
    loop {
        let ev = next_where(events, &format!("events of job {job}"), |e| {
            event_job(e) == Some(job)
        })
        .await;
        let end = matches!(ev.kind, Some(pb::event::Kind::JobExit(_)));
        out.push(ev);
        if end {
            return out;
        }
    }
}

pub fn event_job(e: &pb::Event) -> Option<u64> {
    match &e.kind {
        Some(pb::event::Kind::Output(o)) => Some(o.job),
        Some(pb::event::Kind::TaskExit(t)) => Some(t.job),
        Some(pb::event::Kind::JobExit(j)) => Some(j.job),
        _ => None,
    }
}

/// Output lines of one rank, in order.
pub fn lines(events: &[pb::Event], rank: u32, stream: pb::OutputStream) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            Some(pb::event::Kind::Output(o))
                if o.rank == Some(rank) && o.stream == stream as i32 =>
            {
                Some(o.line.clone())
            }
            _ => None,
        })
        .collect()
}

/// The rank exits of a job: rank → exit.
pub fn rank_exits(events: &[pb::Event]) -> std::collections::BTreeMap<u32, pb::exit_status::How> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            Some(pb::event::Kind::TaskExit(t)) => Some((t.rank?, t.exit.as_ref()?.how?)),
            _ => None,
        })
        .collect()
}

pub fn job_exit(events: &[pb::Event]) -> pb::JobExit {
    match events.last().and_then(|e| e.kind.clone()) {
        Some(pb::event::Kind::JobExit(j)) => j,
        other => panic!("last event is not a job exit: {other:?}"),
    }
}

pub fn spawn_req(implementation: &str, np: u32, program: &str, args: &[&str]) -> pb::SpawnRequest {
    pb::SpawnRequest {
        program: program.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        np,
        implementation: implementation.into(),
        ..Default::default()
    }
}

/// Waits until every rank of `job` has a pid; returns the pids by rank.
pub async fn rank_pids(c: &mut VmdClient<isthmus_client::VmdChannel>, job: u64) -> Vec<u32> {
    let end = Instant::now() + T;
    loop {
        let jobs = c
            .list_jobs(pb::ListJobsRequest {
                all: true,
                every_user: true,
            })
            .await
            .expect("ps")
            .into_inner()
            .jobs;
        if let Some(j) = jobs.iter().find(|j| j.job == job) {
            if j.ranks.iter().all(|r| r.pid != 0) {
                return j.ranks.iter().map(|r| r.pid).collect();
            }
        }
        assert!(Instant::now() < end, "ranks of job {job} did not all start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}

//! Issue 23, item 7: a one-host vmd with its default store (redb files in
//! its runtime directory) killed with SIGKILL and started again keeps its
//! job table: real vmd, real exec tasker, real jobs. The jobs that had
//! ended are listed with their exit status and owner, the one that was
//! running is lost, and a new job gets a larger id. With `--store memory`
//! the restarted vmd knows no job (today's behaviour, kept).

#![cfg(test)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use isthmus_proto as pb;
use pb::event::Kind;
use pb::exit_status::How;

async fn all_jobs(
    c: &mut pb::console_client::ConsoleClient<isthmus_client::VmdChannel>,
) -> Vec<pb::JobInfo> {
    c.list_jobs(pb::ListJobsRequest {
        all: true,
        every_user: true,
    })
    .await
    .expect("ps --all")
    .into_inner()
    .jobs
}

/// Waits for the JOB_EXIT of `job` on `events`; returns it.
async fn exit_of(events: &mut Events, job: u64) -> pb::JobExit {
    let ev = next_where(
        events,
        "job exit",
        |e| matches!(&e.kind, Some(Kind::JobExit(j)) if j.job == job),
    )
    .await;
    match ev.kind {
        Some(Kind::JobExit(j)) => j,
        _ => unreachable!(),
    }
}

/// Kills `pid` (a job's rank this test started) if it still runs.
fn reap(pid: u32) {
    if alive(pid) {
        // SAFETY: kill(2) on a pid of a process this test started (a rank
        // of its own job), checked alive just before.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_vmd_lists_ended_jobs_loses_running_ones_and_ids_go_on() {
    let mut vmd = Vmd::start("h1", &["--slots", "4"]);
    let mut tasker = vmd.tasker("exec").await;
    // SAFETY: getuid(2) has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut events = watch(&vmd, &[pb::EventKind::JobExit], false).await;
    let mut c = vmd.client().await;
    let spawn = |program: &'static str, args: &'static [&'static str]| {
        let mut c = c.clone();
        async move {
            c.spawn(spawn_req("exec", 1, program, args))
                .await
                .expect("spawn")
                .into_inner()
                .job
        }
    };
    let ok = spawn("true", &[]).await;
    assert_eq!(
        exit_of(&mut events, ok).await.state,
        pb::JobState::JobExited as i32
    );
    let bad = spawn("sh", &["-c", "exit 3"]).await;
    assert_eq!(
        exit_of(&mut events, bad).await.state,
        pb::JobState::JobFailed as i32
    );
    let long = spawn("sleep", &["600"]).await;
    let pids = rank_pids(&mut c, long).await;
    let before = all_jobs(&mut c).await;

    vmd.kill9();
    // Its tasker sees the vmd go, stops, and takes its job with it.
    let stopped = tasker.wait_exit(T);
    let deadline = Instant::now() + T;
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let outlived: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    outlived.iter().for_each(|p| reap(*p));
    assert!(stopped.is_some(), "the tasker outlived its vmd");
    assert!(
        outlived.is_empty(),
        "ranks {outlived:?} outlived their tasker"
    );

    vmd.start_again();
    let mut c = vmd.client().await;
    let after = all_jobs(&mut c).await;
    let ids: Vec<u64> = after.iter().map(|j| j.job).collect();
    assert_eq!(ids, vec![ok, bad, long], "{after:?}");
    for (was, now) in before.iter().zip(&after) {
        assert_eq!(
            (&now.program, &now.args, now.owner_uid, &now.host, now.np),
            (&was.program, &was.args, uid, &was.host, was.np)
        );
    }
    let exit = |j: &pb::JobInfo| j.exit.as_ref().and_then(|e| e.how);
    assert_eq!(after[0].state, pb::JobState::JobExited as i32);
    assert_eq!(exit(&after[0]), Some(How::Code(0)));
    assert_eq!(after[1].state, pb::JobState::JobFailed as i32);
    assert_eq!(exit(&after[1]), Some(How::Code(3)));
    assert_eq!(
        after[2].state,
        pb::JobState::JobLost as i32,
        "{:?}",
        after[2]
    );
    assert_eq!(exit(&after[2]), None);
    assert!(after[2].reason.contains("restarted"), "{}", after[2].reason);
    // Nothing holds slots.
    let running = c
        .list_jobs(pb::ListJobsRequest {
            all: false,
            every_user: true,
        })
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert!(running.is_empty(), "{running:?}");

    // The console lists them as well (`isthmus ps --all`).
    let (code, out, err) = console(&vmd.addr, &["--json", "ps", "--all"]);
    assert_eq!(code, 0, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("ps --json");
    let states: Vec<(u64, &str)> = listed
        .as_array()
        .expect("a list")
        .iter()
        .map(|j| (j["job"].as_u64().unwrap(), j["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        vec![(ok, "exited"), (bad, "failed"), (long, "lost")]
    );

    // A watcher's snapshot shows the lost job as lost.
    let mut snapshot = watch(&vmd, &[], true).await;
    let job = next_where(
        &mut snapshot,
        "job snapshot",
        |e| matches!(&e.kind, Some(Kind::Job(j)) if j.job == long),
    )
    .await;
    let Some(Kind::Job(j)) = job.kind else {
        unreachable!()
    };
    assert_eq!(j.state, pb::JobState::JobLost as i32, "{j:?}");

    // A new job gets a larger id, and its end is announced as usual.
    let _tasker = vmd.tasker("exec").await;
    let mut events = watch(&vmd, &[pb::EventKind::JobExit], false).await;
    let next = c
        .spawn(spawn_req("exec", 1, "true", &[]))
        .await
        .expect("spawn after the restart")
        .into_inner()
        .job;
    assert!(next > long, "job id {next} given again after the restart");
    assert_eq!(
        exit_of(&mut events, next).await.state,
        pb::JobState::JobExited as i32
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_memory_store_a_restarted_vmd_knows_no_job() {
    let mut vmd = Vmd::start("h1", &["--slots", "2", "--store", "memory"]);
    let mut tasker = vmd.tasker("exec").await;
    let mut events = watch(&vmd, &[pb::EventKind::JobExit], false).await;
    let mut c = vmd.client().await;
    let job = c
        .spawn(spawn_req("exec", 1, "true", &[]))
        .await
        .expect("spawn")
        .into_inner()
        .job;
    exit_of(&mut events, job).await;
    assert_eq!(all_jobs(&mut c).await.len(), 1);
    vmd.kill9();
    assert!(tasker.wait_exit(T).is_some(), "the tasker outlived its vmd");
    vmd.start_again();
    let mut c = vmd.client().await;
    assert!(all_jobs(&mut c).await.is_empty());
    assert!(
        !vmd.dir.0.join("run").join("jobs.redb").exists(),
        "no job file with --store memory"
    );
}

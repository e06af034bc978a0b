//! The job file under a real resource manager, its port answered in
//! process as a tasker would (the process side is covered by the vmd's
//! restart test): rows written, pruned with the manager's table, and read
//! back by the next run.

#![cfg(test)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use isthmus_rm::{
    ExitStatus, HostDecl, JobId, JobOrder, JobReport, JobState, PortMsg, RefusalKind,
    ResourceManager, SpawnSpec,
};
use tokio::sync::mpsc;

use isthmus_rm_redb::{read, JobStore, Kept, Restored};

fn rm() -> (ResourceManager, mpsc::UnboundedReceiver<PortMsg>) {
    let local = HostDecl {
        name: "h1".into(),
        slots: 4,
        offers: vec![],
        addr: "unix:/h1.sock".into(),
        peer_addr: String::new(),
    };
    let (rm, rx) = ResourceManager::new(local, vec![]).unwrap();
    rm.set_taskers("h1", [("exec".to_string(), 1)].into());
    (rm, rx)
}

/// A tasker in process: accepts every launch; a program `true` ends at once
/// with 0, `false` with 1, anything else keeps running.
fn tasker(rm: ResourceManager, mut port: mpsc::UnboundedReceiver<PortMsg>) {
    tokio::spawn(async move {
        while let Some(msg) = port.recv().await {
            let PortMsg::Order(JobOrder::Launch(l)) = msg else {
                continue;
            };
            rm.report("h1", JobReport::Accepted { job: l.job });
            rm.report(
                "h1",
                JobReport::RankStarted {
                    job: l.job,
                    rank: 0,
                    pid: 4242,
                },
            );
            let code = match l.program.as_str() {
                "true" => 0,
                "false" => 1,
                _ => continue,
            };
            rm.report(
                "h1",
                JobReport::LauncherExit {
                    job: l.job,
                    exit: Some(ExitStatus::Code(code)),
                    reason: String::new(),
                },
            );
        }
    });
}

fn spec(program: &str, owner: u32) -> SpawnSpec {
    SpawnSpec {
        program: program.into(),
        np: 1,
        implementation: "exec".into(),
        owner,
        ..Default::default()
    }
}

fn temp_file() -> PathBuf {
    std::env::temp_dir().join(format!("isthmus-jobs-test-{}.redb", uuid::Uuid::new_v4()))
}

/// Runs `f` in a runtime of its own, then drops the runtime: every task
/// of it (the store's writer too) goes, and the file is closed, as with a
/// vmd killed (no clean shutdown runs anywhere).
fn run_and_drop<F, Fut>(f: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(f());
    drop(rt);
}

/// Waits until no job holds slots, then until the table is written.
async fn all_ended_and_written(rm: &ResourceManager, kept: &mut Kept) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while !rm.jobs(false).iter().all(|j| j.program == "sleep") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        kept.settled(rm).await;
    })
    .await
    .unwrap();
}

#[test]
fn ended_jobs_stay_running_ones_are_lost_and_ids_go_on() {
    let path = temp_file();
    run_and_drop(|| async {
        let (rm, port) = rm();
        let (store, restored) = JobStore::open(&path).unwrap();
        assert_eq!(restored, Restored::default(), "a new file is empty");
        let mut kept = store.keep(&rm, restored);
        assert_eq!(kept.lost, 0);
        tasker(rm.clone(), port);
        let (ok, _) = rm.spawn(spec("true", 1001)).await.unwrap();
        let (bad, _) = rm.spawn(spec("false", 1002)).await.unwrap();
        let (long, _) = rm.spawn(spec("sleep", 1003)).await.unwrap();
        assert_eq!((ok, bad, long), (1, 2, 3));
        all_ended_and_written(&rm, &mut kept).await;
    });
    run_and_drop(|| async { restarted(&path).await });
    let _ = std::fs::remove_file(&path);
}

async fn restarted(path: &Path) {
    let (rm, _port) = rm();
    let (store, restored) = JobStore::open(path).unwrap();
    assert_eq!(restored.last_id, 3);
    assert_eq!(restored.jobs.len(), 3, "{restored:?}");
    let mut events = rm.subscribe().2;
    assert_eq!(store.keep(&rm, restored).lost, 1, "the running job is lost");
    let ev = events.try_recv().unwrap().event.clone();
    assert!(
        matches!(&ev, isthmus_rm::RmEvent::JobExit { job: 3, state: JobState::Lost, reason, .. } if reason.contains("restarted")),
        "{ev:?}"
    );
    let jobs = rm.jobs(true);
    let got: Vec<_> = jobs
        .iter()
        .map(|j| (j.id, j.state, j.exit, j.owner))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, JobState::Exited, Some(ExitStatus::Code(0)), 1001),
            (2, JobState::Failed, Some(ExitStatus::Code(1)), 1002),
            (3, JobState::Lost, None, 1003),
        ]
    );
    assert!(rm.jobs(false).is_empty(), "nothing holds slots");
    assert_eq!(rm.host("h1").unwrap().slots_used, 0);
    assert_eq!(
        rm.kill(3).unwrap_err().kind,
        RefusalKind::FailedPrecondition
    );
}

#[test]
fn the_file_keeps_the_managers_bound_of_ended_jobs() {
    let path = temp_file();
    let total = 1010;
    run_and_drop(|| async {
        let (rm, port) = rm();
        let (store, restored) = JobStore::open(&path).unwrap();
        let mut kept = store.keep(&rm, restored);
        tasker(rm.clone(), port);
        for _ in 0..total {
            rm.spawn(spec("true", 7)).await.unwrap();
        }
        all_ended_and_written(&rm, &mut kept).await;
    });
    let restored = read(&path).unwrap();
    assert_eq!(restored.last_id, total);
    assert_eq!(restored.jobs.len(), 1000, "the rm keeps 1000 ended jobs");
    let ids: Vec<JobId> = restored.jobs.iter().map(|j| j.id).collect();
    assert_eq!(ids.first(), Some(&(total - 999)), "the oldest went first");
    assert_eq!(ids.last(), Some(&total));
    // The next run goes on from there.
    run_and_drop(|| async {
        let (rm, port) = rm();
        let (store, restored) = JobStore::open(&path).unwrap();
        assert_eq!(store.keep(&rm, restored).lost, 0);
        assert_eq!(rm.jobs(true).len(), 1000);
        tasker(rm.clone(), port);
        let (id, _) = rm.spawn(spec("true", 7)).await.unwrap();
        assert_eq!(id, total + 1);
    });
    let _ = std::fs::remove_file(&path);
}

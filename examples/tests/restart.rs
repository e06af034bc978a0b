//! One host survives its vmd's restart: a real vmd with its default store
//! (a redb file in its runtime directory) is killed with SIGKILL and
//! started again while a coupled pair of real MPI jobs, Open MPI and MPICH,
//! exchange over their intercommunicator. Both jobs started with nothing
//! but the vmd's address and their own launchers.

#![cfg(test)]

mod common;

use std::time::{Duration, Instant};

use isthmus_client::Console;
use isthmus_testkit::{finish, Vmd, T};
use isthmus_types::event::{NotificationKind, WatchEvent, WatchFilter};
use isthmus_types::group::{GroupEventKind, GroupTable};

use common::{assert_passed, job, launch, Mpi, SteadyFiles};

/// Waits until the pair has done `more` rounds beyond `since`, failing if
/// a launcher exits meanwhile.
fn advance(
    files: &SteadyFiles,
    jobs: &mut [&mut std::process::Child],
    since: u64,
    more: u64,
    what: &str,
) -> u64 {
    let started = Instant::now();
    loop {
        let done = files.rounds();
        if done >= since + more {
            return done;
        }
        for c in jobs.iter_mut() {
            if let Ok(Some(s)) = c.try_wait() {
                panic!("a job ended {what} ({s}) at round {done}");
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "the pair stopped exchanging {what} (at round {done})"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn tables(console: &Console, names: &[&str]) -> Vec<GroupTable> {
    let mut out = Vec::new();
    for n in names {
        out.push(console.group(n).await.unwrap_or_else(|e| {
            panic!("group {n} unknown to the vmd: {e}");
        }));
    }
    out
}

/// Issue 23, item 7: kill -9 of a one-host vmd, and a restart, under a
/// running coupled pair. The groups and every member (same tasks,
/// instances, generation) are known to the restarted vmd, the ranks'
/// sessions resume, nobody is reported dead, the jobs leave through the
/// restarted vmd and both launchers exit with 0.
#[test]
fn a_one_host_vmd_killed_and_restarted_loses_nothing_of_a_running_pair() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut vmd = Vmd::start("host-a", &[]);
    let (ga, gb) = ("durable-ompi", "durable-mpich");
    let files = SteadyFiles::new("durable");
    let mut ja = job(Mpi::OpenMpi, 2, ga, &[gb], true);
    ja.env = files.env.clone();
    let mut jb = job(Mpi::Mpich, 2, gb, &[ga], false);
    jb.env = files.env.clone();
    let mut ca = launch(&vmd.addr, "steady", &ja);
    // Two launchers started in the same instant race on Open MPI's
    // session directory.
    std::thread::sleep(Duration::from_millis(300));
    let mut cb = launch(&vmd.addr, "steady", &jb);

    let before = advance(
        &files,
        &mut [&mut ca, &mut cb],
        0,
        1,
        "before its first round",
    );
    let known = rt.block_on(async { tables(&vmd.console().await, &[ga, gb]).await });
    for t in &known {
        assert!(t.frozen && !t.broken && t.members.len() == 2, "{t:?}");
    }

    // The data path is direct: the pair exchanges with the vmd dead...
    vmd.kill9();
    let during = advance(
        &files,
        &mut [&mut ca, &mut cb],
        before,
        20,
        "while the vmd was down",
    );
    // ...and the restarted vmd knows everything it knew.
    vmd.start_again();
    let (after, mut events) = rt.block_on(async {
        let console = vmd.console().await;
        let events = console
            .watch(WatchFilter {
                groups: vec![ga.into(), gb.into()],
                kinds: vec![NotificationKind::Group],
                ..Default::default()
            })
            .await
            .expect("watch");
        (tables(&console, &[ga, gb]).await, events)
    });
    assert_eq!(after, known, "the restarted vmd's groups");
    advance(
        &files,
        &mut [&mut ca, &mut cb],
        during,
        20,
        "after the vmd restarted",
    );

    files.stop();
    let oa = finish(ca, Duration::from_secs(240), ga);
    let ob = finish(cb, Duration::from_secs(240), gb);
    assert_passed(&oa, "steady", &ja);
    assert_passed(&ob, "steady", &jb);

    // Every rank left as a live task through the restarted vmd: no death,
    // and both groups went.
    let heard = rt.block_on(async {
        let mut heard = Vec::new();
        let mut destroyed = std::collections::HashSet::new();
        while destroyed.len() < 2 {
            let n = tokio::time::timeout(T, events.next())
                .await
                .unwrap_or_else(|_| panic!("groups not destroyed; heard {heard:?}"))
                .expect("watch open")
                .expect("watch event");
            if let WatchEvent::Group(e) = n.event {
                if e.kind == GroupEventKind::Destroyed {
                    destroyed.insert(e.group.clone());
                }
                heard.push(e);
            }
        }
        heard
    });
    let deaths: Vec<_> = heard
        .iter()
        .filter(|e| e.kind == GroupEventKind::MemberDied)
        .collect();
    assert!(deaths.is_empty(), "deaths reported: {deaths:?}");
    let left = heard
        .iter()
        .filter(|e| e.kind == GroupEventKind::Left)
        .count();
    assert_eq!(left, ja.np + jb.np, "every rank left: {heard:?}");
    let remaining = rt.block_on(async { vmd.console().await.groups().await.expect("groups") });
    assert!(
        remaining.iter().all(|g| g.name != ga && g.name != gb),
        "{remaining:?}"
    );
    drop(vmd);
}

/// The tasks of the previous run are kept only while they may come back:
/// after a restart with `--resume-grace 3`, a task whose session never
/// resumes is closed as dead (its frozen group breaks, the watchers are
/// told), while one that resumed keeps its group and leaves it as a live
/// task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_does_not_resume_after_a_one_host_restart_is_reported_dead() {
    use isthmus_client::{Session, SessionOptions};
    let mut vmd = Vmd::start("host-a", &["--resume-grace", "3"]);
    let never = SessionOptions {
        resume_window: Duration::ZERO,
    };
    let ghost = Session::connect_with(&vmd.addr, "ghost", never)
        .await
        .expect("session");
    let survivor = Session::connect_with(&vmd.addr, "survivor", SessionOptions::default())
        .await
        .expect("session");
    for (s, g) in [(&ghost, "ghost"), (&survivor, "survivor")] {
        s.join(g, Some(0), b"ep".to_vec()).await.expect("join");
        s.freeze(g, 1, Duration::from_secs(10))
            .await
            .expect("freeze");
    }

    tokio::task::block_in_place(|| vmd.restart());
    let console = vmd.console().await;
    let mut events = console
        .watch(WatchFilter {
            groups: vec!["ghost".into(), "survivor".into()],
            kinds: vec![NotificationKind::Group],
            ..Default::default()
        })
        .await
        .expect("watch");
    // Both are known at once after the restart, the ghost still whole.
    let ghost_table = console.group("ghost").await.expect("ghost's group");
    assert!(!ghost_table.broken && ghost_table.members.len() == 1);
    // The survivor resumes: a call goes through the restarted vmd.
    let table = survivor.members("survivor").await.expect("resumed");
    assert_eq!(table.members.len(), 1);
    assert_eq!(table.members[0].task, survivor.task());

    // The ghost never came back: after the grace, everyone is told.
    let died = loop {
        let n = tokio::time::timeout(T, events.next())
            .await
            .expect("the ghost's death within the hang guard")
            .expect("watch open")
            .expect("watch event");
        if let WatchEvent::Group(e) = n.event {
            if e.group == "ghost" && e.kind == GroupEventKind::MemberDied {
                break e;
            }
        }
    };
    assert_eq!(died.member.as_ref().map(|m| m.instance), Some(0));
    assert!(died.group_broken, "{died:?}");

    let table = console.group("survivor").await.expect("survivor's group");
    assert!(!table.broken && table.members.len() == 1, "{table:?}");
    survivor
        .leave("survivor")
        .await
        .expect("leave after the resume");
    drop((ghost, survivor, vmd));
}

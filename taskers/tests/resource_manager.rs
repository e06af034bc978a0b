//! The resource manager, taskers and notifications through real processes:
//! vmds, taskers, mpirun.openmpi, mpiexec.mpich (and the Open MPI 5, MPICH 5
//! and Intel MPI launchers) and the console.

#![cfg(test)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use isthmus_proto as pb;
use pb::event::Kind;
use pb::exit_status::How;
use tonic::Code;

fn is_job_exit(e: &pb::Event) -> bool {
    matches!(e.kind, Some(Kind::JobExit(_)))
}

const JOB_KINDS: &[pb::EventKind] = &[
    pb::EventKind::TaskOutput,
    pb::EventKind::TaskExit,
    pb::EventKind::JobExit,
];

/// Output, environment, exit codes of each rank, for one implementation.
async fn output_and_exit_codes(implementation: &str, rank_var: &str) {
    let vmd = Vmd::start("h1", &["--slots", "8"]);
    let _tasker = vmd.tasker(implementation).await;
    let mut events = watch(&vmd, JOB_KINDS, false).await;
    let mut c = vmd.client().await;
    // Open MPI 5 (PRRTE) kills a job's ranks when one ends with a failure
    // and drops what they wrote but it had not forwarded yet (its own
    // `mpirun` loses lines the same way): there, the ranks linger a moment
    // before they fail.
    let linger = if implementation == "openmpi5" {
        "sleep 1; "
    } else {
        ""
    };
    let script = format!(
        "echo out $ISTHMUS_JOB $ISTHMUS_VMD ${{#ISTHMUS_SECRET}}; echo err-${rank_var} >&2; {linger}exit $((${rank_var} + 3))"
    );
    let r = c
        .spawn(spawn_req(implementation, 2, "sh", &["-c", &script]))
        .await
        .expect("spawn")
        .into_inner();
    assert_eq!(r.host, "h1");
    let evs = job_events(&mut events, r.job).await;
    for rank in 0..2 {
        assert_eq!(
            lines(&evs, rank, pb::OutputStream::Stdout),
            vec![format!("out {} {} 0", r.job, vmd.addr)],
            "stdout of rank {rank} with job id, vmd address and no secret"
        );
        assert_eq!(
            lines(&evs, rank, pb::OutputStream::Stderr),
            vec![format!("err-{rank}")]
        );
    }
    let exits = rank_exits(&evs);
    // Each rank's own code (3 + rank) where it is reported. An MPI
    // launcher stops the other rank once one failed, and which fails first
    // is a race (MPICH 5's hydra stopped rank 0 before it ended when rank 1
    // ended first, and its exit was never reported): at least one reports
    // its own; exec never stops one, so both do.
    let own = |rank: u32| exits.get(&rank) == Some(&How::Code(rank as i32 + 3));
    assert!(own(0) || own(1), "neither rank's own exit code: {evs:?}");
    if implementation == "exec" {
        assert!(own(0) && own(1), "{evs:?}");
    }
    let end = job_exit(&evs);
    assert_eq!(end.state, pb::JobState::JobFailed as i32, "{end:?}");
    // A job that succeeds.
    let r = c
        .spawn(spawn_req(implementation, 3, "true", &[]))
        .await
        .expect("spawn")
        .into_inner();
    let evs = job_events(&mut events, r.job).await;
    assert_eq!(rank_exits(&evs).len(), 3, "{evs:?}");
    assert!(rank_exits(&evs).values().all(|h| *h == How::Code(0)));
    let end = job_exit(&evs);
    assert_eq!(end.state, pb::JobState::JobExited as i32, "{end:?}");
    let hosts = c
        .list_hosts(pb::ListHostsRequest {})
        .await
        .unwrap()
        .into_inner()
        .hosts;
    assert_eq!(hosts[0].slots_used, 0, "slots freed on exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_job_output_environment_and_exit_codes() {
    output_and_exit_codes("exec", "ISTHMUS_RANK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openmpi_job_output_environment_and_exit_codes() {
    output_and_exit_codes("openmpi", "OMPI_COMM_WORLD_RANK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mpich_job_output_environment_and_exit_codes() {
    output_and_exit_codes("mpich", "PMI_RANK").await;
}

// The implementations in a prefix of their own (scripts/install-mpis.sh,
// which scripts/test.sh runs): the same through their own launchers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openmpi5_job_output_environment_and_exit_codes() {
    output_and_exit_codes("openmpi5", "OMPI_COMM_WORLD_RANK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mpich5_job_output_environment_and_exit_codes() {
    output_and_exit_codes("mpich5", "PMI_RANK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intel_mpi_job_output_environment_and_exit_codes() {
    output_and_exit_codes("impi", "PMI_RANK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_clear_and_leave_nothing_running() {
    let vmd = Vmd::with_hostfile("h1", 4, &["exec", "lam"]);
    let _tasker = vmd.tasker("exec").await;
    let mut c = vmd.client().await;
    let cases: Vec<(pb::SpawnRequest, Code, &str)> = vec![
        (
            spawn_req("exec", 0, "true", &[]),
            Code::InvalidArgument,
            "np",
        ),
        (
            spawn_req("mvapich", 1, "true", &[]),
            Code::NotFound,
            "unknown implementation \"mvapich\"",
        ),
        (
            spawn_req("lam", 1, "true", &[]),
            Code::FailedPrecondition,
            "no host offers lam",
        ),
        (
            spawn_req("exec", 5, "true", &[]),
            Code::ResourceExhausted,
            "not enough slots",
        ),
        (
            spawn_req("exec", 1, "no-such-program-isthmus", &[]),
            Code::NotFound,
            "no-such-program-isthmus not found",
        ),
        (
            spawn_req("exec", 1, "", &[]),
            Code::InvalidArgument,
            "no program",
        ),
        (
            pb::SpawnRequest {
                placement: Some(pb::spawn_request::Placement::Host("nowhere".into())),
                ..spawn_req("exec", 1, "true", &[])
            },
            Code::NotFound,
            "no host named \"nowhere\"",
        ),
    ];
    for (req, code, text) in cases {
        let what = format!("{req:?}");
        let e = c.spawn(req).await.expect_err(&what);
        assert_eq!(e.code(), code, "{what}: {}", e.message());
        assert!(
            e.message().contains(text),
            "{what}: message {:?} should name {text:?}",
            e.message()
        );
    }
    assert!(c
        .list_jobs(pb::ListJobsRequest {
            all: true,
            every_user: true
        })
        .await
        .unwrap()
        .into_inner()
        .jobs
        .is_empty());
    let h = &c
        .list_hosts(pb::ListHostsRequest {})
        .await
        .unwrap()
        .into_inner()
        .hosts[0];
    assert_eq!((h.slots, h.slots_used), (4, 0));
    // Kill / signal refusals.
    assert_eq!(
        c.kill_job(pb::KillRequest { job: 99 })
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    let r = c
        .spawn(spawn_req("exec", 1, "sleep", &["30"]))
        .await
        .unwrap()
        .into_inner();
    let bad = c
        .signal_job(pb::SignalRequest {
            job: r.job,
            signal: 0,
            rank: None,
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    let bad = c
        .signal_job(pb::SignalRequest {
            job: r.job,
            signal: 15,
            rank: Some(1),
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument, "{}", bad.message());
    c.kill_job(pb::KillRequest { job: r.job }).await.unwrap();
    // Host table refusals.
    assert_eq!(
        c.delete_host(pb::HostRef { name: "h1".into() })
            .await
            .unwrap_err()
            .code(),
        Code::FailedPrecondition
    );
    let add = |name: &str| pb::AddHostRequest {
        name: name.into(),
        slots: 2,
        offers: vec![],
        addr: String::new(),
    };
    assert_eq!(
        c.add_host(add("bad name")).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    assert_eq!(
        c.add_host(add("h1")).await.unwrap_err().code(),
        Code::AlreadyExists
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signal_and_kill_are_delivered_and_reported() {
    let vmd = Vmd::start("h1", &["--slots", "4"]);
    let _tasker = vmd.tasker("exec").await;
    let mut events = watch(&vmd, JOB_KINDS, false).await;
    let mut c = vmd.client().await;
    let script = "trap 'exit 7' USR1; echo ready; while :; do sleep 0.05; done";
    let r = c
        .spawn(spawn_req("exec", 2, "sh", &["-c", script]))
        .await
        .unwrap()
        .into_inner();
    let pids = rank_pids(&mut c, r.job).await;
    for _ in 0..2 {
        next_where(
            &mut events,
            "ready",
            |e| matches!(&e.kind, Some(Kind::Output(o)) if o.line == "ready"),
        )
        .await;
    }
    let s = c
        .signal_job(pb::SignalRequest {
            job: r.job,
            signal: libc::SIGUSR1,
            rank: Some(1),
        })
        .await
        .unwrap();
    assert_eq!(s.into_inner().delivered_to, 1);
    let ev = next_where(&mut events, "rank 1 exit", |e| {
        matches!(&e.kind, Some(Kind::TaskExit(_)))
    })
    .await;
    let Some(Kind::TaskExit(t)) = ev.kind else {
        unreachable!()
    };
    assert_eq!(
        (t.rank, t.exit.and_then(|x| x.how)),
        (Some(1), Some(How::Code(7)))
    );
    c.kill_job(pb::KillRequest { job: r.job }).await.unwrap();
    let evs = job_events(&mut events, r.job).await;
    assert_eq!(
        rank_exits(&evs).get(&0),
        Some(&How::Signal(libc::SIGKILL)),
        "{evs:?}"
    );
    assert_eq!(job_exit(&evs).state, pb::JobState::JobKilled as i32);
    assert!(!alive(pids[0]) && !alive(pids[1]));
    // A second kill is refused: the job is over.
    assert_eq!(
        c.kill_job(pb::KillRequest { job: r.job })
            .await
            .unwrap_err()
            .code(),
        Code::FailedPrecondition
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_an_openmpi_rank_is_reported() {
    let vmd = Vmd::start("h1", &["--slots", "4"]);
    let _tasker = vmd.tasker("openmpi").await;
    let mut events = watch(
        &vmd,
        &[pb::EventKind::TaskExit, pb::EventKind::JobExit],
        false,
    )
    .await;
    let mut c = vmd.client().await;
    let r = c
        .spawn(spawn_req("openmpi", 2, "sleep", &["30"]))
        .await
        .unwrap()
        .into_inner();
    let pids = rank_pids(&mut c, r.job).await;
    // SAFETY: kill(2) of the rank process the job reported.
    unsafe { libc::kill(pids[1] as i32, libc::SIGKILL) };
    let evs = job_events(&mut events, r.job).await;
    assert_eq!(
        rank_exits(&evs).get(&1),
        Some(&How::Signal(libc::SIGKILL)),
        "{evs:?}"
    );
    let end = job_exit(&evs);
    assert_eq!(end.state, pb::JobState::JobFailed as i32);
    assert!(end.reason.contains("rank 1"), "{}", end.reason);
    let deadline = Instant::now() + T;
    while alive(pids[0]) {
        assert!(Instant::now() < deadline, "rank 0 outlived its job");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_taskers_jobs_are_lost_not_running() {
    let vmd = Vmd::start("h1", &["--slots", "4"]);
    let tasker = vmd.tasker("exec").await;
    let mut events = watch(&vmd, &[pb::EventKind::JobExit], false).await;
    let mut c = vmd.client().await;
    let r = c
        .spawn(spawn_req("exec", 2, "sleep", &["30"]))
        .await
        .unwrap()
        .into_inner();
    let pids = rank_pids(&mut c, r.job).await;
    tasker.signal(libc::SIGKILL);
    let ev = next_where(&mut events, "job exit", is_job_exit).await;
    let Some(Kind::JobExit(j)) = ev.kind else {
        unreachable!()
    };
    assert_eq!(
        (j.job, j.state),
        (r.job, pb::JobState::JobLost as i32),
        "{j:?}"
    );
    assert!(j.reason.contains("tasker"), "{}", j.reason);
    let jobs = c
        .list_jobs(pb::ListJobsRequest {
            all: false,
            every_user: true,
        })
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert!(jobs.is_empty(), "no job left running: {jobs:?}");
    let h = &c
        .list_hosts(pb::ListHostsRequest {})
        .await
        .unwrap()
        .into_inner()
        .hosts[0];
    assert_eq!(h.slots_used, 0);
    assert!(h.taskers.is_empty());
    // The ranks die with their tasker (the shims see its socket close).
    let deadline = Instant::now() + T;
    while pids.iter().any(|p| alive(*p)) {
        assert!(Instant::now() < deadline, "ranks outlived their tasker");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Nothing offers exec any more.
    assert!(c.spawn(spawn_req("exec", 1, "true", &[])).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_vmd_joins_runs_jobs_leaves_and_fails() {
    let vmd = Vmd::start("h1", &["--slots", "2"]);
    let host_kinds = [
        pb::EventKind::HostAdded,
        pb::EventKind::HostDeleted,
        pb::EventKind::HostFailed,
    ];
    let mut hosts = watch(&vmd, &host_kinds, true).await;
    let snapshot = next_where(&mut hosts, "snapshot of h1", |e| {
        matches!(&e.kind, Some(Kind::Host(_)))
    })
    .await;
    assert_eq!(snapshot.seq, 0);
    next_where(&mut hosts, "end of snapshot", |e| {
        matches!(e.kind, Some(Kind::Synced(_)))
    })
    .await;
    let host_event = |name: &'static str, kind: pb::HostEventKind| move |e: &pb::Event| matches!(&e.kind, Some(Kind::Host(h)) if h.kind == kind as i32 && h.host.as_ref().is_some_and(|x| x.name == name));

    // h2 joins, runs a job through its own tasker, leaves.
    let mut h2 = Vmd::start("h2", &["--join", &vmd.addr, "--slots", "3"]);
    next_where(
        &mut hosts,
        "h2 added",
        host_event("h2", pb::HostEventKind::Added),
    )
    .await;
    let _t2 = tasker_on(&vmd, &h2.addr, "exec", Some("h2")).await;
    let mut c = vmd.client().await;
    let check = c
        .check_host(pb::HostRef { name: "h2".into() })
        .await
        .unwrap()
        .into_inner();
    assert!(check.responding, "{check:?}");
    let mut events = watch(&vmd, JOB_KINDS, false).await;
    let req = pb::SpawnRequest {
        placement: Some(pb::spawn_request::Placement::MostFree(true)),
        ..spawn_req("exec", 3, "sh", &["-c", "echo $ISTHMUS_VMD"])
    };
    let r = c.spawn(req).await.unwrap().into_inner();
    assert_eq!(r.host, "h2", "only h2 has an exec tasker and 3 slots");
    let evs = job_events(&mut events, r.job).await;
    assert_eq!(
        lines(&evs, 2, pb::OutputStream::Stdout),
        vec![h2.addr.clone()],
        "ranks find their own host's vmd"
    );
    assert_eq!(job_exit(&evs).state, pb::JobState::JobExited as i32);
    h2.proc.signal(libc::SIGTERM);
    next_where(
        &mut hosts,
        "h2 deleted",
        host_event("h2", pb::HostEventKind::Deleted),
    )
    .await;
    assert!(h2.proc.wait_exit(T).is_some());

    // h3 joins and is killed: a failure.
    let h3 = Vmd::start("h3", &["--join", &vmd.addr]);
    next_where(
        &mut hosts,
        "h3 added",
        host_event("h3", pb::HostEventKind::Added),
    )
    .await;
    h3.proc.signal(libc::SIGKILL);
    next_where(
        &mut hosts,
        "h3 failed",
        host_event("h3", pb::HostEventKind::Failed),
    )
    .await;

    // h4 is deleted through the API (the console's `delete`) and stops.
    let mut h4 = Vmd::start("h4", &["--join", &vmd.addr]);
    next_where(
        &mut hosts,
        "h4 added",
        host_event("h4", pb::HostEventKind::Added),
    )
    .await;
    let (code, out, err) = console(&vmd.addr, &["--json", "delete", "h4"]);
    assert_eq!(code, 0, "{out}{err}");
    next_where(
        &mut hosts,
        "h4 deleted",
        host_event("h4", pb::HostEventKind::Deleted),
    )
    .await;
    assert!(h4.proc.wait_exit(T).is_some(), "a deleted host's vmd stops");
    let names: Vec<String> = c
        .list_hosts(pb::ListHostsRequest {})
        .await
        .unwrap()
        .into_inner()
        .hosts
        .into_iter()
        .map(|h| h.name)
        .collect();
    assert_eq!(names, vec!["h1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_subscriber_gets_current_state_then_events() {
    let vmd = Vmd::start("h1", &["--slots", "4"]);
    let _tasker = vmd.tasker("exec").await;
    let mut c = vmd.client().await;
    let r = c
        .spawn(spawn_req("exec", 1, "sleep", &["30"]))
        .await
        .unwrap()
        .into_inner();
    let mut events = watch(&vmd, &[], true).await;
    next_where(
        &mut events,
        "host snapshot",
        |e| matches!(&e.kind, Some(Kind::Host(h)) if h.host.as_ref().is_some_and(|x| x.name == "h1")),
    )
    .await;
    let job = next_where(&mut events, "job snapshot", |e| {
        matches!(e.kind, Some(Kind::Job(_)))
    })
    .await;
    let Some(Kind::Job(j)) = job.kind else {
        unreachable!()
    };
    assert_eq!(j.job, r.job);
    next_where(&mut events, "synced", |e| {
        matches!(e.kind, Some(Kind::Synced(_)))
    })
    .await;
    c.kill_job(pb::KillRequest { job: r.job }).await.unwrap();
    let ev = next_where(&mut events, "job exit", is_job_exit).await;
    assert!(ev.seq > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_commands_and_exit_codes() {
    let vmd = Vmd::start("h1", &["--slots", "4"]);
    let _tasker = vmd.tasker("exec").await;
    let a = vmd.addr.as_str();
    let (code, out, err) = console(a, &["--json", "conf"]);
    assert_eq!(code, 0, "{err}");
    let hosts: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(hosts[0]["name"], "h1");
    assert_eq!(hosts[0]["taskers"][0], "exec");
    let (code, out, err) = console(
        a,
        &[
            "--json",
            "spawn",
            "--wait",
            "-n",
            "2",
            "sh",
            "-c",
            "echo hello",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("\"line\":\"hello\""))
            .count(),
        2,
        "{out}"
    );
    let (code, _, err) = console(a, &["spawn", "--wait", "sh", "-c", "exit 5"]);
    assert_eq!(code, 1, "a failed job: {err}");
    let (code, _, err) = console(a, &["spawn", "--impl", "nope", "true"]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown implementation"), "{err}");
    let (code, out, _) = console(a, &["--json", "spawn", "sleep", "30"]);
    assert_eq!(code, 0);
    let job = serde_json::from_str::<serde_json::Value>(&out).expect("json")["job"]
        .as_u64()
        .expect("job id")
        .to_string();
    let (code, out, _) = console(a, &["--json", "ps"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"sleep\""), "{out}");
    assert_eq!(console(a, &["sig", "TERM", &job]).0, 0);
    assert_eq!(
        console(a, &["sig", "BOGUS", &job]).0,
        2,
        "unknown signal is a usage error"
    );
    assert_eq!(
        console(a, &["spawn"]).0,
        2,
        "missing program is a usage error"
    );
    assert_eq!(console(a, &["add", "h9", "--slots", "2"]).0, 0);
    assert_eq!(
        console(a, &["check", "h9"]).0,
        1,
        "a declared host whose vmd never joined does not respond"
    );
    assert_eq!(console(a, &["delete", "h9"]).0, 0);
    assert_eq!(console(a, &["kill", "424242"]).0, 1);
}

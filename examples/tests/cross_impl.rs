//! Cross-implementation tests: an embedded vmd, then real jobs started
//! separately by their own launchers — an Open MPI job (`mpirun.openmpi`) and
//! an MPICH job (`mpiexec.mpich`) — running one scenario of `xtest` each.
//!
//! The Open MPI flavour of `xtest` is this package's own binary (the test
//! suite is built with MPICC=mpicc.openmpi); the MPICH flavour is built into
//! its own target dir by scripts/test.sh and found through
//! `ISTHMUS_MPICH_BIN_DIR` (default: target/mpich/release).

#![cfg(test)]

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use isthmus_client::{Console, Session};
use isthmus_testkit::finish;
use isthmus_testkit::netns::Hosts;
use isthmus_types::group::{GroupEventKind, SessionEvent};
use isthmus_vmd::daemon::{Daemon, DaemonConfig, Security};

use common::{assert_passed, assert_routes, job, launch, xtest, Job, Mpi};

/// A vmd serving on a free loopback port from a thread of this test.
struct EmbeddedVmd {
    addr: String,
    halt: std::sync::Arc<tokio::sync::Notify>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EmbeddedVmd {
    fn start() -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                // Each embedded vmd gets a runtime directory of its own.
                let dir = std::env::temp_dir().join(format!(
                    "isthmus-xtest-{}-{}",
                    std::process::id(),
                    uuid::Uuid::new_v4()
                ));
                let daemon = Daemon::bind(DaemonConfig {
                    listen: None,
                    host: "localhost".into(),
                    security: Security::in_dir(dir),
                })
                .await
                .expect("bind vmd");
                tx.send((daemon.client_addr(), daemon.halt_handle()))
                    .unwrap();
                daemon.serve(std::future::pending()).await.expect("serve");
            });
        });
        let (addr, halt) = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("vmd started");
        EmbeddedVmd {
            addr,
            halt,
            thread: Some(thread),
        }
    }
}

impl Drop for EmbeddedVmd {
    fn drop(&mut self) {
        self.halt.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs all jobs of a scenario at once on a vmd of their own, checks that
/// each passed and returns their outputs.
fn scenario(scenario: &str, jobs: &[Job]) -> Vec<Output> {
    scenario_on(&EmbeddedVmd::start(), scenario, jobs)
}

/// The usual pair: Open MPI with 2 ranks (side A), MPICH with 3 ranks (side B).
fn pair(name: &str) -> Vec<Job> {
    let (a, b) = (format!("{name}-ompi"), format!("{name}-mpich"));
    vec![
        job(Mpi::OpenMpi, 2, &a, &[&b], true),
        job(Mpi::Mpich, 3, &b, &[&a], false),
    ]
}

#[test]
fn flavours_link_different_mpi_libraries() {
    let ldd = |p: PathBuf| {
        String::from_utf8_lossy(&Command::new("ldd").arg(p).output().expect("ldd").stdout)
            .into_owned()
    };
    assert!(
        ldd(xtest(Mpi::OpenMpi)).contains("libmpi.so.40"),
        "Open MPI flavour does not link Open MPI"
    );
    let mpich = ldd(xtest(Mpi::Mpich));
    assert!(
        mpich.contains("libmpich.so"),
        "MPICH flavour does not link MPICH"
    );
    assert!(!mpich.contains("libmpi.so.40"));
}

#[test]
fn all_pairs_exchange_with_checksums_both_directions() {
    scenario("allpairs", &pair("allpairs"));
}

#[test]
fn wildcards_probe_and_status() {
    scenario("wildcards", &pair("wild"));
}

#[test]
fn ordering_under_thousands_of_messages() {
    scenario("ordering", &pair("order"));
}

/// Issue 23, item 1, through the Rust API: the Open MPI job's ranks
/// complete 16,003 sends (small ones past the receiver's credit, 2 MiB
/// ones, a synchronous one), drop the intercommunicator, leave and end
/// `main` while the MPICH job's ranks sleep; these then receive every
/// message intact and in order, and no sender reports anything undelivered.
#[test]
fn completed_sends_survive_their_senders_end() {
    let outs = scenario("finalize", &pair("finalize"));
    let err = String::from_utf8_lossy(&outs[0].stderr);
    assert!(!err.contains("undelivered"), "sender reported: {err}");
}

#[test]
fn ssend_completes_only_after_the_match() {
    scenario("ssend", &pair("ssend"));
}

#[test]
fn intercomm_barrier_and_bcast_reach_every_rank_of_the_other_job() {
    scenario("coll", &pair("coll"));
}

#[test]
fn message_of_256_mib_both_directions() {
    let mut jobs = pair("big");
    jobs[0].np = 1;
    jobs[1].np = 1;
    scenario("big", &jobs);
}

/// The Rust API's large messages between an Open MPI job and an MPICH job
/// of one host go by single copy (scoped nonblocking sends and blocking
/// sends, each way), intact; each job's engine counts them. Both pairings,
/// each implementation sending first.
#[test]
fn rust_large_messages_go_by_single_copy_between_implementations() {
    for (first, second) in [(Mpi::OpenMpi, Mpi::Mpich), (Mpi::Mpich, Mpi::OpenMpi)] {
        let jobs = vec![
            job(first, 1, "sc-a", &["sc-b"], true),
            job(second, 1, "sc-b", &["sc-a"], false),
        ];
        let outputs = scenario("singlecopy", &jobs);
        let n = if std::env::var_os("ISTHMUS_TEST_NO_CMA").is_some() {
            0
        } else {
            5
        };
        for (o, j) in outputs.iter().zip(&jobs) {
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(
                out.contains(&format!("SINGLECOPY sent={n} received={n}")),
                "{:?} side of {first:?} first: {out}",
                j.mpi
            );
        }
    }
}

#[test]
fn derived_datatypes_arrive_intact() {
    scenario("datatypes", &pair("types"));
}

#[test]
fn type_mismatch_is_an_error_and_later_messages_survive() {
    scenario("mismatch", &pair("mismatch"));
}

#[test]
fn too_small_buffer_is_an_error_and_later_messages_survive() {
    scenario("truncate", &pair("trunc"));
}

#[test]
fn several_intercomms_at_once_never_mix() {
    // Open MPI job A holds two intercomms with MPICH job B and one with a
    // third job C (Open MPI), all at once.
    let jobs = vec![
        job(Mpi::OpenMpi, 2, "multi-a", &["multi-b", "multi-c"], true),
        job(Mpi::Mpich, 3, "multi-b", &["multi-a"], false),
        job(Mpi::OpenMpi, 1, "multi-c", &["multi-a"], false),
    ];
    let vmd = EmbeddedVmd::start();
    let children: Vec<Child> = vec![
        launch(&vmd.addr, "multi", &jobs[0]),
        launch(&vmd.addr, "multi", &jobs[1]),
        launch(&vmd.addr, "answer", &jobs[2]),
    ];
    let outs: Vec<Output> = children
        .into_iter()
        .zip(&jobs)
        .map(|(c, j)| finish(c, Duration::from_secs(240), &j.group))
        .collect();
    assert_passed(&outs[0], "multi", &jobs[0]);
    assert_passed(&outs[1], "multi", &jobs[1]);
    assert_passed(&outs[2], "answer", &jobs[2]);
}

#[test]
fn a_late_rank_still_forms_its_intercomm_after_the_other_job_is_done() {
    // A's rank 1 calls intercomm_create 3 s after everyone else; B needs
    // only A's rank 0 and leaves as soon as it can. Creation is collective
    // over both jobs, so B cannot leave before A's rank 1 has B's table.
    scenario("laggard", &pair("laggard"));
}

#[test]
fn nonblocking_intercomm_create_completes_while_computing() {
    scenario("nonblocking", &pair("nonblock"));
}

/// Three jobs (Open MPI, MPICH, Open MPI), each forming intercommunicators
/// with the other two without blocking, each in its own order, polling
/// `test()`. Each test() must return at once (xtest checks < 500 ms) and
/// all six intercommunicators form: before, the "ready" announcement
/// blocked inside test() until the peer's program called test() itself,
/// and the three waited on each other for the whole deadline.
#[test]
fn three_jobs_form_intercomms_with_each_other_without_blocking() {
    let mut jobs = vec![
        job(Mpi::OpenMpi, 2, "mesh-a", &["mesh-b", "mesh-c"], true),
        job(Mpi::Mpich, 2, "mesh-b", &["mesh-c", "mesh-a"], false),
        job(Mpi::OpenMpi, 1, "mesh-c", &["mesh-a", "mesh-b"], false),
    ];
    for j in &mut jobs {
        j.timeout_secs = 60;
    }
    let outs = scenario("mesh", &jobs);
    for (out, j) in outs.iter().zip(&jobs) {
        let text = String::from_utf8_lossy(&out.stdout);
        print!("{text}");
        assert_eq!(
            text.matches(&format!("MESH {} rank", j.group)).count(),
            j.np,
            "{}: {text}",
            j.group
        );
    }
}

/// The same three jobs, one of them creating blocking (with the first of
/// its peers, then the other without blocking) while the two others poll:
/// they must not wait for that job's program to reach their creation.
#[test]
fn three_jobs_mixing_blocking_and_nonblocking_creation_all_complete() {
    let mut jobs = vec![
        job(Mpi::OpenMpi, 2, "mix-a", &["mix-b", "mix-c"], true),
        job(Mpi::Mpich, 2, "mix-b", &["mix-c", "mix-a"], false),
        job(Mpi::Mpich, 1, "mix-c", &["mix-a", "mix-b"], false),
    ];
    jobs[0].env.push(("XTEST_BLOCKING".into(), "1".into()));
    for j in &mut jobs {
        j.timeout_secs = 60;
    }
    scenario("mesh", &jobs);
}

#[test]
fn deadline_when_the_remote_group_never_appears() {
    scenario(
        "deadline",
        &[job(Mpi::Mpich, 2, "lonely", &["nobody"], true)],
    );
    scenario(
        "deadline",
        &[job(Mpi::OpenMpi, 2, "lonely", &["nobody"], true)],
    );
}

#[test]
fn killed_remote_rank_gives_an_error_not_a_hang() {
    let jobs = pair("killed");
    let vmd = EmbeddedVmd::start();
    let a = launch(&vmd.addr, "killed", &jobs[0]);
    let b = launch(&vmd.addr, "killed", &jobs[1]);
    let out_a = finish(a, Duration::from_secs(120), "survivor");
    assert_passed(&out_a, "killed", &jobs[0]);
    // The victim's launcher tears its job down; it must end, with a failure.
    let out_b = finish(b, Duration::from_secs(60), "victim");
    assert!(
        !out_b.status.success(),
        "the killed job's launcher reported success"
    );
}

#[test]
fn intercomm_create_fails_early_when_the_remote_job_lost_a_member() {
    // A waits for B; B registers and loses a member: A is told at once.
    // (A job that starts after B's crash waits for B's re-run instead:
    // see the next test.)
    let jobs = pair("lost");
    let vmd = EmbeddedVmd::start();
    crashed_run_told_to_its_peer(&vmd, &jobs);
}

/// A (side A of "lost") registers and waits for B; then B registers and
/// its rank 0 is SIGKILLed: A must fail early with RemoteLost.
fn crashed_run_told_to_its_peer(vmd: &EmbeddedVmd, jobs: &[Job]) {
    // A asks for B only once B is gone (xtest waits for this file).
    let dir = std::env::temp_dir().join(format!("xtest-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let go = dir.join("go");
    let mut side_a = job(
        jobs[0].mpi,
        jobs[0].np,
        &jobs[0].group,
        &[&jobs[1].group],
        true,
    );
    side_a.env = vec![("XTEST_GO_FILE".into(), go.display().to_string())];
    let a = launch(&vmd.addr, "lost", &side_a);
    wait_until_frozen(vmd, &jobs[0].group, 0);
    let b = launch(&vmd.addr, "lost", &jobs[1]);
    let out_b = finish(b, Duration::from_secs(60), "victim");
    assert!(!out_b.status.success());
    std::fs::write(&go, b"go").expect("go file");
    let out_a = finish(a, Duration::from_secs(120), "survivor");
    let _ = std::fs::remove_dir_all(&dir);
    assert_passed(&out_a, "lost", &jobs[0]);
}

#[test]
fn rerun_under_the_names_of_a_crashed_run_forms_its_intercomm() {
    let jobs = pair("rerun");
    let vmd = EmbeddedVmd::start();
    crashed_run_told_to_its_peer(&vmd, &jobs);
    // B's group is now what its crash left (broken, no members). The re-run:
    // A registers again and waits on B's name before B is back...
    let a = launch(&vmd.addr, "allpairs", &jobs[0]);
    wait_until_frozen(&vmd, &jobs[0].group, 0);
    let b_name = &jobs[1].group;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // The vmd hears the killed ranks' connections close (hang guard only).
        let old = console_groups(&vmd).into_iter().find(|g| &g.name == b_name);
        let old = old.expect("the crashed run left its group");
        assert!(old.broken, "{old:?}");
        if old.size == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "killed ranks still members: {old:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // ...then B registers again under its old name.
    let b = launch(&vmd.addr, "allpairs", &jobs[1]);
    let out_a = finish(a, Duration::from_secs(240), &jobs[0].group);
    let out_b = finish(b, Duration::from_secs(240), b_name);
    assert_passed(&out_a, "allpairs", &jobs[0]);
    assert_passed(&out_b, "allpairs", &jobs[1]);
}

#[test]
fn leave_then_register_a_hundred_times_with_four_ranks() {
    // Both flavours at once, each job alone under its own name.
    let mut ompi = job(Mpi::OpenMpi, 4, "cycles-ompi", &["none"], true);
    let mut mpich = job(Mpi::Mpich, 4, "cycles-mpich", &["none"], true);
    ompi.timeout_secs = 600;
    mpich.timeout_secs = 600;
    let vmd = EmbeddedVmd::start();
    let children = [
        launch(&vmd.addr, "cycles", &ompi),
        launch(&vmd.addr, "cycles", &mpich),
    ];
    let [o, m] = children;
    let out_o = finish(o, Duration::from_secs(600), "cycles-ompi");
    let out_m = finish(m, Duration::from_secs(600), "cycles-mpich");
    assert_passed(&out_o, "cycles", &ompi);
    assert_passed(&out_m, "cycles", &mpich);
    let left = console_groups(&vmd);
    assert!(left.is_empty(), "groups left behind: {left:?}");
}

#[test]
fn a_rank_stopped_for_thirty_seconds_stays_a_member_and_its_intercomm_works() {
    let mut jobs = pair("pause");
    // The stopped job's ranks also ping their vmd (as they would off
    // loopback), so that side's grace is tested too.
    jobs[1].env = vec![("ISTHMUS_KEEPALIVE".into(), "10/60".into())];
    let vmd = EmbeddedVmd::start();
    let events = GroupWatcher::start(&vmd);
    scenario_on(&vmd, "pause", &jobs);
    let events = events.stop();
    let deaths: Vec<_> = events
        .iter()
        .filter_map(SessionEvent::group)
        .filter(|e| e.kind == GroupEventKind::MemberDied || e.group_broken)
        .collect();
    assert!(
        deaths.is_empty(),
        "a stopped rank was taken for dead: {deaths:?}"
    );
    let frozen = |g: &str| {
        events
            .iter()
            .filter_map(SessionEvent::group)
            .any(|e| e.group == g && e.kind == GroupEventKind::Frozen)
    };
    assert!(
        frozen(&jobs[0].group) && frozen(&jobs[1].group),
        "the watcher saw the run: {events:?}"
    );
}

/// Runs all jobs of a scenario at once on `vmd`, checks that each passed
/// and returns their outputs.
fn scenario_on(vmd: &EmbeddedVmd, scenario: &str, jobs: &[Job]) -> Vec<Output> {
    let children: Vec<Child> = jobs
        .iter()
        .map(|j| launch(&vmd.addr, scenario, j))
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .zip(jobs)
        .map(|(c, j)| finish(c, Duration::from_secs(240), &j.group))
        .collect();
    common::assert_all_passed(&outputs, scenario, jobs);
    outputs
}

/// The vmd's groups, through the console's paged listing.
fn console_groups(vmd: &EmbeddedVmd) -> Vec<isthmus_types::group::GroupSummary> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let console = Console::connect(&vmd.addr).await.expect("console");
        console.groups().await.expect("list groups")
    })
}

/// Waits until `group` is frozen at a generation above `after`; returns it.
fn wait_until_frozen(vmd: &EmbeddedVmd, group: &str, after: u64) -> u64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let console = Console::connect(&vmd.addr).await.expect("console");
        // A hang guard only.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(t) = console.group(group).await {
                if t.frozen && !t.broken && t.generation > after {
                    return t.generation;
                }
            }
            assert!(Instant::now() < deadline, "{group} never registered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}

/// Collects every group event of a vmd from its start until stopped.
struct GroupWatcher {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<SessionEvent>>,
}

impl GroupWatcher {
    fn start(vmd: &EmbeddedVmd) -> Self {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (addr, stopping) = (vmd.addr.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let session = Session::connect(&addr, "watcher").await.expect("watch");
                let mut rx = session.subscribe(&[]).await.expect("subscribe");
                ready_tx.send(()).expect("ready");
                let mut seen = Vec::new();
                loop {
                    match tokio::time::timeout(Duration::from_millis(200), rx.recv()).await {
                        Ok(Ok(ev)) => seen.push(ev),
                        Ok(Err(e)) => panic!("watcher lost events: {e}"),
                        Err(_) if stopping.load(Ordering::SeqCst) => return seen,
                        Err(_) => {}
                    }
                }
            })
        });
        ready
            .recv_timeout(Duration::from_secs(20))
            .expect("watcher started");
        GroupWatcher { stop, thread }
    }

    fn stop(self) -> Vec<SessionEvent> {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().expect("watcher thread")
    }
}

/// Issue 11's data path on real networks: one vmd on its filesystem Unix
/// socket (reachable from every network namespace), an Open MPI job in
/// namespace A listening on all its addresses, an MPICH job in namespace B
/// listening on its one address. They exchange checked messages both ways,
/// and every data connection is TCP from one namespace's address to the
/// other's: the abstract Unix socket (which does not exist across network
/// namespaces) is not tried, loopback is not published.
#[test]
fn jobs_in_two_network_namespaces_exchange_over_tcp_between_their_addresses() {
    let Some(hosts) = Hosts::for_test(2) else {
        return;
    };
    let (ha, hb) = (hosts.host(0).clone(), hosts.host(1).clone());
    let mut jobs = pair("hosts");
    jobs[1].np = 2;
    jobs[0].netns = Some(ha.clone());
    jobs[0].env = vec![("ISTHMUS_DATA_ADDR".into(), "0.0.0.0".into())];
    jobs[1].netns = Some(hb.clone());
    jobs[1].env = vec![("ISTHMUS_DATA_ADDR".into(), hb.addr.to_string())];
    let outs = scenario("routes", &jobs);
    assert_routes(&outs[0], &jobs[0], ha.addr, hb.addr, jobs[1].np);
    assert_routes(&outs[1], &jobs[1], hb.addr, ha.addr, jobs[0].np);
    drop(hosts);
}

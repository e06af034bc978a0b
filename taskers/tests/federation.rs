//! One namespace of hosts and jobs across vmds that share etcd (issue 11):
//! every vmd answers for every host. Hosts are network namespaces joined by
//! a bridge; etcd, the vmds and the taskers are real processes, each vmd
//! and tasker inside its host's namespace.

#![cfg(test)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use isthmus_proto as pb;
use isthmus_testkit::etcd::EtcdServer;
use isthmus_testkit::netns::{self, Hosts};
use pb::event::Kind;

fn prefix() -> String {
    format!("/isthmus-test/{}", uuid::Uuid::new_v4())
}

/// `etcdctl ARGS` against etcd at `url`, run inside `ns`; its stdout.
fn etcdctl(ns: &netns::Host, url: &str, args: &[&str]) -> String {
    let out = ns
        .command("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", url, "--command-timeout=5s"])
        .args(args)
        .output()
        .expect("etcdctl runs");
    assert!(out.status.success(), "etcdctl {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// etcd's current revision (every put or delete raises it by one).
fn etcd_revision(ns: &netns::Host, url: &str) -> u64 {
    let text = etcdctl(ns, url, &["endpoint", "status", "-w", "json"]);
    let at = text
        .find("\"revision\":")
        .expect("a revision in etcdctl's answer")
        + 11;
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("a revision number")
}

/// A vmd in `ns` named `host`, sharing etcd at `etcd` under `prefix`.
fn vmd_in(ns: &netns::Host, host: &str, etcd: &str, prefix: &str, extra: &[&str]) -> Vmd {
    let mut args = vec![
        "--etcd",
        etcd,
        "--etcd-prefix",
        prefix,
        "--etcd-lease-ttl",
        "3",
        "--slots",
        "4",
    ];
    args.extend_from_slice(extra);
    Vmd::start_in(Some(ns), host, &args)
}

/// Waits until `vmd` lists every host of `names`.
async fn wait_hosts(vmd: &Vmd, names: &[&str]) -> Vec<pb::HostInfo> {
    let mut c = vmd.client().await;
    let end = Instant::now() + T;
    loop {
        let hosts = c
            .list_hosts(pb::ListHostsRequest {})
            .await
            .expect("hosts")
            .into_inner()
            .hosts;
        if names.iter().all(|n| hosts.iter().any(|h| h.name == *n)) {
            return hosts;
        }
        assert!(Instant::now() < end, "{names:?} not all listed: {hosts:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The hosts `vmd` lists once `gone` is no longer among them (deadline `T`).
async fn wait_host_gone(vmd: &Vmd, gone: &str) -> Vec<pb::HostInfo> {
    let mut c = vmd.client().await;
    let end = Instant::now() + T;
    loop {
        let hosts = c
            .list_hosts(pb::ListHostsRequest {})
            .await
            .expect("hosts")
            .into_inner()
            .hosts;
        if !hosts.iter().any(|h| h.name == gone) {
            return hosts;
        }
        assert!(Instant::now() < end, "{gone} still listed: {hosts:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn host_event(e: &pb::Event, kind: pb::HostEventKind, name: &str) -> bool {
    matches!(&e.kind, Some(Kind::Host(h))
        if h.kind == kind as i32 && h.host.as_ref().is_some_and(|i| i.name == name))
}

/// Three hosts, a vmd on each, etcd on host C, an exec tasker on host B
/// only. A spawn asked of host C's vmd lands on host B (the only host that
/// can run it); its output, read on host A, shows host B's address; every
/// vmd lists the job on host B. A job on B that prints 2000 lines: host A
/// gets them all, in order, for far fewer etcd puts than lines. Then host B
/// fails (its vmd and tasker are killed): a watcher on host A is told
/// HOST_FAILED when B's lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawn_asked_of_one_host_runs_on_another_and_every_host_sees_it() {
    let Some(hosts) = Hosts::for_test(3) else {
        return;
    };
    let (ha, hb, hc) = (hosts.host(0), hosts.host(1), hosts.host(2));
    let etcd = EtcdServer::start_in(hc);
    let p = prefix();
    let a = vmd_in(ha, "host-a", &etcd.client_url, &p, &[]);
    let mut b = vmd_in(hb, "host-b", &etcd.client_url, &p, &[]);
    let c = vmd_in(hc, "host-c", &etcd.client_url, &p, &[]);
    let mut tasker_b = tasker_in(hb, &b, "exec").await;
    for v in [&a, &b, &c] {
        let listed = wait_hosts(v, &["host-a", "host-b", "host-c"]).await;
        assert_eq!(listed.len(), 3, "{listed:?}");
        let row_b = listed.iter().find(|h| h.name == "host-b").unwrap();
        // Host b's row, as b's own vmd publishes it, reaches every vmd.
        let end = Instant::now() + T;
        let mut row_b = row_b.clone();
        while !row_b.taskers.iter().any(|t| t == "exec") {
            assert!(Instant::now() < end, "b's tasker not listed: {row_b:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
            row_b = wait_hosts(v, &["host-b"])
                .await
                .into_iter()
                .find(|h| h.name == "host-b")
                .unwrap();
        }
        assert_eq!(row_b.slots, 4);
    }
    let mut on_a = watch(
        &a,
        &[
            pb::EventKind::TaskOutput,
            pb::EventKind::JobExit,
            pb::EventKind::HostFailed,
        ],
        false,
    )
    .await;

    let mut on_c = c.client().await;
    let spawned = on_c
        .spawn(spawn_req(
            "exec",
            2,
            "sh",
            &[
                "-c",
                "ip -4 -o addr show scope global; echo rank $ISTHMUS_RANK",
            ],
        ))
        .await
        .expect("spawn asked of host c")
        .into_inner();
    assert_eq!(spawned.host, "host-b", "only host b has an exec tasker");

    let evs = job_events(&mut on_a, spawned.job).await;
    for rank in 0..2 {
        let out = lines(&evs, rank, pb::OutputStream::Stdout);
        assert!(
            out.iter().any(|l| l.contains(&hb.addr.to_string())),
            "rank {rank} ran in host b's namespace ({}): {out:?}",
            hb.addr
        );
        assert!(out.contains(&format!("rank {rank}")), "{out:?}");
    }
    assert_eq!(job_exit(&evs).state, pb::JobState::JobExited as i32);
    for v in [&a, &b, &c] {
        let mut client = v.client().await;
        let end = Instant::now() + T;
        loop {
            let jobs = client
                .list_jobs(pb::ListJobsRequest {
                    all: true,
                    every_user: true,
                })
                .await
                .expect("jobs")
                .into_inner()
                .jobs;
            if let Some(j) = jobs.iter().find(|j| j.job == spawned.job) {
                if j.state == pb::JobState::JobExited as i32 {
                    assert_eq!(j.host, "host-b");
                    break;
                }
            }
            assert!(Instant::now() < end, "job not listed as exited: {jobs:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // Job ids are the virtual machine's: a second spawn, asked of host a,
    // gets another id, and a kill asked of host c reaches the job on b.
    let mut on_a_client = a.client().await;
    let second = on_a_client
        .spawn(spawn_req("exec", 1, "sleep", &["600"]))
        .await
        .expect("spawn asked of host a")
        .into_inner();
    assert_eq!(second.host, "host-b");
    assert_ne!(second.job, spawned.job);
    on_c.kill_job(pb::KillRequest { job: second.job })
        .await
        .expect("kill asked of host c");
    let end = next_where(
        &mut on_a,
        "the killed job's exit",
        |e| matches!(&e.kind, Some(Kind::JobExit(x)) if x.job == second.job),
    )
    .await;
    let Some(Kind::JobExit(end)) = end.kind else {
        unreachable!()
    };
    assert_eq!(end.state, pb::JobState::JobKilled as i32, "{end:?}");

    // A job that prints a lot: every line reaches host a, in order, and
    // host b publishes them in batches (a few etcd puts, not one per line).
    const LINES: usize = 2000;
    let before = etcd_revision(hc, &etcd.client_url);
    let printer = on_c
        .spawn(spawn_req("exec", 1, "seq", &["1", &LINES.to_string()]))
        .await
        .expect("spawn asked of host c")
        .into_inner();
    assert_eq!(printer.host, "host-b");
    let evs = job_events(&mut on_a, printer.job).await;
    let want: Vec<String> = (1..=LINES).map(|i| i.to_string()).collect();
    assert_eq!(lines(&evs, 0, pb::OutputStream::Stdout), want);
    let puts = etcd_revision(hc, &etcd.client_url) - before;
    println!("{puts} etcd revisions for a job of {LINES} lines");
    assert!(
        puts < (LINES / 10) as u64,
        "{puts} etcd revisions for a job of {LINES} lines: output is not batched"
    );

    // Host b fails: its vmd and tasker die without a word.
    b.kill9();
    tasker_b.signal(libc::SIGKILL);
    let _ = tasker_b.0.wait();
    let failed = next_where(&mut on_a, "HOST_FAILED of host b", |e| {
        host_event(e, pb::HostEventKind::Failed, "host-b")
    })
    .await;
    let Some(Kind::Host(failed)) = failed.kind else {
        unreachable!()
    };
    assert!(failed.reason.contains("lease"), "{failed:?}");
    // Host A was told; host C learns of the lease's end from its own watch,
    // a moment later or sooner.
    let left = wait_host_gone(&c, "host-b").await;
    for name in ["host-a", "host-c"] {
        assert!(left.iter().any(|h| h.name == name), "{name}: {left:?}");
    }
    drop((a, c, etcd));
    drop(hosts);
}

/// A spawn placed on a host whose row promised slots it no longer has is
/// refused by that host and placed again elsewhere. Host D is the test
/// itself: a host row with 64 free slots (so "most free" picks it) whose
/// orders the test answers, as a vmd whose slots went meanwhile would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_refuses_for_want_of_slots_is_passed_over() {
    let Some(hosts) = Hosts::for_test(2) else {
        return;
    };
    let (ha, hb) = (hosts.host(0), hosts.host(1));
    let etcd = EtcdServer::start_in(ha);
    let p = prefix();
    let a = vmd_in(ha, "host-a", &etcd.client_url, &p, &[]);
    let b = vmd_in(hb, "host-b", &etcd.client_url, &p, &[]);
    let _tasker_b = tasker_in(hb, &b, "exec").await;
    let etcdctl = |args: &[&str]| etcdctl(ha, &etcd.client_url, args);
    let mut d = isthmus_types::host::Host::from_decl(
        isthmus_types::host::HostDecl {
            name: "host-d".into(),
            slots: 64,
            offers: vec![],
            addr: "unix:/nonexistent/host-d.sock".into(),
            peer_addr: String::new(),
        },
        isthmus_types::host::HostState::Up,
        false,
    );
    d.taskers.insert("exec".into(), 1);
    let row = isthmus_rm_etcd::HostRow {
        host: d,
        leaving: false,
    };
    etcdctl(&[
        "put",
        &format!("{p}/rm/h/host-d"),
        &serde_json::to_string(&row).unwrap(),
    ]);
    // Host a sees host d, with its exec tasker, and host b's.
    let end = Instant::now() + T;
    loop {
        let listed = wait_hosts(&a, &["host-a", "host-b", "host-d"]).await;
        let exec = |n: &str| {
            listed
                .iter()
                .any(|h| h.name == n && h.taskers.iter().any(|t| t == "exec"))
        };
        if exec("host-b") && exec("host-d") {
            break;
        }
        assert!(
            Instant::now() < end,
            "hosts b and d not both listed with exec: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut on_a = a.client().await;
    let mut req = spawn_req("exec", 1, "true", &[]);
    req.placement = Some(pb::spawn_request::Placement::MostFree(true));
    let spawn = tokio::spawn(async move { on_a.spawn(req).await });
    // The order for host d: refuse it for want of slots.
    let orders = format!("{p}/rm/o/host-d/");
    let end = Instant::now() + T;
    let order = loop {
        let keys = etcdctl(&["get", "--prefix", "--keys-only", &orders]);
        if let Some(k) = keys.lines().find(|l| !l.is_empty()) {
            break k.to_string();
        }
        assert!(Instant::now() < end, "no order reached host d");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let id = order.rsplit('/').next().unwrap();
    let answer = isthmus_rm_etcd::Answer::Refused(isthmus_types::refusal::Refusal::new(
        isthmus_types::refusal::RefusalKind::ResourceExhausted,
        "not enough slots: host-d has 0 free of 64 slots",
    ));
    etcdctl(&[
        "put",
        &format!("{p}/rm/a/{id}"),
        &serde_json::to_string(&answer).unwrap(),
    ]);
    let placed = tokio::time::timeout(T, spawn)
        .await
        .expect("the spawn answers")
        .unwrap()
        .expect("placed again after host d refused")
        .into_inner();
    assert_eq!(placed.host, "host-b", "{placed:?}");
    let again = etcdctl(&["get", "--prefix", "--keys-only", &orders]);
    assert!(
        again.lines().filter(|l| !l.is_empty()).count() <= 1,
        "host d was asked again: {again}"
    );
    drop((a, b, etcd));
    drop(hosts);
}

/// `add-host` on host A's vmd starts host B's vmd inside B's namespace
/// through the configured host-start command; `delete-host` stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_a_host_starts_its_vmd_and_deleting_it_stops_it() {
    let Some(hosts) = Hosts::for_test(2) else {
        return;
    };
    let (ha, hb) = (hosts.host(0), hosts.host(1));
    let etcd = EtcdServer::start_in(ha);
    let p = prefix();
    let dir = TempDir::new("host-start");
    let start = format!(
        "exec ip netns exec {} {} --etcd {} --etcd-prefix {p} --etcd-lease-ttl 3 --runtime-dir {}/{{host}} --host-name {{host}} --slots 2",
        hb.netns,
        bin("vmd").display(),
        etcd.client_url,
        dir.0.display(),
    );
    let a = vmd_in(
        ha,
        "host-a",
        &etcd.client_url,
        &p,
        &["--host-start", &start],
    );
    let mut events = watch(
        &a,
        &[pb::EventKind::HostAdded, pb::EventKind::HostDeleted],
        false,
    )
    .await;
    let console = a.console().await;

    let added = console
        .add_host(isthmus_types::host::HostDecl {
            name: "host-b".into(),
            slots: 0,
            offers: vec![],
            addr: String::new(),
            peer_addr: String::new(),
        })
        .await
        .expect("add host b");
    assert_eq!(added.name, "host-b");
    assert_eq!(added.slots, 2, "the row b's own vmd published");
    next_where(&mut events, "HOST_ADDED of host b", |e| {
        host_event(e, pb::HostEventKind::Added, "host-b")
    })
    .await;
    let check = console.check_host("host-b").await.expect("check b");
    assert!(check.responding, "{check:?}");
    // b's vmd runs in b's namespace: its socket is in the runtime directory
    // the command gave it, and its process's network namespace is b's.
    let socket = dir.0.join("host-b").join("vmd.sock");
    assert!(socket.exists(), "{}", socket.display());
    let pids = std::process::Command::new("ip")
        .args(["netns", "pids", &hb.netns])
        .output()
        .expect("ip netns pids");
    let pids = String::from_utf8_lossy(&pids.stdout).to_string();
    assert!(
        pids.lines().any(
            |pid| std::fs::read_to_string(format!("/proc/{}/comm", pid.trim()))
                .is_ok_and(|c| c.trim() == "vmd")
        ),
        "no vmd in b's namespace: {pids:?}"
    );

    let lost = console.delete_host("host-b").await.expect("delete b");
    assert_eq!(lost, 0);
    next_where(&mut events, "HOST_DELETED of host b", |e| {
        host_event(e, pb::HostEventKind::Deleted, "host-b")
    })
    .await;
    let end = Instant::now() + T;
    while socket.exists() {
        assert!(Instant::now() < end, "b's vmd did not stop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let listed = console.hosts().await.expect("hosts");
    assert!(!listed.iter().any(|h| h.name == "host-b"), "{listed:?}");
    drop((a, etcd));
    drop(hosts);
}

/// A host whose start command fails is refused with what the command said,
/// and nothing is added.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_start_command_fails_is_refused_with_its_output() {
    let etcd = isthmus_testkit::etcd::shared();
    let p = prefix();
    let a = Vmd::start(
        "host-a",
        &[
            "--etcd",
            etcd,
            "--etcd-prefix",
            &p,
            "--host-start",
            "echo no route to {host} >&2; exit 3",
        ],
    );
    let console = a.console().await;
    let err = console
        .add_host(isthmus_types::host::HostDecl {
            name: "host-z".into(),
            slots: 0,
            offers: vec![],
            addr: String::new(),
            peer_addr: String::new(),
        })
        .await
        .expect_err("the start command fails");
    let message = err.to_string();
    assert!(message.contains("no route to host-z"), "{message}");
    assert!(message.contains("exit status: 3"), "{message}");
    let hosts = console.hosts().await.expect("hosts");
    assert!(!hosts.iter().any(|h| h.name == "host-z"), "{hosts:?}");
    // A name that is not a host name never reaches the shell.
    let err = console
        .add_host(isthmus_types::host::HostDecl {
            name: "x; rm -rf /".into(),
            slots: 0,
            offers: vec![],
            addr: String::new(),
            peer_addr: String::new(),
        })
        .await
        .expect_err("an invalid name");
    assert!(err.to_string().contains("not valid"), "{err}");
}

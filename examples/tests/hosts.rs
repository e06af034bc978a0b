//! One virtual machine across hosts: vmds that keep their groups in one
//! etcd serve one namespace. Real vmd processes (each its own runtime
//! directory and host name), a real etcd, real Open MPI and MPICH jobs,
//! each started on "its own" vmd.

#![cfg(test)]

mod common;

use std::time::{Duration, Instant};

use isthmus_client::{Console, Session, SessionOptions};
use isthmus_testkit::etcd::EtcdServer;
use isthmus_testkit::{finish, Vmd, T};
use isthmus_types::event::{NotificationKind, WatchEvent, WatchFilter};
use isthmus_types::group::GroupEventKind;

use common::{assert_passed, assert_routes, job, launch, Mpi, SteadyFiles};
use isthmus_testkit::netns::Hosts;

/// A vmd named `host` keeping its groups in etcd at `etcd` under `prefix`.
fn etcd_vmd(host: &str, etcd: &str, prefix: &str, lease_ttl: u64) -> Vmd {
    etcd_vmd_with(host, etcd, prefix, lease_ttl, &[])
}

/// [`etcd_vmd`] with more arguments.
fn etcd_vmd_with(host: &str, etcd: &str, prefix: &str, lease_ttl: u64, extra: &[&str]) -> Vmd {
    let ttl = lease_ttl.to_string();
    let mut args = vec![
        "--etcd",
        etcd,
        "--etcd-prefix",
        prefix,
        "--etcd-lease-ttl",
        ttl.as_str(),
    ];
    args.extend_from_slice(extra);
    Vmd::start(host, &args)
}

fn prefix() -> String {
    format!("/isthmus-test/{}", uuid::Uuid::new_v4())
}

/// Open MPI on `a`'s vmd, MPICH on `b`'s, running `scenario` against each
/// other.
fn pair_on(a: &Vmd, b: &Vmd, scenario: &str, name: &str) {
    let (ga, gb) = (format!("{name}-ompi"), format!("{name}-mpich"));
    let ja = job(Mpi::OpenMpi, 2, &ga, &[&gb], true);
    let jb = job(Mpi::Mpich, 2, &gb, &[&ga], false);
    let ca = launch(&a.addr, scenario, &ja);
    // Two launchers started in the same instant race on Open MPI's
    // session directory.
    std::thread::sleep(Duration::from_millis(300));
    let cb = launch(&b.addr, scenario, &jb);
    let oa = finish(ca, Duration::from_secs(240), &ga);
    let ob = finish(cb, Duration::from_secs(240), &gb);
    assert_passed(&oa, scenario, &ja);
    assert_passed(&ob, scenario, &jb);
}

#[test]
fn jobs_started_on_two_vmds_sharing_etcd_form_an_intercommunicator() {
    let etcd = EtcdServer::start();
    let p = prefix();
    let a = etcd_vmd("host-a", &etcd.client_url, &p, 15);
    let b = etcd_vmd("host-b", &etcd.client_url, &p, 15);
    pair_on(&a, &b, "allpairs", "two-vmds");
}

/// Issue 11, item 5: one member of a three-member etcd cluster is lost
/// (SIGKILL: the member the vmds were talking to) while an Open MPI job on
/// host A and an MPICH job on host B exchange over their intercommunicator.
/// The exchange goes on, the jobs leave through etcd's other members, host
/// B hears of no death, and a new pair forms afterwards.
#[test]
fn losing_one_of_three_etcd_members_changes_nothing_for_users() {
    let mut cluster = EtcdServer::cluster(3);
    let urls: Vec<String> = cluster.iter().map(|m| m.client_url.clone()).collect();
    let urls = urls.join(",");
    let p = prefix();
    let a = etcd_vmd("host-a", &urls, &p, 15);
    let b = etcd_vmd("host-b", &urls, &p, 15);
    let mut pair = SteadyPair::start(&a, &b, "loss-ompi", "loss-mpich");
    let before = pair.advance(0, 1, "before its first round");
    cluster[0].kill();
    pair.advance(before, 20, "after an etcd member was lost");
    pair.finish();
    pair_on(&a, &b, "allpairs", "after-loss");
}

/// Waits for a group event of `kind` on `group` from `events`.
async fn group_event(
    events: &mut isthmus_client::Events,
    group: &str,
    kind: GroupEventKind,
    within: Duration,
) -> isthmus_types::group::GroupEvent {
    let end = Instant::now() + within;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let next = tokio::time::timeout(left, events.next())
            .await
            .unwrap_or_else(|_| panic!("no {kind:?} of {group} within {within:?}"))
            .expect("watch stream")
            .expect("watch stream open");
        if let WatchEvent::Group(e) = next.event {
            if e.group == group && e.kind == kind {
                return e;
            }
        }
    }
}

/// Waits for the death of instance 0 of the frozen `group`, which breaks it.
async fn assert_died_breaking(events: &mut isthmus_client::Events, group: &str) {
    let died = group_event(events, group, GroupEventKind::MemberDied, T).await;
    assert_eq!(died.member.map(|m| m.instance), Some(0));
    assert!(
        died.group_broken,
        "a frozen group that lost a member is broken"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vmd_down_past_its_lease_has_its_tasks_declared_dead_on_the_other_hosts() {
    let etcd = EtcdServer::start();
    let p = prefix();
    let a = etcd_vmd("host-a", &etcd.client_url, &p, 3);
    let b = etcd_vmd("host-b", &etcd.client_url, &p, 3);
    let ocean = Session::connect(&a.addr, "ocean")
        .await
        .expect("session on a");
    ocean
        .join("ocean", Some(0), b"ep".to_vec())
        .await
        .expect("join");
    ocean
        .freeze("ocean", 1, Duration::from_secs(10))
        .await
        .expect("freeze");

    // Host b sees host a's group, with the member on host-a.
    let on_b = Console::connect(&b.addr).await.expect("console on b");
    let table = on_b.group("ocean").await.expect("b sees a's group");
    assert_eq!(table.members.len(), 1);
    assert_eq!(table.members[0].host, "host-a");
    let mut events = on_b
        .watch(WatchFilter {
            groups: vec!["ocean".into()],
            kinds: vec![NotificationKind::Group],
            ..Default::default()
        })
        .await
        .expect("watch on b");

    a.proc.signal(libc::SIGKILL);
    assert_died_breaking(&mut events, "ocean").await;
    let table = on_b.group("ocean").await.expect("tombstone");
    assert!(table.broken && table.members.is_empty());
}

/// Three hosts as network namespaces joined by a bridge: etcd on host C,
/// a vmd on host A and one on host B, each keeping groups in that etcd.
/// An Open MPI job started on host A and an MPICH job started on host B,
/// each through its own vmd, form an intercommunicator and exchange over
/// TCP between the two hosts' addresses.
#[test]
fn jobs_on_two_hosts_couple_over_tcp_through_one_namespace_in_etcd() {
    let Some(hosts) = Hosts::for_test(3) else {
        return;
    };
    let (ha, hb, hc) = (hosts.host(0), hosts.host(1), hosts.host(2));
    let etcd = EtcdServer::start_in(hc);
    let p = prefix();
    let etcd_args = [
        "--etcd",
        etcd.client_url.as_str(),
        "--etcd-prefix",
        p.as_str(),
    ];
    // Each vmd tells its tasks the host's data address: the jobs are
    // started with nothing but ISTHMUS_VMD.
    let (da, db) = (ha.addr.to_string(), hb.addr.to_string());
    let a = Vmd::start_in(
        Some(ha),
        "host-a",
        &[&etcd_args[..], &["--data-addr", &da]].concat(),
    );
    let b = Vmd::start_in(
        Some(hb),
        "host-b",
        &[&etcd_args[..], &["--data-addr", &db]].concat(),
    );
    let mut ja = job(Mpi::OpenMpi, 2, "ns-ompi", &["ns-mpich"], true);
    ja.netns = Some(ha.clone());
    let mut jb = job(Mpi::Mpich, 2, "ns-mpich", &["ns-ompi"], false);
    jb.netns = Some(hb.clone());
    let ca = launch(&a.addr, "routes", &ja);
    std::thread::sleep(Duration::from_millis(300));
    let cb = launch(&b.addr, "routes", &jb);
    let oa = finish(ca, Duration::from_secs(240), &ja.group);
    let ob = finish(cb, Duration::from_secs(240), &jb.group);
    assert_passed(&oa, "routes", &ja);
    assert_passed(&ob, "routes", &jb);
    assert_routes(&oa, &ja, ha.addr, hb.addr, jb.np);
    assert_routes(&ob, &jb, hb.addr, ha.addr, ja.np);
    drop((a, b, etcd));
    drop(hosts);
}

/// An Open MPI job on `a`'s vmd and an MPICH job on `b`'s exchanging round
/// after round (the `steady` scenario) until told to stop, with everything
/// host B hears about their groups recorded from before the first round.
struct SteadyPair {
    ca: std::process::Child,
    cb: std::process::Child,
    ja: common::Job,
    jb: common::Job,
    files: SteadyFiles,
    rt: tokio::runtime::Runtime,
    seen: tokio::sync::mpsc::UnboundedReceiver<isthmus_types::group::GroupEvent>,
}

impl SteadyPair {
    fn start(a: &Vmd, b: &Vmd, ga: &str, gb: &str) -> SteadyPair {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (seen_tx, seen) = tokio::sync::mpsc::unbounded_channel();
        let mut events = rt.block_on(async {
            let on_b = Console::connect(&b.addr).await.expect("console on b");
            on_b.watch(WatchFilter {
                groups: vec![ga.into(), gb.into()],
                kinds: vec![NotificationKind::Group],
                ..Default::default()
            })
            .await
            .expect("watch on b")
        });
        rt.spawn(async move {
            while let Ok(Some(n)) = events.next().await {
                if let WatchEvent::Group(e) = n.event {
                    if seen_tx.send(e).is_err() {
                        return;
                    }
                }
            }
        });
        let files = SteadyFiles::new("steady");
        let mut ja = job(Mpi::OpenMpi, 2, ga, &[gb], true);
        ja.env = files.env.clone();
        let mut jb = job(Mpi::Mpich, 2, gb, &[ga], false);
        jb.env = files.env.clone();
        let ca = launch(&a.addr, "steady", &ja);
        std::thread::sleep(Duration::from_millis(300));
        let cb = launch(&b.addr, "steady", &jb);
        SteadyPair {
            ca,
            cb,
            ja,
            jb,
            files,
            rt,
            seen,
        }
    }

    /// Waits until the pair has done `more` rounds beyond `since`; returns
    /// the count.
    fn advance(&mut self, since: u64, more: u64, what: &str) -> u64 {
        let started = Instant::now();
        loop {
            let done = self.files.rounds();
            if done >= since + more {
                return done;
            }
            let exited = [&mut self.ca, &mut self.cb]
                .into_iter()
                .any(|c| matches!(c.try_wait(), Ok(Some(_))));
            assert!(!exited, "a job ended {what}");
            assert!(
                started.elapsed() < Duration::from_secs(240),
                "the pair stopped exchanging {what} (at round {done})"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the pair, checks both jobs passed and left (their groups
    /// destroyed), that host B was told of no death, and that every Open
    /// MPI rank left.
    fn finish(mut self) {
        self.files.stop();
        let (ga, gb) = (self.ja.group.clone(), self.jb.group.clone());
        let oa = finish(self.ca, Duration::from_secs(240), &ga);
        let ob = finish(self.cb, Duration::from_secs(240), &gb);
        assert_passed(&oa, "steady", &self.ja);
        assert_passed(&ob, "steady", &self.jb);
        let mut destroyed = std::collections::HashSet::new();
        let mut heard = Vec::new();
        let seen = &mut self.seen;
        self.rt.block_on(async {
            while destroyed.len() < 2 {
                let e = tokio::time::timeout(T, seen.recv())
                    .await
                    .unwrap_or_else(|_| panic!("groups not destroyed; heard {heard:?}"))
                    .expect("watch on b open");
                if e.kind == GroupEventKind::Destroyed {
                    destroyed.insert(e.group.clone());
                }
                heard.push(e);
            }
        });
        let deaths: Vec<_> = heard
            .iter()
            .filter(|e| e.kind == GroupEventKind::MemberDied)
            .collect();
        assert!(deaths.is_empty(), "host B was told of deaths: {deaths:?}");
        let left = heard
            .iter()
            .filter(|e| e.kind == GroupEventKind::Left && e.group == ga)
            .count();
        assert_eq!(left, self.ja.np, "every Open MPI rank left");
    }
}

/// Issue 11, item 5: kill -9 of one vmd and a restart within the lease
/// period. An Open MPI job on host A and an MPICH job on host B exchange
/// round after round over their intercommunicator while A's vmd is killed
/// and started again: the Open MPI ranks' sessions resume, the exchange
/// never notices (the data path is direct), the jobs leave at the end
/// through the restarted vmd, and host B never hears of a death.
#[test]
fn a_vmd_killed_and_restarted_within_its_lease_leaves_a_running_pair_untouched() {
    let etcd = EtcdServer::start();
    let p = prefix();
    let mut a = etcd_vmd("host-a", &etcd.client_url, &p, 15);
    let b = etcd_vmd("host-b", &etcd.client_url, &p, 15);
    let mut pair = SteadyPair::start(&a, &b, "restart-ompi", "restart-mpich");
    let before = pair.advance(0, 1, "before its first round");
    // The data path is direct: the pair exchanges with A's vmd dead, and
    // after it is back.
    a.kill9();
    let during = pair.advance(before, 20, "while A's vmd was down");
    a.start_again();
    pair.advance(during, 20, "after A's vmd restarted");
    pair.finish();
    drop((a, b, etcd));
}

/// A vmd restarted with its old lease does not keep the tasks of its
/// previous run forever: one whose session does not come back within the
/// resume grace is closed as dead (host B is told), while one that resumed
/// keeps its groups.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_does_not_resume_after_its_vmd_restarts_is_reported_dead() {
    let etcd = EtcdServer::start();
    let p = prefix();
    let mut a = etcd_vmd_with("host-a", &etcd.client_url, &p, 15, &["--resume-grace", "3"]);
    let b = etcd_vmd("host-b", &etcd.client_url, &p, 15);
    // A session that never resumes (as if its process were gone), and one
    // that does.
    let never = SessionOptions {
        resume_window: Duration::ZERO,
    };
    let ghost = Session::connect_with(&a.addr, "ghost", never)
        .await
        .expect("session on a");
    let survivor = Session::connect_with(&a.addr, "survivor", SessionOptions::default())
        .await
        .expect("session on a");
    for (s, g) in [(&ghost, "ghost"), (&survivor, "survivor")] {
        s.join(g, Some(0), b"ep".to_vec()).await.expect("join");
        s.freeze(g, 1, Duration::from_secs(10))
            .await
            .expect("freeze");
    }
    let on_b = Console::connect(&b.addr).await.expect("console on b");
    let mut events = on_b
        .watch(WatchFilter {
            groups: vec!["ghost".into(), "survivor".into()],
            kinds: vec![NotificationKind::Group],
            ..Default::default()
        })
        .await
        .expect("watch on b");

    tokio::task::block_in_place(|| a.restart());
    // The survivor resumes: a call goes through the restarted vmd.
    let table = survivor.members("survivor").await.expect("resumed");
    assert_eq!(table.members.len(), 1);
    assert_eq!(table.members[0].task, survivor.task());

    // The ghost never came back: after the grace, everyone is told.
    assert_died_breaking(&mut events, "ghost").await;

    // The survivor still holds its group, and leaves it as a live task.
    let table = on_b.group("survivor").await.expect("survivor's group");
    assert!(!table.broken && table.members.len() == 1, "{table:?}");
    survivor
        .leave("survivor")
        .await
        .expect("leave after the resume");
    let left = group_event(&mut events, "survivor", GroupEventKind::Left, T).await;
    assert_eq!(left.member.map(|m| m.instance), Some(0));
    drop((ghost, survivor, a, b, etcd));
}

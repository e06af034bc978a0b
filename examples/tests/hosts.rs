//! One virtual machine across hosts: vmds that keep their groups in one
//! etcd serve one namespace. Real vmd processes (each its own runtime
//! directory and host name), a real etcd, real Open MPI and MPICH jobs,
//! each started on "its own" vmd.

mod common;

use std::time::{Duration, Instant};

use isthmus_client::{Console, Session};
use isthmus_testkit::etcd::EtcdServer;
use isthmus_testkit::{finish, Vmd, T};
use isthmus_types::event::{NotificationKind, WatchEvent, WatchFilter};
use isthmus_types::group::GroupEventKind;

use common::{assert_passed, assert_routes, job, launch, Mpi};
use isthmus_testkit::netns::Hosts;

/// A vmd named `host` keeping its groups in etcd at `etcd` under `prefix`.
fn etcd_vmd(host: &str, etcd: &str, prefix: &str, lease_ttl: u64) -> Vmd {
    Vmd::start(
        host,
        &[
            "--etcd",
            etcd,
            "--etcd-prefix",
            prefix,
            "--etcd-lease-ttl",
            &lease_ttl.to_string(),
        ],
    )
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

#[test]
fn losing_one_of_three_etcd_members_changes_nothing_for_users() {
    let mut cluster = EtcdServer::cluster(3);
    let urls: Vec<String> = cluster.iter().map(|m| m.client_url.clone()).collect();
    let urls = urls.join(",");
    let p = prefix();
    let a = etcd_vmd("host-a", &urls, &p, 15);
    let b = etcd_vmd("host-b", &urls, &p, 15);
    pair_on(&a, &b, "allpairs", "before-loss");
    cluster[0].kill();
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
    let died = group_event(&mut events, "ocean", GroupEventKind::MemberDied, T).await;
    assert_eq!(died.member.map(|m| m.instance), Some(0));
    assert!(
        died.group_broken,
        "a frozen group that lost a member is broken"
    );
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
    if std::env::var_os("ISTHMUS_SKIP_NETNS").is_some() {
        eprintln!("skipped: ISTHMUS_SKIP_NETNS is set");
        return;
    }
    let hosts = Hosts::new(3)
        .expect("network namespaces for this test (run as root, or set ISTHMUS_SKIP_NETNS=1)");
    let (ha, hb, hc) = (hosts.host(0), hosts.host(1), hosts.host(2));
    let etcd = EtcdServer::start_in(hc);
    let p = prefix();
    let etcd_args = [
        "--etcd",
        etcd.client_url.as_str(),
        "--etcd-prefix",
        p.as_str(),
    ];
    let a = Vmd::start_in(Some(ha), "host-a", &etcd_args);
    let b = Vmd::start_in(Some(hb), "host-b", &etcd_args);
    let mut ja = job(Mpi::OpenMpi, 2, "ns-ompi", &["ns-mpich"], true);
    ja.netns = Some(ha.clone());
    ja.env = vec![("ISTHMUS_DATA_ADDR".into(), ha.addr.to_string())];
    let mut jb = job(Mpi::Mpich, 2, "ns-mpich", &["ns-ompi"], false);
    jb.netns = Some(hb.clone());
    jb.env = vec![("ISTHMUS_DATA_ADDR".into(), hb.addr.to_string())];
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

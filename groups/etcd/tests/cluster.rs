//! The etcd store as a virtual machine of several vmds uses it: stores
//! sharing one prefix are one namespace; a store whose lease expires has
//! its tasks declared dead to the others; a store that comes back within
//! its lease keeps them; losing one member of three changes nothing.

use std::time::Duration;

use isthmus_groups::{GroupEventKind, Groups, TaskId};
use isthmus_groups_etcd::{EtcdConfig, EtcdStore};
use isthmus_testkit::etcd::EtcdServer;

const GUARD: Duration = Duration::from_secs(30);

fn config(urls: &[String], prefix: &str, ttl: u64) -> EtcdConfig {
    let mut c = EtcdConfig::new(urls.to_vec());
    c.prefix = prefix.to_string();
    c.lease_ttl = Duration::from_secs(ttl);
    c
}

fn prefix() -> String {
    format!("/isthmus-test/{}", uuid::Uuid::new_v4())
}

async fn open(urls: &[String], prefix: &str, ttl: u64) -> (Groups, i64) {
    let store = EtcdStore::connect(config(urls, prefix, ttl))
        .await
        .expect("open the etcd store");
    let lease = store.lease_id();
    (Groups::new(Box::new(store)), lease)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_prefix_are_one_namespace() {
    let etcd = EtcdServer::start();
    let urls = vec![etcd.client_url.clone()];
    let p = prefix();
    let (a, _) = open(&urls, &p, 10).await;
    let (b, _) = open(&urls, &p, 10).await;
    let (ta, tb) = (TaskId::new_v4(), TaskId::new_v4());
    a.open_task(ta, "host-a").await.unwrap();
    b.open_task(tb, "host-b").await.unwrap();
    let mut seen_on_b = b.subscribe();
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.wait_frozen("ocean", GUARD).await })
    };
    assert_eq!(a.join("ocean", ta, None, b"a".to_vec()).await.unwrap(), 0);
    assert_eq!(b.join("ocean", tb, None, b"b".to_vec()).await.unwrap(), 1);
    a.freeze("ocean", 2, GUARD).await.unwrap();
    let table = tokio::time::timeout(GUARD, waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(table.members.len(), 2);
    assert_eq!(table.members[0].host, "host-a");
    assert_eq!(table.members[1].endpoint, b"b");
    // b was told of a's join, in order, before its own.
    let first = tokio::time::timeout(GUARD, seen_on_b.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((first.kind, first.task), (GroupEventKind::Joined, Some(ta)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_back_within_its_lease_keeps_its_tasks() {
    let etcd = EtcdServer::start();
    let urls = vec![etcd.client_url.clone()];
    let p = prefix();
    let (a, lease) = open(&urls, &p, 4).await;
    let (b, _) = open(&urls, &p, 4).await;
    let t = TaskId::new_v4();
    a.open_task(t, "host-a").await.unwrap();
    a.join("ocean", t, None, vec![]).await.unwrap();
    a.freeze("ocean", 1, GUARD).await.unwrap();
    let mut events = b.subscribe();
    // The vmd "crashes": its store stops renewing the lease...
    drop(a);
    // ...and its next run takes the lease back within the TTL.
    let mut c = config(&urls, &p, 4);
    c.resume_lease = Some(lease);
    let again = EtcdStore::connect(c).await.unwrap();
    assert_eq!(again.lease_id(), lease, "the lease is taken back");
    // Past the TTL nothing was reported dead and the task is still in.
    tokio::time::sleep(Duration::from_secs(6)).await;
    // (b's stream may still bring a's earlier join: it watches from its own
    // start.)
    while let Ok(e) = events.try_recv() {
        assert!(
            !matches!(e.kind, GroupEventKind::MemberDied | GroupEventKind::Left),
            "nobody died or left, yet: {e:?}"
        );
    }
    let table = b.table("ocean").await.unwrap();
    assert!(!table.broken);
    assert_eq!(table.members[0].task, t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_one_of_three_members_changes_nothing() {
    let mut cluster = EtcdServer::cluster(3);
    let urls: Vec<String> = cluster.iter().map(|m| m.client_url.clone()).collect();
    let p = prefix();
    let (a, _) = open(&urls, &p, 10).await;
    let (b, _) = open(&urls, &p, 10).await;
    let (ta, tb) = (TaskId::new_v4(), TaskId::new_v4());
    a.open_task(ta, "host-a").await.unwrap();
    a.join("before", ta, None, vec![]).await.unwrap();
    let mut seen_on_b = b.subscribe();
    cluster[0].kill();
    b.open_task(tb, "host-b")
        .await
        .expect("open a task after the loss");
    a.join("after", ta, None, vec![])
        .await
        .expect("join after the loss");
    b.join("before", tb, None, vec![]).await.unwrap();
    assert_eq!(b.gsize("before").await.unwrap(), 2);
    assert_eq!(b.gettid("after", 0).await.unwrap().task, ta);
    // Events still flow to the other store (its stream may first bring
    // the earlier join of "before": it watches from its own start).
    let joined_after = async {
        loop {
            let e = seen_on_b.recv().await.expect("event stream");
            if e.group == "after" {
                return e;
            }
        }
    };
    let e = tokio::time::timeout(GUARD, joined_after).await.unwrap();
    assert_eq!((e.kind, e.task), (GroupEventKind::Joined, Some(ta)));
}

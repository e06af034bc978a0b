//! The etcd store as a virtual machine of several vmds uses it: stores
//! sharing one prefix are one namespace; a store whose lease expires has
//! its tasks declared dead to the others; a store that comes back within
//! its lease keeps them; losing one member of three changes nothing.

#![cfg(test)]

use std::time::Duration;

use isthmus_groups::store::{
    BarrierEntry, BarrierOutcome, CreateOutcome, GroupStore, Guard, LeaseId, Lookup,
};
use isthmus_groups::{GroupError, GroupEventKind, Groups, Member, TaskId};
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

/// Two stores (vmds) on one prefix of a fresh etcd, a task opened on
/// each.
struct Pair {
    _etcd: EtcdServer,
    a: Groups,
    b: Groups,
    ta: TaskId,
    tb: TaskId,
}

/// Two stores on one fresh prefix, reaching etcd at `a` and `b`.
async fn two_stores(a: &str, b: &str) -> (Groups, Groups) {
    let p = prefix();
    let (a, _) = open(&[a.to_string()], &p, 10).await;
    let (b, _) = open(&[b.to_string()], &p, 10).await;
    (a, b)
}

async fn pair() -> Pair {
    let etcd = EtcdServer::start();
    let (a, b) = two_stores(&etcd.client_url, &etcd.client_url).await;
    let (ta, tb) = (TaskId::new_v4(), TaskId::new_v4());
    a.open_task(ta, "host-a").await.unwrap();
    b.open_task(tb, "host-b").await.unwrap();
    Pair {
        _etcd: etcd,
        a,
        b,
        ta,
        tb,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_prefix_are_one_namespace() {
    let Pair {
        _etcd,
        a,
        b,
        ta,
        tb,
    } = pair().await;
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

/// `n` tasks opened on `g` (host `host`), all joined to `group`.
async fn members(g: &Groups, host: &str, group: &str, n: usize) -> Vec<TaskId> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let t = TaskId::new_v4();
        g.open_task(t, host).await.unwrap();
        g.join(group, t, None, vec![]).await.unwrap();
        tasks.push(t);
    }
    tasks
}

/// Two stores (vmds) on one etcd and members of "ring" opened through
/// each.
struct Ring {
    etcd: EtcdServer,
    prefix: String,
    a: Groups,
    b: Groups,
    on_a: Vec<TaskId>,
    on_b: Vec<TaskId>,
}

/// A [`Ring`] of `n` members per store, the second store's lease lasting
/// `ttl_b` seconds.
async fn ring(ttl_b: u64, n: usize) -> Ring {
    let etcd = EtcdServer::start();
    let urls = vec![etcd.client_url.clone()];
    let prefix = prefix();
    let (a, _) = open(&urls, &prefix, 10).await;
    let (b, _) = open(&urls, &prefix, ttl_b).await;
    let on_a = members(&a, "host-a", "ring", n).await;
    let on_b = members(&b, "host-b", "ring", n).await;
    Ring {
        etcd,
        prefix,
        a,
        b,
        on_a,
        on_b,
    }
}

impl Ring {
    /// Returns once `n` tasks wait in the episode of "ring", as etcd has
    /// it (`P/b/ring`), so that what follows happens after their entries.
    async fn waiting(&self, n: usize) {
        let mut etcd = etcd_client::Client::connect([&self.etcd.client_url], None)
            .await
            .unwrap();
        let key = format!("{}/b/ring", self.prefix);
        let arrived = async {
            loop {
                let resp = etcd.get(key.as_str(), None).await.unwrap();
                let count = resp.kvs().first().map(|kv| {
                    let rec: serde_json::Value = serde_json::from_slice(kv.value()).unwrap();
                    rec["arrived"].as_array().map_or(0, Vec::len)
                });
                if count == Some(n) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(GUARD, arrived)
            .await
            .expect("the entries did not arrive");
    }
}

fn enter(
    g: &Groups,
    group: &'static str,
    task: TaskId,
    count: Option<u32>,
    deadline: Duration,
) -> tokio::task::JoinHandle<isthmus_groups::Result<()>> {
    let g = g.clone();
    tokio::spawn(async move { g.barrier(group, task, count, deadline).await })
}

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(GUARD, f)
        .await
        .expect("a barrier call hung")
}

/// What a spawned barrier call returned.
async fn outcome(
    h: tokio::task::JoinHandle<isthmus_groups::Result<()>>,
) -> isthmus_groups::Result<()> {
    within(h).await.expect("the barrier call panicked")
}

/// The error that a leave (or death) of `task` at `instance` gives every
/// waiter of "ring".
fn broken_by(instance: u32, task: TaskId, died: bool) -> GroupError {
    GroupError::BarrierBroken {
        group: "ring".into(),
        instance,
        task,
        died,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barrier_meets_members_of_both_stores() {
    let r = ring(10, 2).await;
    let (a, b, on_a, on_b) = (&r.a, &r.b, &r.on_a, &r.on_b);
    let short = Duration::from_millis(300);

    // An entry that timed out on one store does not count on the other.
    let err = a.barrier("ring", on_a[0], None, short).await.unwrap_err();
    assert!(matches!(err, GroupError::DeadlineExceeded { .. }), "{err}");
    let err = b
        .barrier("ring", on_b[0], Some(2), short)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GroupError::DeadlineExceeded { .. }),
        "a's expired entry must not complete b's count of 2: {err}"
    );

    for round in 0..3 {
        let first = [
            enter(a, "ring", on_a[0], None, GUARD),
            enter(b, "ring", on_b[0], None, GUARD),
            enter(a, "ring", on_a[1], None, GUARD),
        ];
        r.waiting(3).await;
        assert!(
            first.iter().all(|h| !h.is_finished()),
            "round {round}: three of four are in; nobody passes"
        );
        // The episode's count (4, the size at its first entry) is seen
        // from the other store.
        assert_eq!(
            b.barrier("ring", on_b[1], Some(3), GUARD)
                .await
                .unwrap_err(),
            GroupError::BarrierCountMismatch {
                group: "ring".into(),
                expected: 4,
                got: 3
            }
        );
        within(b.barrier("ring", on_b[1], None, GUARD))
            .await
            .unwrap();
        for h in first {
            outcome(h).await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_gone_on_the_other_store_breaks_the_barrier() {
    let r = ring(10, 2).await;
    let (a, b, on_a, on_b) = (&r.a, &r.b, &r.on_a, &r.on_b);

    // A leave through b breaks the waiters on a, and on b itself.
    let waiting = [
        enter(a, "ring", on_a[0], None, GUARD),
        enter(a, "ring", on_a[1], None, GUARD),
        enter(b, "ring", on_b[0], None, GUARD),
    ];
    r.waiting(3).await;
    assert!(waiting.iter().all(|h| !h.is_finished()));
    b.leave("ring", on_b[1]).await.unwrap();
    for h in waiting {
        assert_eq!(outcome(h).await, Err(broken_by(3, on_b[1], false)));
    }

    // A death through b does the same; the survivors then meet.
    let waiting = [
        enter(a, "ring", on_a[0], None, GUARD),
        enter(a, "ring", on_a[1], None, GUARD),
    ];
    r.waiting(2).await;
    assert!(waiting.iter().all(|h| !h.is_finished()));
    b.close_task(on_b[0], true).await.unwrap();
    for h in waiting {
        assert_eq!(outcome(h).await, Err(broken_by(2, on_b[0], true)));
    }
    let first = enter(a, "ring", on_a[0], None, GUARD);
    within(a.barrier("ring", on_a[1], None, GUARD))
        .await
        .unwrap();
    outcome(first).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vmd_gone_past_its_lease_breaks_the_barrier_as_a_death() {
    let r = ring(2, 1).await;
    let (a, on_a, on_b) = (&r.a, &r.on_a, &r.on_b);
    let waiting = enter(a, "ring", on_a[0], None, GUARD);
    r.waiting(1).await;
    assert!(!waiting.is_finished());
    // b's vmd stops without revoking: its lease expires, a's sweeper
    // removes the task as dead and that breaks the episode.
    drop(r.b);
    assert_eq!(outcome(waiting).await, Err(broken_by(1, on_b[0], true)));
}

/// Joins `task` (its lease: `lease`) to `group` at the lowest free
/// instance, straight through the store.
async fn join_raw(store: &EtcdStore, group: &str, task: TaskId, lease: LeaseId) {
    loop {
        let (guard, instance) = match store.slots(group).await.unwrap() {
            None => (Guard::Absent, 0),
            Some(s) => (Guard::Revision(s.meta.revision), s.slots.len() as u32),
        };
        let member = Member {
            instance,
            task,
            host: "h".into(),
            endpoint: vec![],
        };
        match store
            .create_member(group, guard, member, lease, None)
            .await
            .unwrap()
        {
            CreateOutcome::Created { .. } => return,
            CreateOutcome::Conflict => continue,
            CreateOutcome::LeaseGone => panic!("lease gone"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_that_finds_the_episode_over_hands_over_its_outcome_at_once() {
    let etcd = EtcdServer::start();
    let urls = vec![etcd.client_url.clone()];
    let p = prefix();
    let a = EtcdStore::connect(config(&urls, &p, 10)).await.unwrap();
    let b = EtcdStore::connect(config(&urls, &p, 10)).await.unwrap();
    let (t0, t1) = (TaskId::new_v4(), TaskId::new_v4());
    let l0 = a.grant_lease(t0, "h", None).await.unwrap().unwrap();
    let l1 = b.grant_lease(t1, "h", None).await.unwrap().unwrap();
    join_raw(&a, "g", t0, l0).await;
    join_raw(&b, "g", t1, l1).await;
    let Lookup::Found(BarrierEntry::Waiting(mut wait)) =
        a.barrier_enter("g", t0, None).await.unwrap()
    else {
        panic!("the first of two waits");
    };
    assert!(matches!(
        b.barrier_enter("g", t1, None).await.unwrap(),
        Lookup::Found(BarrierEntry::Released)
    ));
    // The newest revision is then a write the change log does not carry.
    b.grant_lease(TaskId::new_v4(), "h", None).await.unwrap();
    // a's caller gave up just as the episode was released: its withdrawal
    // finds the episode over and leaves the outcome for it.
    let started = std::time::Instant::now();
    assert!(!a.barrier_withdraw("g", wait.episode, t0).await.unwrap());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(wait.outcome.try_recv(), Ok(BarrierOutcome::Released));
}

/// Polls `check` until it returns `Some`, failing after [`GUARD`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let found = async {
        loop {
            if let Some(t) = check().await {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(GUARD, found)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {GUARD:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_through_one_store_reach_the_other_stores_lookups() {
    let Pair {
        _etcd,
        a,
        b,
        ta,
        tb,
    } = pair().await;

    a.join("reef", ta, Some(3), b"a-end".to_vec())
        .await
        .unwrap();
    let m = eventually("a's join seen by b", || async {
        b.gettid("reef", 3).await.ok()
    })
    .await;
    assert_eq!((m.task, m.host.as_str()), (ta, "host-a"));
    assert_eq!(m.endpoint, b"a-end");
    assert_eq!(b.getinst("reef", ta).await.unwrap(), 3);
    assert_eq!(b.gsize("reef").await.unwrap(), 1);

    // b joins on top of what it has seen; a sees that (its own lookups
    // after its own changes need no waiting: read-your-writes).
    assert_eq!(
        b.join("reef", tb, None, b"b-end".to_vec()).await.unwrap(),
        0
    );
    assert_eq!(b.gsize("reef").await.unwrap(), 2);
    eventually("b's join seen by a", || async {
        (a.gsize("reef").await.ok() == Some(2)).then_some(())
    })
    .await;
    let table = a.table("reef").await.unwrap();
    let seen: Vec<_> = table
        .members
        .iter()
        .map(|m| (m.instance, m.task, m.endpoint.clone()))
        .collect();
    assert_eq!(
        seen,
        vec![(0, tb, b"b-end".to_vec()), (3, ta, b"a-end".to_vec())]
    );

    // Leaves, down to destruction, reach the other side too.
    a.leave("reef", ta).await.unwrap();
    eventually("a's leave seen by b", || async {
        matches!(
            b.gettid("reef", 3).await,
            Err(GroupError::InstanceNotFound { .. })
        )
        .then_some(())
    })
    .await;
    b.leave("reef", tb).await.unwrap();
    assert!(matches!(
        b.gsize("reef").await,
        Err(GroupError::GroupNotFound(_))
    ));
    eventually("the group's end seen by a", || async {
        a.list().await.unwrap().is_empty().then_some(())
    })
    .await;
}

/// A TCP forwarder to one etcd member that can cut every connection
/// through it and refuse new ones for a while: a vmd cut off from etcd.
struct Link {
    url: String,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    flows: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Link {
    async fn to(url: &str) -> Link {
        let target = url.trim_start_matches("http://").to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let here = listener.local_addr().unwrap();
        let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let flows = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (is_open, all) = (open.clone(), flows.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !is_open.load(std::sync::atomic::Ordering::SeqCst) {
                    continue; // dropped: refused
                }
                let target = target.clone();
                let flow = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                all.lock().unwrap().push(flow);
            }
        });
        Link {
            url: format!("http://{here}"),
            open,
            flows,
        }
    }

    /// Closes every connection through the link and refuses new ones;
    /// returns once they are closed.
    async fn cut(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        let flows: Vec<_> = self.flows.lock().unwrap().drain(..).collect();
        for f in flows {
            f.abort();
            let _ = f.await;
        }
    }

    fn restore(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Store `a` on etcd, store `b` behind a [`Link`], two tasks opened on
/// `a` and the first in "reef" (endpoint "old"), seen by `b`.
struct Cut {
    etcd: EtcdServer,
    link: Link,
    a: Groups,
    b: Groups,
    ta: TaskId,
    tb: TaskId,
}

async fn cut_pair() -> Cut {
    let etcd = EtcdServer::start();
    let link = Link::to(&etcd.client_url).await;
    let (a, b) = two_stores(&etcd.client_url, &link.url).await;
    let (ta, tb) = (TaskId::new_v4(), TaskId::new_v4());
    a.open_task(ta, "host-a").await.unwrap();
    a.open_task(tb, "host-a").await.unwrap();
    a.join("reef", ta, None, b"old".to_vec()).await.unwrap();
    eventually("a's join seen by b", || async {
        b.gettid("reef", 0).await.ok()
    })
    .await;
    Cut {
        etcd,
        link,
        a,
        b,
        ta,
        tb,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_cut_off_from_etcd_stops_answering_and_catches_up() {
    let Cut {
        etcd: _etcd,
        link,
        a,
        b,
        ta,
        tb,
    } = cut_pair().await;
    link.cut().await;
    // Cut off, b no longer answers from what it saw (an error, not a
    // stale member).
    eventually("b refusing lookups while cut off", || async {
        matches!(b.gettid("reef", 0).await, Err(GroupError::Store(_))).then_some(())
    })
    .await;
    a.leave("reef", ta).await.unwrap();
    a.join("lagoon", tb, None, b"new".to_vec()).await.unwrap();
    link.restore();
    let m = eventually("a's changes seen by b once back", || async {
        b.gettid("lagoon", 0).await.ok()
    })
    .await;
    assert_eq!(m.endpoint, b"new");
    assert!(matches!(
        b.gsize("reef").await,
        Err(GroupError::GroupNotFound(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_stay_right_after_etcd_compacted_past_the_replica() {
    let Cut {
        etcd,
        link,
        a,
        b,
        ta,
        tb,
    } = cut_pair().await;

    // b's watch is cut off while a changes the tables and etcd compacts
    // its history past everything b has seen.
    link.cut().await;
    a.leave("reef", ta).await.unwrap();
    a.join("lagoon", tb, Some(5), b"new".to_vec())
        .await
        .unwrap();
    a.join("atoll", ta, None, b"ta".to_vec()).await.unwrap();
    let mut etcd_client = etcd_client::Client::connect([&etcd.client_url], None)
        .await
        .unwrap();
    let head = etcd_client.get("/", None).await.unwrap();
    let head = head.header().unwrap().revision();
    etcd_client
        .compact(
            head,
            Some(etcd_client::CompactionOptions::new().with_physical()),
        )
        .await
        .unwrap();
    link.restore();

    let m = eventually("the changes seen by b after the compaction", || async {
        b.gettid("lagoon", 5).await.ok()
    })
    .await;
    assert_eq!((m.task, m.endpoint.as_slice()), (tb, b"new".as_slice()));
    assert!(matches!(
        b.gettid("reef", 0).await,
        Err(GroupError::GroupNotFound(_))
    ));
    assert_eq!(b.getinst("atoll", ta).await.unwrap(), 0);
    let names: Vec<String> = b
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.name)
        .collect();
    assert_eq!(names, ["atoll", "lagoon"]);

    // The watch follows again: later changes reach b, and b's own work.
    a.leave("atoll", ta).await.unwrap();
    eventually("a later leave seen by b", || async {
        matches!(b.gsize("atoll").await, Err(GroupError::GroupNotFound(_))).then_some(())
    })
    .await;
    let tc = TaskId::new_v4();
    b.open_task(tc, "host-b").await.unwrap();
    assert_eq!(b.join("lagoon", tc, None, vec![]).await.unwrap(), 0);
    assert_eq!(b.gsize("lagoon").await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_closed_through_the_other_store_is_gone_for_its_own() {
    let Pair {
        _etcd, a, b, ta, ..
    } = pair().await;
    assert!(a.task_lease(ta).await.unwrap().is_some());
    b.close_task(ta, false).await.unwrap();
    // However soon a hears of it, a join of the task fails...
    assert!(matches!(
        a.join("reef", ta, None, vec![]).await,
        Err(GroupError::TaskNotFound(t)) if t == ta
    ));
    // ...and a's lookups of it follow.
    eventually("the closed task gone from a", || async {
        a.task_lease(ta).await.unwrap().is_none().then_some(())
    })
    .await;
}

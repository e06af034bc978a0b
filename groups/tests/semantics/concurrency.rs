use std::time::Instant;

use isthmus_groups::{Groups, TaskId};

use crate::{setup, within};

#[test]
fn groups_is_shareable() {
    fn assert_traits<T: Clone + Send + Sync + 'static>() {}
    assert_traits::<Groups>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_joins_get_distinct_instances() {
    let (g, t) = setup(64).await;
    let handles: Vec<_> = t
        .iter()
        .map(|&task| {
            let g = g.clone();
            tokio::spawn(async move { g.join("crowd", task, None, vec![]).await })
        })
        .collect();
    let mut got = Vec::new();
    for h in handles {
        got.push(within(h).await.unwrap().unwrap());
    }
    got.sort_unstable();
    assert_eq!(got, (0..64).collect::<Vec<u32>>());
    assert_eq!(g.gsize("crowd").await.unwrap(), 64);
    for (i, &task) in t.iter().enumerate() {
        let inst = g.getinst("crowd", task).await.unwrap();
        assert_eq!(
            g.gettid("crowd", inst).await.unwrap().task,
            task,
            "task {i}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_churn_stays_consistent() {
    let (g, t) = setup(16).await;
    let handles: Vec<_> = t
        .iter()
        .map(|&task| {
            let g = g.clone();
            tokio::spawn(async move {
                for _ in 0..200 {
                    let i = g.join("churn", task, None, vec![]).await?;
                    assert_eq!(g.getinst("churn", task).await?, i);
                    g.leave("churn", task).await?;
                }
                Ok::<(), isthmus_groups::GroupError>(())
            })
        })
        .collect();
    for h in handles {
        within(h).await.unwrap().unwrap();
    }
    assert!(
        g.list().await.unwrap().is_empty(),
        "everyone left: group destroyed"
    );
}

/// Not a benchmark, a tripwire: join+leave must stay in the microsecond
/// range (PVM's whole round trip is 150 µs). Generous for debug builds.
#[tokio::test]
async fn join_leave_is_cheap() {
    let g = Groups::in_memory();
    let task = TaskId::new_v4();
    g.open_task(task, "h").await.unwrap();
    // Some other members so the group is not created each time.
    for _ in 0..8 {
        let o = TaskId::new_v4();
        g.open_task(o, "h").await.unwrap();
        g.join("perf", o, None, vec![0; 64]).await.unwrap();
    }
    let n = 20_000u32;
    let start = Instant::now();
    for _ in 0..n {
        g.join("perf", task, None, vec![0; 64]).await.unwrap();
        g.leave("perf", task).await.unwrap();
    }
    let per = start.elapsed() / n;
    eprintln!("join+leave: {per:?}");
    assert!(per.as_micros() < 100, "join+leave took {per:?}");
}

use isthmus_groups::Groups;

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
                for _ in 0..crate::CHURN_ROUNDS {
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

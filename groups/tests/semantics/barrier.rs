use isthmus_groups::{ErrorKind, GroupError, Groups, TaskId};

use crate::{settle, setup, state, within, LONG, SHORT};

async fn group_of(n: usize) -> (Groups, Vec<TaskId>) {
    let (g, t) = setup(n).await;
    for &task in &t {
        g.join("b", task, None, vec![]).await.unwrap();
    }
    (g, t)
}

fn enter(
    g: &Groups,
    task: TaskId,
    count: Option<u32>,
    deadline: std::time::Duration,
) -> tokio::task::JoinHandle<isthmus_groups::Result<()>> {
    let g = g.clone();
    tokio::spawn(async move { g.barrier("b", task, count, deadline).await })
}

#[tokio::test]
async fn releases_everyone_at_count_and_starts_a_new_episode() {
    let (g, t) = group_of(3).await;
    for round in 0..3 {
        let a = enter(&g, t[0], None, LONG);
        let b = enter(&g, t[1], None, LONG);
        settle().await;
        assert!(
            !a.is_finished() && !b.is_finished(),
            "round {round}: waiting for the third"
        );
        within(g.barrier("b", t[2], None, LONG)).await.unwrap();
        within(a).await.unwrap().unwrap();
        within(b).await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn explicit_count_below_group_size() {
    let (g, t) = group_of(3).await;
    let a = enter(&g, t[0], Some(2), LONG);
    settle().await;
    assert!(!a.is_finished());
    within(g.barrier("b", t[2], Some(2), LONG)).await.unwrap();
    within(a).await.unwrap().unwrap();
    // Count 1 passes alone.
    within(g.barrier("b", t[1], Some(1), LONG)).await.unwrap();
}

#[tokio::test]
async fn deadline_releases_the_waiter_which_then_no_longer_counts() {
    let (g, t) = group_of(2).await;
    let err = within(g.barrier("b", t[0], None, SHORT)).await.unwrap_err();
    assert!(
        matches!(err, GroupError::DeadlineExceeded { op: "barrier", .. }),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);
    // If t0's expired entry still counted, this would complete at once.
    let err = within(g.barrier("b", t[1], None, SHORT)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);
    // Both together still work.
    let a = enter(&g, t[0], None, LONG);
    within(g.barrier("b", t[1], None, LONG)).await.unwrap();
    within(a).await.unwrap().unwrap();
}

#[tokio::test]
async fn abandoned_call_does_not_count() {
    let (g, t) = group_of(2).await;
    let a = enter(&g, t[0], None, LONG);
    settle().await;
    a.abort();
    let _ = a.await;
    let err = within(g.barrier("b", t[1], None, SHORT)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);
}

#[tokio::test]
async fn member_death_breaks_the_barrier_for_all() {
    let (g, t) = group_of(3).await;
    let a = enter(&g, t[0], None, LONG);
    let b = enter(&g, t[1], None, LONG);
    settle().await;
    g.close_task(t[2], true).await.unwrap();
    for h in [a, b] {
        let err = within(h).await.unwrap().unwrap_err();
        assert_eq!(
            err,
            GroupError::BarrierBroken {
                group: "b".into(),
                instance: 2,
                task: t[2],
                died: true
            }
        );
        assert_eq!(err.kind(), ErrorKind::Aborted);
        assert!(err.to_string().contains("died"), "{err}");
    }
    // The survivors can meet again (count defaults to the new size, 2).
    let a = enter(&g, t[0], None, LONG);
    within(g.barrier("b", t[1], None, LONG)).await.unwrap();
    within(a).await.unwrap().unwrap();
}

#[tokio::test]
async fn member_leave_breaks_the_barrier() {
    let (g, t) = group_of(3).await;
    let a = enter(&g, t[0], None, LONG);
    settle().await;
    g.leave("b", t[1]).await.unwrap();
    let err = within(a).await.unwrap().unwrap_err();
    assert_eq!(
        err,
        GroupError::BarrierBroken {
            group: "b".into(),
            instance: 1,
            task: t[1],
            died: false
        }
    );
}

#[tokio::test]
async fn count_mismatch_fails_only_the_mismatching_caller() {
    let (g, t) = group_of(3).await;
    let a = enter(&g, t[0], Some(2), LONG);
    settle().await;
    let err = within(g.barrier("b", t[1], Some(3), LONG))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        GroupError::BarrierCountMismatch {
            group: "b".into(),
            expected: 2,
            got: 3
        }
    );
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(!a.is_finished(), "the first caller keeps waiting");
    // A caller without a count adopts the episode's count.
    within(g.barrier("b", t[2], None, LONG)).await.unwrap();
    within(a).await.unwrap().unwrap();
}

#[tokio::test]
async fn same_task_twice_in_one_episode_is_refused() {
    let (g, t) = group_of(2).await;
    let a = enter(&g, t[0], None, LONG);
    settle().await;
    let err = within(g.barrier("b", t[0], None, LONG)).await.unwrap_err();
    assert_eq!(
        err,
        GroupError::AlreadyInBarrier {
            group: "b".into(),
            task: t[0]
        }
    );
    within(g.barrier("b", t[1], None, LONG)).await.unwrap();
    within(a).await.unwrap().unwrap();
}

#[tokio::test]
async fn barrier_bad_input() {
    let (g, t) = group_of(1).await;
    let outsider = TaskId::new_v4();
    g.open_task(outsider, "h").await.unwrap();
    let before = state(&g).await;
    assert_eq!(
        g.barrier("b", outsider, None, LONG).await.unwrap_err(),
        GroupError::NotMember {
            group: "b".into(),
            task: outsider
        }
    );
    let unknown = TaskId::new_v4();
    assert_eq!(
        g.barrier("b", unknown, None, LONG).await.unwrap_err(),
        GroupError::TaskNotFound(unknown)
    );
    assert_eq!(
        g.barrier("nope", t[0], None, LONG).await.unwrap_err(),
        GroupError::GroupNotFound("nope".into())
    );
    assert_eq!(
        g.barrier("b", t[0], Some(0), LONG)
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        g.barrier("", t[0], None, LONG).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(state(&g).await, before);
}

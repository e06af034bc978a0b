use isthmus_groups::{ErrorKind, GroupError, GroupEventKind};

use crate::{settle, setup, state, within, LONG, SHORT};

#[tokio::test]
async fn freeze_waits_for_size_then_freezes() {
    let (g, t) = setup(4).await;
    g.join("job", t[0], None, vec![]).await.unwrap();
    g.join("job", t[1], None, vec![]).await.unwrap();
    let waiter = {
        let g = g.clone();
        tokio::spawn(async move { g.freeze("job", 3, LONG).await })
    };
    settle().await;
    assert!(
        !waiter.is_finished(),
        "freeze must wait for the third member"
    );
    assert!(!g.table("job").await.unwrap().frozen);

    g.join("job", t[2], None, vec![]).await.unwrap();
    let table = within(waiter).await.unwrap().unwrap();
    assert!(table.frozen && !table.broken);
    assert_eq!(table.members.len(), 3);
    assert_eq!(
        table.members.iter().map(|m| m.instance).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert!(g.list().await.unwrap()[0].frozen);

    // Joins to a frozen group are refused and change nothing.
    let before = state(&g).await;
    let err = g.join("job", t[3], None, vec![]).await.unwrap_err();
    assert_eq!(
        err,
        GroupError::Frozen {
            group: "job".into()
        }
    );
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    assert_eq!(state(&g).await, before);
}

#[tokio::test]
async fn freeze_deadline_leaves_group_unfrozen() {
    let (g, t) = setup(2).await;
    g.join("job", t[0], None, vec![]).await.unwrap();
    let before = state(&g).await;
    let err = within(g.freeze("job", 3, SHORT)).await.unwrap_err();
    assert!(
        matches!(err, GroupError::DeadlineExceeded { op: "freeze", .. }),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);
    assert_eq!(state(&g).await, before);
    // Still open for joins.
    assert_eq!(g.join("job", t[1], None, vec![]).await.unwrap(), 1);
}

#[tokio::test]
async fn freeze_below_size_fails_immediately() {
    let (g, t) = setup(4).await;
    for &task in &t {
        g.join("x", task, None, vec![]).await.unwrap();
    }
    let before = state(&g).await;
    let err = within(g.freeze("x", 2, LONG)).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "group \"x\" has 4 members; cannot freeze at size 2"
    );
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    assert_eq!(state(&g).await, before);
}

#[tokio::test]
async fn freeze_is_idempotent_for_the_same_size() {
    let (g, t) = setup(2).await;
    g.join("x", t[0], None, b"a".to_vec()).await.unwrap();
    g.join("x", t[1], None, b"b".to_vec()).await.unwrap();
    let first = within(g.freeze("x", 2, LONG)).await.unwrap();
    let again = within(g.freeze("x", 2, SHORT)).await.unwrap();
    assert_eq!(first, again);
    assert_eq!(first, g.table("x").await.unwrap());

    let before = state(&g).await;
    let err = within(g.freeze("x", 3, LONG)).await.unwrap_err();
    assert_eq!(
        err,
        GroupError::FrozenAtOtherSize {
            group: "x".into(),
            frozen_size: 2,
            size: 3
        }
    );
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    assert_eq!(state(&g).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_freezers_all_get_the_table() {
    let (g, t) = setup(3).await;
    let mut events = g.subscribe();
    // freeze needs the group to exist.
    g.join("job", t[0], None, vec![]).await.unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let g = g.clone();
            tokio::spawn(async move { g.freeze("job", 3, LONG).await })
        })
        .collect();
    for &task in &t[1..] {
        g.join("job", task, None, vec![]).await.unwrap();
    }
    for w in waiters {
        let table = within(w).await.unwrap().unwrap();
        assert!(table.frozen);
        assert_eq!(table.members.len(), 3);
    }
    let mut frozen_events = 0;
    while let Ok(e) = events.try_recv() {
        if e.kind == GroupEventKind::Frozen {
            frozen_events += 1;
        }
    }
    assert_eq!(frozen_events, 1, "the group is frozen exactly once");
}

#[tokio::test]
async fn freeze_bad_arguments() {
    let (g, t) = setup(1).await;
    g.join("x", t[0], None, vec![]).await.unwrap();
    let before = state(&g).await;
    let err = g.freeze("x", 0, LONG).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = g.freeze("x", u32::MAX, LONG).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = within(g.freeze("missing", 1, LONG)).await.unwrap_err();
    assert_eq!(err, GroupError::GroupNotFound("missing".into()));
    assert_eq!(state(&g).await, before);
}

#[tokio::test]
async fn freeze_fails_if_group_destroyed_while_waiting() {
    let (g, t) = setup(1).await;
    g.join("x", t[0], None, vec![]).await.unwrap();
    let waiter = {
        let g = g.clone();
        tokio::spawn(async move { g.freeze("x", 2, LONG).await })
    };
    settle().await;
    g.leave("x", t[0]).await.unwrap();
    assert_eq!(
        within(waiter).await.unwrap().unwrap_err(),
        GroupError::GroupNotFound("x".into())
    );
}

#[tokio::test]
async fn wait_frozen_waits_for_creation_and_freeze() {
    let (g, t) = setup(2).await;
    let waiter = {
        let g = g.clone();
        tokio::spawn(async move { g.wait_frozen("remote", LONG).await })
    };
    settle().await;
    g.join("remote", t[0], None, b"p0".to_vec()).await.unwrap();
    g.join("remote", t[1], None, b"p1".to_vec()).await.unwrap();
    settle().await;
    assert!(!waiter.is_finished(), "not frozen yet");
    within(g.freeze("remote", 2, LONG)).await.unwrap();
    let table = within(waiter).await.unwrap().unwrap();
    assert!(table.frozen);
    assert_eq!(table.members[1].endpoint, b"p1");
}

#[tokio::test]
async fn wait_frozen_deadline() {
    let (g, t) = setup(1).await;
    let err = within(g.wait_frozen("nobody", SHORT)).await.unwrap_err();
    assert!(
        matches!(
            err,
            GroupError::DeadlineExceeded {
                op: "wait_frozen",
                ..
            }
        ),
        "{err}"
    );
    g.join("open", t[0], None, vec![]).await.unwrap();
    let err = within(g.wait_frozen("open", SHORT)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);
    assert!(!g.table("open").await.unwrap().frozen);
}

#[tokio::test]
async fn member_death_breaks_frozen_group() {
    let (g, t) = setup(3).await;
    for &task in &t {
        g.join("job", task, None, vec![]).await.unwrap();
    }
    within(g.freeze("job", 3, LONG)).await.unwrap();
    let mut events = g.subscribe();
    g.close_task(t[1], true).await.unwrap();

    let e = within(events.recv()).await.unwrap();
    assert_eq!(e.kind, GroupEventKind::MemberDied);
    assert_eq!(
        (e.group.as_str(), e.instance, e.task),
        ("job", Some(1), Some(t[1]))
    );
    assert_eq!(e.size, 2);
    assert!(e.group_broken);

    let table = g.table("job").await.unwrap();
    assert!(table.frozen && table.broken);
    assert_eq!(
        table.members.iter().map(|m| m.instance).collect::<Vec<_>>(),
        vec![0, 2]
    );
    assert!(g.list().await.unwrap()[0].broken);
    assert_eq!(
        g.gettid("job", 1).await.unwrap_err(),
        GroupError::InstanceNotFound {
            group: "job".into(),
            instance: 1
        }
    );

    let err = within(g.wait_frozen("job", LONG)).await.unwrap_err();
    assert_eq!(
        err,
        GroupError::GroupBroken {
            group: "job".into(),
            instance: 1,
            task: t[1]
        }
    );
    assert_eq!(err.kind(), ErrorKind::Aborted);
    assert!(err.to_string().contains("instance 1"), "{err}");
    let err = within(g.freeze("job", 3, LONG)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Aborted);
}

#[tokio::test]
async fn death_in_unfrozen_group_does_not_break_it() {
    let (g, t) = setup(2).await;
    g.join("job", t[0], None, vec![]).await.unwrap();
    g.join("job", t[1], None, vec![]).await.unwrap();
    let mut events = g.subscribe();
    g.close_task(t[0], true).await.unwrap();
    let e = within(events.recv()).await.unwrap();
    assert_eq!(e.kind, GroupEventKind::MemberDied);
    assert!(!e.group_broken);
    let table = g.table("job").await.unwrap();
    assert!(!table.broken && !table.frozen);
    assert_eq!(table.members.len(), 1);
}

#[tokio::test]
async fn voluntary_leave_does_not_break_frozen_group() {
    let (g, t) = setup(2).await;
    g.join("job", t[0], None, vec![]).await.unwrap();
    g.join("job", t[1], None, vec![]).await.unwrap();
    within(g.freeze("job", 2, LONG)).await.unwrap();
    g.close_task(t[1], false).await.unwrap();
    let table = within(g.wait_frozen("job", LONG)).await.unwrap();
    assert!(table.frozen && !table.broken);
    assert_eq!(table.members.len(), 1);
}

#[tokio::test]
async fn huge_deadlines_do_not_overflow() {
    let (g, t) = setup(1).await;
    g.join("x", t[0], None, vec![]).await.unwrap();
    let max = std::time::Duration::MAX;
    within(g.barrier("x", t[0], None, max)).await.unwrap();
    within(g.freeze("x", 1, max)).await.unwrap();
    within(g.wait_frozen("x", max)).await.unwrap();
}

#[tokio::test]
async fn zero_deadline_still_succeeds_when_nothing_to_wait_for() {
    let (g, t) = setup(1).await;
    g.join("x", t[0], None, vec![]).await.unwrap();
    let zero = std::time::Duration::ZERO;
    assert!(within(g.freeze("x", 1, zero)).await.unwrap().frozen);
    assert!(within(g.wait_frozen("x", zero)).await.unwrap().frozen);
}

//! Broken groups leave a tombstone when their last member goes, so that a
//! `wait_frozen` arriving after a whole job died still fails early; a join
//! replaces the tombstone with a fresh group.

use std::time::Duration;

use isthmus_groups::{
    ErrorKind, GroupError, GroupEvent, GroupEventKind::*, GroupSummary, Groups, TaskId,
};
use tokio::sync::broadcast;

use crate::{settle, setup, within, LONG, SHORT};

/// Bound on calls that must fail at once: far below `LONG`, so that a
/// regression that waits for the deadline fails instead of passing late.
const AT_ONCE: Duration = Duration::from_millis(500);

async fn at_once<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(AT_ONCE, f)
        .await
        .expect("should have failed at once, not waited")
}

/// `n` members join `group` and freeze it.
async fn frozen(g: &Groups, group: &str, members: &[TaskId]) {
    for &t in members {
        g.join(group, t, None, vec![]).await.unwrap();
    }
    let size = u32::try_from(members.len()).unwrap();
    within(g.freeze(group, size, LONG)).await.unwrap();
}

fn drain(rx: &mut broadcast::Receiver<GroupEvent>) -> Vec<GroupEvent> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

fn broken_by(group: &str, instance: u32, task: TaskId) -> GroupError {
    GroupError::GroupBroken {
        group: group.into(),
        instance,
        task,
    }
}

#[tokio::test]
async fn all_members_of_frozen_group_dying_leave_a_tombstone() {
    let (g, t) = setup(4).await;
    frozen(&g, "job", &t[..3]).await;
    let generation = g.table("job").await.unwrap().generation;
    let mut events = g.subscribe();
    // The launcher kills the rest right after the first rank died.
    for &task in &t[..3] {
        g.close_task(task, true).await.unwrap();
    }

    let got: Vec<_> = drain(&mut events)
        .into_iter()
        .map(|e| (e.kind, e.instance, e.size, e.group_broken))
        .collect();
    assert_eq!(
        got,
        vec![
            (MemberDied, Some(0), 2, true),
            (MemberDied, Some(1), 1, true),
            (MemberDied, Some(2), 0, true),
        ],
        "no Destroyed: the group stays as a tombstone"
    );

    let table = g.table("job").await.unwrap();
    assert!(table.frozen && table.broken);
    assert!(table.members.is_empty());
    assert_eq!(table.generation, generation, "same incarnation");
    assert_eq!(
        g.list().await.unwrap(),
        vec![GroupSummary {
            name: "job".into(),
            size: 0,
            frozen: true,
            broken: true
        }]
    );
    assert_eq!(g.gsize("job").await.unwrap(), 0);
    assert_eq!(
        g.gettid("job", 0).await.unwrap_err(),
        GroupError::InstanceNotFound {
            group: "job".into(),
            instance: 0
        }
    );
    let outsider = t[3];
    assert_eq!(
        g.getinst("job", outsider).await.unwrap_err(),
        GroupError::NotMember {
            group: "job".into(),
            task: outsider
        }
    );
    assert_eq!(
        g.leave("job", outsider).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        within(g.barrier("job", outsider, None, LONG))
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn broken_group_emptied_by_leaves_is_a_tombstone_too() {
    let (g, t) = setup(3).await;
    frozen(&g, "job", &t).await;
    g.close_task(t[1], true).await.unwrap();
    let mut events = g.subscribe();
    g.leave("job", t[0]).await.unwrap();
    g.close_task(t[2], false).await.unwrap();
    assert!(
        drain(&mut events).iter().all(|e| e.kind == Left),
        "no Destroyed"
    );
    let table = g.table("job").await.unwrap();
    assert!(table.broken && table.frozen && table.members.is_empty());
    assert_eq!(
        at_once(g.wait_frozen("job", LONG)).await.unwrap_err(),
        broken_by("job", 1, t[1])
    );
}

#[tokio::test]
async fn last_member_of_frozen_group_dying_breaks_it_and_leaves_a_tombstone() {
    // The others left cleanly, so the group was intact until this death;
    // the death of a member of a frozen group breaks it, in the same change.
    let (g, t) = setup(2).await;
    frozen(&g, "job", &t).await;
    g.leave("job", t[0]).await.unwrap();
    g.close_task(t[1], true).await.unwrap();
    let table = g.table("job").await.unwrap();
    assert!(table.broken && table.members.is_empty());
    assert_eq!(
        at_once(g.wait_frozen("job", LONG)).await.unwrap_err(),
        broken_by("job", 1, t[1])
    );
}

#[tokio::test]
async fn wait_frozen_and_freeze_on_a_tombstone_fail_at_once() {
    let (g, t) = setup(3).await;
    frozen(&g, "remote", &t).await;
    // The first death is the one reported, not the last.
    g.close_task(t[2], true).await.unwrap();
    g.close_task(t[0], true).await.unwrap();
    g.close_task(t[1], true).await.unwrap();

    let err = at_once(g.wait_frozen("remote", LONG)).await.unwrap_err();
    assert_eq!(err, broken_by("remote", 2, t[2]));
    assert_eq!(err.kind(), ErrorKind::Aborted);
    let msg = err.to_string();
    assert!(
        msg.contains("instance 2") && msg.contains(&t[2].to_string()) && msg.contains("died"),
        "{msg}"
    );

    // Whatever size is asked for: the group can never be frozen again.
    for size in [3, 5] {
        assert_eq!(
            at_once(g.freeze("remote", size, LONG)).await.unwrap_err(),
            broken_by("remote", 2, t[2])
        );
    }
    // Even with a zero deadline the answer is the breakage, not a timeout.
    assert_eq!(
        at_once(g.wait_frozen("remote", Duration::ZERO))
            .await
            .unwrap_err(),
        broken_by("remote", 2, t[2])
    );
}

#[tokio::test]
async fn wait_frozen_already_waiting_fails_when_the_group_breaks() {
    // The waiter is parked before the group even exists (a peer job that
    // starts first). On this single-threaded runtime it cannot run again
    // until the test yields, so it wakes up only after the whole job was
    // created, frozen and killed: it must find the tombstone. (Over a
    // store whose calls yield, the waiter may legitimately look in between
    // and find the group frozen; `wait_frozen_and_freeze_on_a_tombstone_*`
    // covers the tombstone there.)
    if !crate::CALLS_DO_NOT_YIELD {
        return;
    }
    let (g, t) = setup(3).await;
    let waiter = {
        let g = g.clone();
        tokio::spawn(async move { g.wait_frozen("remote", LONG).await })
    };
    settle().await;
    assert!(!waiter.is_finished(), "waiting for the group to appear");
    frozen(&g, "remote", &t).await;
    for &task in &t {
        g.close_task(task, true).await.unwrap();
    }
    assert_eq!(
        at_once(waiter).await.unwrap().unwrap_err(),
        broken_by("remote", 0, t[0])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_frozen_on_a_frozen_then_dying_group_never_hangs() {
    // Racier: the waiter may see the frozen group (Ok) or the breakage
    // (GroupBroken); it must never wait for its deadline.
    let (g, t) = setup(2).await;
    g.join("remote", t[0], None, vec![]).await.unwrap();
    g.join("remote", t[1], None, vec![]).await.unwrap();
    let waiter = {
        let g = g.clone();
        tokio::spawn(async move { g.wait_frozen("remote", LONG).await })
    };
    settle().await;
    within(g.freeze("remote", 2, LONG)).await.unwrap();
    for &task in &t {
        g.close_task(task, true).await.unwrap();
    }
    match at_once(waiter).await.unwrap() {
        Ok(table) => assert!(table.frozen),
        Err(e) => assert_eq!(e, broken_by("remote", 0, t[0])),
    }
    // And a caller arriving now is told at once.
    assert_eq!(
        at_once(g.wait_frozen("remote", LONG)).await.unwrap_err(),
        broken_by("remote", 0, t[0])
    );
}

#[tokio::test]
async fn join_replaces_a_tombstone_with_a_new_generation() {
    let (g, t) = setup(4).await;
    frozen(&g, "job", &t[..2]).await;
    let old = g.table("job").await.unwrap().generation;
    g.close_task(t[0], true).await.unwrap();
    g.close_task(t[1], true).await.unwrap();

    let mut events = g.subscribe();
    assert_eq!(
        g.join("job", t[2], Some(3), b"p".to_vec()).await.unwrap(),
        3
    );
    let got: Vec<_> = drain(&mut events)
        .into_iter()
        .map(|e| (e.kind, e.group, e.instance, e.task, e.size, e.group_broken))
        .collect();
    assert_eq!(
        got,
        vec![
            (Destroyed, "job".to_string(), None, None, 0, true),
            (Joined, "job".to_string(), Some(3), Some(t[2]), 1, false),
        ]
    );

    let table = g.table("job").await.unwrap();
    assert_ne!(table.generation, old, "a new incarnation");
    assert!(!table.frozen && !table.broken);
    assert_eq!(table.members.len(), 1);
    assert_eq!(table.members[0].endpoint, b"p");

    // It is an ordinary group again: open for joins, can freeze, and a
    // peer's wait_frozen now succeeds.
    assert_eq!(g.join("job", t[3], None, vec![]).await.unwrap(), 0);
    let waiter = {
        let g = g.clone();
        tokio::spawn(async move { g.wait_frozen("job", LONG).await })
    };
    within(g.freeze("job", 2, LONG)).await.unwrap();
    let table = within(waiter).await.unwrap().unwrap();
    assert!(table.frozen && !table.broken);
}

#[tokio::test]
async fn broken_group_with_live_members_still_refuses_joins() {
    let (g, t) = setup(3).await;
    frozen(&g, "job", &t[..2]).await;
    g.close_task(t[0], true).await.unwrap();
    let mut events = g.subscribe();
    assert_eq!(
        g.join("job", t[2], None, vec![]).await.unwrap_err(),
        GroupError::Frozen {
            group: "job".into()
        }
    );
    assert!(drain(&mut events).is_empty());
    assert_eq!(g.gsize("job").await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_joins_to_a_tombstone_make_one_group() {
    let (g, t) = setup(6).await;
    frozen(&g, "job", &t[..2]).await;
    g.close_task(t[0], true).await.unwrap();
    g.close_task(t[1], true).await.unwrap();
    let mut events = g.subscribe();
    let joins: Vec<_> = t[2..]
        .iter()
        .map(|&task| {
            let g = g.clone();
            tokio::spawn(async move { g.join("job", task, None, vec![]).await })
        })
        .collect();
    let mut instances = Vec::new();
    for j in joins {
        instances.push(within(j).await.unwrap().unwrap());
    }
    instances.sort_unstable();
    assert_eq!(instances, vec![0, 1, 2, 3]);
    let table = g.table("job").await.unwrap();
    assert!(!table.broken && !table.frozen);
    assert_eq!(table.members.len(), 4);
    let destroyed = drain(&mut events)
        .iter()
        .filter(|e| e.kind == Destroyed)
        .count();
    assert_eq!(destroyed, 1, "the tombstone is replaced exactly once");
}

#[tokio::test]
async fn intact_frozen_group_whose_members_all_leave_is_destroyed() {
    let (g, t) = setup(2).await;
    frozen(&g, "job", &t).await;
    let mut events = g.subscribe();
    g.leave("job", t[0]).await.unwrap();
    g.close_task(t[1], false).await.unwrap();
    let got: Vec<_> = drain(&mut events)
        .into_iter()
        .map(|e| (e.kind, e.size, e.group_broken))
        .collect();
    assert_eq!(
        got,
        vec![(Left, 1, false), (Left, 0, false), (Destroyed, 0, false)]
    );
    assert_eq!(
        g.table("job").await.unwrap_err(),
        GroupError::GroupNotFound("job".into())
    );
    assert!(g.list().await.unwrap().is_empty());
    let err = within(g.wait_frozen("job", SHORT)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);
}

#[tokio::test]
async fn unfrozen_group_whose_members_die_is_destroyed() {
    let (g, t) = setup(2).await;
    g.join("job", t[0], None, vec![]).await.unwrap();
    g.join("job", t[1], None, vec![]).await.unwrap();
    let mut events = g.subscribe();
    g.close_task(t[0], true).await.unwrap();
    g.close_task(t[1], true).await.unwrap();
    let got: Vec<_> = drain(&mut events)
        .into_iter()
        .map(|e| (e.kind, e.size, e.group_broken))
        .collect();
    assert_eq!(
        got,
        vec![
            (MemberDied, 1, false),
            (MemberDied, 0, false),
            (Destroyed, 0, false)
        ]
    );
    assert_eq!(
        g.gsize("job").await.unwrap_err(),
        GroupError::GroupNotFound("job".into())
    );
    assert!(g.list().await.unwrap().is_empty());
}

/// A crashed run does not block its re-run: a task opened after the old
/// incarnation broke waits for the new one instead of failing on the wreck,
/// while a task that lived through the break is still told at once.
#[tokio::test]
async fn a_task_opened_after_the_break_waits_for_the_next_generation() {
    let (g, t) = setup(3).await;
    let (old_peer, old_member) = (t[0], t[1]);
    frozen(&g, "ocean", &[old_member]).await;
    let old_generation = g.table("ocean").await.unwrap().generation;
    g.close_task(old_member, true).await.unwrap();

    // The old run's peer knew that incarnation: it fails at once.
    let err = at_once(g.wait_frozen_as(old_peer, "ocean", LONG))
        .await
        .unwrap_err();
    assert_eq!(err, broken_by("ocean", 0, old_member));

    // The re-run's peer starts after the crash and waits...
    let new_peer = TaskId::new_v4();
    g.open_task(new_peer, "host9").await.unwrap();
    let waiting = tokio::spawn({
        let g = g.clone();
        async move { g.wait_frozen_as(new_peer, "ocean", LONG).await }
    });
    settle().await;
    assert!(
        !waiting.is_finished(),
        "must wait, not fail on the old wreck"
    );

    // ...until the re-run registers the name again.
    let new_member = t[2];
    frozen(&g, "ocean", &[new_member]).await;
    let table = within(waiting).await.unwrap().unwrap();
    assert_ne!(table.generation, old_generation, "a fresh generation");
    assert_eq!(table.members.len(), 1);
    assert_eq!(table.members[0].task, new_member);
}

/// A group that breaks after the asking task was opened fails it at once,
/// however new the task is; an unknown task is refused.
#[tokio::test]
async fn a_break_after_the_task_opened_fails_it_at_once() {
    let (g, t) = setup(3).await;
    let waiter = t[2];
    frozen(&g, "ocean", &t[..2]).await;
    let waiting = tokio::spawn({
        let g = g.clone();
        async move { g.wait_frozen_as(waiter, "ocean", LONG).await }
    });
    // Frozen already: the waiter got the table. Break it now and ask again.
    within(waiting).await.unwrap().unwrap();
    g.close_task(t[0], true).await.unwrap();
    let err = at_once(g.wait_frozen_as(waiter, "ocean", LONG))
        .await
        .unwrap_err();
    assert_eq!(err, broken_by("ocean", 0, t[0]));

    let stranger = TaskId::new_v4();
    let err = at_once(g.wait_frozen_as(stranger, "ocean", SHORT))
        .await
        .unwrap_err();
    assert_eq!(err, GroupError::TaskNotFound(stranger));
}

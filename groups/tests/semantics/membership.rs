use isthmus_groups::{ErrorKind, GroupError, GroupSummary, Member};

use crate::{setup, state};

#[tokio::test]
async fn lowest_free_instance_fills_gaps() {
    let (g, t) = setup(5).await;
    assert_eq!(g.join("ring", t[0], None, vec![]).await.unwrap(), 0);
    assert_eq!(g.join("ring", t[1], None, vec![]).await.unwrap(), 1);
    assert_eq!(g.join("ring", t[2], None, vec![]).await.unwrap(), 2);
    g.leave("ring", t[1]).await.unwrap();
    assert_eq!(g.gsize("ring").await.unwrap(), 2);
    assert_eq!(
        g.join("ring", t[3], None, vec![]).await.unwrap(),
        1,
        "gap is reused"
    );
    assert_eq!(g.join("ring", t[4], None, vec![]).await.unwrap(), 3);
}

#[tokio::test]
async fn requested_instance_is_exact_or_conflicts() {
    let (g, t) = setup(4).await;
    assert_eq!(g.join("ring", t[0], Some(5), vec![]).await.unwrap(), 5);
    let before = state(&g).await;
    let err = g.join("ring", t[1], Some(5), vec![]).await.unwrap_err();
    assert_eq!(
        err,
        GroupError::InstanceTaken {
            group: "ring".into(),
            instance: 5,
            task: t[0]
        }
    );
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    assert_eq!(
        err.to_string(),
        format!("instance 5 of group \"ring\" is taken by task {}", t[0])
    );
    assert_eq!(state(&g).await, before, "conflict changed nothing");
    assert_eq!(g.join("ring", t[1], None, vec![]).await.unwrap(), 0);
    assert_eq!(g.join("ring", t[2], Some(1), vec![]).await.unwrap(), 1);
    assert_eq!(g.join("ring", t[3], None, vec![]).await.unwrap(), 2);
}

#[tokio::test]
async fn already_member_is_refused() {
    let (g, t) = setup(1).await;
    g.join("ring", t[0], None, vec![]).await.unwrap();
    let before = state(&g).await;
    for want in [None, Some(3)] {
        let err = g.join("ring", t[0], want, vec![]).await.unwrap_err();
        assert_eq!(
            err,
            GroupError::AlreadyMember {
                group: "ring".into(),
                task: t[0],
                instance: 0
            }
        );
        assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    }
    assert_eq!(state(&g).await, before);
}

#[tokio::test]
async fn a_task_may_be_in_many_groups() {
    let (g, t) = setup(2).await;
    for name in ["a", "b", "c"] {
        assert_eq!(g.join(name, t[0], None, vec![]).await.unwrap(), 0);
    }
    g.join("b", t[1], None, vec![]).await.unwrap();
    assert_eq!(g.list().await.unwrap().len(), 3);
    // Closing the task removes all its memberships at once.
    g.close_task(t[0], false).await.unwrap();
    let names: Vec<String> = g
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, vec!["b".to_string()]);
    assert_eq!(
        g.getinst("b", t[1]).await.unwrap(),
        1,
        "survivor keeps its instance"
    );
    assert_eq!(g.gsize("b").await.unwrap(), 1);
}

#[tokio::test]
async fn first_join_creates_last_leave_destroys() {
    let (g, t) = setup(2).await;
    assert!(g.list().await.unwrap().is_empty());
    g.join("job", t[0], None, vec![]).await.unwrap();
    g.join("job", t[1], None, vec![]).await.unwrap();
    let gen1 = g.table("job").await.unwrap().generation;
    g.leave("job", t[0]).await.unwrap();
    assert_eq!(
        g.table("job").await.unwrap().generation,
        gen1,
        "same group while non-empty"
    );
    g.leave("job", t[1]).await.unwrap();
    assert!(g.list().await.unwrap().is_empty());
    assert_eq!(
        g.table("job").await.unwrap_err(),
        GroupError::GroupNotFound("job".into())
    );
    assert_eq!(
        g.gsize("job").await.unwrap_err().kind(),
        ErrorKind::NotFound
    );

    g.join("job", t[1], None, vec![]).await.unwrap();
    let gen2 = g.table("job").await.unwrap().generation;
    assert_ne!(gen1, gen2, "re-creation gets a new generation");
    assert_eq!(g.getinst("job", t[1]).await.unwrap(), 0);
}

#[tokio::test]
async fn queries_report_members() {
    let (g, t) = setup(3).await;
    g.join("ring", t[0], Some(3), b"ep0".to_vec())
        .await
        .unwrap();
    g.join("ring", t[1], Some(1), b"ep1".to_vec())
        .await
        .unwrap();
    g.join("ring", t[2], None, b"ep2".to_vec()).await.unwrap();
    g.join("alpha", t[2], None, vec![]).await.unwrap();

    let m = g.gettid("ring", 3).await.unwrap();
    assert_eq!(
        m,
        Member {
            instance: 3,
            task: t[0],
            host: "host0".into(),
            endpoint: b"ep0".to_vec()
        }
    );
    assert_eq!(g.getinst("ring", t[1]).await.unwrap(), 1);
    assert_eq!(g.getinst("ring", t[2]).await.unwrap(), 0);
    assert_eq!(g.gsize("ring").await.unwrap(), 3);

    let table = g.table("ring").await.unwrap();
    assert_eq!(table.name, "ring");
    assert!(!table.frozen && !table.broken);
    let order: Vec<(u32, _)> = table.members.iter().map(|m| (m.instance, m.task)).collect();
    assert_eq!(
        order,
        vec![(0, t[2]), (1, t[1]), (3, t[0])],
        "sorted by instance"
    );
    assert_eq!(table.members[0].host, "host2");
    assert_eq!(table.members[0].endpoint, b"ep2");

    assert_eq!(
        g.list().await.unwrap(),
        vec![
            GroupSummary {
                name: "alpha".into(),
                size: 1,
                frozen: false,
                broken: false
            },
            GroupSummary {
                name: "ring".into(),
                size: 3,
                frozen: false,
                broken: false
            },
        ]
    );
}

#[tokio::test]
async fn tasks_must_be_open() {
    let (g, t) = setup(1).await;
    let stranger = isthmus_groups::TaskId::new_v4();
    assert_eq!(
        g.join("ring", stranger, None, vec![]).await.unwrap_err(),
        GroupError::TaskNotFound(stranger)
    );
    assert!(
        g.list().await.unwrap().is_empty(),
        "no group created by a failed join"
    );
    assert_eq!(
        g.open_task(t[0], "elsewhere").await.unwrap_err(),
        GroupError::TaskAlreadyOpen(t[0])
    );
    assert_eq!(
        g.close_task(stranger, true).await.unwrap_err(),
        GroupError::TaskNotFound(stranger)
    );

    g.close_task(t[0], false).await.unwrap();
    let err = g.join("ring", t[0], None, vec![]).await.unwrap_err();
    assert_eq!(err, GroupError::TaskNotFound(t[0]));
    assert_eq!(err.kind(), ErrorKind::NotFound);
    // A closed task may be opened again.
    g.open_task(t[0], "host0").await.unwrap();
    assert_eq!(g.join("ring", t[0], None, vec![]).await.unwrap(), 0);
}

#[tokio::test]
async fn leave_errors() {
    let (g, t) = setup(2).await;
    g.join("ring", t[0], None, vec![]).await.unwrap();
    let before = state(&g).await;
    assert_eq!(
        g.leave("ring", t[1]).await.unwrap_err(),
        GroupError::NotMember {
            group: "ring".into(),
            task: t[1]
        }
    );
    assert_eq!(
        g.leave("nope", t[0]).await.unwrap_err(),
        GroupError::GroupNotFound("nope".into())
    );
    assert_eq!(state(&g).await, before);
}

#[tokio::test]
async fn requested_instance_can_create_the_group() {
    let (g, t) = setup(2).await;
    assert_eq!(g.join("sparse", t[0], Some(7), vec![]).await.unwrap(), 7);
    assert_eq!(g.gsize("sparse").await.unwrap(), 1);
    assert_eq!(g.join("sparse", t[1], None, vec![]).await.unwrap(), 0);
}

#[tokio::test]
async fn a_task_records_its_process_and_is_held_by_its_store() {
    let (g, t) = setup(1).await;
    let run = isthmus_groups::TaskId::new_v4();
    let process = isthmus_groups::TaskProcess {
        pid: 4242,
        uid: 1000,
    };
    g.open_task_as(run, "host7", Some(process)).await.unwrap();
    let lease = g.task_lease(run).await.unwrap().expect("open task");
    assert_eq!(lease.host, "host7");
    assert_eq!(lease.process, Some(process));
    let plain = g.task_lease(t[0]).await.unwrap().expect("open task");
    assert_eq!(plain.process, None, "no process given, none recorded");

    let mut held = g.held_tasks().await.unwrap();
    held.sort();
    let mut expected = vec![t[0], run];
    expected.sort();
    assert_eq!(held, expected, "the store holds every task it opened");

    g.close_task(run, true).await.unwrap();
    assert_eq!(g.task_lease(run).await.unwrap(), None);
    assert_eq!(g.held_tasks().await.unwrap(), vec![t[0]]);
}

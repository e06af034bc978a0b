use isthmus_groups::{ErrorKind, GroupError, TaskId, MAX_ENDPOINT_LEN, MAX_INSTANCE};

use crate::{setup, state, within, LONG};

/// Names every public function must refuse, with the expected reason.
fn bad_names() -> Vec<(String, &'static str)> {
    vec![
        (String::new(), "is empty"),
        ("x".repeat(256), "is 256 bytes long"),
        ("ri\ng".to_string(), "control character U+000A"),
        ("nul\0".to_string(), "control character U+0000"),
        ("del\u{7f}".to_string(), "control character U+007F"),
    ]
}

#[tokio::test]
async fn bad_names_are_refused_everywhere_without_change() {
    let (g, t) = setup(1).await;
    g.join("ok", t[0], None, vec![]).await.unwrap();
    let before = state(&g).await;
    for (name, reason) in bad_names() {
        let n = name.as_str();
        let errors = vec![
            g.join(n, t[0], None, vec![]).await.unwrap_err(),
            g.leave(n, t[0]).await.unwrap_err(),
            g.gettid(n, 0).await.unwrap_err(),
            g.getinst(n, t[0]).await.unwrap_err(),
            g.gsize(n).await.unwrap_err(),
            g.table(n).await.unwrap_err(),
            within(g.freeze(n, 1, LONG)).await.unwrap_err(),
            within(g.wait_frozen(n, LONG)).await.unwrap_err(),
            within(g.barrier(n, t[0], None, LONG)).await.unwrap_err(),
        ];
        for err in errors {
            assert!(
                matches!(err, GroupError::InvalidName { .. }),
                "{n:?}: {err}"
            );
            assert_eq!(err.kind(), ErrorKind::InvalidArgument);
            assert!(err.to_string().contains(reason), "{n:?}: {err}");
            assert!(!err.to_string().contains('\n'), "name is escaped: {err}");
        }
        assert_eq!(state(&g).await, before, "{n:?}");
    }
    assert_eq!(
        g.join("", t[0], None, vec![])
            .await
            .unwrap_err()
            .to_string(),
        "group name \"\" is empty"
    );
}

#[tokio::test]
async fn longest_and_unicode_names_are_fine() {
    let (g, t) = setup(1).await;
    let long = "y".repeat(255);
    g.join(&long, t[0], None, vec![]).await.unwrap();
    g.join("réseau/équipe", t[0], None, vec![]).await.unwrap();
    assert_eq!(g.gsize(&long).await.unwrap(), 1);
    assert_eq!(g.list().await.unwrap().len(), 2);
}

#[tokio::test]
async fn absurd_instances_are_refused() {
    let (g, t) = setup(1).await;
    g.join("ok", t[0], None, vec![]).await.unwrap();
    let before = state(&g).await;
    for bad in [MAX_INSTANCE, u32::MAX] {
        for err in [
            g.join("ok2", t[0], Some(bad), vec![]).await.unwrap_err(),
            g.gettid("ok", bad).await.unwrap_err(),
        ] {
            assert_eq!(
                err,
                GroupError::InvalidInstance {
                    instance: bad,
                    max: MAX_INSTANCE
                }
            );
            assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        }
    }
    assert_eq!(state(&g).await, before);
    // The largest valid instance works.
    assert_eq!(
        g.join("ok2", t[0], Some(MAX_INSTANCE - 1), vec![])
            .await
            .unwrap(),
        MAX_INSTANCE - 1
    );
}

#[tokio::test]
async fn unknown_things_are_not_found_without_change() {
    let (g, t) = setup(2).await;
    g.join("ok", t[0], None, vec![]).await.unwrap();
    let before = state(&g).await;
    let ghost = TaskId::new_v4();

    let cases = vec![
        (
            g.gettid("nope", 0).await.unwrap_err(),
            GroupError::GroupNotFound("nope".into()),
        ),
        (
            g.getinst("nope", t[0]).await.unwrap_err(),
            GroupError::GroupNotFound("nope".into()),
        ),
        (
            g.gsize("nope").await.unwrap_err(),
            GroupError::GroupNotFound("nope".into()),
        ),
        (
            g.table("nope").await.unwrap_err(),
            GroupError::GroupNotFound("nope".into()),
        ),
        (
            g.leave("nope", t[0]).await.unwrap_err(),
            GroupError::GroupNotFound("nope".into()),
        ),
        (
            g.gettid("ok", 7).await.unwrap_err(),
            GroupError::InstanceNotFound {
                group: "ok".into(),
                instance: 7,
            },
        ),
        (
            g.getinst("ok", ghost).await.unwrap_err(),
            GroupError::TaskNotFound(ghost),
        ),
        (
            g.leave("ok", ghost).await.unwrap_err(),
            GroupError::TaskNotFound(ghost),
        ),
        (
            g.join("ok", ghost, None, vec![]).await.unwrap_err(),
            GroupError::TaskNotFound(ghost),
        ),
        (
            g.close_task(ghost, false).await.unwrap_err(),
            GroupError::TaskNotFound(ghost),
        ),
        (
            g.getinst("ok", t[1]).await.unwrap_err(),
            GroupError::NotMember {
                group: "ok".into(),
                task: t[1],
            },
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
        assert_eq!(got.kind(), ErrorKind::NotFound, "{got}");
    }
    assert_eq!(state(&g).await, before);
}

#[tokio::test]
async fn bad_hosts_and_endpoints_are_refused() {
    let (g, t) = setup(1).await;
    let fresh = TaskId::new_v4();
    let err = g.open_task(fresh, "evil\u{1b}[2J").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = g.open_task(fresh, &"h".repeat(300)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        g.join("x", fresh, None, vec![]).await.unwrap_err(),
        GroupError::TaskNotFound(fresh),
        "failed open registers nothing"
    );

    let err = g
        .join("x", t[0], None, vec![0; MAX_ENDPOINT_LEN + 1])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(g.list().await.unwrap().is_empty());
    g.join("x", t[0], None, vec![0; MAX_ENDPOINT_LEN])
        .await
        .unwrap();
}

#[test]
fn task_ids_round_trip_and_bad_ones_are_refused() {
    let t = TaskId::new_v4();
    let s = t.to_string();
    assert_eq!(s.len(), 36, "hyphenated");
    assert_eq!(s.parse::<TaskId>().unwrap(), t);
    let err = "not-a-uuid".parse::<TaskId>().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!("".parse::<TaskId>().is_err());
}

#[test]
fn error_kinds_map_to_status_classes() {
    let t = TaskId::new_v4();
    let g = || "g".to_string();
    assert_eq!(
        GroupError::Frozen { group: g() }.kind(),
        ErrorKind::FailedPrecondition
    );
    assert_eq!(
        GroupError::FreezeBelowSize {
            group: g(),
            members: 2,
            size: 1
        }
        .kind(),
        ErrorKind::FailedPrecondition
    );
    assert_eq!(
        GroupError::InstanceTaken {
            group: g(),
            instance: 1,
            task: t
        }
        .kind(),
        ErrorKind::AlreadyExists
    );
    assert_eq!(
        GroupError::AlreadyMember {
            group: g(),
            instance: 1,
            task: t
        }
        .kind(),
        ErrorKind::AlreadyExists
    );
    assert_eq!(
        GroupError::GroupBroken {
            group: g(),
            instance: 1,
            task: t
        }
        .kind(),
        ErrorKind::Aborted
    );
    assert_eq!(
        GroupError::BarrierBroken {
            group: g(),
            instance: 1,
            task: t,
            died: true
        }
        .kind(),
        ErrorKind::Aborted
    );
}

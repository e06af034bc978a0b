//! Owners in the store: the join that creates a group records its owner
//! and allow-list in the group's record ([`GroupAccess`]), where every
//! service over the same store reads it; the owner's later joins allow
//! more; the rule the caller gives decides joins of existing groups.
//! (Several vmds over one etcd, and a restarted vmd, are tested with real
//! vmds in `taskers/tests/security.rs`.)

use isthmus_groups::{GroupAccess, GroupError, Groups, Holder};

use crate::{setup, within, LONG};

/// What one join found, for the assertions.
#[derive(Debug, PartialEq)]
enum Seen {
    Free,
    Unowned,
    Owned(GroupAccess),
}

fn seen(h: Holder<'_>) -> Seen {
    match h {
        Holder::Free => Seen::Free,
        Holder::Unowned => Seen::Unowned,
        Holder::Owned(a) => Seen::Owned(a.clone()),
    }
}

/// Joins, recording what the rule was shown, admitting everything.
async fn join_seeing(
    g: &Groups,
    group: &str,
    t: isthmus_groups::TaskId,
    joiner: Option<GroupAccess>,
) -> Seen {
    let found = std::sync::Mutex::new(None);
    g.join_as(group, t, None, vec![], joiner, |h| {
        *found.lock().unwrap() = Some(seen(h));
        Ok::<(), GroupError>(())
    })
    .await
    .unwrap();
    found.into_inner().unwrap().expect("the rule was asked")
}

#[tokio::test]
async fn the_creating_join_records_the_owner_and_its_allowed() {
    let (g, t) = setup(4).await;
    let owner = GroupAccess::new(1001, [1003, 1002, 1002]);
    assert_eq!(owner.allowed, [1002, 1003]);
    assert_eq!(
        join_seeing(&g, "g", t[0], Some(owner.clone())).await,
        Seen::Free
    );
    assert_eq!(g.access("g").await.unwrap(), Some(owner.clone()));
    // Another uid's join (admitted by the rule) changes nothing...
    let stranger = GroupAccess::new(1002, [1004]);
    assert_eq!(
        join_seeing(&g, "g", t[1], Some(stranger)).await,
        Seen::Owned(owner.clone())
    );
    assert_eq!(g.access("g").await.unwrap(), Some(owner.clone()));
    // ...the owner's allows more.
    let more = GroupAccess::new(1001, [1005]);
    assert_eq!(
        join_seeing(&g, "g", t[2], Some(more)).await,
        Seen::Owned(owner)
    );
    assert_eq!(
        g.access("g").await.unwrap(),
        Some(GroupAccess::new(1001, [1002, 1003, 1005]))
    );
    // A group made without a known process has no owner.
    assert_eq!(join_seeing(&g, "h", t[3], None).await, Seen::Free);
    assert_eq!(g.access("h").await.unwrap(), None);
    assert_eq!(
        join_seeing(&g, "h", t[0], Some(GroupAccess::new(7, []))).await,
        Seen::Unowned
    );
    assert_eq!(g.access("none").await.unwrap(), None);
}

/// A caller's own refusal type.
#[derive(Debug, PartialEq)]
enum Refusal {
    Owner(u32),
    Group(GroupError),
}

impl From<GroupError> for Refusal {
    fn from(e: GroupError) -> Self {
        Refusal::Group(e)
    }
}

#[tokio::test]
async fn a_refusal_leaves_the_group_as_it_was() {
    let (g, t) = setup(2).await;
    g.join_as(
        "g",
        t[0],
        None,
        vec![],
        Some(GroupAccess::new(1001, [])),
        |_| Ok::<(), GroupError>(()),
    )
    .await
    .unwrap();
    let refused = g
        .join_as(
            "g",
            t[1],
            None,
            vec![],
            Some(GroupAccess::new(1002, [])),
            |h| match h {
                Holder::Owned(a) if a.owner != 1002 => Err(Refusal::Owner(a.owner)),
                _ => Ok(()),
            },
        )
        .await;
    // The caller's own error type comes back as it was given.
    assert_eq!(refused, Err(Refusal::Owner(1001)));
    assert_eq!(g.gsize("g").await.unwrap(), 1);
    // Once the group is gone, the name is free for anyone.
    g.leave("g", t[0]).await.unwrap();
    assert_eq!(
        join_seeing(&g, "g", t[1], Some(GroupAccess::new(1002, []))).await,
        Seen::Free
    );
    assert_eq!(
        g.access("g").await.unwrap(),
        Some(GroupAccess::new(1002, []))
    );
}

#[tokio::test]
async fn a_tombstone_is_nobodys() {
    let (g, t) = setup(2).await;
    g.join_as(
        "g",
        t[0],
        None,
        vec![],
        Some(GroupAccess::new(1001, [1002])),
        |_| Ok::<(), GroupError>(()),
    )
    .await
    .unwrap();
    within(g.freeze("g", 1, LONG)).await.unwrap();
    // The member dies: the broken group stays as a tombstone, nobody's.
    g.close_task(t[0], true).await.unwrap();
    assert_eq!(g.access("g").await.unwrap(), None);
    assert_eq!(
        join_seeing(&g, "g", t[1], Some(GroupAccess::new(1002, []))).await,
        Seen::Free
    );
    assert_eq!(
        g.access("g").await.unwrap(),
        Some(GroupAccess::new(1002, []))
    );
}

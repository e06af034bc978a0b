use isthmus_groups::{GroupEvent, GroupEventKind::*};

use crate::{setup, within, LONG};

#[tokio::test]
async fn events_arrive_in_order_with_increasing_seq() {
    let (g, t) = setup(3).await;
    let mut rx = g.subscribe();
    g.join("e", t[0], None, vec![]).await.unwrap();
    g.join("e", t[1], None, vec![]).await.unwrap();
    g.join("other", t[2], None, vec![]).await.unwrap();
    g.leave("other", t[2]).await.unwrap();
    within(g.freeze("e", 2, LONG)).await.unwrap();
    g.close_task(t[1], true).await.unwrap();
    g.close_task(t[0], false).await.unwrap();

    let mut got: Vec<GroupEvent> = Vec::new();
    for _ in 0..8 {
        got.push(within(rx.recv()).await.unwrap());
    }
    assert!(rx.try_recv().is_err(), "no extra events");
    for w in got.windows(2) {
        assert!(w[0].seq < w[1].seq, "seq increases: {:?}", got);
    }
    let summary: Vec<_> = got
        .iter()
        .map(|e| {
            (
                e.kind,
                e.group.as_str(),
                e.instance,
                e.task,
                e.size,
                e.group_broken,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (Joined, "e", Some(0), Some(t[0]), 1, false),
            (Joined, "e", Some(1), Some(t[1]), 2, false),
            (Joined, "other", Some(0), Some(t[2]), 1, false),
            (Left, "other", Some(0), Some(t[2]), 0, false),
            (Destroyed, "other", None, None, 0, false),
            (Frozen, "e", None, None, 2, false),
            (MemberDied, "e", Some(1), Some(t[1]), 1, true),
            // "e" is broken: emptied, it stays as a tombstone (no Destroyed).
            (Left, "e", Some(0), Some(t[0]), 0, true),
        ]
    );
}

#[tokio::test]
async fn failed_operations_emit_nothing() {
    let (g, t) = setup(2).await;
    g.join("e", t[0], Some(0), vec![]).await.unwrap();
    let mut rx = g.subscribe();
    let _ = g.join("e", t[1], Some(0), vec![]).await;
    let _ = g.join("e", t[0], None, vec![]).await;
    let _ = g.leave("e", t[1]).await;
    let _ = g.freeze("e", 0, LONG).await;
    assert!(rx.try_recv().is_err());
}

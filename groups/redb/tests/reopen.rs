//! The redb store across a "restart": a store dropped without any goodbye
//! (as a vmd killed with SIGKILL leaves it) and opened again on the same
//! file has every group (with its owner), member, lease and counter it had; and a file is
//! served by one store at a time.

#![cfg(test)]

use std::path::PathBuf;
use std::time::Duration;

use isthmus_groups::store::GroupSnapshot;
use isthmus_groups::{
    GroupAccess, GroupError, GroupEventKind, GroupStore, Groups, TaskId, TaskProcess,
};
use isthmus_groups_redb::{RedbStore, RedbStoreError};

struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        let d = std::env::temp_dir().join(format!("isthmus-redb-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn state(store: &RedbStore, names: &[&str]) -> Vec<Option<GroupSnapshot>> {
    let mut out = Vec::new();
    for n in names {
        out.push(store.snapshot(n).await.unwrap());
    }
    out
}

#[tokio::test]
async fn a_reopened_store_has_everything_the_killed_one_had() {
    let dir = Dir::new();
    // In a directory that does not exist yet: the store creates it.
    let path = dir.0.join("state/groups.redb");
    let (a, b, c) = (TaskId::new_v4(), TaskId::new_v4(), TaskId::new_v4());
    let pa = TaskProcess { pid: 41, uid: 1000 };
    let names = ["live", "frozen", "tomb", "gone"];
    let (seq_before, held_before) = {
        let groups = Groups::new(RedbStore::open(&path).unwrap());
        let mut events = groups.subscribe();
        groups.open_task_as(a, "h", Some(pa)).await.unwrap();
        groups.open_task(b, "h").await.unwrap();
        groups.open_task(c, "h").await.unwrap();
        // The group is a's uid's, letting 1001 in.
        groups
            .join_as(
                "live",
                a,
                None,
                b"ep-a".to_vec(),
                Some(GroupAccess::new(pa.uid, [1001])),
                |_| Ok::<(), GroupError>(()),
            )
            .await
            .unwrap();
        groups
            .join("live", b, Some(3), b"ep-b".to_vec())
            .await
            .unwrap();
        groups.join("frozen", a, None, vec![]).await.unwrap();
        groups.join("frozen", b, None, vec![]).await.unwrap();
        groups
            .freeze("frozen", 2, Duration::from_secs(5))
            .await
            .unwrap();
        groups.join("tomb", c, None, vec![]).await.unwrap();
        groups
            .freeze("tomb", 1, Duration::from_secs(5))
            .await
            .unwrap();
        groups.join("gone", b, None, vec![]).await.unwrap();
        groups.leave("gone", b).await.unwrap();
        // c dies: "tomb" stays as a tombstone, and c's lease goes.
        groups.close_task(c, true).await.unwrap();
        let mut seq = 0;
        while let Ok(e) = events.try_recv() {
            seq = e.seq;
        }
        let store = RedbStore::open(&path);
        assert!(
            matches!(store, Err(RedbStoreError::InUse(_))),
            "a second store on an open file: {:?}",
            store.err()
        );
        let mut held = groups.held_tasks().await.unwrap();
        held.sort();
        // No goodbye: the store is simply dropped, as kill -9 leaves it.
        (seq, held)
    };

    let store = RedbStore::open(&path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "only the vmd's user reads its tables");
    let after = state(&store, &names).await;
    let [live, frozen, tomb, gone] = &after[..] else {
        panic!("{after:?}")
    };
    let live = live.as_ref().expect("live kept");
    assert_eq!(
        live.members
            .iter()
            .map(|m| (m.instance, m.task, m.endpoint.clone()))
            .collect::<Vec<_>>(),
        vec![(0, a, b"ep-a".to_vec()), (3, b, b"ep-b".to_vec())]
    );
    // Its owner too: the vmd's rules read it after the restart.
    assert_eq!(
        live.meta.access,
        Some(GroupAccess::new(1000, [1001])),
        "the owner is kept"
    );
    let frozen = frozen.as_ref().expect("frozen kept");
    assert_eq!(frozen.meta.frozen_size, Some(2));
    assert!(frozen.meta.broken.is_none());
    let tomb = tomb.as_ref().expect("tombstone kept");
    assert!(tomb.meta.is_tombstone(tomb.members.len()));
    assert_eq!(tomb.meta.broken.map(|l| l.task), Some(c));
    assert!(gone.is_none(), "a destroyed group stays destroyed");

    let mut held = store.held_tasks().await.unwrap();
    held.sort();
    assert_eq!(held, held_before);
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(held, expected, "c died before the restart");
    let lease = store.lease(a).await.unwrap().expect("a's lease");
    assert_eq!(
        lease.process,
        Some(pa),
        "a resume checks the recorded process"
    );
    assert!(store.lease(c).await.unwrap().is_none());

    // The counters go on: the next event comes after every earlier one,
    // and a group made now has a generation never seen before.
    let groups = Groups::new(store);
    let mut events = groups.subscribe();
    groups.leave("live", b).await.unwrap();
    let e = events.try_recv().unwrap();
    assert_eq!(e.kind, GroupEventKind::Left);
    assert!(e.seq > seq_before, "{} after {seq_before}", e.seq);
    groups.join("new", a, None, vec![]).await.unwrap();
    let generation = groups.table("new").await.unwrap().generation;
    for old in [&frozen.meta, &tomb.meta] {
        assert!(generation > old.generation);
    }
    // A dead task's memberships went with it across the restart too.
    groups.close_task(a, true).await.unwrap();
    let frozen_now = groups.table("frozen").await.unwrap();
    assert!(frozen_now.broken);
}

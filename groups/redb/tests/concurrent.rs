//! Many tasks changing the redb store at once (the ranks of a job opening
//! their sessions and joining together): every change is on disk when its
//! call returns, whichever batch carried it. Prints how long the changes
//! took with the store's group commit.

#![cfg(test)]

use std::sync::Arc;
use std::time::Instant;

use isthmus_groups::{GroupStore, Groups, TaskId};
use isthmus_groups_redb::RedbStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_changes_are_all_on_disk_when_their_calls_return() {
    const N: u32 = 64;
    let dir = std::env::temp_dir().join(format!("isthmus-redb-{}", uuid::Uuid::new_v4()));
    let path = dir.join("groups.redb");
    let groups = Arc::new(Groups::new(RedbStore::open(&path).unwrap()));
    let started = Instant::now();
    let mut joins = tokio::task::JoinSet::new();
    let mut tasks = Vec::new();
    for i in 0..N {
        let task = TaskId::new_v4();
        tasks.push(task);
        let groups = groups.clone();
        joins.spawn(async move {
            groups.open_task(task, "h").await.unwrap();
            groups
                .join("job", task, Some(i), i.to_le_bytes().to_vec())
                .await
                .unwrap();
        });
    }
    while let Some(done) = joins.join_next().await {
        done.unwrap();
    }
    let took = started.elapsed();
    println!(
        "{N} sessions opened and joined at once: {took:?} ({:?} per change)",
        took / (2 * N)
    );
    // Every call has returned: all of it is on disk. Reopen on the file.
    drop(groups);
    let store = RedbStore::open(&path).unwrap();
    let snapshot = store.snapshot("job").await.unwrap().expect("the group");
    assert_eq!(snapshot.members.len(), N as usize);
    for m in &snapshot.members {
        assert_eq!(m.endpoint, m.instance.to_le_bytes().to_vec());
        assert_eq!(m.task, tasks[m.instance as usize]);
    }
    let mut held = store.held_tasks().await.unwrap();
    held.sort();
    tasks.sort();
    assert_eq!(held, tasks);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

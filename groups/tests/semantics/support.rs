//! Helpers shared by the semantics modules, whatever the store:
//! the crate root provides `new_groups`.

use std::future::Future;
use std::time::Duration;

use isthmus_groups::{GroupSummary, GroupTable, Groups, TaskId};

/// Generous bound on anything that should finish.
pub const GUARD: Duration = Duration::from_secs(10);
/// Deadline for operations that are expected to time out.
pub const SHORT: Duration = Duration::from_millis(60);
/// Deadline for operations that are expected to succeed.
pub const LONG: Duration = Duration::from_secs(5);

pub async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(GUARD, f)
        .await
        .expect("operation hung")
}

/// A service with `n` opened tasks (on hosts "host0", "host1", ...).
pub async fn setup(n: usize) -> (Groups, Vec<TaskId>) {
    let g = crate::new_groups().await;
    let mut tasks = Vec::new();
    for i in 0..n {
        let t = TaskId::new_v4();
        g.open_task(t, &format!("host{i}"))
            .await
            .expect("open_task");
        tasks.push(t);
    }
    (g, tasks)
}

/// Everything observable about all groups, to check errors changed nothing.
pub async fn state(g: &Groups) -> (Vec<GroupSummary>, Vec<GroupTable>) {
    let list = g.list().await.expect("list");
    let mut tables = Vec::new();
    for s in &list {
        tables.push(g.table(&s.name).await.expect("table"));
    }
    (list, tables)
}

/// Gives spawned tasks time to reach their wait.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

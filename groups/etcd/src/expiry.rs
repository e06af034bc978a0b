//! Tasks whose vmd is gone: when a vmd's lease expires, etcd deletes its
//! task keys but cannot touch the groups. Every store watches task keys;
//! on a deletion it removes that task's remaining memberships as deaths
//! (frozen groups become broken, `MemberDied` events go out). A revocation
//! removes the memberships in the same transactions that delete the task
//! key, so for it the sweep finds nothing. Several stores may sweep the
//! same task: the transactions compare, so exactly one removal happens.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{EventType, GetOptions, WatchFilterType, WatchOptions};
use isthmus_groups::TaskId;
use tracing::{debug, info, warn};

use crate::endpoints::next_watch_message;
use crate::shared::Core;

/// Removes the memberships of every task whose key is gone.
pub(crate) async fn sweep(core: &Core) {
    let keys_only = Some(GetOptions::new().with_prefix().with_keys_only());
    let indexed = match core.get(core.keys.all_task_groups(), keys_only).await {
        Ok(r) => r,
        Err(e) => return warn!(error = %e, "etcd: listing memberships for the expiry sweep"),
    };
    let tasks: BTreeSet<TaskId> = indexed
        .kvs()
        .iter()
        .filter_map(|kv| Some(core.keys.task_group_of(kv.key())?.0))
        .collect();
    for task in tasks {
        expire(core, task).await;
    }
}

async fn expire(core: &Core, task: TaskId) {
    match core.remove_all(task, true, false).await {
        Ok(Some(removals)) if !removals.is_empty() => {
            info!(%task, groups = removals.len(), "task's vmd lease expired: memberships removed as deaths")
        }
        Ok(_) => debug!(%task, "nothing left to expire"),
        Err(e) => warn!(%task, error = %e, "removing an expired task's memberships"),
    }
}

/// Watches task keys from `start` and expires each deleted one.
pub(crate) async fn follow(core: Arc<Core>, mut next: i64) {
    let tasks = core.keys.tasks();
    loop {
        let (member, mut client) = core.etcd.client();
        let options = WatchOptions::new()
            .with_prefix()
            .with_start_revision(next)
            .with_filters([WatchFilterType::NoPut]);
        match client.watch(tasks.clone(), Some(options)).await {
            Ok(mut stream) => loop {
                match next_watch_message(&mut stream).await {
                    Ok(Some(resp)) => {
                        if resp.canceled() {
                            next = next.max(resp.compact_revision());
                            // Which keys went is unknown: read them again.
                            core.own_tasks().clear();
                            // Deletions in the compacted part: sweep them all.
                            sweep(&core).await;
                            break;
                        }
                        for ev in resp.events() {
                            let Some(kv) = ev.kv() else { continue };
                            next = next.max(kv.mod_revision() + 1);
                            if ev.event_type() == EventType::Delete {
                                if let Some(task) = core.keys.task_of(kv.key()) {
                                    core.own_tasks().remove(&task);
                                    expire(&core, task).await;
                                }
                            }
                        }
                    }
                    Ok(None) => {
                        core.etcd.failed(member);
                        break;
                    }
                    Err(e) => {
                        warn!(error = %e, "the etcd task watch broke; reopening");
                        core.etcd.failed(member);
                        break;
                    }
                }
            },
            Err(e) => {
                debug!(error = %e, "opening the etcd task watch; retrying");
                core.etcd.failed(member);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

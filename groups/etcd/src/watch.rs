//! Following the change log: every transaction's events, in revision order,
//! onto the store's broadcast channel.
//!
//! Barrier outcomes in the log go to this store's waiters
//! ([`crate::barrier`]) before the revision counts as delivered.
//!
//! The watch starts at the revision after the last one delivered, so a
//! stream that breaks (etcd member lost, connection reset) and is opened
//! again misses nothing and repeats nothing.

use std::time::Duration;

use std::sync::Arc;

use etcd_client::{EventType, WatchOptions};
use isthmus_groups::GroupEvent;
use tokio::sync::broadcast;
use tracing::{debug, error, warn};

use crate::barrier::Waiters;
use crate::endpoints::{next_watch_message, Endpoints};
use crate::keys::Keys;
use crate::records::{decode_log, rev};

pub(crate) async fn follow_log(
    etcd: Arc<Endpoints>,
    keys: Keys,
    mut next: i64,
    events: broadcast::Sender<GroupEvent>,
    barriers: Arc<Waiters>,
    delivered: tokio::sync::watch::Sender<i64>,
) {
    let log = keys.log();
    loop {
        let options = WatchOptions::new().with_start_revision(next);
        let (member, mut client) = etcd.client();
        match client.watch(log.clone(), Some(options)).await {
            Ok(mut stream) => loop {
                match next_watch_message(&mut stream).await {
                    Ok(Some(resp)) => {
                        if resp.canceled() {
                            // History before compact_revision is gone: the
                            // changes in between cannot be replayed.
                            error!(
                                from = next,
                                compacted = resp.compact_revision(),
                                reason = resp.cancel_reason(),
                                "etcd compacted the change log past this watcher; changes were missed"
                            );
                            next = next.max(resp.compact_revision());
                            break;
                        }
                        for ev in resp.events() {
                            let Some(kv) = ev.kv() else { continue };
                            if ev.event_type() != EventType::Put {
                                continue;
                            }
                            let revision = kv.mod_revision();
                            match decode_log(kv.key(), kv.value()) {
                                Ok(recs) => {
                                    barriers.on_log(rev(revision), &recs);
                                    for (i, r) in recs.iter().enumerate() {
                                        if let Some(e) = r.event(rev(revision), i) {
                                            // No subscribers is fine.
                                            let _ = events.send(e);
                                        }
                                    }
                                }
                                Err(e) => {
                                    warn!(error = %e, revision, "skipping a change-log entry")
                                }
                            }
                            next = next.max(revision + 1);
                            delivered.send_replace(revision);
                        }
                    }
                    Ok(None) => {
                        etcd.failed(member);
                        break;
                    }
                    Err(e) => {
                        warn!(error = %e, "the etcd change-log watch broke; reopening");
                        etcd.failed(member);
                        break;
                    }
                }
            },
            Err(e) => {
                debug!(error = %e, "opening the etcd change-log watch; retrying");
                etcd.failed(member);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

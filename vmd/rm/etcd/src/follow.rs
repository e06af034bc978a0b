//! Following a key or a key range in etcd from a revision on, through
//! broken streams and lost members: every change once, in revision order.
//! Each table of this crate is followed this way; the follower knows keys
//! and revisions, not what the values mean.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{EventType, WatchOptions};
use isthmus_groups_etcd::endpoints::{next_watch_message, Endpoints};
use tokio::sync::mpsc;
use tracing::{debug, error, warn};

/// Changes queued for a slow consumer before the follower waits for it.
const QUEUE: usize = 1024;

/// One change of a followed key.
#[derive(Clone, Debug)]
pub enum Change {
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
    },
    /// A deleted key and its last value (etcd's `prev_kv`), if etcd still
    /// had it.
    Delete {
        key: Vec<u8>,
        last: Option<Vec<u8>>,
    },
}

/// Follows `key` (or every key under it, with `prefix`) from revision
/// `from` until the receiver is dropped.
pub(crate) fn follow(
    etcd: Arc<Endpoints>,
    key: String,
    prefix: bool,
    from: i64,
) -> mpsc::Receiver<Change> {
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(run(etcd, key, prefix, from, tx));
    rx
}

async fn run(
    etcd: Arc<Endpoints>,
    key: String,
    prefix: bool,
    mut next: i64,
    tx: mpsc::Sender<Change>,
) {
    loop {
        let mut options = WatchOptions::new()
            .with_start_revision(next)
            .with_prev_key();
        if prefix {
            options = options.with_prefix();
        }
        let (member, mut client) = etcd.client();
        match client.watch(key.clone(), Some(options)).await {
            Ok(mut stream) => {
                loop {
                    let message = tokio::select! {
                        m = next_watch_message(&mut stream) => m,
                        () = tx.closed() => return,
                    };
                    match message {
                        Ok(Some(resp)) => {
                            if resp.canceled() {
                                error!(key, from = next, compacted = resp.compact_revision(), "etcd compacted history past this follower; changes were missed");
                                next = next.max(resp.compact_revision());
                                break;
                            }
                            for ev in resp.events() {
                                let Some(kv) = ev.kv() else { continue };
                                let change = match ev.event_type() {
                                    EventType::Put => Change::Put {
                                        key: kv.key().to_vec(),
                                        value: kv.value().to_vec(),
                                    },
                                    EventType::Delete => Change::Delete {
                                        key: kv.key().to_vec(),
                                        last: ev.prev_kv().map(|p| p.value().to_vec()),
                                    },
                                };
                                next = next.max(kv.mod_revision() + 1);
                                if tx.send(change).await.is_err() {
                                    return;
                                }
                            }
                        }
                        Ok(None) => {
                            etcd.failed(member);
                            break;
                        }
                        Err(e) => {
                            warn!(key, error = %e, "an etcd watch broke; reopening");
                            etcd.failed(member);
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                debug!(key, error = %e, "opening an etcd watch; retrying");
                etcd.failed(member);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

//! Following the change log: every transaction's events, in revision order,
//! onto the store's broadcast channel, and every change to the group
//! tables into the store's [`Replica`].
//!
//! The watch covers the metas, the log and the members ([`Keys::watched`]).
//! Each revision's table changes are applied to the replica first, then
//! barrier outcomes in its log entry go to this store's waiters
//! ([`crate::barrier`]) and its events out, and only then does the
//! revision count as delivered.
//!
//! The watch starts at the revision after the last one delivered, so a
//! stream that breaks (etcd member lost, connection reset) and is opened
//! again misses nothing and repeats nothing. While it is broken, and after
//! reopening until it has passed the last logged change, the replica is
//! not used (see [`crate::replica`]).

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Event, EventType, WatchOptions, WatchResponse};
use isthmus_groups::GroupEvent;
use tokio::sync::broadcast;
use tracing::{debug, error, info, warn};

use crate::endpoints::{first_answer, next_watch_message, Endpoints};
use crate::keys::Keys;
use crate::records::{decode_log, rev};
use crate::replica::{self, Replica};
use crate::waiters::Waiters;

/// Where the follower delivers to.
pub(crate) struct Outlets {
    pub(crate) events: broadcast::Sender<GroupEvent>,
    pub(crate) barriers: Arc<Waiters>,
    pub(crate) delivered: tokio::sync::watch::Sender<i64>,
    pub(crate) replica: Arc<Replica>,
}

pub(crate) async fn follow_log(etcd: Arc<Endpoints>, keys: Keys, mut next: i64, out: Outlets) {
    let (from, to) = keys.watched();
    loop {
        let options = WatchOptions::new()
            .with_range(to.clone())
            .with_start_revision(next);
        let (member, mut client) = etcd.client();
        match client.watch(from.clone(), Some(options)).await {
            Ok(mut stream) => {
                // The replica is current again once the watch has passed
                // the last logged change as of now.
                let mut catch_up = None;
                if !out.replica.is_current() {
                    match last_logged(&etcd, &keys).await {
                        Ok(last) => catch_up = Some(last),
                        Err(e) => {
                            debug!(error = %e, "reading the change log's revision; reopening");
                            etcd.failed(member);
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                    }
                }
                loop {
                    if let Some(last) = catch_up.filter(|last| next > *last) {
                        debug!(revision = last, "the group replica is current again");
                        out.replica.set_current(true);
                        catch_up = None;
                    }
                    match next_watch_message(&mut stream).await {
                        Ok(Some(resp)) if resp.canceled() => {
                            next = compacted(&etcd, &keys, next, &resp, &out.replica).await;
                            break;
                        }
                        Ok(Some(resp)) => deliver(&keys, &resp, &mut next, &out),
                        Ok(None) => {
                            out.replica.set_current(false);
                            etcd.failed(member);
                            break;
                        }
                        Err(e) => {
                            warn!(error = %e, "the etcd change-log watch broke; reopening");
                            out.replica.set_current(false);
                            etcd.failed(member);
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                debug!(error = %e, "opening the etcd change-log watch; retrying");
                out.replica.set_current(false);
                etcd.failed(member);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Applies and delivers the revisions of one watch response (etcd never
/// splits a revision across responses).
fn deliver(keys: &Keys, resp: &WatchResponse, next: &mut i64, out: &Outlets) {
    let log = keys.log();
    let revision_of = |ev: &Event| ev.kv().map(|kv| kv.mod_revision()).unwrap_or(0);
    for changes in resp
        .events()
        .chunk_by(|a, b| revision_of(a) == revision_of(b))
    {
        let revision = changes.first().map(revision_of).unwrap_or(0);
        out.replica.apply(keys, rev(revision), changes);
        for ev in changes {
            let Some(kv) = ev.kv() else { continue };
            if ev.event_type() != EventType::Put || kv.key() != log.as_bytes() {
                continue;
            }
            match decode_log(kv.key(), kv.value()) {
                Ok(recs) => {
                    out.barriers.on_log(rev(revision), &recs);
                    for (i, r) in recs.iter().enumerate() {
                        if let Some(e) = r.event(rev(revision), i) {
                            // No subscribers is fine.
                            let _ = out.events.send(e);
                        }
                    }
                }
                Err(e) => warn!(error = %e, revision, "skipping a change-log entry"),
            }
        }
        *next = (*next).max(revision + 1);
        out.delivered.send_replace(revision);
    }
}

/// etcd compacted the history past `next`: the changes in between cannot
/// be replayed. Loads the replica again at the compacted revision and
/// returns where to resume; on failure the replica stays unused and the
/// next watch, refused again, tries again.
async fn compacted(
    etcd: &Endpoints,
    keys: &Keys,
    next: i64,
    resp: &WatchResponse,
    replica: &Replica,
) -> i64 {
    let at = resp.compact_revision();
    error!(
        from = next,
        compacted = at,
        reason = resp.cancel_reason(),
        "etcd compacted the change log past this watcher; changes were missed"
    );
    replica.set_current(false);
    if at <= next {
        return next;
    }
    match replica::load(etcd, keys, Some(at)).await {
        Ok(tables) => {
            info!(
                revision = at,
                "group replica loaded again after a compaction"
            );
            replica.replace(tables, false);
            at
        }
        Err(e) => {
            warn!(error = %e, revision = at, "loading the group replica again; retrying");
            next
        }
    }
}

/// The revision of the last transaction that wrote the change log (every
/// change to a meta or member does).
async fn last_logged(etcd: &Endpoints, keys: &Keys) -> Result<i64, etcd_client::Error> {
    let resp = first_answer(etcd, |mut c| {
        let log = keys.log();
        async move { c.get(log, None).await }
    })
    .await?;
    Ok(resp.kvs().first().map(|kv| kv.mod_revision()).unwrap_or(0))
}

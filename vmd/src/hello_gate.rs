//! Streams that have not said Hello yet: how many one uid, and everyone,
//! may hold open at once.
//!
//! Until its Hello a session stream is nobody's task, yet it holds the
//! vmd's memory (an HTTP/2 stream, its buffers, a tokio task) for up to
//! the Hello deadline. Without a bound, one admitted client opening
//! thousands of silent streams takes memory the vmd's real tasks need.
//! Past a bound a new stream is refused at once with `RESOURCE_EXHAUSTED`
//! naming it; streams that do say Hello leave the count straight away, so
//! a job whose ranks all connect at once never meets it unless it opens
//! more sessions than the bound within one round trip.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tonic::Status;

use crate::auth::Identity;

/// The bounds of a [`HelloGate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HelloLimits {
    /// Streams waiting for their Hello, all callers together.
    pub total: usize,
    /// Streams waiting for their Hello from one uid (peers without a uid,
    /// i.e. other hosts' vmds, count as one caller).
    pub per_uid: usize,
}

impl Default for HelloLimits {
    /// Far above a host's ranks connecting at once (each says Hello in its
    /// first round trip), small enough that the vmd's memory stays in tens
    /// of MiB while they are all held.
    fn default() -> Self {
        Self {
            total: 2048,
            per_uid: 512,
        }
    }
}

#[derive(Default)]
struct Counts {
    total: usize,
    by_uid: HashMap<Option<u32>, usize>,
}

/// Counts the streams that have not said Hello yet (shared by every
/// session of one vmd; cloning shares the counts).
#[derive(Clone, Default)]
pub struct HelloGate {
    limits: HelloLimits,
    counts: Arc<Mutex<Counts>>,
}

impl HelloGate {
    pub fn new(limits: HelloLimits) -> Self {
        Self {
            limits,
            counts: Arc::default(),
        }
    }

    pub fn limits(&self) -> HelloLimits {
        self.limits
    }

    /// Admits one more silent stream of `who`, or refuses naming the bound
    /// it would pass. The ticket leaves the count when dropped (after the
    /// Hello, or when the stream ends without one).
    pub fn enter(&self, who: &Identity) -> Result<HelloTicket, Status> {
        let mut counts = self.lock();
        let mine = counts.by_uid.get(&who.uid).copied().unwrap_or(0);
        if counts.total >= self.limits.total {
            return Err(Status::resource_exhausted(format!(
                "too many streams waiting for their Hello on this vmd (limit {}); say Hello first, or try again",
                self.limits.total
            )));
        }
        if mine >= self.limits.per_uid {
            return Err(Status::resource_exhausted(format!(
                "too many of your streams are waiting for their Hello (limit {} per user); say Hello first, or try again",
                self.limits.per_uid
            )));
        }
        counts.total += 1;
        *counts.by_uid.entry(who.uid).or_insert(0) += 1;
        Ok(HelloTicket {
            gate: self.clone(),
            uid: who.uid,
        })
    }

    /// Streams waiting for their Hello now.
    pub fn waiting(&self) -> usize {
        self.lock().total
    }

    fn leave(&self, uid: Option<u32>) {
        let mut counts = self.lock();
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.by_uid.get_mut(&uid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.by_uid.remove(&uid);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Counts> {
        // A poisoned count is still a count: every holder only adds or subtracts.
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One stream's place in the count until its Hello (see [`HelloGate::enter`]).
pub struct HelloTicket {
    gate: HelloGate,
    uid: Option<u32>,
}

impl Drop for HelloTicket {
    fn drop(&mut self) {
        self.gate.leave(self.uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Kind;

    fn user(uid: u32) -> Identity {
        Identity {
            uid: Some(uid),
            pid: None,
            kind: Kind::Local,
        }
    }

    #[test]
    fn per_uid_and_total_bounds_hold_and_free_on_drop() {
        let gate = HelloGate::new(HelloLimits {
            total: 3,
            per_uid: 2,
        });
        let a1 = gate.enter(&user(1)).unwrap();
        let _a2 = gate.enter(&user(1)).unwrap();
        let e = gate.enter(&user(1)).err().unwrap();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(e.message().contains("limit 2 per user"), "{e:?}");
        let _b1 = gate.enter(&user(2)).unwrap();
        let e = gate.enter(&user(2)).err().unwrap();
        assert!(e.message().contains("limit 3"), "{e:?}");
        assert_eq!(gate.waiting(), 3);
        drop(a1);
        assert_eq!(gate.waiting(), 2);
        gate.enter(&user(2)).unwrap();
        assert_eq!(gate.waiting(), 2, "a dropped ticket leaves the count");
    }
}

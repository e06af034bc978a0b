//! The sender's bound on memory held for unreceived messages
//! (`EngineConfig::send_buffer_limit`, `ISTHMUS_SEND_BUFFER_LIMIT`).
//!
//! A standard send of a small message that the receiver has no eager credit
//! for returns at once with its payload copied here, announced by RTS and
//! sent once matched (see `InterComm::send_bytes`). Without a bound, a
//! sender flooding a busy receiver would hold every such copy. Each copy
//! takes a [`Held`] from the process's [`SendBudget`] and gives it back when
//! the copy is freed (its DATA was written, or the send failed); a blocking
//! send that finds the budget spent does not copy but waits for its own
//! match instead (MPI lets a standard send block until then). Owned
//! payloads of nonblocking sends are charged too (they leave less room for
//! blocking sends to buffer), though they never block; lent ones
//! (`payload::Lent`, `MPI_Isend`) are the program's memory and are not.
//!
//! Every message held this way — a copy, an owned payload or a lent one —
//! is also a pending send: an entry here, its announcement, and in the C
//! library the request's own bookkeeping (about 1.3 KiB per `MPI_Isend`,
//! MPI's generalized request included), which lending does not save. Their
//! number has a bound of its own (`EngineConfig::max_pending_sends`,
//! `ISTHMUS_MAX_PENDING_SENDS`): a blocking send past it waits for its
//! match, and a nonblocking one fails with [`PendingFull`] — MPI's
//! "errors may occur when lack of resources prevent the execution of an
//! MPI call" (MPI 4.1 §3.5) — rather than the process growing without
//! bound (MPICH itself aborts past about 262,000 live requests).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Charged per held message besides its payload: the pending-send entry,
/// its queued announcement and allocator rounding (measured about 200 bytes
/// per 1 KiB message).
pub(crate) const HELD_COST: u64 = 256;

/// Bytes held for unreceived messages in this process, and the number of
/// sends holding them, each against a bound.
pub(crate) struct SendBudget {
    bound: u64,
    used: AtomicU64,
    max_pending: u64,
    pending: AtomicU64,
}

/// A share of the [`SendBudget`] (its bytes and one pending send),
/// returned when dropped.
pub(crate) struct Held {
    budget: Arc<SendBudget>,
    bytes: u64,
}

/// A nonblocking send found `limit` sends already waiting for their
/// receivers in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingFull {
    pub limit: u64,
}

impl SendBudget {
    /// A budget of `bound` bytes and `max_pending` pending sends.
    pub(crate) fn new(bound: u64, max_pending: u64) -> Arc<Self> {
        Arc::new(SendBudget {
            bound,
            used: AtomicU64::new(0),
            max_pending,
            pending: AtomicU64::new(0),
        })
    }

    /// One more pending send if fewer than the bound are.
    fn try_slot(&self) -> bool {
        self.pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (p < self.max_pending).then_some(p + 1)
            })
            .is_ok()
    }

    fn cost(len: usize) -> u64 {
        (len as u64).saturating_add(HELD_COST)
    }

    /// A share for a payload of `len` bytes if it fits under the bound
    /// and a pending send's slot is free.
    pub(crate) fn try_take(self: &Arc<Self>, len: usize) -> Option<Held> {
        let bytes = Self::cost(len);
        if !self.try_slot() {
            return None;
        }
        if self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                let n = u.checked_add(bytes)?;
                (n <= self.bound).then_some(n)
            })
            .is_err()
        {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Held {
            budget: Arc::clone(self),
            bytes,
        })
    }

    /// A share for a payload of `len` bytes, whether or not the bytes fit
    /// (a nonblocking send never waits for the budget), if a pending send's
    /// slot is free.
    pub(crate) fn take_pending(self: &Arc<Self>, len: usize) -> Result<Held, PendingFull> {
        if !self.try_slot() {
            return Err(PendingFull {
                limit: self.max_pending,
            });
        }
        Ok(self.charge(len))
    }

    /// A share for a payload of `len` bytes, whether or not it fits under
    /// either bound (a blocking send that gave up waiting for its match
    /// leaves its bytes behind: they were sent already, in the announcement).
    pub(crate) fn take(self: &Arc<Self>, len: usize) -> Held {
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.charge(len)
    }

    /// The bytes of a share whose pending slot is taken.
    fn charge(self: &Arc<Self>, len: usize) -> Held {
        let bytes = Self::cost(len);
        self.used.fetch_add(bytes, Ordering::AcqRel);
        Held {
            budget: Arc::clone(self),
            bytes,
        }
    }

    /// Bytes currently held.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// Sends currently holding a share.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> u64 {
        self.pending.load(Ordering::Acquire)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
        self.budget.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_fit_under_the_bound_and_come_back() {
        let b = SendBudget::new(3 * (1000 + HELD_COST), 100);
        let h1 = b.try_take(1000).unwrap();
        let h2 = b.try_take(1000).unwrap();
        let h3 = b.try_take(1000).unwrap();
        assert!(b.try_take(0).is_none());
        drop(h2);
        let h4 = b.try_take(1000).unwrap();
        let forced = b.take(5000);
        assert_eq!(b.used(), 3 * (1000 + HELD_COST) + 5000 + HELD_COST);
        drop((h1, h3, h4, forced));
        assert_eq!(b.used(), 0);
        assert_eq!(b.pending(), 0);
    }

    #[test]
    fn pending_sends_have_a_bound_of_their_own() {
        let b = SendBudget::new(u64::MAX, 3);
        let h1 = b.take_pending(1 << 20).unwrap();
        let h2 = b.try_take(10).unwrap();
        let h3 = b.take_pending(0).unwrap();
        assert_eq!(b.take_pending(0).err(), Some(PendingFull { limit: 3 }));
        assert!(b.try_take(0).is_none(), "a blocking send waits instead");
        assert_eq!(b.pending(), 3);
        drop(h2);
        let h4 = b.take_pending(0).unwrap();
        let forced = b.take(0);
        assert_eq!(b.pending(), 4);
        drop((h1, h3, h4, forced));
        assert_eq!((b.pending(), b.used()), (0, 0));
    }
}

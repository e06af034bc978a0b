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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Charged per held message besides its payload: the pending-send entry,
/// its queued announcement and allocator rounding (measured about 200 bytes
/// per 1 KiB message).
pub(crate) const HELD_COST: u64 = 256;

/// Bytes held for unreceived messages in this process, against a bound.
pub(crate) struct SendBudget {
    bound: u64,
    used: AtomicU64,
}

/// A share of the [`SendBudget`], returned when dropped.
pub(crate) struct Held {
    budget: Arc<SendBudget>,
    bytes: u64,
}

impl SendBudget {
    pub(crate) fn new(bound: u64) -> Arc<Self> {
        Arc::new(SendBudget {
            bound,
            used: AtomicU64::new(0),
        })
    }

    fn cost(len: usize) -> u64 {
        (len as u64).saturating_add(HELD_COST)
    }

    /// A share for a payload of `len` bytes if it fits under the bound.
    pub(crate) fn try_take(self: &Arc<Self>, len: usize) -> Option<Held> {
        let bytes = Self::cost(len);
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                let n = u.checked_add(bytes)?;
                (n <= self.bound).then_some(n)
            })
            .ok()?;
        Some(Held {
            budget: Arc::clone(self),
            bytes,
        })
    }

    /// A share for a payload of `len` bytes, whether or not it fits (a
    /// nonblocking send never waits for the budget).
    pub(crate) fn take(self: &Arc<Self>, len: usize) -> Held {
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
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_fit_under_the_bound_and_come_back() {
        let b = SendBudget::new(3 * (1000 + HELD_COST));
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
    }
}

//! The receiver's ledger of eager credits: how much unexpected-message
//! memory each peer may make this process hold, and when consumed memory
//! is handed back to its sender.
//!
//! Every connecting peer is granted a window (at most
//! `EngineConfig::eager_window` bytes) when its connection is accepted; the
//! sum of the windows of all peers never exceeds the process bound
//! (`EngineConfig::unexpected_limit`). Full windows go to peers only while
//! half the bound is free; later peers get at most [`REDUCED_WINDOW`], which
//! still carries small messages eagerly, so many more peers have credit (272
//! with the defaults, where full windows alone would serve 32). A peer that
//! connects once the bound is taken gets no window and sends every message
//! by rendezvous. A
//! sender spends `len + FRAME_COST` of its window per eager message; the
//! receiver checks each eager header against the window BEFORE reading the
//! payload (a peer that overdraws is cut off) and returns the bytes in
//! CREDIT frames once the message was consumed, lazily (a quarter window at
//! a time): a sender short of credit never waits for it, it falls back to
//! rendezvous.
//!
//! Rendezvous announcements (RTS) held unexpectedly cost memory too; each
//! peer may have at most [`MAX_UNEXPECTED_RTS`] of them here (senders never
//! have more outstanding), so a flood of envelopes is bounded as well.

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

use crate::sync::lock;

/// Receiver memory charged per eager message besides its payload (header,
/// queue entry); also what keeps zero-byte messages from being free.
pub(crate) const FRAME_COST: u64 = 128;
/// The most a peer is granted once half the bound is reserved: room for
/// small messages (thousands of a few hundred bytes, four at the 64 KiB
/// eager limit), not for streams of large ones.
pub(crate) const REDUCED_WINDOW: u64 = 256 << 10;
/// Unmatched rendezvous announcements a sender may have outstanding per peer.
pub(crate) const MAX_UNEXPECTED_RTS: u32 = 4096;

struct PeerAccount {
    /// Window granted at accept.
    grant: u64,
    /// Eager bytes received and still held (queued or being read).
    in_use: u64,
    /// Bytes consumed but not yet returned to the sender.
    unreturned: u64,
    /// Unmatched RTS envelopes held.
    rts: u32,
    /// The connection is open (its grant still counts against the bound).
    open: bool,
}

struct Accounts {
    /// Sum over peers of what they may make us hold (grant while open, in_use after).
    reserved: u64,
    peers: HashMap<Uuid, PeerAccount>,
}

/// Per-process ledger of eager credit.
pub(crate) struct Ledger {
    bound: u64,
    window: u64,
    accounts: Mutex<Accounts>,
}

impl Ledger {
    pub(crate) fn new(bound: u64, window: u64) -> Self {
        Ledger {
            bound,
            window,
            accounts: Mutex::new(Accounts {
                reserved: 0,
                peers: HashMap::new(),
            }),
        }
    }

    /// A connection from `peer` was accepted: its window (possibly 0).
    pub(crate) fn open(&self, peer: Uuid) -> u64 {
        let mut a = lock(&self.accounts);
        if a.peers.contains_key(&peer) {
            // A second connection from the same process (or one that left
            // messages behind): no second window, it sends by rendezvous.
            return 0;
        }
        let full = a.reserved.saturating_add(self.window) <= self.bound / 2;
        let window = if full {
            self.window
        } else {
            self.window.min(REDUCED_WINDOW)
        };
        let grant = window.min(self.bound.saturating_sub(a.reserved));
        a.reserved += grant;
        a.peers.insert(
            peer,
            PeerAccount {
                grant,
                in_use: 0,
                unreturned: 0,
                rts: 0,
                open: true,
            },
        );
        grant
    }

    /// An eager message of `cost` bytes from `peer` is about to be read.
    pub(crate) fn charge(&self, peer: Uuid, cost: u64) -> Result<(), String> {
        let mut a = lock(&self.accounts);
        let Some(p) = a.peers.get_mut(&peer) else {
            return Err("eager message from a peer without a credit window".into());
        };
        let used = p.in_use + p.unreturned;
        if used.saturating_add(cost) > p.grant {
            return Err(format!(
                "eager message of {cost} bytes exceeds the peer's credit ({} of {} bytes in use)",
                used, p.grant
            ));
        }
        p.in_use += cost;
        Ok(())
    }

    /// An eager message of `cost` bytes from `peer` was consumed (received
    /// or discarded). Returns the credit to send back now, if any.
    pub(crate) fn release(&self, peer: Uuid, cost: u64) -> Option<u64> {
        if cost == 0 {
            return None;
        }
        let mut a = lock(&self.accounts);
        let p = a.peers.get_mut(&peer)?;
        p.in_use = p.in_use.saturating_sub(cost);
        if !p.open {
            let gone = p.in_use == 0 && p.rts == 0;
            a.reserved = a.reserved.saturating_sub(cost);
            if gone {
                a.peers.remove(&peer);
            }
            return None;
        }
        p.unreturned += cost;
        // Batched: one CREDIT frame per quarter window, not one per message.
        if p.unreturned >= (p.grant / 4).max(1) {
            return Some(std::mem::take(&mut p.unreturned));
        }
        None
    }

    /// Credit that could not be sent back (no route to the peer): keep it owed.
    pub(crate) fn unsent(&self, peer: Uuid, bytes: u64) {
        if let Some(p) = lock(&self.accounts).peers.get_mut(&peer) {
            p.unreturned += bytes;
        }
    }

    /// An RTS from `peer` is held unmatched.
    pub(crate) fn rts_held(&self, peer: Uuid) -> Result<(), String> {
        let mut a = lock(&self.accounts);
        let Some(p) = a.peers.get_mut(&peer) else {
            return Err("rendezvous announcement from a peer without a connection".into());
        };
        if p.rts >= MAX_UNEXPECTED_RTS {
            return Err(format!(
                "more than {MAX_UNEXPECTED_RTS} unmatched rendezvous announcements"
            ));
        }
        p.rts += 1;
        Ok(())
    }

    /// A held RTS from `peer` was matched or dropped.
    pub(crate) fn rts_done(&self, peer: Uuid) {
        let mut a = lock(&self.accounts);
        if let Some(p) = a.peers.get_mut(&peer) {
            p.rts = p.rts.saturating_sub(1);
            if !p.open && p.in_use == 0 && p.rts == 0 {
                a.peers.remove(&peer);
            }
        }
    }

    /// `peer`'s connection ended: its window no longer counts, only what it left behind.
    pub(crate) fn close(&self, peer: Uuid) {
        let mut a = lock(&self.accounts);
        let Some(p) = a.peers.get_mut(&peer) else {
            return;
        };
        if !p.open {
            return;
        }
        p.open = false;
        p.unreturned = 0;
        let freed = p.grant.saturating_sub(p.in_use);
        let gone = p.in_use == 0 && p.rts == 0;
        a.reserved = a.reserved.saturating_sub(freed);
        if gone {
            a.peers.remove(&peer);
        }
    }

    /// Bytes currently reserved for unexpected eager messages (tests, logs).
    #[cfg(test)]
    pub(crate) fn reserved(&self) -> u64 {
        lock(&self.accounts).reserved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_never_exceed_the_bound() {
        let l = Ledger::new(1000, 400);
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        assert_eq!(l.open(a), 400);
        assert_eq!(l.open(b), 400);
        assert_eq!(l.open(c), 200);
        assert_eq!(l.reserved(), 1000);
        assert!(l.charge(c, 150).is_ok());
        assert!(l.charge(c, 51).is_err());
        assert_eq!(l.release(c, 150), Some(150));
        l.close(a);
        assert_eq!(l.reserved(), 600);
        assert_eq!(l.open(Uuid::new_v4()), 400);
    }

    #[test]
    fn full_windows_while_half_the_bound_is_free_then_reduced_ones() {
        let (bound, window) = (128u64 << 20, 4u64 << 20);
        let l = Ledger::new(bound, window);
        let grants: Vec<u64> = (0..400).map(|_| l.open(Uuid::new_v4())).collect();
        let full = grants.iter().filter(|&&g| g == window).count();
        let reduced = grants.iter().filter(|&&g| g == REDUCED_WINDOW).count();
        assert_eq!(full, 16);
        assert_eq!(reduced, 256);
        assert_eq!(full + reduced, grants.iter().filter(|&&g| g > 0).count());
        // Grants come in that order, and never exceed the bound.
        assert!(grants[..16].iter().all(|&g| g == window));
        assert!(grants[272..].iter().all(|&g| g == 0));
        assert_eq!(l.reserved(), bound);
    }

    #[test]
    fn overdraft_and_lazy_return() {
        let l = Ledger::new(1 << 20, 1000);
        let a = Uuid::new_v4();
        assert_eq!(l.open(a), 1000);
        l.charge(a, 100).unwrap();
        l.charge(a, 100).unwrap();
        assert_eq!(l.release(a, 100), None);
        // Owed credit still counts until it is sent back.
        l.charge(a, 800).unwrap();
        assert!(l.charge(a, 1).is_err());
        assert_eq!(l.release(a, 100), None);
        assert_eq!(l.release(a, 800), Some(1000));
        l.charge(a, 1000).unwrap();
    }

    #[test]
    fn rts_bound_and_closed_peers() {
        let l = Ledger::new(100, 100);
        let a = Uuid::new_v4();
        assert_eq!(l.open(a), 100);
        for _ in 0..MAX_UNEXPECTED_RTS {
            l.rts_held(a).unwrap();
        }
        assert!(l.rts_held(a).is_err());
        l.rts_done(a);
        l.rts_held(a).unwrap();
        for _ in 0..MAX_UNEXPECTED_RTS {
            l.rts_done(a);
        }
        l.charge(a, 60).unwrap();
        l.close(a);
        assert_eq!(l.reserved(), 60);
        assert_eq!(l.release(a, 60), None);
        assert_eq!(l.reserved(), 0);
    }
}

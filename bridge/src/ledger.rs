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
//! A window grows, as TCP's receive window does, for a peer that streams:
//! once an announcement said its sender lacked credit for a message it
//! would have sent eagerly (`WANTS_CREDIT`), our next receive from that
//! peer doubles its grant (to at least that message and at most
//! `EngineConfig::eager_window_max`), within the same half of the bound
//! that full windows come from, and the difference goes back at once with
//! the credit. A peer whose receiver does not receive keeps its window.
//! Across hosts a window must cover the bandwidth-delay product, which
//! there includes a thread's wake-up at each end: with 4 MiB (three 1 MiB
//! messages) a stream idled while credit came back, and ran at 0.74x raw
//! TCP across two network namespaces; grown to 16 MiB, 0.90x; to 32 MiB
//! (the default largest window), 0.97x, and 4 MiB messages 0.92x where
//! 16 MiB held three of them (0.83x). A grown window is kept until the
//! connection closes, and leaves less of the bound for later peers' full
//! windows.
//!
//! Over TCP a window may also be granted on our own connection to a peer,
//! in its DUPLEX frame (see `transport::duplex`): if the peer connects to
//! us before it reads that, the same window (reserved once) moves to the
//! peer's connection (`GrantedOn`), since it writes on one only.
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
    /// The largest message (plus its frame cost) the peer announced for
    /// want of credit since its window last grew; 0: none.
    wanted: u64,
    /// The connection is open (its grant still counts against the bound).
    open: bool,
    /// Which connection the window was granted on.
    granted_on: GrantedOn,
}

/// Which of the peer's connections to us carries what its window covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GrantedOn {
    /// The connection it opened to us (granted when we accepted it).
    Accepted,
    /// Our own connection to it, in our DUPLEX frame: not written on yet.
    DuplexOffered,
    /// Our own connection to it, which it writes on.
    Duplex,
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
    /// The most a window grows to.
    max_window: u64,
    accounts: Mutex<Accounts>,
}

impl Ledger {
    /// `window` granted at accept, grown up to `max_window` (at least `window`).
    pub(crate) fn new(bound: u64, window: u64, max_window: u64) -> Self {
        Ledger {
            bound,
            window,
            max_window: max_window.max(window),
            accounts: Mutex::new(Accounts {
                reserved: 0,
                peers: HashMap::new(),
            }),
        }
    }

    /// A connection from `peer` was accepted: its window (possibly 0).
    pub(crate) fn open(&self, peer: Uuid) -> u64 {
        let mut a = lock(&self.accounts);
        if let Some(p) = a.peers.get_mut(&peer) {
            if p.open && p.granted_on == GrantedOn::DuplexOffered {
                // It connected to us before it read our DUPLEX frame (both
                // connected at once): it never writes on our connection
                // (a process has one connection to each peer), so the
                // window offered there moves to this one.
                p.granted_on = GrantedOn::Accepted;
                return p.grant;
            }
            // A second connection from the same process (or one that left
            // messages behind): no second window, it sends by rendezvous.
            return 0;
        }
        self.open_locked(&mut a, peer, GrantedOn::Accepted)
    }

    /// We connected to `peer` over TCP and offer it to write to us on that
    /// connection (DUPLEX): its window, or None if it has an account
    /// already (it connected to us: its window stays with that connection
    /// unless it moves to ours, `moved_to_ours`).
    pub(crate) fn open_duplex(&self, peer: Uuid) -> Option<u64> {
        let mut a = lock(&self.accounts);
        if a.peers.contains_key(&peer) {
            return None;
        }
        Some(self.open_locked(&mut a, peer, GrantedOn::DuplexOffered))
    }

    /// `peer` wrote its first frame on our connection to it: true if we
    /// offered it that (DUPLEX) and its window is still there (not moved
    /// to a connection it opened to us); false is a protocol violation.
    pub(crate) fn duplex_used(&self, peer: Uuid) -> bool {
        self.regrant(peer, GrantedOn::DuplexOffered, GrantedOn::Duplex)
    }

    /// `peer` moved its frames from the connection it opened to us (whose
    /// window it was granted at accept) to ours (MOVED, see
    /// `transport::duplex`): the same window, offered on ours until its
    /// first frame there (`duplex_used`). False if it has no such window.
    pub(crate) fn moved_to_ours(&self, peer: Uuid) -> bool {
        self.regrant(peer, GrantedOn::Accepted, GrantedOn::DuplexOffered)
    }

    /// `peer`'s open window, granted on `from`, now counts as granted on
    /// `to`; false (nothing changed) if it is not open on `from`.
    fn regrant(&self, peer: Uuid, from: GrantedOn, to: GrantedOn) -> bool {
        let mut a = lock(&self.accounts);
        match a.peers.get_mut(&peer) {
            Some(p) if p.open && p.granted_on == from => {
                p.granted_on = to;
                true
            }
            _ => false,
        }
    }

    /// Our connection to `peer` (offered with DUPLEX) ended: close its
    /// account unless the window moved to a connection `peer` opened.
    pub(crate) fn close_duplex(&self, peer: Uuid) {
        let on_ours = lock(&self.accounts)
            .peers
            .get(&peer)
            .is_some_and(|p| p.granted_on != GrantedOn::Accepted);
        if on_ours {
            self.close(peer);
        }
    }

    fn open_locked(&self, a: &mut Accounts, peer: Uuid, granted_on: GrantedOn) -> u64 {
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
                wanted: 0,
                open: true,
                granted_on,
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
        // Batched: one CREDIT frame per quarter window, not one per message;
        // at once with a grown window's difference.
        let due = p.unreturned >= (p.grant / 4).max(1);
        let grown = self.grow_locked(&mut a, peer);
        if !due && grown.is_none() {
            return None;
        }
        let p = a.peers.get_mut(&peer)?;
        Some(std::mem::take(&mut p.unreturned) + grown.unwrap_or(0))
    }

    /// `peer` announced a message of `len` bytes it would have sent eagerly
    /// but for want of credit: its window may grow at our next receive from it.
    pub(crate) fn wanted(&self, peer: Uuid, len: u64) {
        if let Some(p) = lock(&self.accounts).peers.get_mut(&peer) {
            p.wanted = p.wanted.max(len.saturating_add(FRAME_COST));
        }
    }

    /// We received from `peer` (consumed an eager message or matched an
    /// announcement): if it lacked credit since its window last grew, grow
    /// the window (double it, to at least the message it announced, at
    /// most the largest window) provided the half of the bound that full
    /// windows come from has room. Returns the credit to grant now, if any.
    /// Growing only as we receive, as TCP's receive window grows with the
    /// rate its reader reads: a peer whose receiver does not receive keeps
    /// the window it was granted.
    pub(crate) fn grow(&self, peer: Uuid) -> Option<u64> {
        self.grow_locked(&mut lock(&self.accounts), peer)
    }

    fn grow_locked(&self, a: &mut Accounts, peer: Uuid) -> Option<u64> {
        let room = (self.bound / 2).saturating_sub(a.reserved);
        let p = a.peers.get_mut(&peer)?;
        let wanted = std::mem::take(&mut p.wanted);
        if wanted == 0 || !p.open || p.grant == 0 || p.grant >= self.max_window {
            return None;
        }
        let target = p.grant.saturating_mul(2).max(wanted).min(self.max_window);
        let extra = target.saturating_sub(p.grant);
        if extra == 0 || extra > room {
            return None;
        }
        p.grant = target;
        a.reserved += extra;
        Some(extra)
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
        let l = Ledger::new(1000, 400, 400);
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
        let l = Ledger::new(bound, window, window);
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
        let l = Ledger::new(1 << 20, 1000, 1000);
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
    fn a_streaming_peer_s_window_grows_as_it_is_received_within_half_the_bound() {
        let l = Ledger::new(1000, 100, 300);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        assert_eq!(l.open(a), 100);
        // Not wanted, or wanted while nothing is received: no growth.
        assert_eq!(l.grow(a), None);
        l.charge(a, 100).unwrap();
        l.wanted(a, 10);
        assert!(l.charge(a, 1).is_err(), "not grown before a receive");
        // A receive grows it (doubled) and returns the difference at once
        // with what was consumed, though less than a quarter window.
        assert_eq!(l.release(a, 20), Some(20 + 100));
        assert_eq!(l.release(a, 20), None, "batched again");
        l.wanted(a, 10);
        assert_eq!(l.grow(a), Some(100), "capped at the largest window");
        l.wanted(a, 10);
        assert_eq!(l.grow(a), None);
        assert_eq!(l.reserved(), 300);
        // Only from the half of the bound full windows come from.
        assert_eq!(l.open(b), 100);
        l.wanted(b, 5);
        assert_eq!(l.grow(b), Some(100));
        assert_eq!(l.reserved(), 500);
        assert_eq!(l.open(Uuid::new_v4()), 100.min(REDUCED_WINDOW));
        let c = Uuid::new_v4();
        let l2 = Ledger::new(1000, 100, 1000);
        assert_eq!(l2.open(c), 100);
        l2.wanted(c, 300);
        assert_eq!(l2.grow(c), Some(328), "grown to fit the message");
        l2.wanted(c, 0);
        assert_eq!(l2.grow(c), None, "more than half the bound");
        // A closed peer's grown window is freed with it.
        l2.close(c);
        assert_eq!(l2.reserved(), 0);
        l2.wanted(c, 0);
        assert_eq!(l2.grow(c), None);
    }

    #[test]
    fn a_duplex_window_moves_to_the_peer_s_own_connection_and_is_closed_once() {
        let l = Ledger::new(1000, 400, 400);
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        // Offered on our connection to `a`, then `a` connected to us too:
        // the same window, reserved once, belongs to its connection.
        assert_eq!(l.open_duplex(a), Some(400));
        assert_eq!(l.open(a), 400);
        assert_eq!(l.reserved(), 400);
        assert!(!l.duplex_used(a), "frames on both connections");
        l.close_duplex(a);
        assert_eq!(l.reserved(), 400, "ours ending does not close its window");
        // `b` has an account (it connected to us): no DUPLEX offer.
        assert_eq!(l.open(b), 400);
        assert_eq!(l.open_duplex(b), None);
        // `c` writes on our connection: its account, closed with it.
        assert_eq!(l.open_duplex(c), Some(200));
        assert!(l.duplex_used(c));
        assert!(!l.duplex_used(c), "used once");
        assert_eq!(l.open(c), 0, "a second connection gets no second window");
        l.close_duplex(c);
        assert_eq!(l.reserved(), 800);
        // `a` moves from its connection to ours: the same window, now
        // ours to close; a second move is refused.
        assert!(l.moved_to_ours(a));
        assert!(!l.moved_to_ours(a));
        assert!(l.duplex_used(a));
        l.close_duplex(a);
        assert_eq!(l.reserved(), 400);
        l.close(b);
        assert_eq!(l.reserved(), 0);
    }

    #[test]
    fn rts_bound_and_closed_peers() {
        let l = Ledger::new(100, 100, 100);
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

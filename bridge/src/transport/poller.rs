//! One thread watches every incoming connection (epoll), instead of a
//! thread per connection: a connection's socket is armed one-shot while
//! nobody holds its reader token; when it becomes readable the poller thread
//! takes the token, reads what is there and re-arms it.
//!
//! An application thread that took a token (leader/follower, see
//! `incoming`) gives it back lazily through [`Poller::hand_back`]: the
//! poller re-arms the socket only once no application thread waited on it
//! during a whole [`HANDBACK_TICK`], so a ping-pong that leaves the library
//! between messages never makes the poller thread wake per message.
//! The poller knows nothing of frames: it calls [`Watched`].

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::warn;

use crate::sync::lock;

/// How often the poller checks whether application threads left a connection.
pub(crate) const HANDBACK_TICK: Duration = Duration::from_millis(1);

/// Token of the poller's own wake-up eventfd.
const WAKE_TOKEN: u64 = 0;

/// What the poller watches (an incoming connection).
pub(crate) trait Watched: Send + Sync + 'static {
    /// The socket became readable (or has buffered bytes): read what is
    /// there, then re-arm or hand back.
    fn readable(&self);
    /// Handback check, once per tick: true when no application thread
    /// waited since `seen` (updated), i.e. the poller should take over.
    fn quiet_since(&self, seen: &mut u64) -> bool;
    /// Take over from the application: arm the socket, or read at once if
    /// bytes are already buffered.
    fn take_over(&self);
}

struct State {
    watched: HashMap<u64, Arc<dyn Watched>>,
    next_token: u64,
    /// Connections handed back by application threads, with the activity seen last tick.
    handback: Vec<(u64, u64)>,
    /// Connections with buffered bytes to read at once.
    ready: Vec<u64>,
    stop: bool,
}

pub(crate) struct Poller {
    epoll: OwnedFd,
    wake: OwnedFd,
    state: Mutex<State>,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Poller {
    pub(crate) fn new() -> io::Result<Arc<Poller>> {
        // SAFETY: plain syscalls without pointers; results are checked.
        let ep = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `ep` is a fresh descriptor nothing else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(ep) };
        // SAFETY: as above.
        let wfd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        // SAFETY: `wfd` is a fresh descriptor nothing else owns.
        let wake = unsafe { OwnedFd::from_raw_fd(wfd) };
        let p = Poller {
            epoll,
            wake,
            state: Mutex::new(State {
                watched: HashMap::new(),
                next_token: WAKE_TOKEN + 1,
                handback: Vec::new(),
                ready: Vec::new(),
                stop: false,
            }),
        };
        p.ctl(libc::EPOLL_CTL_ADD, p.wake.as_raw_fd(), WAKE_TOKEN, false)?;
        Ok(Arc::new(p))
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, oneshot: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32
                | if oneshot {
                    libc::EPOLLONESHOT as u32
                } else {
                    0
                },
            u64: token,
        };
        // SAFETY: `ev` is a live epoll_event; the kernel copies it.
        cvt(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut ev) }).map(|_| ())
    }

    fn kick(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own eventfd; a full counter already means "kicked".
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Watch `w` (socket `fd`, not armed yet); returns its token.
    pub(crate) fn add(&self, w: Arc<dyn Watched>) -> u64 {
        let mut st = lock(&self.state);
        let token = st.next_token;
        st.next_token += 1;
        st.watched.insert(token, w);
        token
    }

    /// Arm `fd` for one readiness event (first time: registers it).
    pub(crate) fn arm(&self, token: u64, fd: RawFd) -> io::Result<()> {
        match self.ctl(libc::EPOLL_CTL_MOD, fd, token, true) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                self.ctl(libc::EPOLL_CTL_ADD, fd, token, true)
            }
            r => r,
        }
    }

    /// Stop watching (before the socket is closed).
    pub(crate) fn remove(&self, token: u64, fd: RawFd) {
        let _ = self.ctl(libc::EPOLL_CTL_DEL, fd, token, false);
        let mut st = lock(&self.state);
        st.watched.remove(&token);
        st.handback.retain(|(t, _)| *t != token);
        st.ready.retain(|t| *t != token);
    }

    /// An application thread returned the reader token: take over once it is quiet.
    pub(crate) fn hand_back(&self, token: u64) {
        let mut st = lock(&self.state);
        if st.handback.iter().any(|(t, _)| *t == token) {
            return;
        }
        let was_empty = st.handback.is_empty();
        st.handback.push((token, u64::MAX));
        drop(st);
        if was_empty {
            // The poller may sleep without a tick.
            self.kick();
        }
    }

    /// Bytes are buffered for `token`: read them on the poller thread.
    pub(crate) fn run_soon(&self, token: u64) {
        lock(&self.state).ready.push(token);
        self.kick();
    }

    /// Make the poller thread return (engine shutdown); forgets every connection.
    pub(crate) fn stop(&self) {
        let mut st = lock(&self.state);
        st.stop = true;
        st.watched.clear();
        st.handback.clear();
        st.ready.clear();
        drop(st);
        self.kick();
    }

    /// The poller thread's body.
    pub(crate) fn run(&self) {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
        // Handed-back connections are judged once per whole tick, however
        // often the poller wakes meanwhile: a tick run at every wake-up
        // took a connection whose application thread waited on it a few
        // microseconds before for quiet, armed it, and every message on it
        // then rang the doorbell and woke this thread (a 4 + 4 Alltoall:
        // a third of a process's time in this thread, and its senders'
        // doorbell writes preempted by the wake-ups).
        let mut next_tick = Instant::now() + HANDBACK_TICK;
        loop {
            let timeout = {
                let st = lock(&self.state);
                if st.stop {
                    return;
                }
                if !st.ready.is_empty() {
                    0
                } else if st.handback.is_empty() {
                    -1
                } else {
                    let left = next_tick.saturating_duration_since(Instant::now());
                    // Rounded up: waking before the tick would only sleep again.
                    left.as_micros().div_ceil(1000) as libc::c_int
                }
            };
            // SAFETY: `events` is a live buffer of 64 epoll_event.
            let n = unsafe {
                libc::epoll_wait(
                    self.epoll.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as libc::c_int,
                    timeout,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    warn!(error = %e, "epoll_wait failed; incoming connections stall");
                    return;
                }
                continue;
            }
            for ev in events.iter().take(n as usize) {
                let token = ev.u64;
                if token == WAKE_TOKEN {
                    let mut v: u64 = 0;
                    // SAFETY: reads at most 8 bytes into a live u64 from our non-blocking eventfd.
                    unsafe { libc::read(self.wake.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
                    continue;
                }
                let w = lock(&self.state).watched.get(&token).cloned();
                if let Some(w) = w {
                    w.readable();
                }
            }
            let ready: Vec<Arc<dyn Watched>> = {
                let mut st = lock(&self.state);
                let tokens = std::mem::take(&mut st.ready);
                tokens
                    .iter()
                    .filter_map(|t| st.watched.get(t).cloned())
                    .collect()
            };
            for w in ready {
                w.readable();
            }
            let now = Instant::now();
            if now >= next_tick {
                self.tick();
                next_tick = now + HANDBACK_TICK;
            }
        }
    }

    /// Take over the handed-back connections whose application threads left.
    fn tick(&self) {
        let candidates: Vec<(u64, u64, Arc<dyn Watched>)> = {
            let st = lock(&self.state);
            st.handback
                .iter()
                .filter_map(|(t, seen)| st.watched.get(t).map(|w| (*t, *seen, Arc::clone(w))))
                .collect()
        };
        let mut quiet = Vec::new();
        let mut seen_now = Vec::new();
        for (t, mut seen, w) in candidates {
            if w.quiet_since(&mut seen) {
                quiet.push((t, w));
            } else {
                seen_now.push((t, seen));
            }
        }
        {
            let mut st = lock(&self.state);
            st.handback
                .retain(|(t, _)| !quiet.iter().any(|(q, _)| q == t));
            for (t, seen) in seen_now {
                if let Some(e) = st.handback.iter_mut().find(|(x, _)| *x == t) {
                    e.1 = seen;
                }
            }
            let State {
                watched, handback, ..
            } = &mut *st;
            handback.retain(|(t, _)| watched.contains_key(t));
        }
        for (_, w) in quiet {
            w.take_over();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    /// A connection whose application thread never comes back: quiet from
    /// the first look on.
    #[derive(Default)]
    struct Left {
        taken_over: Mutex<Option<Instant>>,
        readable: AtomicUsize,
    }

    impl Watched for Left {
        fn readable(&self) {
            self.readable.fetch_add(1, Ordering::SeqCst);
        }
        fn quiet_since(&self, seen: &mut u64) -> bool {
            let quiet = *seen == 7;
            *seen = 7;
            quiet
        }
        fn take_over(&self) {
            lock(&self.taken_over).get_or_insert_with(Instant::now);
        }
    }

    #[test]
    fn a_handed_back_connection_is_taken_over_after_a_whole_tick_however_often_the_poller_wakes() {
        let poller = Poller::new().unwrap();
        let left = Arc::new(Left::default());
        let busy = Arc::new(Left::default());
        let a = poller.add(left.clone());
        let b = poller.add(busy.clone());
        let runner = {
            let p = Arc::clone(&poller);
            std::thread::spawn(move || p.run())
        };
        let handed = Instant::now();
        poller.hand_back(a);
        // Another connection keeps waking the poller meanwhile.
        while lock(&left.taken_over).is_none() && handed.elapsed() < Duration::from_secs(5) {
            poller.run_soon(b);
            std::thread::sleep(Duration::from_micros(20));
        }
        poller.stop();
        runner.join().unwrap();
        let taken = lock(&left.taken_over).expect("never taken over");
        assert!(busy.readable.load(Ordering::SeqCst) > 0);
        assert!(
            taken.duration_since(handed) >= HANDBACK_TICK,
            "taken over {:?} after the hand-back",
            taken.duration_since(handed)
        );
    }
}

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
use std::time::Duration;

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
        loop {
            let timeout = {
                let st = lock(&self.state);
                if st.stop {
                    return;
                }
                if st.handback.is_empty() && st.ready.is_empty() {
                    -1
                } else {
                    HANDBACK_TICK.as_millis() as libc::c_int
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
            self.tick();
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

//! Who may open a data connection to this engine, and the connections not
//! admitted yet.
//!
//! Admitted: the members of the remote groups we hold intercommunicators
//! with (their public keys, learnt when each remote table arrives). Not yet
//! admitted: every accepted connection until its handshake is over and a
//! table names it. Those live in the `lobby` thread (one for the engine,
//! non-blocking sockets, no thread per connection); here they are counted
//! per source — the peer's uid on the Unix socket (`SO_PEERCRED`), its IP
//! address on TCP — and in all, so that nobody can make us hold more than
//! [`MAX_ADMITTING`] sockets, nor one source more than its limit, while
//! strangers cannot keep a known peer out unless they share its source.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::time::Instant;

use uuid::Uuid;

use crate::endpoint::{Endpoint, PUBLIC_KEY_LEN};
use crate::error::Result;
use crate::sync::lock;
use crate::transport::Stream;

/// Connections in the lobby (handshaking or waiting for a table) at once,
/// over all sources: each holds a descriptor and a few hundred bytes.
pub(crate) const MAX_ADMITTING: usize = 1024;

/// Where a connection comes from, for the per-source limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Source {
    /// Unix socket: the connecting process's user.
    Uid(u32),
    /// TCP: the connecting address.
    Ip(IpAddr),
    /// Unix socket whose credentials could not be read (one bucket for all).
    Unknown,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Uid(u) => write!(f, "uid {u}"),
            Source::Ip(a) => write!(f, "{a}"),
            Source::Unknown => f.write_str("unix socket (no credentials)"),
        }
    }
}

impl Source {
    /// The source of an accepted connection (`addr`: its TCP peer address).
    pub(crate) fn of(stream: &Stream, addr: Option<SocketAddr>) -> Source {
        match (stream, addr) {
            (Stream::Tcp(_), Some(a)) => Source::Ip(a.ip()),
            (Stream::Tcp(_), None) => Source::Unknown,
            (Stream::Unix(s), _) => peer_uid(s.as_raw_fd()).map_or(Source::Unknown, Source::Uid),
        }
    }
}

/// The uid of the process at the other end of a Unix socket.
fn peer_uid(fd: std::os::fd::RawFd) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are live and sized for SO_PEERCRED's ucred;
    // the kernel writes at most `len` bytes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred.uid)
}

/// An accepted connection on its way to the lobby thread.
pub(crate) struct Arrival {
    pub(crate) stream: Stream,
    pub(crate) source: Source,
    pub(crate) via: String,
    pub(crate) at: Instant,
}

/// What the lobby thread has to do after a wake-up.
pub(crate) struct Work {
    pub(crate) arrivals: Vec<Arrival>,
    /// A table was learnt since the last look: check the waiting connections.
    pub(crate) learnt: bool,
    pub(crate) closed: bool,
}

#[derive(Default)]
struct State {
    /// Process → public key, from the remote tables of our intercomms.
    /// Never shrinks: a process's key never changes, and the entries are
    /// bounded by the remote members this process formed intercomms with.
    keys: HashMap<Uuid, [u8; PUBLIC_KEY_LEN]>,
    /// Connections in the lobby, per source and in all.
    per_source: HashMap<Source, usize>,
    total: usize,
    arrivals: Vec<Arrival>,
    learnt: bool,
    closed: bool,
}

pub(crate) struct Admission {
    state: Mutex<State>,
    /// Limit of lobby connections per source.
    limit: usize,
    /// Wakes the lobby thread.
    waker: mio::Waker,
}

/// Token of the lobby's waker.
pub(crate) const WAKE: mio::Token = mio::Token(0);

impl Admission {
    /// An admission with its lobby's poll (moved into the lobby thread).
    pub(crate) fn new(limit: usize) -> io::Result<(Admission, mio::Poll)> {
        let poll = mio::Poll::new()?;
        let waker = mio::Waker::new(poll.registry(), WAKE)?;
        Ok((
            Admission {
                state: Mutex::new(State::default()),
                limit: limit.max(1),
                waker,
            },
            poll,
        ))
    }

    fn wake(&self) {
        // A failed wake-up leaves the lobby to its next deadline; nothing
        // else can be done about it here.
        let _ = self.waker.wake();
    }

    /// Accept connections from the processes of `remote` (a remote group's
    /// table). An endpoint whose id is not its key's is refused.
    pub(crate) fn learn(&self, remote: &[Endpoint]) -> Result<()> {
        for ep in remote {
            ep.check_identity()?;
        }
        let mut st = lock(&self.state);
        let mut new = false;
        for ep in remote {
            new |= st.keys.insert(ep.process, ep.public_key).is_none();
        }
        st.learnt |= new;
        drop(st);
        if new {
            self.wake();
        }
        Ok(())
    }

    /// The public key of `process` if a table we hold names it.
    pub(crate) fn known(&self, process: Uuid) -> Option<[u8; PUBLIC_KEY_LEN]> {
        lock(&self.state).keys.get(&process).copied()
    }

    /// An accepted connection enters the lobby; Err (with the stream, to
    /// close) when its source or the lobby is full, or we shut down.
    pub(crate) fn arrive(&self, a: Arrival) -> std::result::Result<(), (Arrival, String)> {
        let mut st = lock(&self.state);
        if st.closed {
            return Err((a, "engine shutting down".into()));
        }
        if st.total >= MAX_ADMITTING {
            return Err((
                a,
                format!("{MAX_ADMITTING} connections already wait to be admitted"),
            ));
        }
        let n = st.per_source.entry(a.source).or_insert(0);
        if *n >= self.limit {
            let limit = self.limit;
            return Err((
                a,
                format!("{limit} connections from this source already wait to be admitted (ISTHMUS_ADMISSION_PER_SOURCE)"),
            ));
        }
        *n += 1;
        st.total += 1;
        st.arrivals.push(a);
        drop(st);
        self.wake();
        Ok(())
    }

    /// A connection left the lobby (admitted, refused or out of time).
    pub(crate) fn left(&self, source: Source) {
        let mut st = lock(&self.state);
        st.total = st.total.saturating_sub(1);
        if let Some(n) = st.per_source.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                st.per_source.remove(&source);
            }
        }
    }

    /// What the lobby has to do now (clears the arrivals and the flag).
    pub(crate) fn work(&self) -> Work {
        let mut st = lock(&self.state);
        Work {
            arrivals: std::mem::take(&mut st.arrivals),
            learnt: std::mem::take(&mut st.learnt),
            closed: st.closed,
        }
    }

    /// Engine shutdown: the lobby closes every connection it holds.
    pub(crate) fn close(&self) {
        let mut st = lock(&self.state);
        st.closed = true;
        st.arrivals.clear();
        drop(st);
        self.wake();
    }
}

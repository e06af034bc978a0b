//! Single copy between two processes of one host: Cross Memory Attach
//! (`process_vm_readv`), as MPICH's CH4 IPC "cma" and Open MPI's
//! `smsc/cma` use it. A large message's receiver reads the payload
//! straight out of the sender's memory into its destination, instead of
//! the sender copying it into the ring and the receiver out of it.
//!
//! Who may read whom is decided once per shared-memory connection, by
//! its acceptor (the reader of the ring, i.e. the receiver of the
//! connector's messages): the connector's SHM frame carries the address
//! of [`PROBE_WORD`] in its memory; the acceptor, if it allows single
//! copy and the connector runs under its own uid (SO_PEERCRED), reads that
//! word with `process_vm_readv`. The kernel (Yama's `ptrace_scope`, a
//! container's seccomp policy) may refuse: then nothing changes. If the
//! word reads back right, the acceptor keeps a [`PeerMemory`] for the
//! connection and sets the ring's single-copy word, which tells the
//! connector that large messages may go as an address (see `frame`).
//!
//! What a peer's lies can do: the receiver reads only the address the
//! sender advertised for a message, and only the length of the message
//! its receive matched (within the receive's buffer), into that buffer; an
//! address outside the sender's memory makes the read fail (EFAULT), a
//! dead sender makes it fail (ESRCH), and either is an error on that one
//! receive. What is read from a lying sender is its own memory, which a
//! process of the same uid allowed to ptrace it could read anyway.
//!
//! Which process is read: `process_vm_readv` takes a pid, and a pid can
//! name another process once its owner died and was reaped. So at the
//! handshake, right after SO_PEERCRED gives the connector's pid, we take
//! a pidfd of it (`pidfd_open`) and then check that the socket's peer is
//! still connected: the connector's death would have closed it, so the
//! pidfd names the connector and not a process that got its pid since.
//! After every read we look at the pidfd (poll, zero timeout): readable
//! means the process exited, its pid may be someone else's by now, so
//! the bytes are discarded and the receive fails as the peer's death
//! fails it (`ReadError::Gone`). While the pidfd says it lives, the pid
//! was its own for the whole read. A kernel without pidfds (ENOSYS,
//! before Linux 5.3) gets no single copy at all (logged once).

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

use tracing::{debug, warn};

/// The environment variable that turns single copy off (`off`) or on (`on`, the default).
pub const ENV: &str = "ISTHMUS_SHM_CMA";
/// The environment variable for the smallest message sent by single copy (bytes; `64K`, `1M` work).
pub const THRESHOLD_ENV: &str = "ISTHMUS_SHM_CMA_THRESHOLD";
/// Messages of at least this many bytes go by single copy when the
/// connection allows it. A single copy costs a rendezvous (the RTS, the
/// read, the answer: two wake-ups when the waiters sleep); measured here
/// (bench/capi.sh, 2 cores) it moved 64 KiB at 0.22× the ring's speed and
/// 1 MiB at 3.3×, so it starts where the ring's two copies of the message
/// cost more than those wake-ups.
pub const DEFAULT_THRESHOLD: usize = 512 << 10;

/// The word a connector advertises in its SHM frame; the acceptor reads it
/// to learn that it may read the connector's memory.
static PROBE_WORD: u64 = 0x4973_7468_6d75_7343; // "IsthmusC"

/// The address of [`PROBE_WORD`] in this process (for our SHM frame).
pub(crate) fn probe_address() -> u64 {
    std::ptr::addr_of!(PROBE_WORD) as u64
}

/// How many messages went by single copy in this process, both ways
/// (`Engine::single_copy_stats`): what a test or a benchmark reads to see
/// which path large messages took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SingleCopyStats {
    /// Our sends that a receiver read from our memory (their answer said so).
    pub sent: u64,
    /// Messages we read from a sender's memory into a receive.
    pub received: u64,
    /// Bytes of those received messages.
    pub received_bytes: u64,
}

/// The counters behind [`SingleCopyStats`].
#[derive(Debug, Default)]
pub(crate) struct SingleCopyCounts {
    sent: AtomicU64,
    received: AtomicU64,
    received_bytes: AtomicU64,
}

impl SingleCopyCounts {
    pub(crate) fn sent(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn received(&self, bytes: u64) {
        self.received.fetch_add(1, Ordering::Relaxed);
        self.received_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> SingleCopyStats {
        SingleCopyStats {
            sent: self.sent.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            received_bytes: self.received_bytes.load(Ordering::Relaxed),
        }
    }
}

/// Why a read of the peer's memory failed.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The kernel does not let us read that process (EPERM, ENOSYS):
    /// nothing was read, the message may still go the other way.
    NotAllowed(io::Error),
    /// The peer is gone (ESRCH).
    Gone(io::Error),
    /// The advertised memory could not be read (EFAULT: not the peer's
    /// memory; a short read; anything else).
    Failed(io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotAllowed(e) => write!(f, "not allowed to read the peer's memory: {e}"),
            ReadError::Gone(e) => write!(f, "the peer process is gone: {e}"),
            ReadError::Failed(e) => write!(f, "{e}"),
        }
    }
}

/// About how long a peer takes to read `len` bytes of ours: what its
/// sender waits through before the answer can come (`wait::expecting`).
/// At 8 GB/s, below what `process_vm_readv` moved here (12–17 GB/s for
/// 1 MiB), so that a sender polls until the answer rather than sleeping
/// just before it.
pub(crate) fn read_time(len: usize) -> Duration {
    const BYTES_PER_US: u64 = 8_000;
    Duration::from_micros(len as u64 / BYTES_PER_US)
}

/// The memory of the process at the other end of a connection, readable
/// with `process_vm_readv` (probed at the handshake).
#[derive(Debug)]
pub(crate) struct PeerMemory {
    pid: libc::pid_t,
    /// A pidfd of that process, taken at the handshake: it tells whether
    /// `pid` is still that process (see the module's comment).
    pidfd: OwnedFd,
}

/// A pidfd of process `pid` (`pidfd_open`, Linux ≥ 5.3).
fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags (0) and returns a new
    // descriptor or -1; nothing of ours is passed by reference.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd =
        i32::try_from(fd).map_err(|_| io::Error::other(format!("pidfd_open returned {fd}")))?;
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether any of `events` is pending on `fd` now (poll, zero timeout).
fn pending(fd: impl AsFd, events: libc::c_short) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd of ours, a zero timeout.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        if n >= 0 {
            return Ok(n > 0 && p.revents != 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Logs, once per process, that the kernel has no pidfds.
fn no_pidfds(e: &io::Error) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        warn!(error = %e, "single copy (process_vm_readv) off: this kernel has no pidfd_open \
            (Linux 5.3 or later), without which a peer's pid cannot be told from another \
            process that got it after the peer died; large messages go through the ring");
    });
}

impl PeerMemory {
    /// The connector of `sock` (a Unix socket) advertised its probe word at `addr`: a
    /// [`PeerMemory`] if it runs under our uid and reading that word gives
    /// the word back; None (logged at debug level) otherwise.
    pub(crate) fn probe(sock: impl AsFd, addr: u64) -> Option<PeerMemory> {
        let sock = sock.as_fd();
        let cred = match rustix::net::sockopt::socket_peercred(sock) {
            Ok(c) => c,
            Err(e) => {
                debug!(error = %e, "single copy off: no credentials of the peer");
                return None;
            }
        };
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        if cred.uid.as_raw() != euid {
            debug!(
                peer_uid = cred.uid.as_raw(),
                "single copy off: the peer runs under another uid"
            );
            return None;
        }
        let pid = cred.pid.as_raw_nonzero().get();
        let pidfd = match pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                no_pidfds(&e);
                return None;
            }
            Err(e) => {
                debug!(pid, error = %e, "single copy off: no pidfd of the peer");
                return None;
            }
        };
        // Taken after the credentials: if the connector had died between
        // them, its socket would be closed (and the pid maybe another's).
        match pending(sock, libc::POLLHUP | libc::POLLRDHUP) {
            Ok(false) => {}
            Ok(true) => {
                debug!(pid, "single copy off: the peer closed its connection");
                return None;
            }
            Err(e) => {
                debug!(pid, error = %e, "single copy off: cannot poll the peer's socket");
                return None;
            }
        }
        let mem = PeerMemory { pid, pidfd };
        let mut word = [0u8; 8];
        match mem.read_into(addr, word.as_mut_ptr(), word.len()) {
            Ok(()) if u64::from_ne_bytes(word) == PROBE_WORD => {
                debug!(
                    pid = mem.pid,
                    "single copy on: the peer's memory is readable"
                );
                Some(mem)
            }
            Ok(()) => {
                debug!(
                    pid = mem.pid,
                    "single copy off: the peer's probe word reads wrong"
                );
                None
            }
            Err(e) => {
                debug!(pid = mem.pid, error = %e, "single copy off: cannot read the peer's probe word");
                None
            }
        }
    }

    /// Read `dst.len()` bytes at `addr` in the peer into `dst`. If the
    /// peer exited meanwhile, what was read (maybe another process's
    /// bytes) is wiped and the read fails (`Gone`).
    pub(crate) fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), ReadError> {
        let r = self.read_into(addr, dst.as_mut_ptr(), dst.len());
        if let Err(ReadError::Gone(_)) = &r {
            dst.fill(0);
        }
        r
    }

    /// `Gone` once the peer exited (its pidfd is readable): from then on
    /// its pid may name another process.
    fn still_alive(&self) -> Result<(), ReadError> {
        match pending(&self.pidfd, libc::POLLIN) {
            Ok(false) => Ok(()),
            Ok(true) => Err(ReadError::Gone(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "process {} exited (its pidfd says so); what was read from its pid is discarded",
                    self.pid
                ),
            ))),
            Err(e) => Err(ReadError::Gone(io::Error::new(
                e.kind(),
                format!("cannot tell whether process {} still lives: {e}", self.pid),
            ))),
        }
    }

    /// Read `len` bytes at `addr` in the peer into a new vector (allocation
    /// failure is an error, not an abort).
    pub(crate) fn read_vec(&self, addr: u64, len: usize) -> Result<Vec<u8>, ReadError> {
        let mut v: Vec<u8> = Vec::new();
        v.try_reserve_exact(len).map_err(|e| {
            ReadError::Failed(io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("cannot allocate {len} bytes for a message: {e}"),
            ))
        })?;
        let spare: &mut [MaybeUninit<u8>] = v.spare_capacity_mut();
        let dst = spare.as_mut_ptr().cast::<u8>();
        self.read_into(addr, dst, len)?;
        // SAFETY: `read_into` returned Ok only after the kernel wrote all
        // `len` bytes at `dst`, the vector's reserved capacity (>= len).
        unsafe { v.set_len(len) };
        Ok(v)
    }

    /// Read `len` bytes at `addr` in the peer to `dst`, which must be
    /// writable for `len` bytes (the callers pass a slice or reserved
    /// capacity). Partial reads (the remote range crosses into unmapped
    /// memory) go on from where they stopped; the next one then fails.
    fn read_into(&self, addr: u64, dst: *mut u8, len: usize) -> Result<(), ReadError> {
        let mut done = 0usize;
        while done < len {
            let remote_base = usize::try_from(addr)
                .ok()
                .and_then(|a| a.checked_add(done))
                .ok_or_else(|| {
                    ReadError::Failed(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("advertised address {addr:#x} + {len} bytes overflows"),
                    ))
                })?;
            let local = libc::iovec {
                // SAFETY: `done < len`, so the offset stays within the `len`
                // writable bytes at `dst` the caller guarantees.
                iov_base: unsafe { dst.add(done) }.cast(),
                iov_len: len - done,
            };
            let remote = libc::iovec {
                iov_base: remote_base as *mut libc::c_void,
                iov_len: len - done,
            };
            // SAFETY: the local iovec covers `len - done` writable bytes of
            // our own memory (see above); the remote one names the peer's
            // memory, which the kernel checks (a bad address is EFAULT, not
            // an access of ours); both iovec arrays have one element.
            let n = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                // A peer that exited may have left its pid to another
                // process, whose memory fails the read (EFAULT): that is
                // the peer's exit, not a bad address of its.
                self.still_alive()?;
                return Err(match e.raw_os_error() {
                    Some(libc::EPERM | libc::ENOSYS | libc::EACCES) => ReadError::NotAllowed(e),
                    Some(libc::ESRCH) => ReadError::Gone(e),
                    _ => ReadError::Failed(e),
                });
            }
            // Read from the peer only if the pid was still the peer's
            // during the read (its pidfd not yet readable: not exited).
            self.still_alive()?;
            if n == 0 {
                return Err(ReadError::Failed(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("read {done} of {len} bytes, then nothing"),
                )));
            }
            done = done.saturating_add(n.unsigned_abs());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> PeerMemory {
        let pid = std::process::id() as libc::pid_t;
        PeerMemory {
            pid,
            pidfd: pidfd_open(pid).unwrap(),
        }
    }

    #[test]
    fn reads_own_memory_and_refuses_a_bad_address() {
        let src: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let m = me();
        let got = match m.read_vec(src.as_ptr() as u64, src.len()) {
            Ok(v) => v,
            Err(ReadError::NotAllowed(e)) => {
                // A kernel or sandbox without CMA: nothing else to check here.
                eprintln!("process_vm_readv is not allowed here: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(got, src);
        let mut dst = vec![0u8; 64];
        assert!(matches!(m.read(8, &mut dst), Err(ReadError::Failed(_))));
        let mut probe = [0u8; 8];
        m.read(probe_address(), &mut probe).unwrap();
        assert_eq!(u64::from_ne_bytes(probe), PROBE_WORD);
        // An address whose range overflows.
        assert!(matches!(
            m.read(u64::MAX - 3, &mut dst),
            Err(ReadError::Failed(_))
        ));
    }
}

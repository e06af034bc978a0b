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
//! Limit: the pid comes from the socket's credentials at the handshake;
//! had the peer died and its pid been reused by another process of the
//! same uid before the read, the read would take that process's bytes
//! (the peer's death closes its socket, which fails the receive as soon
//! as it is read; pidfds would close that window).

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;

use tracing::debug;

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

/// The memory of the process at the other end of a connection, readable
/// with `process_vm_readv` (probed at the handshake).
#[derive(Debug)]
pub(crate) struct PeerMemory {
    pid: libc::pid_t,
}

impl PeerMemory {
    /// The connector of `sock` (a Unix socket) advertised its probe word at `addr`: a
    /// [`PeerMemory`] if it runs under our uid and reading that word gives
    /// the word back; None (logged at debug level) otherwise.
    pub(crate) fn probe(sock: impl AsFd, addr: u64) -> Option<PeerMemory> {
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
        let mem = PeerMemory {
            pid: cred.pid.as_raw_nonzero().get(),
        };
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

    /// Read `dst.len()` bytes at `addr` in the peer into `dst`.
    pub(crate) fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), ReadError> {
        self.read_into(addr, dst.as_mut_ptr(), dst.len())
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
                return Err(match e.raw_os_error() {
                    Some(libc::EPERM | libc::ENOSYS | libc::EACCES) => ReadError::NotAllowed(e),
                    Some(libc::ESRCH) => ReadError::Gone(e),
                    _ => ReadError::Failed(e),
                });
            }
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
        PeerMemory {
            pid: std::process::id() as libc::pid_t,
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

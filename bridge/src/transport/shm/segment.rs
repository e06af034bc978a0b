//! The shared segment behind a ring: an anonymous memory file
//! (`memfd_create`, no name another process could open), sealed so that
//! neither side can shrink or grow it (a peer that truncated it would make
//! our next access a SIGBUS), mapped shared. The acceptor creates it and
//! hands the descriptor over the authenticated Unix socket (SCM_RIGHTS);
//! the connector checks the seals and the size before mapping it.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

/// Bytes before the ring's data: the indices and wake-up words, each on a
/// cache line of its own.
pub(crate) const HEADER: usize = 4096;
/// Smallest and largest ring a connector accepts from its peer.
pub(crate) const MIN_RING: usize = 64 << 10;
pub(crate) const MAX_RING: usize = 64 << 20;

/// Seals a segment must carry before we map it.
fn required_seals() -> SealFlags {
    SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL
}

/// A mapped, sealed segment (header + ring of `ring` bytes).
pub(crate) struct Segment {
    base: NonNull<u8>,
    len: usize,
    ring: usize,
    fd: OwnedFd,
}

// SAFETY: the mapping is plain shared memory; `Ring` only touches it through
// atomics (the header) and byte copies of regions the SPSC protocol gives
// to one side at a time, so sharing the pointer between threads is sound.
unsafe impl Send for Segment {}
// SAFETY: as above.
unsafe impl Sync for Segment {}

impl Segment {
    /// Create, size, seal and map a segment with a ring of `ring` bytes (a
    /// power of two within [MIN_RING, MAX_RING]).
    pub(crate) fn create(ring: usize) -> io::Result<Segment> {
        if !ring.is_power_of_two() || !(MIN_RING..=MAX_RING).contains(&ring) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("ring size {ring} is not a power of two in [{MIN_RING}, {MAX_RING}]"),
            ));
        }
        let fd = rustix::fs::memfd_create(
            "isthmus-ring",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )?;
        rustix::fs::ftruncate(&fd, (HEADER + ring) as u64)?;
        rustix::fs::fcntl_add_seals(&fd, required_seals())?;
        Segment::map(fd, ring)
    }

    /// Check a segment the peer sent (seals, size) and map it.
    pub(crate) fn open(fd: OwnedFd) -> io::Result<Segment> {
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let seals = rustix::fs::fcntl_get_seals(&fd).map_err(|e| {
            bad(format!(
                "the peer's segment is not a sealable memory file: {e}"
            ))
        })?;
        if !seals.contains(required_seals()) {
            return Err(bad(format!(
                "the peer's segment is not sealed against resizing (seals {seals:?})"
            )));
        }
        let size = rustix::fs::fstat(&fd)?.st_size;
        let ring = usize::try_from(size)
            .ok()
            .and_then(|s| s.checked_sub(HEADER))
            .filter(|r| r.is_power_of_two() && (MIN_RING..=MAX_RING).contains(r))
            .ok_or_else(|| bad(format!("the peer's segment has a size of {size} bytes")))?;
        Segment::map(fd, ring)
    }

    fn map(fd: OwnedFd, ring: usize) -> io::Result<Segment> {
        let len = HEADER + ring;
        // SAFETY: a fresh shared mapping of `len` bytes of a memory file
        // sealed at exactly that size; no existing memory is affected.
        let p = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd.as_fd(),
                0,
            )?
        };
        let base = NonNull::new(p.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned a null mapping"))?;
        Ok(Segment {
            base,
            len,
            ring,
            fd,
        })
    }

    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Bytes of ring data (a power of two).
    pub(crate) fn ring_len(&self) -> usize {
        self.ring
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly our mapping, which nothing uses
        // any more (the Ring owning us is being dropped).
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

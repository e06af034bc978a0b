//! A collective's local buffers: what the collective bodies of both kinds
//! of communicator (`coll/`, on an Isthmus intercommunicator; `merged/`, on
//! a merged one) do with the program's buffer arguments before anything
//! moves. Counts as element numbers, the per-rank arrays of the v forms,
//! `MPI_IN_PLACE`, where the k-th element of a buffer lies, and scratch
//! memory laid out as MPI lays out a datatype (for a native step's result
//! at a job's leader, or a copy of an in-place buffer).
//!
//! Each algorithm keeps its own file (`coll/gather.rs`, `merged/vcoll.rs`,
//! …), as MPICH's `src/mpi/coll` does; this module is what they share.

use std::ffi::{c_int, c_void};

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::mpi_glue::MPI_Datatype;

// ------------------------------------------------------------ arguments

/// A count as a number of elements, refused if negative.
pub(crate) fn elements(n: c_int) -> Result<usize, BridgeError> {
    usize::try_from(n).map_err(|_| BridgeError::InvalidArgument(format!("count {n} is negative")))
}

/// Whether `dt` holds no bytes (`contiguous(0, …)`), so that any number of
/// its elements is an empty message.
fn has_no_bytes(dt: MPI_Datatype) -> bool {
    // An argument MPI does not read (the receive type at a root sending in
    // place) may be MPI_DATATYPE_NULL, whose MPI_Type_size would raise an
    // error through the program's handler: not asked.
    // SAFETY: reading rsmpi's predefined handle.
    if dt == unsafe { ffi::RSMPI_DATATYPE_NULL } {
        return false;
    }
    let mut size: c_int = 0;
    // SAFETY: reads the handle, writes one int; an invalid handle gives an
    // error code, left for the call itself to report.
    let rc = unsafe { ffi::PMPI_Type_size(dt, &mut size) };
    rc == 0 && size == 0
}

/// A count as the job's own nonblocking v-collectives are given it: 0 for
/// a type of no bytes. MPI matches such elements with an empty receive
/// (both type signatures are empty), but Open MPI 4.1's `MPI_Ialltoallv`
/// (libnbc) posts a receive for a non-zero count of a zero-size type that
/// the peer's zero count never sends, and waits forever (MPICH's
/// `coll/alltoallw_zeros`; the blocking forms are fine).
pub(crate) fn native_count(count: c_int, dt: MPI_Datatype) -> c_int {
    if count != 0 && has_no_bytes(dt) {
        0
    } else {
        count
    }
}

/// [`native_count`] of every count of a v-collective's array.
pub(crate) fn native_counts(counts: &[c_int], dt: MPI_Datatype) -> Vec<c_int> {
    if counts.iter().any(|&c| c != 0) && has_no_bytes(dt) {
        vec![0; counts.len()]
    } else {
        counts.to_vec()
    }
}

/// A number of elements as MPI's int count, refused if it does not fit.
pub(crate) fn int(n: usize) -> Result<c_int, BridgeError> {
    c_int::try_from(n)
        .map_err(|_| BridgeError::InvalidArgument(format!("{n} elements exceed an int count")))
}

/// `count` times `blocks`, checked against MPI's int counts.
pub(crate) fn times(count: usize, blocks: u32) -> Result<usize, BridgeError> {
    count
        .checked_mul(blocks as usize)
        .filter(|n| c_int::try_from(*n).is_ok())
        .ok_or_else(|| {
            BridgeError::InvalidArgument(format!(
                "{count} elements for each of {blocks} ranks exceed an int count"
            ))
        })
}

/// The i-th entry of a per-rank array of the program's.
///
/// # Safety
/// `a` is null or has an entry `i`.
pub(crate) unsafe fn entry<T: Copy>(a: *const T, i: usize, what: &str) -> Result<T, BridgeError> {
    if a.is_null() {
        return Err(BridgeError::InvalidArgument(format!("{what} is NULL")));
    }
    // SAFETY: an entry `i` (this function's contract).
    Ok(unsafe { *a.add(i) })
}

/// `n` ints of the program's array at `p` (counts or displacements).
///
/// # Safety
/// `p` is null or addresses `n` ints that stay unchanged during the call.
pub(crate) unsafe fn ints<'a>(p: *const c_int, n: usize) -> Result<&'a [c_int], BridgeError> {
    // SAFETY: forwarded.
    unsafe { array(p, n, "a counts or displacements array") }
}

/// `n` entries of the program's per-rank array `what` at `p` (counts,
/// displacements, datatypes).
///
/// # Safety
/// `p` is null or addresses `n` values that stay unchanged during the call.
pub(crate) unsafe fn array<'a, T>(
    p: *const T,
    n: usize,
    what: &str,
) -> Result<&'a [T], BridgeError> {
    if p.is_null() {
        return Err(BridgeError::InvalidArgument(format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

// ------------------------------------------------------------ MPI_IN_PLACE

/// Is `p` the `MPI_IN_PLACE` of the implementation built against (see
/// build.rs: Open MPI's is 1, MPICH's -1)? Compared as an address, never read.
pub(crate) fn is_in_place(p: *const c_void) -> bool {
    let v = if cfg!(isthmus_in_place_minus_one) {
        usize::MAX
    } else {
        1
    };
    p.addr() == v
}

/// Is `p` the `MPI_IN_PLACE` of either implementation (MPICH's
/// `(void*)-1`, Open MPI's `(void*)1`; no buffer lives at either address)?
pub(crate) fn in_place_of_either(p: *const c_void) -> bool {
    matches!(p.addr(), 1 | usize::MAX)
}

/// Where a reduction's input is: the send buffer, or the receive buffer
/// when the send buffer is `MPI_IN_PLACE`.
pub(crate) fn input(sendbuf: *const c_void, recvbuf: *mut c_void) -> *const c_void {
    if is_in_place(sendbuf) {
        recvbuf.cast_const()
    } else {
        sendbuf
    }
}

// ------------------------------------------------------------ layout

/// A datatype's extent, and its true lower bound and extent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Extents {
    pub extent: isize,
    pub true_lb: isize,
    pub true_extent: isize,
}

impl Extents {
    pub(crate) fn of(dt: MPI_Datatype) -> Result<Extents, BridgeError> {
        let [mut lb, mut extent, mut tlb, mut text]: [ffi::MPI_Count; 4] = [0; 4];
        // SAFETY: the calls only read the handle and write the four out-values.
        let rc = unsafe {
            ffi::PMPI_Type_get_extent_x(dt, &mut lb, &mut extent)
                | ffi::PMPI_Type_get_true_extent_x(dt, &mut tlb, &mut text)
        };
        if rc != 0 {
            return Err(BridgeError::InvalidArgument(
                "the datatype is not a valid MPI datatype".into(),
            ));
        }
        let conv = |v: ffi::MPI_Count| {
            isize::try_from(v)
                .map_err(|_| BridgeError::InvalidArgument(format!("datatype extent {v} overflows")))
        };
        Ok(Extents {
            extent: conv(extent)?,
            true_lb: conv(tlb)?,
            true_extent: conv(text)?,
        })
    }

    /// Bytes spanned by `count` elements (from the first's true lower bound).
    pub(crate) fn span(&self, count: usize) -> Result<usize, BridgeError> {
        if count == 0 {
            return Ok(0);
        }
        let n = isize::try_from(count - 1).ok();
        n.and_then(|n| n.checked_mul(self.extent))
            .and_then(|b| b.checked_add(self.true_extent))
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| {
                BridgeError::InvalidArgument(format!("{count} elements overflow a buffer"))
            })
    }

    /// The address of element `k` of a buffer of this type at `base`.
    pub(crate) fn at(&self, base: *const c_void, k: usize) -> Result<*mut c_void, BridgeError> {
        offset(base, self.extent, Some(k))
    }
}

/// `base + elements * extent` (an address, never read), checked; `None`
/// elements (an overflow the caller met) is the same error.
pub(crate) fn offset(
    base: *const c_void,
    extent: isize,
    elements: Option<usize>,
) -> Result<*mut c_void, BridgeError> {
    let off = elements
        .and_then(|e| isize::try_from(e).ok())
        .and_then(|e| e.checked_mul(extent))
        .ok_or_else(|| {
            BridgeError::InvalidArgument("a block lies beyond the address space".into())
        })?;
    Ok(base.cast::<u8>().wrapping_offset(off).cast_mut().cast())
}

// ------------------------------------------------------------ scratch

/// A scratch buffer of `count` elements of a datatype, aligned for any
/// basic type (16 bytes: `long double`), that MPI calls (native
/// reductions, the datatype glue) read and write as they would the
/// program's.
pub(crate) struct Scratch {
    mem: Vec<u128>,
    true_lb: isize,
}

/// The most scratch memory a thread keeps for its next collectives
/// (bytes, per buffer).
const SPARE_BYTES: usize = 16 << 20;
/// How many freed scratch buffers a thread keeps (a merged reduction
/// holds two at once).
const SPARES: usize = 2;

thread_local! {
    /// The scratch buffers this thread freed last, kept so that the next
    /// collective's do not fault in fresh pages (a megabyte is 256 page
    /// faults, more than the copy into it costs).
    static SPARE: std::cell::RefCell<Vec<Vec<u128>>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Scratch {
    pub(crate) fn new(count: usize, e: &Extents) -> Result<Scratch, BridgeError> {
        let words = e.span(count)?.div_ceil(16);
        let mut mem = SPARE
            .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
            .ok()
            .flatten()
            .unwrap_or_default();
        // A kept buffer is used as it is (initialized memory: what an
        // earlier collective left there), not zeroed: every use is an
        // output that an MPI call or a receive fills before it is read, and
        // zeroing a megabyte cost as much as copying it (`perf`: a fifth of
        // a merged 1 MiB Allreduce's time in memset).
        if mem.len() < words {
            mem = vec![0u128; words];
        }
        Ok(Scratch {
            mem,
            true_lb: e.true_lb,
        })
    }

    /// A copy of `count` elements at `src` (their span, gaps included).
    ///
    /// # Safety
    /// `src` addresses `count` readable elements of the datatype of `e`.
    pub(crate) unsafe fn copy_of(
        src: *const c_void,
        count: usize,
        e: &Extents,
    ) -> Result<Scratch, BridgeError> {
        let mut s = Scratch::new(count, e)?;
        let len = e.span(count)?;
        if len > 0 {
            let from = src.cast::<u8>().wrapping_offset(e.true_lb);
            let to = s.mem.as_mut_ptr().cast::<u8>();
            // SAFETY: `src`'s span of `len` bytes is readable (the
            // caller's contract); ours has as many, and they do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(from, to, len) };
        }
        Ok(s)
    }

    /// The buffer's address as MPI takes it (the first element's origin,
    /// before its true lower bound).
    pub(crate) fn ptr(&mut self) -> *mut c_void {
        self.mem
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_offset(-self.true_lb)
            .cast()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let mem = std::mem::take(&mut self.mem);
        if mem.len() * 16 > SPARE_BYTES {
            return;
        }
        let _ = SPARE.try_with(|s| {
            if let Ok(mut spares) = s.try_borrow_mut() {
                // Kept smallest first, so that `pop` takes the largest.
                spares.push(mem);
                spares.sort_by_key(Vec::len);
                if spares.len() > SPARES {
                    spares.remove(0);
                }
            }
        });
    }
}

/// Room for a native step's result at a job's leader (local rank 0, the
/// root of a native reduce or gather): `count` elements of a datatype
/// there — scratch, or a buffer of the program's that the collective may
/// write (allreduce's receive buffer) — nothing elsewhere.
pub(crate) struct LeaderRoom(Place);

enum Place {
    Elsewhere,
    Scratch(Scratch),
    Program(*mut c_void),
}

impl LeaderRoom {
    /// The room for `count` elements of `dt`, whose extents only the
    /// leader asks MPI for.
    pub(crate) fn new(
        leader: bool,
        count: usize,
        dt: MPI_Datatype,
    ) -> Result<LeaderRoom, BridgeError> {
        if !leader {
            return Ok(LeaderRoom(Place::Elsewhere));
        }
        LeaderRoom::of(true, count, &Extents::of(dt)?)
    }

    /// The room for `count` elements of a datatype of extents `e`.
    pub(crate) fn of(leader: bool, count: usize, e: &Extents) -> Result<LeaderRoom, BridgeError> {
        Ok(LeaderRoom(if leader {
            Place::Scratch(Scratch::new(count, e)?)
        } else {
            Place::Elsewhere
        }))
    }

    /// The program's own buffer `buf` as the room at the leader (one the
    /// collective writes anyway, with room for the native step's result).
    pub(crate) fn program(leader: bool, buf: *mut c_void) -> LeaderRoom {
        LeaderRoom(if leader {
            Place::Program(buf)
        } else {
            Place::Elsewhere
        })
    }

    /// The room's address at the leader.
    pub(crate) fn at_leader(&mut self) -> Option<*mut c_void> {
        match &mut self.0 {
            Place::Elsewhere => None,
            Place::Scratch(s) => Some(s.ptr()),
            Place::Program(p) => Some(*p),
        }
    }

    /// The address to give MPI: the room at the leader, null elsewhere
    /// (where MPI does not look at it).
    pub(crate) fn ptr(&mut self) -> *mut c_void {
        self.at_leader().unwrap_or(std::ptr::null_mut())
    }
}

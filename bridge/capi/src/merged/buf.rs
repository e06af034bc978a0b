//! Buffers of MPI datatypes for the merged collectives: a datatype's
//! extents, where the k-th element of a buffer is, and scratch buffers of
//! `count` elements that MPI calls (native reductions, the datatype glue)
//! can read and write as they would the user's.

use std::ffi::{c_int, c_void};

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::mpi_glue::MPI_Datatype;

/// A datatype's lower bound and extent, and its true lower bound and extent.
#[derive(Clone, Copy, Debug)]
pub struct Extents {
    pub extent: isize,
    pub true_lb: isize,
    pub true_extent: isize,
}

impl Extents {
    pub fn of(dt: MPI_Datatype) -> Result<Extents, BridgeError> {
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
    pub fn span(&self, count: usize) -> Result<usize, BridgeError> {
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
}

/// The address of element `k` of a buffer of `dt` (extent `e`) at `base`.
pub fn at(base: *const c_void, e: &Extents, k: usize) -> *mut c_void {
    let off = isize::try_from(k)
        .unwrap_or(isize::MAX)
        .wrapping_mul(e.extent);
    base.cast::<u8>().wrapping_offset(off).cast_mut().cast()
}

/// A scratch buffer of `count` elements of a datatype, aligned for any
/// basic type (16 bytes: `long double`).
pub struct Scratch {
    mem: Vec<u128>,
    true_lb: isize,
}

impl Scratch {
    pub fn new(count: usize, e: &Extents) -> Result<Scratch, BridgeError> {
        let bytes = e.span(count)?;
        Ok(Scratch {
            mem: vec![0u128; bytes.div_ceil(16)],
            true_lb: e.true_lb,
        })
    }

    /// A copy of `count` elements at `src` (their span, gaps included).
    ///
    /// # Safety
    /// `src` addresses `count` readable elements of the datatype of `e`.
    pub unsafe fn copy_of(
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
    pub fn ptr(&mut self) -> *mut c_void {
        self.mem
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_offset(-self.true_lb)
            .cast()
    }
}

/// A count as `usize`, refused if negative.
pub fn count(n: c_int) -> Result<usize, BridgeError> {
    usize::try_from(n).map_err(|_| BridgeError::InvalidArgument(format!("count {n} is negative")))
}

/// Is `p` MPI's `MPI_IN_PLACE` of the implementation built against (see
/// build.rs: Open MPI's is 1, MPICH's -1)? Compared as an address, never read.
pub fn is_in_place(p: *const c_void) -> bool {
    let v = if cfg!(isthmus_in_place_minus_one) {
        usize::MAX
    } else {
        1
    };
    p.addr() == v
}

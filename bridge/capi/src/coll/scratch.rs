//! Memory for a native step's result at a leader (a local reduce or
//! gather into a buffer the program did not give): room for `count`
//! elements of an MPI datatype laid out as MPI lays them out (extent and
//! true bounds), and a datatype's extent, to find the i-th block of a
//! buffer.

use std::ffi::c_void;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::mpi_glue::MPI_Datatype;

/// `count` elements' room, aligned for any predefined type.
pub(super) struct Scratch {
    mem: Vec<u128>,
    /// Where element 0 starts relative to `mem` (minus the true lower bound).
    shift: isize,
}

impl Scratch {
    pub(super) fn new(count: usize, dt: MPI_Datatype) -> Result<Scratch, BridgeError> {
        let (_, extent) = bounds(dt, false)?;
        let (true_lb, true_extent) = bounds(dt, true)?;
        let span = if count == 0 {
            0
        } else {
            extent
                .checked_mul(count as i64 - 1)
                .and_then(|s| s.checked_add(true_extent))
                .ok_or_else(|| too_big(count))?
        };
        let words = usize::try_from(span.max(0)).map_err(|_| too_big(count))? / 16 + 1;
        Ok(Scratch {
            mem: vec![0u128; words],
            shift: isize::try_from(-true_lb).map_err(|_| too_big(count))?,
        })
    }

    /// The buffer to pass to MPI (element 0's address).
    pub(super) fn ptr(&mut self) -> *mut c_void {
        (self.mem.as_mut_ptr() as *mut u8).wrapping_offset(self.shift) as *mut c_void
    }
}

fn too_big(count: usize) -> BridgeError {
    BridgeError::InvalidArgument(format!("{count} elements do not fit this process's memory"))
}

/// `(lb, extent)` of `dt`, or its true bounds.
fn bounds(dt: MPI_Datatype, true_bounds: bool) -> Result<(i64, i64), BridgeError> {
    let (mut lb, mut extent): (ffi::MPI_Count, ffi::MPI_Count) = (0, 0);
    // SAFETY: both calls only read the handle and write the two counts.
    let rc = unsafe {
        if true_bounds {
            ffi::PMPI_Type_get_true_extent_x(dt, &mut lb, &mut extent)
        } else {
            ffi::PMPI_Type_get_extent_x(dt, &mut lb, &mut extent)
        }
    };
    if rc != 0 {
        return Err(BridgeError::InvalidArgument("invalid datatype".into()));
    }
    Ok((lb, extent))
}

/// `base + elements * extent`, checked.
pub(super) fn offset_by(
    base: *const c_void,
    extent: i64,
    elements: Option<usize>,
) -> Result<*const c_void, BridgeError> {
    let off = elements
        .and_then(|e| i64::try_from(e).ok())
        .and_then(|e| e.checked_mul(extent))
        .and_then(|o| isize::try_from(o).ok())
        .ok_or_else(|| {
            BridgeError::InvalidArgument("a block lies beyond the address space".into())
        })?;
    Ok((base as *const u8).wrapping_offset(off) as *const c_void)
}

/// The extent of `dt`.
pub(super) fn extent(dt: MPI_Datatype) -> Result<i64, BridgeError> {
    Ok(bounds(dt, false)?.1)
}

//! `MPI_MAX` and `MPI_MIN` on unsigned integers where the job's own MPI
//! gets them wrong. Debian's MPICH 4.0.2 compares every unsigned type as
//! signed (natively, MAX(200, 1) on `MPI_UNSIGNED_CHAR` is 1), and Debian's
//! Open MPI 4.1.4 does so for `MPI_UNSIGNED_LONG` (MAX(2^63, 1) is 1). A
//! collective on an Isthmus communicator does its reductions with the job's
//! own MPI, and the other job would receive that wrong value. So a
//! reduction's native steps ask [`native_op`] for the operation to use: the
//! program's own, unless it is `MPI_MAX`/`MPI_MIN` on a predefined unsigned
//! integer type that the local MPI failed a probe on at first use
//! (`PMPI_Reduce_local` of MAX(top bit, 1) on that type), in which case it
//! is Isthmus's own (commutative, made with `PMPI_Op_create` once); the
//! same for `MPI_SUM` on 8- and 16-bit integers (`narrow_sum`).

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use isthmus_bridge::datatype::BasicType;
use mpi::ffi;

use crate::datatype::info_of;
use crate::mpi_glue::MPI_Datatype;
use crate::probed_types::ProbedTypes;

/// Isthmus's own MAX and MIN, made once where the local MPI needs them.
#[derive(Clone, Copy)]
struct Fixed {
    max: ffi::MPI_Op,
    min: ffi::MPI_Op,
}

// SAFETY: MPI handles are process-wide values, not tied to the thread that
// made them; these two are only read after they are made, and MPI's thread
// level governs their use, as for any handle.
unsafe impl Send for Fixed {}
// SAFETY: as above.
unsafe impl Sync for Fixed {}

/// Made at the first type the local MPI gets wrong (None: they could not be made).
static FIXED: OnceLock<Option<Fixed>> = OnceLock::new();

/// Per predefined unsigned type (by handle): whether the local MPI's MAX on
/// it is right.
static PROBED: ProbedTypes = ProbedTypes::new();

/// The width in bytes of an unsigned integer basic type, else None.
fn unsigned_width(b: BasicType) -> Option<usize> {
    use BasicType::*;
    match b {
        UnsignedChar | U8 => Some(1),
        UnsignedShort | U16 => Some(2),
        Unsigned | U32 => Some(4),
        U64 | UnsignedLongLong => Some(8),
        UnsignedLong => Some(std::mem::size_of::<std::ffi::c_ulong>()),
        _ => None,
    }
}

/// The width of `dt`'s elements if it is a run of one unsigned integer type.
fn width_of(dt: MPI_Datatype) -> Option<usize> {
    info_of(dt).ok()?.contiguous_basic.and_then(unsigned_width)
}

/// Whether the local MPI's MAX on `dt`, `width` bytes of unsigned
/// integer, is right: MAX(top bit, 1) must be the top bit.
fn local_max_is_right(dt: MPI_Datatype, width: usize) -> bool {
    PROBED.verdict(dt, || {
        // Little-endian (x86-64): the top bit of a `width`-byte integer is bit 7
        // of its byte `width - 1`.
        let mut top = [0u8; 8];
        let mut inout = [0u8; 8];
        if let Some(b) = top.get_mut(width.clamp(1, 8) - 1) {
            *b = 0x80;
        }
        inout[0] = 1;
        // SAFETY: one element of `dt` (at most 8 bytes) in each buffer, both
        // valid for the call; MPI is initialized (we are inside a collective).
        let rc = unsafe {
            ffi::PMPI_Reduce_local(
                top.as_ptr().cast(),
                inout.as_mut_ptr().cast(),
                1,
                dt,
                ffi::RSMPI_MAX,
            )
        };
        let right = rc != 0 || inout == top;
        if !right {
            tracing::info!(
                "this MPI computes MPI_MAX/MPI_MIN on an unsigned type as signed: \
                 Isthmus's reductions use their own"
            );
        }
        right
    })
}

/// The operation the native steps of a reduction of `dt` with `op` use.
pub(crate) fn native_op(op: ffi::MPI_Op, dt: MPI_Datatype) -> ffi::MPI_Op {
    // The other predefined operation a Debian MPI gets wrong.
    if let Some(sum) = crate::narrow_sum::replacement(op, dt) {
        return sum;
    }
    // SAFETY: reading MPI's predefined handles, constant after MPI_Init.
    let (max, min) = unsafe { (ffi::RSMPI_MAX, ffi::RSMPI_MIN) };
    if op != max && op != min {
        return op;
    }
    match width_of(dt) {
        Some(width) if !local_max_is_right(dt, width) => {}
        _ => return op,
    }
    let fixed = FIXED.get_or_init(|| {
        let (mut fmax, mut fmin) = (max, min);
        // SAFETY: the functions match MPI_User_function; the handles are
        // written by the calls.
        let ok = unsafe {
            ffi::PMPI_Op_create(Some(unsigned_max), 1, &mut fmax) == 0
                && ffi::PMPI_Op_create(Some(unsigned_min), 1, &mut fmin) == 0
        };
        ok.then_some(Fixed {
            max: fmax,
            min: fmin,
        })
    });
    match fixed {
        Some(f) if op == max => f.max,
        Some(f) => f.min,
        None => op,
    }
}

/// `inout[i] = pick(in[i], inout[i])` over `len` elements of `dt`.
///
/// # Safety
/// As an `MPI_User_function`: `invec` and `inoutvec` hold `*len` elements
/// of `*dt`, which [`native_op`] chose this operation for (a run of one
/// unsigned integer type).
unsafe fn apply(
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: *mut c_int,
    dt: *mut MPI_Datatype,
    keep_larger: bool,
) {
    // SAFETY: MPI passes valid pointers to the count and the datatype.
    let (len, dt) = unsafe { (*len, *dt) };
    let (Some(width), Ok(info)) = (width_of(dt), info_of(dt)) else {
        return;
    };
    let per_elem = usize::try_from(info.basic_count_per_elem).unwrap_or(0);
    let n = usize::try_from(len).unwrap_or(0).saturating_mul(per_elem);
    let (a, b) = (invec.cast::<u8>(), inoutvec.cast::<u8>());
    for i in 0..n {
        // SAFETY: element i of n lies within both buffers (MPI's contract
        // for the user function); unaligned reads and writes need no
        // alignment.
        unsafe {
            let (x, y) = (a.add(i * width), b.add(i * width));
            macro_rules! pick {
                ($t:ty) => {{
                    let (u, v) = (
                        x.cast::<$t>().read_unaligned(),
                        y.cast::<$t>().read_unaligned(),
                    );
                    let w = if keep_larger { u.max(v) } else { u.min(v) };
                    y.cast::<$t>().write_unaligned(w);
                }};
            }
            match width {
                1 => pick!(u8),
                2 => pick!(u16),
                4 => pick!(u32),
                _ => pick!(u64),
            }
        }
    }
}

unsafe extern "C" fn unsigned_max(
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: *mut c_int,
    dt: *mut MPI_Datatype,
) {
    // SAFETY: called by MPI as an MPI_User_function (see `apply`).
    unsafe { apply(invec, inoutvec, len, dt, true) }
}

unsafe extern "C" fn unsigned_min(
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: *mut c_int,
    dt: *mut MPI_Datatype,
) {
    // SAFETY: as `unsigned_max`.
    unsafe { apply(invec, inoutvec, len, dt, false) }
}

//! `MPI_SUM` on 8- and 16-bit integers where the job's own MPI saturates
//! it. Debian's Open MPI 4.1.4 adds them with saturating vector
//! instructions once a call has enough elements for its vector path
//! (natively, 64 `MPI_UINT8_T` of 200 + 100 give 255, not 44; `MPI_INT16_T`
//! 30000 + 10000 gives 32767), where MPI's sum wraps as C's does. A
//! collective on an Isthmus communicator does its reductions with the job's
//! own MPI, and the other job would receive that wrong value (MPICH's
//! `coll/allred -count=100` on a world). So [`native_op`] gives the native
//! steps Isthmus's own wrapping sum (commutative, made with `PMPI_Op_create`
//! once) for a predefined 8- or 16-bit integer type the local MPI failed a
//! probe on at its first `MPI_SUM` (`PMPI_Reduce_local` of 64 elements of
//! `0x81` + `0x81` or `0x8081` + `0x8081`, which overflow both as signed
//! and as unsigned).

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use isthmus_bridge::datatype::BasicType;
use mpi::ffi;

use crate::datatype::info_of;
use crate::mpi_glue::MPI_Datatype;
use crate::probed_types::ProbedTypes;

/// Isthmus's own wrapping sum, as an MPI operation handle.
#[derive(Clone, Copy)]
struct Fixed(ffi::MPI_Op);

// SAFETY: an MPI handle is a process-wide value, not tied to the thread that
// made it; it is only read after it is made, and MPI's thread level governs
// its use, as for any handle.
unsafe impl Send for Fixed {}
// SAFETY: as above.
unsafe impl Sync for Fixed {}

/// Made at the first type the local MPI gets wrong (None: it could not be made).
static FIXED: OnceLock<Option<Fixed>> = OnceLock::new();

/// Per predefined narrow integer type (by handle): whether the local MPI's
/// sum on it wraps.
static PROBED: ProbedTypes = ProbedTypes::new();

/// Elements in the probe: enough for Open MPI's vector path.
const PROBE_LEN: usize = 64;

/// The width in bytes of an 8- or 16-bit integer basic type, else None.
fn narrow_width(b: BasicType) -> Option<usize> {
    use BasicType::*;
    match b {
        SignedChar | UnsignedChar | I8 | U8 => Some(1),
        Short | UnsignedShort | I16 | U16 => Some(2),
        _ => None,
    }
}

/// The width of `dt`'s elements if it is a run of one narrow integer type.
fn width_of(dt: MPI_Datatype) -> Option<usize> {
    info_of(dt).ok()?.contiguous_basic.and_then(narrow_width)
}

/// Whether the local MPI's sum on `dt`, `width`-byte integers, wraps.
fn local_sum_wraps(dt: MPI_Datatype, width: usize) -> bool {
    PROBED.verdict(dt, || {
        // Little-endian (x86-64): 0x81 or 0x8081 in every element, whose sum
        // overflows as signed and as unsigned and wraps to 0x02 or 0x0102;
        // saturation would give 0x7f…, 0x80… or 0xff….
        let filled = |element: &[u8]| -> Vec<u8> { element.repeat(PROBE_LEN) };
        let (operand, wrapped): (&[u8], &[u8]) = if width == 1 {
            (&[0x81], &[0x02])
        } else {
            (&[0x81, 0x80], &[0x02, 0x01])
        };
        let (a, mut b) = (filled(operand), filled(operand));
        // SAFETY: PROBE_LEN elements of `dt` (`width` bytes each) in each
        // buffer, both valid for the call; MPI is initialized (we are inside a
        // collective).
        let rc = unsafe {
            ffi::PMPI_Reduce_local(
                a.as_ptr().cast(),
                b.as_mut_ptr().cast(),
                PROBE_LEN as c_int,
                dt,
                ffi::RSMPI_SUM,
            )
        };
        let right = rc != 0 || b == filled(wrapped);
        if !right {
            tracing::info!(
                "this MPI saturates MPI_SUM on 8- or 16-bit integers: Isthmus's \
                 reductions use their own"
            );
        }
        right
    })
}

/// The operation the native steps of a reduction of `dt` with `op` use
/// instead of `op`, if the local MPI's `MPI_SUM` on `dt` saturates.
pub(crate) fn replacement(op: ffi::MPI_Op, dt: MPI_Datatype) -> Option<ffi::MPI_Op> {
    // SAFETY: reading MPI's predefined handle, constant after MPI_Init.
    if op != unsafe { ffi::RSMPI_SUM } {
        return None;
    }
    let width = width_of(dt)?;
    if local_sum_wraps(dt, width) {
        return None;
    }
    let fixed = FIXED.get_or_init(|| {
        let mut sum = op;
        // SAFETY: the function matches MPI_User_function; the handle is
        // written by the call.
        let ok = unsafe { ffi::PMPI_Op_create(Some(wrapping_sum), 1, &mut sum) == 0 };
        ok.then_some(Fixed(sum))
    });
    fixed.map(|f| f.0)
}

/// `inout[i] = in[i] + inout[i]`, wrapping, over `*len` elements of `*dt`.
///
/// # Safety
/// As an `MPI_User_function`: `invec` and `inoutvec` hold `*len` elements
/// of `*dt`, which [`replacement`] chose this operation for (a run of one
/// narrow integer type).
unsafe extern "C" fn wrapping_sum(
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: *mut c_int,
    dt: *mut MPI_Datatype,
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
        // alignment. Two's complement: the wrapping sum is the same bits
        // for the signed and the unsigned types.
        unsafe {
            let (x, y) = (a.add(i * width), b.add(i * width));
            if width == 1 {
                y.write(x.read().wrapping_add(y.read()));
            } else {
                let (u, v) = (
                    x.cast::<u16>().read_unaligned(),
                    y.cast::<u16>().read_unaligned(),
                );
                y.cast::<u16>().write_unaligned(u.wrapping_add(v));
            }
        }
    }
}

//! Messages that end inside a receive element (MPI 4.0 §3.3.1 allows them:
//! `MPI_Get_count` gives `MPI_UNDEFINED`, `MPI_Get_elements` the basic
//! elements that arrived). The message's basic sequence must be a prefix of
//! the receive buffer's that ends on a basic element: `whole` receive
//! elements, then the first `rest_basics` basics (`rest_bytes` bytes) of one
//! more. The whole elements decode as any message's; the last one is
//! read, its first bytes replaced by the ones that arrived, and written
//! back (`MPI_Pack`/`MPI_Unpack` of one element: the rest of it keeps its
//! values).

use std::ffi::c_void;

use mpi::ffi;

use super::basic::BasicType;
use super::error::{DatatypeError, Result};
use super::info::TypeInfo;
use super::pack::{native_pack, native_unpack};
use super::signature::{self, hash_runs, Run};
use super::swap;
use crate::format::WireFormat;

/// Where a message that ends inside a receive element ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partial {
    /// Receive elements the message fills.
    pub whole: usize,
    /// Bytes (native) of the element it ends in.
    pub rest_bytes: usize,
    /// Basic elements of the element it ends in.
    pub rest_basics: u64,
}

impl Partial {
    /// The message's bytes in this host's representation.
    pub fn bytes(&self, info: &TypeInfo) -> usize {
        self.whole
            .saturating_mul(info.data_size_per_elem)
            .saturating_add(self.rest_bytes)
    }
}

/// The first `bytes` bytes of `runs` (one element; sizes from `sizes`) as
/// runs, and their number of basics; None if a basic straddles `bytes`.
fn prefix(info: &TypeInfo, bytes: usize) -> Result<Option<(Vec<Run>, u64)>> {
    let mut out = Vec::new();
    let (mut left, mut basics) = (bytes, 0u64);
    for r in &info.runs {
        if left == 0 {
            break;
        }
        let size = *info.basic_sizes.get(&r.basic).ok_or_else(|| {
            DatatypeError::Unsupported(format!("no native size known for {}", r.basic.name()))
        })?;
        if size == 0 {
            continue;
        }
        let fit = u64::try_from(left / size).map_err(|_| DatatypeError::Overflow)?;
        let n = fit.min(r.count);
        signature::push_run(&mut out, r.basic, n)?;
        basics = basics.checked_add(n).ok_or(DatatypeError::Overflow)?;
        let used = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(size))
            .ok_or(DatatypeError::Overflow)?;
        left -= used;
        if n < r.count && left != 0 {
            // The message ends inside a basic element.
            return Ok(None);
        }
    }
    Ok((left == 0).then_some((out, basics)))
}

/// The first `bytes` bytes of the receive buffer's basic sequence (whole
/// elements, then a prefix of one), as runs.
fn sequence(info: &TypeInfo, bytes: u64) -> Result<Option<Vec<Run>>> {
    let per = info.data_size_per_elem as u64;
    let (whole, rest) = (bytes / per, bytes % per);
    let rest = usize::try_from(rest).map_err(|_| DatatypeError::Overflow)?;
    let Some((tail, _)) = prefix(info, rest)? else {
        return Ok(None);
    };
    let mut runs = Vec::new();
    signature::push_repeated(&mut runs, &info.runs, whole)?;
    for r in tail {
        signature::push_run(&mut runs, r.basic, r.count)?;
    }
    Ok(Some(runs))
}

impl TypeInfo {
    /// Checks a message that does not fill whole receive elements (the
    /// wire's `signature`, `count`, `bytes` and `format`, as
    /// [`TypeInfo::match_wire`] takes them) against this receive type with
    /// room for `capacity` elements. The message's basic sequence (the
    /// sender's element `count` times, each element the prefix of this
    /// type's sequence with its size, confirmed by its hash) must be a
    /// prefix of the receive buffer's ending on a basic element; packed
    /// data (`MPI_PACKED`, in this host's representation) is cut by the
    /// basics' sizes. Sizes are this host's: the wire carries basics at
    /// the sender's native sizes, which must be these.
    pub fn match_partial(
        &self,
        signature: u64,
        count: u64,
        bytes: u64,
        format: WireFormat,
        capacity: usize,
    ) -> Result<Partial> {
        let per = self.data_size_per_elem as u64;
        let not_partial = || DatatypeError::PartialElement {
            root_reps: bytes,
            per_elem: per,
        };
        if per == 0 || count == 0 || bytes.is_multiple_of(per) || !self.external32_by_swapping {
            return Err(not_partial());
        }
        let packed = hash_runs(&[Run {
            basic: BasicType::Packed,
            count: bytes / count,
        }]) == signature;
        if packed && format != WireFormat::native() {
            return Err(DatatypeError::PackedNotNative { format });
        }
        if !packed {
            if !bytes.is_multiple_of(count) {
                return Err(not_partial());
            }
            // The sender's element: the prefix of this type's sequence of
            // its size, if its hash says so.
            let element = sequence(self, bytes / count)?.ok_or_else(not_partial)?;
            if hash_runs(&element) != signature {
                return Err(not_partial());
            }
            let mut message = Vec::new();
            signature::push_repeated(&mut message, &element, count)?;
            if sequence(self, bytes)?.as_deref() != Some(&message[..]) {
                return Err(not_partial());
            }
        }
        let whole = usize::try_from(bytes / per).map_err(|_| DatatypeError::Overflow)?;
        let rest_bytes = usize::try_from(bytes % per).map_err(|_| DatatypeError::Overflow)?;
        let (_, rest_basics) = prefix(self, rest_bytes)?.ok_or_else(not_partial)?;
        if whole >= capacity {
            return Err(DatatypeError::Truncated {
                incoming: whole.saturating_add(1),
                capacity,
            });
        }
        Ok(Partial {
            whole,
            rest_bytes,
            rest_basics,
        })
    }
}

/// The first bytes of an element in `format` (a prefix of the type's
/// sequence ending on a basic) put in this host's byte order.
fn to_native(info: &TypeInfo, format: WireFormat, tail: &mut [u8]) -> Result<()> {
    if format == WireFormat::native() {
        return Ok(());
    }
    let little = cfg!(target_endian = "little");
    let swapped = match format {
        WireFormat::RawLe => !little,
        WireFormat::RawBe | WireFormat::External32 => little,
    };
    if !swapped {
        return Ok(());
    }
    // The swap program of one element, cut at the tail's end (a basic
    // boundary, so at a multiple of the segment's unit).
    let mut at = 0usize;
    for &(unit, len) in &info.swap_program {
        let end = at.saturating_add(len).min(tail.len());
        if let Some(seg) = tail.get_mut(at..end) {
            swap::swap_in_place(seg, unit);
        }
        at = end;
        if at >= tail.len() {
            break;
        }
    }
    Ok(())
}

/// Decodes a message that ends inside a receive element (`p`, from
/// [`TypeInfo::match_partial`]) into `out`: `p.whole` elements, then the
/// first `p.rest_bytes` bytes of the next.
///
/// # Safety
/// `dt` is a valid committed datatype that `info` describes, and `out`
/// addresses `p.whole + 1` writable elements of it (as for `MPI_Recv`).
pub unsafe fn decode_partial(
    info: &TypeInfo,
    dt: ffi::MPI_Datatype,
    format: WireFormat,
    bytes: &[u8],
    p: Partial,
    out: *mut c_void,
) -> Result<()> {
    if out.is_null() {
        return Err(DatatypeError::Unsupported(
            "a message that ends inside a receive element, received at MPI_BOTTOM".into(),
        ));
    }
    let per = info.data_size_per_elem;
    let head_len = p.whole.checked_mul(per).ok_or(DatatypeError::Overflow)?;
    let (head, tail) = (bytes.get(..head_len), bytes.get(head_len..));
    let (Some(head), Some(tail)) = (head, tail) else {
        return Err(DatatypeError::LengthMismatch {
            actual: bytes.len(),
            expected: p.bytes(info),
            count: p.whole,
            format,
        });
    };
    if tail.len() != p.rest_bytes {
        return Err(DatatypeError::LengthMismatch {
            actual: bytes.len(),
            expected: p.bytes(info),
            count: p.whole,
            format,
        });
    }
    if p.whole > 0 {
        // SAFETY: the caller's buffer holds `p.whole` elements and more.
        unsafe { super::codec::decode_raw_with(info, dt, format, head, p.whole, out) }?;
    }
    let mut tail = tail.to_vec();
    to_native(info, format, &mut tail)?;
    let at = p
        .whole
        .checked_mul(info.extent)
        .ok_or(DatatypeError::Overflow)?;
    // SAFETY: element `p.whole` of the caller's buffer (its contract).
    let elem = unsafe { (out as *mut u8).add(at) } as *mut c_void;
    // SAFETY: one element of `dt` at `elem`, read then written back with
    // its first `rest_bytes` bytes replaced.
    let mut whole_elem = unsafe { native_pack(per, info.extent, dt, 1, elem) }?;
    whole_elem
        .get_mut(..tail.len())
        .ok_or(DatatypeError::Overflow)?
        .copy_from_slice(&tail);
    // SAFETY: as above.
    unsafe { native_unpack(per, info.extent, dt, &whole_elem, 1, elem) }
}

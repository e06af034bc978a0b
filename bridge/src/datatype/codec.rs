//! Encoding and decoding payloads: the raw fast path (no MPI calls, zero-copy
//! on send) and external32 (by `MPI_Pack` plus byte swapping, or by
//! `MPI_Pack_external`), for Rust slices, rsmpi buffers and raw handles.

use std::borrow::Cow;
use std::ffi::c_void;

use mpi::datatype::{Buffer, BufferMut, Equivalence};
use mpi::ffi;
use mpi::raw::AsRaw;

use super::error::{DatatypeError, Result};
use super::info::{cached, datatype_info, type_info, MatchRule, MessageSig, TypeInfo};
use super::pack::{native_pack, native_unpack, pack_external32, unpack_external32};
use super::swap;
use crate::format::WireFormat;

/// An encoded payload plus what the receiver needs to decode and check it.
#[derive(Debug, Clone)]
pub struct Encoded<'a> {
    /// The payload bytes (borrowed from the send buffer on the raw path).
    pub bytes: Cow<'a, [u8]>,
    /// Their format.
    pub format: WireFormat,
    /// Per-element signature of the sender's type.
    pub signature: u64,
    /// Number of elements.
    pub count: usize,
    /// Root signature (for [`MatchRule::BasicSequence`]).
    pub root_signature: u64,
    /// Total root repetitions.
    pub root_reps: u64,
}

impl Encoded<'_> {
    /// The signature header to transmit.
    pub fn sig(&self) -> MessageSig {
        MessageSig {
            signature: self.signature,
            count: self.count as u64,
            root_signature: self.root_signature,
            root_reps: self.root_reps,
        }
    }
    /// Detach from the send buffer.
    pub fn into_owned(self) -> Encoded<'static> {
        Encoded {
            bytes: Cow::Owned(self.bytes.into_owned()),
            ..self
        }
    }
}

fn as_bytes<T>(buf: &[T]) -> &[u8] {
    // SAFETY: reading the bytes of a slice of Equivalence types for the raw
    // path only, where T is a single predefined basic type without padding.
    unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, std::mem::size_of_val(buf)) }
}

/// Encode `count` elements at `ptr` in `format` (None = preferred).
unsafe fn encode_impl<'a>(
    info: &TypeInfo,
    dt: ffi::MPI_Datatype,
    count: usize,
    ptr: *const c_void,
    borrowed: Option<&'a [u8]>,
    format: Option<WireFormat>,
) -> Result<Encoded<'a>> {
    let format = format.unwrap_or(info.preferred_format());
    let bytes: Cow<'a, [u8]> = if info.raw {
        let native: &[u8] = match borrowed {
            Some(b) => b,
            // SAFETY: the caller guarantees `count` elements at `ptr`; raw types have no gaps, so they span `count * data_size_per_elem` bytes.
            None => unsafe {
                std::slice::from_raw_parts(ptr as *const u8, count * info.data_size_per_elem)
            },
        };
        let need_swap = match format {
            WireFormat::External32 => cfg!(target_endian = "little"),
            f => f != WireFormat::native(),
        };
        if need_swap {
            Cow::Owned(swap::swapped_copy(native, info.swap_unit))
        } else if borrowed.is_some() {
            Cow::Borrowed(native)
        } else {
            Cow::Owned(native.to_vec())
        }
    } else {
        if format.is_raw() {
            return Err(DatatypeError::FormatMismatch {
                format,
                receiver_type: info.describe(),
            });
        }
        if info.external32_by_swapping {
            let mut v =
                // SAFETY: the caller guarantees `count` elements of `dt` at `ptr`.
                unsafe { native_pack(info.data_size_per_elem, info.extent, dt, count, ptr)? };
            swap::apply_program(&mut v, &info.swap_program, info.data_size_per_elem);
            Cow::Owned(v)
        } else {
            // SAFETY: the caller guarantees `count` elements of `dt` at `ptr`.
            Cow::Owned(unsafe { pack_external32(dt, count, ptr)? })
        }
    };
    Ok(Encoded {
        bytes,
        format,
        signature: info.signature,
        count,
        root_signature: info.root_signature,
        root_reps: info.root_reps_per_elem.saturating_mul(count as u64),
    })
}

/// Decode `count` elements into `out`.
unsafe fn decode_impl(
    info: &TypeInfo,
    dt: ffi::MPI_Datatype,
    format: WireFormat,
    bytes: &[u8],
    count: usize,
    out: *mut c_void,
) -> Result<usize> {
    let expected = info.payload_len(format, count)?;
    if bytes.len() != expected {
        return Err(DatatypeError::LengthMismatch {
            actual: bytes.len(),
            expected,
            count,
            format,
        });
    }
    if info.raw {
        // Fast path, no MPI: copy then fix byte order.
        // SAFETY: the caller guarantees writable room for `count` elements at `out`; raw types have no gaps, so that is `expected` bytes.
        let dst = unsafe { std::slice::from_raw_parts_mut(out as *mut u8, expected) };
        dst.copy_from_slice(bytes);
        let src_is_le = match format {
            WireFormat::RawLe => true,
            WireFormat::RawBe | WireFormat::External32 => false,
        };
        if src_is_le != cfg!(target_endian = "little") {
            swap::swap_in_place(dst, info.swap_unit);
        }
        return Ok(count);
    }
    if format.is_raw() {
        // A raw message (one basic type) into a derived receive type that
        // also consists of one swappable basic type: the raw bytes in native
        // order are exactly MPI_Pack's native representation.
        // In this host's order the bytes are already MPI_Pack's native
        // representation, whatever the type (a packed message too).
        let unit = match (&info.runs[..], &info.swap_program[..]) {
            _ if format == WireFormat::native() && info.external32_by_swapping => 1,
            ([_], [(unit, _)]) if info.external32_by_swapping => *unit,
            _ => {
                return Err(DatatypeError::FormatMismatch {
                    format,
                    receiver_type: info.describe(),
                })
            }
        };
        let native: Cow<[u8]> = if format != WireFormat::native() {
            Cow::Owned(swap::swapped_copy(bytes, unit))
        } else {
            Cow::Borrowed(bytes)
        };
        // SAFETY: the caller guarantees writable room for `count` elements of `dt` at `out`.
        unsafe {
            native_unpack(
                info.data_size_per_elem,
                info.extent,
                dt,
                &native,
                count,
                out,
            )?
        };
        return Ok(count);
    }
    if info.external32_by_swapping {
        let mut tmp = bytes.to_vec();
        swap::apply_program(&mut tmp, &info.swap_program, info.data_size_per_elem);
        // SAFETY: the caller guarantees writable room for `count` elements of `dt` at `out`.
        unsafe { native_unpack(info.data_size_per_elem, info.extent, dt, &tmp, count, out)? };
    } else {
        // SAFETY: the caller guarantees writable room for `count` elements of `dt` at `out`.
        unsafe { unpack_external32(dt, bytes, count, out)? };
    }
    Ok(count)
}

/// Encode a slice of `T` in the preferred format (zero-copy raw for
/// predefined basic types, external32 otherwise).
pub fn encode<T: Equivalence + 'static>(buf: &[T]) -> Result<Encoded<'_>> {
    encode_as(buf, None)
}

/// Encode a slice of `T` in a specific format (`None` = preferred). Raw
/// formats are only possible for types with `TypeInfo::raw`; External32 is
/// always possible (for raw types it is produced without MPI).
pub fn encode_as<T: Equivalence + 'static>(
    buf: &[T],
    format: Option<WireFormat>,
) -> Result<Encoded<'_>> {
    let c = cached::<T>()?;
    if c.info.raw {
        // no MPI call on this path
        // SAFETY: `buf` is a live slice of `buf.len()` elements of T, also lent as bytes.
        return unsafe {
            encode_impl(
                &c.info,
                ffi::RSMPI_DATATYPE_NULL,
                buf.len(),
                buf.as_ptr() as *const c_void,
                Some(as_bytes(buf)),
                format,
            )
        };
    }
    let owner = T::equivalent_datatype();
    let dt = c.resized.map(|h| h.0).unwrap_or(owner.as_raw());
    // SAFETY: `buf` is a live slice of `buf.len()` elements; `dt` is T's datatype, resized to `size_of::<T>()` if needed.
    unsafe {
        encode_impl(
            &c.info,
            dt,
            buf.len(),
            buf.as_ptr() as *const c_void,
            None,
            format,
        )
    }
}

/// Decode `count` elements (as announced by the message header) in `format`
/// into the front of `out`; returns the number of elements written. Does
/// *not* check the signature (see [`decode_message`]); does check the
/// payload length and capacity.
pub fn decode_into<T: Equivalence + 'static>(
    format: WireFormat,
    bytes: &[u8],
    count: usize,
    out: &mut [T],
) -> Result<usize> {
    if count > out.len() {
        return Err(DatatypeError::Truncated {
            incoming: count,
            capacity: out.len(),
        });
    }
    let c = cached::<T>()?;
    let owner = T::equivalent_datatype();
    let dt = c.resized.map(|h| h.0).unwrap_or(owner.as_raw());
    // SAFETY: `out` holds at least `count` elements (checked above); `dt` is T's datatype, resized to `size_of::<T>()` if needed.
    unsafe {
        decode_impl(
            &c.info,
            dt,
            format,
            bytes,
            count,
            out.as_mut_ptr() as *mut c_void,
        )
    }
}

/// Check `sig` against `T` under `rule`, then decode; returns the number of
/// `T` elements written.
pub fn decode_message<T: Equivalence + 'static>(
    sig: &MessageSig,
    format: WireFormat,
    bytes: &[u8],
    out: &mut [T],
    rule: MatchRule,
) -> Result<usize> {
    let n = type_info::<T>()?.match_message(sig, out.len(), rule)?;
    decode_into(format, bytes, n, out)
}

/// Encode any rsmpi buffer (slices, `View`s of `UserDatatype`s, …). Always
/// returns an owned payload.
pub fn encode_buffer<B: Buffer + ?Sized>(buf: &B) -> Result<Encoded<'static>> {
    let dt = buf.as_datatype();
    let count = usize::try_from(buf.count()).map_err(|_| DatatypeError::Overflow)?;
    // SAFETY: rsmpi's Buffer guarantees `count` elements of its datatype at `pointer()`.
    unsafe { encode_raw(dt.as_raw(), count, buf.pointer()) }
}

/// Check and decode a message into any rsmpi mutable buffer (slices,
/// `MutView`s of `UserDatatype`s, …). Returns elements written.
pub fn decode_into_buffer<B: BufferMut + ?Sized>(
    sig: &MessageSig,
    format: WireFormat,
    bytes: &[u8],
    buf: &mut B,
    rule: MatchRule,
) -> Result<usize> {
    let capacity = usize::try_from(buf.count()).map_err(|_| DatatypeError::Overflow)?;
    let dt = buf.as_datatype().as_raw();
    let info = datatype_info(dt)?;
    let n = info.match_message(sig, capacity, rule)?;
    let ptr = buf.pointer_mut();
    // SAFETY: rsmpi's BufferMut guarantees `count` >= `n` writable elements of its datatype at `pointer_mut()`.
    unsafe { decode_impl(&info, dt, format, bytes, n, ptr) }
}

/// Encode `count` elements of an arbitrary datatype handle starting at `buf`.
///
/// # Safety
/// `dt` must be a valid committed datatype and `buf` must address `count`
/// elements of it (as for `MPI_Send`).
pub unsafe fn encode_raw(
    dt: ffi::MPI_Datatype,
    count: usize,
    buf: *const c_void,
) -> Result<Encoded<'static>> {
    let info = datatype_info(dt)?;
    // SAFETY: forwarded from this function's own contract.
    unsafe { encode_impl(&info, dt, count, buf, None, None) }
}

/// Decode `count` elements of an arbitrary datatype handle into `out`.
/// No signature check (use [`datatype_info`] + [`TypeInfo::match_message`]).
///
/// # Safety
/// `dt` must be a valid committed datatype and `out` must address writable
/// memory for `count` elements of it (as for `MPI_Recv`).
pub unsafe fn decode_raw(
    dt: ffi::MPI_Datatype,
    format: WireFormat,
    bytes: &[u8],
    count: usize,
    out: *mut c_void,
) -> Result<usize> {
    let info = datatype_info(dt)?;
    // SAFETY: forwarded from this function's own contract.
    unsafe { decode_impl(&info, dt, format, bytes, count, out) }
}

/// [`encode_raw`] with the type's info already known (see
/// [`datatype_info`]); a raw type's bytes are borrowed from `buf`, not
/// copied, when no byte swapping is needed.
///
/// # Safety
/// As [`encode_raw`], and `info` describes `dt`; the memory at `buf` stays
/// valid and unchanged for `'a`.
pub unsafe fn encode_raw_with<'a>(
    info: &TypeInfo,
    dt: ffi::MPI_Datatype,
    count: usize,
    buf: *const c_void,
) -> Result<Encoded<'a>> {
    let borrowed = if info.raw && count > 0 {
        let len = count
            .checked_mul(info.data_size_per_elem)
            .ok_or(DatatypeError::Overflow)?;
        // SAFETY: the caller guarantees `count` elements of a raw (gapless)
        // type at `buf`, valid for 'a: `len` bytes.
        Some(unsafe { std::slice::from_raw_parts(buf as *const u8, len) })
    } else {
        None
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { encode_impl(info, dt, count, buf, borrowed, None) }
}

/// [`decode_raw`] with the type's info already known.
///
/// # Safety
/// As [`decode_raw`], and `info` describes `dt`.
pub unsafe fn decode_raw_with(
    info: &TypeInfo,
    dt: ffi::MPI_Datatype,
    format: WireFormat,
    bytes: &[u8],
    count: usize,
    out: *mut c_void,
) -> Result<usize> {
    // SAFETY: forwarded from this function's contract.
    unsafe { decode_impl(info, dt, format, bytes, count, out) }
}

/// Puts the bytes of a raw type received in place (straight into the
/// receive buffer, in the sender's `format`) into this host's byte order.
pub fn raw_to_native_in_place(info: &TypeInfo, format: WireFormat, buf: &mut [u8]) -> Result<()> {
    if !info.raw {
        return Err(DatatypeError::FormatMismatch {
            format,
            receiver_type: info.describe(),
        });
    }
    let src_is_le = match format {
        WireFormat::RawLe => true,
        WireFormat::RawBe | WireFormat::External32 => false,
    };
    if src_is_le != cfg!(target_endian = "little") {
        swap::swap_in_place(buf, info.swap_unit);
    }
    Ok(())
}

//! The datatype seam: what the data path needs to know about a payload
//! ([`TypeSig`]) and the [`WireType`] trait that the typed send/receive
//! methods use, implemented for every rsmpi `Equivalence` type.
//!
//! The data path itself only moves bytes; the [`datatype`](crate::datatype)
//! layer decides the signature and how elements are packed.

use std::borrow::Cow;

use mpi::datatype::Equivalence;

use crate::datatype;
use crate::error::{BridgeError, Result};
use crate::format::WireFormat;

/// What the datatype layer tells the data path about one message's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeSig {
    /// Hash of the MPI type signature of ONE element; a receive expecting another value fails with `TypeMismatch`.
    pub signature: u64,
    /// Layout of the payload bytes.
    pub format: WireFormat,
    /// Bytes per element in the wire payload (0 allowed only for count 0 / opaque payloads).
    pub elem_size: usize,
}

/// A Rust element type that can travel through the bridge.
///
/// Implemented below for every rsmpi `Equivalence` type.
pub trait WireType: Sized + Send + Sync + 'static {
    /// Signature, format and element size of this type's wire representation.
    fn type_sig() -> Result<TypeSig>;
    /// Wire bytes of `buf` (borrowed when the in-memory layout already is the wire layout).
    fn encode(buf: &[Self]) -> Result<Cow<'_, [u8]>>;
    /// Decode `bytes` (in format `fmt`) into `out`; returns the number of elements written.
    fn decode_into(fmt: WireFormat, bytes: &[u8], out: &mut [Self]) -> Result<usize>;
    /// Zero-copy receive hook: a byte view of `out` that the wire bytes in
    /// `type_sig().format` can be written into directly. `None` (the default)
    /// means receive into a temporary buffer and call `decode_into`.
    fn wire_bytes_mut(out: &mut [Self]) -> Option<&mut [u8]> {
        let _ = out;
        None
    }
}

/// Every rsmpi `Equivalence` type travels through the bridge: its signature
/// and encoding come from the [`datatype`](crate::datatype) layer (raw bytes
/// for contiguous basic types, external32 for everything else).
impl<T: Equivalence + Send + Sync + 'static> WireType for T {
    fn type_sig() -> Result<TypeSig> {
        let info = datatype::type_info::<T>()?;
        Ok(TypeSig {
            signature: info.signature,
            format: info.preferred_format(),
            elem_size: info.wire_size_per_elem,
        })
    }

    fn encode(buf: &[Self]) -> Result<Cow<'_, [u8]>> {
        Ok(datatype::encode(buf)?.bytes)
    }

    fn decode_into(fmt: WireFormat, bytes: &[u8], out: &mut [Self]) -> Result<usize> {
        let info = datatype::type_info::<T>()?;
        let per = info.payload_len(fmt, 1)?;
        if per == 0 || !bytes.len().is_multiple_of(per) {
            return Err(BridgeError::Protocol(format!(
                "payload of {} bytes is not a whole number of {}-byte elements of {}",
                bytes.len(),
                per,
                info.describe()
            )));
        }
        let count = bytes.len() / per;
        if count > out.len() {
            return Err(BridgeError::Truncated {
                message_bytes: bytes.len() as u64,
                buffer_bytes: (out.len() * per) as u64,
            });
        }
        Ok(datatype::decode_into(fmt, bytes, count, out)?)
    }

    fn wire_bytes_mut(out: &mut [Self]) -> Option<&mut [u8]> {
        let info = datatype::type_info::<T>().ok()?;
        // Only a single contiguous basic type whose memory layout is its wire
        // layout may be received in place.
        if info.preferred_format() != WireFormat::native()
            || info.extent as usize != std::mem::size_of::<T>()
        {
            return None;
        }
        let len = std::mem::size_of_val(out);
        // SAFETY: `preferred_format` is raw only for predefined basic types
        // (numbers, bool, complex); the data path writes whole elements of
        // this type's own native representation into the view. `bool` is
        // the exception to "any byte pattern is valid": a peer sending bool
        // sends 0/1 bytes, and the signature check keeps other types out.
        Some(unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), len) })
    }
}

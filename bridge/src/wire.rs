//! The datatype seam: what the data path needs to know about a payload
//! ([`TypeSig`], [`WireFormat`]) and the [`WireType`] trait that typed
//! send/receive methods use, implemented here for the primitive numbers.
//!
//! The data path itself only moves bytes; the datatype layer (a separate
//! module) decides the signature and how elements are packed.

use std::borrow::Cow;

use mpi::datatype::Equivalence;

use crate::datatype;
use crate::error::{BridgeError, Result};

/// How the payload bytes are laid out on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WireFormat {
    /// Native layout of a little-endian host.
    RawLe = 0,
    /// Native layout of a big-endian host.
    RawBe = 1,
    /// MPI "external32" canonical representation (big-endian, fixed sizes).
    External32 = 2,
}

impl WireFormat {
    /// The raw format of the host this code runs on.
    pub const fn native() -> Self {
        if cfg!(target_endian = "little") {
            WireFormat::RawLe
        } else {
            WireFormat::RawBe
        }
    }

    /// The raw format of this host's byte order (same as [`WireFormat::native`]).
    pub const fn native_raw() -> Self {
        Self::native()
    }

    /// Whether the payload is raw bytes of a basic type (not external32).
    pub fn is_raw(self) -> bool {
        !matches!(self, WireFormat::External32)
    }

    /// One-byte wire code: RawLe = 0, RawBe = 1, External32 = 2.
    pub fn to_u8(self) -> u8 {
        self as u8
    }

    /// Inverse of [`WireFormat::to_u8`].
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(WireFormat::RawLe),
            1 => Some(WireFormat::RawBe),
            2 => Some(WireFormat::External32),
            _ => None,
        }
    }
}

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

/// 64-bit FNV-1a hash; used for the signatures of the primitive types
/// (`signature_of_name("i32")` etc.) so both jobs compute the same value.
pub const fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

/// Signature of a primitive element type: `fnv1a64("isthmus:" + name)`, e.g. name = "i32".
pub fn signature_of_name(name: &str) -> u64 {
    let mut v = Vec::with_capacity(8 + name.len());
    v.extend_from_slice(b"isthmus:");
    v.extend_from_slice(name.as_bytes());
    fnv1a64(&v)
}

/// A Rust element type that can travel through the bridge.
///
/// Implemented here for the primitive numbers (raw little-endian, zero-copy on
/// little-endian hosts); the datatype layer implements it for MPI
/// `Equivalence` types via `MPI_Pack_external`.
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
        if per == 0 || bytes.len() % per != 0 {
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
        if info.preferred_format() != WireFormat::native_raw()
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

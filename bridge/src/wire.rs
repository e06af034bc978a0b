//! The datatype seam: what the data path needs to know about a payload
//! ([`TypeSig`], [`WireFormat`]) and the [`WireType`] trait that typed
//! send/receive methods use, implemented here for the primitive numbers.
//!
//! The data path itself only moves bytes; the datatype layer (a separate
//! module) decides the signature and how elements are packed.

use std::borrow::Cow;

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

    pub(crate) fn from_u8(b: u8) -> Option<Self> {
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
    fn type_sig() -> TypeSig;
    /// Wire bytes of `buf` (borrowed when the in-memory layout already is the wire layout).
    fn encode(buf: &[Self]) -> Cow<'_, [u8]>;
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

macro_rules! primitive_wire_type {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        impl WireType for $t {
            fn type_sig() -> TypeSig {
                TypeSig { signature: signature_of_name($name), format: WireFormat::RawLe, elem_size: std::mem::size_of::<$t>() }
            }
            fn encode(buf: &[Self]) -> Cow<'_, [u8]> {
                if cfg!(target_endian = "little") {
                    // SAFETY: primitive numbers have no padding and every bit pattern is a valid u8.
                    Cow::Borrowed(unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), std::mem::size_of_val(buf)) })
                } else {
                    Cow::Owned(buf.iter().flat_map(|v| v.to_le_bytes()).collect())
                }
            }
            #[allow(clippy::modulo_one)]
            fn decode_into(fmt: WireFormat, bytes: &[u8], out: &mut [Self]) -> Result<usize> {
                const SZ: usize = std::mem::size_of::<$t>();
                if bytes.len() % SZ != 0 {
                    return Err(BridgeError::Protocol(format!("payload of {} bytes is not a whole number of {} elements", bytes.len(), $name)));
                }
                let n = bytes.len() / SZ;
                if n > out.len() {
                    return Err(BridgeError::Truncated { message_bytes: bytes.len() as u64, buffer_bytes: (out.len() * SZ) as u64 });
                }
                for (o, c) in out.iter_mut().zip(bytes.chunks_exact(SZ)) {
                    let mut a = [0u8; SZ];
                    a.copy_from_slice(c);
                    *o = match fmt {
                        WireFormat::RawLe => <$t>::from_le_bytes(a),
                        // external32 is big-endian IEEE / two's complement for these types.
                        WireFormat::RawBe | WireFormat::External32 => <$t>::from_be_bytes(a),
                    };
                }
                Ok(n)
            }
            fn wire_bytes_mut(out: &mut [Self]) -> Option<&mut [u8]> {
                if cfg!(target_endian = "little") {
                    let len = std::mem::size_of_val(out);
                    // SAFETY: as in `encode`; any byte pattern is a valid value of this type.
                    Some(unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), len) })
                } else {
                    None
                }
            }
        }
    )*};
}

primitive_wire_type!(
    u8 => "u8", u16 => "u16", u32 => "u32", u64 => "u64",
    i8 => "i8", i16 => "i16", i32 => "i32", i64 => "i64",
    f32 => "f32", f64 => "f64",
);

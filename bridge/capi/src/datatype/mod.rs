//! The datatype glue between MPI's C calls and the bridge's datatype layer:
//! what a send encodes from the user's buffer, what a receive may take and
//! how it decodes into the user's buffer, for point-to-point and requests
//! alike (and the collectives to come). The description of an MPI datatype
//! is `info`'s.

mod held;
mod info;

use std::ffi::{c_int, c_void};

use isthmus_bridge::datatype::{
    decode_partial, decode_raw_with, encode_raw_with, raw_to_native_in_place, DatatypeError,
    Encoded,
};
use isthmus_bridge::{BridgeError, Status, TypeSig, WireFormat};
use mpi::ffi;

pub use held::HeldType;
pub(crate) use info::{combiner, is_named};
pub use info::{info_of, TypeRef};

use crate::mpi_glue::{MPI_Datatype, Outcome};

/// Encodes `count` elements of `dt` at `buf` for sending: the user's
/// bytes themselves for a predefined type in this host's order, else a
/// packed copy.
///
/// # Safety
/// `buf` addresses `count` elements of `dt`, as for `MPI_Send`, and stays
/// unchanged while the result lives.
pub unsafe fn encode<'a>(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
) -> Result<(TypeSig, u64, Encoded<'a>), BridgeError> {
    let n = usize::try_from(count)
        .map_err(|_| BridgeError::InvalidArgument(format!("count {count} is negative")))?;
    // MPI lets an empty message name any address (MPI_BOTTOM, NULL); the
    // datatype layer makes a slice of it, which must not be null.
    let buf = if n == 0 {
        std::ptr::NonNull::<u64>::dangling().as_ptr() as *const c_void
    } else {
        buf
    };
    let info = info_of(dt)?;
    // SAFETY: forwarded from this function's contract (for n = 0, a
    // dangling aligned pointer no byte is read from).
    let enc = unsafe { encode_raw_with(&info, dt, n, buf) }?;
    let elem_size = enc.bytes.len().checked_div(n).unwrap_or(0);
    let sig = TypeSig {
        signature: enc.signature,
        format: enc.format,
        elem_size,
    };
    Ok((sig, n as u64, enc))
}

/// Bytes the largest message fitting `count` elements of `dt` can take on
/// the wire, in either format a sender may choose.
pub fn capacity_bytes(count: usize, dt: MPI_Datatype) -> Result<usize, BridgeError> {
    let info = info_of(dt)?;
    Ok([WireFormat::External32, WireFormat::native()]
        .iter()
        .filter_map(|f| info.payload_len(*f, count).ok())
        .max()
        .unwrap_or(0))
}

/// Checks a received message against the receive's type and count and
/// decodes it into `buf`.
///
/// # Safety
/// `buf` addresses `count` writable elements of `dt`, as for `MPI_Recv`.
pub unsafe fn decode_received(
    bytes: &[u8],
    st: &Status,
    buf: *mut c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<Outcome, BridgeError> {
    let info = info_of(dt)?;
    let n = match info.match_wire(st.signature, st.count, st.bytes, st.format, count) {
        Ok(n) => n,
        Err(
            e @ (DatatypeError::PartialElement { .. } | DatatypeError::SignatureMismatch { .. }),
        ) => {
            // Perhaps a message that ends inside a receive element (MPI
            // allows it); if not, the first verdict stands.
            let p = info
                .match_partial(st.signature, st.count, st.bytes, st.format, count)
                .map_err(|_| e)?;
            // SAFETY: forwarded from this function's contract; the message
            // fills fewer than `count` elements.
            unsafe { decode_partial(&info, dt, st.format, bytes, p, buf) }?;
            let received = i64::try_from(p.bytes(&info)).unwrap_or(i64::MAX);
            return Ok(Outcome::received(st, received));
        }
        Err(e) => return Err(e.into()),
    };
    if n > 0 {
        // SAFETY: forwarded from this function's contract; n <= count.
        unsafe { decode_raw_with(&info, dt, st.format, bytes, n, buf) }?;
    }
    let size = type_size(dt).unwrap_or(0);
    Ok(Outcome::received(st, size.saturating_mul(n as i64)))
}

/// A receive straight into the user's buffer: a predefined type's
/// elements, as bytes.
pub struct RawTarget<'a> {
    info: TypeRef,
    count: usize,
    out: &'a mut [u8],
}

/// The user's buffer of `count` elements of `dt` as bytes to receive into,
/// if `dt` is predefined (and `count` not 0); `None` for a receive that
/// decodes.
///
/// # Safety
/// `buf` addresses `count` writable elements of `dt`, as for `MPI_Recv`,
/// for as long as the result lives.
pub unsafe fn raw_target<'a>(
    buf: *mut c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<Option<RawTarget<'a>>, BridgeError> {
    let info = info_of(dt)?;
    if !info.raw {
        return Ok(None);
    }
    let len = count.checked_mul(info.data_size_per_elem).ok_or_else(|| {
        BridgeError::InvalidArgument(format!("count {count} overflows the buffer size"))
    })?;
    // An empty receive (MPI lets its buffer be any address, NULL too)
    // takes the same path as any other: through a buffer of its own it
    // cost a quarter more than the Rust API's at 0 bytes (issue 18).
    let out: &'a mut [u8] = if len == 0 {
        &mut []
    } else {
        // SAFETY: the caller's buffer holds `count` elements of a gapless
        // type: `len` writable bytes, as for MPI_Recv.
        unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, len) }
    };
    Ok(Some(RawTarget { info, count, out }))
}

impl RawTarget<'_> {
    /// Receives with `recv` into the buffer, checks the message's type
    /// signature (MPI's type matching) and puts the data in this host's byte order.
    pub fn recv(
        self,
        recv: impl FnOnce(&mut [u8]) -> Result<Status, BridgeError>,
    ) -> Result<Outcome, BridgeError> {
        let st = recv(&mut *self.out)?;
        // By MPI's type matching: a vector of such elements matches too.
        let got = self
            .info
            .match_wire(st.signature, st.count, st.bytes, st.format, self.count)?
            * self.info.data_size_per_elem;
        let room = self.out.len();
        let out = self.out.get_mut(..got).ok_or_else(|| {
            BridgeError::Protocol(format!("{got} bytes matched a {room}-byte receive buffer"))
        })?;
        raw_to_native_in_place(&self.info, st.format, out)?;
        Ok(Outcome::received(&st, got as i64))
    }
}

/// `MPI_Type_size` of `dt`, or None for an invalid type.
pub fn type_size(dt: MPI_Datatype) -> Option<i64> {
    let mut size: ffi::MPI_Count = 0;
    // SAFETY: PMPI_Type_size_x only reads the handle and writes `size`.
    let rc = unsafe { ffi::PMPI_Type_size_x(dt, &mut size) };
    (rc == 0).then_some(size as i64)
}

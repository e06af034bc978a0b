//! Errors of the datatype layer, and turning MPI return codes into them.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use mpi::ffi;

use crate::format::WireFormat;

/// Errors of the datatype layer.
#[derive(Debug, thiserror::Error)]
pub enum DatatypeError {
    /// An MPI call returned an error code.
    #[error("{call} failed with MPI error code {code}: {message}")]
    Mpi {
        /// The MPI function.
        call: &'static str,
        /// Its return code.
        code: i32,
        /// `MPI_Error_string` of the code.
        message: String,
    },
    /// MPI has not been initialized (or was finalized).
    #[error("MPI is not initialized; the datatype layer needs MPI to inspect datatypes")]
    NotInitialized,
    /// A datatype this layer cannot describe portably.
    #[error("unsupported datatype: {0}")]
    Unsupported(String),
    /// Integer overflow in sizes/counts.
    #[error("size or count overflow")]
    Overflow,
    /// A count does not fit MPI's `int` count arguments.
    #[error("element count {0} exceeds MPI's int range")]
    CountTooLarge(usize),
    /// Sender's and receiver's type signatures differ.
    #[error(
        "type signature mismatch: the message's elements are {message_type} \
         (signature {message:#018x}), receive type {receiver_type} has signature \
         {receiver:#018x} (root {receiver_root:#018x}); MPI requires the basic types to agree"
    )]
    SignatureMismatch {
        /// The message's per-element signature.
        message: u64,
        /// The message's root signature (0 when the wire did not carry it).
        message_root: u64,
        /// The message's elements when the receiver could name them
        /// (`[MPI_LONG]`), else "of another type".
        message_type: String,
        /// The receive type's per-element signature.
        receiver: u64,
        /// The receive type's root signature.
        receiver_root: u64,
        /// Human-readable basic sequence of the receive type.
        receiver_type: String,
    },
    /// The message holds more elements than the receive buffer.
    #[error(
        "message truncated: {incoming} elements arrived but the receive buffer holds {capacity}"
    )]
    Truncated {
        /// Elements in the message.
        incoming: usize,
        /// Elements the buffer can hold.
        capacity: usize,
    },
    /// The message's basic sequence does not end on a receive-element boundary.
    #[error(
        "message of {root_reps} root repetitions is not a whole number of receive elements \
         ({per_elem} per element)"
    )]
    PartialElement {
        /// Root repetitions in the message.
        root_reps: u64,
        /// Root repetitions per receive element.
        per_elem: u64,
    },
    /// The payload size is inconsistent with format, type and count.
    #[error("payload of {actual} bytes does not match the {expected} bytes expected for {count} elements in {format:?}")]
    LengthMismatch {
        /// Bytes received.
        actual: usize,
        /// Bytes expected.
        expected: usize,
        /// Element count.
        count: usize,
        /// Wire format.
        format: WireFormat,
    },
    /// The wire format cannot be decoded into the receive type.
    #[error("wire format {format:?} cannot be decoded into receive type {receiver_type}")]
    FormatMismatch {
        /// The wire format.
        format: WireFormat,
        /// Human-readable basic sequence of the receive type.
        receiver_type: String,
    },
    /// The sender's elements have another size than the receive type's
    /// here: the type's representation differs between the two hosts.
    #[error(
        "the sender's elements are {sender_elem} bytes but receive type {receiver_type} \
         takes {receiver_elem} bytes per element here: its representation differs \
         between the two hosts, so the message is refused rather than reinterpreted"
    )]
    SizeMismatch {
        /// Bytes per element at the sender.
        sender_elem: u64,
        /// Bytes per element of the receive type here.
        receiver_elem: usize,
        /// Human-readable basic sequence of the receive type.
        receiver_type: String,
    },
    /// `MPI_PACKED` data to or from another type, not in this host's
    /// native representation.
    #[error(
        "MPI_PACKED data crosses between MPI_PACKED and other types only in this host's \
         native representation (the same byte order at both ends), but the message is {format:?}"
    )]
    PackedNotNative {
        /// The message's wire format.
        format: WireFormat,
    },
    /// Unknown wire-format byte.
    #[error("unknown wire format code {0}")]
    UnknownFormat(u8),
}

/// Result alias of this module.
pub type Result<T, E = DatatypeError> = std::result::Result<T, E>;

/// Turn an MPI return code into a `Result`.
pub(crate) fn mpi_call(call: &'static str, code: c_int) -> Result<()> {
    if code == 0 {
        return Ok(());
    }
    let mut buf = [0 as c_char; 1024];
    let mut len: c_int = 0;
    // SAFETY: `buf` is a live buffer of MPI_MAX_ERROR_STRING (<= 1024) bytes that MPI_Error_string NUL-terminates; `len` is a live out-parameter.
    let message = unsafe {
        if ffi::MPI_Error_string(code, buf.as_mut_ptr(), &mut len) == 0 {
            CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
        } else {
            "unknown error".to_string()
        }
    };
    Err(DatatypeError::Mpi {
        call,
        code,
        message,
    })
}

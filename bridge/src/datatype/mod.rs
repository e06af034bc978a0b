//! Datatype layer of the bridge: type signatures and the portable wire
//! representation of message payloads exchanged between MPI jobs built
//! against *different* MPI implementations (Open MPI ↔ MPICH).
//!
//! # Type signatures
//!
//! Any MPI datatype handle is flattened (recursively, via
//! `MPI_Type_get_envelope` / `MPI_Type_get_contents`) into the sequence of
//! basic types it contains — its MPI *type signature*, i.e. the typemap
//! without displacements, in typemap order. The sequence is stored as
//! normalized run-length [`Run`]s over the portable [`BasicType`] enum
//! (adjacent runs of the same basic type are merged, so `contiguous(4, i32)`,
//! `struct { a: [i32; 2], b: [i32; 2] }` and four separate `i32` fields all
//! flatten to `[i32 x 4]`).
//!
//! Predefined handles are implementation-specific values (Open MPI: pointers,
//! MPICH: integers). They are mapped to [`BasicType`] by comparing with the
//! handles rsmpi exposes (`RSMPI_*`) and otherwise by `MPI_Type_get_name`,
//! whose result the MPI standard fixes for predefined types ("MPI_INT", ...).
//! Only the portable enum codes and hashes ever leave the process.
//!
//! The **signature** of a type is `hash_runs(runs)`: 64-bit FNV-1a over the
//! tag `"isthmus-sig-v1"` followed by, per run, the one-byte [`BasicType`]
//! code and the count as u64 little-endian. It is stable across builds,
//! processes and MPI implementations (checked by
//! `bridge/tests/datatype_crosscheck.sh`).
//!
//! ## Matching rules (what the engine should enforce)
//!
//! * [`MatchRule::ExactElement`] (required, default): the message's
//!   per-element signature must equal the receive type's; the message's
//!   element count must be `<=` the receive buffer's (else
//!   [`DatatypeError::Truncated`]). `f64` → `i32` is a
//!   [`DatatypeError::SignatureMismatch`].
//! * [`MatchRule::BasicSequence`] (MPI's actual rule, supported): the basic
//!   sequence of the whole message must equal a prefix of the receive
//!   buffer's, consisting of whole receive elements. Implemented in O(runs)
//!   with the *primitive root*: every type's basic sequence `S` is `P^r` for
//!   a shortest `P`; a message of `n` elements is `P^(n·r)`. The message
//!   therefore carries `(root_signature = hash(P), root_reps = n·r)`, and a
//!   receiver whose own root hashes equal can accept
//!   `root_reps / r_recv` elements (an error if that does not divide —
//!   a partial element, [`DatatypeError::PartialElement`]). E.g. 4 × `i32`
//!   can be received as 2 × `struct { i32, i32 }`.
//!
//! Strictness: `MPI_INT` and `MPI_INT32_T` are distinct basic types (as in
//! the standard). `MPI_BYTE`/`MPI_PACKED` get no special "matches anything"
//! treatment.
//!
//! # Wire representation
//!
//! Every payload is tagged with a [`WireFormat`]:
//!
//! * [`WireFormat::RawLe`] / [`WireFormat::RawBe`] — the *fast path*, used
//!   when the element type is a single predefined basic type whose native
//!   size equals its external32 size and which is a plain integer / IEEE
//!   value (all rsmpi primitive `Equivalence` types: `bool`, `i8`…`u64`,
//!   `f32`, `f64`, `Complex32/64`). The payload is the elements' native bytes
//!   back to back (`count * size` bytes) in the stated byte order. The sender
//!   uses its native order, so encoding is **zero-copy** (a borrowed view of
//!   the user's slice) and makes **no MPI calls**. The receiver byte-swaps
//!   (per scalar; complex numbers per component) if the order differs.
//! * [`WireFormat::External32`] — everything else (rsmpi
//!   `#[derive(Equivalence)]` structs, `UserDatatype`s such as strided
//!   vectors, types with padding, `MPI_LONG`, `long double`, ...): the MPI
//!   `external32` representation of `count` elements (big-endian, IEEE,
//!   fixed sizes, no padding, data in typemap order -- defined by the MPI
//!   standard, hence portable). Only the data bytes travel, so strided/padded
//!   layouts are gathered on send and scattered on receive. Its length is
//!   `count * external32_size_per_elem`.
//!
//!   How it is produced: when every basic type in the signature has equal
//!   native and external32 sizes (all Rust primitives), we call `MPI_Pack`
//!   (native, on `MPI_COMM_SELF`) and byte-swap each scalar ourselves
//!   (receive: swap, then `MPI_Unpack`). Reason: MPICH 4.0.2's
//!   `MPI_Pack_external`/`MPI_Pack_external_size` die with SIGILL on any
//!   heterogeneous struct (e.g. every `#[derive(Equivalence)]` struct with
//!   mixed field types). This relies on `MPI_Pack` emitting the data bytes
//!   in typemap order without gaps (true for Open MPI and MPICH; the packed
//!   length is checked at run time, and the tests verify the result is
//!   byte-identical to Open MPI's `MPI_Pack_external`). Other types fall back
//!   to `MPI_Pack_external`/`MPI_Unpack_external`.
//!
//! A decoder accepts either format for any receive type whose signature
//! matches: External32 into a basic type is byte-swapped without MPI; Raw
//! into a derived type of one basic type is (swapped to native order and)
//! `MPI_Unpack`ed.
//!
//! The header the engine must transmit next to the bytes is [`MessageSig`]
//! (signature, count, root signature, root reps) plus the [`WireFormat`]
//! (one byte: [`WireFormat::to_u8`]).
//!
//! # Threading
//!
//! [`type_info`] queries MPI once per Rust type and caches the result
//! (process-global `Mutex<HashMap<TypeId, &'static TypeInfo>>`). rsmpi
//! requires `#[derive(Equivalence)]` types to be first materialized on the
//! thread that initialized MPI unless `Threading::Multiple`; call
//! [`type_info::<T>()`](type_info) there once (e.g. at bridge setup) if the
//! engine encodes from another thread. The raw fast path makes no MPI calls
//! after the first `type_info`; the External32 path calls
//! `MPI_Pack_external`/`MPI_Unpack_external` and therefore needs an MPI
//! thread level that permits calls from the calling thread.
//!
//! # Errors
//!
//! MPI return codes are checked and reported as [`DatatypeError::Mpi`] with
//! the call name, code and `MPI_Error_string`. Note that with MPI's default
//! error handler (`MPI_ERRORS_ARE_FATAL`) an MPI error aborts before the
//! code is returned; this layer does not change the error handler.

use std::any::TypeId;
use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int};
use std::sync::Mutex;

use mpi::datatype::{Buffer, BufferMut, Equivalence};
use mpi::ffi;
use mpi::raw::AsRaw;

mod basic;
mod signature;
mod swap;

pub use basic::BasicType;
pub use signature::{basic_count, flatten, fnv1a64, hash_runs, primitive_root, Run, RunsDisplay};

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
        "type signature mismatch: message has signature {message:#018x} \
         (root {message_root:#018x}), receive type {receiver_type} has signature \
         {receiver:#018x} (root {receiver_root:#018x})"
    )]
    SignatureMismatch {
        /// The message's per-element signature.
        message: u64,
        /// The message's root signature.
        message_root: u64,
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

fn to_count(n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| DatatypeError::CountTooLarge(n))
}

const EXTERNAL32: &CStr = c"external32";

pub use crate::wire::WireFormat;

/// Which type-matching rule to apply on receive (see module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatchRule {
    /// Per-element signatures must be equal.
    #[default]
    ExactElement,
    /// The message's basic sequence must be a whole-element prefix of the
    /// receive buffer's (MPI semantics).
    BasicSequence,
}

/// Everything the datatype layer knows about one element of a datatype.
#[derive(Debug, Clone)]
pub struct TypeInfo {
    /// Stable hash of `runs` ([`hash_runs`]).
    pub signature: u64,
    /// Normalized basic-type runs of ONE element, in typemap order.
    pub runs: Vec<Run>,
    /// Number of basic elements in one element.
    pub basic_count_per_elem: u64,
    /// `Some(b)` when the datatype is a single predefined basic type.
    pub contiguous_basic: Option<BasicType>,
    /// Whether the raw fast path is used (see module docs).
    pub raw: bool,
    /// Byte-swap unit for the raw path (0 when `!raw`).
    pub swap_unit: usize,
    /// Bytes of data in one element (`MPI_Type_size`, gaps excluded).
    pub data_size_per_elem: usize,
    /// Distance between consecutive elements in memory (extent; for
    /// `Equivalence` types `size_of::<T>()`).
    pub extent: usize,
    /// Wire bytes per element in the format [`encode`] chooses.
    pub wire_size_per_elem: usize,
    /// Bytes per element in external32.
    pub external32_size_per_elem: usize,
    /// Hash of the primitive root of `runs` (see [`MatchRule::BasicSequence`]).
    pub root_signature: u64,
    /// How many roots one element consists of.
    pub root_reps_per_elem: u64,
    /// External32 is produced by `MPI_Pack` (native) + our own per-basic
    /// byte swapping (true), or by `MPI_Pack_external` (false; only for
    /// types containing basics whose native and external32 sizes differ,
    /// e.g. `MPI_LONG` under MPICH, or `long double`).
    pub external32_by_swapping: bool,
    /// Per-element byte-swap program: (unit, bytes) segments in typemap order.
    swap_program: Vec<(usize, usize)>,
}

impl TypeInfo {
    /// The format [`encode`] produces for this type on this host.
    pub fn preferred_format(&self) -> WireFormat {
        if self.raw {
            WireFormat::native_raw()
        } else {
            WireFormat::External32
        }
    }

    /// Payload length in bytes of `count` elements in `format`.
    pub fn payload_len(&self, format: WireFormat, count: usize) -> Result<usize> {
        let per = if format.is_raw() {
            self.data_size_per_elem
        } else {
            self.external32_size_per_elem
        };
        per.checked_mul(count).ok_or(DatatypeError::Overflow)
    }

    /// The signature header of a message of `count` elements of this type.
    pub fn message_sig(&self, count: usize) -> MessageSig {
        MessageSig {
            signature: self.signature,
            count: count as u64,
            root_signature: self.root_signature,
            root_reps: self.root_reps_per_elem.saturating_mul(count as u64),
        }
    }

    /// Human-readable basic sequence, e.g. `[u8, f64, i32]`.
    pub fn describe(&self) -> String {
        RunsDisplay(&self.runs).to_string()
    }

    /// Check an incoming message against this (receive) type; returns the
    /// number of receive elements the message fills.
    pub fn match_message(
        &self,
        msg: &MessageSig,
        capacity: usize,
        rule: MatchRule,
    ) -> Result<usize> {
        let n = if msg.signature == self.signature {
            usize::try_from(msg.count).map_err(|_| DatatypeError::Overflow)?
        } else if rule == MatchRule::BasicSequence
            && msg.root_signature == self.root_signature
            && self.root_reps_per_elem > 0
        {
            if msg.root_reps % self.root_reps_per_elem != 0 {
                return Err(DatatypeError::PartialElement {
                    root_reps: msg.root_reps,
                    per_elem: self.root_reps_per_elem,
                });
            }
            usize::try_from(msg.root_reps / self.root_reps_per_elem)
                .map_err(|_| DatatypeError::Overflow)?
        } else {
            return Err(DatatypeError::SignatureMismatch {
                message: msg.signature,
                message_root: msg.root_signature,
                receiver: self.signature,
                receiver_root: self.root_signature,
                receiver_type: self.describe(),
            });
        };
        if n > capacity {
            return Err(DatatypeError::Truncated {
                incoming: n,
                capacity,
            });
        }
        Ok(n)
    }
}

/// The type-signature header that travels with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageSig {
    /// Per-element signature of the sender's type.
    pub signature: u64,
    /// Number of sender elements.
    pub count: u64,
    /// Root signature of the sender's type.
    pub root_signature: u64,
    /// Total root repetitions in the message (`count * root_reps_per_elem`).
    pub root_reps: u64,
}

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

/// A datatype handle that can live in a global (MPI handles are plain
/// values; Open MPI's are pointers, hence not `Send` by default).
#[derive(Clone, Copy, Debug)]
struct Handle(ffi::MPI_Datatype);
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

struct Cached {
    info: TypeInfo,
    /// A resized copy of `T`'s datatype when its lb/extent disagree with
    /// `size_of::<T>()` (so that element `i` is at `ptr + i*size_of::<T>()`).
    resized: Option<Handle>,
}

fn cache() -> &'static Mutex<HashMap<TypeId, &'static Cached>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<TypeId, &'static Cached>>> =
        std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn extent_of(dt: ffi::MPI_Datatype) -> Result<(isize, isize)> {
    let (mut lb, mut ext): (ffi::MPI_Aint, ffi::MPI_Aint) = (0, 0);
    mpi_call("MPI_Type_get_extent", unsafe {
        ffi::MPI_Type_get_extent(dt, &mut lb, &mut ext)
    })?;
    Ok((lb as isize, ext as isize))
}

fn external32_size(dt: ffi::MPI_Datatype, count: usize) -> Result<usize> {
    let mut size: ffi::MPI_Aint = 0;
    mpi_call("MPI_Pack_external_size", unsafe {
        ffi::MPI_Pack_external_size(EXTERNAL32.as_ptr(), to_count(count)?, dt, &mut size)
    })?;
    usize::try_from(size).map_err(|_| DatatypeError::Overflow)
}

fn compute_info(dt: ffi::MPI_Datatype, extent: usize) -> Result<TypeInfo> {
    if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
        return Err(DatatypeError::NotInitialized);
    }
    let flat = signature::flatten_with_sizes(dt)?;
    let runs = flat.runs;
    let signature = hash_runs(&runs);
    let (root, root_reps_per_elem) = primitive_root(&runs);
    let basic_count_per_elem = basic_count(&runs);
    let data_size_per_elem = signature::type_size(dt)? as usize;

    // external32 size and swap program from the per-basic sizes
    let mut program: Vec<(usize, usize)> = Vec::new();
    let mut ext32: Option<usize> = Some(0);
    let mut native_sum: usize = 0;
    let mut by_swapping = true;
    for r in &runs {
        let count = usize::try_from(r.count).map_err(|_| DatatypeError::Overflow)?;
        match flat.sizes.get(&r.basic) {
            Some(sz) => {
                ext32 = ext32.and_then(|e| e.checked_add(sz.external32.checked_mul(count)?));
                let bytes = sz
                    .native
                    .checked_mul(count)
                    .ok_or(DatatypeError::Overflow)?;
                native_sum = native_sum
                    .checked_add(bytes)
                    .ok_or(DatatypeError::Overflow)?;
                let unit = if sz.native == sz.external32 {
                    r.basic.swap_unit(sz.native)
                } else {
                    None
                };
                match unit {
                    Some(u) => match program.last_mut() {
                        Some(last) if last.0 == u || (last.0 <= 1 && u <= 1) => last.1 += bytes,
                        _ => program.push((u, bytes)),
                    },
                    None => by_swapping = false,
                }
            }
            None => {
                ext32 = None;
                by_swapping = false;
            }
        }
    }
    if native_sum != data_size_per_elem {
        by_swapping = false;
    }
    let external32_size_per_elem = match ext32 {
        Some(e) => e,
        // only for types containing predefined pair types
        None => external32_size(dt, 1)?,
    };
    let contiguous_basic = if basic_count_per_elem == 1 && runs.len() == 1 {
        // single predefined type? (a derived type wrapping one basic also has
        // basic_count 1 but may have a gap/lb; require extent == size, lb == 0)
        let (lb, ext) = extent_of(dt)?;
        (lb == 0 && ext as usize == data_size_per_elem && extent == data_size_per_elem)
            .then_some(runs[0].basic)
    } else {
        None
    };
    let raw =
        contiguous_basic.is_some() && by_swapping && program.len() == 1 && data_size_per_elem > 0;
    let swap_unit = if raw { program[0].0 } else { 0 };
    Ok(TypeInfo {
        signature,
        root_signature: hash_runs(&root),
        root_reps_per_elem,
        runs,
        basic_count_per_elem,
        contiguous_basic,
        raw,
        swap_unit,
        data_size_per_elem,
        extent,
        wire_size_per_elem: if raw {
            data_size_per_elem
        } else {
            external32_size_per_elem
        },
        external32_size_per_elem,
        external32_by_swapping: by_swapping,
        swap_program: program,
    })
}

/// Apply a per-element swap program to a packed buffer of whole elements.
fn apply_program(buf: &mut [u8], program: &[(usize, usize)], elem_size: usize) {
    if cfg!(target_endian = "big") || elem_size == 0 {
        return; // native order already is external32's
    }
    if let [(unit, _)] = program {
        swap::swap_in_place(buf, *unit);
        return;
    }
    // per-scalar ops (offset, unit) within one element
    let mut ops: Vec<(usize, usize)> = Vec::new();
    let mut off = 0;
    for &(unit, bytes) in program {
        if unit > 1 {
            ops.extend((0..bytes / unit).map(|k| (off + k * unit, unit)));
        }
        off += bytes;
    }
    if ops.is_empty() {
        return;
    }
    for elem in buf.chunks_exact_mut(elem_size) {
        for &(o, unit) in &ops {
            let p = elem[o..o + unit].as_mut_ptr();
            // SAFETY: p..p+unit is inside `elem`; unaligned access is used.
            unsafe {
                match unit {
                    2 => (p as *mut u16)
                        .write_unaligned((p as *const u16).read_unaligned().swap_bytes()),
                    4 => (p as *mut u32)
                        .write_unaligned((p as *const u32).read_unaligned().swap_bytes()),
                    8 => (p as *mut u64)
                        .write_unaligned((p as *const u64).read_unaligned().swap_bytes()),
                    _ => std::slice::from_raw_parts_mut(p, unit).reverse(),
                }
            }
        }
    }
}

/// Largest element count per MPI_Pack/MPI_Unpack call (their sizes are `int`).
fn chunk_elems(elem_size: usize) -> usize {
    (c_int::MAX as usize / elem_size.max(1)).max(1)
}

/// `MPI_Pack` (native representation; for the implementations we support,
/// the data bytes in typemap order without gaps) of `count` elements.
unsafe fn native_pack(
    info: &TypeInfo,
    dt: ffi::MPI_Datatype,
    count: usize,
    ptr: *const c_void,
) -> Result<Vec<u8>> {
    let total = info
        .data_size_per_elem
        .checked_mul(count)
        .ok_or(DatatypeError::Overflow)?;
    let mut out = vec![0u8; total];
    let per = chunk_elems(info.data_size_per_elem);
    let mut done = 0;
    let mut off = 0usize;
    while done < count {
        let n = per.min(count - done);
        let len = n * info.data_size_per_elem;
        let mut position: c_int = 0;
        mpi_call("MPI_Pack", unsafe {
            ffi::MPI_Pack(
                (ptr as *const u8).add(done * info.extent) as *const c_void,
                n as c_int,
                dt,
                out[off..].as_mut_ptr() as *mut c_void,
                len as c_int,
                &mut position,
                ffi::RSMPI_COMM_SELF,
            )
        })?;
        if position as usize != len {
            return Err(DatatypeError::Unsupported(format!(
                "MPI_Pack produced {position} bytes for {n} elements of {} data bytes each",
                info.data_size_per_elem
            )));
        }
        done += n;
        off += len;
    }
    Ok(out)
}

/// Inverse of [`native_pack`].
unsafe fn native_unpack(
    info: &TypeInfo,
    dt: ffi::MPI_Datatype,
    bytes: &[u8],
    count: usize,
    out: *mut c_void,
) -> Result<()> {
    let per = chunk_elems(info.data_size_per_elem);
    let mut done = 0;
    let mut off = 0usize;
    while done < count {
        let n = per.min(count - done);
        let len = n * info.data_size_per_elem;
        let mut position: c_int = 0;
        mpi_call("MPI_Unpack", unsafe {
            ffi::MPI_Unpack(
                bytes[off..off + len].as_ptr() as *const c_void,
                len as c_int,
                &mut position,
                (out as *mut u8).add(done * info.extent) as *mut c_void,
                n as c_int,
                dt,
                ffi::RSMPI_COMM_SELF,
            )
        })?;
        if position as usize != len {
            return Err(DatatypeError::Unsupported(format!(
                "MPI_Unpack consumed {position} bytes for {n} elements of {} data bytes each",
                info.data_size_per_elem
            )));
        }
        done += n;
        off += len;
    }
    Ok(())
}

fn cached<T: Equivalence + 'static>() -> Result<&'static Cached> {
    let id = TypeId::of::<T>();
    if let Some(c) = cache().lock().unwrap().get(&id) {
        return Ok(c);
    }
    // Compute outside the lock only in the sense of correctness; holding it
    // serializes first-time MPI queries, which is what we want.
    let mut map = cache().lock().unwrap();
    if let Some(c) = map.get(&id) {
        return Ok(c);
    }
    let owner = T::equivalent_datatype();
    let dt = owner.as_raw();
    let size = std::mem::size_of::<T>();
    let (lb, ext) = extent_of(dt)?;
    let resized = if lb != 0 || ext as usize != size {
        let mut newtype: ffi::MPI_Datatype = unsafe { ffi::RSMPI_DATATYPE_NULL };
        mpi_call("MPI_Type_create_resized", unsafe {
            ffi::MPI_Type_create_resized(dt, 0, size as ffi::MPI_Aint, &mut newtype)
        })?;
        mpi_call("MPI_Type_commit", unsafe {
            ffi::MPI_Type_commit(&mut newtype)
        })?;
        Some(Handle(newtype))
    } else {
        None
    };
    let info = compute_info(resized.map(|h| h.0).unwrap_or(dt), size)?;
    let leaked: &'static Cached = Box::leak(Box::new(Cached { info, resized }));
    map.insert(id, leaked);
    Ok(leaked)
}

/// Signature and layout information of the Rust type `T` (queried from MPI
/// once, then cached).
pub fn type_info<T: Equivalence + 'static>() -> Result<&'static TypeInfo> {
    Ok(&cached::<T>()?.info)
}

/// Signature and layout information of an arbitrary committed datatype
/// handle (e.g. a `UserDatatype` vector). Not cached (handles can be freed
/// and reused). The element stride is the datatype's extent.
pub fn datatype_info(dt: ffi::MPI_Datatype) -> Result<TypeInfo> {
    if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
        return Err(DatatypeError::NotInitialized);
    }
    let (_, ext) = extent_of(dt)?;
    compute_info(dt, ext.max(0) as usize)
}

fn as_bytes<T>(buf: &[T]) -> &[u8] {
    // SAFETY: reading the bytes of a slice of Equivalence types for the raw
    // path only, where T is a single predefined basic type without padding.
    unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, std::mem::size_of_val(buf)) }
}

/// `MPI_Pack_external("external32")` of `count` elements of `dt` at `ptr`.
///
/// # Safety
/// `ptr` must point to `count` valid elements of `dt`.
pub unsafe fn pack_external32(
    dt: ffi::MPI_Datatype,
    count: usize,
    ptr: *const c_void,
) -> Result<Vec<u8>> {
    let size = external32_size(dt, count)?;
    let mut out = vec![0u8; size];
    let mut position: ffi::MPI_Aint = 0;
    if count > 0 {
        mpi_call("MPI_Pack_external", unsafe {
            ffi::MPI_Pack_external(
                EXTERNAL32.as_ptr(),
                ptr,
                to_count(count)?,
                dt,
                out.as_mut_ptr() as *mut c_void,
                size as ffi::MPI_Aint,
                &mut position,
            )
        })?;
    }
    out.truncate(position as usize);
    Ok(out)
}

/// `MPI_Unpack_external("external32")` of `count` elements of `dt` into `out`.
///
/// # Safety
/// `out` must point to writable memory for `count` elements of `dt`.
pub unsafe fn unpack_external32(
    dt: ffi::MPI_Datatype,
    bytes: &[u8],
    count: usize,
    out: *mut c_void,
) -> Result<()> {
    let mut position: ffi::MPI_Aint = 0;
    if count == 0 {
        return Ok(());
    }
    mpi_call("MPI_Unpack_external", unsafe {
        ffi::MPI_Unpack_external(
            EXTERNAL32.as_ptr(),
            bytes.as_ptr() as *const c_void,
            bytes.len() as ffi::MPI_Aint,
            &mut position,
            out,
            to_count(count)?,
            dt,
        )
    })?;
    if position as usize != bytes.len() {
        return Err(DatatypeError::LengthMismatch {
            actual: bytes.len(),
            expected: position as usize,
            count,
            format: WireFormat::External32,
        });
    }
    Ok(())
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
            None => unsafe {
                std::slice::from_raw_parts(ptr as *const u8, count * info.data_size_per_elem)
            },
        };
        let need_swap = match format {
            WireFormat::External32 => cfg!(target_endian = "little"),
            f => f != WireFormat::native_raw(),
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
            let mut v = unsafe { native_pack(info, dt, count, ptr)? };
            apply_program(&mut v, &info.swap_program, info.data_size_per_elem);
            Cow::Owned(v)
        } else {
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
        let unit = match (&info.runs[..], &info.swap_program[..]) {
            ([_], [(unit, _)]) if info.external32_by_swapping => *unit,
            _ => {
                return Err(DatatypeError::FormatMismatch {
                    format,
                    receiver_type: info.describe(),
                })
            }
        };
        let native: Cow<[u8]> = if format != WireFormat::native_raw() {
            Cow::Owned(swap::swapped_copy(bytes, unit))
        } else {
            Cow::Borrowed(bytes)
        };
        unsafe { native_unpack(info, dt, &native, count, out)? };
        return Ok(count);
    }
    if info.external32_by_swapping {
        let mut tmp = bytes.to_vec();
        apply_program(&mut tmp, &info.swap_program, info.data_size_per_elem);
        unsafe { native_unpack(info, dt, &tmp, count, out)? };
    } else {
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
    unsafe { decode_impl(&info, dt, format, bytes, count, out) }
}

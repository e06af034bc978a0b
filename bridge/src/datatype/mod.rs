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
//! ## Matching rules
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
//! * [`TypeInfo::match_wire`] (the C API's receives, MPI 4.0 §3.3.1): from
//!   what the frame header carries — the sender's per-element signature,
//!   its element count and the payload bytes, hence the sender's element
//!   size. It accepts an equal signature, a message whose elements are one
//!   root of the receive type each (10 `MPI_INT` into
//!   `vector(10,1,3,MPI_INT)`), and, for a receive type of one basic type,
//!   elements of `k` such basics (a vector of ints into ints; `k` from the
//!   element size, confirmed by the hash). The sender's element size must
//!   equal the receive type's here ([`DatatypeError::SizeMismatch`]): a
//!   type whose size differs between the hosts is refused, never
//!   reinterpreted. A mismatch names the message's element type when it is
//!   one basic type (`[MPI_LONG]`).
//!
//! Strictness: `MPI_INT` and `MPI_INT32_T` are distinct basic types (as in
//! the standard). `MPI_BYTE`/`MPI_PACKED` get no special "matches anything"
//! treatment: each matches itself only.
//!
//! # Wire representation
//!
//! Every payload is tagged with a [`WireFormat`]; the frame header also
//! carries the signature (which basic types, by their portable codes) and
//! the payload length (hence the sender's bytes per element). Only
//! Isthmus encodes: MPI's own external32 (`MPI_Pack_external`) is not used
//! for any predefined type, because the implementations disagree on it
//! (Open MPI's external32 `MPI_LONG` is 4 bytes, so 12345678900 arrived
//! as 874306783; `long double` changed value) and MPICH 4.0 aborts in it
//! (pair types, heterogeneous structs).
//!
//! * [`WireFormat::RawLe`] / [`WireFormat::RawBe`] — the *fast path*, used
//!   when the element type is a single predefined basic type (any of them:
//!   `MPI_LONG`, `MPI_WCHAR`, x87 `long double`, the Fortran types, ...).
//!   The payload is the elements' native bytes back to back (`count *
//!   size` bytes) in the stated byte order. The sender uses its native
//!   order, so encoding is **zero-copy** (a borrowed view of the user's
//!   buffer) and makes **no MPI calls**. The receiver byte-swaps (per
//!   scalar; complex numbers per component) if the order differs.
//! * [`WireFormat::External32`] — everything else (derived types, pair
//!   types, rsmpi `#[derive(Equivalence)]` structs): the data of `count`
//!   elements in typemap order, without gaps, each basic value big-endian
//!   at its **native size on the sender** (external32's layout; the same
//!   bytes as MPI's external32 for every type whose native size is the
//!   external32 size, e.g. all Rust primitives). Produced by `MPI_Pack`
//!   (native, on `MPI_COMM_SELF`: the data bytes in typemap order, checked
//!   by length at run time) plus our own per-basic byte swap (receive:
//!   swap, then `MPI_Unpack`). The basics' native sizes come from
//!   `MPI_Type_size` of each predefined type (a pair type's halves from
//!   its size less a C `int`).
//!
//!   The one exception: `long double` on a non-x86 host, whose format
//!   (binary128, double-double) the wire cannot name, still goes through
//!   `MPI_Pack_external`.
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
//! after the first `type_info`; the External32 path calls `MPI_Pack`/
//! `MPI_Unpack` and therefore needs an MPI
//! thread level that permits calls from the calling thread.
//!
//! # Errors
//!
//! MPI return codes are checked and reported as [`DatatypeError::Mpi`] with
//! the call name, code and `MPI_Error_string`. Note that with MPI's default
//! error handler (`MPI_ERRORS_ARE_FATAL`) an MPI error aborts before the
//! code is returned; this layer does not change the error handler.

mod basic;
mod codec;
mod error;
mod info;
mod pack;
mod partial;
mod signature;
mod swap;

pub use crate::format::WireFormat;
pub use basic::BasicType;
pub use codec::{
    decode_into, decode_into_buffer, decode_message, decode_raw, decode_raw_with, encode,
    encode_as, encode_buffer, encode_raw, encode_raw_with, raw_to_native_in_place, Encoded,
};
pub use error::{DatatypeError, Result};
pub use info::{datatype_info, type_info, MatchRule, MessageSig, TypeInfo};
pub use pack::{pack_external32, unpack_external32};
pub use partial::{decode_partial, Partial};
pub use signature::{hash_runs, Run};

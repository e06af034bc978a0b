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

mod basic;
mod codec;
mod error;
mod info;
mod pack;
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
pub use signature::{hash_runs, Run};

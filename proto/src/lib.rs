//! Wire types of the Isthmus virtual machine daemon, generated from
//! `proto/isthmus.proto`, and [`convert`]: the one edge between them and the
//! domain types of `isthmus-types`.

#![allow(clippy::large_enum_variant)]

/// Version 1 of the vmd protocol.
pub mod v1 {
    tonic::include_proto!("isthmus.v1");
}

pub use v1::*;

/// Metadata key of the status a session stream ends with when the vmd ends
/// the session for good (it stops cleanly and has closed the task): the
/// client must not try to resume it. Absent when the vmd simply went away.
pub const SESSION_END_KEY: &str = "isthmus-session-end";
/// The value of [`SESSION_END_KEY`]: the session is over.
pub const SESSION_END_FINAL: &str = "final";

pub mod codec;
pub mod convert;

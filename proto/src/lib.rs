//! Wire types of the Isthmus virtual machine daemon, generated from
//! `proto/isthmus.proto`, and [`convert`]: the one edge between them and the
//! domain types of `isthmus-types`.

#![allow(clippy::large_enum_variant)]

/// Version 1 of the vmd protocol.
pub mod v1 {
    tonic::include_proto!("isthmus.v1");
}

pub use v1::*;

pub mod codec;
pub mod convert;

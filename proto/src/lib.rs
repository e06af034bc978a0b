//! Wire types of the Isthmus virtual machine daemon, generated from
//! `proto/isthmus.proto`. Nothing but generated code and tiny helpers lives here.

#![allow(clippy::large_enum_variant)]

/// Version 1 of the vmd protocol.
pub mod v1 {
    tonic::include_proto!("isthmus.v1");
}

pub use v1::*;

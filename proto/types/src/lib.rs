//! Domain types shared by the vmd, its clients (tasks, console, taskers) and
//! the resource manager: plain Rust, no wire encoding, no I/O. The wire types
//! live in `isthmus-proto`, which converts to and from these at its edge.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod env;

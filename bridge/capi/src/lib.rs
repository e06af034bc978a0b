//! Isthmus for C and Fortran programs: `libisthmus.so`, built once per MPI
//! implementation.
//!
//! Two faces:
//! - [`api`]: `Isthmus_Register`, `Isthmus_Leave`, `Isthmus_Intercomm_create`
//!   (and its timeout and non-blocking forms), declared in `isthmus.h`.
//! - The interposed MPI calls ([`pt2pt`], [`requests`], [`comms`],
//!   [`finalize`] (delivers what was sent before MPI goes), and the
//!   generated refusals of `refused.c`): the library defines `MPI_Send`,
//!   `MPI_Wait`, … itself, as MPI's profiling interface allows. On a
//!   communicator Isthmus created they go over the bridge; on any other they
//!   pass straight to `PMPI_*` after one atomic load.
//!
//! A bridge communicator is a real MPI handle: a duplicate of the registered
//! communicator (so rank, size, group, attributes, names, error handlers and
//! Fortran conversion work natively), mapped in [`state`] to the bridge's
//! `InterComm`. A bridge request is a generalized request (`MPI_Grequest_start`),
//! so bridge and native requests mix in one `MPI_Waitall`; the interposed
//! wait and test calls complete the bridge ones and let MPI do the rest.
//!
//! Errors become MPI error codes in Isthmus's own error classes ([`errors`]),
//! with `MPI_Error_string` giving the bridge's message, and go through the
//! communicator's error handler.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod api;
pub mod comms;
pub mod datatype;
pub mod errors;
pub mod finalize;
pub mod fortran;
#[cfg(isthmus_large_count)]
pub mod large_count;
pub mod mpi_glue;
pub mod ports;
pub mod pt2pt;
pub mod refused;
pub mod requests;
pub mod state;

// Each `bridge` call of mpi-functions.txt has its body where the line says.
include!(concat!(env!("OUT_DIR"), "/bodies.rs"));

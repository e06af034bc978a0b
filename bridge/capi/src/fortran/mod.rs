//! Fortran: every Fortran entry point of libisthmus.
//!
//! **Isthmus's calls** ([`isthmus`]): `isthmus_register`, `isthmus_leave`,
//! `isthmus_intercomm_create` and its timeout form for `mpif.h`/`use mpi`
//! code (`use mpi_f08` code gets them from `fortran/isthmus_f08.f90`).
//!
//! **Spawn** ([`spawn`]): `MPI_Comm_spawn(_multiple)`, `MPI_Init(_thread)`
//! and `MPI_Comm_get_parent`, written by hand (hidden string lengths), and
//! `MPI_Comm_join` beside them (Open MPI's bindings and MPICH's `use
//! mpi_f08` call `PMPI_Comm_join`, past the C entry point).
//!
//! **Attributes** ([`attrs`]): `MPI_Comm_get_attr` and `MPI_Attr_get` for
//! the attributes libisthmus answers itself (a world's `MPI_APPNUM`, …):
//! both implementations' Fortran bindings read attributes inside the
//! library, past the C entry point.
//!
//! **Topologies on merged communicators** ([`merged`]): the Fortran bodies
//! of the Cartesian, graph and distributed graph calls and `MPI_Topo_test`,
//! and of the neighborhood collectives ([`neighbor`]), which MPI's bindings
//! send past the C entry points (a `+merged fortran` line).
//!
//! **MPI's calls.** Open MPI's Fortran bindings (`mpi_send_` in
//! `libmpi_mpifh`, which `mpif.h` and `use mpi` call, and `ompi_send_f`,
//! which `use mpi_f08` calls) go to `PMPI_Send` directly, past the C
//! `MPI_Send` this library defines; so do MPICH's `use mpi_f08` bindings of
//! the calls without a buffer (`mpi_wait_f08_` → `PMPI_Wait`), while its
//! `mpif.h`/`use mpi` ones call the C `MPI_*` (see ARCHITECTURE.md, "C and
//! Fortran: PMPI interposition"). So this library defines those Fortran
//! names too. Which names, and whether a call is carried or refused, is
//! `mpi-functions.txt`; build.rs generates every entry point from it
//! (`$OUT_DIR/fortran.rs`, included here): the shells around the hand-
//! written bodies of the carried calls (`ompi`: Open MPI's Fortran handles
//! and statuses; `mpich_f08`: MPICH's `use mpi_f08`, C statuses; `shared`:
//! the bodies both have, each written once over what the two bindings do
//! differently), the
//! refusals, and the names that pass the call on to the MPI library's own
//! definition (`dlsym(RTLD_NEXT)`). The implementation is told apart at run
//! time by Open MPI's `ompi_mpi_comm_world`. The bodies convert the Fortran
//! handles, statuses and `MPI_BOTTOM` as the implementation's own binding
//! does (`convert`) and call this library's C entry point, which goes over
//! the bridge on an Isthmus communicator and to `PMPI_*` on any other.

#![deny(unsafe_op_in_unsafe_fn)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::ffi::c_void;
use std::sync::OnceLock;

use crate::errors;
use crate::mpi_glue::MPI_Comm;

pub use convert::Fint;

/// A Fortran argument as the generated entry points see it: a reference
/// whose type the body gives.
type P = *mut c_void;

/// Reads an integer argument; used inside `unsafe` blocks whose SAFETY
/// note covers it (Fortran passes every argument by reference).
macro_rules! int {
    ($p:expr) => {
        get($p).unwrap_or(0)
    };
}

/// Calls the next definition of `$name` (the MPI library's own) with the
/// same arguments, or puts the error in `$ierror` when there is none.
/// (`spawn` and `attrs`; `next`, `no_next`, `put` and `OnceLock` in scope.)
macro_rules! pass_on {
    ($name:literal, $ierror:expr, ($($a:ident: $t:ty),*)) => {{
        static NEXT: OnceLock<usize> = OnceLock::new();
        match next(&NEXT, $name) {
            // SAFETY: the program's ierror (or null).
            0 => unsafe { put($ierror, no_next(&$name.to_string_lossy())) },
            p => {
                // SAFETY: the MPI library's own definition of this very
                // Fortran call, whose arguments are passed on unchanged.
                let f: unsafe extern "C" fn($($t),*) = unsafe { std::mem::transmute(p) };
                // SAFETY: as above.
                unsafe { f($($a),*) }
            }
        }
    }};
}

/// The two Fortran bodies of a collective, blocking (`$name`, calling the
/// C `$m::$c`) and nonblocking (`$iname`, calling `$m::$ic` with one more
/// argument, the request, whose Fortran handle goes back on success), from
/// its parameters and their conversion to C's (`ompi_coll`, `neighbor`).
macro_rules! collective {
    ($m:ident: $name:ident / $iname:ident => $c:ident / $ic:ident
        ($($p:ident: $t:ty),* $(,)?) => ($($arg:expr),* $(,)?)) => {
        #[doc = concat!("`", stringify!($c), "` for Open MPI's Fortran.")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(super) unsafe fn $name($($p: $t),*) -> c_int {
            // SAFETY: the program's buffers and arrays, converted handles.
            unsafe { $m::$c($($arg),*) }
        }

        #[doc = concat!("`", stringify!($ic), "` for Open MPI's Fortran.")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(super) unsafe fn $iname($($p: $t,)* request: *mut Fint) -> c_int {
            // SAFETY: the program's buffers and arrays, converted handles,
            // its request.
            unsafe { super::ompi_coll::started(request, |r| $m::$ic($($arg,)* r)) }
        }
    };
}

mod attrs;
mod convert;
mod groups;
pub mod isthmus;
mod merged;
mod mpich_f08;
mod neighbor;
mod ompi;
mod ompi_coll;
mod shared;
mod spawn;

use convert::{comm_f2c, get, next, no_next, open_mpi, put};

/// Is the Fortran communicator argument an Isthmus communicator (of either
/// kind: a merged one refuses the refused calls too)? Then
/// `Some(its C handle)`.
///
/// # Safety
/// `w` is null or the address of a Fortran INTEGER (a word: see build.rs).
unsafe fn bridge_comm_word(w: usize) -> Option<MPI_Comm> {
    // SAFETY: the caller's contract.
    let c = comm_f2c(unsafe { get(w as *const Fint) }?);
    crate::state::is_isthmus(c).then_some(c)
}

#[allow(clippy::too_many_arguments)]
mod generated {
    use super::*;
    include!(concat!(env!("OUT_DIR"), "/fortran.rs"));
}

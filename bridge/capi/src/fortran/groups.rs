//! The group calls for Open MPI's Fortran (`ompi_group_incl_f`,
//! `mpi_group_incl_`, …) and MPICH's `use mpi_f08` (`mpi_group_incl_f08_`),
//! whose bindings call `PMPI_Group_*` directly: an Isthmus group (the
//! members of a merged communicator in both jobs, `crate::group`) is a
//! handle that stands for the calling process alone to the MPI, so each
//! call goes to this library's C entry point, which computes on Isthmus
//! groups and passes any other on to the MPI. Both bindings' group handles
//! are integers (`MPI_VAL` in `use mpi_f08`) and these calls have no
//! status: one body serves both (re-exported by `ompi` and `mpich_f08`).
//!
//! `MPI_Comm_group` is a native call in `mpi-functions.txt` (the local
//! group of a plain Isthmus intercommunicator is its handle's): its
//! Fortran names are written here ([`comm_group_names!`]) rather than
//! generated.

use std::ffi::c_int;
use std::sync::OnceLock;

use mpi::ffi::MPI_Group;

use super::convert::*;
use crate::group;

/// Runs a call that makes a group and hands the program its Fortran handle,
/// on success only.
///
/// # Safety
/// `out` is the program's group argument (or null).
unsafe fn new_group(out: *mut Fint, make: impl FnOnce(*mut MPI_Group) -> c_int) -> c_int {
    // SAFETY: reading rsmpi's exported constant.
    let mut g = unsafe { mpi::ffi::RSMPI_GROUP_NULL };
    let rc = make(&mut g);
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(out, group_c2f(g)) };
    }
    rc
}

/// Runs a call that answers one integer and writes it back on success.
///
/// # Safety
/// `out` is the program's integer argument (or null).
unsafe fn integer(out: *mut Fint, ask: impl FnOnce(*mut c_int) -> c_int) -> c_int {
    let mut v: c_int = 0;
    let rc = ask(&mut v);
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(out, v) };
    }
    rc
}

/// `MPI_Comm_group` (a merged communicator's or a mixed
/// intercommunicator's is an Isthmus group).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_group(comm: *const Fint, group: *mut Fint) -> c_int {
    // SAFETY: a converted handle, our out-group.
    unsafe {
        new_group(group, |g| {
            crate::merged::MPI_Comm_group(comm_f2c(int!(comm)), g)
        })
    }
}

/// `MPI_Comm_remote_group` (an Isthmus intercommunicator's is an Isthmus
/// group).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_remote_group(comm: *const Fint, group: *mut Fint) -> c_int {
    // SAFETY: a converted handle, our out-group.
    unsafe {
        new_group(group, |g| {
            group::MPI_Comm_remote_group(comm_f2c(int!(comm)), g)
        })
    }
}

/// `MPI_Group_size`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn group_size(g: *const Fint, size: *mut Fint) -> c_int {
    // SAFETY: a converted handle, our out-integer.
    unsafe { integer(size, |v| group::MPI_Group_size(group_f2c(int!(g)), v)) }
}

/// `MPI_Group_rank`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn group_rank(g: *const Fint, rank: *mut Fint) -> c_int {
    // SAFETY: a converted handle, our out-integer.
    unsafe { integer(rank, |v| group::MPI_Group_rank(group_f2c(int!(g)), v)) }
}

/// `MPI_Group_compare`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn group_compare(g1: *const Fint, g2: *const Fint, result: *mut Fint) -> c_int {
    // SAFETY: converted handles, our out-integer.
    unsafe {
        integer(result, |v| {
            group::MPI_Group_compare(group_f2c(int!(g1)), group_f2c(int!(g2)), v)
        })
    }
}

/// `MPI_Group_translate_ranks` (the rank arrays are Fortran `INTEGER`s,
/// C `int`s, as they are).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn group_translate_ranks(
    g1: *const Fint,
    n: *const Fint,
    ranks1: *const Fint,
    g2: *const Fint,
    ranks2: *mut Fint,
) -> c_int {
    // SAFETY: converted handles, the program's arrays of `n` ranks.
    unsafe {
        group::MPI_Group_translate_ranks(
            group_f2c(int!(g1)),
            int!(n),
            ranks1,
            group_f2c(int!(g2)),
            ranks2,
        )
    }
}

/// The body of a call `$f` making a group of two (`$c`).
macro_rules! of_two {
    ($($f:ident: $c:ident),*) => {$(
        #[doc = concat!("`", stringify!($c), "`.")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        pub(super) unsafe fn $f(g1: *const Fint, g2: *const Fint, out: *mut Fint) -> c_int {
            // SAFETY: converted handles, our out-group.
            unsafe {
                new_group(out, |g| group::$c(group_f2c(int!(g1)), group_f2c(int!(g2)), g))
            }
        }
    )*};
}

of_two!(
    group_union: MPI_Group_union,
    group_intersection: MPI_Group_intersection,
    group_difference: MPI_Group_difference
);

/// The body of a call `$f` making a subset of a group (`$c`) from `n`
/// entries of type `$t` (ranks, or ranges of three).
macro_rules! subset {
    ($t:ty: $($f:ident: $c:ident),*) => {$(
        #[doc = concat!("`", stringify!($c), "`.")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        pub(super) unsafe fn $f(
            g: *const Fint,
            n: *const Fint,
            entries: *mut $t,
            out: *mut Fint,
        ) -> c_int {
            // SAFETY: a converted handle, the program's array, our out-group.
            unsafe { new_group(out, |o| group::$c(group_f2c(int!(g)), int!(n), entries, o)) }
        }
    )*};
}

subset!(Fint: group_incl: MPI_Group_incl, group_excl: MPI_Group_excl);
subset!([Fint; 3]: group_range_incl: MPI_Group_range_incl, group_range_excl: MPI_Group_range_excl);

/// `MPI_Group_free`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn group_free(g: *mut Fint) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let mut c = group_f2c(unsafe { int!(g) });
    // SAFETY: our handle copy.
    let rc = unsafe { group::MPI_Group_free(&mut c) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(g, group_c2f(c)) };
    }
    rc
}

/// `MPI_Comm_group`'s Fortran names: Open MPI's (`ompi_comm_group_f`,
/// `mpi_comm_group_`, `pmpi_comm_group_`) and MPICH's `use mpi_f08`
/// (`mpi_comm_group_f08_`) go to [`comm_group`]; the other implementation's
/// names, and MPICH's `mpi_comm_group_` (which calls the C
/// `MPI_Comm_group`), pass the call on.
macro_rules! comm_group_names {
    ($($f:ident: $name:literal if $ours:expr),*) => {$(
        /// A Fortran name of `MPI_Comm_group`: ours, else the library's.
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        #[no_mangle]
        pub unsafe extern "C" fn $f(comm: *const Fint, group: *mut Fint, ierror: *mut Fint) {
            if $ours {
                // SAFETY: the program's arguments (this function's contract).
                unsafe { put(ierror, comm_group(comm, group)) };
                return;
            }
            pass_on!($name, ierror, (comm: *const Fint, group: *mut Fint, ierror: *mut Fint))
        }
    )*};
}

comm_group_names!(
    ompi_comm_group_f: c"ompi_comm_group_f" if open_mpi(),
    mpi_comm_group_: c"mpi_comm_group_" if open_mpi(),
    pmpi_comm_group_: c"pmpi_comm_group_" if open_mpi(),
    mpi_comm_group_f08_: c"mpi_comm_group_f08_" if !open_mpi()
);

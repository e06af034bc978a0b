//! The Fortran names of `MPI_Comm_get_attr` and `MPI_Attr_get`, for the
//! attributes this library answers itself (`crate::appnum::own_value`: a
//! world's `MPI_APPNUM`, `MPI_UNIVERSE_SIZE`, `MPI_TAG_UB`, a spawn's
//! child's `MPI_APPNUM`). Neither implementation's Fortran binding reaches
//! the C `MPI_Comm_get_attr`: Open MPI's (`ompi_comm_get_attr_f`,
//! `mpi_comm_get_attr_`, `pmpi_comm_get_attr_`) and MPICH's (`mpif.h`,
//! `use mpi` and `use mpi_f08`) read the attribute inside the library. So
//! every name is interposed here: one of ours answers, anything else is
//! passed on to the library's own definition of the same name.
//!
//! Fortran's predefined keyvals are C's in Open MPI and C's plus one in
//! MPICH (its Fortran binding tells a Fortran caller by that).

use std::ffi::c_int;
use std::sync::OnceLock;

use super::convert::{comm_f2c, get, next, no_next, open_mpi, put, Fint};

/// A Fortran `LOGICAL`'s true (gfortran's, and both bindings').
const TRUE: Fint = 1;

/// Our value of attribute `keyval` (Fortran's) of `comm` (Fortran's), if
/// the attribute is one this library answers.
///
/// # Safety
/// `comm` and `keyval` are null or the addresses of Fortran INTEGERs.
unsafe fn own(comm: *const Fint, keyval: *const Fint) -> Option<c_int> {
    // SAFETY: the caller's contract.
    let (c, k) = unsafe { (get(comm)?, get(keyval)?) };
    let k = if open_mpi() { k } else { k.checked_sub(1)? };
    crate::appnum::own_value(comm_f2c(c), k)
}

/// Fortran names of an attribute call whose value is a `$value`:
/// `MPI_Comm_get_attr`'s an `INTEGER(KIND=MPI_ADDRESS_KIND)`,
/// `MPI_Attr_get`'s a default `INTEGER`.
macro_rules! get_attr {
    ($value:ty: $($f:ident: $name:literal),*) => {$(
        /// A Fortran name of `MPI_Comm_get_attr` or `MPI_Attr_get`: ours,
        /// else the library's.
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        #[no_mangle]
        pub unsafe extern "C" fn $f(
            comm: *const Fint,
            keyval: *const Fint,
            value: *mut $value,
            flag: *mut Fint,
            ierror: *mut Fint,
        ) {
            // SAFETY: the program's arguments (this function's contract).
            if let (Some(v), false, false) = (unsafe { own(comm, keyval) }, value.is_null(), flag.is_null()) {
                // SAFETY: the program's out-arguments, checked non-null.
                unsafe {
                    *value = <$value>::from(v);
                    *flag = TRUE;
                    put(ierror, 0);
                }
                return;
            }
            pass_on!($name, ierror, (comm: *const Fint, keyval: *const Fint, value: *mut $value, flag: *mut Fint, ierror: *mut Fint))
        }
    )*};
}

get_attr!(
    i64:
    ompi_comm_get_attr_f: c"ompi_comm_get_attr_f",
    mpi_comm_get_attr_: c"mpi_comm_get_attr_",
    pmpi_comm_get_attr_: c"pmpi_comm_get_attr_",
    mpi_comm_get_attr_f08_: c"mpi_comm_get_attr_f08_"
);

get_attr!(
    Fint:
    ompi_attr_get_f: c"ompi_attr_get_f",
    mpi_attr_get_: c"mpi_attr_get_",
    pmpi_attr_get_: c"pmpi_attr_get_"
);

//! `MPI_Comm_get_attr` on a merged communicator: the joined world
//! (`ISTHMUS_WORLD`) answers `MPI_APPNUM`, `MPI_UNIVERSE_SIZE` and
//! `MPI_TAG_UB` for the whole world (`crate::world_attrs`); every other
//! attribute is the native handle's (attributes the program set, copied
//! by `MPI_Comm_dup` natively).

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::mpi_glue::MPI_Comm;
use crate::state::MergedComm;

/// `MPI_Comm_get_attr` on a merged communicator.
///
/// # Safety
/// As `MPI_Comm_get_attr`.
pub(crate) unsafe fn comm_get_attr(
    _mc: &MergedComm,
    comm: MPI_Comm,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    match crate::world_attrs::value(comm, keyval) {
        Some(v) if !attribute_val.is_null() && !flag.is_null() => {
            // SAFETY: the program's out-pointers, checked non-null; a
            // predefined attribute's value is a pointer to an int, here to
            // a static one.
            unsafe {
                *attribute_val.cast::<*const c_int>() = v;
                *flag = 1;
            }
            0
        }
        // SAFETY: the program's arguments, passed on.
        _ => unsafe { ffi::PMPI_Comm_get_attr(comm, keyval, attribute_val, flag) },
    }
}

//! `MPI_Start` and `MPI_Startall`, interposed: a persistent request of an
//! Isthmus communicator issues its stored call (`persist::table`); any
//! other (the MPI's own persistent requests, a merged communicator's sends
//! within the job among them) is the MPI's `PMPI_Start`. A `Startall`
//! starts its requests in the array's order, as MPI starts them.

use std::ffi::c_int;

use mpi::ffi;

use crate::mpi_glue::MPI_Request;
use crate::persist::table;

/// # Safety
/// As `MPI_Start`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Start(request: *mut MPI_Request) -> c_int {
    if !request.is_null() && table::any() {
        // SAFETY: non-null, the program's request.
        if let Some(rc) = table::start(unsafe { *request }) {
            return rc;
        }
    }
    // SAFETY: the program's argument, passed on.
    unsafe { ffi::PMPI_Start(request) }
}

/// # Safety
/// As `MPI_Startall`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(count: c_int, requests: *mut MPI_Request) -> c_int {
    if !table::any() || requests.is_null() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Startall(count, requests) };
    }
    let n = usize::try_from(count).unwrap_or(0);
    let mut first = 0;
    for i in 0..n {
        // SAFETY: the program passes `count` requests.
        let r = unsafe { requests.add(i) };
        // SAFETY: as above.
        let rc = unsafe { MPI_Start(r) };
        if first == 0 {
            first = rc;
        }
    }
    first
}

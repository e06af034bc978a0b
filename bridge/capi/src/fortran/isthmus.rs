//! Isthmus's own calls for Fortran: `isthmus_register(group, comm, handle,
//! ierror)`, `isthmus_leave(handle, ierror)`, `isthmus_intercomm_create(
//! handle, remote_group, intercomm, ierror)` and
//! `isthmus_intercomm_create_timeout(handle, remote_group, seconds,
//! intercomm, ierror)`, with gfortran's linkage: lower case, a trailing
//! underscore, every argument by reference and the length of each
//! `character` argument appended as a `size_t`. Handles are Fortran
//! integers (converted with `MPI_Comm_f2c/c2f`); strings lose their
//! trailing blanks. `use mpi_f08` code gets the same calls with
//! `type(MPI_Comm)` from the module in `fortran/isthmus_f08.f90`, which
//! calls these.

use std::ffi::{c_char, c_int, CString};

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::convert::{comm_c2f, comm_f2c, get, put, Fint};
use crate::api;
use crate::errors;
use crate::mpi_glue::comm_null;

/// A Fortran `character` argument as a C string: trailing blanks trimmed.
///
/// # Safety
/// `s` is null or points to `len` bytes.
unsafe fn fortran_string(s: *const c_char, len: usize, what: &str) -> Result<CString, BridgeError> {
    if s.is_null() {
        return Err(BridgeError::InvalidArgument(format!("{what} is missing")));
    }
    // SAFETY: the caller's contract (gfortran passes the length).
    let bytes = unsafe { std::slice::from_raw_parts(s.cast::<u8>(), len) };
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    let trimmed = bytes.get(..end).unwrap_or_default();
    if trimmed.is_empty() {
        return Err(BridgeError::InvalidArgument(format!("{what} is blank")));
    }
    if std::str::from_utf8(trimmed).is_err() {
        return Err(BridgeError::InvalidArgument(format!("{what} is not UTF-8")));
    }
    CString::new(trimmed)
        .map_err(|_| BridgeError::InvalidArgument(format!("{what} contains a NUL character")))
}

/// `isthmus_register(group, comm, handle, ierror)`.
///
/// # Safety
/// gfortran's calling convention: references, then `group`'s length.
#[no_mangle]
pub unsafe extern "C" fn isthmus_register_(
    group: *const c_char,
    comm: *const Fint,
    handle: *mut Fint,
    ierror: *mut Fint,
    group_len: usize,
) {
    // SAFETY: a Fortran argument, passed by reference.
    let c = unsafe { comm_f2c(int!(comm)) };
    // SAFETY: gfortran passes the string and its length.
    let rc = match unsafe { fortran_string(group, group_len, "group name") } {
        Err(e) => errors::fail(c, "isthmus_register", &e),
        Ok(g) => {
            let mut h: c_int = -1;
            // SAFETY: a C string, a converted handle, our out-integer.
            let rc = unsafe { api::Isthmus_Register(g.as_ptr(), c, &mut h) };
            if rc == 0 {
                // SAFETY: the program's integer.
                unsafe { put(handle, h) };
            }
            rc
        }
    };
    // SAFETY: the program's integer.
    unsafe { put(ierror, rc) };
}

/// `isthmus_leave(handle, ierror)`.
///
/// # Safety
/// gfortran's calling convention: references.
#[no_mangle]
pub unsafe extern "C" fn isthmus_leave_(handle: *const Fint, ierror: *mut Fint) {
    // SAFETY: no pointers.
    let rc = unsafe { api::Isthmus_Leave(int!(handle)) };
    // SAFETY: the program's integer.
    unsafe { put(ierror, rc) };
}

/// Shared by both forms of `isthmus_intercomm_create`.
///
/// # Safety
/// `remote` points to `remote_len` bytes; `intercomm` to an integer.
unsafe fn intercomm_create(
    handle: *const Fint,
    remote: *const c_char,
    remote_len: usize,
    seconds: Option<f64>,
    intercomm: *mut Fint,
) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let h = unsafe { int!(handle) };
    // SAFETY: gfortran passes the string and its length.
    let name = match unsafe { fortran_string(remote, remote_len, "remote group name") } {
        Ok(n) => n,
        Err(e) => {
            // Raised where the C call raises it: the registered
            // communicator, or MPI_COMM_WORLD for an unknown handle.
            let comm = crate::state::handle(h).map(|r| r.base);
            // SAFETY: reading rsmpi's exported constant.
            let comm = comm.unwrap_or(unsafe { ffi::RSMPI_COMM_WORLD });
            return errors::fail(comm, "isthmus_intercomm_create", &e);
        }
    };
    let mut c = comm_null();
    let rc = match seconds {
        // SAFETY: a C string, our out-handle.
        None => unsafe { api::Isthmus_Intercomm_create(h, name.as_ptr(), &mut c) },
        // SAFETY: as above.
        Some(s) => unsafe { api::Isthmus_Intercomm_create_timeout(h, name.as_ptr(), s, &mut c) },
    };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(intercomm, comm_c2f(c)) };
    }
    rc
}

/// `isthmus_intercomm_create(handle, remote_group, intercomm, ierror)`.
///
/// # Safety
/// gfortran's calling convention: references, then `remote_group`'s length.
#[no_mangle]
pub unsafe extern "C" fn isthmus_intercomm_create_(
    handle: *const Fint,
    remote_group: *const c_char,
    intercomm: *mut Fint,
    ierror: *mut Fint,
    remote_group_len: usize,
) {
    // SAFETY: forwarded.
    let rc = unsafe { intercomm_create(handle, remote_group, remote_group_len, None, intercomm) };
    // SAFETY: the program's integer.
    unsafe { put(ierror, rc) };
}

/// `isthmus_intercomm_create_timeout(handle, remote_group, seconds,
/// intercomm, ierror)`; `seconds` is `double precision`.
///
/// # Safety
/// gfortran's calling convention: references, then `remote_group`'s length.
#[no_mangle]
pub unsafe extern "C" fn isthmus_intercomm_create_timeout_(
    handle: *const Fint,
    remote_group: *const c_char,
    seconds: *const f64,
    intercomm: *mut Fint,
    ierror: *mut Fint,
    remote_group_len: usize,
) {
    // SAFETY: a Fortran double precision argument (or null).
    let s = unsafe { seconds.as_ref().copied() }.unwrap_or(f64::NAN);
    // SAFETY: forwarded.
    let rc =
        unsafe { intercomm_create(handle, remote_group, remote_group_len, Some(s), intercomm) };
    // SAFETY: the program's integer.
    unsafe { put(ierror, rc) };
}

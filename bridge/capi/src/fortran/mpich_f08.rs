//! The Fortran bodies of MPICH's `use mpi_f08` entry points
//! (`mpi_wait_f08_`, …; shells generated from `mpi-functions.txt`).
//!
//! MPICH's `use mpi_f08` bindings (in libmpichfort) call `PMPI_Wait`,
//! `PMPI_Comm_test_inter`, … directly for the calls without a buffer (those
//! with one go through `MPI_Send`, … and are interposed in C). Their
//! statuses are C statuses (MPICH's `type(MPI_Status)` is `bind(C)` with
//! the C layout), a handle's `MPI_VAL` is the C handle, an absent `ierror`
//! is a null pointer. Under Open MPI the shells pass the call on to Open
//! MPI's own (which calls its `ompi_*_f`, interposed with `super::ompi`).

use std::ffi::c_int;
use std::sync::OnceLock;

use super::convert::*;
use crate::mpi_glue::{comm_null, status_ignore, statuses_ignore, MPI_Status};
use crate::{comms, merged, pt2pt, requests};

// The calls without a status whose Fortran arguments are integers in both
// bindings have one body, Open MPI's. (MPICH's `use mpi_f08` MPI_Finalize
// goes to the internal PMPIR_Finalize past the C one: interposed so that
// completed sends are delivered first.)
pub(super) use super::ompi::{barrier, cancel, comm_disconnect, comm_dup, comm_free, finalize};

/// Addresses of MPICH's `use mpi_f08` status sentinels.
struct F08Sentinels {
    status_ignore: usize,
    statuses_ignore: usize,
}

fn f08_sentinels() -> &'static F08Sentinels {
    static S: OnceLock<F08Sentinels> = OnceLock::new();
    S.get_or_init(|| F08Sentinels {
        status_ignore: symbol(c"MPIR_F08_MPI_STATUS_IGNORE_OBJ"),
        statuses_ignore: symbol(c"MPIR_F08_MPI_STATUSES_IGNORE_OBJ"),
    })
}

/// An f08 status argument as a C one.
fn f08_status(s: *mut MPI_Status) -> *mut MPI_Status {
    let ignore = f08_sentinels().status_ignore;
    if s.is_null() || (ignore != 0 && s as usize == ignore) {
        status_ignore()
    } else {
        s
    }
}

/// An f08 status array argument as a C one.
fn f08_statuses(s: *mut MPI_Status) -> *mut MPI_Status {
    let ignore = f08_sentinels().statuses_ignore;
    if s.is_null() || (ignore != 0 && s as usize == ignore) {
        statuses_ignore()
    } else {
        s
    }
}

/// `MPI_Wait` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn wait(request: *mut Fint, status: *mut MPI_Status) -> c_int {
    // SAFETY: Fortran passes the request by reference.
    let mut r = request_f2c(unsafe { int!(request) });
    // SAFETY: our request copy; the program's status (C layout) or ignore.
    let rc = unsafe { requests::MPI_Wait(&mut r, f08_status(status)) };
    // SAFETY: the program's request.
    unsafe { put(request, request_c2f(r)) };
    rc
}

/// `MPI_Test` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn test(request: *mut Fint, flag: *mut Fint, status: *mut MPI_Status) -> c_int {
    // SAFETY: Fortran passes the request by reference.
    let mut r = request_f2c(unsafe { int!(request) });
    let mut done: c_int = 0;
    // SAFETY: our request copy and flag; the program's status or ignore.
    let rc = unsafe { requests::MPI_Test(&mut r, &mut done, f08_status(status)) };
    // SAFETY: the program's request and LOGICAL.
    unsafe {
        put(request, request_c2f(r));
        put(flag, c_int::from(done != 0));
    }
    rc
}

/// `MPI_Waitall` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn waitall(
    count: *const Fint,
    requests: *mut Fint,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Waitall") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    // SAFETY: our requests; the program's statuses (C layout) or ignore.
    let rc =
        unsafe { requests::MPI_Waitall(c.len() as c_int, c.as_mut_ptr(), f08_statuses(statuses)) };
    // SAFETY: the program's array.
    unsafe { requests_c2f(&c, requests) };
    rc
}

/// `MPI_Testall` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn testall(
    count: *const Fint,
    requests: *mut Fint,
    flag: *mut Fint,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Testall") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut done: c_int = 0;
    // SAFETY: our requests and flag; the program's statuses or ignore.
    let rc = unsafe {
        requests::MPI_Testall(
            c.len() as c_int,
            c.as_mut_ptr(),
            &mut done,
            f08_statuses(statuses),
        )
    };
    // SAFETY: the program's array and LOGICAL.
    unsafe {
        requests_c2f(&c, requests);
        put(flag, c_int::from(done != 0));
    }
    rc
}

/// `MPI_Waitany` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn waitany(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Waitany") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut i: c_int = 0;
    // SAFETY: our requests and index; the program's status or ignore.
    let rc = unsafe {
        requests::MPI_Waitany(c.len() as c_int, c.as_mut_ptr(), &mut i, f08_status(status))
    };
    // SAFETY: the program's array and index.
    unsafe {
        requests_c2f(&c, requests);
        put(index, index_c2f(i));
    }
    rc
}

/// `MPI_Testany` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn testany(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    flag: *mut Fint,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Testany") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (mut i, mut done): (c_int, c_int) = (0, 0);
    // SAFETY: our requests, index and flag; the program's status or ignore.
    let rc = unsafe {
        requests::MPI_Testany(
            c.len() as c_int,
            c.as_mut_ptr(),
            &mut i,
            &mut done,
            f08_status(status),
        )
    };
    // SAFETY: the program's array, index and LOGICAL.
    unsafe {
        requests_c2f(&c, requests);
        put(index, index_c2f(i));
        put(flag, c_int::from(done != 0));
    }
    rc
}

/// `MPI_Waitsome`/`MPI_Testsome` for MPICH's f08 binding.
///
/// # Safety
/// As the Fortran call.
unsafe fn f08_some(
    f: SomeFn,
    call: &str,
    incount: *const Fint,
    requests: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: Fortran passes `incount` and an array of `incount` requests.
    let mut c = match unsafe { requests_f2c(int!(incount), requests, call) } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut out: c_int = 0;
    let mut idx = vec![0 as c_int; c.len()];
    // SAFETY: our arrays; the program's statuses (C layout) or ignore.
    let rc = unsafe {
        f(
            c.len() as c_int,
            c.as_mut_ptr(),
            &mut out,
            idx.as_mut_ptr(),
            f08_statuses(statuses),
        )
    };
    let k = usize::try_from(out).unwrap_or(0).min(idx.len());
    // SAFETY: the program's arrays: `incount` requests and indices.
    unsafe {
        requests_c2f(&c, requests);
        put(outcount, out);
        if !indices.is_null() {
            for (j, &i) in idx[..k].iter().enumerate() {
                *indices.add(j) = index_c2f(i);
            }
        }
    }
    rc
}

/// `MPI_Waitsome` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn waitsome(
    incount: *const Fint,
    requests: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the program's arguments.
    unsafe {
        f08_some(
            requests::MPI_Waitsome,
            "MPI_Waitsome",
            incount,
            requests,
            outcount,
            indices,
            statuses,
        )
    }
}

/// `MPI_Testsome` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn testsome(
    incount: *const Fint,
    requests: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the program's arguments.
    unsafe {
        f08_some(
            requests::MPI_Testsome,
            "MPI_Testsome",
            incount,
            requests,
            outcount,
            indices,
            statuses,
        )
    }
}

/// `MPI_Request_get_status` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn request_get_status(
    request: *const Fint,
    flag: *mut Fint,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: Fortran passes the request by reference.
    let r = request_f2c(unsafe { int!(request) });
    let mut done: c_int = 0;
    // SAFETY: a converted request, our flag, the program's status or ignore.
    let rc = unsafe { requests::MPI_Request_get_status(r, &mut done, f08_status(status)) };
    // SAFETY: the program's LOGICAL.
    unsafe { put(flag, c_int::from(done != 0)) };
    rc
}

/// `MPI_Request_free` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn request_free(request: *mut Fint) -> c_int {
    // SAFETY: Fortran passes the request by reference.
    let mut r = request_f2c(unsafe { int!(request) });
    // SAFETY: our request copy.
    let rc = unsafe { requests::MPI_Request_free(&mut r) };
    // SAFETY: the program's request.
    unsafe { put(request, request_c2f(r)) };
    rc
}

/// `MPI_Probe` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn probe(
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: Fortran passes the integers by reference; the status is the
    // program's (C layout) or ignore.
    unsafe {
        pt2pt::MPI_Probe(
            int!(source),
            int!(tag),
            comm_f2c(int!(comm)),
            f08_status(status),
        )
    }
}

/// `MPI_Iprobe` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn iprobe(
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    flag: *mut Fint,
    status: *mut MPI_Status,
) -> c_int {
    let mut found: c_int = 0;
    // SAFETY: as for mpi_probe_f08_, and our flag.
    let rc = unsafe {
        pt2pt::MPI_Iprobe(
            int!(source),
            int!(tag),
            comm_f2c(int!(comm)),
            &mut found,
            f08_status(status),
        )
    };
    // SAFETY: the program's LOGICAL.
    unsafe { put(flag, c_int::from(found != 0)) };
    rc
}

/// `MPI_Intercomm_merge` for MPICH's `use mpi_f08` (`high` a LOGICAL).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn intercomm_merge(
    intercomm: *const Fint,
    high: *const Fint,
    newintracomm: *mut Fint,
) -> c_int {
    let mut c = comm_null();
    // SAFETY: a converted handle, the LOGICAL as C's flag, our out-handle.
    let rc = unsafe {
        merged::MPI_Intercomm_merge(
            comm_f2c(int!(intercomm)),
            c_int::from(int!(high) != 0),
            &mut c,
        )
    };
    if rc == 0 {
        // SAFETY: the program's INTEGER handle.
        unsafe { put(newintracomm, comm_c2f(c)) };
    }
    rc
}

/// `MPI_Comm_rank` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_rank(comm: *const Fint, rank: *mut Fint) -> c_int {
    let mut s: c_int = 0;
    // SAFETY: Fortran passes the handle by reference; our out-integer.
    let rc = unsafe { comms::MPI_Comm_rank(comm_f2c(int!(comm)), &mut s) };
    // SAFETY: the program's integer.
    unsafe { put(rank, s) };
    rc
}

/// `MPI_Comm_size` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_size(comm: *const Fint, size: *mut Fint) -> c_int {
    let mut s: c_int = 0;
    // SAFETY: Fortran passes the handle by reference; our out-integer.
    let rc = unsafe { comms::MPI_Comm_size(comm_f2c(int!(comm)), &mut s) };
    // SAFETY: the program's integer.
    unsafe { put(size, s) };
    rc
}

/// `MPI_Comm_remote_size` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_remote_size(comm: *const Fint, size: *mut Fint) -> c_int {
    let mut s: c_int = 0;
    // SAFETY: Fortran passes the handle by reference; our out-integer.
    let rc = unsafe { comms::MPI_Comm_remote_size(comm_f2c(int!(comm)), &mut s) };
    // SAFETY: the program's integer.
    unsafe { put(size, s) };
    rc
}

/// `MPI_Comm_test_inter` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_test_inter(comm: *const Fint, flag: *mut Fint) -> c_int {
    let mut f: c_int = 0;
    // SAFETY: Fortran passes the handle by reference; our flag.
    let rc = unsafe { comms::MPI_Comm_test_inter(comm_f2c(int!(comm)), &mut f) };
    // SAFETY: the program's LOGICAL.
    unsafe { put(flag, c_int::from(f != 0)) };
    rc
}

/// `MPI_Comm_compare` for MPICH's `use mpi_f08`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_compare(
    comm1: *const Fint,
    comm2: *const Fint,
    result: *mut Fint,
) -> c_int {
    let mut r: c_int = 0;
    // SAFETY: Fortran passes the handles by reference; our out-integer.
    let rc =
        unsafe { comms::MPI_Comm_compare(comm_f2c(int!(comm1)), comm_f2c(int!(comm2)), &mut r) };
    // SAFETY: the program's integer.
    unsafe { put(result, r) };
    rc
}

//! Fortran: Isthmus's calls for `mpif.h`/`use mpi` code, and Open MPI's
//! Fortran point-to-point entry points interposed.
//!
//! **Isthmus's calls.** `isthmus_register(group, comm, handle, ierror)`,
//! `isthmus_leave(handle, ierror)`, `isthmus_intercomm_create(handle,
//! remote_group, intercomm, ierror)` and `isthmus_intercomm_create_timeout(
//! handle, remote_group, seconds, intercomm, ierror)`, with gfortran's
//! linkage: lower case, a trailing underscore, every argument by reference
//! and the length of each `character` argument appended as a `size_t`.
//! Handles are Fortran integers (converted with `MPI_Comm_f2c/c2f`);
//! strings lose their trailing blanks. `use mpi_f08` code gets the same
//! calls with `type(MPI_Comm)` from the module in `fortran/isthmus_f08.f90`,
//! which calls these.
//!
//! **Interposition.** Open MPI's Fortran bindings (`mpi_send_` in
//! `libmpi_mpifh`, which `mpif.h` and `use mpi` call, and `ompi_send_f`,
//! which the `use mpi_f08` bindings call) go to `PMPI_Send` directly, past
//! the C `MPI_Send` this library defines. So for Open MPI this module
//! defines both names of each point-to-point, wait/test and communicator
//! call the bridge carries: it converts the Fortran handles, statuses and
//! `MPI_BOTTOM` as Open MPI's own binding does and calls the C entry point
//! of this library, which goes over the bridge on an Isthmus
//! communicator and to `PMPI_*` on any other.
//!
//! MPICH's `mpif.h`/`use mpi` bindings call the C `MPI_*` functions, which
//! this library already interposes; its `mpi_send_` is left to do so: in
//! the MPICH build the `mpi_*_` names defined here pass the call on to the
//! next definition (`dlsym(RTLD_NEXT)`, MPICH's own). The implementation
//! is told apart at run time by Open MPI's `ompi_mpi_comm_world`.

#![deny(unsafe_op_in_unsafe_fn)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::ffi::{c_char, c_int, c_void, CString};
use std::mem::size_of;
use std::sync::OnceLock;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::api;
use crate::errors::{self, Class};
use crate::mpi_glue::{
    comm_null, status_ignore, statuses_ignore, MPI_Comm, MPI_Request, MPI_Status,
};
use crate::{comms, pt2pt, requests};

/// A Fortran `INTEGER` (MPI's `MPI_Fint`).
pub type Fint = c_int;

/// Integers in a Fortran status (`MPI_STATUS_SIZE`): Open MPI's Fortran
/// status is its C status seen as integers.
const STATUS_INTS: usize = size_of::<MPI_Status>() / size_of::<c_int>();

// ------------------------------------------------------------ conversions

fn comm_f2c(f: Fint) -> MPI_Comm {
    // SAFETY: MPI_Comm_f2c accepts any integer (an invalid one gives an
    // invalid handle, which the call it is passed to reports).
    unsafe { ffi::RSMPI_Comm_f2c(f) }
}

fn comm_c2f(c: MPI_Comm) -> Fint {
    // SAFETY: `c` is a handle MPI gave us (or MPI_COMM_NULL).
    unsafe { ffi::RSMPI_Comm_c2f(c) }
}

fn type_f2c(f: Fint) -> ffi::MPI_Datatype {
    // SAFETY: as for communicators.
    unsafe { ffi::RSMPI_Type_f2c(f) }
}

fn request_f2c(f: Fint) -> MPI_Request {
    // SAFETY: as for communicators.
    unsafe { ffi::RSMPI_Request_f2c(f) }
}

fn request_c2f(c: MPI_Request) -> Fint {
    // SAFETY: `c` is a request MPI gave us (or MPI_REQUEST_NULL).
    unsafe { ffi::RSMPI_Request_c2f(c) }
}

/// Reads a Fortran integer argument.
///
/// # Safety
/// `p` is null or points to an integer.
unsafe fn get(p: *const Fint) -> Option<Fint> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref().copied() }
}

/// Writes a Fortran integer out-argument (skipped when absent).
///
/// # Safety
/// `p` is null or points to a writable integer.
unsafe fn put(p: *mut Fint, v: Fint) {
    // SAFETY: the caller's contract.
    if let Some(r) = unsafe { p.as_mut() } {
        *r = v;
    }
}

/// The addresses of Open MPI's Fortran sentinels (`MPI_BOTTOM`,
/// `MPI_STATUS_IGNORE`, `MPI_STATUSES_IGNORE`: common blocks in
/// `libmpi`); null for MPICH.
struct Sentinels {
    bottom: usize,
    status_ignore: usize,
    statuses_ignore: usize,
}

fn symbol(name: &std::ffi::CStr) -> usize {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks
    // the name up.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

fn sentinels() -> &'static Sentinels {
    static S: OnceLock<Sentinels> = OnceLock::new();
    S.get_or_init(|| Sentinels {
        bottom: symbol(c"mpi_fortran_bottom_"),
        status_ignore: symbol(c"mpi_fortran_status_ignore_"),
        statuses_ignore: symbol(c"mpi_fortran_statuses_ignore_"),
    })
}

/// Is this process's MPI Open MPI? (Its C library defines
/// `ompi_mpi_comm_world`; MPICH's does not.)
fn open_mpi() -> bool {
    static F: OnceLock<bool> = OnceLock::new();
    *F.get_or_init(|| symbol(c"ompi_mpi_comm_world") != 0)
}

/// A Fortran buffer as C sees it: Fortran's `MPI_BOTTOM` is C's (0).
fn buffer(buf: *const c_void) -> *const c_void {
    let b = sentinels().bottom;
    if b != 0 && buf as usize == b {
        std::ptr::null()
    } else {
        buf
    }
}

/// Does the Fortran status argument want a status (is it neither absent
/// nor Fortran's `MPI_STATUS_IGNORE`)?
fn wants_status(status: *mut Fint) -> bool {
    let s = sentinels().status_ignore;
    !(status.is_null() || (s != 0 && status as usize == s))
}

fn wants_statuses(statuses: *mut Fint) -> bool {
    let s = sentinels().statuses_ignore;
    !(statuses.is_null() || (s != 0 && statuses as usize == s))
}

fn empty_status() -> MPI_Status {
    // SAFETY: MPI_Status is a C struct of integers, valid when all zero.
    unsafe { std::mem::zeroed() }
}

/// Copies a C status into a Fortran one.
///
/// # Safety
/// `f` points to `MPI_STATUS_SIZE` writable integers.
unsafe fn status_c2f(c: &MPI_Status, f: *mut Fint) {
    // SAFETY: `c` is a valid status, `f` the caller's.
    unsafe { ffi::PMPI_Status_c2f(c, f) };
}

/// Calls `f` with a C status standing for the Fortran `status` (or C's
/// `MPI_STATUS_IGNORE`), and copies it back if the call succeeded.
///
/// # Safety
/// `status` is Fortran's `MPI_STATUS_IGNORE`, null, or `MPI_STATUS_SIZE`
/// writable integers.
unsafe fn with_status(status: *mut Fint, f: impl FnOnce(*mut MPI_Status) -> c_int) -> c_int {
    if !wants_status(status) {
        return f(status_ignore());
    }
    let mut c = empty_status();
    let rc = f(&mut c);
    if rc == 0 {
        // SAFETY: the caller's contract.
        unsafe { status_c2f(&c, status) };
    }
    rc
}

// ------------------------------------------------------------ MPICH: pass on

/// The next definition of `name` after this library (MPICH's own Fortran
/// binding), looked up once.
fn next(cell: &OnceLock<usize>, name: &std::ffi::CStr) -> usize {
    *cell.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks
        // the name up.
        unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize }
    })
}

/// The error a Fortran call gets when MPICH's own binding is missing.
fn no_next(name: &str) -> c_int {
    errors::code(
        Class::Other,
        &format!(
            "{name}: the MPI library's own Fortran binding was not found (is libmpichfort loaded?)"
        ),
    )
}

/// Defines a Fortran entry point: as Open MPI's `ompi_*_f` (what most of
/// `use mpi_f08` calls) with `$body`, and as gfortran's `mpi_*_` (what
/// `mpif.h` and `use mpi` call) and any aliases (`pmpi_*_`, which Open
/// MPI's `use mpi_f08` calls for the functions with a `LOGICAL` argument),
/// which run the same body under Open MPI and pass the call on to MPICH's
/// own binding under MPICH. The last argument is `ierror`.
macro_rules! fortran {
    ($mpi:ident $(| $alias:ident)*, $ompi:ident, $params:tt, $ierr:ident, $body:block) => {
        ompi_entry!($ompi, $params, $ierr, $body);
        gfortran_name!($mpi, $ompi, $params, $ierr);
        $(gfortran_name!($alias, $ompi, $params, $ierr);)*
    };
}

/// Open MPI's `ompi_*_f` name of a Fortran MPI call (see `fortran!`).
macro_rules! ompi_entry {
    ($ompi:ident, ($($a:ident : $t:ty),*), $ierr:ident, $body:block) => {
        /// Open MPI's Fortran binding, interposed (see the module).
        ///
        /// # Safety
        /// As the Fortran MPI call: every argument a valid reference.
        #[no_mangle]
        pub unsafe extern "C" fn $ompi($($a: $t,)* $ierr: *mut Fint) {
            // A closure, so that the body may return its code early.
            #[allow(clippy::redundant_closure_call)]
            let rc: c_int = (move || -> c_int { $body })();
            // SAFETY: `ierror` is the program's (or null).
            unsafe { put($ierr, rc) };
        }
    };
}

/// One gfortran name of a Fortran MPI call (see `fortran!`).
macro_rules! gfortran_name {
    ($name:ident, $ompi:ident, ($($a:ident : $t:ty),*), $ierr:ident) => {
        /// gfortran's name of the Fortran MPI call (see the module).
        ///
        /// # Safety
        /// As the Fortran MPI call: every argument a valid reference.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t,)* $ierr: *mut Fint) {
            if open_mpi() {
                // SAFETY: the same arguments, same contract.
                return unsafe { $ompi($($a,)* $ierr) };
            }
            static NEXT: OnceLock<usize> = OnceLock::new();
            let name = concat!(stringify!($name), "\0");
            let Ok(cname) = std::ffi::CStr::from_bytes_with_nul(name.as_bytes()) else {
                return;
            };
            match next(&NEXT, cname) {
                0 => {
                    // SAFETY: as above.
                    unsafe { put($ierr, no_next(stringify!($name))) }
                }
                p => {
                    // SAFETY: `p` is the address of the MPI library's own
                    // definition of this very Fortran function, so it has
                    // this signature.
                    let f: unsafe extern "C" fn($($t,)* *mut Fint) = unsafe { std::mem::transmute(p) };
                    // SAFETY: the program's arguments, passed on.
                    unsafe { f($($a,)* $ierr) }
                }
            }
        }
    };
}

/// Reads an integer argument; used inside `unsafe` blocks whose SAFETY
/// note covers it (Fortran passes every argument by reference).
macro_rules! int {
    ($p:expr) => {
        get($p).unwrap_or(0)
    };
}

// ------------------------------------------------------------ sends

macro_rules! blocking_send {
    ($mpi:ident, $ompi:ident, $c:path) => {
        fortran!($mpi, $ompi,
            (buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
             tag: *const Fint, comm: *const Fint), ierror, {
            // SAFETY: the program's buffer, converted handles.
            unsafe {
                $c(buffer(buf), int!(count), type_f2c(int!(datatype)), int!(dest), int!(tag),
                   comm_f2c(int!(comm)))
            }
        });
    };
}

blocking_send!(mpi_send_, ompi_send_f, pt2pt::MPI_Send);
blocking_send!(mpi_ssend_, ompi_ssend_f, pt2pt::MPI_Ssend);
blocking_send!(mpi_rsend_, ompi_rsend_f, pt2pt::MPI_Rsend);
blocking_send!(mpi_bsend_, ompi_bsend_f, pt2pt::MPI_Bsend);

macro_rules! nonblocking_send {
    ($mpi:ident, $ompi:ident, $c:path) => {
        fortran!($mpi, $ompi,
            (buf: *const c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
             tag: *const Fint, comm: *const Fint, request: *mut Fint), ierror, {
            let mut r = crate::mpi_glue::request_null();
            // SAFETY: the program's buffer, converted handles, our request.
            let rc = unsafe {
                $c(buffer(buf), int!(count), type_f2c(int!(datatype)), int!(dest), int!(tag),
                   comm_f2c(int!(comm)), &mut r)
            };
            if rc == 0 {
                // SAFETY: the program's request argument.
                unsafe { put(request, request_c2f(r)) };
            }
            rc
        });
    };
}

nonblocking_send!(mpi_isend_, ompi_isend_f, pt2pt::MPI_Isend);
nonblocking_send!(mpi_issend_, ompi_issend_f, pt2pt::MPI_Issend);
nonblocking_send!(mpi_irsend_, ompi_irsend_f, pt2pt::MPI_Irsend);
nonblocking_send!(mpi_ibsend_, ompi_ibsend_f, pt2pt::MPI_Ibsend);

// ------------------------------------------------------------ receives, probes

fortran!(mpi_recv_, ompi_recv_f,
    (buf: *mut c_void, count: *const Fint, datatype: *const Fint, source: *const Fint,
     tag: *const Fint, comm: *const Fint, status: *mut Fint), ierror, {
    // SAFETY: the program's status argument.
    unsafe {
        with_status(status, |st| {
            // SAFETY: the program's buffer, converted handles.
            pt2pt::MPI_Recv(buffer(buf) as *mut c_void, int!(count), type_f2c(int!(datatype)),
                int!(source), int!(tag), comm_f2c(int!(comm)), st)
        })
    }
});

fortran!(mpi_irecv_, ompi_irecv_f,
    (buf: *mut c_void, count: *const Fint, datatype: *const Fint, source: *const Fint,
     tag: *const Fint, comm: *const Fint, request: *mut Fint), ierror, {
    let mut r = crate::mpi_glue::request_null();
    // SAFETY: the program's buffer, converted handles, our request.
    let rc = unsafe {
        pt2pt::MPI_Irecv(buffer(buf) as *mut c_void, int!(count), type_f2c(int!(datatype)),
            int!(source), int!(tag), comm_f2c(int!(comm)), &mut r)
    };
    if rc == 0 {
        // SAFETY: the program's request argument.
        unsafe { put(request, request_c2f(r)) };
    }
    rc
});

fortran!(mpi_sendrecv_, ompi_sendrecv_f,
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint, dest: *const Fint,
     sendtag: *const Fint, recvbuf: *mut c_void, recvcount: *const Fint,
     recvtype: *const Fint, source: *const Fint, recvtag: *const Fint, comm: *const Fint,
     status: *mut Fint), ierror, {
    // SAFETY: the program's status argument.
    unsafe {
        with_status(status, |st| {
            // SAFETY: the program's buffers, converted handles.
            pt2pt::MPI_Sendrecv(buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
                int!(dest), int!(sendtag), buffer(recvbuf) as *mut c_void, int!(recvcount),
                type_f2c(int!(recvtype)), int!(source), int!(recvtag), comm_f2c(int!(comm)), st)
        })
    }
});

fortran!(mpi_sendrecv_replace_, ompi_sendrecv_replace_f,
    (buf: *mut c_void, count: *const Fint, datatype: *const Fint, dest: *const Fint,
     sendtag: *const Fint, source: *const Fint, recvtag: *const Fint, comm: *const Fint,
     status: *mut Fint), ierror, {
    // SAFETY: the program's status argument.
    unsafe {
        with_status(status, |st| {
            // SAFETY: the program's buffer, converted handles.
            pt2pt::MPI_Sendrecv_replace(buffer(buf) as *mut c_void, int!(count),
                type_f2c(int!(datatype)), int!(dest), int!(sendtag), int!(source), int!(recvtag),
                comm_f2c(int!(comm)), st)
        })
    }
});

fortran!(mpi_probe_, ompi_probe_f,
    (source: *const Fint, tag: *const Fint, comm: *const Fint, status: *mut Fint), ierror, {
    // SAFETY: the program's status argument.
    unsafe {
        with_status(status, |st| {
            // SAFETY: converted handles.
            pt2pt::MPI_Probe(int!(source), int!(tag), comm_f2c(int!(comm)), st)
        })
    }
});

fortran!(mpi_iprobe_ | pmpi_iprobe_, ompi_iprobe_f,
    (source: *const Fint, tag: *const Fint, comm: *const Fint, flag: *mut Fint,
     status: *mut Fint), ierror, {
    let mut found: c_int = 0;
    // SAFETY: the program's status argument.
    let rc = unsafe {
        with_status(status, |st| {
            // SAFETY: converted handles, our flag.
            pt2pt::MPI_Iprobe(int!(source), int!(tag), comm_f2c(int!(comm)), &mut found, st)
        })
    };
    // SAFETY: the program's LOGICAL (gfortran's .true. is 1).
    unsafe { put(flag, c_int::from(found != 0)) };
    rc
});

// ------------------------------------------------------------ wait, test

fortran!(mpi_wait_, ompi_wait_f, (request: *mut Fint, status: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    // SAFETY: the program's status argument.
    let rc = unsafe {
        with_status(status, |st| {
            // SAFETY: our request copy, a C status.
            requests::MPI_Wait(&mut r, st)
        })
    };
    if rc == 0 {
        // SAFETY: the program's request.
        unsafe { put(request, request_c2f(r)) };
    }
    rc
});

fortran!(mpi_test_ | pmpi_test_, ompi_test_f,
    (request: *mut Fint, flag: *mut Fint, status: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    let mut done: c_int = 0;
    let rc = if wants_status(status) {
        let mut c = empty_status();
        // SAFETY: our request copy, flag and status.
        let rc = unsafe { requests::MPI_Test(&mut r, &mut done, &mut c) };
        if rc == 0 && done != 0 {
            // SAFETY: the program's status.
            unsafe { status_c2f(&c, status) };
        }
        rc
    } else {
        // SAFETY: our request copy and flag.
        unsafe { requests::MPI_Test(&mut r, &mut done, status_ignore()) }
    };
    if rc == 0 {
        // SAFETY: the program's request and LOGICAL.
        unsafe {
            put(request, request_c2f(r));
            put(flag, c_int::from(done != 0));
        }
    }
    rc
});

/// A Fortran request array as C requests; a negative count is raised on
/// `MPI_COMM_WORLD` (the call has no communicator).
///
/// # Safety
/// `requests` points to `count` integers.
unsafe fn requests_f2c(
    count: Fint,
    requests: *const Fint,
    call: &str,
) -> Result<Vec<MPI_Request>, c_int> {
    let Ok(n) = usize::try_from(count) else {
        let code = errors::code(
            Class::InvalidArgument,
            &format!("{call}: count {count} is negative"),
        );
        // SAFETY: reading rsmpi's exported constant.
        return Err(errors::raise(unsafe { ffi::RSMPI_COMM_WORLD }, code));
    };
    if n == 0 || requests.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: the caller's contract.
    let f = unsafe { std::slice::from_raw_parts(requests, n) };
    Ok(f.iter().map(|&r| request_f2c(r)).collect())
}

/// Writes C requests back to the Fortran array.
///
/// # Safety
/// `requests` points to `c.len()` writable integers.
unsafe fn requests_c2f(c: &[MPI_Request], requests: *mut Fint) {
    if c.is_empty() || requests.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    let f = unsafe { std::slice::from_raw_parts_mut(requests, c.len()) };
    for (f, &c) in f.iter_mut().zip(c) {
        *f = request_c2f(c);
    }
}

/// Copies the first `n` C statuses into the Fortran status array.
///
/// # Safety
/// `statuses` holds `n` Fortran statuses.
unsafe fn statuses_c2f(c: &[MPI_Status], statuses: *mut Fint) {
    for (i, s) in c.iter().enumerate() {
        // SAFETY: the caller's contract: status i is in the array.
        unsafe { status_c2f(s, statuses.add(i * STATUS_INTS)) };
    }
}

/// The array calls' result codes that come with statuses worth copying:
/// success, and `MPI_ERR_IN_STATUS` (whose statuses carry the errors).
fn statuses_valid(rc: c_int) -> bool {
    rc == 0 || rc == ffi::MPI_ERR_IN_STATUS as c_int
}

fortran!(mpi_waitall_, ompi_waitall_f,
    (count: *const Fint, requests: *mut Fint, statuses: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let n = unsafe { int!(count) };
    // SAFETY: the program's array of `count` requests.
    let mut c = match unsafe { requests_f2c(n, requests, "MPI_Waitall") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let rc = if wants_statuses(statuses) {
        let mut st = vec![empty_status(); c.len()];
        // SAFETY: our arrays of `c.len()` requests and statuses.
        let rc = unsafe { requests::MPI_Waitall(c.len() as c_int, c.as_mut_ptr(), st.as_mut_ptr()) };
        if statuses_valid(rc) {
            // SAFETY: the program's array of `count` statuses.
            unsafe { statuses_c2f(&st, statuses) };
        }
        rc
    } else {
        // SAFETY: our array of requests.
        unsafe { requests::MPI_Waitall(c.len() as c_int, c.as_mut_ptr(), statuses_ignore()) }
    };
    if statuses_valid(rc) {
        // SAFETY: the program's array.
        unsafe { requests_c2f(&c, requests) };
    }
    rc
});

fortran!(mpi_testall_ | pmpi_testall_, ompi_testall_f,
    (count: *const Fint, requests: *mut Fint, flag: *mut Fint, statuses: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let n = unsafe { int!(count) };
    // SAFETY: the program's array of `count` requests.
    let mut c = match unsafe { requests_f2c(n, requests, "MPI_Testall") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut done: c_int = 0;
    let rc = if wants_statuses(statuses) {
        let mut st = vec![empty_status(); c.len()];
        // SAFETY: our arrays.
        let rc = unsafe {
            requests::MPI_Testall(c.len() as c_int, c.as_mut_ptr(), &mut done, st.as_mut_ptr())
        };
        if statuses_valid(rc) && done != 0 {
            // SAFETY: the program's array of `count` statuses.
            unsafe { statuses_c2f(&st, statuses) };
        }
        rc
    } else {
        // SAFETY: our arrays.
        unsafe { requests::MPI_Testall(c.len() as c_int, c.as_mut_ptr(), &mut done, statuses_ignore()) }
    };
    if statuses_valid(rc) {
        // SAFETY: the program's array and LOGICAL.
        unsafe {
            requests_c2f(&c, requests);
            put(flag, c_int::from(done != 0));
        }
    }
    rc
});

/// A C index (0-based or `MPI_UNDEFINED`) as Fortran's (1-based).
fn index_c2f(i: c_int) -> Fint {
    if i == ffi::MPI_UNDEFINED as c_int || i < 0 {
        i
    } else {
        i + 1
    }
}

fortran!(mpi_waitany_, ompi_waitany_f,
    (count: *const Fint, requests: *mut Fint, index: *mut Fint, status: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let n = unsafe { int!(count) };
    // SAFETY: the program's array of `count` requests.
    let mut c = match unsafe { requests_f2c(n, requests, "MPI_Waitany") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut i: c_int = 0;
    // SAFETY: the program's status argument.
    let rc = unsafe {
        with_status(status, |st| {
            // SAFETY: our arrays.
            requests::MPI_Waitany(c.len() as c_int, c.as_mut_ptr(), &mut i, st)
        })
    };
    if rc == 0 {
        // SAFETY: the program's array and index.
        unsafe {
            requests_c2f(&c, requests);
            put(index, index_c2f(i));
        }
    }
    rc
});

fortran!(mpi_testany_ | pmpi_testany_, ompi_testany_f,
    (count: *const Fint, requests: *mut Fint, index: *mut Fint, flag: *mut Fint,
     status: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let n = unsafe { int!(count) };
    // SAFETY: the program's array of `count` requests.
    let mut c = match unsafe { requests_f2c(n, requests, "MPI_Testany") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (mut i, mut done): (c_int, c_int) = (0, 0);
    // SAFETY: the program's status argument.
    let rc = unsafe {
        with_status(status, |st| {
            // SAFETY: our arrays.
            requests::MPI_Testany(c.len() as c_int, c.as_mut_ptr(), &mut i, &mut done, st)
        })
    };
    if rc == 0 {
        // SAFETY: the program's array, index and LOGICAL.
        unsafe {
            requests_c2f(&c, requests);
            put(index, index_c2f(i));
            put(flag, c_int::from(done != 0));
        }
    }
    rc
});

type SomeFn =
    unsafe extern "C" fn(c_int, *mut MPI_Request, *mut c_int, *mut c_int, *mut MPI_Status) -> c_int;

/// `MPI_Waitsome`/`MPI_Testsome` for Fortran.
///
/// # Safety
/// As the Fortran call.
unsafe fn some(
    f: SomeFn,
    call: &str,
    incount: *const Fint,
    requests: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut Fint,
) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let n = unsafe { int!(incount) };
    // SAFETY: the program's array of `incount` requests.
    let mut c = match unsafe { requests_f2c(n, requests, call) } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut out: c_int = 0;
    let mut idx = vec![0 as c_int; c.len()];
    let want = wants_statuses(statuses);
    let mut st = vec![empty_status(); if want { c.len() } else { 0 }];
    let stp = if want {
        st.as_mut_ptr()
    } else {
        statuses_ignore()
    };
    // SAFETY: our arrays of `c.len()` requests, indices and statuses.
    let rc = unsafe {
        f(
            c.len() as c_int,
            c.as_mut_ptr(),
            &mut out,
            idx.as_mut_ptr(),
            stp,
        )
    };
    if statuses_valid(rc) {
        let k = usize::try_from(out).unwrap_or(0).min(idx.len());
        // SAFETY: the program's arrays: `incount` requests, indices and
        // statuses (`outcount` of them written).
        unsafe {
            requests_c2f(&c, requests);
            put(outcount, out);
            if !indices.is_null() {
                for (j, &i) in idx[..k].iter().enumerate() {
                    *indices.add(j) = index_c2f(i);
                }
            }
            if want {
                statuses_c2f(&st[..k], statuses);
            }
        }
    }
    rc
}

fortran!(mpi_waitsome_, ompi_waitsome_f,
    (incount: *const Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
     statuses: *mut Fint), ierror, {
    // SAFETY: the program's arguments.
    unsafe { some(requests::MPI_Waitsome, "MPI_Waitsome", incount, requests, outcount, indices, statuses) }
});

fortran!(mpi_testsome_ | pmpi_testsome_, ompi_testsome_f,
    (incount: *const Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
     statuses: *mut Fint), ierror, {
    // SAFETY: the program's arguments.
    unsafe { some(requests::MPI_Testsome, "MPI_Testsome", incount, requests, outcount, indices, statuses) }
});

fortran!(mpi_request_get_status_ | pmpi_request_get_status_, ompi_request_get_status_f,
    (request: *const Fint, flag: *mut Fint, status: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let r = unsafe { request_f2c(int!(request)) };
    let mut done: c_int = 0;
    let mut c = empty_status();
    // SAFETY: a converted request, our flag and status.
    let rc = unsafe { requests::MPI_Request_get_status(r, &mut done, &mut c) };
    if rc == 0 {
        // SAFETY: the program's LOGICAL and status.
        unsafe {
            put(flag, c_int::from(done != 0));
            if done != 0 && wants_status(status) {
                status_c2f(&c, status);
            }
        }
    }
    rc
});

fortran!(mpi_request_free_, ompi_request_free_f, (request: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    // SAFETY: our request copy.
    let rc = unsafe { requests::MPI_Request_free(&mut r) };
    if rc == 0 {
        // SAFETY: the program's request.
        unsafe { put(request, request_c2f(r)) };
    }
    rc
});

fortran!(mpi_cancel_, ompi_cancel_f, (request: *const Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    // SAFETY: our request copy.
    unsafe { requests::MPI_Cancel(&mut r) }
});

// ------------------------------------------------------------ communicators

fortran!(mpi_comm_remote_size_, ompi_comm_remote_size_f,
    (comm: *const Fint, size: *mut Fint), ierror, {
    let mut s: c_int = 0;
    // SAFETY: a converted handle, our out-integer.
    let rc = unsafe { comms::MPI_Comm_remote_size(comm_f2c(int!(comm)), &mut s) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(size, s) };
    }
    rc
});

fortran!(mpi_comm_test_inter_ | pmpi_comm_test_inter_, ompi_comm_test_inter_f,
    (comm: *const Fint, flag: *mut Fint), ierror, {
    let mut f: c_int = 0;
    // SAFETY: a converted handle, our flag.
    let rc = unsafe { comms::MPI_Comm_test_inter(comm_f2c(int!(comm)), &mut f) };
    if rc == 0 {
        // SAFETY: the program's LOGICAL.
        unsafe { put(flag, c_int::from(f != 0)) };
    }
    rc
});

fortran!(mpi_comm_compare_, ompi_comm_compare_f,
    (comm1: *const Fint, comm2: *const Fint, result: *mut Fint), ierror, {
    let mut r: c_int = 0;
    // SAFETY: converted handles, our out-integer.
    let rc = unsafe { comms::MPI_Comm_compare(comm_f2c(int!(comm1)), comm_f2c(int!(comm2)), &mut r) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(result, r) };
    }
    rc
});

fortran!(mpi_comm_dup_, ompi_comm_dup_f, (comm: *const Fint, newcomm: *mut Fint), ierror, {
    let mut c = comm_null();
    // SAFETY: a converted handle, our out-handle.
    let rc = unsafe { comms::MPI_Comm_dup(comm_f2c(int!(comm)), &mut c) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(newcomm, comm_c2f(c)) };
    }
    rc
});

fortran!(mpi_comm_free_, ompi_comm_free_f, (comm: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let mut c = unsafe { comm_f2c(int!(comm)) };
    // SAFETY: our handle copy.
    let rc = unsafe { comms::MPI_Comm_free(&mut c) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(comm, comm_c2f(c)) };
    }
    rc
});

// Open MPI's Fortran `MPI_Finalize` goes to `PMPI_Finalize` directly:
// without this, a Fortran program's completed sends would not be
// delivered before it finalizes (see `finalize`).
fortran!(mpi_finalize_, ompi_finalize_f, (), ierror, {
    // SAFETY: the program's call, passed on to this library's own.
    unsafe { crate::finalize::MPI_Finalize() }
});

fortran!(mpi_comm_disconnect_, ompi_comm_disconnect_f, (comm: *mut Fint), ierror, {
    // SAFETY: a Fortran argument, passed by reference.
    let mut c = unsafe { comm_f2c(int!(comm)) };
    // SAFETY: our handle copy.
    let rc = unsafe { comms::MPI_Comm_disconnect(&mut c) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(comm, comm_c2f(c)) };
    }
    rc
});

// ------------------------------------------------------------ Isthmus's calls

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
    let trimmed = &bytes[..end];
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

// ------------------------------------------------------------ MPICH's use mpi_f08

// MPICH's `use mpi_f08` bindings (`mpi_wait_f08_`, … in libmpichfort) call
// `PMPI_Wait`, `PMPI_Comm_test_inter`, … directly for the calls without a
// buffer (those with one go through `MPI_Send`, … and are interposed in C).
// So in the MPICH build these are defined here; their statuses are C
// statuses (MPICH's `type(MPI_Status)` is `bind(C)` with the C layout), a
// handle's `MPI_VAL` is the C handle, an absent `ierror` is a null pointer.
// Open MPI's `mpi_*_f08_` are passed on to Open MPI's own (which call the
// `ompi_*_f` above).

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

/// Defines MPICH's `use mpi_f08` entry point `$name` with `$body` (see
/// above); under Open MPI it passes the call on to Open MPI's own.
macro_rules! mpich_f08 {
    ($name:ident, ($($a:ident : $t:ty),*), $ierr:ident, $body:block) => {
        /// MPICH's `use mpi_f08` binding, interposed (see above).
        ///
        /// # Safety
        /// As the Fortran MPI call: every argument a valid reference,
        /// `ierror` a reference or null (absent).
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t,)* $ierr: *mut Fint) {
            if !open_mpi() {
                // A closure, so that the body may return its code early.
                #[allow(clippy::redundant_closure_call)]
                let rc: c_int = (move || -> c_int { $body })();
                // SAFETY: `ierror` is the program's, or null when absent.
                unsafe { put($ierr, rc) };
                return;
            }
            static NEXT: OnceLock<usize> = OnceLock::new();
            let name = concat!(stringify!($name), "\0");
            let Ok(cname) = std::ffi::CStr::from_bytes_with_nul(name.as_bytes()) else {
                return;
            };
            match next(&NEXT, cname) {
                0 => {
                    // SAFETY: as above.
                    unsafe { put($ierr, no_next(stringify!($name))) }
                }
                p => {
                    // SAFETY: `p` is the address of the MPI library's own
                    // definition of this very function, so it has this
                    // signature.
                    let f: unsafe extern "C" fn($($t,)* *mut Fint) = unsafe { std::mem::transmute(p) };
                    // SAFETY: the program's arguments, passed on.
                    unsafe { f($($a,)* $ierr) }
                }
            }
        }
    };
}

mpich_f08!(mpi_wait_f08_, (request: *mut Fint, status: *mut MPI_Status), ierror, {
    // SAFETY: Fortran passes the request by reference.
    let mut r = request_f2c(unsafe { int!(request) });
    // SAFETY: our request copy; the program's status (C layout) or ignore.
    let rc = unsafe { requests::MPI_Wait(&mut r, f08_status(status)) };
    // SAFETY: the program's request.
    unsafe { put(request, request_c2f(r)) };
    rc
});

mpich_f08!(mpi_test_f08_,
    (request: *mut Fint, flag: *mut Fint, status: *mut MPI_Status), ierror, {
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
});

mpich_f08!(mpi_waitall_f08_,
    (count: *const Fint, requests: *mut Fint, statuses: *mut MPI_Status), ierror, {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Waitall") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    // SAFETY: our requests; the program's statuses (C layout) or ignore.
    let rc = unsafe { requests::MPI_Waitall(c.len() as c_int, c.as_mut_ptr(), f08_statuses(statuses)) };
    // SAFETY: the program's array.
    unsafe { requests_c2f(&c, requests) };
    rc
});

mpich_f08!(mpi_testall_f08_,
    (count: *const Fint, requests: *mut Fint, flag: *mut Fint, statuses: *mut MPI_Status),
    ierror, {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Testall") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut done: c_int = 0;
    // SAFETY: our requests and flag; the program's statuses or ignore.
    let rc = unsafe {
        requests::MPI_Testall(c.len() as c_int, c.as_mut_ptr(), &mut done, f08_statuses(statuses))
    };
    // SAFETY: the program's array and LOGICAL.
    unsafe {
        requests_c2f(&c, requests);
        put(flag, c_int::from(done != 0));
    }
    rc
});

mpich_f08!(mpi_waitany_f08_,
    (count: *const Fint, requests: *mut Fint, index: *mut Fint, status: *mut MPI_Status),
    ierror, {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Waitany") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut i: c_int = 0;
    // SAFETY: our requests and index; the program's status or ignore.
    let rc = unsafe { requests::MPI_Waitany(c.len() as c_int, c.as_mut_ptr(), &mut i, f08_status(status)) };
    // SAFETY: the program's array and index.
    unsafe {
        requests_c2f(&c, requests);
        put(index, index_c2f(i));
    }
    rc
});

mpich_f08!(mpi_testany_f08_,
    (count: *const Fint, requests: *mut Fint, index: *mut Fint, flag: *mut Fint,
     status: *mut MPI_Status), ierror, {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Testany") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (mut i, mut done): (c_int, c_int) = (0, 0);
    // SAFETY: our requests, index and flag; the program's status or ignore.
    let rc = unsafe {
        requests::MPI_Testany(c.len() as c_int, c.as_mut_ptr(), &mut i, &mut done, f08_status(status))
    };
    // SAFETY: the program's array, index and LOGICAL.
    unsafe {
        requests_c2f(&c, requests);
        put(index, index_c2f(i));
        put(flag, c_int::from(done != 0));
    }
    rc
});

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

mpich_f08!(mpi_waitsome_f08_,
    (incount: *const Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
     statuses: *mut MPI_Status), ierror, {
    // SAFETY: the program's arguments.
    unsafe { f08_some(requests::MPI_Waitsome, "MPI_Waitsome", incount, requests, outcount, indices, statuses) }
});

mpich_f08!(mpi_testsome_f08_,
    (incount: *const Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
     statuses: *mut MPI_Status), ierror, {
    // SAFETY: the program's arguments.
    unsafe { f08_some(requests::MPI_Testsome, "MPI_Testsome", incount, requests, outcount, indices, statuses) }
});

mpich_f08!(mpi_request_get_status_f08_,
    (request: *const Fint, flag: *mut Fint, status: *mut MPI_Status), ierror, {
    // SAFETY: Fortran passes the request by reference.
    let r = request_f2c(unsafe { int!(request) });
    let mut done: c_int = 0;
    // SAFETY: a converted request, our flag, the program's status or ignore.
    let rc = unsafe { requests::MPI_Request_get_status(r, &mut done, f08_status(status)) };
    // SAFETY: the program's LOGICAL.
    unsafe { put(flag, c_int::from(done != 0)) };
    rc
});

mpich_f08!(mpi_request_free_f08_, (request: *mut Fint), ierror, {
    // SAFETY: Fortran passes the request by reference.
    let mut r = request_f2c(unsafe { int!(request) });
    // SAFETY: our request copy.
    let rc = unsafe { requests::MPI_Request_free(&mut r) };
    // SAFETY: the program's request.
    unsafe { put(request, request_c2f(r)) };
    rc
});

mpich_f08!(mpi_cancel_f08_, (request: *const Fint), ierror, {
    // SAFETY: Fortran passes the request by reference.
    let mut r = request_f2c(unsafe { int!(request) });
    // SAFETY: our request copy.
    unsafe { requests::MPI_Cancel(&mut r) }
});

mpich_f08!(mpi_probe_f08_,
    (source: *const Fint, tag: *const Fint, comm: *const Fint, status: *mut MPI_Status),
    ierror, {
    // SAFETY: Fortran passes the integers by reference; the status is the
    // program's (C layout) or ignore.
    unsafe { pt2pt::MPI_Probe(int!(source), int!(tag), comm_f2c(int!(comm)), f08_status(status)) }
});

mpich_f08!(mpi_iprobe_f08_,
    (source: *const Fint, tag: *const Fint, comm: *const Fint, flag: *mut Fint,
     status: *mut MPI_Status), ierror, {
    let mut found: c_int = 0;
    // SAFETY: as for mpi_probe_f08_, and our flag.
    let rc = unsafe {
        pt2pt::MPI_Iprobe(int!(source), int!(tag), comm_f2c(int!(comm)), &mut found, f08_status(status))
    };
    // SAFETY: the program's LOGICAL.
    unsafe { put(flag, c_int::from(found != 0)) };
    rc
});

mpich_f08!(mpi_comm_remote_size_f08_, (comm: *const Fint, size: *mut Fint), ierror, {
    let mut s: c_int = 0;
    // SAFETY: Fortran passes the handle by reference; our out-integer.
    let rc = unsafe { comms::MPI_Comm_remote_size(comm_f2c(int!(comm)), &mut s) };
    // SAFETY: the program's integer.
    unsafe { put(size, s) };
    rc
});

mpich_f08!(mpi_comm_test_inter_f08_, (comm: *const Fint, flag: *mut Fint), ierror, {
    let mut f: c_int = 0;
    // SAFETY: Fortran passes the handle by reference; our flag.
    let rc = unsafe { comms::MPI_Comm_test_inter(comm_f2c(int!(comm)), &mut f) };
    // SAFETY: the program's LOGICAL.
    unsafe { put(flag, c_int::from(f != 0)) };
    rc
});

mpich_f08!(mpi_comm_compare_f08_,
    (comm1: *const Fint, comm2: *const Fint, result: *mut Fint), ierror, {
    let mut r: c_int = 0;
    // SAFETY: Fortran passes the handles by reference; our out-integer.
    let rc = unsafe { comms::MPI_Comm_compare(comm_f2c(int!(comm1)), comm_f2c(int!(comm2)), &mut r) };
    // SAFETY: the program's integer.
    unsafe { put(result, r) };
    rc
});

mpich_f08!(mpi_comm_dup_f08_, (comm: *const Fint, newcomm: *mut Fint), ierror, {
    let mut c = comm_null();
    // SAFETY: Fortran passes the handle by reference; our out-handle.
    let rc = unsafe { comms::MPI_Comm_dup(comm_f2c(int!(comm)), &mut c) };
    if rc == 0 {
        // SAFETY: the program's handle.
        unsafe { put(newcomm, comm_c2f(c)) };
    }
    rc
});

mpich_f08!(mpi_comm_free_f08_, (comm: *mut Fint), ierror, {
    // SAFETY: Fortran passes the handle by reference.
    let mut c = comm_f2c(unsafe { int!(comm) });
    // SAFETY: our handle copy.
    let rc = unsafe { comms::MPI_Comm_free(&mut c) };
    if rc == 0 {
        // SAFETY: the program's handle.
        unsafe { put(comm, comm_c2f(c)) };
    }
    rc
});

// MPICH's `use mpi_f08` MPI_Finalize goes to the internal PMPIR_Finalize,
// past the C one: interposed so that completed sends are delivered first.
mpich_f08!(mpi_finalize_f08_, (), ierror, {
    // SAFETY: the program's call, passed on to this library's own.
    unsafe { crate::finalize::MPI_Finalize() }
});

mpich_f08!(mpi_comm_disconnect_f08_, (comm: *mut Fint), ierror, {
    // SAFETY: Fortran passes the handle by reference.
    let mut c = comm_f2c(unsafe { int!(comm) });
    // SAFETY: our handle copy.
    let rc = unsafe { comms::MPI_Comm_disconnect(&mut c) };
    if rc == 0 {
        // SAFETY: the program's handle.
        unsafe { put(comm, comm_c2f(c)) };
    }
    rc
});

// ------------------------------------------------------------ refusals

// The calls Isthmus refuses on its communicators (collectives, merges and
// splits, persistent requests, matched probes, topologies: see the C
// refusals generated from mpi-functions.txt) must be refused from Fortran
// too, or Open MPI's Fortran bindings (and MPICH's `use mpi_f08` ones for
// calls without a buffer), which go to `PMPI_*` directly, would run them
// on the local handle. Each entry point here checks its communicator: an
// Isthmus one gets the refusal through its error handler; any other call
// is passed on to the MPI library's own definition of the same name.

/// A Fortran argument whose type does not matter here (passed on as is).
type P = *mut c_void;

/// Passes a Fortran call on to the next definition of `$name` (the MPI
/// library's own), or sets `ierror` if there is none.
macro_rules! pass_on {
    ($name:ident, ($($a:ident : $t:ty),*), $ierr:ident) => {{
        static NEXT: OnceLock<usize> = OnceLock::new();
        let name = concat!(stringify!($name), "\0");
        match std::ffi::CStr::from_bytes_with_nul(name.as_bytes()).map(|n| next(&NEXT, n)) {
            Ok(0) | Err(_) => {
                // SAFETY: `ierror` is the program's (or null).
                unsafe { put($ierr, no_next(stringify!($name))) }
            }
            Ok(p) => {
                // SAFETY: `p` is the address of the MPI library's own
                // definition of this very Fortran function, whose
                // arguments are all references (and `ierror` last).
                let f: unsafe extern "C" fn($($t,)* *mut Fint) = unsafe { std::mem::transmute(p) };
                // SAFETY: the program's arguments, passed on.
                unsafe { f($($a,)* $ierr) }
            }
        }
    }};
}

/// Is the Fortran communicator argument an Isthmus communicator? Then
/// `Some(its C handle)`.
///
/// # Safety
/// `comm` is a reference to a Fortran integer (or null).
unsafe fn bridge_comm_f(comm: P) -> Option<MPI_Comm> {
    // SAFETY: the caller's contract.
    let c = comm_f2c(unsafe { get(comm as *const Fint) }?);
    crate::state::bridge_comm(c).map(|_| c)
}

/// Open MPI: `ompi_*_f` refuses on an Isthmus communicator and passes the
/// call on otherwise; `mpi_*_` (and `pmpi_*_` aliases) call it under Open
/// MPI and pass the call on to MPICH's own under MPICH (whose Fortran
/// calls the C function, refused in C).
macro_rules! refused {
    ($call:literal, $mpi:ident $(| $alias:ident)*, $ompi:ident, $params:tt, $comm:ident) => {
        refused_entry!($call, $ompi, $params, $comm);
        gfortran_name!($mpi, $ompi, $params, ierror);
        $(gfortran_name!($alias, $ompi, $params, ierror);)*
    };
}

macro_rules! refused_entry {
    ($call:literal, $ompi:ident, ($($a:ident : $t:ty),*), $comm:ident) => {
        /// Open MPI's Fortran binding of a call refused on an Isthmus
        /// communicator (see above).
        ///
        /// # Safety
        /// As the Fortran MPI call: every argument a valid reference.
        #[no_mangle]
        pub unsafe extern "C" fn $ompi($($a: $t,)* ierror: *mut Fint) {
            // SAFETY: Fortran passes the communicator by reference.
            if let Some(c) = unsafe { bridge_comm_f($comm) } {
                // SAFETY: the program's `ierror` (or null).
                unsafe { put(ierror, errors::refuse(c, $call)) };
                return;
            }
            pass_on!($ompi, ($($a : $t),*), ierror)
        }
    };
}

/// MPICH's `use mpi_f08` binding of a refused call without a buffer (it
/// calls `PMPI_*`): refused on an Isthmus communicator under MPICH, passed
/// on otherwise.
macro_rules! refused_mpich_f08 {
    ($call:literal, $name:ident, ($($a:ident : $t:ty),*), $comm:ident) => {
        /// MPICH's `use mpi_f08` binding of a call refused on an Isthmus
        /// communicator (see above).
        ///
        /// # Safety
        /// As the Fortran MPI call: every argument a valid reference,
        /// `ierror` a reference or null (absent).
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t,)* ierror: *mut Fint) {
            if !open_mpi() {
                // SAFETY: Fortran passes the communicator by reference.
                if let Some(c) = unsafe { bridge_comm_f($comm) } {
                    // SAFETY: the program's `ierror` (or null).
                    unsafe { put(ierror, errors::refuse(c, $call)) };
                    return;
                }
            }
            pass_on!($name, ($($a : $t),*), ierror)
        }
    };
}

refused!("MPI_Barrier", mpi_barrier_, ompi_barrier_f, (comm: P), comm);
refused!("MPI_Ibarrier", mpi_ibarrier_, ompi_ibarrier_f, (comm: P, request: P), comm);
refused!("MPI_Bcast", mpi_bcast_, ompi_bcast_f,
    (buffer: P, count: P, datatype: P, root: P, comm: P), comm);
refused!("MPI_Ibcast", mpi_ibcast_, ompi_ibcast_f,
    (buffer: P, count: P, datatype: P, root: P, comm: P, request: P), comm);
refused!("MPI_Reduce", mpi_reduce_, ompi_reduce_f,
    (sendbuf: P, recvbuf: P, count: P, datatype: P, op: P, root: P, comm: P), comm);
refused!("MPI_Ireduce", mpi_ireduce_, ompi_ireduce_f,
    (sendbuf: P, recvbuf: P, count: P, datatype: P, op: P, root: P, comm: P, request: P), comm);
refused!("MPI_Allreduce", mpi_allreduce_, ompi_allreduce_f,
    (sendbuf: P, recvbuf: P, count: P, datatype: P, op: P, comm: P), comm);
refused!("MPI_Iallreduce", mpi_iallreduce_, ompi_iallreduce_f,
    (sendbuf: P, recvbuf: P, count: P, datatype: P, op: P, comm: P, request: P), comm);
refused!("MPI_Reduce_scatter", mpi_reduce_scatter_, ompi_reduce_scatter_f,
    (sendbuf: P, recvbuf: P, recvcounts: P, datatype: P, op: P, comm: P), comm);
refused!("MPI_Reduce_scatter_block", mpi_reduce_scatter_block_, ompi_reduce_scatter_block_f,
    (sendbuf: P, recvbuf: P, recvcount: P, datatype: P, op: P, comm: P), comm);
refused!("MPI_Scan", mpi_scan_, ompi_scan_f,
    (sendbuf: P, recvbuf: P, count: P, datatype: P, op: P, comm: P), comm);
refused!("MPI_Exscan", mpi_exscan_, ompi_exscan_f,
    (sendbuf: P, recvbuf: P, count: P, datatype: P, op: P, comm: P), comm);
refused!("MPI_Gather", mpi_gather_, ompi_gather_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P, root: P,
     comm: P), comm);
refused!("MPI_Gatherv", mpi_gatherv_, ompi_gatherv_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcounts: P, displs: P, recvtype: P,
     root: P, comm: P), comm);
refused!("MPI_Scatter", mpi_scatter_, ompi_scatter_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P, root: P,
     comm: P), comm);
refused!("MPI_Scatterv", mpi_scatterv_, ompi_scatterv_f,
    (sendbuf: P, sendcounts: P, displs: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P,
     root: P, comm: P), comm);
refused!("MPI_Allgather", mpi_allgather_, ompi_allgather_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P, comm: P), comm);
refused!("MPI_Allgatherv", mpi_allgatherv_, ompi_allgatherv_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcounts: P, displs: P, recvtype: P,
     comm: P), comm);
refused!("MPI_Alltoall", mpi_alltoall_, ompi_alltoall_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P, comm: P), comm);
refused!("MPI_Alltoallv", mpi_alltoallv_, ompi_alltoallv_f,
    (sendbuf: P, sendcounts: P, sdispls: P, sendtype: P, recvbuf: P, recvcounts: P, rdispls: P,
     recvtype: P, comm: P), comm);
refused!("MPI_Intercomm_merge", mpi_intercomm_merge_ | pmpi_intercomm_merge_,
    ompi_intercomm_merge_f, (intercomm: P, high: P, newintracomm: P), intercomm);
refused!("MPI_Comm_split", mpi_comm_split_, ompi_comm_split_f,
    (comm: P, color: P, key: P, newcomm: P), comm);
refused!("MPI_Comm_create", mpi_comm_create_, ompi_comm_create_f,
    (comm: P, group: P, newcomm: P), comm);
refused!("MPI_Comm_remote_group", mpi_comm_remote_group_, ompi_comm_remote_group_f,
    (comm: P, group: P), comm);
refused!("MPI_Send_init", mpi_send_init_, ompi_send_init_f,
    (buf: P, count: P, datatype: P, dest: P, tag: P, comm: P, request: P), comm);
refused!("MPI_Ssend_init", mpi_ssend_init_, ompi_ssend_init_f,
    (buf: P, count: P, datatype: P, dest: P, tag: P, comm: P, request: P), comm);
refused!("MPI_Bsend_init", mpi_bsend_init_, ompi_bsend_init_f,
    (buf: P, count: P, datatype: P, dest: P, tag: P, comm: P, request: P), comm);
refused!("MPI_Rsend_init", mpi_rsend_init_, ompi_rsend_init_f,
    (buf: P, count: P, datatype: P, dest: P, tag: P, comm: P, request: P), comm);
refused!("MPI_Recv_init", mpi_recv_init_, ompi_recv_init_f,
    (buf: P, count: P, datatype: P, source: P, tag: P, comm: P, request: P), comm);
refused!("MPI_Mprobe", mpi_mprobe_, ompi_mprobe_f,
    (source: P, tag: P, comm: P, message: P, status: P), comm);
refused!("MPI_Improbe", mpi_improbe_ | pmpi_improbe_, ompi_improbe_f,
    (source: P, tag: P, comm: P, flag: P, message: P, status: P), comm);

refused_mpich_f08!("MPI_Barrier", mpi_barrier_f08_, (comm: P), comm);
refused_mpich_f08!("MPI_Ibarrier", mpi_ibarrier_f08_, (comm: P, request: P), comm);
refused_mpich_f08!("MPI_Intercomm_merge", mpi_intercomm_merge_f08_,
    (intercomm: P, high: P, newintracomm: P), intercomm);
refused_mpich_f08!("MPI_Comm_split", mpi_comm_split_f08_,
    (comm: P, color: P, key: P, newcomm: P), comm);
refused_mpich_f08!("MPI_Comm_create", mpi_comm_create_f08_, (comm: P, group: P, newcomm: P), comm);
refused_mpich_f08!("MPI_Comm_remote_group", mpi_comm_remote_group_f08_, (comm: P, group: P), comm);
refused_mpich_f08!("MPI_Mprobe", mpi_mprobe_f08_,
    (source: P, tag: P, comm: P, message: P, status: P), comm);
refused_mpich_f08!("MPI_Improbe", mpi_improbe_f08_,
    (source: P, tag: P, comm: P, flag: P, message: P, status: P), comm);

refused!("MPI_Alltoallw", mpi_alltoallw_, ompi_alltoallw_f,
    (sendbuf: P, sendcounts: P, sdispls: P, sendtypes: P, recvbuf: P, recvcounts: P, rdispls: P,
     recvtypes: P, comm: P), comm);
refused!("MPI_Igather", mpi_igather_, ompi_igather_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P, root: P,
     comm: P, request: P), comm);
refused!("MPI_Igatherv", mpi_igatherv_, ompi_igatherv_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcounts: P, displs: P, recvtype: P,
     root: P, comm: P, request: P), comm);
refused!("MPI_Iscatter", mpi_iscatter_, ompi_iscatter_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P, root: P,
     comm: P, request: P), comm);
refused!("MPI_Iscatterv", mpi_iscatterv_, ompi_iscatterv_f,
    (sendbuf: P, sendcounts: P, displs: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P,
     root: P, comm: P, request: P), comm);
refused!("MPI_Iallgather", mpi_iallgather_, ompi_iallgather_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P, comm: P,
     request: P), comm);
refused!("MPI_Iallgatherv", mpi_iallgatherv_, ompi_iallgatherv_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcounts: P, displs: P, recvtype: P,
     comm: P, request: P), comm);
refused!("MPI_Ialltoall", mpi_ialltoall_, ompi_ialltoall_f,
    (sendbuf: P, sendcount: P, sendtype: P, recvbuf: P, recvcount: P, recvtype: P, comm: P,
     request: P), comm);
refused!("MPI_Ialltoallv", mpi_ialltoallv_, ompi_ialltoallv_f,
    (sendbuf: P, sendcounts: P, sdispls: P, sendtype: P, recvbuf: P, recvcounts: P, rdispls: P,
     recvtype: P, comm: P, request: P), comm);
refused!("MPI_Ialltoallw", mpi_ialltoallw_, ompi_ialltoallw_f,
    (sendbuf: P, sendcounts: P, sdispls: P, sendtypes: P, recvbuf: P, recvcounts: P, rdispls: P,
     recvtypes: P, comm: P, request: P), comm);
refused!("MPI_Ireduce_scatter", mpi_ireduce_scatter_, ompi_ireduce_scatter_f,
    (sendbuf: P, recvbuf: P, recvcounts: P, datatype: P, op: P, comm: P, request: P), comm);
refused!("MPI_Ireduce_scatter_block", mpi_ireduce_scatter_block_, ompi_ireduce_scatter_block_f,
    (sendbuf: P, recvbuf: P, recvcount: P, datatype: P, op: P, comm: P, request: P), comm);
refused!("MPI_Iscan", mpi_iscan_, ompi_iscan_f,
    (sendbuf: P, recvbuf: P, count: P, datatype: P, op: P, comm: P, request: P), comm);
refused!("MPI_Iexscan", mpi_iexscan_, ompi_iexscan_f,
    (sendbuf: P, recvbuf: P, count: P, datatype: P, op: P, comm: P, request: P), comm);
refused!("MPI_Comm_create_group", mpi_comm_create_group_, ompi_comm_create_group_f,
    (comm: P, group: P, tag: P, newcomm: P), comm);
refused!("MPI_Comm_split_type", mpi_comm_split_type_, ompi_comm_split_type_f,
    (comm: P, split_type: P, key: P, info: P, newcomm: P), comm);
refused!("MPI_Cart_create", mpi_cart_create_ | pmpi_cart_create_, ompi_cart_create_f,
    (comm_old: P, ndims: P, dims: P, periods: P, reorder: P, comm_cart: P), comm_old);
refused!("MPI_Graph_create", mpi_graph_create_ | pmpi_graph_create_, ompi_graph_create_f,
    (comm_old: P, nnodes: P, index: P, edges: P, reorder: P, comm_graph: P), comm_old);
refused!("MPI_Dist_graph_create", mpi_dist_graph_create_ | pmpi_dist_graph_create_,
    ompi_dist_graph_create_f,
    (comm_old: P, n: P, sources: P, degrees: P, destinations: P, weights: P, info: P, reorder: P,
     comm_dist_graph: P), comm_old);
refused!("MPI_Dist_graph_create_adjacent",
    mpi_dist_graph_create_adjacent_ | pmpi_dist_graph_create_adjacent_,
    ompi_dist_graph_create_adjacent_f,
    (comm_old: P, indegree: P, sources: P, sourceweights: P, outdegree: P, destinations: P,
     destweights: P, info: P, reorder: P, comm_dist_graph: P), comm_old);
refused!("MPI_Win_create", mpi_win_create_, ompi_win_create_f,
    (base: P, size: P, disp_unit: P, info: P, comm: P, win: P), comm);
refused!("MPI_Win_allocate", mpi_win_allocate_, ompi_win_allocate_f,
    (size: P, disp_unit: P, info: P, comm: P, baseptr: P, win: P), comm);
refused!("MPI_Win_allocate_shared", mpi_win_allocate_shared_, ompi_win_allocate_shared_f,
    (size: P, disp_unit: P, info: P, comm: P, baseptr: P, win: P), comm);
refused!("MPI_Win_create_dynamic", mpi_win_create_dynamic_, ompi_win_create_dynamic_f,
    (info: P, comm: P, win: P), comm);

refused_mpich_f08!("MPI_Comm_create_group", mpi_comm_create_group_f08_,
    (comm: P, group: P, tag: P, newcomm: P), comm);
refused_mpich_f08!("MPI_Comm_split_type", mpi_comm_split_type_f08_,
    (comm: P, split_type: P, key: P, info: P, newcomm: P), comm);
refused_mpich_f08!("MPI_Cart_create", mpi_cart_create_f08_,
    (comm_old: P, ndims: P, dims: P, periods: P, reorder: P, comm_cart: P), comm_old);
refused_mpich_f08!("MPI_Graph_create", mpi_graph_create_f08_,
    (comm_old: P, nnodes: P, index: P, edges: P, reorder: P, comm_graph: P), comm_old);
refused_mpich_f08!("MPI_Dist_graph_create", mpi_dist_graph_create_f08_,
    (comm_old: P, n: P, sources: P, degrees: P, destinations: P, weights: P, info: P, reorder: P,
     comm_dist_graph: P), comm_old);
refused_mpich_f08!("MPI_Dist_graph_create_adjacent", mpi_dist_graph_create_adjacent_f08_,
    (comm_old: P, indegree: P, sources: P, sourceweights: P, outdegree: P, destinations: P,
     destweights: P, info: P, reorder: P, comm_dist_graph: P), comm_old);
refused_mpich_f08!("MPI_Win_create_dynamic", mpi_win_create_dynamic_f08_,
    (info: P, comm: P, win: P), comm);

// ------------------------------------------- generated refusals (Open MPI)

/// A communicator passed by reference, as a word (see build.rs): the
/// Isthmus communicator it names, if it is one.
///
/// # Safety
/// `w` is null or the address of a Fortran INTEGER.
#[allow(dead_code)] // used by the generated code of the Open MPI build
unsafe fn bridge_comm_word(w: usize) -> Option<MPI_Comm> {
    // SAFETY: the caller's contract.
    unsafe { bridge_comm_f(w as P) }
}

// Every refused call not defined by hand above, from Open MPI's mpi.h.
include!(concat!(env!("OUT_DIR"), "/fortran_refused.rs"));

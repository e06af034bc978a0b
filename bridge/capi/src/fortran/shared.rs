//! The Fortran bodies that Open MPI's entry points (`ompi_wait_f`, …) and
//! MPICH's `use mpi_f08` ones (`mpi_wait_f08_`, …) share, each written once
//! over a [`Binding`]: what differs between the two is how a status
//! argument is read and written, and whether the outputs (requests, flags,
//! indices, integers) are written back when the call failed.
//!
//! - Open MPI's Fortran statuses are integer arrays (converted with
//!   `PMPI_Status_c2f`), and its bindings write the outputs back only on
//!   success (statuses too: on success, or on `MPI_ERR_IN_STATUS` for the
//!   array calls).
//! - MPICH's `use mpi_f08` statuses are C statuses (its `type(MPI_Status)`
//!   is `bind(C)`), passed to the C call as they are, and the outputs are
//!   written back whatever the call answered.
//!
//! `ompi` and `mpich_f08` each implement [`Binding`] and expand
//! [`shared_bodies!`] for it: the entry points `build.rs` generates call
//! `ompi::wait` and `mpich_f08::wait`, which are these bodies.

use std::ffi::c_int;

use super::convert::*;
use crate::mpi_glue::MPI_Status;
use crate::{comms, pt2pt, requests};

/// What a Fortran binding's bodies do differently (see the module doc).
pub(super) trait Binding {
    /// What the program's status argument points to.
    type Status;

    /// Whether the outputs are written back although the call failed.
    const WRITES_ON_FAILURE: bool;

    /// Calls `f` with a C status standing for the program's `status` (or
    /// C's `MPI_STATUS_IGNORE`). `f` answers the call's code and whether
    /// MPI filled the status; the binding copies it back as it does.
    ///
    /// # Safety
    /// `status` is the program's status argument (or null).
    unsafe fn with_status(
        status: *mut Self::Status,
        f: impl FnOnce(*mut MPI_Status) -> (c_int, bool),
    ) -> c_int;

    /// Calls `f` with `n` C statuses standing for the program's array
    /// `statuses` (or C's `MPI_STATUSES_IGNORE`). `f` answers the call's
    /// code and how many statuses MPI filled, from the first.
    ///
    /// # Safety
    /// `statuses` is the program's array of `n` statuses (or null, or the
    /// binding's `MPI_STATUSES_IGNORE`).
    unsafe fn with_statuses(
        statuses: *mut Self::Status,
        n: usize,
        f: impl FnOnce(*mut MPI_Status) -> (c_int, usize),
    ) -> c_int;
}

/// Are the outputs written back after a call whose outcome is `ok`?
fn writes<B: Binding>(ok: bool) -> bool {
    B::WRITES_ON_FAILURE || ok
}

/// `MPI_Wait`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn wait<B: Binding>(request: *mut Fint, status: *mut B::Status) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    // SAFETY: the program's status argument.
    let rc = unsafe {
        B::with_status(status, |st| {
            // SAFETY: our request copy, a C status.
            (requests::MPI_Wait(&mut r, st), true)
        })
    };
    if writes::<B>(rc == 0) {
        // SAFETY: the program's request.
        unsafe { put(request, request_c2f(r)) };
    }
    rc
}

/// `MPI_Test`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn test<B: Binding>(
    request: *mut Fint,
    flag: *mut Fint,
    status: *mut B::Status,
) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    let mut done: c_int = 0;
    // SAFETY: the program's status argument.
    let rc = unsafe {
        B::with_status(status, |st| {
            // SAFETY: our request copy and flag, a C status.
            let rc = requests::MPI_Test(&mut r, &mut done, st);
            (rc, done != 0)
        })
    };
    if writes::<B>(rc == 0) {
        // SAFETY: the program's request and LOGICAL (gfortran's .true. is 1).
        unsafe {
            put(request, request_c2f(r));
            put(flag, c_int::from(done != 0));
        }
    }
    rc
}

/// `MPI_Waitall`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn waitall<B: Binding>(
    count: *const Fint,
    requests: *mut Fint,
    statuses: *mut B::Status,
) -> c_int {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Waitall") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let n = c.len();
    // SAFETY: the program's array of `count` statuses (or ignore).
    let rc = unsafe {
        B::with_statuses(statuses, n, |st| {
            // SAFETY: our array of `n` requests, `n` C statuses (or ignore).
            (requests::MPI_Waitall(n as c_int, c.as_mut_ptr(), st), n)
        })
    };
    if writes::<B>(statuses_valid(rc)) {
        // SAFETY: the program's array.
        unsafe { requests_c2f(&c, requests) };
    }
    rc
}

/// `MPI_Testall`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn testall<B: Binding>(
    count: *const Fint,
    requests: *mut Fint,
    flag: *mut Fint,
    statuses: *mut B::Status,
) -> c_int {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Testall") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let n = c.len();
    let mut done: c_int = 0;
    // SAFETY: the program's array of `count` statuses (or ignore).
    let rc = unsafe {
        B::with_statuses(statuses, n, |st| {
            // SAFETY: our arrays and flag, `n` C statuses (or ignore).
            let rc = requests::MPI_Testall(n as c_int, c.as_mut_ptr(), &mut done, st);
            (rc, if done != 0 { n } else { 0 })
        })
    };
    if writes::<B>(statuses_valid(rc)) {
        // SAFETY: the program's array and LOGICAL.
        unsafe {
            requests_c2f(&c, requests);
            put(flag, c_int::from(done != 0));
        }
    }
    rc
}

/// `MPI_Waitany`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn waitany<B: Binding>(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    status: *mut B::Status,
) -> c_int {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Waitany") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut i: c_int = 0;
    // SAFETY: the program's status argument.
    let rc = unsafe {
        B::with_status(status, |st| {
            // SAFETY: our requests and index, a C status.
            let rc = requests::MPI_Waitany(c.len() as c_int, c.as_mut_ptr(), &mut i, st);
            (rc, true)
        })
    };
    if writes::<B>(rc == 0) {
        // SAFETY: the program's array and index.
        unsafe {
            requests_c2f(&c, requests);
            put(index, index_c2f(i));
        }
    }
    rc
}

/// `MPI_Testany`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn testany<B: Binding>(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    flag: *mut Fint,
    status: *mut B::Status,
) -> c_int {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Testany") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (mut i, mut done): (c_int, c_int) = (0, 0);
    // SAFETY: the program's status argument.
    let rc = unsafe {
        B::with_status(status, |st| {
            // SAFETY: our requests, index and flag, a C status.
            let rc = requests::MPI_Testany(c.len() as c_int, c.as_mut_ptr(), &mut i, &mut done, st);
            (rc, true)
        })
    };
    if writes::<B>(rc == 0) {
        // SAFETY: the program's array, index and LOGICAL.
        unsafe {
            requests_c2f(&c, requests);
            put(index, index_c2f(i));
            put(flag, c_int::from(done != 0));
        }
    }
    rc
}

/// `MPI_Waitsome` or `MPI_Testsome` (`f`, named `call`).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn some<B: Binding>(
    f: SomeFn,
    call: &str,
    incount: *const Fint,
    requests: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut B::Status,
) -> c_int {
    // SAFETY: Fortran passes `incount` and an array of `incount` requests.
    let mut c = match unsafe { requests_f2c(int!(incount), requests, call) } {
        Ok(c) => c,
        Err(code) => return code,
    };
    let n = c.len();
    let mut out: c_int = 0;
    let mut idx = vec![0 as c_int; n];
    let mut k = 0;
    // SAFETY: the program's array of `incount` statuses (or ignore).
    let rc = unsafe {
        B::with_statuses(statuses, n, |st| {
            // SAFETY: our arrays of `n` requests and indices, `n` C statuses
            // (or ignore).
            let rc = f(n as c_int, c.as_mut_ptr(), &mut out, idx.as_mut_ptr(), st);
            k = usize::try_from(out).unwrap_or(0).min(n);
            (rc, k)
        })
    };
    if writes::<B>(statuses_valid(rc)) {
        // SAFETY: the program's arrays: `incount` requests and indices.
        unsafe {
            requests_c2f(&c, requests);
            put(outcount, out);
            if !indices.is_null() {
                for (j, &i) in idx.iter().take(k).enumerate() {
                    *indices.add(j) = index_c2f(i);
                }
            }
        }
    }
    rc
}

/// `MPI_Request_get_status`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn request_get_status<B: Binding>(
    request: *const Fint,
    flag: *mut Fint,
    status: *mut B::Status,
) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let r = unsafe { request_f2c(int!(request)) };
    let mut done: c_int = 0;
    // SAFETY: the program's status argument.
    let rc = unsafe {
        B::with_status(status, |st| {
            // SAFETY: a converted request, our flag, a C status.
            let rc = requests::MPI_Request_get_status(r, &mut done, st);
            (rc, done != 0)
        })
    };
    if writes::<B>(rc == 0) {
        // SAFETY: the program's LOGICAL.
        unsafe { put(flag, c_int::from(done != 0)) };
    }
    rc
}

/// `MPI_Request_free`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn request_free<B: Binding>(request: *mut Fint) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    // SAFETY: our request copy.
    let rc = unsafe { requests::MPI_Request_free(&mut r) };
    if writes::<B>(rc == 0) {
        // SAFETY: the program's request.
        unsafe { put(request, request_c2f(r)) };
    }
    rc
}

/// `MPI_Probe`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn probe<B: Binding>(
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    status: *mut B::Status,
) -> c_int {
    // SAFETY: the program's status argument.
    unsafe {
        B::with_status(status, |st| {
            // SAFETY: Fortran passes the integers by reference; a C status.
            let rc = pt2pt::MPI_Probe(int!(source), int!(tag), comm_f2c(int!(comm)), st);
            (rc, true)
        })
    }
}

/// `MPI_Iprobe`: the flag is written whatever the call answered.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn iprobe<B: Binding>(
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    flag: *mut Fint,
    status: *mut B::Status,
) -> c_int {
    let mut found: c_int = 0;
    // SAFETY: the program's status argument.
    let rc = unsafe {
        B::with_status(status, |st| {
            // SAFETY: as for `probe`, and our flag.
            let rc = pt2pt::MPI_Iprobe(
                int!(source),
                int!(tag),
                comm_f2c(int!(comm)),
                &mut found,
                st,
            );
            (rc, true)
        })
    };
    // SAFETY: the program's LOGICAL.
    unsafe { put(flag, c_int::from(found != 0)) };
    rc
}

/// A C call that answers one integer about a communicator.
type CommIntegerFn = unsafe extern "C" fn(crate::mpi_glue::MPI_Comm, *mut c_int) -> c_int;

/// A C call that answers one integer about a communicator (rank, size,
/// remote size, the inter flag: `logical`): the handle converted, the
/// answer written back.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
unsafe fn comm_integer<B: Binding>(
    comm: *const Fint,
    out: *mut Fint,
    call: CommIntegerFn,
    logical: bool,
) -> c_int {
    let mut v: c_int = 0;
    // SAFETY: a converted handle, our out-integer.
    let rc = unsafe { call(comm_f2c(int!(comm)), &mut v) };
    if writes::<B>(rc == 0) {
        let v = if logical { c_int::from(v != 0) } else { v };
        // SAFETY: the program's integer or LOGICAL.
        unsafe { put(out, v) };
    }
    rc
}

/// `MPI_Comm_rank`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_rank<B: Binding>(comm: *const Fint, rank: *mut Fint) -> c_int {
    // SAFETY: forwarded.
    unsafe { comm_integer::<B>(comm, rank, comms::MPI_Comm_rank, false) }
}

/// `MPI_Comm_size`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_size<B: Binding>(comm: *const Fint, size: *mut Fint) -> c_int {
    // SAFETY: forwarded.
    unsafe { comm_integer::<B>(comm, size, comms::MPI_Comm_size, false) }
}

/// `MPI_Comm_remote_size`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_remote_size<B: Binding>(comm: *const Fint, size: *mut Fint) -> c_int {
    // SAFETY: forwarded.
    unsafe { comm_integer::<B>(comm, size, comms::MPI_Comm_remote_size, false) }
}

/// `MPI_Comm_test_inter` (`flag` a LOGICAL).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_test_inter<B: Binding>(comm: *const Fint, flag: *mut Fint) -> c_int {
    // SAFETY: forwarded.
    unsafe { comm_integer::<B>(comm, flag, comms::MPI_Comm_test_inter, true) }
}

/// `MPI_Comm_compare`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_compare<B: Binding>(
    comm1: *const Fint,
    comm2: *const Fint,
    result: *mut Fint,
) -> c_int {
    let mut r: c_int = 0;
    // SAFETY: converted handles, our out-integer.
    let rc =
        unsafe { comms::MPI_Comm_compare(comm_f2c(int!(comm1)), comm_f2c(int!(comm2)), &mut r) };
    if writes::<B>(rc == 0) {
        // SAFETY: the program's integer.
        unsafe { put(result, r) };
    }
    rc
}

/// The bodies above as a binding's module's own functions (the names the
/// generated entry points call), for the binding `$b`.
macro_rules! shared_bodies {
    ($b:ty) => {
        shared_bodies!(@one $b, wait(request: *mut Fint, status: *mut <$b as Binding>::Status));
        shared_bodies!(@one $b, test(
            request: *mut Fint,
            flag: *mut Fint,
            status: *mut <$b as Binding>::Status,
        ));
        shared_bodies!(@one $b, waitall(
            count: *const Fint,
            requests: *mut Fint,
            statuses: *mut <$b as Binding>::Status,
        ));
        shared_bodies!(@one $b, testall(
            count: *const Fint,
            requests: *mut Fint,
            flag: *mut Fint,
            statuses: *mut <$b as Binding>::Status,
        ));
        shared_bodies!(@one $b, waitany(
            count: *const Fint,
            requests: *mut Fint,
            index: *mut Fint,
            status: *mut <$b as Binding>::Status,
        ));
        shared_bodies!(@one $b, testany(
            count: *const Fint,
            requests: *mut Fint,
            index: *mut Fint,
            flag: *mut Fint,
            status: *mut <$b as Binding>::Status,
        ));
        shared_bodies!(@some $b, waitsome, MPI_Waitsome);
        shared_bodies!(@some $b, testsome, MPI_Testsome);
        shared_bodies!(@one $b, request_get_status(
            request: *const Fint,
            flag: *mut Fint,
            status: *mut <$b as Binding>::Status,
        ));
        shared_bodies!(@one $b, request_free(request: *mut Fint));
        shared_bodies!(@one $b, probe(
            source: *const Fint,
            tag: *const Fint,
            comm: *const Fint,
            status: *mut <$b as Binding>::Status,
        ));
        shared_bodies!(@one $b, iprobe(
            source: *const Fint,
            tag: *const Fint,
            comm: *const Fint,
            flag: *mut Fint,
            status: *mut <$b as Binding>::Status,
        ));
        shared_bodies!(@one $b, comm_rank(comm: *const Fint, rank: *mut Fint));
        shared_bodies!(@one $b, comm_size(comm: *const Fint, size: *mut Fint));
        shared_bodies!(@one $b, comm_remote_size(comm: *const Fint, size: *mut Fint));
        shared_bodies!(@one $b, comm_test_inter(comm: *const Fint, flag: *mut Fint));
        shared_bodies!(@one $b, comm_compare(
            comm1: *const Fint,
            comm2: *const Fint,
            result: *mut Fint,
        ));
    };
    (@one $b:ty, $name:ident($($arg:ident: $t:ty),* $(,)?)) => {
        #[doc = concat!("`", stringify!($name), "` of `fortran::shared` for this binding.")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        pub(super) unsafe fn $name($($arg: $t),*) -> c_int {
            // SAFETY: the program's arguments, forwarded.
            unsafe { super::shared::$name::<$b>($($arg),*) }
        }
    };
    (@some $b:ty, $name:ident, $c:ident) => {
        #[doc = concat!("`", stringify!($c), "` for this binding.")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        pub(super) unsafe fn $name(
            incount: *const Fint,
            requests: *mut Fint,
            outcount: *mut Fint,
            indices: *mut Fint,
            statuses: *mut <$b as Binding>::Status,
        ) -> c_int {
            // SAFETY: the program's arguments, forwarded.
            unsafe {
                super::shared::some::<$b>(
                    requests::$c,
                    stringify!($c),
                    incount,
                    requests,
                    outcount,
                    indices,
                    statuses,
                )
            }
        }
    };
}

pub(super) use shared_bodies;

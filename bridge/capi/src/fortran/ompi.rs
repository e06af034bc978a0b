//! The Fortran bodies of Open MPI's entry points (`ompi_send_f`, which
//! `use mpi_f08` calls, and `mpi_send_`/`pmpi_send_`, which `mpif.h` and
//! `use mpi` call; shells generated from `mpi-functions.txt`): Fortran
//! handles and statuses converted as Open MPI's own binding does, then this
//! library's C entry point. The bodies it shares with MPICH's `use mpi_f08`
//! (wait, test, probes, communicator queries) are `super::shared`'s, over
//! [`Ompi`].

use std::ffi::{c_int, c_void};

use super::convert::*;
use super::shared::{shared_bodies, Binding};
use crate::mpi_glue::{comm_null, statuses_ignore, MPI_Status};
use crate::{comms, merged, pt2pt, requests};

// The collectives' bodies have a room of their own; the generated shells
// call them as `ompi::x`, like every other body.
pub(super) use super::ompi_coll::*;

/// Open MPI's Fortran binding: its statuses are integer arrays, and the
/// outputs are written back only when the call succeeded.
pub(super) struct Ompi;

impl Binding for Ompi {
    type Status = Fint;

    const WRITES_ON_FAILURE: bool = false;

    unsafe fn with_status(
        status: *mut Fint,
        f: impl FnOnce(*mut MPI_Status) -> (c_int, bool),
    ) -> c_int {
        // SAFETY: forwarded from this function's contract.
        unsafe { with_filled_status(status, f) }
    }

    unsafe fn with_statuses(
        statuses: *mut Fint,
        n: usize,
        f: impl FnOnce(*mut MPI_Status) -> (c_int, usize),
    ) -> c_int {
        if !wants_statuses(statuses) {
            return f(statuses_ignore()).0;
        }
        let mut st = vec![empty_status(); n];
        let (rc, filled) = f(st.as_mut_ptr());
        if statuses_valid(rc) {
            // SAFETY: the program's array of `n` statuses (this function's
            // contract); MPI filled the first `filled` of ours.
            unsafe { statuses_c2f(st.get(..filled).unwrap_or_default(), statuses) };
        }
        rc
    }
}

shared_bodies!(Ompi);

// ------------------------------------------------------------ sends

/// The body of a blocking send `$f` that calls the C `$c`.
macro_rules! blocking_send {
    ($f:ident, $c:path) => {
        #[doc = concat!("`", stringify!($c), "` for Open MPI's Fortran.")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        pub(super) unsafe fn $f(
            buf: *const c_void,
            count: *const Fint,
            datatype: *const Fint,
            dest: *const Fint,
            tag: *const Fint,
            comm: *const Fint,
        ) -> c_int {
            // SAFETY: the program's buffer, converted handles.
            unsafe {
                $c(
                    buffer(buf),
                    int!(count),
                    type_f2c(int!(datatype)),
                    int!(dest),
                    int!(tag),
                    comm_f2c(int!(comm)),
                )
            }
        }
    };
}

blocking_send!(send, pt2pt::MPI_Send);
blocking_send!(ssend, pt2pt::MPI_Ssend);
blocking_send!(rsend, pt2pt::MPI_Rsend);
blocking_send!(bsend, pt2pt::MPI_Bsend);

/// The body of a nonblocking send `$f` that calls the C `$c`.
macro_rules! nonblocking_send {
    ($f:ident, $c:path) => {
        #[doc = concat!("`", stringify!($c), "` for Open MPI's Fortran.")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        pub(super) unsafe fn $f(
            buf: *const c_void,
            count: *const Fint,
            datatype: *const Fint,
            dest: *const Fint,
            tag: *const Fint,
            comm: *const Fint,
            request: *mut Fint,
        ) -> c_int {
            let mut r = crate::mpi_glue::request_null();
            // SAFETY: the program's buffer, converted handles, our request.
            let rc = unsafe {
                $c(
                    buffer(buf),
                    int!(count),
                    type_f2c(int!(datatype)),
                    int!(dest),
                    int!(tag),
                    comm_f2c(int!(comm)),
                    &mut r,
                )
            };
            if rc == 0 {
                // SAFETY: the program's request argument.
                unsafe { put(request, request_c2f(r)) };
            }
            rc
        }
    };
}

nonblocking_send!(isend, pt2pt::MPI_Isend);
nonblocking_send!(issend, pt2pt::MPI_Issend);
nonblocking_send!(irsend, pt2pt::MPI_Irsend);
nonblocking_send!(ibsend, pt2pt::MPI_Ibsend);

// ------------------------------------------------------------ receives, probes

/// `MPI_Recv` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn recv(
    buf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
) -> c_int {
    // SAFETY: the program's status argument.
    unsafe {
        with_status(status, |st| {
            // SAFETY: the program's buffer, converted handles.
            pt2pt::MPI_Recv(
                buffer(buf) as *mut c_void,
                int!(count),
                type_f2c(int!(datatype)),
                int!(source),
                int!(tag),
                comm_f2c(int!(comm)),
                st,
            )
        })
    }
}

/// `MPI_Irecv` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn irecv(
    buf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    request: *mut Fint,
) -> c_int {
    let mut r = crate::mpi_glue::request_null();
    // SAFETY: the program's buffer, converted handles, our request.
    let rc = unsafe {
        pt2pt::MPI_Irecv(
            buffer(buf) as *mut c_void,
            int!(count),
            type_f2c(int!(datatype)),
            int!(source),
            int!(tag),
            comm_f2c(int!(comm)),
            &mut r,
        )
    };
    if rc == 0 {
        // SAFETY: the program's request argument.
        unsafe { put(request, request_c2f(r)) };
    }
    rc
}

/// `MPI_Sendrecv` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn sendrecv(
    sendbuf: *const c_void,
    sendcount: *const Fint,
    sendtype: *const Fint,
    dest: *const Fint,
    sendtag: *const Fint,
    recvbuf: *mut c_void,
    recvcount: *const Fint,
    recvtype: *const Fint,
    source: *const Fint,
    recvtag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
) -> c_int {
    // SAFETY: the program's status argument.
    unsafe {
        with_status(status, |st| {
            // SAFETY: the program's buffers, converted handles.
            pt2pt::MPI_Sendrecv(
                buffer(sendbuf),
                int!(sendcount),
                type_f2c(int!(sendtype)),
                int!(dest),
                int!(sendtag),
                buffer(recvbuf) as *mut c_void,
                int!(recvcount),
                type_f2c(int!(recvtype)),
                int!(source),
                int!(recvtag),
                comm_f2c(int!(comm)),
                st,
            )
        })
    }
}

/// `MPI_Sendrecv_replace` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn sendrecv_replace(
    buf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    dest: *const Fint,
    sendtag: *const Fint,
    source: *const Fint,
    recvtag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
) -> c_int {
    // SAFETY: the program's status argument.
    unsafe {
        with_status(status, |st| {
            // SAFETY: the program's buffer, converted handles.
            pt2pt::MPI_Sendrecv_replace(
                buffer(buf) as *mut c_void,
                int!(count),
                type_f2c(int!(datatype)),
                int!(dest),
                int!(sendtag),
                int!(source),
                int!(recvtag),
                comm_f2c(int!(comm)),
                st,
            )
        })
    }
}

// ------------------------------------------------------------ requests

/// `MPI_Cancel` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn cancel(request: *const Fint) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    // SAFETY: our request copy.
    unsafe { requests::MPI_Cancel(&mut r) }
}

// ------------------------------------------------------------ communicators

/// `MPI_Intercomm_merge` for Open MPI's Fortran (`high` a LOGICAL).
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

/// `MPI_Comm_dup` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_dup(comm: *const Fint, newcomm: *mut Fint) -> c_int {
    let mut c = comm_null();
    // SAFETY: a converted handle, our out-handle.
    let rc = unsafe { comms::MPI_Comm_dup(comm_f2c(int!(comm)), &mut c) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(newcomm, comm_c2f(c)) };
    }
    rc
}

/// `MPI_Comm_free` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_free(comm: *mut Fint) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let mut c = unsafe { comm_f2c(int!(comm)) };
    // SAFETY: our handle copy.
    let rc = unsafe { comms::MPI_Comm_free(&mut c) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(comm, comm_c2f(c)) };
    }
    rc
}

// Open MPI's Fortran `MPI_Finalize` goes to `PMPI_Finalize` directly:
// without this, a Fortran program's completed sends would not be
// delivered before it finalizes (see `finalize`).
/// `MPI_Finalize` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn finalize() -> c_int {
    // SAFETY: the program's call, passed on to this library's own.
    unsafe { crate::finalize::MPI_Finalize() }
}

/// `MPI_Comm_disconnect` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_disconnect(comm: *mut Fint) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let mut c = unsafe { comm_f2c(int!(comm)) };
    // SAFETY: our handle copy.
    let rc = unsafe { comms::MPI_Comm_disconnect(&mut c) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(comm, comm_c2f(c)) };
    }
    rc
}

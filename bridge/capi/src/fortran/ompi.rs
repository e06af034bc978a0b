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
use crate::mpi_glue::{comm_null, statuses_ignore, MPI_Comm, MPI_Status};
use crate::{comms, intercomm_split, merged, persist, pt2pt, requests};

// The collectives' bodies have a room of their own; the generated shells
// call them as `ompi::x`, like every other body.
pub(super) use super::ompi_coll::*;
// So do the group calls' (`groups`).
pub(super) use super::groups::*;

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

/// The bodies of the calls of one shape (buffer, count, datatype, peer,
/// tag, communicator, request out) that hand back a request: `$f` calls
/// the C `$c` with the buffer as `$to_c` gives it (`buffer` for a send's,
/// `buffer_mut` for a receive's).
macro_rules! request_call {
    ($buf:ty, $to_c:ident: $($f:ident: $c:path),*) => {$(
        #[doc = concat!("`", stringify!($c), "` for Open MPI's Fortran.")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        pub(super) unsafe fn $f(
            buf: $buf,
            count: *const Fint,
            datatype: *const Fint,
            peer: *const Fint,
            tag: *const Fint,
            comm: *const Fint,
            request: *mut Fint,
        ) -> c_int {
            let mut r = crate::mpi_glue::request_null();
            // SAFETY: the program's buffer, converted handles, our request.
            let rc = unsafe {
                $c(
                    $to_c(buf),
                    int!(count),
                    type_f2c(int!(datatype)),
                    int!(peer),
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
    )*};
}

request_call!(*const c_void, buffer:
    isend: pt2pt::MPI_Isend,
    issend: pt2pt::MPI_Issend,
    irsend: pt2pt::MPI_Irsend,
    ibsend: pt2pt::MPI_Ibsend,
    // The persistent calls have the nonblocking ones' arguments: the
    // request handed back is the program's persistent request
    // (`crate::persist`).
    send_init: persist::MPI_Send_init,
    ssend_init: persist::MPI_Ssend_init,
    rsend_init: persist::MPI_Rsend_init,
    bsend_init: persist::MPI_Bsend_init
);

request_call!(*mut c_void, buffer_mut:
    irecv: pt2pt::MPI_Irecv,
    recv_init: persist::MPI_Recv_init
);

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
                buffer_mut(buf),
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

/// `MPI_Start` for Open MPI's Fortran (and MPICH's `use mpi_f08`): a
/// persistent request of an Isthmus communicator issues its stored call.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn start(request: *mut Fint) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    // SAFETY: our request copy.
    let rc = unsafe { persist::MPI_Start(&mut r) };
    if rc == 0 {
        // SAFETY: the program's request.
        unsafe { put(request, request_c2f(r)) };
    }
    rc
}

/// `MPI_Startall` for Open MPI's Fortran (and MPICH's `use mpi_f08`): the
/// array may mix native persistent requests and Isthmus ones.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn startall(count: *const Fint, requests: *mut Fint) -> c_int {
    // SAFETY: Fortran passes `count` and an array of `count` requests.
    let mut c = match unsafe { requests_f2c(int!(count), requests, "MPI_Startall") } {
        Ok(c) => c,
        Err(code) => return code,
    };
    // SAFETY: our array of requests.
    let rc = unsafe { persist::MPI_Startall(c.len() as c_int, c.as_mut_ptr()) };
    if rc == 0 {
        // SAFETY: the program's array.
        unsafe { requests_c2f(&c, requests) };
    }
    rc
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

/// A call making `newcomm` from `comm`, for Fortran (either
/// implementation's: `MPI_Comm_c2f`): the new handle goes back on success
/// only.
///
/// # Safety
/// `newcomm` is the program's out-handle (or null).
pub(super) unsafe fn new_comm(
    newcomm: *mut Fint,
    make: impl FnOnce(*mut MPI_Comm) -> c_int,
) -> c_int {
    let mut c = comm_null();
    let rc = make(&mut c);
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(newcomm, comm_c2f(c)) };
    }
    rc
}

/// `MPI_Comm_split` for Open MPI's Fortran (and MPICH's `use mpi_f08`),
/// so that an Isthmus intercommunicator or merged communicator splits as
/// it does from C rather than as its local handle.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_split(
    comm: *const Fint,
    color: *const Fint,
    key: *const Fint,
    newcomm: *mut Fint,
) -> c_int {
    // SAFETY: converted handles, the program's integers, our out-handle.
    unsafe {
        new_comm(newcomm, |c| {
            intercomm_split::MPI_Comm_split(comm_f2c(int!(comm)), int!(color), int!(key), c)
        })
    }
}

/// `MPI_Comm_create` for Open MPI's Fortran (and MPICH's `use mpi_f08`).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_create(
    comm: *const Fint,
    group: *const Fint,
    newcomm: *mut Fint,
) -> c_int {
    // SAFETY: converted handles, our out-handle.
    unsafe {
        new_comm(newcomm, |c| {
            intercomm_split::MPI_Comm_create(comm_f2c(int!(comm)), group_f2c(int!(group)), c)
        })
    }
}

/// `MPI_Intercomm_create` for Open MPI's Fortran (and MPICH's `use
/// mpi_f08`), so that a merged `peer_comm` (or `local_comm`) reaches the
/// interposed call.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn intercomm_create(
    local_comm: *const Fint,
    local_leader: *const Fint,
    peer_comm: *const Fint,
    remote_leader: *const Fint,
    tag: *const Fint,
    newintercomm: *mut Fint,
) -> c_int {
    // SAFETY: converted handles, the program's integers, our out-handle.
    unsafe {
        new_comm(newintercomm, |c| {
            crate::intercomm_create::MPI_Intercomm_create(
                comm_f2c(int!(local_comm)),
                int!(local_leader),
                comm_f2c(int!(peer_comm)),
                int!(remote_leader),
                int!(tag),
                c,
            )
        })
    }
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

// Open MPI's Fortran `MPI_Abort` (and MPICH's `use mpi_f08` one) goes to
// `PMPI_Abort` directly: without this, an abort from Fortran would end only
// this job, not the other jobs' processes (a world's other part, the remote
// side of an Isthmus communicator), see `crate::abort`.
/// `MPI_Abort` for Open MPI's Fortran (and MPICH's `use mpi_f08`).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn abort(comm: *mut Fint, errorcode: *mut Fint) -> c_int {
    // SAFETY: Fortran arguments, passed by reference.
    let (c, code) = unsafe { (comm_f2c(int!(comm)), int!(errorcode)) };
    // SAFETY: the program's call, passed on to this library's own.
    unsafe { crate::abort::MPI_Abort(c, code) }
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

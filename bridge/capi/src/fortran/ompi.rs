//! The Fortran bodies of Open MPI's entry points (`ompi_send_f`, which
//! `use mpi_f08` calls, and `mpi_send_`/`pmpi_send_`, which `mpif.h` and
//! `use mpi` call; shells generated from `mpi-functions.txt`): Fortran
//! handles and statuses converted as Open MPI's own binding does, then this
//! library's C entry point.

use std::ffi::{c_int, c_void};

use super::convert::*;
use crate::mpi_glue::{comm_null, status_ignore, statuses_ignore};
use crate::{coll, comms, merged, pt2pt, requests};

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

/// `MPI_Probe` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn probe(
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
) -> c_int {
    // SAFETY: the program's status argument.
    unsafe {
        with_status(status, |st| {
            // SAFETY: converted handles.
            pt2pt::MPI_Probe(int!(source), int!(tag), comm_f2c(int!(comm)), st)
        })
    }
}

/// `MPI_Iprobe` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn iprobe(
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    flag: *mut Fint,
    status: *mut Fint,
) -> c_int {
    let mut found: c_int = 0;
    // SAFETY: the program's status argument.
    let rc = unsafe {
        with_status(status, |st| {
            // SAFETY: converted handles, our flag.
            pt2pt::MPI_Iprobe(
                int!(source),
                int!(tag),
                comm_f2c(int!(comm)),
                &mut found,
                st,
            )
        })
    };
    // SAFETY: the program's LOGICAL (gfortran's .true. is 1).
    unsafe { put(flag, c_int::from(found != 0)) };
    rc
}

// ------------------------------------------------------------ wait, test

/// `MPI_Wait` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn wait(request: *mut Fint, status: *mut Fint) -> c_int {
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
}

/// `MPI_Test` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn test(request: *mut Fint, flag: *mut Fint, status: *mut Fint) -> c_int {
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
}

/// `MPI_Waitall` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn waitall(
    count: *const Fint,
    requests: *mut Fint,
    statuses: *mut Fint,
) -> c_int {
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
        let rc =
            unsafe { requests::MPI_Waitall(c.len() as c_int, c.as_mut_ptr(), st.as_mut_ptr()) };
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
}

/// `MPI_Testall` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn testall(
    count: *const Fint,
    requests: *mut Fint,
    flag: *mut Fint,
    statuses: *mut Fint,
) -> c_int {
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
        unsafe {
            requests::MPI_Testall(
                c.len() as c_int,
                c.as_mut_ptr(),
                &mut done,
                statuses_ignore(),
            )
        }
    };
    if statuses_valid(rc) {
        // SAFETY: the program's array and LOGICAL.
        unsafe {
            requests_c2f(&c, requests);
            put(flag, c_int::from(done != 0));
        }
    }
    rc
}

/// `MPI_Waitany` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn waitany(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    status: *mut Fint,
) -> c_int {
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
}

/// `MPI_Testany` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn testany(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    flag: *mut Fint,
    status: *mut Fint,
) -> c_int {
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
}

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

/// `MPI_Waitsome` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn waitsome(
    incount: *const Fint,
    requests: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut Fint,
) -> c_int {
    // SAFETY: the program's arguments.
    unsafe {
        some(
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

/// `MPI_Testsome` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn testsome(
    incount: *const Fint,
    requests: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut Fint,
) -> c_int {
    // SAFETY: the program's arguments.
    unsafe {
        some(
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

/// `MPI_Request_get_status` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn request_get_status(
    request: *const Fint,
    flag: *mut Fint,
    status: *mut Fint,
) -> c_int {
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
}

/// `MPI_Request_free` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn request_free(request: *mut Fint) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let mut r = unsafe { request_f2c(int!(request)) };
    // SAFETY: our request copy.
    let rc = unsafe { requests::MPI_Request_free(&mut r) };
    if rc == 0 {
        // SAFETY: the program's request.
        unsafe { put(request, request_c2f(r)) };
    }
    rc
}

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

// ------------------------------------------------------------ collectives

/// `MPI_Barrier` for Open MPI's Fortran (and MPICH's `use mpi_f08`).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn barrier(comm: *const Fint) -> c_int {
    // SAFETY: a converted handle.
    unsafe { coll::MPI_Barrier(comm_f2c(int!(comm))) }
}

/// `MPI_Bcast` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn bcast(
    buf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
) -> c_int {
    // SAFETY: the program's buffer, converted handles.
    unsafe {
        coll::MPI_Bcast(
            buffer(buf) as *mut c_void,
            int!(count),
            type_f2c(int!(datatype)),
            int!(root),
            comm_f2c(int!(comm)),
        )
    }
}

/// `MPI_Allreduce` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    op: *const Fint,
    comm: *const Fint,
) -> c_int {
    // SAFETY: the program's buffers, converted handles.
    unsafe {
        coll::MPI_Allreduce(
            buffer(sendbuf),
            buffer(recvbuf) as *mut c_void,
            int!(count),
            type_f2c(int!(datatype)),
            op_f2c(int!(op)),
            comm_f2c(int!(comm)),
        )
    }
}

/// `MPI_Reduce` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    op: *const Fint,
    root: *const Fint,
    comm: *const Fint,
) -> c_int {
    // SAFETY: the program's buffers, converted handles.
    unsafe {
        coll::MPI_Reduce(
            buffer(sendbuf),
            buffer(recvbuf) as *mut c_void,
            int!(count),
            type_f2c(int!(datatype)),
            op_f2c(int!(op)),
            int!(root),
            comm_f2c(int!(comm)),
        )
    }
}

/// `MPI_Reduce_scatter_block` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: *const Fint,
    datatype: *const Fint,
    op: *const Fint,
    comm: *const Fint,
) -> c_int {
    // SAFETY: the program's buffers, converted handles.
    unsafe {
        coll::MPI_Reduce_scatter_block(
            buffer(sendbuf),
            buffer(recvbuf) as *mut c_void,
            int!(recvcount),
            type_f2c(int!(datatype)),
            op_f2c(int!(op)),
            comm_f2c(int!(comm)),
        )
    }
}

/// The Fortran shape of MPI_Gather and MPI_Scatter (with `root`) and of
/// MPI_Allgather and MPI_Alltoall (without), for Open MPI's Fortran.
macro_rules! two_buffer_collective {
    ($(#[$doc:meta])* $name:ident, $c:ident $(, $root:ident)?) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null).
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(super) unsafe fn $name(
            sendbuf: *const c_void,
            sendcount: *const Fint,
            sendtype: *const Fint,
            recvbuf: *mut c_void,
            recvcount: *const Fint,
            recvtype: *const Fint,
            $($root: *const Fint,)?
            comm: *const Fint,
        ) -> c_int {
            // SAFETY: the program's buffers, converted handles.
            unsafe {
                coll::$c(
                    buffer(sendbuf),
                    int!(sendcount),
                    type_f2c(int!(sendtype)),
                    buffer(recvbuf) as *mut c_void,
                    int!(recvcount),
                    type_f2c(int!(recvtype)),
                    $(int!($root),)?
                    comm_f2c(int!(comm)),
                )
            }
        }
    };
}

two_buffer_collective!(
    /// `MPI_Gather` for Open MPI's Fortran.
    gather, MPI_Gather, root
);
two_buffer_collective!(
    /// `MPI_Scatter` for Open MPI's Fortran.
    scatter, MPI_Scatter, root
);
two_buffer_collective!(
    /// `MPI_Allgather` for Open MPI's Fortran.
    allgather, MPI_Allgather
);
two_buffer_collective!(
    /// `MPI_Alltoall` for Open MPI's Fortran.
    alltoall, MPI_Alltoall
);

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

/// A C call that answers one integer about a communicator (rank, size,
/// remote size), for Open MPI's Fortran: the handle converted, the answer
/// written back only on success.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
unsafe fn comm_integer(
    comm: *const Fint,
    out: *mut Fint,
    call: unsafe extern "C" fn(crate::mpi_glue::MPI_Comm, *mut c_int) -> c_int,
) -> c_int {
    let mut v: c_int = 0;
    // SAFETY: a converted handle, our out-integer.
    let rc = unsafe { call(comm_f2c(int!(comm)), &mut v) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(out, v) };
    }
    rc
}

/// `MPI_Comm_rank` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_rank(comm: *const Fint, rank: *mut Fint) -> c_int {
    // SAFETY: forwarded.
    unsafe { comm_integer(comm, rank, comms::MPI_Comm_rank) }
}

/// `MPI_Comm_size` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_size(comm: *const Fint, size: *mut Fint) -> c_int {
    // SAFETY: forwarded.
    unsafe { comm_integer(comm, size, comms::MPI_Comm_size) }
}

/// `MPI_Comm_remote_size` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_remote_size(comm: *const Fint, size: *mut Fint) -> c_int {
    // SAFETY: forwarded.
    unsafe { comm_integer(comm, size, comms::MPI_Comm_remote_size) }
}

/// `MPI_Comm_test_inter` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_test_inter(comm: *const Fint, flag: *mut Fint) -> c_int {
    let mut f: c_int = 0;
    // SAFETY: a converted handle, our flag.
    let rc = unsafe { comms::MPI_Comm_test_inter(comm_f2c(int!(comm)), &mut f) };
    if rc == 0 {
        // SAFETY: the program's LOGICAL.
        unsafe { put(flag, c_int::from(f != 0)) };
    }
    rc
}

/// `MPI_Comm_compare` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_compare(
    comm1: *const Fint,
    comm2: *const Fint,
    result: *mut Fint,
) -> c_int {
    let mut r: c_int = 0;
    // SAFETY: converted handles, our out-integer.
    let rc =
        unsafe { comms::MPI_Comm_compare(comm_f2c(int!(comm1)), comm_f2c(int!(comm2)), &mut r) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(result, r) };
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

//! MPI 4's large-count point-to-point calls (`MPI_Send_c`, …), which MPICH 4
//! has and Open MPI 4.1 does not (compiled only where `mpi.h` declares
//! them; mpi4py 4 on MPICH uses them). On an Isthmus communicator the count
//! must fit an `int` (the bridge's element counts are checked against it
//! anyway) and the call goes to the ordinary form; elsewhere to `PMPI_*_c`.

use std::ffi::{c_int, c_void};

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request, MPI_Status};
use crate::pt2pt;
use crate::state::bridge_comm;

/// `count` as an `int`, or the error raised on `comm`.
fn small(count: ffi::MPI_Count, comm: MPI_Comm, call: &str) -> Result<c_int, c_int> {
    c_int::try_from(count).map_err(|_| {
        let e = BridgeError::InvalidArgument(format!(
            "count {count} does not fit an int, which is what the bridge carries"
        ));
        errors::fail(comm, call, &e)
    })
}

macro_rules! send_c {
    ($name:ident, $pmpi:ident, $small:path) => {
        /// # Safety
        /// As the MPI function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: ffi::MPI_Count,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
        ) -> c_int {
            if bridge_comm(comm).is_none() {
                // SAFETY: the program's arguments, passed on.
                return unsafe { ffi::$pmpi(buf, count, datatype, dest, tag, comm) };
            }
            match small(count, comm, stringify!($name)) {
                // SAFETY: forwarded.
                Ok(n) => unsafe { $small(buf, n, datatype, dest, tag, comm) },
                Err(code) => code,
            }
        }
    };
}

send_c!(MPI_Send_c, PMPI_Send_c, pt2pt::MPI_Send);
send_c!(MPI_Ssend_c, PMPI_Ssend_c, pt2pt::MPI_Ssend);
send_c!(MPI_Rsend_c, PMPI_Rsend_c, pt2pt::MPI_Rsend);
send_c!(MPI_Bsend_c, PMPI_Bsend_c, pt2pt::MPI_Bsend);

macro_rules! isend_c {
    ($name:ident, $pmpi:ident, $small:path) => {
        /// # Safety
        /// As the MPI function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: ffi::MPI_Count,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            if bridge_comm(comm).is_none() {
                // SAFETY: the program's arguments, passed on.
                return unsafe { ffi::$pmpi(buf, count, datatype, dest, tag, comm, request) };
            }
            match small(count, comm, stringify!($name)) {
                // SAFETY: forwarded.
                Ok(n) => unsafe { $small(buf, n, datatype, dest, tag, comm, request) },
                Err(code) => code,
            }
        }
    };
}

isend_c!(MPI_Isend_c, PMPI_Isend_c, pt2pt::MPI_Isend);
isend_c!(MPI_Issend_c, PMPI_Issend_c, pt2pt::MPI_Issend);
isend_c!(MPI_Irsend_c, PMPI_Irsend_c, pt2pt::MPI_Irsend);
isend_c!(MPI_Ibsend_c, PMPI_Ibsend_c, pt2pt::MPI_Ibsend);

/// # Safety
/// As `MPI_Recv_c`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_c(
    buf: *mut c_void,
    count: ffi::MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    if bridge_comm(comm).is_none() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Recv_c(buf, count, datatype, source, tag, comm, status) };
    }
    match small(count, comm, "MPI_Recv_c") {
        // SAFETY: forwarded.
        Ok(n) => unsafe { pt2pt::MPI_Recv(buf, n, datatype, source, tag, comm, status) },
        Err(code) => code,
    }
}

/// # Safety
/// As `MPI_Irecv_c`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv_c(
    buf: *mut c_void,
    count: ffi::MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if bridge_comm(comm).is_none() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Irecv_c(buf, count, datatype, source, tag, comm, request) };
    }
    match small(count, comm, "MPI_Irecv_c") {
        // SAFETY: forwarded.
        Ok(n) => unsafe { pt2pt::MPI_Irecv(buf, n, datatype, source, tag, comm, request) },
        Err(code) => code,
    }
}

/// # Safety
/// As `MPI_Sendrecv_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Sendrecv_c(
    sendbuf: *const c_void,
    sendcount: ffi::MPI_Count,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: ffi::MPI_Count,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    if bridge_comm(comm).is_none() {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Sendrecv_c(
                sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                recvtag, comm, status,
            )
        };
    }
    let counts = small(sendcount, comm, "MPI_Sendrecv_c")
        .and_then(|s| small(recvcount, comm, "MPI_Sendrecv_c").map(|r| (s, r)));
    match counts {
        // SAFETY: forwarded.
        Ok((s, r)) => unsafe {
            pt2pt::MPI_Sendrecv(
                sendbuf, s, sendtype, dest, sendtag, recvbuf, r, recvtype, source, recvtag, comm,
                status,
            )
        },
        Err(code) => code,
    }
}

/// # Safety
/// As `MPI_Sendrecv_replace_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Sendrecv_replace_c(
    buf: *mut c_void,
    count: ffi::MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    if bridge_comm(comm).is_none() {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Sendrecv_replace_c(
                buf, count, datatype, dest, sendtag, source, recvtag, comm, status,
            )
        };
    }
    match small(count, comm, "MPI_Sendrecv_replace_c") {
        // SAFETY: forwarded.
        Ok(n) => unsafe {
            pt2pt::MPI_Sendrecv_replace(
                buf, n, datatype, dest, sendtag, source, recvtag, comm, status,
            )
        },
        Err(code) => code,
    }
}

/// # Safety
/// As `MPI_Mrecv_c`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv_c(
    buf: *mut c_void,
    count: ffi::MPI_Count,
    datatype: MPI_Datatype,
    message: *mut ffi::MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: the program's message handle.
    if message.is_null() || !pt2pt::is_taken(unsafe { *message }) {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Mrecv_c(buf, count, datatype, message, status) };
    }
    // The count was checked against int when the message was probed on a
    // bridge communicator; a larger one cannot be received whole anyway.
    let n = c_int::try_from(count).unwrap_or(c_int::MAX);
    // SAFETY: forwarded.
    unsafe { pt2pt::MPI_Mrecv(buf, n, datatype, message, status) }
}

/// # Safety
/// As `MPI_Imrecv_c`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv_c(
    buf: *mut c_void,
    count: ffi::MPI_Count,
    datatype: MPI_Datatype,
    message: *mut ffi::MPI_Message,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: the program's message handle.
    if message.is_null() || !pt2pt::is_taken(unsafe { *message }) {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Imrecv_c(buf, count, datatype, message, request) };
    }
    let n = c_int::try_from(count).unwrap_or(c_int::MAX);
    // SAFETY: forwarded.
    unsafe { pt2pt::MPI_Imrecv(buf, n, datatype, message, request) }
}

//! `MPI_Isendrecv` and `MPI_Isendrecv_replace` (MPI 4.0) on Isthmus
//! communicators: the receive and the send are posted at once through the
//! interposed `MPI_Irecv` and `MPI_Isend` (which dispatch on the
//! communicator: the bridge, or natively within a merged communicator's
//! job), and one request of `requests` (a `Polled` operation) completes
//! when both halves have, with the receive's status. The replace form
//! sends from a copy of the buffer's span taken at the call, so the
//! receive may overwrite the buffer at once.

// MPI 4 calls: only where the mpi.h has them (MPICH 4, not Open MPI 4.1).
#![cfg_attr(not(isthmus_large_count), allow(dead_code))]

use std::ffi::{c_int, c_void};

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::errors;
use crate::mpi_glue::{
    empty_status, outcome_of, request_null, MPI_Comm, MPI_Datatype, MPI_Request, Outcome,
};
use crate::requests::{self, Op, Polled};
use crate::state::{BridgeComm, Peers};

/// Both halves of one `MPI_Isendrecv`.
struct Pair {
    send: MPI_Request,
    recv: MPI_Request,
    /// The receive's outcome once it completed.
    received: Option<Outcome>,
    /// The replace form's copy of the data sent (read by the send until it
    /// completes; a `Vec`'s heap block does not move with `Pair`).
    _copy: Option<Vec<u8>>,
    call: &'static str,
}

// SAFETY: the requests are ours; the copy is owned; the operation is used
// by the thread completing its request (see `requests::Entry`).
unsafe impl Send for Pair {}

/// Tests `req` with the interposed `MPI_Test` (so a bridge or schedule
/// request progresses as any other): its status once complete.
fn test(req: &mut MPI_Request, call: &str, half: &str) -> Result<Option<Outcome>, BridgeError> {
    if *req == request_null() {
        return Ok(Some(Outcome::empty()));
    }
    let mut flag = 0;
    let mut st = empty_status();
    // SAFETY: our request and status.
    let rc = unsafe { crate::requests::MPI_Test(req, &mut flag, &mut st) };
    if rc != 0 {
        return Err(BridgeError::InvalidArgument(format!(
            "{call}: its {half} failed ({})",
            errors::error_string(rc)
        )));
    }
    Ok((flag != 0).then(|| outcome_of(&st, 0)))
}

impl Polled for Pair {
    fn poll(&mut self) -> Option<Result<Outcome, BridgeError>> {
        if self.received.is_none() {
            match test(&mut self.recv, self.call, "receive") {
                Ok(o) => self.received = o,
                Err(e) => return Some(Err(e)),
            }
        }
        if self.send != request_null() {
            match test(&mut self.send, self.call, "send") {
                Ok(Some(_)) => self.send = request_null(),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
        match self.received {
            Some(o) if self.send == request_null() => Some(Ok(o)),
            _ => None,
        }
    }

    fn cancel(&mut self) -> bool {
        // A send cannot be cancelled: the pair completes as posted.
        false
    }
}

/// Posts both halves and returns the pair's request into `request`.
///
/// # Safety
/// As `MPI_Isendrecv` (the send's buffer is `send.0`).
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn post(
    call: &'static str,
    send: (*const c_void, c_int, MPI_Datatype, c_int, c_int),
    recv: (*mut c_void, c_int, MPI_Datatype, c_int, c_int),
    copy: Option<Vec<u8>>,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let mut pair = Pair {
        send: request_null(),
        recv: request_null(),
        received: None,
        _copy: copy,
        call,
    };
    let (rbuf, rn, rt, source, rtag) = recv;
    // SAFETY: the program's receive arguments, to the interposed call.
    let rc = unsafe { crate::pt2pt::MPI_Irecv(rbuf, rn, rt, source, rtag, comm, &mut pair.recv) };
    if rc != 0 {
        return rc;
    }
    let (sbuf, sn, st, dest, stag) = send;
    // SAFETY: the program's send arguments (or our copy), as above.
    let rc = unsafe { crate::pt2pt::MPI_Isend(sbuf, sn, st, dest, stag, comm, &mut pair.send) };
    if rc != 0 {
        // The receive stays posted: MPI leaves a failed call's effects
        // unspecified; free it so that it does not take a later message.
        // SAFETY: our request.
        unsafe { crate::requests::MPI_Cancel(&mut pair.recv) };
        // SAFETY: as above.
        unsafe { crate::requests::MPI_Request_free(&mut pair.recv) };
        return rc;
    }
    match requests::start(Op::Polled(Box::new(pair)), comm, call) {
        Ok(r) => {
            // SAFETY: the program's out-pointer.
            unsafe { *request = r };
            0
        }
        Err(rc) => errors::raise(comm, rc),
    }
}

/// `MPI_Isendrecv` on any Isthmus communicator.
///
/// # Safety
/// As the MPI function.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn isendrecv_any(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let send = (sendbuf, sendcount, sendtype, dest, sendtag);
    let recv = (recvbuf, recvcount, recvtype, source, recvtag);
    // SAFETY: forwarded.
    unsafe { post("MPI_Isendrecv", send, recv, None, comm, request) }
}

/// An `MPI_Aint` as a pointer offset.
#[allow(clippy::useless_conversion)] // MPI_Aint: isize in Open MPI, i64 (long) in MPICH
fn offset(a: ffi::MPI_Aint) -> isize {
    isize::try_from(a).unwrap_or(0)
}

/// A copy of the bytes `count` elements of `dt` at `buf` span, and the
/// address in it that stands for `buf`.
///
/// # Safety
/// `buf` addresses `count` elements of `dt`.
unsafe fn span_copy(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
) -> Result<(Vec<u8>, *const c_void), c_int> {
    let (mut lb, mut extent, mut true_lb, mut true_extent) = (0, 0, 0, 0);
    // SAFETY: the program's datatype; outputs ours.
    let rc = unsafe { ffi::PMPI_Type_get_extent(dt, &mut lb, &mut extent) };
    if rc != 0 {
        return Err(rc);
    }
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Type_get_true_extent(dt, &mut true_lb, &mut true_extent) };
    if rc != 0 {
        return Err(rc);
    }
    let n = isize::try_from(count.max(0)).unwrap_or(0);
    let span = match n {
        0 => 0,
        n => (n - 1)
            .checked_mul(offset(extent))
            .and_then(|x| x.checked_add(offset(true_extent)))
            .unwrap_or(0),
    };
    let len = usize::try_from(span).unwrap_or(0);
    let start = buf.cast::<u8>().wrapping_offset(offset(true_lb));
    let mut copy = vec![0u8; len];
    if len > 0 {
        // SAFETY: the elements' bytes lie in [start, start + span) (the
        // caller's contract); `copy` holds `len` bytes of ours.
        unsafe { std::ptr::copy_nonoverlapping(start, copy.as_mut_ptr(), len) };
    }
    let at = copy
        .as_ptr()
        .wrapping_offset(-offset(true_lb))
        .cast::<c_void>();
    Ok((copy, at))
}

/// `MPI_Isendrecv_replace` on any Isthmus communicator.
///
/// # Safety
/// As the MPI function.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn replace_any(
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = "MPI_Isendrecv_replace";
    // SAFETY: the program's buffer of `count` elements of `dt`.
    let (copy, at) = match unsafe { span_copy(buf, count, dt) } {
        Ok(c) => c,
        Err(rc) => return errors::raise(comm, rc),
    };
    let send = (at, count, dt, dest, sendtag);
    let recv = (buf, count, dt, source, recvtag);
    // SAFETY: forwarded; `at` addresses the copy, kept with the request.
    unsafe { post(call, send, recv, Some(copy), comm, request) }
}

/// The bodies on an Isthmus intercommunicator and on a merged or mixed one.
macro_rules! bodies {
    ($bridge:ident, $merged:ident, $any:ident, ($($arg:ident: $ty:ty),*)) => {
        /// On an Isthmus intercommunicator.
        ///
        /// # Safety
        /// As the MPI function.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $bridge(_bc: &BridgeComm, $($arg: $ty),*) -> c_int {
            // SAFETY: forwarded.
            unsafe { $any($($arg),*) }
        }

        /// On a merged communicator or a mixed intercommunicator.
        ///
        /// # Safety
        /// As the MPI function.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $merged(_mc: &dyn Peers, $($arg: $ty),*) -> c_int {
            // SAFETY: forwarded.
            unsafe { $any($($arg),*) }
        }
    };
}

bodies!(isendrecv, merged_isendrecv, isendrecv_any, (
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int,
    recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, source: c_int, recvtag: c_int,
    comm: MPI_Comm, request: *mut MPI_Request
));
bodies!(isendrecv_replace, merged_isendrecv_replace, replace_any, (
    buf: *mut c_void, count: c_int, dt: MPI_Datatype, dest: c_int, sendtag: c_int,
    source: c_int, recvtag: c_int, comm: MPI_Comm, request: *mut MPI_Request
));

include!(concat!(env!("OUT_DIR"), "/shells_isendrecv.rs"));

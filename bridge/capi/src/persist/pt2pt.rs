//! The persistent point-to-point calls (`MPI_Send_init`, `Bsend_init`,
//! `Ssend_init`, `Rsend_init`, `Recv_init`) on Isthmus communicators: a
//! stored call that `MPI_Start` issues as the interposed nonblocking call
//! (`MPI_Isend`, `MPI_Ibsend`, `MPI_Issend`, `MPI_Irsend`, `MPI_Irecv`),
//! which dispatches on the communicator as it always does. On a merged
//! communicator (or a mixed intercommunicator) a send to a rank of this
//! job, or to `MPI_PROC_NULL`, is the MPI's own persistent request on the
//! handle (native speed, no stored call); a receive is stored either way
//! (its status must name a merged rank: the receive from a rank of this job
//! is then the native receive `merged::pt2pt` wraps).

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::datatype::HeldType;
use crate::errors;
use crate::mpi_glue::{proc_null, MPI_Comm, MPI_Datatype, MPI_Request};
use crate::persist::table::{self, Starter};
use crate::state::{BridgeComm, Peers, Place};

/// A nonblocking send entry point (`MPI_Isend`'s prototype).
type Isend = unsafe extern "C" fn(
    *const c_void,
    c_int,
    MPI_Datatype,
    c_int,
    c_int,
    MPI_Comm,
    *mut MPI_Request,
) -> c_int;

/// Records `start` as a new persistent request of `comm` into `request`.
///
/// # Safety
/// `request` is the program's writable `MPI_Request`.
pub(crate) unsafe fn stored(
    comm: MPI_Comm,
    call: &'static str,
    start: Starter,
    request: *mut MPI_Request,
) -> c_int {
    match table::create(start, comm) {
        Ok(r) => {
            // SAFETY: the program's out-pointer (this function's contract).
            unsafe { *request = r };
            0
        }
        Err(rc) => {
            tracing::debug!(call, rc, "persistent request not created");
            errors::raise(comm, rc)
        }
    }
}

/// Holds `dt` for the persistent request's life (the program may free it
/// once the request is made, as MPI allows).
fn hold(dt: MPI_Datatype, comm: MPI_Comm, call: &'static str) -> Result<HeldType, c_int> {
    HeldType::hold(dt).map_err(|e| errors::fail(comm, call, &e))
}

/// A stored send: `isend` with the call's arguments at each start.
///
/// # Safety
/// As `MPI_Send_init`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn send_stored(
    call: &'static str,
    isend: Isend,
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let held = match hold(dt, comm, call) {
        Ok(h) => h,
        Err(rc) => return rc,
    };
    let start: Starter = Box::new(move |req| {
        // SAFETY: the buffer and communicator of the persistent request,
        // valid until it is freed (MPI's rule); `req` is the table's.
        unsafe { isend(buf, count, held.get(), dest, tag, comm, req) }
    });
    // SAFETY: forwarded.
    unsafe { stored(comm, call, start, request) }
}

/// On a merged communicator or mixed intercommunicator: the MPI's own
/// persistent send on the handle when `dest` is a rank of this job (or
/// `MPI_PROC_NULL`), else the stored call.
///
/// # Safety
/// As `MPI_Send_init`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn send_in(
    mc: &dyn Peers,
    (call, isend, native): (&'static str, Isend, Isend),
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let local = if dest == proc_null() {
        Some(dest)
    } else {
        match u32::try_from(dest).ok().and_then(|r| mc.order().place(r)) {
            Some(Place::Local(r)) => Some(c_int::try_from(r).unwrap_or(c_int::MAX)),
            Some(Place::Remote(_)) => None,
            None => return errors::raise(comm, ffi::MPI_ERR_RANK as c_int),
        }
    };
    match local {
        // SAFETY: the program's arguments, the rank the handle's.
        Some(r) => unsafe { native(buf, count, dt, r, tag, comm, request) },
        // SAFETY: forwarded.
        None => unsafe { send_stored(call, isend, buf, count, dt, dest, tag, comm, request) },
    }
}

/// The bodies of a persistent send mode: on an Isthmus intercommunicator
/// (`$body`) and on a merged or mixed one (`$merged`).
macro_rules! send_init {
    ($body:ident, $merged:ident, $name:literal, $isend:path, $native:path) => {
        #[doc = concat!("`", $name, "` on an Isthmus intercommunicator.")]
        ///
        /// # Safety
        /// As the MPI function.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $body(
            _bc: &BridgeComm,
            buf: *const c_void,
            count: c_int,
            dt: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            // SAFETY: forwarded.
            unsafe { send_stored($name, $isend, buf, count, dt, dest, tag, comm, request) }
        }

        #[doc = concat!("`", $name, "` on a merged communicator or a mixed intercommunicator.")]
        ///
        /// # Safety
        /// As the MPI function.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $merged(
            mc: &dyn Peers,
            buf: *const c_void,
            count: c_int,
            dt: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            let how: (&'static str, Isend, Isend) = ($name, $isend, $native);
            // SAFETY: forwarded.
            unsafe { send_in(mc, how, buf, count, dt, dest, tag, comm, request) }
        }
    };
}

send_init!(
    send_init,
    merged_send_init,
    "MPI_Send_init",
    crate::pt2pt::MPI_Isend,
    ffi::PMPI_Send_init
);
send_init!(
    ssend_init,
    merged_ssend_init,
    "MPI_Ssend_init",
    crate::pt2pt::MPI_Issend,
    ffi::PMPI_Ssend_init
);
send_init!(
    bsend_init,
    merged_bsend_init,
    "MPI_Bsend_init",
    crate::pt2pt::MPI_Ibsend,
    ffi::PMPI_Bsend_init
);
send_init!(
    rsend_init,
    merged_rsend_init,
    "MPI_Rsend_init",
    crate::pt2pt::MPI_Irsend,
    ffi::PMPI_Rsend_init
);

/// A stored receive: `MPI_Irecv` with the call's arguments at each start.
///
/// # Safety
/// As `MPI_Recv_init`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn recv_stored(
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = "MPI_Recv_init";
    let held = match hold(dt, comm, call) {
        Ok(h) => h,
        Err(rc) => return rc,
    };
    let start: Starter = Box::new(move |req| {
        // SAFETY: as for a stored send.
        unsafe { crate::pt2pt::MPI_Irecv(buf, count, held.get(), source, tag, comm, req) }
    });
    // SAFETY: forwarded.
    unsafe { stored(comm, call, start, request) }
}

/// `MPI_Recv_init` on an Isthmus intercommunicator.
///
/// # Safety
/// As the MPI function.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn recv_init(
    _bc: &BridgeComm,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { recv_stored(buf, count, dt, source, tag, comm, request) }
}

/// `MPI_Recv_init` on a merged communicator or a mixed intercommunicator.
///
/// # Safety
/// As the MPI function.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn merged_recv_init(
    _mc: &dyn Peers,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { recv_stored(buf, count, dt, source, tag, comm, request) }
}

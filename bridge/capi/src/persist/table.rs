//! The persistent requests of Isthmus communicators (`MPI_Send_init`,
//! `MPI_Bcast_init`, … on an intercommunicator between jobs, a merged or a
//! mixed one): each is a stored call, which `MPI_Start` issues as the
//! matching nonblocking call (whose request is the operation's while the
//! persistent request is active).
//!
//! The program's handle is a real persistent request of the MPI (a receive
//! from `MPI_PROC_NULL` on `MPI_COMM_SELF`, never started), so that it is
//! unique, and inactive wherever the MPI sees it. The interposed waits and
//! tests put each active persistent request's operation in its place (and
//! `MPI_REQUEST_NULL` for an inactive one, which MPI completes at once with
//! an empty status, as it does an inactive persistent request), then mark
//! those whose operation completed inactive, leaving the program's handle
//! as it was.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use mpi::ffi;

use crate::mpi_glue::{byte, proc_null, request_key, request_null, MPI_Comm, MPI_Request};

/// Issues the stored call as its nonblocking form, writing that call's
/// request to the pointer; MPI's return code.
pub(crate) type Starter = Box<dyn FnMut(*mut MPI_Request) -> c_int>;

struct Persistent {
    start: Starter,
    /// The nonblocking call's request while the persistent request is active.
    active: Option<MPI_Request>,
    /// Where errors are raised.
    comm: MPI_Comm,
}

// SAFETY: the stored call's raw pointers are the program's buffers and
// handles, which MPI's rules keep valid until the persistent request is
// freed; a request is used by one thread at a time (MPI's rule), and the
// table's lock orders the accesses.
unsafe impl Send for Persistent {}

static TABLE: Mutex<Option<HashMap<usize, Persistent>>> = Mutex::new(None);
static COUNT: AtomicUsize = AtomicUsize::new(0);

fn table() -> std::sync::MutexGuard<'static, Option<HashMap<usize, Persistent>>> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// True if any persistent request of ours exists (one relaxed load).
pub fn any() -> bool {
    COUNT.load(Ordering::Relaxed) != 0
}

/// A new inactive persistent request issuing `start` at each `MPI_Start`.
pub(crate) fn create(start: Starter, comm: MPI_Comm) -> Result<MPI_Request, c_int> {
    let mut proxy = request_null();
    // SAFETY: a zero-byte receive from MPI_PROC_NULL, never started; `proxy`
    // is ours to write.
    let rc = unsafe {
        ffi::PMPI_Recv_init(
            std::ptr::null_mut(),
            0,
            byte(),
            proc_null(),
            0,
            ffi::RSMPI_COMM_SELF,
            &mut proxy,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    table().get_or_insert_with(HashMap::new).insert(
        request_key(proxy),
        Persistent {
            start,
            active: None,
            comm,
        },
    );
    COUNT.fetch_add(1, Ordering::Relaxed);
    Ok(proxy)
}

/// What stands for `r` in a wait or a test: its operation while active,
/// `MPI_REQUEST_NULL` while inactive; `None` if `r` is not ours.
pub fn stand_in(r: MPI_Request) -> Option<MPI_Request> {
    if !any() {
        return None;
    }
    let t = table();
    let p = t.as_ref()?.get(&request_key(r))?;
    Some(p.active.unwrap_or_else(request_null))
}

/// After a wait or test: `op`, what stood for `r`, as the call left it
/// (`MPI_REQUEST_NULL` once completed: `r` is inactive again).
pub fn settle(r: MPI_Request, op: MPI_Request) {
    if let Some(p) = table().as_mut().and_then(|t| t.get_mut(&request_key(r))) {
        p.active = (op != request_null()).then_some(op);
    }
}

/// `MPI_Start` of `r` if it is ours: the stored call's return code (an
/// active request is not started again: `MPI_ERR_REQUEST`, raised through
/// its communicator's error handler).
pub fn start(r: MPI_Request) -> Option<c_int> {
    if !any() {
        return None;
    }
    let key = request_key(r);
    let mut p = table().as_mut()?.remove(&key)?;
    let rc = if p.active.is_some() {
        crate::errors::raise(p.comm, ffi::MPI_ERR_REQUEST as c_int)
    } else {
        let mut op = request_null();
        let rc = (p.start)(&mut op);
        if rc == 0 {
            p.active = Some(op);
        }
        rc
    };
    table().get_or_insert_with(HashMap::new).insert(key, p);
    Some(rc)
}

/// Forgets `r` (`MPI_Request_free`): its operation if it is active; `None`
/// if `r` is not ours.
pub fn remove(r: MPI_Request) -> Option<Option<MPI_Request>> {
    if !any() {
        return None;
    }
    let p = table().as_mut()?.remove(&request_key(r))?;
    COUNT.fetch_sub(1, Ordering::Relaxed);
    Some(p.active)
}

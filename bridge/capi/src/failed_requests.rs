//! Requests that failed and whose error was not reported yet, by request
//! key: the bridge's requests (`requests`) and nonblocking collectives'
//! generalized requests. Kept apart so that a schedule (`nbc`) whose step
//! is another schedule's request can take that error itself (a leaf
//! module: `requests` drives `nbc`, so `nbc` cannot reach into it).

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::mpi_glue::MPI_Comm;

/// A failed request's error: its code and the communicator to raise it on.
pub(crate) struct Failure {
    pub(crate) code: c_int,
    pub(crate) comm: MPI_Comm,
}
// SAFETY: `comm` is an MPI handle, a process-wide value; it is only read
// by the thread that finishes the request (taken out of the table first).
unsafe impl Send for Failure {}
static FAILED: Mutex<Option<HashMap<usize, Failure>>> = Mutex::new(None);
static FAILED_COUNT: AtomicUsize = AtomicUsize::new(0);

/// The error of a finished bridge request not yet reported (and forgets it).
pub(crate) fn take_failure(key: usize) -> Option<Failure> {
    if FAILED_COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let f = FAILED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_mut()?
        .remove(&key);
    if f.is_some() {
        FAILED_COUNT.fetch_sub(1, Ordering::Relaxed);
    }
    f
}

pub(crate) fn record_failure(key: usize, f: Failure) {
    let fresh = FAILED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, f)
        .is_none();
    if fresh {
        FAILED_COUNT.fetch_add(1, Ordering::Relaxed);
    }
}

/// No failure waits to be reported (one relaxed load).
pub(crate) fn none() -> bool {
    FAILED_COUNT.load(Ordering::Relaxed) == 0
}

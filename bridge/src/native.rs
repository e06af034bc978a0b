//! A collective's native step — the part that runs in the job's own MPI —
//! waited for as [`crate::wait`] says, not as that MPI waits.
//!
//! An MPI's blocking collective spins on its core until done, yielding it
//! only when the MPI knows the host is oversubscribed (Open MPI's
//! `mpi_yield_when_idle`, set by `mpirun` when a job has more ranks than
//! slots). Two jobs coupled through Isthmus never know each other: each
//! sees its own ranks fit the cores. With 2+2 ranks on two cores the ranks
//! waiting in their native broadcast then keep the cores from the leaders
//! that do the bridge's part, and every step waits for a time slice: a
//! 2+2 Barrier took 10–30 ms where Open MPI's own intercommunicator
//! (one job, which knows it is oversubscribed) takes 10–20 µs; with both
//! jobs yielding it took 19 µs. So the native steps are started as the
//! MPI's nonblocking operation (`PMPI_I*`, straight to the MPI, past any
//! interposition) and tested in a loop that yields the core between tests
//! (and in `ISTHMUS_WAIT=block`, sleeps a little longer each time).
//!
//! With an MPI whose blocking calls can be made to yield the core while
//! they wait (Open MPI's `opal_progress_set_yield_when_idle`, which
//! libisthmus finds), a step is the blocking collective instead, the MPI
//! yielding for the step's length only ([`step`], [`use_steps`]): its
//! nonblocking ones are other algorithms, and slower ones (Open MPI 4.1's
//! libnbc `MPI_Ireduce` of 1 MiB between two ranks: 480-550 µs against
//! 105-110 for `MPI_Reduce`, `MPI_Ibcast` of 64 KiB 26 µs against 10).

use std::ffi::c_int;
use std::sync::OnceLock;

use mpi::datatype::{BufferMut, Equivalence};
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::Communicator;

use crate::error::{BridgeError, Result};
use crate::wait::Pause;

/// Completes `req`, a request of the job's own MPI, testing it and pausing
/// between tests as `ISTHMUS_WAIT` says. Returns MPI's error code.
///
/// # Safety
/// `req` is an active request of the linked MPI (or its null request)
/// whose buffers stay valid until this returns.
pub unsafe fn wait_request(req: &mut ffi::MPI_Request) -> c_int {
    let mut pause = Pause::new();
    loop {
        let mut flag: c_int = 0;
        // SAFETY: `req` is an active request (the caller's contract) and
        // `flag` is ours; the status is ignored (MPI's own constant).
        let rc = unsafe { ffi::PMPI_Test(req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
        if rc != 0 || flag != 0 {
            return rc;
        }
        pause.pause();
    }
}

/// An MPI's switch for yielding the core while it waits (Open MPI's
/// `opal_progress_set_yield_when_idle`): sets it, returns what it was.
pub type YieldSwitch = unsafe extern "C" fn(bool) -> bool;

/// How the native steps run (see the module's comment).
#[derive(Clone, Copy, Debug)]
pub enum Steps {
    /// The nonblocking form, tested in a loop that yields or sleeps as
    /// `ISTHMUS_WAIT` says (the default).
    Nonblocking,
    /// The blocking form, the MPI's yield switched on for its length.
    BlockingYielding(YieldSwitch),
    /// The blocking form as the MPI waits (`ISTHMUS_WAIT=poll`: a core per
    /// rank, nobody to yield to).
    Blocking,
}

/// The steps' way, chosen once by the library that knows its MPI.
static STEPS: OnceLock<Steps> = OnceLock::new();

/// Chooses how [`step`] runs, once (a later choice is ignored and
/// returned false).
///
/// # Safety
/// A [`Steps::BlockingYielding`] switch is callable as its type says, from
/// any thread, for as long as the process runs (a function of the MPI).
pub unsafe fn use_steps(steps: Steps) -> bool {
    STEPS.set(steps).is_ok()
}

/// How [`step`] runs (as [`use_steps`] chose).
pub fn steps() -> Steps {
    STEPS.get().copied().unwrap_or(Steps::Nonblocking)
}

/// A native step: `blocking` (the MPI's blocking call, returning its code)
/// where [`use_steps`] chose it, else `start` (the same operation's
/// nonblocking form) waited for as [`run`] does.
///
/// # Safety
/// As [`run`], for both closures.
pub unsafe fn step(
    start: impl FnOnce(&mut ffi::MPI_Request) -> c_int,
    blocking: impl FnOnce() -> c_int,
) -> c_int {
    match steps() {
        Steps::Blocking => blocking(),
        Steps::BlockingYielding(switch) => {
            // SAFETY: `use_steps`'s contract. Another thread's step may
            // switch it back meanwhile: then this one spins, no worse.
            let before = unsafe { switch(true) };
            let rc = blocking();
            // SAFETY: as above.
            unsafe { switch(before) };
            rc
        }
        // SAFETY: forwarded (this function's contract).
        Steps::Nonblocking => unsafe { run(start) },
    }
}

/// Starts a nonblocking operation of the job's own MPI with `start` (which
/// fills in the request and returns MPI's code) and waits for it as
/// [`wait_request`] does. Returns MPI's error code.
///
/// # Safety
/// Every buffer and handle `start` passes to MPI stays valid until this
/// returns.
pub unsafe fn run(start: impl FnOnce(&mut ffi::MPI_Request) -> c_int) -> c_int {
    // SAFETY: reading an immutable constant of rsmpi's C shim.
    let mut req = unsafe { ffi::RSMPI_REQUEST_NULL };
    let rc = start(&mut req);
    if rc != 0 {
        return rc;
    }
    // SAFETY: `start` made `req` active over buffers that outlive this
    // call (the caller's contract).
    unsafe { wait_request(&mut req) }
}

fn check(rc: c_int, what: &str) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(BridgeError::Protocol(format!(
            "{what} in the job's own MPI failed (MPI error {rc})"
        )))
    }
}

/// A barrier of `local`'s ranks.
pub(crate) fn barrier<C: Communicator>(local: &C) -> Result<()> {
    let comm = local.as_raw();
    // SAFETY: `comm` is a live communicator of ours; no buffer.
    let rc = unsafe {
        step(
            |req| ffi::PMPI_Ibarrier(comm, req),
            || ffi::PMPI_Barrier(comm),
        )
    };
    check(rc, "a barrier")
}

/// `buf` from `local`'s rank `root` to every rank of `local`.
pub(crate) fn bcast<C: Communicator, B: BufferMut + ?Sized>(
    local: &C,
    root: c_int,
    buf: &mut B,
) -> Result<()> {
    let comm = local.as_raw();
    let (ptr, count, dtype) = (buf.pointer_mut(), buf.count(), buf.as_datatype().as_raw());
    // SAFETY: `buf` is borrowed mutably for the whole call, `count` elements
    // of `dtype` (rsmpi's description of it); `comm` is live.
    let rc = unsafe {
        step(
            |req| ffi::PMPI_Ibcast(ptr, count, dtype, root, comm, req),
            || ffi::PMPI_Bcast(ptr, count, dtype, root, comm),
        )
    };
    check(rc, "a broadcast")
}

/// `local`'s rank `root` scatters `parts` (`sizes[i]` bytes at `displs[i]`
/// for rank `i`; read at the root only) into each rank's `part`.
pub(crate) fn scatterv_bytes<C: Communicator>(
    local: &C,
    root: c_int,
    parts: Option<(&[u8], &[c_int], &[c_int])>,
    part: &mut [u8],
) -> Result<()> {
    let comm = local.as_raw();
    let byte = u8::equivalent_datatype().as_raw();
    let recv_count = c_int::try_from(part.len())
        .map_err(|_| BridgeError::InvalidArgument("a share of 2 GiB or more".into()))?;
    let (send, sizes, displs) = match parts {
        Some((all, sizes, displs)) => (all.as_ptr(), sizes.as_ptr(), displs.as_ptr()),
        None => (std::ptr::null(), std::ptr::null(), std::ptr::null()),
    };
    let recv = part.as_mut_ptr();
    // SAFETY: at the root `all`, `sizes` and `displs` are borrowed for the
    // whole call and describe ranges of `all` (the caller computed them
    // from its length); elsewhere MPI reads none of them. `part` is
    // borrowed mutably for the whole call.
    let rc = unsafe {
        step(
            |req| {
                ffi::PMPI_Iscatterv(
                    send.cast(),
                    sizes,
                    displs,
                    byte,
                    recv.cast(),
                    recv_count,
                    byte,
                    root,
                    comm,
                    req,
                )
            },
            || {
                ffi::PMPI_Scatterv(
                    send.cast(),
                    sizes,
                    displs,
                    byte,
                    recv.cast(),
                    recv_count,
                    byte,
                    root,
                    comm,
                )
            },
        )
    };
    check(rc, "a scatter")
}

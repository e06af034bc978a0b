//! The native steps of the collectives across jobs: one collective of
//! the job's own MPI, each as its blocking call or as its nonblocking one
//! waited for by Isthmus (`isthmus_bridge::native::step` chooses), and
//! what chooses. With Open MPI the blocking collectives are taken, Open
//! MPI made to yield the core while it waits for the step's length only
//! (`opal_progress_set_yield_when_idle`, what its own `mpirun` switches on
//! for a whole oversubscribed job): its nonblocking ones, libnbc's, are
//! other and slower algorithms (a 1 MiB `MPI_Ireduce` between two ranks
//! 480-550 µs against 105-110 µs). The program's own Open MPI calls keep
//! Open MPI's setting: switched on for the whole run, a two-rank 8-byte
//! `MPI_Allreduce` took 0.9-1.1 µs instead of 0.3. MPICH's blocking calls
//! spin on their core (Debian's 4.0 has no switch that makes them yield),
//! so its steps stay nonblocking, tested in a loop that yields.

use std::ffi::{c_int, c_void, CStr};

use isthmus_bridge::native::{step, steps, use_steps, Steps, YieldSwitch};
use isthmus_bridge::wait::{mode, WaitMode};
use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Op};

/// Chooses how the native steps wait (at `MPI_Init`): with Open MPI, its
/// blocking collectives, yielding while they wait (`ISTHMUS_WAIT=adaptive`,
/// the default) or spinning (`poll`: a core per rank); else, and under
/// `block`, the nonblocking ones in Isthmus's loop.
pub(crate) fn choose() {
    let chosen = match mode() {
        WaitMode::Block => Steps::Nonblocking,
        WaitMode::Poll if is_open_mpi() => Steps::Blocking,
        WaitMode::Poll => Steps::Nonblocking,
        WaitMode::Adaptive => {
            open_mpi_yield_switch().map_or(Steps::Nonblocking, Steps::BlockingYielding)
        }
    };
    // SAFETY: a switch is Open MPI's own function of that type, in a
    // library the process keeps loaded (libmpi's dependency).
    unsafe { use_steps(chosen) };
}

/// Whether the linked MPI is Open MPI.
fn is_open_mpi() -> bool {
    crate::mpi_glue::library_version().is_some_and(|v| v.starts_with("Open MPI"))
}

/// Open MPI's `opal_progress_set_yield_when_idle` (in its libopen-pal, 4.x
/// and 5.x), when the linked MPI is Open MPI and the symbol is found.
fn open_mpi_yield_switch() -> Option<YieldSwitch> {
    if !is_open_mpi() {
        return None;
    }
    const NAME: &CStr = c"opal_progress_set_yield_when_idle";
    // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
    let mut found: *mut c_void = unsafe { libc::dlsym(libc::RTLD_DEFAULT, NAME.as_ptr()) };
    // A program that loaded libmpi privately (Python's extension modules)
    // has it out of the global scope: ask the library itself, loaded only.
    for lib in [c"libopen-pal.so.40", c"libopen-pal.so.80"] {
        if !found.is_null() {
            break;
        }
        // SAFETY: RTLD_NOLOAD loads nothing: a handle to a library already
        // in the process, or null.
        let handle = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if !handle.is_null() {
            // SAFETY: a live handle and a NUL-terminated name.
            found = unsafe { libc::dlsym(handle, NAME.as_ptr()) };
            // SAFETY: our handle's reference only; the library stays
            // loaded (libmpi needs it), and so does the symbol found.
            unsafe { libc::dlclose(handle) };
        }
    }
    // SAFETY: Open MPI's `bool opal_progress_set_yield_when_idle(bool)`,
    // the type `YieldSwitch` declares (C's bool is Rust's).
    (!found.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, YieldSwitch>(found) })
}

/// One function per collective: `name(args)` runs `blocking(args)` or
/// `nonblocking(args, &mut req)` waited for.
macro_rules! steps {
    ($($(#[$doc:meta])* $name:ident: $blocking:ident / $nonblocking:ident ($($arg:ident: $ty:ty),*);)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// As the MPI call: every buffer, array and handle is valid for
        /// it until this returns.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the caller's contract, for whichever form runs.
            unsafe {
                step(
                    move |req| ffi::$nonblocking($($arg,)* req),
                    move || ffi::$blocking($($arg),*),
                )
            }
        }
    )*};
}

steps! {
    /// `MPI_Comm_dup` (MPICH's blocking one spins in its progress engine
    /// until every rank has arrived, keeping a core from the ranks that
    /// are still on their way).
    comm_dup: PMPI_Comm_dup / PMPI_Comm_idup(comm: MPI_Comm, out: *mut MPI_Comm);
    /// `MPI_Barrier`.
    barrier: PMPI_Barrier / PMPI_Ibarrier(comm: MPI_Comm);
    /// `MPI_Bcast`.
    bcast: PMPI_Bcast / PMPI_Ibcast(
        buf: *mut c_void, count: c_int, dt: MPI_Datatype, root: c_int, comm: MPI_Comm
    );
    /// `MPI_Reduce` as the MPI does it (see [`reduce`]).
    reduce_by_mpi: PMPI_Reduce / PMPI_Ireduce(
        send: *const c_void, recv: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op,
        root: c_int, comm: MPI_Comm
    );
    /// `MPI_Scan`.
    scan: PMPI_Scan / PMPI_Iscan(
        send: *const c_void, recv: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op,
        comm: MPI_Comm
    );
    /// `MPI_Exscan`.
    exscan: PMPI_Exscan / PMPI_Iexscan(
        send: *const c_void, recv: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op,
        comm: MPI_Comm
    );
    /// `MPI_Gather`.
    gather: PMPI_Gather / PMPI_Igather(
        send: *const c_void, scount: c_int, sdt: MPI_Datatype, recv: *mut c_void, rcount: c_int,
        rdt: MPI_Datatype, root: c_int, comm: MPI_Comm
    );
    /// `MPI_Gatherv`.
    gatherv: PMPI_Gatherv / PMPI_Igatherv(
        send: *const c_void, scount: c_int, sdt: MPI_Datatype, recv: *mut c_void,
        rcounts: *const c_int, displs: *const c_int, rdt: MPI_Datatype, root: c_int,
        comm: MPI_Comm
    );
    /// `MPI_Scatter`.
    scatter: PMPI_Scatter / PMPI_Iscatter(
        send: *const c_void, scount: c_int, sdt: MPI_Datatype, recv: *mut c_void, rcount: c_int,
        rdt: MPI_Datatype, root: c_int, comm: MPI_Comm
    );
    /// `MPI_Scatterv`.
    scatterv: PMPI_Scatterv / PMPI_Iscatterv(
        send: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: MPI_Datatype,
        recv: *mut c_void, rcount: c_int, rdt: MPI_Datatype, root: c_int, comm: MPI_Comm
    );
    /// `MPI_Allgather`.
    allgather: PMPI_Allgather / PMPI_Iallgather(
        send: *const c_void, scount: c_int, sdt: MPI_Datatype, recv: *mut c_void, rcount: c_int,
        rdt: MPI_Datatype, comm: MPI_Comm
    );
    /// `MPI_Allgatherv`.
    allgatherv: PMPI_Allgatherv / PMPI_Iallgatherv(
        send: *const c_void, scount: c_int, sdt: MPI_Datatype, recv: *mut c_void,
        rcounts: *const c_int, displs: *const c_int, rdt: MPI_Datatype, comm: MPI_Comm
    );
    /// `MPI_Alltoall`.
    alltoall: PMPI_Alltoall / PMPI_Ialltoall(
        send: *const c_void, scount: c_int, sdt: MPI_Datatype, recv: *mut c_void, rcount: c_int,
        rdt: MPI_Datatype, comm: MPI_Comm
    );
    /// `MPI_Alltoallv`.
    alltoallv: PMPI_Alltoallv / PMPI_Ialltoallv(
        send: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: MPI_Datatype,
        recv: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: MPI_Datatype,
        comm: MPI_Comm
    );
}

/// `MPI_Reduce`: where the steps are the MPI's nonblocking calls (MPICH;
/// any MPI under `ISTHMUS_WAIT=block`), a large reduction Isthmus's loops
/// compute, in a job of two ranks, goes by `native_reduce`'s tree of
/// point-to-point messages (the MPI's own reduce is slow there: see that
/// module); else the MPI's.
///
/// # Safety
/// As `MPI_Reduce`, on a private native side (see `native_reduce`).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn reduce(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if matches!(steps(), Steps::Nonblocking) && crate::native_reduce::takes(count, dt, op, comm) {
        // SAFETY: forwarded (this function's contract).
        return unsafe { crate::native_reduce::reduce(send, recv, count, dt, op, root, comm) };
    }
    // SAFETY: forwarded.
    unsafe { reduce_by_mpi(send, recv, count, dt, op, root, comm) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linked with Open MPI (the tests' usual flavour), the switch is found
    /// and switches; linked with another MPI there is none.
    #[test]
    fn open_mpi_s_yield_switch_is_found_and_switches() {
        let Some(switch) = open_mpi_yield_switch() else {
            assert!(
                !is_open_mpi(),
                "Open MPI without opal_progress_set_yield_when_idle"
            );
            return;
        };
        // SAFETY: Open MPI's function, which only sets a flag (before
        // MPI_Init too).
        unsafe {
            let before = switch(true);
            assert!(switch(false));
            assert!(!switch(before));
        }
    }
}

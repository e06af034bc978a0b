//! The native steps of the collectives across jobs: one collective of
//! the job's own MPI, each as its blocking call or as its nonblocking one
//! waited for by Isthmus (`isthmus_bridge::native::step` chooses), and
//! what chooses: before `MPI_Init`, Open MPI is made to yield the core
//! while it waits in a blocking call (`mpi_yield_when_idle`, which its
//! `mpirun` sets only when a job has more ranks than slots; a program's
//! own setting wins), and its blocking collectives are then taken (its nonblocking ones, libnbc's,
//! are other and slower algorithms: a 1 MiB `MPI_Ireduce` between two
//! ranks 480-550 µs against 105-110 µs). MPICH's blocking calls spin on
//! their core (Debian's 4.0 has no knob that makes them yield), so its
//! steps stay nonblocking, tested in a loop that yields.

use std::ffi::{c_int, c_void, OsStr};

use isthmus_bridge::native::{step, use_blocking_steps};
use isthmus_bridge::wait::{mode, WaitMode};
use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Op};

/// Open MPI's variable for `mpi_yield_when_idle`.
const OMPI_YIELD: &str = "OMPI_MCA_mpi_yield_when_idle";

/// Chooses how the native steps wait, before the MPI initialises (it reads
/// its variables then): with Open MPI, sets `mpi_yield_when_idle` unless
/// the program's environment says otherwise, and takes the blocking
/// collectives when it yields. Also under `ISTHMUS_WAIT=poll`, whose waits
/// yield every few hundred looks too (a yield with nobody to yield to
/// costs a system call). Under `block` the nonblocking ones stay: they
/// sleep between tests.
pub(crate) fn before_init() {
    if mode() == WaitMode::Block || !is_open_mpi() {
        return;
    }
    let blocking = match std::env::var_os(OMPI_YIELD) {
        Some(v) => yes(&v),
        None => {
            // Before MPI_Init no thread of the MPI runs yet, and the
            // program's own rarely read the environment then; glibc's
            // setenv never frees a string a concurrent getenv could hold.
            std::env::set_var(OMPI_YIELD, "1");
            true
        }
    };
    use_blocking_steps(blocking);
}

/// Whether an Open MPI boolean variable says true (its spellings).
fn yes(v: &OsStr) -> bool {
    let v = v.to_string_lossy().trim().to_ascii_lowercase();
    matches!(v.as_str(), "1" | "true" | "t" | "yes" | "y" | "enabled")
}

/// Whether the linked MPI is Open MPI.
fn is_open_mpi() -> bool {
    crate::mpi_glue::library_version().is_some_and(|v| v.starts_with("Open MPI"))
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
    /// `MPI_Reduce`.
    reduce: PMPI_Reduce / PMPI_Ireduce(
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

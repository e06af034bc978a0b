//! What this process does when a peer's program aborts: a process it
//! shares a communicator with (in a world: any process of another part)
//! called `MPI_Abort`, and its ABORT notice came over the data path
//! (`isthmus_bridge::Engine::abort_peers`). This process then aborts too,
//! through its own MPI (`PMPI_Abort` on its native `MPI_COMM_WORLD`), so
//! that its launcher ends its whole job with the same error code, as it
//! would for an `MPI_Abort` of its own. A leaf: `state` installs it when
//! the bridge opens.

use std::ffi::c_int;
use std::io::Write as _;
use std::sync::Arc;

use isthmus_bridge::AbortHandler;
use mpi::ffi;

/// The handler the engine calls, on the thread that read the notice: this
/// process's MPI may be busy on another thread, but an abort does not wait
/// for it (both implementations' `PMPI_Abort` hand the job to their
/// launcher and exit).
pub fn handler() -> AbortHandler {
    Arc::new(|peer, code: c_int| {
        // One write: `eprintln!` writes its pieces one by one, and the
        // launcher may kill this process between two of them once a
        // sibling that read the same notice has aborted.
        let line = format!(
            "Isthmus: process {peer}, of a communicator this process shares, called \
             MPI_Abort with error code {code}: aborting this process too\n"
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
        // SAFETY: MPI is initialized (the engine runs between MPI_Init and
        // MPI_Finalize); the native world is MPI's predefined handle.
        unsafe { ffi::PMPI_Abort(ffi::RSMPI_COMM_WORLD, code) };
        // PMPI_Abort does not return; if it did, end anyway.
        std::process::exit(if code == 0 { 1 } else { code & 0xff });
    })
}

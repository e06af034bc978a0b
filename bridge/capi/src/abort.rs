//! `MPI_Abort` across jobs: before this job's MPI aborts it, every process
//! of the other jobs it shares the communicator with (in a world,
//! `ISTHMUS_WORLD`: every process of every other part, whatever the
//! communicator, as one MPI aborts its whole job) gets an ABORT notice over
//! the data path and aborts too (`crate::peer_abort`). The data path, not
//! the vmd or the resource manager: it works the same for parts started
//! by hand with each implementation's launcher.

use std::ffi::c_int;
use std::time::Duration;

use isthmus_bridge::InterComm;
use mpi::ffi;
use uuid::Uuid;

use crate::mpi_glue::MPI_Comm;
use crate::state;

/// How long the notices may take to be written (a connection may have to
/// be opened first) before this process aborts anyway.
const NOTICE_TIMEOUT: Duration = Duration::from_secs(5);

fn remote_processes(inter: &InterComm) -> impl Iterator<Item = Uuid> + '_ {
    (0..inter.remote_size()).filter_map(|r| inter.remote_process(r))
}

/// # Safety
/// As `MPI_Abort`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    let mut peers = crate::world::other_processes();
    if let Some(bc) = state::bridge_comm(comm) {
        peers.extend(remote_processes(&bc.inter));
    }
    if let Some(mc) = state::merged_comm(comm) {
        peers.extend(remote_processes(&mc.inter));
    }
    peers.sort();
    peers.dedup();
    if let (false, Some(b)) = (peers.is_empty(), state::opened()) {
        for (p, why) in b.engine().abort_peers(&peers, errorcode, NOTICE_TIMEOUT) {
            eprintln!("Isthmus: MPI_Abort: process {p} could not be told to abort: {why}");
        }
    }
    // SAFETY: the program's call, passed on (an Isthmus communicator's
    // handle is a native communicator of this job).
    unsafe { ffi::PMPI_Abort(comm, errorcode) }
}

//! `MPI_Finalize`: before MPI goes, the bridge's engine delivers what this
//! process sent over it (queued frames, messages announced to receivers
//! that have not matched them yet) and says goodbye (BYE) to every peer —
//! the engine's orderly shutdown, the same one a Rust program gets when it
//! drops its bridge (see `Engine::shutdown`). A send that completed is
//! thus received even when its sender finalizes first, as MPI requires;
//! what no peer took within `ISTHMUS_FINALIZE_TIMEOUT` is reported on
//! standard error, per peer. Notification subscriptions end first (their
//! callback threads stop).

use std::ffi::c_int;

use mpi::ffi;

use crate::state;

/// # Safety
/// As `MPI_Finalize`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    // A world's parts finalize together (src/world.rs); its error, if any,
    // went through the world's handler and is returned after finalizing.
    let world = crate::world::leave();
    // Only a bridge this process opened: finalizing must not connect to a vmd.
    if let Some(b) = state::opened() {
        // No callback runs once MPI is gone.
        crate::events::close_all();
        b.engine().shutdown();
    }
    // SAFETY: the program's call, passed on.
    let rc = unsafe { ffi::PMPI_Finalize() };
    if world != 0 {
        world
    } else {
        rc
    }
}

//! A nonblocking receive's datatype, kept alive until the receive
//! completes.
//!
//! MPI lets a program free a datatype right after posting a nonblocking
//! operation with it ("the datatype is not deallocated until pending
//! operations complete", MPI 4.0 §5.1.9), and the handle may then be reused
//! for another type. A bridge receive decodes into the user's buffer only
//! when it completes, so it holds a duplicate of a derived type (freed with
//! the request); a predefined type is never freed and is kept as it is.

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::info::is_named;
use crate::mpi_glue::MPI_Datatype;

pub struct HeldType {
    handle: MPI_Datatype,
    /// A duplicate of ours, freed on drop.
    owned: bool,
}

impl HeldType {
    /// Holds `dt` for a receive posted now.
    pub fn hold(dt: MPI_Datatype) -> Result<Self, BridgeError> {
        if is_named(dt) {
            return Ok(Self {
                handle: dt,
                owned: false,
            });
        }
        let mut dup = dt;
        // SAFETY: `dt` is the program's live datatype (it just posted a
        // receive with it); `dup` an out-handle.
        let rc = unsafe { ffi::PMPI_Type_dup(dt, &mut dup) };
        if rc != 0 {
            return Err(BridgeError::InvalidArgument(format!(
                "the receive's datatype could not be held (MPI_Type_dup: MPI error {rc})"
            )));
        }
        Ok(Self {
            handle: dup,
            owned: true,
        })
    }

    /// The handle to decode with.
    pub fn get(&self) -> MPI_Datatype {
        self.handle
    }
}

impl Drop for HeldType {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: our duplicate, freed once.
            unsafe { ffi::PMPI_Type_free(&mut self.handle) };
        }
    }
}

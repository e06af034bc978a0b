//! The world's predefined attributes (issue 19): once the parts of an
//! `ISTHMUS_WORLD` have met, `MPI_APPNUM` is the part's index,
//! `MPI_UNIVERSE_SIZE` the world's size and `MPI_TAG_UB` the smallest of
//! the parts' bounds. `src/world.rs` sets them at `MPI_Init`;
//! `MPI_Comm_get_attr` and `MPI_Attr_get` (src/appnum.rs) read
//! them. A leaf, so that both may use it.

use std::ffi::c_int;
use std::sync::OnceLock;

use mpi::ffi;

use crate::mpi_glue::{comm_key, MPI_Comm};

/// The values, at a fixed address: MPI hands out a pointer to each.
pub struct WorldAttrs {
    /// `comm_key(MPI_COMM_WORLD)`.
    pub world: usize,
    pub appnum: c_int,
    pub universe_size: c_int,
    pub tag_ub: c_int,
}

static ATTRS: OnceLock<WorldAttrs> = OnceLock::new();

/// Records the world's attributes (once; a second call changes nothing).
pub fn set(world: MPI_Comm, appnum: c_int, universe_size: c_int, tag_ub: c_int) {
    let _ = ATTRS.set(WorldAttrs {
        world: comm_key(world),
        appnum,
        universe_size,
        tag_ub,
    });
}

/// A predefined keyval as MPI's calls take it (Open MPI's are small enum
/// values, MPICH's fixed handles; both fit a `c_int`).
pub fn key(k: u32) -> Option<c_int> {
    c_int::try_from(k).ok()
}

/// The world's value of the predefined attribute `keyval` if `comm` is the
/// joined world and `keyval` one the world answers itself.
pub fn value(comm: MPI_Comm, keyval: c_int) -> Option<&'static c_int> {
    let a = ATTRS.get()?;
    if a.world != comm_key(comm) {
        return None;
    }
    let k = Some(keyval);
    if k == key(ffi::MPI_APPNUM) {
        Some(&a.appnum)
    } else if k == key(ffi::MPI_UNIVERSE_SIZE) {
        Some(&a.universe_size)
    } else if k == key(ffi::MPI_TAG_UB) {
        Some(&a.tag_ub)
    } else {
        None
    }
}

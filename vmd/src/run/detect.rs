//! A component's MPI implementation read from its binary, for files that
//! leave `impl` out (`isthmus_detect`, shared with libisthmus's
//! `MPI_Comm_spawn`): an unreadable or unknown one is an error asking for
//! `impl` in the file.

use std::path::Path;

use super::spec::Impl;

/// The implementation `program` was linked with.
pub fn implementation_of(program: &Path) -> Result<Impl, String> {
    let name = isthmus_detect::implementation_of(program)?;
    Impl::from_name(name)
        .ok_or_else(|| format!("{}: unknown implementation {name}", program.display()))
}

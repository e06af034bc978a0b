//! Launchers: how one implementation starts a job of `np` ranks. Each lives
//! in its own module behind [`Launcher`] (`spec`: the trait and what it
//! is given and returns); [`by_name`] is the registry.

use std::path::Path;

mod exec;
mod mpich;
mod openmpi;
mod spec;

pub use exec::Exec;
pub use mpich::Mpich;
pub use openmpi::OpenMpi;
pub use spec::{JobSpec, Launcher, Start};

/// The launchers this crate has, by implementation name.
pub fn by_name(name: &str) -> Option<Box<dyn Launcher>> {
    match name {
        "openmpi" => Some(Box::new(OpenMpi)),
        "mpich" => Some(Box::new(Mpich)),
        "exec" => Some(Box::new(Exec)),
        _ => None,
    }
}

/// Every implementation name [`by_name`] knows.
pub const NAMES: &[&str] = &["openmpi", "mpich", "exec"];

/// Whether `command` is an executable on `PATH` (or a path to one).
pub fn installed(command: &str) -> bool {
    crate::program::resolve(command, Path::new("/"), None).is_ok()
}

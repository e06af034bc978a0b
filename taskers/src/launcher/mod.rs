//! Launchers: how one implementation starts a job of `np` ranks. Each
//! family lives in its own module behind [`Launcher`] (`spec`: the trait and
//! what it is given and returns); [`by_name`] is the registry, and
//! `prefixed` the implementations installed in a prefix of their own (the
//! Python registry's Open MPI 5, MPICH 5 and Intel MPI, as scripts/mpi/),
//! `abi` the MPI 5.0 standard ABI's programs on the runtime the tasker's
//! `ISTHMUS_ABI_RUNTIME` (or the job's own) chooses.

use std::path::Path;

pub mod abi;
mod exec;
mod mpich;
mod openmpi;
mod prefixed;
mod spec;

pub use exec::Exec;
pub use mpich::Mpich;
pub use openmpi::OpenMpi;
pub use spec::{JobSpec, Launcher, Start};

/// The launcher of implementation `name`, or why there is none.
pub fn by_name(name: &str) -> Result<Box<dyn Launcher>, String> {
    match name {
        "openmpi" => Ok(Box::new(OpenMpi::debian())),
        "mpich" => Ok(Box::new(Mpich::debian())),
        "exec" => Ok(Box::new(Exec)),
        "abi" => Ok(Box::new(abi::launcher()?)),
        _ => prefixed::launcher(name).ok_or_else(|| {
            format!(
                "unknown implementation {name:?} (known: {})",
                NAMES.join(", ")
            )
        }),
    }
}

/// Every implementation name [`by_name`] knows.
pub const NAMES: &[&str] = &[
    "openmpi", "mpich", "exec", "openmpi5", "mpich5", "impi", "abi",
];

/// Whether `command` is an executable on `PATH` (or a path to one).
pub fn installed(command: &str) -> bool {
    crate::program::resolve(command, Path::new("/"), None).is_ok()
}

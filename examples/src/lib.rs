//! Shared bits of the example programs: MPI start-up and naming the MPI
//! library a job was built with.

use mpi::environment::Universe;

/// Initialises MPI with full thread support (the bridge's engine threads and
/// the application may both touch MPI for datatype work).
pub fn init_mpi() -> anyhow::Result<Universe> {
    let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Multiple)
        .ok_or_else(|| anyhow::anyhow!("MPI was already initialised"))?;
    if level != mpi::Threading::Multiple {
        eprintln!("warning: MPI gives thread level {level:?}, not Multiple");
    }
    Ok(universe)
}

/// "Open MPI" or "MPICH" (or the first words of the library's own name).
pub fn implementation() -> String {
    let v = mpi::environment::library_version().unwrap_or_default();
    if v.contains("Open MPI") {
        "Open MPI".into()
    } else if v.contains("MPICH") {
        "MPICH".into()
    } else {
        v.split([',', '\n'])
            .next()
            .unwrap_or("unknown MPI")
            .trim()
            .to_string()
    }
}

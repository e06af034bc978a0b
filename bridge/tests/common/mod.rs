//! What the in-process bridge tests share.

/// Typed sends ask MPI for datatype signatures, so MPI is initialised once
/// (as a singleton) for the whole test process and never finalised.
pub fn mpi() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        let (universe, _) =
            mpi::initialize_with_threading(mpi::Threading::Multiple).expect("MPI initialises once");
        std::mem::forget(universe);
    });
}

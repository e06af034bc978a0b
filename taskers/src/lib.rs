//! Taskers: processes that start jobs for one launcher (MPI implementation)
//! on behalf of their host's vmd, as PVM's taskers did after
//! `pvm_reg_tasker`.
//!
//! A tasker registers with its vmd over gRPC (`Tasker` stream) under an
//! implementation name, receives launch, signal and kill orders, and reports
//! acceptance, rank starts, output lines, rank exits and the launcher's exit.
//! Which room is which:
//!
//! * [`launcher`] — the [`launcher::Launcher`] trait and one module per
//!   launcher (Open MPI's `mpirun`, MPICH's `mpiexec`, plain exec). A new
//!   launcher (say Slurm's `srun`) is one more module and one line in
//!   [`launcher::by_name`]; nothing outside this crate changes.
//! * [`program`]  — finding the program to run, so a missing one is refused
//!   before anything starts.
//! * [`shim`]     — the rank shim: a tiny process between the launcher and each
//!   rank that reports the rank's pid and exit (code or signal) to the tasker,
//!   forwards signals, and kills the rank if the tasker dies.
//! * [`preload`]  — `libisthmus` for the jobs that ask for it (`MPI_Comm_spawn`'s
//!   children): found beside the tasker or given, preloaded by the shim.
//! * [`rank_reports`] — the tasker's Unix socket the shims report to.
//! * [`jobs`]     — the tasker's running jobs: processes, signals, kills.
//! * [`run_as`]   — a job runs as its owner: a root tasker drops to the
//!   owner's uid, gid and groups; another tasker runs only its own uid's jobs.
//! * [`tasker`]   — the registration stream and the loop tying it together.

pub mod jobs;
pub mod launcher;
pub mod preload;
pub mod program;
pub mod rank_reports;
pub mod run_as;
pub mod shim;
pub mod tasker;

/// Environment variables between the tasker, the launcher and the shim.
pub use isthmus_types::env::{
    JOB as ENV_JOB, RANK_VAR as ENV_RANK_VAR, TASKER_SOCKET as ENV_TASKER_SOCKET,
};
/// The argument that turns the tasker binary into the rank shim.
pub const SHIM_ARG: &str = "rank-shim";

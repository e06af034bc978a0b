//! What every launcher is: the [`Launcher`] trait, the job it is given
//! ([`JobSpec`]) and the processes it asks for ([`Start`]).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

/// A job as a launcher sees it.
pub struct JobSpec<'a> {
    pub job: u64,
    /// Resolved path of the program.
    pub program: &'a Path,
    pub args: &'a [String],
    pub np: u32,
    /// Every variable each rank must see (ISTHMUS_* included).
    pub env: &'a BTreeMap<String, String>,
}

/// One process the tasker starts for a job.
pub struct Start {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Set on this process in addition to the job's environment.
    pub env: Vec<(String, String)>,
    /// The rank, if this process is exactly one rank (its output then needs no tags).
    pub rank: Option<u32>,
}

pub trait Launcher: Send + Sync {
    /// The implementation name the tasker registers.
    fn implementation(&self) -> &str;
    /// The command it launches with (`mpirun.openmpi`, or a path into an
    /// implementation's prefix).
    fn command(&self) -> &str;
    /// The variable in which the launcher tells each process its rank.
    fn rank_variable(&self) -> &'static str;
    /// Whether this launcher can start `job` here: a sentence saying why
    /// not (the job is then refused, before any process starts).
    fn check(&self, _job: &JobSpec<'_>) -> Result<(), String> {
        Ok(())
    }
    /// The processes to start. `shim` is the command prefix that runs a rank
    /// under the rank shim; it goes before the program.
    fn plan(&self, job: &JobSpec<'_>, shim: &[OsString]) -> Vec<Start>;
    /// Splits a line of the launcher's output into the rank that wrote it
    /// (when the launcher tags lines) and the line itself.
    fn split_rank<'l>(&self, line: &'l str) -> (Option<u32>, &'l str) {
        (None, line)
    }
}

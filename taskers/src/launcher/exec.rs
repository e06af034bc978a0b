//! Plain exec: `np` copies of the program, each told its rank in
//! `ISTHMUS_RANK`. For serial programs and for jobs that need no MPI launcher.

use std::ffi::OsString;

use super::{JobSpec, Launcher, Start};

pub struct Exec;

/// Where an exec rank finds its rank.
pub use isthmus_types::env::RANK as ENV_RANK;

impl Launcher for Exec {
    fn implementation(&self) -> &str {
        "exec"
    }

    fn command(&self) -> &str {
        "exec"
    }

    fn rank_variable(&self) -> &'static str {
        ENV_RANK
    }

    fn plan(&self, job: &JobSpec<'_>, shim: &[OsString]) -> Vec<Start> {
        (0..job.np)
            .map(|rank| {
                let (program, rest) = match shim.split_first() {
                    Some((p, rest)) => (p.clone(), rest.to_vec()),
                    None => (job.program.into(), Vec::new()),
                };
                let mut args = rest;
                if !shim.is_empty() {
                    args.push(job.program.into());
                }
                args.extend(job.args.iter().map(OsString::from));
                Start {
                    program,
                    args,
                    env: vec![(ENV_RANK.to_string(), rank.to_string())],
                    rank: Some(rank),
                }
            })
            .collect()
    }
}

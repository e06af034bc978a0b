//! MPICH's family: `mpiexec -prepend-rank -n NP -genv VAR VALUE… shim program args`,
//! with Debian's MPICH 4.0 (`mpiexec.mpich`), or Hydra's `mpiexec.hydra` of
//! an MPICH 5 or an Intel MPI in a prefix (Intel's also needs `I_MPI_ROOT`).
//! `-prepend-rank` prefixes each line with `[rank] `; `-genv` hands the job's
//! variables to every rank.

use std::ffi::OsString;

use super::{JobSpec, Launcher, Start};

/// An implementation of MPICH's family: its name, its `mpiexec`, and the
/// variables its launcher needs.
pub struct Mpich {
    name: String,
    command: String,
    env: Vec<(String, String)>,
    /// Path-list variables whose directory goes first in every rank's
    /// value (the standard ABI's runtime library: `abi`).
    prepend: Vec<(String, String)>,
}

impl Mpich {
    /// Debian's MPICH 4.0.
    pub fn debian() -> Mpich {
        Mpich::in_prefix("mpich", "mpiexec.mpich".into(), Vec::new())
    }

    /// One named `name` whose launcher is `command`, run with `env`.
    pub fn in_prefix(name: &str, command: String, env: Vec<(String, String)>) -> Mpich {
        Mpich {
            name: name.into(),
            command,
            env,
            prepend: Vec::new(),
        }
    }

    /// The same, with `dir` first in every rank's `var` (a `:` list),
    /// ahead of the job's own value.
    pub fn with_prepended(mut self, var: &str, dir: String) -> Mpich {
        self.prepend.push((var.into(), dir));
        self
    }
}

impl Launcher for Mpich {
    fn implementation(&self) -> &str {
        &self.name
    }

    fn command(&self) -> &str {
        &self.command
    }

    fn rank_variable(&self) -> &'static str {
        "PMI_RANK"
    }

    fn plan(&self, job: &JobSpec<'_>, shim: &[OsString]) -> Vec<Start> {
        let mut args: Vec<OsString> = ["-prepend-rank", "-n"].iter().map(OsString::from).collect();
        args.push(job.np.to_string().into());
        for (k, v) in job.env {
            if !self.prepend.iter().any(|(var, _)| var == k) {
                args.extend(["-genv".into(), k.into(), v.into()]);
            }
        }
        for (var, dir) in &self.prepend {
            let value = match job.env.get(var).filter(|v| !v.is_empty()) {
                Some(more) => format!("{dir}:{more}"),
                None => dir.clone(),
            };
            args.extend(["-genv".into(), var.into(), value.into()]);
        }
        args.extend(shim.iter().cloned());
        args.push(job.program.into());
        args.extend(job.args.iter().map(OsString::from));
        vec![Start {
            program: self.command().into(),
            args,
            env: self.env.clone(),
            rank: None,
        }]
    }

    fn split_rank<'l>(&self, line: &'l str) -> (Option<u32>, &'l str) {
        // "[3] text"
        let Some(rest) = line.strip_prefix('[') else {
            return (None, line);
        };
        let Some((rank, text)) = rest.split_once(']') else {
            return (None, line);
        };
        let Ok(rank) = rank.parse::<u32>() else {
            return (None, line);
        };
        (Some(rank), text.strip_prefix(' ').unwrap_or(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_tagged_lines() {
        let mpich = Mpich::debian();
        assert_eq!(mpich.split_rank("[2] hi [x]"), (Some(2), "hi [x]"));
        assert_eq!(mpich.split_rank("[0]"), (Some(0), ""));
        assert_eq!(
            mpich.split_rank("[proxy:0] error"),
            (None, "[proxy:0] error")
        );
    }
}

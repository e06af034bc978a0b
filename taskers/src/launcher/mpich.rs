//! MPICH: `mpiexec.mpich -prepend-rank -n NP -genv VAR VALUE… shim program args`.
//! `-prepend-rank` prefixes each line with `[rank] `; `-genv` hands the job's
//! variables to every rank.

use std::ffi::OsString;

use super::{JobSpec, Launcher, Start};

pub struct Mpich;

impl Launcher for Mpich {
    fn implementation(&self) -> &'static str {
        "mpich"
    }

    fn command(&self) -> &'static str {
        "mpiexec.mpich"
    }

    fn rank_variable(&self) -> &'static str {
        "PMI_RANK"
    }

    fn plan(&self, job: &JobSpec<'_>, shim: &[OsString]) -> Vec<Start> {
        let mut args: Vec<OsString> = ["-prepend-rank", "-n"].iter().map(OsString::from).collect();
        args.push(job.np.to_string().into());
        for (k, v) in job.env {
            args.extend(["-genv".into(), k.into(), v.into()]);
        }
        args.extend(shim.iter().cloned());
        args.push(job.program.into());
        args.extend(job.args.iter().map(OsString::from));
        vec![Start {
            program: self.command().into(),
            args,
            env: Vec::new(),
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
        assert_eq!(Mpich.split_rank("[2] hi [x]"), (Some(2), "hi [x]"));
        assert_eq!(Mpich.split_rank("[0]"), (Some(0), ""));
        assert_eq!(
            Mpich.split_rank("[proxy:0] error"),
            (None, "[proxy:0] error")
        );
    }
}

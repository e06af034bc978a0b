//! Open MPI: `mpirun --oversubscribe --tag-output -n NP -x VAR… shim program args`,
//! with Debian's Open MPI 4.1 (`mpirun.openmpi`) or an Open MPI 5 in a
//! prefix (PRRTE's `mpirun`, the same options). `--tag-output` prefixes
//! each line with `[jobid,rank]<stdout>:` (Open MPI 5 adds a space); `-x`
//! passes the job's variables to every rank even where mpirun does not
//! forward the whole environment; running as root needs Open MPI's consent
//! variables.

use std::ffi::OsString;

use super::{JobSpec, Launcher, Start};

/// An Open MPI: its name among the implementations, its `mpirun`.
pub struct OpenMpi {
    name: String,
    command: String,
    /// Open MPI 5 writes a space after the tag's colon.
    tag_space: bool,
}

impl OpenMpi {
    /// Debian's Open MPI 4.1.
    pub fn debian() -> OpenMpi {
        OpenMpi {
            name: "openmpi".into(),
            command: "mpirun.openmpi".into(),
            tag_space: false,
        }
    }

    /// An Open MPI 5 named `name`, whose launcher is `command`.
    pub fn version5(name: &str, command: String) -> OpenMpi {
        OpenMpi {
            name: name.into(),
            command,
            tag_space: true,
        }
    }
}

impl Launcher for OpenMpi {
    fn implementation(&self) -> &str {
        &self.name
    }

    fn command(&self) -> &str {
        &self.command
    }

    fn rank_variable(&self) -> &'static str {
        "OMPI_COMM_WORLD_RANK"
    }

    fn plan(&self, job: &JobSpec<'_>, shim: &[OsString]) -> Vec<Start> {
        let mut args: Vec<OsString> = ["--oversubscribe", "--tag-output", "-n"]
            .iter()
            .map(OsString::from)
            .collect();
        args.push(job.np.to_string().into());
        let mut env = Vec::new();
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            env.push(("OMPI_ALLOW_RUN_AS_ROOT".to_string(), "1".to_string()));
            env.push((
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM".to_string(),
                "1".to_string(),
            ));
        }
        for var in job
            .env
            .keys()
            .map(String::as_str)
            .chain([crate::ENV_TASKER_SOCKET, crate::ENV_RANK_VAR])
        {
            args.push("-x".into());
            args.push(var.into());
        }
        args.extend(shim.iter().cloned());
        args.push(job.program.into());
        args.extend(job.args.iter().map(OsString::from));
        vec![Start {
            program: self.command().into(),
            args,
            env,
            rank: None,
        }]
    }

    fn split_rank<'l>(&self, line: &'l str) -> (Option<u32>, &'l str) {
        // "[1,3]<stdout>:text" / "[1,3]<stderr>:text"
        let Some(rest) = line.strip_prefix('[') else {
            return (None, line);
        };
        let Some((tag, text)) = rest.split_once("]<") else {
            return (None, line);
        };
        let Some((_, rank)) = tag.split_once(',') else {
            return (None, line);
        };
        let Ok(rank) = rank.parse::<u32>() else {
            return (None, line);
        };
        let Some((_, text)) = text.split_once(">:") else {
            return (None, line);
        };
        let text = match self.tag_space {
            true => text.strip_prefix(' ').unwrap_or(text),
            false => text,
        };
        (Some(rank), text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_tagged_lines() {
        let ompi = OpenMpi::debian();
        assert_eq!(
            ompi.split_rank("[1,3]<stdout>:hello: world"),
            (Some(3), "hello: world")
        );
        assert_eq!(ompi.split_rank("[1,0]<stdout>: x"), (Some(0), " x"));
        assert_eq!(ompi.split_rank("[1,0]<stderr>:"), (Some(0), ""));
        assert_eq!(
            ompi.split_rank("------ mpirun noticed"),
            (None, "------ mpirun noticed")
        );
        assert_eq!(ompi.split_rank("[x]<stdout>:y"), (None, "[x]<stdout>:y"));
        let ompi5 = OpenMpi::version5("openmpi5", "mpirun".into());
        assert_eq!(
            ompi5.split_rank("[1,2]<stdout>: hello 2"),
            (Some(2), "hello 2")
        );
        assert_eq!(ompi5.split_rank("[1,2]<stdout>:"), (Some(2), ""));
    }
}

//! The MPI 5.0 standard ABI (`abi`): a program built with `mpicc_abi`
//! needs only `libmpi_abi.so.1`, which several implementations ship, so its
//! runtime is this launcher's choice, not the binary's: the job's own
//! `ISTHMUS_ABI_RUNTIME` if its environment has one (`MPI_Comm_spawn` of an
//! ABI program puts the parent's runtime there, or the one the info key
//! `isthmus_impl` names: `abi-impi`), else the tasker's (its environment's
//! `ISTHMUS_ABI_RUNTIME`), else MPICH 5's. Either runtime is MPICH's family
//! (Hydra's `mpiexec.hydra` from the runtime's prefix, as `prefixed`);
//! every rank gets the runtime's `lib` first in `LD_LIBRARY_PATH`, ahead of
//! the run path the program was linked with (MPICH 5's, when MPICH 5's
//! `mpicc_abi` built it: a `RUNPATH`, which `LD_LIBRARY_PATH` overrides),
//! so that the chosen runtime's `libmpi_abi.so.1` is the one loaded.

use std::ffi::OsString;

use super::mpich::Mpich;
use super::prefixed::prefix;
use super::spec::{JobSpec, Launcher, Start};

/// The environment variable (the tasker's, or a job's) that chooses the runtime.
pub const RUNTIME_VAR: &str = "ISTHMUS_ABI_RUNTIME";
/// The runtimes an ABI program can be run by, the default first.
pub const RUNTIMES: &[&str] = &["mpich5", "impi"];

/// The `abi` launcher: one MPICH-family launcher per runtime, the
/// tasker's default apart.
pub struct Abi {
    default: (&'static str, Mpich),
    others: Vec<(&'static str, Mpich)>,
}

/// The `abi` launcher whose default runtime is the one
/// `ISTHMUS_ABI_RUNTIME` names (unset or empty: MPICH 5's), or why not.
pub fn launcher() -> Result<Abi, String> {
    let chosen = std::env::var(RUNTIME_VAR).unwrap_or_default();
    with_default(if chosen.is_empty() { "mpich5" } else { &chosen })
}

/// The `abi` launcher whose default runtime is `runtime` (one of [`RUNTIMES`]).
pub fn with_default(runtime: &str) -> Result<Abi, String> {
    let default = known(runtime)?;
    Ok(Abi {
        default: (default, on_runtime(default)),
        others: RUNTIMES
            .iter()
            .filter(|r| **r != default)
            .map(|r| (*r, on_runtime(r)))
            .collect(),
    })
}

/// `runtime` as one of [`RUNTIMES`], or the refusal naming the known ones.
fn known(runtime: &str) -> Result<&'static str, String> {
    RUNTIMES
        .iter()
        .find(|r| **r == runtime)
        .copied()
        .ok_or_else(|| {
            format!(
                "{RUNTIME_VAR}={runtime:?} is not a runtime of the MPI 5.0 standard ABI (known: {})",
                RUNTIMES.join(", ")
            )
        })
}

/// The launcher of ABI programs on `runtime`.
fn on_runtime(runtime: &str) -> Mpich {
    let p = prefix(runtime);
    let launcher_env = match runtime {
        "impi" => vec![("I_MPI_ROOT".into(), p.display().to_string())],
        _ => Vec::new(),
    };
    Mpich::in_prefix(
        "abi",
        p.join("bin/mpiexec.hydra").display().to_string(),
        launcher_env,
    )
    .with_prepended("LD_LIBRARY_PATH", p.join("lib").display().to_string())
}

impl Abi {
    /// The runtime for `job` and its launcher: the job's own
    /// `ISTHMUS_ABI_RUNTIME`, else the default; or why not (an unknown runtime).
    fn for_job(&self, job: &JobSpec<'_>) -> Result<(&'static str, &Mpich), String> {
        let Some(wanted) = job.env.get(RUNTIME_VAR).filter(|r| !r.is_empty()) else {
            return Ok((self.default.0, &self.default.1));
        };
        let wanted = known(wanted).map_err(|why| format!("the job's {why}"))?;
        std::iter::once(&self.default)
            .chain(&self.others)
            .find(|(r, _)| *r == wanted)
            .map(|(r, l)| (*r, l))
            .ok_or_else(|| format!("no launcher for the runtime {wanted}"))
    }

    /// The default runtime's launcher.
    fn default_runtime(&self) -> &Mpich {
        &self.default.1
    }
}

impl Launcher for Abi {
    fn implementation(&self) -> &str {
        "abi"
    }

    /// The default runtime's `mpiexec.hydra` (the one the tasker checks is installed).
    fn command(&self) -> &str {
        self.default_runtime().command()
    }

    fn rank_variable(&self) -> &'static str {
        self.default_runtime().rank_variable()
    }

    /// A job's runtime must be known, and installed here (the tasker
    /// checked its default's launcher when it started).
    fn check(&self, job: &JobSpec<'_>) -> Result<(), String> {
        let (runtime, l) = self.for_job(job)?;
        let installed = crate::program::resolve(l.command(), std::path::Path::new("/"), None);
        if runtime != self.default.0 && installed.is_err() {
            return Err(format!(
                "the job asks for the standard ABI on {runtime}, which is not installed here \
                 ({} not found)",
                l.command()
            ));
        }
        Ok(())
    }

    fn plan(&self, job: &JobSpec<'_>, shim: &[OsString]) -> Vec<Start> {
        // `check` refused a job whose runtime is unknown before its plan.
        self.for_job(job)
            .map(|(_, l)| l)
            .unwrap_or_else(|_| self.default_runtime())
            .plan(job, shim)
    }

    fn split_rank<'l>(&self, line: &'l str) -> (Option<u32>, &'l str) {
        self.default_runtime().split_rank(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::ffi::OsString;
    use std::path::Path;

    fn job(env: &BTreeMap<String, String>) -> JobSpec<'_> {
        JobSpec {
            job: 1,
            program: Path::new("/bin/true"),
            args: &[],
            np: 2,
            env,
        }
    }

    /// The `-genv` pairs of the launcher's command line for a job with `env`.
    fn genv(l: &Abi, env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let plan = l.plan(&job(env), &[]);
        let args: Vec<String> = plan
            .iter()
            .flat_map(|s| s.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect();
        args.windows(3)
            .filter(|w| w[0] == "-genv")
            .map(|w| (w[1].clone(), w[2].clone()))
            .collect()
    }

    /// The launcher program and whether it gets Intel's `I_MPI_ROOT`, for a
    /// job with `env`.
    fn started(l: &Abi, env: &BTreeMap<String, String>) -> (String, bool) {
        let plan = l.plan(&job(env), &[OsString::from("shim")]);
        (
            plan[0].program.to_string_lossy().into_owned(),
            plan[0].env.iter().any(|(k, _)| k == "I_MPI_ROOT"),
        )
    }

    #[test]
    fn each_runtime_puts_its_own_library_first() {
        for (runtime, root) in [("mpich5", "/mpich5"), ("impi", "/impi")] {
            let l = with_default(runtime).expect(runtime);
            assert_eq!(l.implementation(), "abi");
            assert!(
                l.command().ends_with(&format!("{root}/bin/mpiexec.hydra")),
                "{}",
                l.command()
            );
            let ld = genv(&l, &BTreeMap::new()).remove("LD_LIBRARY_PATH");
            assert!(
                ld.as_deref()
                    .is_some_and(|d| d.ends_with(&format!("{root}/lib"))),
                "{runtime}: {ld:?}"
            );
            // The job's own path stays, after the runtime's.
            let mine = BTreeMap::from([("LD_LIBRARY_PATH".to_string(), "/mine".to_string())]);
            let ld = genv(&l, &mine).remove("LD_LIBRARY_PATH").expect("set");
            assert!(
                ld.ends_with(&format!("{root}/lib:/mine")),
                "{runtime}: {ld}"
            );
            let (program, intel_root) = started(&l, &BTreeMap::new());
            assert!(program.ends_with(&format!("{root}/bin/mpiexec.hydra")));
            assert_eq!(intel_root, runtime == "impi", "{runtime}");
        }
    }

    /// `MPI_Comm_spawn`'s children of a parent on Intel MPI say so in their
    /// job's environment: that runtime, whatever the tasker's default.
    #[test]
    fn a_job_may_choose_its_runtime() {
        let l = with_default("mpich5").expect("mpich5");
        let impi = BTreeMap::from([(RUNTIME_VAR.to_string(), "impi".to_string())]);
        let (program, intel_root) = started(&l, &impi);
        assert!(program.ends_with("/impi/bin/mpiexec.hydra"), "{program}");
        assert!(intel_root);
        let ld = genv(&l, &impi).remove("LD_LIBRARY_PATH").expect("set");
        assert!(ld.ends_with("/impi/lib"), "{ld}");
        // Its default's name, or none, is the default.
        for env in [
            BTreeMap::from([(RUNTIME_VAR.to_string(), "mpich5".to_string())]),
            BTreeMap::from([(RUNTIME_VAR.to_string(), String::new())]),
        ] {
            assert!(l.check(&job(&env)).is_ok());
            assert!(started(&l, &env).0.ends_with("/mpich5/bin/mpiexec.hydra"));
        }
        // An unknown one is refused before the plan, by name.
        let bad = BTreeMap::from([(RUNTIME_VAR.to_string(), "openmpi5".to_string())]);
        let why = l.check(&job(&bad)).expect_err("refused");
        assert!(
            why.contains("the job's") && why.contains("openmpi5") && why.contains("mpich5, impi"),
            "{why}"
        );
    }

    #[test]
    fn an_unknown_runtime_is_refused_by_name() {
        let why = with_default("openmpi5").err().expect("refused");
        assert!(
            why.contains(RUNTIME_VAR) && why.contains("openmpi5") && why.contains("mpich5, impi"),
            "{why}"
        );
    }
}

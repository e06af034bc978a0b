//! The MPI 5.0 standard ABI (`abi`): a program built with `mpicc_abi`
//! needs only `libmpi_abi.so.1`, which several implementations ship, so its
//! runtime is this launcher's choice, not the binary's: MPICH 5's by
//! default, Intel MPI's when the tasker's environment says
//! `ISTHMUS_ABI_RUNTIME=impi` (`mpich5` names the default). Either is
//! MPICH's family (Hydra's `mpiexec.hydra` from the runtime's prefix, as
//! `prefixed`); every rank gets the runtime's `lib` first in
//! `LD_LIBRARY_PATH`, ahead of the run path the program was linked with
//! (MPICH 5's, when MPICH 5's `mpicc_abi` built it), so that the chosen
//! runtime's `libmpi_abi.so.1` is the one loaded.

use super::prefixed::prefix;
use super::Mpich;

/// The tasker's environment variable that chooses the runtime.
pub const RUNTIME_VAR: &str = "ISTHMUS_ABI_RUNTIME";
/// The runtimes an ABI program can be run by, the default first.
pub const RUNTIMES: &[&str] = &["mpich5", "impi"];

/// The `abi` launcher with the runtime `ISTHMUS_ABI_RUNTIME` names (unset
/// or empty: MPICH 5's), or why not.
pub fn launcher() -> Result<Mpich, String> {
    let chosen = std::env::var(RUNTIME_VAR).unwrap_or_default();
    with_runtime(if chosen.is_empty() { "mpich5" } else { &chosen })
}

/// The `abi` launcher run by `runtime` (one of [`RUNTIMES`]).
pub fn with_runtime(runtime: &str) -> Result<Mpich, String> {
    if !RUNTIMES.contains(&runtime) {
        return Err(format!(
            "{RUNTIME_VAR}={runtime:?} is not a runtime of the MPI 5.0 standard ABI (known: {})",
            RUNTIMES.join(", ")
        ));
    }
    let p = prefix(runtime);
    let launcher_env = match runtime {
        "impi" => vec![("I_MPI_ROOT".into(), p.display().to_string())],
        _ => Vec::new(),
    };
    Ok(Mpich::in_prefix(
        "abi",
        p.join("bin/mpiexec.hydra").display().to_string(),
        launcher_env,
    )
    .with_prepended("LD_LIBRARY_PATH", p.join("lib").display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launcher::{JobSpec, Launcher};
    use std::collections::BTreeMap;
    use std::ffi::OsString;
    use std::path::Path;

    /// The `-genv` pairs of the launcher's command line for a job with `env`.
    fn genv(l: &Mpich, env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let job = JobSpec {
            job: 1,
            program: Path::new("/bin/true"),
            args: &[],
            np: 2,
            env,
        };
        let plan = l.plan(&job, &[]);
        let args: Vec<String> = plan
            .iter()
            .flat_map(|s| s.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect();
        args.windows(3)
            .filter(|w| w[0] == "-genv")
            .map(|w| (w[1].clone(), w[2].clone()))
            .collect()
    }

    #[test]
    fn each_runtime_puts_its_own_library_first() {
        for (runtime, root) in [("mpich5", "/mpich5"), ("impi", "/impi")] {
            let l = with_runtime(runtime).expect(runtime);
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
            let plan = l.plan(
                &JobSpec {
                    job: 1,
                    program: Path::new("/bin/true"),
                    args: &[],
                    np: 1,
                    env: &BTreeMap::new(),
                },
                &[OsString::from("shim")],
            );
            let intel_root = plan[0].env.iter().any(|(k, _)| k == "I_MPI_ROOT");
            assert_eq!(intel_root, runtime == "impi", "{runtime}");
        }
    }

    #[test]
    fn an_unknown_runtime_is_refused_by_name() {
        let why = with_runtime("openmpi5").err().expect("refused");
        assert!(
            why.contains(RUNTIME_VAR) && why.contains("openmpi5") && why.contains("mpich5, impi"),
            "{why}"
        );
    }
}

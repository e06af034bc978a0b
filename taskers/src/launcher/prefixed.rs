//! The implementations that live in a prefix of their own rather than on
//! `PATH`: Open MPI 5, MPICH 5 and Intel MPI, which scripts/install-mpis.sh
//! installs from the Python registry into `$ISTHMUS_MPI_HOME/NAME`
//! (`/opt/isthmus/mpi/NAME`), or wherever `ISTHMUS_MPI_<NAME>` says — the
//! same names and places as scripts/mpi/NAME.sh, which builds their
//! libisthmus.

use std::path::PathBuf;

use super::{Launcher, Mpich, OpenMpi};

/// Where implementation `name` is installed.
pub(super) fn prefix(name: &str) -> PathBuf {
    let over = format!("ISTHMUS_MPI_{}", name.to_uppercase());
    std::env::var_os(over)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("ISTHMUS_MPI_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/opt/isthmus/mpi"))
                .join(name)
        })
}

/// The launcher of `name`, if it is one of these.
pub fn launcher(name: &str) -> Option<Box<dyn Launcher>> {
    let p = prefix(name);
    let command = |rel: &str| p.join(rel).display().to_string();
    match name {
        "openmpi5" => Some(Box::new(OpenMpi::version5(name, command("bin/mpirun")))),
        "mpich5" => Some(Box::new(Mpich::in_prefix(
            name,
            command("bin/mpiexec.hydra"),
            Vec::new(),
        ))),
        "impi" => Some(Box::new(Mpich::in_prefix(
            name,
            command("bin/mpiexec.hydra"),
            vec![("I_MPI_ROOT".into(), p.display().to_string())],
        ))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_is_found_in_its_prefix() {
        let l = launcher("impi").expect("impi");
        assert_eq!(l.implementation(), "impi");
        assert!(
            l.command().ends_with("/impi/bin/mpiexec.hydra"),
            "{}",
            l.command()
        );
        assert!(launcher("openmpi5").is_some() && launcher("mpich5").is_some());
        assert!(launcher("mpich6").is_none());
    }
}

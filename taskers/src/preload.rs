//! `libisthmus` for the jobs that ask for it: a job whose environment names
//! [`LIBISTHMUS`] (the children of `MPI_Comm_spawn`) gets the library of
//! the tasker's implementation in front of its MPI, without relinking. The
//! tasker puts the library's path in that variable, which the launcher
//! passes to the ranks like the job's others; the rank shim moves it into
//! the program's `LD_PRELOAD` only, so that the launcher and the shim
//! themselves never load it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use isthmus_types::env::LIBISTHMUS;

/// The tasker's library for `implementation`: `given` (its
/// `--libisthmus`) if set, else the first that exists of
/// `<bin>/../lib/isthmus/<impl>/libisthmus.so` (an installed prefix, as
/// scripts/install.sh lays it out) and `<bin>/../../<impl>/release/libisthmus.so`
/// (a build tree, `target/<flavour>/release`).
pub fn find(implementation: &str, given: Option<PathBuf>) -> Option<PathBuf> {
    if given.is_some() {
        return given;
    }
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?;
    let up = |n: usize| bin.ancestors().nth(n).map(Path::to_path_buf);
    [
        up(1).map(|p| p.join("lib/isthmus").join(implementation)),
        up(2).map(|p| p.join(implementation).join("release")),
    ]
    .into_iter()
    .flatten()
    .map(|dir| dir.join("libisthmus.so"))
    .find(|lib| lib.is_file())
}

/// A job's environment as its ranks get it: a request for the library is
/// answered with its path, or refused (the message) if this tasker has none.
pub fn answer(
    env: &mut BTreeMap<String, String>,
    implementation: &str,
    library: Option<&Path>,
) -> Result<(), String> {
    let Some(wanted) = env.get_mut(LIBISTHMUS) else {
        return Ok(());
    };
    match library {
        Some(lib) => {
            *wanted = lib.display().to_string();
            Ok(())
        }
        None => Err(format!(
            "the job asks for libisthmus, but the {implementation} tasker of this host has none \
             (start it with --libisthmus PATH)"
        )),
    }
}

/// The shim's part: the program (not the shim) preloads the library named
/// in [`LIBISTHMUS`], ahead of anything already in `LD_PRELOAD`.
pub fn into_program(cmd: &mut Command) {
    let Some(lib) = std::env::var_os(LIBISTHMUS).filter(|l| !l.is_empty()) else {
        return;
    };
    let mut preload = lib;
    if let Some(more) = std::env::var_os("LD_PRELOAD").filter(|l| !l.is_empty()) {
        preload.push(OsString::from(":"));
        preload.push(more);
    }
    cmd.env("LD_PRELOAD", preload).env_remove(LIBISTHMUS);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_gets_the_path_or_a_refusal_naming_the_flag() {
        let mut env = BTreeMap::from([(LIBISTHMUS.to_string(), "preload".to_string())]);
        answer(&mut env, "mpich", Some(Path::new("/l/libisthmus.so"))).unwrap();
        assert_eq!(env[LIBISTHMUS], "/l/libisthmus.so");
        let err = answer(&mut env, "mpich", None).unwrap_err();
        assert!(
            err.contains("mpich") && err.contains("--libisthmus"),
            "{err}"
        );
        let mut plain = BTreeMap::new();
        answer(&mut plain, "mpich", None).unwrap();
        assert!(plain.is_empty());
    }
}

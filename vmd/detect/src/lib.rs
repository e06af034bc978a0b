//! A program's MPI implementation read from its binary: for `isthmus run`'s
//! coupling files that leave `impl` out, and for `MPI_Comm_spawn` in
//! libisthmus (the command's implementation). The shared libraries an ELF program names
//! (`DT_NEEDED`: Open MPI's `libmpi.so.40`, MPICH's `libmpich.so.12` or its
//! `libmpi.so.12` alias; only `libisthmus.so`: the one libisthmus it finds
//! names it; neither: a plain program, `exec`), and where it
//! finds them (`DT_RUNPATH`/`DT_RPATH`): a program built by the wrappers of
//! an implementation installed in a prefix of its own (Open MPI 5, MPICH 5,
//! Intel MPI under `$ISTHMUS_MPI_HOME/NAME`, as scripts/mpi/ installs them)
//! carries that prefix's `lib` there, and is of that implementation. A
//! program of the MPI 5.0 standard ABI (`libmpi_abi.so.1`, built with
//! `mpicc_abi`) is `abi` wherever its library lies: one binary runs on any
//! implementation that speaks the ABI, and which one runs it is the `abi`
//! tasker's choice (MPICH 5's by default, `ISTHMUS_ABI_RUNTIME=impi` for
//! Intel MPI's), not the binary's.
//!
//! The ELF file is read by goblin, which checks every offset: a truncated
//! or hostile file is an error, never a panic.
//!
//! Implementations are named as the resource manager and the taskers name
//! them: `openmpi`, `mpich`, `openmpi5`, `mpich5`, `impi`, `abi`, and
//! `exec` for a program linked with no MPI.

use std::path::{Path, PathBuf};

use goblin::elf::Elf;

/// Most bytes read from a program to find its libraries.
const MAX_BINARY: u64 = 1 << 30;

/// The implementation `program` was linked with.
pub fn implementation_of(program: &Path) -> Result<&'static str, String> {
    let len = std::fs::metadata(program)
        .map_err(|e| format!("{}: {e}", program.display()))?
        .len();
    if len > MAX_BINARY {
        return Err(format!("{}: larger than 1 GiB", program.display()));
    }
    let bytes = std::fs::read(program).map_err(|e| format!("{}: {e}", program.display()))?;
    let elf = Elf::parse(&bytes)
        .map_err(|e| format!("{} is not an ELF program ({e})", program.display()))?;
    let mut paths: Vec<&str> = Vec::new();
    for p in elf.runpaths.iter().chain(elf.rpaths.iter()) {
        paths.extend(p.split(':'));
    }
    let home = mpi_home();
    let found = from_libraries(&elf.libraries, &paths, &home);
    if found != "exec" {
        return Ok(found);
    }
    // Linked with libisthmus and `--as-needed` (Debian's default), a
    // program that calls only what libisthmus exports names no MPI library
    // of its own: libisthmus names it.
    Ok(through_libisthmus(&elf.libraries, &paths, &home).unwrap_or(found))
}

/// The implementation of the `libisthmus.so` that `needed` names, found in
/// `run_paths` (the program's `DT_RUNPATH`/`DT_RPATH`, as the loader looks),
/// then in `LD_LIBRARY_PATH`'s directories.
fn through_libisthmus(needed: &[&str], run_paths: &[&str], home: &Path) -> Option<&'static str> {
    let name = needed.iter().find(|l| l.starts_with("libisthmus.so"))?;
    let ld_path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let dirs = run_paths.iter().copied().chain(ld_path.split(':'));
    let lib = dirs
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())?;
    let len = std::fs::metadata(&lib).ok()?.len();
    if len > MAX_BINARY {
        return None;
    }
    let bytes = std::fs::read(&lib).ok()?;
    let elf = Elf::parse(&bytes).ok()?;
    let mut paths: Vec<&str> = Vec::new();
    for p in elf.runpaths.iter().chain(elf.rpaths.iter()) {
        paths.extend(p.split(':'));
    }
    Some(from_libraries(&elf.libraries, &paths, home)).filter(|i| *i != "exec")
}

/// Where scripts/install-mpis.sh puts the implementations of the Python
/// registry (as the taskers look for them).
fn mpi_home() -> PathBuf {
    std::env::var_os("ISTHMUS_MPI_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/isthmus/mpi"))
}

/// Which implementation a program's needed libraries and run paths point to.
fn from_libraries(needed: &[&str], run_paths: &[&str], home: &Path) -> &'static str {
    // Whatever its run path says (MPICH 5's `mpicc_abi` puts MPICH 5's
    // `lib` there): the runtime is the tasker's to choose.
    if needed.iter().any(|l| l.starts_with("libmpi_abi.so")) {
        return "abi";
    }
    // A Fortran program linked --as-needed may name only the Fortran
    // binding's library (MPICH's libmpichfort/libmpifort, Open MPI's
    // libmpi_mpifh, libmpi_usempi*, libmpi_usempif08).
    let mpich = needed.iter().any(|l| {
        l.starts_with("libmpich.so")
            || l.starts_with("libmpi.so.12")
            || l.starts_with("libmpichfort.so")
            || l.starts_with("libmpifort.so")
    });
    let openmpi = needed.iter().any(|l| {
        l.starts_with("libmpi.so")
            || l.starts_with("libmpi_mpifh.so")
            || l.starts_with("libmpi_usempi")
            || l.starts_with("libopen-")
    });
    if mpich || openmpi {
        for (name, implementation) in [
            ("openmpi5", "openmpi5"),
            ("mpich5", "mpich5"),
            ("impi", "impi"),
        ] {
            let prefix = home.join(name);
            if run_paths.iter().any(|p| Path::new(p).starts_with(&prefix)) {
                return implementation;
            }
        }
    }
    match (mpich, openmpi) {
        (true, _) => "mpich",
        (false, true) => "openmpi",
        (false, false) => "exec",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_name_the_implementation() {
        let home = Path::new("/opt/isthmus/mpi");
        let from = |needed: &[&str], paths: &[&str]| from_libraries(needed, paths, home);
        assert_eq!(from(&["libc.so.6", "libmpi.so.40"], &[]), "openmpi");
        assert_eq!(from(&["libmpich.so.12", "libc.so.6"], &[]), "mpich");
        assert_eq!(from(&["libmpi.so.12"], &[]), "mpich");
        assert_eq!(from(&["libc.so.6"], &[]), "exec");
        // Fortran programs that name only their binding's library.
        assert_eq!(
            from(&["libmpichfort.so.12", "libgfortran.so.5"], &[]),
            "mpich"
        );
        assert_eq!(from(&["libmpi_usempif08.so.40"], &[]), "openmpi");
        assert_eq!(from(&["libmpi_usempi_ignore_tkr.so.40"], &[]), "openmpi");
        // Built by the wrappers of an implementation in a prefix.
        assert_eq!(
            from(&["libmpi.so.40"], &["/opt/isthmus/mpi/openmpi5/lib"]),
            "openmpi5"
        );
        assert_eq!(
            from(&["libmpi.so.12"], &["/x", "/opt/isthmus/mpi/mpich5/lib"]),
            "mpich5"
        );
        assert_eq!(
            from(
                &["libmpifort.so.12", "libmpi.so.12"],
                &["/opt/isthmus/mpi/impi/lib/release"]
            ),
            "impi"
        );
        // The MPI 5.0 standard ABI, whichever implementation built it.
        assert_eq!(
            from(
                &["libisthmus.so", "libmpi_abi.so.1"],
                &["/opt/isthmus/mpi/mpich5/lib"]
            ),
            "abi"
        );
        assert_eq!(from(&["libmpi_abi.so.1"], &[]), "abi");
        // A run path alone makes no MPI program.
        assert_eq!(from(&["libc.so.6"], &["/opt/isthmus/mpi/impi/lib"]), "exec");
    }

    #[test]
    fn a_real_program_is_read() {
        // /bin/sh is a dynamically linked ELF program on every host here.
        let sh = std::fs::canonicalize("/bin/sh").unwrap();
        assert_eq!(implementation_of(&sh).unwrap(), "exec");
    }

    #[test]
    fn non_elf_and_truncated_files_are_errors_not_panics() {
        let dir = std::env::temp_dir().join(format!("isthmus-detect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("script");
        std::fs::write(&script, b"#!/bin/sh\n").unwrap();
        assert!(implementation_of(&script).is_err());
        let sh = std::fs::read(std::fs::canonicalize("/bin/sh").unwrap()).unwrap();
        for cut in [6, 0x30, 0x40, sh.len() / 2] {
            let cut_file = dir.join(format!("sh-{cut}"));
            std::fs::write(&cut_file, &sh[..cut]).unwrap();
            let _ = implementation_of(&cut_file);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

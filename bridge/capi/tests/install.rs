//! `scripts/install.sh` into a temporary prefix (twice: it must be
//! idempotent), then programs built only with the installed files through
//! pkg-config — C, Fortran (`use mpi`) and Fortran (`use mpi_f08` with the
//! installed `isthmus_f08` module) for each implementation — and two of
//! them run against each other from the installed libraries.
//!
//! The script runs with `--no-build`: the libraries and binaries this test
//! suite was built with (scripts/test.sh builds both flavours) are what it
//! installs; a nested cargo would wait on this build's lock.

#![cfg(test)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

fn install(prefix: &Path) {
    let o = Command::new("bash")
        .arg(crate_dir().join("../../scripts/install.sh"))
        .arg("--no-build")
        .arg(prefix)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run scripts/install.sh");
    assert!(
        o.status.success(),
        "install.sh failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn pkg_config(prefix: &Path, mpi: Mpi) -> Vec<String> {
    let o = Command::new("pkg-config")
        .args(["--cflags", "--libs", &format!("isthmus-{}", mpi.name())])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .expect("run pkg-config");
    assert!(
        o.status.success(),
        "pkg-config isthmus-{} failed:\n{}",
        mpi.name(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// `compiler source $(pkg-config ...) -o out` — the README's line.
fn build(compiler: &str, source: &Path, flags: &[String], out: &Path) {
    let o = Command::new(compiler)
        .arg(source)
        .args(flags)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        o.status.success(),
        "{compiler} {} $(pkg-config ...) failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn source(name: &str) -> PathBuf {
    crate_dir().join("tests/fortran").join(name)
}

#[test]
fn install_then_build_with_pkg_config() {
    let dir = TempDir::new("install");
    let prefix = dir.0.join("prefix");
    install(&prefix);
    install(&prefix);
    for f in [
        "bin/vmd",
        "bin/isthmus",
        "include/isthmus.h",
        "lib/isthmus/openmpi/libisthmus.so",
        "lib/isthmus/mpich/libisthmus.so",
        "include/isthmus/openmpi/isthmus_f08.mod",
        "include/isthmus/mpich/isthmus_f08.mod",
        "lib/pkgconfig/isthmus-openmpi.pc",
        "lib/pkgconfig/isthmus-mpich.pc",
    ] {
        assert!(prefix.join(f).exists(), "{f} was not installed");
    }

    let mut built = Vec::new();
    for mpi in [Mpi::OpenMpi, Mpi::Mpich] {
        let flags = pkg_config(&prefix, mpi);
        let n = mpi.name();
        let c = dir.0.join(format!("c-{n}"));
        build(&format!("mpicc.{n}"), &source("exchange.c"), &flags, &c);
        let f = dir.0.join(format!("fortran-{n}"));
        build(&format!("mpifort.{n}"), &source("exchange.F90"), &flags, &f);
        let f08 = dir.0.join(format!("f08-{n}"));
        build(
            &format!("mpifort.{n}"),
            &source("exchange_f08.f90"),
            &flags,
            &f08,
        );
        built.push((mpi, c, f, f08));
    }

    // Two of them against each other, each loading the installed library
    // of its implementation (the rpath from pkg-config).
    let vmd = Vmd::start("localhost", &[]);
    let (ompi_f08, mpich_c) = (built[0].3.clone(), built[1].1.clone());
    let job = |mpi: Mpi, program: PathBuf, me: &str, other: &str| Job {
        mpi,
        np: 2,
        program,
        args: vec![me.into(), other.into()],
        env: vec![],
        linking: Linking::Linked,
    };
    let (oa, ob) = run_pair(
        &vmd,
        &job(Mpi::OpenMpi, ompi_f08, "installed-a", "installed-b"),
        &job(Mpi::Mpich, mpich_c, "installed-b", "installed-a"),
        Duration::from_secs(120),
    );
    let both = format!("f08 (Open MPI):\n{}\nC (MPICH):\n{}", text(&oa), text(&ob));
    assert!(oa.status.success() && ob.status.success(), "{both}");
    for r in 0..2 {
        assert!(
            String::from_utf8_lossy(&oa.stdout)
                .contains(&format!("f08 rank {r}: all checks passed")),
            "{both}"
        );
        assert!(
            String::from_utf8_lossy(&ob.stdout).contains(&format!("c rank {r}: all checks passed")),
            "{both}"
        );
    }
}

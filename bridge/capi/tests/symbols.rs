//! libisthmus's exported entry points: every name of
//! `tests/symbols/<mpi>.txt` is defined by that build of `libisthmus.so`
//! (`nm -D --defined-only`). The ABI is generated from
//! `mpi-functions.txt`; a change of the table or of the generator that
//! drops an entry point a program or an MPI library may call fails here,
//! naming it. A name added on purpose goes into the list too.

#![cfg(test)]

#[allow(unused_imports)] // the shared helpers this test does not need
mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{crate_dir, lib_dir, Mpi};

fn exported(mpi: Mpi) -> BTreeSet<String> {
    let lib = lib_dir(mpi).join("libisthmus.so");
    let o = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .unwrap_or_else(|e| panic!("cannot run nm: {e}"));
    assert!(
        o.status.success(),
        "nm {}: {}",
        lib.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect()
}

fn check(mpi: Mpi) {
    let list =
        std::fs::read_to_string(crate_dir().join(format!("tests/symbols/{}.txt", mpi.name())))
            .unwrap();
    let have = exported(mpi);
    let missing: Vec<&str> = list
        .lines()
        .map(str::trim)
        .filter(|n| !n.is_empty() && !have.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "the {} build of libisthmus.so no longer defines: {}",
        mpi.name(),
        missing.join(" ")
    );
}

#[test]
fn open_mpi_build_defines_every_listed_entry_point() {
    check(Mpi::OpenMpi);
}

#[test]
fn mpich_build_defines_every_listed_entry_point() {
    check(Mpi::Mpich);
}

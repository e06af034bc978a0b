//! MPI-2 names and ports across separately started jobs of either
//! implementation (tests/c/ports.c): plain MPI calls, no Isthmus call in
//! the program — linked, or built without the library and preloaded; and
//! tests/c/selfconacc.c, after MPICH's spawn/selfconacc.c, both ways.

#![cfg(test)]

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use common::*;

/// Builds tests/c/`source`.c for `mpi` with `linking`.
fn program(source: &str, mpi: Mpi, linking: Linking, dir: &TempDir) -> PathBuf {
    let out = dir.0.join(format!("{source}-{}-{linking:?}", mpi.name()));
    let src = crate_dir().join("tests/c").join(format!("{source}.c"));
    build_c(mpi, &[src], &out, linking);
    out
}

fn job(
    source: &str,
    (mpi, linking): (Mpi, Linking),
    np: usize,
    args: &[&str],
    dir: &TempDir,
) -> Job {
    Job {
        mpi,
        np,
        program: program(source, mpi, linking, dir),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: vec![],
        linking,
    }
}

fn passed(o: &Output, mode: &str, np: usize) -> bool {
    let out = String::from_utf8_lossy(&o.stdout);
    o.status.success() && (0..np).all(|r| out.contains(&format!("PASS {mode} rank {r}")))
}

/// Runs an accepting and a connecting job at once; every rank of each must
/// pass.
fn accept_and_connect(vmd: &Vmd, a: &Job, c: &Job) {
    let (oa, oc) = run_pair(vmd, a, c, Duration::from_secs(180));
    assert!(
        passed(&oa, "accept", a.np) && passed(&oc, "connect", c.np),
        "accept ({:?} {:?}) / connect ({:?} {:?})\nacceptor:\n{}\nconnector:\n{}",
        a.mpi,
        a.linking,
        c.mpi,
        c.linking,
        text(&oa),
        text(&oc)
    );
}

fn accept_connect(acceptor: (Mpi, Linking), connector: (Mpi, Linking), service: &str) {
    let dir = TempDir::new("ports");
    let vmd = Vmd::start("localhost", &[]);
    let a = job("ports", acceptor, 2, &["accept", service], &dir);
    let c = job("ports", connector, 3, &["connect", service], &dir);
    accept_and_connect(&vmd, &a, &c);
}

#[test]
fn open_mpi_accepts_and_mpich_connects_through_a_published_name() {
    accept_connect(
        (Mpi::OpenMpi, Linking::Linked),
        (Mpi::Mpich, Linking::Linked),
        "svc-ompi-mpich",
    );
}

#[test]
fn mpich_accepts_and_open_mpi_connects_unmodified_binaries_preloaded() {
    accept_connect(
        (Mpi::Mpich, Linking::Unmodified),
        (Mpi::OpenMpi, Linking::Unmodified),
        "svc-mpich-ompi",
    );
}

fn alone(mpi: Mpi, mode: &str) -> Output {
    let dir = TempDir::new("ports-alone");
    let vmd = Vmd::start("localhost", &[]);
    let j = job("ports", (mpi, Linking::Linked), 2, &[mode], &dir);
    finish(launch(&vmd, &j), Duration::from_secs(120), mode)
}

#[test]
fn a_connect_nobody_accepts_fails_at_its_deadline_with_a_clear_error() {
    for mpi in [Mpi::OpenMpi, Mpi::Mpich] {
        let o = alone(mpi, "noaccept");
        assert!(passed(&o, "noaccept", 2), "{mpi:?}\n{}", text(&o));
    }
}

#[test]
fn a_port_not_from_isthmus_is_refused() {
    for mpi in [Mpi::OpenMpi, Mpi::Mpich] {
        let o = alone(mpi, "foreign");
        assert!(passed(&o, "foreign", 2), "{mpi:?}\n{}", text(&o));
    }
}

/// tests/c/selfconacc.c (after MPICH's spawn/selfconacc.c): each rank of
/// the accepting job opens a port and accepts on MPI_COMM_SELF, the rank of
/// the same number of the other job reads the port name from a file and
/// connects; each pair exchanges values, disconnects, and meets a second
/// time on the same port.
fn selfconacc(acceptor: (Mpi, Linking), connector: (Mpi, Linking)) {
    let dir = TempDir::new("selfconacc");
    let vmd = Vmd::start("localhost", &[]);
    let ports = dir.0.join("ports");
    std::fs::create_dir(&ports).expect("create the port directory");
    let ports = ports.display().to_string();
    let a = job("selfconacc", acceptor, 2, &["accept", &ports], &dir);
    let c = job("selfconacc", connector, 2, &["connect", &ports], &dir);
    accept_and_connect(&vmd, &a, &c);
}

#[test]
fn selfconacc_open_mpi_accepts_mpich_connects_twice_on_one_port() {
    selfconacc(
        (Mpi::OpenMpi, Linking::Linked),
        (Mpi::Mpich, Linking::Unmodified),
    );
}

#[test]
fn selfconacc_mpich_accepts_open_mpi_connects_twice_on_one_port() {
    selfconacc(
        (Mpi::Mpich, Linking::Linked),
        (Mpi::OpenMpi, Linking::Unmodified),
    );
}

//! MPI-2 names and ports across separately started jobs of either
//! implementation (tests/c/ports.c): plain MPI calls, no Isthmus call in
//! the program — linked, or built without the library and preloaded.

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use common::*;

fn program(mpi: Mpi, linking: Linking, dir: &TempDir) -> PathBuf {
    let out = dir.0.join(format!("ports-{}-{linking:?}", mpi.name()));
    build_c(mpi, &[crate_dir().join("tests/c/ports.c")], &out, linking);
    out
}

fn job(mpi: Mpi, linking: Linking, np: usize, args: &[&str], dir: &TempDir) -> Job {
    Job {
        mpi,
        np,
        program: program(mpi, linking, dir),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: vec![],
        linking,
    }
}

fn passed(o: &Output, mode: &str, np: usize) -> bool {
    let out = String::from_utf8_lossy(&o.stdout);
    o.status.success() && (0..np).all(|r| out.contains(&format!("PASS {mode} rank {r}")))
}

fn accept_connect(acceptor: (Mpi, Linking), connector: (Mpi, Linking), service: &str) {
    let dir = TempDir::new("ports");
    let vmd = Vmd::start("localhost", &[]);
    let a = job(acceptor.0, acceptor.1, 2, &["accept", service], &dir);
    let c = job(connector.0, connector.1, 3, &["connect", service], &dir);
    let (oa, oc) = run_pair(&vmd, &a, &c, Duration::from_secs(180));
    assert!(
        passed(&oa, "accept", 2) && passed(&oc, "connect", 3),
        "accept ({acceptor:?}) / connect ({connector:?})\nacceptor:\n{}\nconnector:\n{}",
        text(&oa),
        text(&oc)
    );
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
    let j = job(mpi, Linking::Linked, 2, &[mode], &dir);
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

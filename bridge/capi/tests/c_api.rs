//! The C API's behaviour between separately started jobs of either
//! implementation (tests/c/exchange.c): mixed native and bridge requests,
//! refusals with clear errors, a killed rank giving an error and not a
//! hang, and the same program linked at build time or preloaded.

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use common::*;

fn program(mpi: Mpi, linking: Linking, dir: &TempDir) -> PathBuf {
    let out = dir.0.join(format!("exchange-{}-{linking:?}", mpi.name()));
    build_c(
        mpi,
        &[crate_dir().join("tests/c/exchange.c")],
        &out,
        linking,
    );
    out
}

/// Runs `scenario` between job A (`a`) and job B (`b`), 2 ranks each.
fn pair(scenario: &str, a: (Mpi, Linking), b: (Mpi, Linking)) -> (Output, Output) {
    let dir = TempDir::new("capi");
    let vmd = Vmd::start("localhost", &[]);
    let tag = format!("{scenario}-{}-{}", a.0.name(), b.0.name());
    let (ga, gb) = (format!("a-{tag}"), format!("b-{tag}"));
    let job = |(mpi, linking): (Mpi, Linking), me: &str, other: &str| Job {
        mpi,
        np: 2,
        program: program(mpi, linking, &dir),
        args: vec![scenario.into(), me.into(), other.into()],
        env: vec![],
        linking,
    };
    let ja = job(a, &ga, &gb);
    let jb = job(b, &gb, &ga);
    run_pair(&vmd, &ja, &jb, Duration::from_secs(180))
}

fn passed(o: &Output, scenario: &str) -> bool {
    let out = String::from_utf8_lossy(&o.stdout);
    o.status.success() && (0..2).all(|r| out.contains(&format!("PASS {scenario} rank {r}")))
}

fn both_pass(scenario: &str, a: (Mpi, Linking), b: (Mpi, Linking)) -> (Output, Output) {
    let (oa, ob) = pair(scenario, a, b);
    assert!(
        passed(&oa, scenario) && passed(&ob, scenario),
        "{scenario} between {a:?} and {b:?}\nA:\n{}\nB:\n{}",
        text(&oa),
        text(&ob)
    );
    (oa, ob)
}

const OMPI: (Mpi, Linking) = (Mpi::OpenMpi, Linking::Linked);
const MPICH: (Mpi, Linking) = (Mpi::Mpich, Linking::Linked);

#[test]
fn mixed_requests_open_mpi_with_mpich() {
    both_pass("mixed", OMPI, MPICH);
}

#[test]
fn mixed_requests_mpich_with_open_mpi() {
    both_pass("mixed", MPICH, OMPI);
}

#[test]
fn mixed_requests_open_mpi_with_open_mpi() {
    both_pass("mixed", OMPI, OMPI);
}

#[test]
fn mixed_requests_mpich_with_mpich() {
    both_pass("mixed", MPICH, MPICH);
}

#[test]
fn the_same_program_preloaded_instead_of_linked() {
    both_pass(
        "mixed",
        (Mpi::OpenMpi, Linking::Preloaded),
        (Mpi::Mpich, Linking::Preloaded),
    );
}

#[test]
fn refused_calls_fail_with_a_message_naming_them() {
    let (oa, _) = both_pass("refused", OMPI, MPICH);
    let out = String::from_utf8_lossy(&oa.stdout);
    for call in [
        "MPI_Barrier",
        "MPI_Intercomm_merge",
        "MPI_Win_create",
        "MPI_File_open",
    ] {
        assert!(
            out.contains(&format!("REFUSED {call}: ")),
            "no refusal printed for {call}\n{}",
            text(&oa)
        );
    }
}

#[test]
fn a_killed_rank_is_an_error_through_errors_return() {
    let (oa, _) = pair("killed-return", OMPI, MPICH);
    let out = String::from_utf8_lossy(&oa.stdout);
    assert!(
        passed(&oa, "killed-return") && out.contains("GOT ERROR") && out.contains("has failed"),
        "job A should report the failure and finish\n{}",
        text(&oa)
    );
}

#[test]
fn a_killed_rank_aborts_through_the_default_handler_with_the_reason() {
    let (oa, _) = pair("killed-fatal", MPICH, OMPI);
    let err = String::from_utf8_lossy(&oa.stderr);
    assert!(
        !oa.status.success() && err.contains("MPI_Recv") && err.contains("has failed"),
        "job A should abort naming the failure\n{}",
        text(&oa)
    );
}

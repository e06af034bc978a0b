//! Issue 17, item 1: every predefined datatype of `mpi.h` (the C ones, the
//! pair types, the Fortran ones seen from C), and derived types matched by
//! their basic-type sequence, cross between two jobs at extreme values, in
//! both directions (tests/c/datatypes.c): each arrives intact with the
//! right `MPI_Get_count`, and what MPI's type matching forbids is refused,
//! never delivered.

#![cfg(test)]

mod common;

use std::collections::BTreeMap;
use std::process::Output;
use std::time::Duration;

use common::*;

/// Runs tests/c/datatypes.c between a one-rank job of `a` and one of `b`;
/// returns both outputs.
fn exchange(a: Mpi, b: Mpi) -> (Output, Output) {
    let dir = TempDir::new("datatypes");
    let vmd = Vmd::start("localhost", &[]);
    let job = |mpi: Mpi, me: &str, other: &str| {
        let program = dir.0.join(format!("datatypes-{}", mpi.name()));
        if !program.exists() {
            build_c(
                mpi,
                &[crate_dir().join("tests/c/datatypes.c")],
                &program,
                Linking::Linked,
            );
        }
        Job {
            mpi,
            np: 1,
            program,
            args: vec![me.into(), other.into()],
            env: vec![],
            linking: Linking::Linked,
        }
    };
    let tag = format!("{}-{}", a.name(), b.name());
    let (ga, gb) = (format!("dta-{tag}"), format!("dtb-{tag}"));
    run_pair(
        &vmd,
        &job(a, &ga, &gb),
        &job(b, &gb, &ga),
        Duration::from_secs(180),
    )
}

/// The `RESULT sender receiver case verdict what` lines of one job (the
/// receiver, `job`), by (direction, case).
fn results(o: &Output, job: &str) -> BTreeMap<(String, String), String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .filter_map(|l| {
            let mut w = l.splitn(4, ' ');
            let (from, to, case, rest) = (w.next()?, w.next()?, w.next()?, w.next()?);
            Some((
                (format!("{from}->{to} ({job})"), case.to_string()),
                rest.to_string(),
            ))
        })
        .collect()
}

/// Both directions between `a` and `b`: every case of the program is
/// reported by its receiver, and every one is OK.
fn every_type_crosses(a: Mpi, b: Mpi) {
    let (oa, ob) = exchange(a, b);
    let mut all = results(&oa, "A");
    all.extend(results(&ob, "B"));
    let table: String = all
        .iter()
        .map(|((dir, case), v)| format!("{dir:20} {case:32} {v}\n"))
        .collect();
    println!("{table}");
    let cases = String::from_utf8_lossy(&oa.stdout)
        .lines()
        .find_map(|l| {
            l.strip_prefix("CASES ")?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .unwrap_or(0);
    let mut bad: Vec<&String> = all.values().filter(|v| !v.starts_with("OK")).collect();
    // A refusal names the call and both types.
    bad.extend(
        all.iter()
            .filter(|((_, case), v)| {
                case == "must-refuse:long-as-int"
                    && !(v.contains("MPI_Recv")
                        && v.contains("[MPI_LONG]")
                        && v.contains("[MPI_INT]"))
            })
            .map(|(_, v)| v),
    );
    assert!(
        cases > 60
            && all.len() == 2 * cases
            && bad.is_empty()
            && oa.status.success()
            && ob.status.success(),
        "{} of {} results not OK ({cases} cases per direction)\n{table}\nA:\n{}\nB:\n{}",
        bad.len(),
        all.len(),
        text(&oa),
        text(&ob)
    );
}

#[test]
fn every_predefined_type_crosses_between_open_mpi_and_mpich() {
    every_type_crosses(Mpi::OpenMpi, Mpi::Mpich);
}

#[test]
fn every_predefined_type_crosses_between_two_open_mpi_jobs() {
    every_type_crosses(Mpi::OpenMpi, Mpi::OpenMpi);
}

#[test]
fn every_predefined_type_crosses_between_two_mpich_jobs() {
    every_type_crosses(Mpi::Mpich, Mpi::Mpich);
}

//! The coupling demo (examples/coupling, scripts/demo-coupling.sh): the
//! Fortran ocean built with Open MPI and the C atmosphere built with
//! MPICH, started separately, exchange boundary fields for a few steps;
//! every value each side prints is the other side's formula.

#![cfg(test)]

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::*;

const NX: usize = 4;
const RANKS: usize = 2;
const STEPS: usize = 4;

fn example(name: &str) -> PathBuf {
    crate_dir().join("../../examples/coupling").join(name)
}

fn sst(g: usize, s: usize) -> f64 {
    15.0 + 0.5 * g as f64 + 0.1 * s as f64
}

fn tair(g: usize, s: usize) -> f64 {
    20.0 - 0.25 * g as f64 + 0.2 * s as f64
}

/// The numbers printed after `label` on the line starting with `prefix`
/// (up to "->", if any).
fn values(out: &str, prefix: &str, label: &str) -> Vec<f64> {
    let line = out
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{out}"));
    let rest = line
        .split_once(label)
        .unwrap_or_else(|| panic!("no {label:?} in {line:?}"))
        .1;
    let rest = rest.split("->").next().unwrap_or("");
    rest.split_whitespace()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("not a number: {v:?} in {line:?}"))
        })
        .collect()
}

fn close(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6)
}

#[test]
fn fortran_ocean_openmpi_with_c_atmosphere_mpich() {
    let dir = TempDir::new("coupling");
    let ocean = dir.0.join("ocean");
    let lib = lib_dir(Mpi::OpenMpi);
    let o = Command::new("mpifort.openmpi")
        .args(["-O2", "-o"])
        .arg(&ocean)
        .arg(example("ocean.f90"))
        .arg(format!("-L{}", lib.display()))
        .arg("-listhmus")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-Wl,--disable-new-dtags")
        .output()
        .expect("run mpifort.openmpi");
    assert!(
        o.status.success(),
        "mpifort.openmpi ocean.f90 failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let atmosphere = dir.0.join("atmosphere");
    build_c(
        Mpi::Mpich,
        &[example("atmosphere.c")],
        &atmosphere,
        Linking::Linked,
    );

    let vmd = Vmd::start("localhost", &[]);
    let job = |mpi: Mpi, program: PathBuf| Job {
        mpi,
        np: RANKS,
        program,
        args: vec![STEPS.to_string()],
        env: vec![],
        linking: Linking::Linked,
    };
    let (oo, oa) = run_pair(
        &vmd,
        &job(Mpi::Mpich, atmosphere),
        &job(Mpi::OpenMpi, ocean),
        Duration::from_secs(120),
    );
    let (atm, oce) = (text(&oo), text(&oa));
    let both = format!("atmosphere:\n{atm}\nocean:\n{oce}");
    assert!(
        oo.status.success() && oa.status.success(),
        "a job failed\n{both}"
    );
    let (atm_out, oce_out) = (
        String::from_utf8_lossy(&oo.stdout).into_owned(),
        String::from_utf8_lossy(&oa.stdout).into_owned(),
    );
    for r in 0..RANKS {
        for s in 1..=STEPS {
            let cells = (1..=NX).map(|i| r * NX + i);
            let want_sst: Vec<f64> = cells.clone().map(|g| sst(g, s)).collect();
            let want_tair: Vec<f64> = cells.map(|g| tair(g, s)).collect();
            let got = values(
                &atm_out,
                &format!("atmosphere rank {r} step {s} "),
                "received SST",
            );
            assert!(
                close(&got, &want_sst),
                "atmosphere rank {r} step {s}: SST {got:?}, want {want_sst:?}\n{both}"
            );
            let got = values(
                &oce_out,
                &format!("ocean rank {r} step {s} "),
                "received air temperature",
            );
            assert!(
                close(&got, &want_tair),
                "ocean rank {r} step {s}: air {got:?}, want {want_tair:?}\n{both}"
            );
        }
    }
    assert!(
        atm_out.contains("atmosphere: done") && oce_out.contains("ocean: done"),
        "{both}"
    );
}

//! One `MPI_COMM_WORLD` across implementations (`ISTHMUS_WORLD`, issue 19):
//! a plain C program (tests/c/world.c) run as a world of 2 Open MPI ranks
//! and 2 MPICH ranks, each part started by its own launcher, both orders
//! (Open MPI as part 0, then MPICH as part 0): rank/size, the world's
//! attributes, a ring of point-to-point, collectives, dup, split, and the
//! refusal of `MPI_Comm_group` on the world. A part alone fails at
//! `MPI_Init` after its deadline, naming the part that did not arrive.
//! MPICH's own tests (`tests/merged/` of the conformance suite, unmodified,
//! built with MPICH's own harness `reference/mtest.c`) run on such a world.

#![cfg(test)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;

/// The two parts of world `name`: `first` is part 0; each part has 2 ranks.
fn parts(name: &str, first: Mpi, program: &dyn Fn(Mpi) -> PathBuf, args: &[String]) -> (Job, Job) {
    let part = |mpi: Mpi, index: u32| Job {
        mpi,
        np: 2,
        program: program(mpi),
        args: args.to_vec(),
        env: vec![
            ("ISTHMUS_WORLD".into(), format!("{name}:{index}/2")),
            ("ISTHMUS_WORLD_TIMEOUT".into(), "60".into()),
        ],
        linking: Linking::Linked,
    };
    (part(first, 0), part(first.other(), 1))
}

fn world_c(first: Mpi) {
    let dir = TempDir::new("world");
    let vmd = Vmd::start("localhost", &[]);
    let program = |mpi: Mpi| {
        let p = dir.0.join(format!("world-{}", mpi.name()));
        if !p.exists() {
            build_c(
                mpi,
                &[crate_dir().join("tests/c/world.c")],
                &p,
                Linking::Linked,
            );
        }
        p
    };
    let name = format!("world-c-{}", first.name());
    let (a, b) = parts(&name, first, &program, &["2".into(), "2".into()]);
    let (oa, ob) = run_pair(&vmd, &a, &b, Duration::from_secs(120));
    let both = format!(
        "part 0 ({}):\n{}\npart 1 ({}):\n{}",
        first.name(),
        text(&oa),
        first.other().name(),
        text(&ob)
    );
    for (o, ranks, appnum) in [(&oa, [0, 1], 0), (&ob, [2, 3], 1)] {
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success()
                && ranks.iter().all(|r| out.contains(&format!(
                    "PASS world rank {r} of 4 (appnum {appnum})\n"
                ))),
            "a part failed\n{both}"
        );
    }
    let out = String::from_utf8_lossy(&oa.stdout);
    assert!(
        out.contains("REFUSED MPI_Comm_group: ") && out.contains("merged Isthmus communicator"),
        "no refusal of MPI_Comm_group on the world\n{both}"
    );
}

#[test]
fn one_world_open_mpi_first() {
    world_c(Mpi::OpenMpi);
}

#[test]
fn one_world_mpich_first() {
    world_c(Mpi::Mpich);
}

#[test]
fn a_part_alone_fails_at_init_naming_the_missing_part() {
    let dir = TempDir::new("world-alone");
    let vmd = Vmd::start("localhost", &[]);
    let p = dir.0.join("world-mpich");
    build_c(
        Mpi::Mpich,
        &[crate_dir().join("tests/c/world.c")],
        &p,
        Linking::Linked,
    );
    let job = Job {
        mpi: Mpi::Mpich,
        np: 2,
        program: p,
        args: vec!["2".into(), "2".into()],
        env: vec![
            ("ISTHMUS_WORLD".into(), "world-alone:0/2".into()),
            ("ISTHMUS_WORLD_TIMEOUT".into(), "2".into()),
        ],
        linking: Linking::Linked,
    };
    let o = finish(launch(&vmd, &job), Duration::from_secs(60), "the lone part");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("part 1 of world \"world-alone\"")
            && err.contains("did not arrive"),
        "{}",
        text(&o)
    );
}

/// MPICH's `test` (under the suite's tests/) built with MPICH's own harness.
fn mpich_with_own_harness(test: &str, mpi: Mpi, dir: &TempDir) -> PathBuf {
    let suite = suite_dir();
    let out = dir.0.join(format!(
        "{}-{}",
        test.replace('/', "_").trim_end_matches(".c"),
        mpi.name()
    ));
    if !out.exists() {
        build_c_including(
            mpi,
            &[
                suite.join("tests").join(test),
                suite.join("reference/mtest.c"),
            ],
            &[suite.join("reference")],
            &out,
            Linking::Linked,
        );
    }
    out
}

/// Runs MPICH's `test` as a world of 2 + 2 ranks, `first` as part 0: Ok
/// when both parts exit 0 and part 0 prints " No Errors".
fn mpich_on_world(test: &str, first: Mpi) -> Result<(), String> {
    let dir = TempDir::new("world-mpich");
    let vmd = Vmd::start("localhost", &[]);
    let program = |mpi: Mpi| mpich_with_own_harness(test, mpi, &dir);
    let name = format!("world-{}-{}", test.replace(['/', '.'], "-"), first.name());
    let (a, b) = parts(&name, first, &program, &[]);
    let (oa, ob) = run_pair(&vmd, &a, &b, Duration::from_secs(60));
    // MTest_Finalize prints on world rank 0, which is part 0's.
    if oa.status.success()
        && ob.status.success()
        && String::from_utf8_lossy(&oa.stdout).contains(" No Errors")
    {
        return Ok(());
    }
    Err(format!(
        "{test} ({} first):\npart 0:\n{}\npart 1:\n{}",
        first.name(),
        text(&oa),
        text(&ob)
    ))
}

#[test]
fn mpich_tests_with_mpichs_harness_on_the_world() {
    let mut failed = Vec::new();
    for test in ["merged/allred3.c", "merged/exscan.c"] {
        for first in [Mpi::OpenMpi, Mpi::Mpich] {
            match mpich_on_world(test, first) {
                Ok(()) => println!("PASS {test} ({} first)", first.name()),
                Err(e) => failed.push(e),
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

//! One `MPI_COMM_WORLD` across implementations (`ISTHMUS_WORLD`, issue 19):
//! a plain C program (tests/c/world.c) run as a world of 2 Open MPI ranks
//! and 2 MPICH ranks, each part started by its own launcher, both orders
//! (Open MPI as part 0, then MPICH as part 0): rank/size, the world's
//! attributes, a ring of point-to-point, collectives, dup, split, the
//! world's group and a communicator created from it, an intercommunicator
//! between the parts over the world, and the refusal of `MPI_Comm_connect`
//! on the world. A part alone fails at
//! `MPI_Init` after its deadline, naming the part that did not arrive.
//! `isthmus run`'s MPMD form starts such a world.
//! MPICH's own tests (tests/mpich/world/, unmodified, built with MPICH's
//! own harness, tests/mpich/harness/) run on such a world, both orders.

#![cfg(test)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;

/// The two parts of world `name`: `first` is part 0, with `np.0` ranks;
/// the other part has `np.1`.
fn parts(
    name: &str,
    first: Mpi,
    np: (usize, usize),
    program: &dyn Fn(Mpi) -> PathBuf,
    args: &[String],
) -> (Job, Job) {
    let part = |mpi: Mpi, index: u32| Job {
        mpi,
        np: if index == 0 { np.0 } else { np.1 },
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

/// Runs C program `source` (tests/c/) as a world of `np.0` + `np.1`
/// ranks, `first` as part 0, with `args`; every rank r must print `pass(r)`.
fn c_on_world(
    source: &str,
    first: Mpi,
    np: (usize, usize),
    args: &[String],
    pass: &dyn Fn(usize) -> String,
) {
    let stem = source.trim_end_matches(".c");
    let dir = TempDir::new(stem);
    let vmd = Vmd::start("localhost", &[]);
    let program = |mpi: Mpi| {
        let p = dir.0.join(format!("{stem}-{}", mpi.name()));
        if !p.exists() {
            build_c(
                mpi,
                &[crate_dir().join("tests/c").join(source)],
                &p,
                Linking::Linked,
            );
        }
        p
    };
    let name = format!("{stem}-c-{}", first.name());
    let (a, b) = parts(&name, first, np, &program, args);
    let (oa, ob) = run_pair(&vmd, &a, &b, Duration::from_secs(120));
    let both = format!(
        "part 0 ({}):\n{}\npart 1 ({}):\n{}",
        first.name(),
        text(&oa),
        first.other().name(),
        text(&ob)
    );
    for (o, ranks) in [(&oa, 0..np.0), (&ob, np.0..np.0 + np.1)] {
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && ranks.clone().all(|r| out.contains(&pass(r))),
            "a part failed\n{both}"
        );
    }
}

fn world_c(first: Mpi) {
    let pass = |r: usize| {
        format!(
            "PASS world rank {r} of 4 (appnum {})\n",
            usize::from(r >= 2)
        )
    };
    c_on_world("world.c", first, (2, 2), &["2".into(), "2".into()], &pass);
}

#[test]
fn one_world_open_mpi_first() {
    world_c(Mpi::OpenMpi);
}

#[test]
fn one_world_mpich_first() {
    world_c(Mpi::Mpich);
}

/// An intercommunicator between the world's even and odd ranks, each
/// group spanning both parts (tests/c/mixedic.c), on a world of 2 + 3
/// ranks: point-to-point, groups, dup, collectives, merge.
fn mixedic(first: Mpi) {
    let pass = |r: usize| format!("PASS mixedic world rank {r} of 5\n");
    c_on_world("mixedic.c", first, (2, 3), &[], &pass);
}

#[test]
fn intercomm_of_groups_spanning_both_parts_open_mpi_first() {
    mixedic(Mpi::OpenMpi);
}

#[test]
fn intercomm_of_groups_spanning_both_parts_mpich_first() {
    mixedic(Mpi::Mpich);
}

/// `isthmus run`'s MPMD form (no vmd running: it starts its own) runs
/// world.c as one world of an Open MPI part and an MPICH part, their output
/// tagged with world ranks; a part that fails makes the run fail.
#[test]
fn isthmus_run_mpmd_runs_one_world() {
    let dir = TempDir::new("world-run");
    let program = |mpi: Mpi| {
        let p = dir.0.join(format!("world-{}", mpi.name()));
        build_c(
            mpi,
            &[crate_dir().join("tests/c/world.c")],
            &p,
            Linking::Linked,
        );
        p
    };
    let (ompi, mpich) = (program(Mpi::OpenMpi), program(Mpi::Mpich));
    let run = |sizes: [&str; 2]| {
        let mut c = std::process::Command::new(isthmus_testkit::bin("isthmus"));
        c.arg("--vmd")
            .arg(format!("unix:{}", dir.0.join("no-vmd.sock").display()))
            .args(["run", "-n", "2", "--impl", "openmpi"])
            .arg(&ompi)
            .args([
                "2",
                sizes[0],
                ":",
                "-n",
                "2",
                "-x",
                "ISTHMUS_WORLD_TIMEOUT=60",
            ])
            .arg(&mpich)
            .args(["2", sizes[1]])
            // Cargo's names this test's flavour (Open MPI's): the jobs load
            // their own.
            .env_remove("LD_LIBRARY_PATH")
            .env("OMPI_MCA_btl_tcp_if_include", "lo")
            .env("OMPI_MCA_oob_tcp_if_include", "lo")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = c.spawn().expect("start isthmus run");
        finish(child, Duration::from_secs(150), "isthmus run")
    };
    let o = run(["2", "2"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let tagged = |part: usize, r: usize| {
        out.contains(&format!(
            "[part{part}:{r}] PASS world rank {r} of 4 (appnum {part})"
        ))
    };
    assert!(
        o.status.success() && (0..2).all(|r| tagged(0, r)) && (2..4).all(|r| tagged(1, r)),
        "isthmus run (MPMD):\n{}",
        text(&o)
    );
    // The MPICH part told a wrong size checks it and fails: the run fails.
    let o = run(["2", "3"]);
    assert!(!o.status.success(), "a failing part, yet:\n{}", text(&o));
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

/// MPICH's tests run on the world, unmodified (tests/mpich/world/, from
/// MPICH's test/mpi/), each with MPICH's own harness (tests/mpich/harness:
/// its util/mtest.c, mtest_common.c, mtest_thread.c, run_mpitests.c for
/// the tests written as `run()`, and its include/ headers).
const MPICH_ON_WORLD: &[(&str, usize)] = &[
    // (test, ranks as in MPICH's testlist: half in each part, part 1 the larger)
    ("coll/coll2.c", 5),
    ("coll/coll4.c", 4),
    ("coll/coll13.c", 4),
    // 10 000 Allreduces of 8 bytes: 50 s alone on the shared two-core test
    // machine (5 ms each across the bridge under load), over 60 s with
    // another world beside it.
    ("coll/allredmany.c", 4),
    ("coll/bcasttest.c", 4),
    ("coll/scantst.c", 4),
    ("coll/exscan2.c", 5),
    ("coll/gatherv.c", 5),
    ("coll/redscat.c", 4),
    ("coll/red_scat_block.c", 4),
    ("coll/alltoallw1.c", 10),
    ("comm/dup.c", 2),
    ("comm/cmsplit.c", 4),
    ("pt2pt/sendrecv2.c", 2),
    ("pt2pt/large_tag.c", 2),
    // The shared suite's intracommunicator tests (tests/merged), whose
    // MTestGetIntracomm loop makes communicators from the world's group
    // and intercommunicators over the world, merged again.
    ("merged/allred3.c", 4),
    ("merged/alltoall1.c", 4),
    ("merged/exscan.c", 4),
    ("merged/gather.c", 4),
    // The shared suite's intercommunicator tests: MTestGetIntercomm's
    // intercommunicators between parts of the world, one of whose groups
    // spans both parts ("1, rest": a mixed intercommunicator).
    ("coll/icbarrier.c", 4),
    ("coll/icbcast.c", 4),
    ("coll/icallreduce.c", 4),
    ("coll/icgather.c", 4),
    ("coll/icscatter.c", 4),
    ("coll/icallgather.c", 4),
    ("coll/icalltoall.c", 4),
];

/// MPICH's `test` built for `mpi` with MPICH's own harness.
fn mpich_with_own_harness(test: &str, mpi: Mpi, dir: &TempDir) -> PathBuf {
    let here = crate_dir().join("tests/mpich");
    let harness = here.join("harness");
    // Kept here (tests/mpich/world), or in the shared suite (its tests/).
    let src = Some(here.join("world").join(test))
        .filter(|p| p.exists())
        .unwrap_or_else(|| suite_dir().join("tests").join(test));
    let out = dir.0.join(format!(
        "{}-{}",
        test.replace('/', "_").trim_end_matches(".c"),
        mpi.name()
    ));
    if !out.exists() {
        let mut sources = vec![
            src.clone(),
            harness.join("util/mtest.c"),
            harness.join("util/mtest_common.c"),
            harness.join("util/mtest_thread.c"),
        ];
        if std::fs::read_to_string(&src).is_ok_and(|t| t.contains("int run(const char *arg)")) {
            sources.push(harness.join("util/run_mpitests.c"));
        }
        build_c_searching(
            mpi,
            &sources,
            &[harness.join("include")],
            &out,
            Linking::Linked,
        );
    }
    out
}

/// Runs MPICH's `test` as a world of `ranks` ranks, `first` as part 0: Ok
/// when both parts exit 0 and part 0 prints "No Errors".
fn mpich_on_world(
    (test, ranks): (&str, usize),
    first: Mpi,
    dir: &TempDir,
    vmd: &Vmd,
) -> Result<(), String> {
    let program = |mpi: Mpi| mpich_with_own_harness(test, mpi, dir);
    let name = format!("world-{}-{}", test.replace(['/', '.'], "-"), first.name());
    let (a, b) = parts(&name, first, (ranks / 2, ranks - ranks / 2), &program, &[]);
    let (oa, ob) = run_pair(vmd, &a, &b, Duration::from_secs(120));
    // MTest_Finalize (or run_mpitests.c's main) prints on world rank 0,
    // which is part 0's.
    if oa.status.success()
        && ob.status.success()
        && String::from_utf8_lossy(&oa.stdout).contains("No Errors")
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

/// The few of [`MPICH_ON_WORLD`] run by default (a collective, a split:
/// some 20 s for both orders); the ignored test runs all.
const MPICH_ON_WORLD_QUICK: &[&str] = &["coll/coll13.c", "comm/cmsplit.c", "merged/allred3.c"];

fn mpich_suite_on_world(first: Mpi, quick: bool) {
    let dir = TempDir::new("world-mpich");
    let vmd = Vmd::start("localhost", &[]);
    let mut failed = Vec::new();
    // ISTHMUS_WORLD_TESTS (a comma-separated list) runs only those.
    let only = std::env::var("ISTHMUS_WORLD_TESTS").ok();
    let chosen = |t: &&(&str, usize)| {
        only.as_ref()
            .map_or(!quick || MPICH_ON_WORLD_QUICK.contains(&t.0), |o| {
                o.split(',').any(|x| x == t.0)
            })
    };
    for &(test, ranks) in MPICH_ON_WORLD.iter().filter(chosen) {
        match mpich_on_world((test, ranks), first, &dir, &vmd) {
            Ok(()) => println!("PASS {test} ({} first)", first.name()),
            Err(e) => {
                println!("FAIL {test} ({} first)\n{e}", first.name());
                failed.push(e)
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn mpich_tests_on_a_world_open_mpi_first() {
    mpich_suite_on_world(Mpi::OpenMpi, true);
}

#[test]
fn mpich_tests_on_a_world_mpich_first() {
    mpich_suite_on_world(Mpi::Mpich, true);
}

#[test]
#[ignore = "the whole list, both orders: some 3 minutes"]
fn mpich_tests_on_a_world_all() {
    mpich_suite_on_world(Mpi::OpenMpi, false);
    mpich_suite_on_world(Mpi::Mpich, false);
}

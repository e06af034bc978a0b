//! One `MPI_COMM_WORLD` across implementations (`ISTHMUS_WORLD`, issue 19):
//! a plain C program (tests/c/world.c) run as a world of 2 Open MPI ranks
//! and 2 MPICH ranks, each part started by its own launcher, both orders
//! (Open MPI as part 0, then MPICH as part 0): rank/size, the world's
//! attributes, a ring of point-to-point, collectives, dup, split, the
//! world's group and a communicator created from it, an intercommunicator
//! between the parts over the world, and the refusal of `MPI_Comm_connect`
//! on the world. A part alone fails at
//! `MPI_Init` after its deadline, naming the part that did not arrive.
//! `isthmus run`'s MPMD form starts such a world. Failures
//! (tests/c/world_fail.c): an `MPI_Abort` in one part ends the other; a
//! rank killed by a signal is reported to the other part (an error naming
//! it, or an abort under `MPI_ERRORS_ARE_FATAL`), never a hang. Fortran
//! (tests/fortran/world.F90) and mpi4py (tests/python/world.py) see the
//! same world, both orders.
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

/// The C program `tests/c/<source>.c` run as world `name` of 2 + 2 ranks,
/// `first` as part 0, within `deadline`: both parts' outputs and both
/// printed for an assertion's message.
fn run_c_world(
    source: &str,
    name: &str,
    first: Mpi,
    args: &[String],
    deadline: Duration,
) -> (std::process::Output, std::process::Output, String) {
    let dir = TempDir::new(source);
    let vmd = Vmd::start("localhost", &[]);
    let program = |mpi: Mpi| {
        let p = dir.0.join(format!("{source}-{}", mpi.name()));
        if !p.exists() {
            build_c(
                mpi,
                &[crate_dir().join(format!("tests/c/{source}.c"))],
                &p,
                Linking::Linked,
            );
        }
        p
    };
    let (a, b) = parts(name, first, (2, 2), &program, args);
    let (oa, ob) = run_pair(&vmd, &a, &b, deadline);
    let both = format!(
        "part 0 ({}):\n{}\npart 1 ({}):\n{}",
        first.name(),
        text(&oa),
        first.other().name(),
        text(&ob)
    );
    (oa, ob, both)
}

fn world_c(first: Mpi) {
    let (oa, ob, both) = run_c_world(
        "world",
        &format!("world-c-{}", first.name()),
        first,
        &["2".into(), "2".into()],
        Duration::from_secs(120),
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
}

#[test]
fn one_world_open_mpi_first() {
    world_c(Mpi::OpenMpi);
}

#[test]
fn one_world_mpich_first() {
    world_c(Mpi::Mpich);
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

/// world_fail.c in `mode` as a world of 2 + 2 ranks, `first` as part 0;
/// never a hang: every part ends well within the deadline.
fn world_fail(mode: &str, first: Mpi) -> (std::process::Output, std::process::Output, String) {
    run_c_world(
        "world_fail",
        &format!("world-fail-{mode}-{}", first.name()),
        first,
        &[mode.into()],
        Duration::from_secs(60),
    )
}

/// `MPI_Abort(MPI_COMM_WORLD, 7)` on the world's last rank ends both
/// parts, part 0's ranks waiting in a receive within their own part that
/// only an abort can end: the other part aborts through its own MPI, with
/// the same error code.
#[test]
fn an_abort_ends_every_part() {
    let (oa, ob, both) = world_fail("abort", Mpi::Mpich);
    let err = String::from_utf8_lossy(&oa.stderr);
    assert!(
        oa.status.code() == Some(7)
            && !ob.status.success()
            && err.contains("called MPI_Abort with error code 7"),
        "{both}"
    );
}

/// A rank killed by a signal: the other part's calls involving it return
/// an error naming it under `MPI_ERRORS_RETURN` (a receive from it, a send
/// to it, an Allreduce on the world), and `MPI_Finalize` returns.
#[test]
fn a_killed_rank_is_reported_to_the_other_part() {
    let (oa, ob, both) = world_fail("kill", Mpi::OpenMpi);
    let out = String::from_utf8_lossy(&oa.stdout);
    assert!(
        oa.status.success()
            && !ob.status.success()
            && (0..2).all(|r| out.contains(&format!("PASS kill rank {r}\n")))
            && out.contains("MPI_Recv: Isthmus: MPI_Recv: rank 3 of this communicator"),
        "{both}"
    );
}

/// Under the default `MPI_ERRORS_ARE_FATAL` the same receive aborts the
/// other part, with the failed rank named.
#[test]
fn a_killed_rank_aborts_the_other_part_under_errors_are_fatal() {
    let (oa, ob, both) = world_fail("fatal", Mpi::Mpich);
    let err = String::from_utf8_lossy(&oa.stderr);
    assert!(
        !oa.status.success()
            && !ob.status.success()
            && err.contains("MPI_Recv: rank 3 of this communicator")
            && err.contains("has failed"),
        "{both}"
    );
}

/// Runs the two parts `a` (part 0) and `b` of a world and checks that
/// every rank printed `"{pass} R of 4"`.
fn run_world_of(a: Job, b: Job, pass: &str) {
    let vmd = Vmd::start("localhost", &[]);
    let (oa, ob) = run_pair(&vmd, &a, &b, Duration::from_secs(120));
    let both = format!("part 0:\n{}\npart 1:\n{}", text(&oa), text(&ob));
    for (o, ranks) in [(&oa, [0, 1]), (&ob, [2, 3])] {
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success()
                && ranks
                    .iter()
                    .all(|r| out.contains(&format!("{pass} {r} of 4"))),
            "a part failed\n{both}"
        );
    }
}

/// A Fortran program (`use mpi`), built with each implementation's
/// `mpifort` and linked with libisthmus, sees one world: size, rank, a
/// send across the parts, an Allreduce; `first` as part 0 (Open MPI's
/// Fortran calls `PMPI_*`: libisthmus's Fortran entry points carry them).
fn fortran_world(first: Mpi) {
    let dir = TempDir::new("world-fortran");
    let program = |mpi: Mpi| {
        let out = dir.0.join(format!("world-f-{}", mpi.name()));
        let lib = lib_dir(mpi);
        let o = std::process::Command::new(format!("mpifort.{}", mpi.name()))
            .args(["-O2", "-o"])
            .arg(&out)
            .arg(crate_dir().join("tests/fortran/world.F90"))
            .arg(format!("-L{}", lib.display()))
            .arg("-listhmus")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-Wl,--disable-new-dtags")
            .output()
            .expect("run mpifort");
        assert!(
            o.status.success(),
            "mpifort.{}: {}",
            mpi.name(),
            String::from_utf8_lossy(&o.stderr)
        );
        out
    };
    let name = format!("world-fortran-{}", first.name());
    let (a, b) = parts(&name, first, (2, 2), &program, &["2".into()]);
    run_world_of(a, b, "PASS fortran world rank");
}

#[test]
fn fortran_sees_one_world_open_mpi_first() {
    fortran_world(Mpi::OpenMpi);
}

#[test]
fn fortran_sees_one_world_mpich_first() {
    fortran_world(Mpi::Mpich);
}

/// An mpi4py script (`MPI.COMM_WORLD`) under the preloaded libisthmus sees
/// one world: size, rank, `MPI_APPNUM`, a send across, an Allreduce;
/// `first` as part 0 (MPICH's mpi4py is the one scripts/install-deps.sh
/// builds).
fn mpi4py_world(first: Mpi) {
    let mpi4py_mpich = std::env::var("ISTHMUS_MPI4PY_MPICH")
        .unwrap_or_else(|_| "/opt/isthmus/mpi4py-mpich".into());
    let part = |mpi: Mpi, index: u32| {
        let mut env = vec![
            (
                "ISTHMUS_WORLD".into(),
                format!("world-python-{}:{index}/2", first.name()),
            ),
            ("ISTHMUS_WORLD_TIMEOUT".into(), "60".into()),
        ];
        if mpi == Mpi::Mpich {
            env.push(("PYTHONPATH".into(), mpi4py_mpich.clone()));
        }
        Job {
            mpi,
            np: 2,
            program: PathBuf::from("/usr/bin/python3"),
            args: vec![
                crate_dir()
                    .join("tests/python/world.py")
                    .display()
                    .to_string(),
                "2".into(),
            ],
            env,
            linking: Linking::Unmodified,
        }
    };
    run_world_of(
        part(first, 0),
        part(first.other(), 1),
        "PASS python world rank",
    );
}

#[test]
fn mpi4py_sees_one_world_mpich_first() {
    mpi4py_world(Mpi::Mpich);
}

#[test]
fn mpi4py_sees_one_world_open_mpi_first() {
    mpi4py_world(Mpi::OpenMpi);
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
    ("group/groupcreate.c", 4),
    ("group/grouptest.c", 8),
    ("group/grouptest2.c", 4),
    ("group/gtranks.c", 8),
    ("attr/attrt.c", 2),
    ("attr/attrend.c", 4),
    ("attr/attrend2.c", 5),
    ("datatype/tresized.c", 2),
    ("datatype/tresized2.c", 2),
    ("datatype/sendrecvt2.c", 2),
    ("datatype/sendrecvt4.c", 2),
    ("datatype/tfree.c", 2),
    ("datatype/subarray.c", 2),
    ("datatype/dataalign.c", 2),
    ("pt2pt/sendrecv2.c", 2),
    ("pt2pt/large_tag.c", 2),
    // The shared suite's intracommunicator tests (tests/merged), whose
    // MTestGetIntracomm loop makes communicators from the world's group
    // and intercommunicators over the world, merged again.
    ("merged/allred3.c", 4),
    ("merged/alltoall1.c", 4),
    ("merged/exscan.c", 4),
    ("merged/gather.c", 4),
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
        let text = std::fs::read_to_string(&src).unwrap_or_default();
        if text.contains("int run(const char *arg)") {
            sources.push(harness.join("util/run_mpitests.c"));
        }
        // MPICH's datatype tests that walk its list of types (libdtypes).
        if text.contains("#include \"dtypes.h\"") {
            sources.push(harness.join("util/dtypes.c"));
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

/// The few of [`MPICH_ON_WORLD`] run by default (a collective, a split,
/// datatypes and groups: some 30 s for both orders); the ignored test runs all.
const MPICH_ON_WORLD_QUICK: &[&str] = &[
    "coll/coll13.c",
    "comm/cmsplit.c",
    "merged/allred3.c",
    // A receive's datatype freed while the receive is pending; empty
    // groups freed by the program.
    "datatype/tfree.c",
    "group/grouptest2.c",
];

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

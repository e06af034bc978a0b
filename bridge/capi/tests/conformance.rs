//! MPICH's own intercommunicator tests, and its intracommunicator tests on
//! the merge of an Isthmus intercommunicator (`tests/merged`)
//! (`shared/conformance/mpich` beside
//! the repository, or `$ISTHMUS_CONFORMANCE_DIR`), unmodified, between two separately
//! started jobs — Open MPI on the left and MPICH on the right, and the other
//! way round — with Isthmus's MTest harness (tests/mtest), whose
//! `MTestGetIntercomm` returns an Isthmus intercommunicator.
//!
//! MPICH runs each test with N processes (its testlist) split into two
//! halves; here each job has N/2 ranks — except probe_intercomm, which
//! MPICH runs with 2 and which requires 2 in `MPI_COMM_WORLD`: its jobs get
//! 2 each. A test passes when both jobs exit 0 and each prints " No Errors".

#![cfg(test)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;

/// `$ISTHMUS_CONFORMANCE_DIR`, else `shared/conformance/mpich` in the
/// nearest folder above the repository that has it (CI puts `shared/`
/// beside the clone).
fn suite_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("ISTHMUS_CONFORMANCE_DIR") {
        return PathBuf::from(d);
    }
    let repo = crate_dir().join("../..");
    let repo = repo.canonicalize().unwrap_or(repo);
    repo.ancestors()
        .map(|a| a.join("shared/conformance/mpich"))
        .find(|d| d.join("tests").is_dir())
        .unwrap_or_else(|| repo.join("../shared/conformance/mpich"))
}

/// Builds `test` (a path under tests/) for `mpi`.
fn build(test: &str, mpi: Mpi, dir: &TempDir) -> PathBuf {
    let src = suite_dir().join("tests").join(test);
    assert!(src.exists(), "conformance test {} not found", src.display());
    let name = test.replace('/', "_").trim_end_matches(".c").to_string();
    let out = dir.0.join(format!("{name}-{}", mpi.name()));
    // The collective tests include MPICH's `mpicolltest.h` as it is; those
    // written as `run(const char *)` functions are given a main.
    let has_run =
        std::fs::read_to_string(&src).is_ok_and(|t| t.contains("int run(const char *arg)"));
    let mut sources = vec![src, crate_dir().join("tests/mtest/mtest.c")];
    if has_run {
        sources.push(crate_dir().join("tests/mtest/run_main.c"));
    }
    build_c_including(
        mpi,
        &sources,
        &[suite_dir().join("reference")],
        &out,
        Linking::Linked,
    );
    out
}

/// The tests of `tests/merged`, run on the merge of an Isthmus
/// intercommunicator (the harness's `ISTHMUS_MTEST_MERGE`).
fn is_merged(test: &str) -> bool {
    test.starts_with("merged/")
}

/// Runs `test` with `np` ranks per job, `left` being the implementation of
/// the left group, with extra arguments.
fn conformance(test: &str, np: usize, left: Mpi, args: &[&str]) {
    let dir = TempDir::new("conformance");
    let vmd = Vmd::start("localhost", &[]);
    let tag = test.replace(['/', '.'], "-");
    // The left group is the one whose name sorts first.
    let (gl, gr) = (format!("a-{tag}-left"), format!("b-{tag}-right"));
    let job = |mpi: Mpi, me: &str, other: &str| Job {
        mpi,
        np,
        program: build(test, mpi, &dir),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: vec![
            ("ISTHMUS_MTEST_GROUP".into(), me.into()),
            ("ISTHMUS_MTEST_PEER".into(), other.into()),
            (
                "ISTHMUS_MTEST_MERGE".into(),
                if is_merged(test) { "1" } else { "0" }.into(),
            ),
        ],
        linking: Linking::Linked,
    };
    let a = job(left, &gl, &gr);
    let b = job(left.other(), &gr, &gl);
    let (oa, ob) = run_pair(&vmd, &a, &b, Duration::from_secs(180));
    let both = || {
        format!(
            "left ({}):\n{}\nright ({}):\n{}",
            left.name(),
            text(&oa),
            left.other().name(),
            text(&ob)
        )
    };
    for (o, side) in [(&oa, "left"), (&ob, "right")] {
        assert!(
            o.status.success(),
            "{test}: the {side} job failed\n{}",
            both()
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(" No Errors"),
            "{test}: the {side} job did not print \" No Errors\"\n{}",
            both()
        );
    }
}

macro_rules! both_ways {
    ($name:ident, $test:expr, $np:expr $(, $arg:expr)*) => {
        mod $name {
            use super::*;
            #[test]
            fn openmpi_left_mpich_right() {
                conformance($test, $np, Mpi::OpenMpi, &[$($arg),*]);
            }
            #[test]
            fn mpich_left_openmpi_right() {
                conformance($test, $np, Mpi::Mpich, &[$($arg),*]);
            }
        }
    };
}

// Ranks per job.
both_ways!(icsend, "pt2pt/icsend.c", 2);
both_ways!(icsend_randomized, "pt2pt/icsend.c", 2, "-randomize=1");
both_ways!(icprobe, "pt2pt/icprobe.c", 2);
both_ways!(icprobe_randomized, "pt2pt/icprobe.c", 2, "-randomize=1");
both_ways!(probe_intercomm, "comm/probe_intercomm.c", 2);
both_ways!(dupic, "comm/dupic.c", 2);
both_ways!(comm_idup_isend, "comm/comm_idup_isend.c", 3);
// Collectives: MPICH runs them with 5, 7 and 8 ranks; here 8 (4 per job)
// and 6 (3 per job).
both_ways!(icbarrier, "coll/icbarrier.c", 4);
both_ways!(icbarrier_np3, "coll/icbarrier.c", 3);
both_ways!(icbcast, "coll/icbcast.c", 4);
both_ways!(icbcast_np3, "coll/icbcast.c", 3);
// MPICH's intracommunicator tests on the merge of an Isthmus
// intercommunicator: MPICH's rank counts split evenly between the jobs.
both_ways!(merged_allred3, "merged/allred3.c", 5);
both_ways!(merged_alltoall1, "merged/alltoall1.c", 4);
both_ways!(merged_gather, "merged/gather.c", 2);
both_ways!(merged_exscan, "merged/exscan.c", 5);

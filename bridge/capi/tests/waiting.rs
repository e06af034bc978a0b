//! Every way of waiting (`ISTHMUS_WAIT`: poll, adaptive, block) carries
//! MPICH's own intercommunicator collective tests, unmodified, between an
//! Open MPI job and an MPICH job both ways, with more ranks than this
//! machine has cores (4+4): the leaders wait for the bridge and the other
//! ranks wait in their collective's native step, which `isthmus_bridge::native`
//! runs as the MPI's nonblocking operation tested in a loop (yielding the
//! core, or sleeping under `block`) instead of the MPI's own spinning wait
//! (with Open MPI its blocking collective, Open MPI made to yield for the
//! step's length, but under `block`; the last test here checks that the
//! program's own Open MPI keeps its setting, and the one after it what
//! libisthmus does to the process's malloc).
//! A value that is none of the three is a warning, and the default applies.

#![cfg(test)]

mod common;

use common::*;

fn conformance(test: &str, left: Mpi, wait: &str) {
    let np = (4, 4);
    if let Err(why) = run_conformance_with(
        test,
        np,
        (left, left.other()),
        &[],
        &[("ISTHMUS_WAIT", wait)],
    ) {
        panic!("ISTHMUS_WAIT={wait}: {why}");
    }
}

macro_rules! every_wait {
    ($name:ident, $test:expr) => {
        mod $name {
            use super::*;
            #[test]
            fn poll_openmpi_left() {
                conformance($test, Mpi::OpenMpi, "poll");
            }
            #[test]
            fn poll_mpich_left() {
                conformance($test, Mpi::Mpich, "poll");
            }
            #[test]
            fn block_openmpi_left() {
                conformance($test, Mpi::OpenMpi, "block");
            }
            #[test]
            fn block_mpich_left() {
                conformance($test, Mpi::Mpich, "block");
            }
            #[test]
            fn a_bad_value_waits_as_the_default() {
                conformance($test, Mpi::Mpich, "spin");
            }
        }
    };
}

every_wait!(icbarrier, "coll/icbarrier.c");
every_wait!(icallreduce, "coll/icallreduce.c");
every_wait!(icscatter, "coll/icscatter.c");

/// What a one-rank job of `mpi` running `program` prints, with `env`
/// (passed on with `-x` by Open MPI's launcher; MPICH's passes everything).
fn one_rank(mpi: Mpi, program: &std::path::Path, env: &[(&str, &str)]) -> String {
    let mut cmd = std::process::Command::new(mpi.mpiexec());
    cmd.args(["-n", "1"]);
    for (k, v) in env {
        cmd.env(k, v);
        if mpi == Mpi::OpenMpi {
            cmd.args(["-x", k]);
        }
    }
    let o = finish(
        cmd.arg(program)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start the job"),
        std::time::Duration::from_secs(60),
        "one-rank job",
    );
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// What Open MPI holds as `mpi_yield_when_idle` after `MPI_Init` in a
/// one-rank job of `program` with `env`, from its MPI_T variable
/// (tests/c/yield_when_idle.c).
fn yield_when_idle(program: &std::path::Path, env: &[(&str, &str)]) -> String {
    one_rank(Mpi::OpenMpi, program, env)
}

/// libisthmus leaves Open MPI's own `mpi_yield_when_idle` as the program
/// and its launcher set it (the merged collectives' blocking native steps
/// switch Open MPI's yield on for their own length only, `native_step`):
/// switched on for the whole run, the program's own small collectives
/// would pay a system call per idle turn (a two-rank 8-byte Allreduce:
/// 0.9-1.1 µs instead of 0.3).
#[test]
fn libisthmus_leaves_open_mpi_s_own_yield_setting_alone() {
    let dir = TempDir::new("yield-when-idle");
    let src = [crate_dir().join("tests/c/yield_when_idle.c")];
    let (with, without) = (dir.0.join("with"), dir.0.join("without"));
    build_c(Mpi::OpenMpi, &src, &with, Linking::Linked);
    // The same program without the library: Open MPI's own default.
    let status = std::process::Command::new(Mpi::OpenMpi.mpicc())
        .args(["-O2", "-o"])
        .arg(&without)
        .args(&src)
        .status()
        .expect("run mpicc");
    assert!(status.success(), "mpicc failed");
    assert_eq!(yield_when_idle(&without, &[]), "yield_when_idle=0");
    for wait in ["adaptive", "poll", "block"] {
        assert_eq!(
            yield_when_idle(&with, &[("ISTHMUS_WAIT", wait)]),
            "yield_when_idle=0",
            "ISTHMUS_WAIT={wait}"
        );
    }
    assert_eq!(
        yield_when_idle(&with, &[("OMPI_MCA_mpi_yield_when_idle", "1")]),
        "yield_when_idle=1"
    );
}

/// What `tests/c/malloc_policy.c` prints in a one-rank job of `mpi` linked
/// with libisthmus, under `env`.
fn malloc_policy(mpi: Mpi, program: &std::path::Path, env: &[(&str, &str)]) -> String {
    one_rank(mpi, program, env)
}

/// libisthmus has large temporary buffers come from the heap and the heap
/// keep their memory (`malloc_policy`: MPICH's collectives allocate and
/// free theirs on every call, and faulted every page in again), unless
/// the user chose malloc's thresholds: then they are left alone.
#[test]
fn large_buffers_stay_in_the_heap_unless_the_user_chose_otherwise() {
    let dir = TempDir::new("malloc-policy");
    let src = [crate_dir().join("tests/c/malloc_policy.c")];
    for mpi in [Mpi::OpenMpi, Mpi::Mpich] {
        let program = dir.0.join(format!("{mpi:?}"));
        build_c(mpi, &src, &program, Linking::Linked);
        assert_eq!(
            malloc_policy(mpi, &program, &[]),
            "malloc from_heap=1 kept=1",
            "{mpi:?}"
        );
        // A tunable of the user's own: glibc's fixed default threshold
        // (128 KiB) maps the buffer by itself.
        assert_eq!(
            malloc_policy(
                mpi,
                &program,
                &[("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=131072")]
            ),
            "malloc from_heap=0 kept=1",
            "{mpi:?}"
        );
    }
}

//! Fortran over Isthmus: programs built with each implementation's
//! `mpifort` (`use mpi`, `include 'mpif.h'`, `use mpi_f08` with the
//! `isthmus_f08` module) exchange data with a C program of the other
//! implementation (and with each other) over an Isthmus intercommunicator,
//! using plain MPI calls. Every program checks every value it receives
//! and prints "all checks passed" per rank.
//!
//! Open MPI's Fortran bindings call `PMPI_*` directly; these runs show
//! that the interposed Fortran entry points (src/fortran/, generated from
//! mpi-functions.txt) carry them.
//! MPICH's `mpif.h`/`use mpi` bindings call the C `MPI_*` functions.

#![cfg(test)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

fn sources() -> PathBuf {
    crate_dir().join("tests/fortran")
}

/// How the Fortran program reaches MPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binding {
    UseMpi,
    MpifH,
    F08,
}

/// Runs `cmd`, failing the test with its output if it fails.
fn run(mut cmd: Command, what: &str) {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        o.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn link_args(mpi: Mpi) -> Vec<String> {
    let lib = lib_dir(mpi);
    vec![
        format!("-L{}", lib.display()),
        "-listhmus".into(),
        format!("-Wl,-rpath,{}", lib.display()),
        // RPATH, not RUNPATH: see common::build_c.
        "-Wl,--disable-new-dtags".into(),
    ]
}

/// Builds the Fortran side with `mpifort.<mpi>` into `dir`.
fn build_fortran(mpi: Mpi, binding: Binding, dir: &Path) -> PathBuf {
    let out = dir.join(format!("fortran-{}-{binding:?}", mpi.name()));
    let mpifort = format!("mpifort.{}", mpi.name());
    let mut cmd = Command::new(&mpifort);
    cmd.args(["-O2", "-o"]).arg(&out);
    match binding {
        Binding::UseMpi => {
            cmd.arg(sources().join("exchange.F90"));
        }
        Binding::MpifH => {
            // mpif.h declares no interfaces: one buffer argument of
            // several types is what legacy MPI code does.
            cmd.args(["-DUSE_MPIF_H", "-fallow-argument-mismatch", "-w"])
                .arg(sources().join("exchange.F90"));
        }
        Binding::F08 => {
            let (moddir, object) = isthmus_f08_module(mpi, dir);
            cmd.arg("-I")
                .arg(&moddir)
                .arg(sources().join("exchange_f08.f90"))
                .arg(&object);
        }
    }
    cmd.args(link_args(mpi));
    run(cmd, &format!("{mpifort} ({binding:?})"));
    out
}

/// The `isthmus_f08` module built with `mpifort.<mpi>` into `dir`: its
/// module directory and object file.
fn isthmus_f08_module(mpi: Mpi, dir: &Path) -> (PathBuf, PathBuf) {
    let mpifort = format!("mpifort.{}", mpi.name());
    let moddir = dir.join(format!("mod-{}", mpi.name()));
    let object = moddir.join("isthmus_f08.o");
    if !object.exists() {
        std::fs::create_dir_all(&moddir).expect("module dir");
        let mut m = Command::new(&mpifort);
        m.args(["-O2", "-c", "-J"])
            .arg(&moddir)
            .arg("-o")
            .arg(&object)
            .arg(crate_dir().join("fortran/isthmus_f08.f90"));
        run(m, &format!("{mpifort} isthmus_f08.f90"));
    }
    (moddir, object)
}

fn build_c_peer(mpi: Mpi, dir: &Path) -> PathBuf {
    let out = dir.join(format!("c-{}", mpi.name()));
    build_c(mpi, &[sources().join("exchange.c")], &out, Linking::Linked);
    out
}

/// A side of a run: a program, its implementation and what it prints.
struct Side {
    mpi: Mpi,
    program: PathBuf,
    /// Prefix of its lines ("fortran", "f08", "c").
    says: &'static str,
}

/// Runs `a` and `b` (2 ranks each) against each other and checks that
/// every rank of both passed its checks.
fn pair(name: &str, a: Side, b: Side) {
    let vmd = Vmd::start("localhost", &[]);
    let (ga, gb) = (format!("{name}-a"), format!("{name}-b"));
    let job = |s: &Side, me: &str, other: &str| Job {
        mpi: s.mpi,
        np: 2,
        program: s.program.clone(),
        args: vec![me.into(), other.into()],
        env: vec![],
        linking: Linking::Linked,
    };
    let (oa, ob) = run_pair(
        &vmd,
        &job(&a, &ga, &gb),
        &job(&b, &gb, &ga),
        Duration::from_secs(120),
    );
    let both = format!(
        "A ({} {}):\n{}\nB ({} {}):\n{}",
        a.says,
        a.mpi.name(),
        text(&oa),
        b.says,
        b.mpi.name(),
        text(&ob)
    );
    for (o, s, other_side) in [(&oa, &a, 2), (&ob, &b, 1)] {
        assert!(o.status.success(), "{name}: a job failed\n{both}");
        let out = String::from_utf8_lossy(&o.stdout);
        for rank in 0..2 {
            assert!(
                out.contains(&format!("{} rank {rank}: all checks passed", s.says)),
                "{name}: {} rank {rank} did not pass\n{both}",
                s.says
            );
            // The first exchange's values, as each side prints them:
            // side*1000 + rank*10 + i from the other side.
            let first = other_side * 1000 + rank * 10 + 1;
            assert!(
                out.contains(&format!("{first}")),
                "{name}: {} rank {rank} did not print {first}\n{both}",
                s.says
            );
        }
    }
}

fn fortran_with_c(fortran_mpi: Mpi, binding: Binding) {
    let dir = TempDir::new("fortran");
    let name = format!("f-{}-{binding:?}", fortran_mpi.name()).to_lowercase();
    let says = if binding == Binding::F08 {
        "f08"
    } else {
        "fortran"
    };
    let f = Side {
        mpi: fortran_mpi,
        program: build_fortran(fortran_mpi, binding, &dir.0),
        says,
    };
    let c = Side {
        mpi: fortran_mpi.other(),
        program: build_c_peer(fortran_mpi.other(), &dir.0),
        says: "c",
    };
    pair(&name, f, c);
}

#[test]
fn openmpi_use_mpi_with_c_mpich() {
    fortran_with_c(Mpi::OpenMpi, Binding::UseMpi);
}

#[test]
fn openmpi_mpif_h_with_c_mpich() {
    fortran_with_c(Mpi::OpenMpi, Binding::MpifH);
}

#[test]
fn mpich_use_mpi_with_c_openmpi() {
    fortran_with_c(Mpi::Mpich, Binding::UseMpi);
}

#[test]
fn mpich_mpif_h_with_c_openmpi() {
    fortran_with_c(Mpi::Mpich, Binding::MpifH);
}

#[test]
fn openmpi_f08_with_c_mpich() {
    fortran_with_c(Mpi::OpenMpi, Binding::F08);
}

#[test]
fn mpich_f08_with_c_openmpi() {
    fortran_with_c(Mpi::Mpich, Binding::F08);
}

/// Fortran on both sides: Open MPI's `use mpi` against MPICH's `mpif.h`.
#[test]
fn openmpi_fortran_with_mpich_fortran() {
    let dir = TempDir::new("fortran");
    let a = Side {
        mpi: Mpi::OpenMpi,
        program: build_fortran(Mpi::OpenMpi, Binding::UseMpi, &dir.0),
        says: "fortran",
    };
    let b = Side {
        mpi: Mpi::Mpich,
        program: build_fortran(Mpi::Mpich, Binding::MpifH, &dir.0),
        says: "fortran",
    };
    pair("f-both", a, b);
}

/// Calls Isthmus refuses (the nonblocking scans, `split_type`,
/// topologies, files, `MPI_Intercomm_create` with an intercommunicator as
/// `local_comm`) made from Fortran on an Isthmus communicator return a refusal
/// naming the call, and still work on ordinary communicators, while
/// `MPI_Barrier`, `MPI_Bcast`, `MPI_Allreduce`, `MPI_Gather` (with MPI's
/// intercommunicator results) and `MPI_Intercomm_merge` (with the merged
/// communicator's size and rank) work on it: Open MPI's `use
/// mpi` (whose bindings call `PMPI_*`, refused by the generated Fortran
/// entry points) against MPICH's (whose bindings call the C functions,
/// refused in C).
#[test]
fn fortran_refusals_openmpi_and_mpich() {
    let dir = TempDir::new("fortran");
    let build = |mpi: Mpi| {
        let program = dir.0.join(format!("refused-{}", mpi.name()));
        let mut cmd = Command::new(format!("mpifort.{}", mpi.name()));
        cmd.args(["-O2", "-o"])
            .arg(&program)
            .arg(sources().join("refused.f90"))
            .args(link_args(mpi));
        run(cmd, &format!("mpifort.{} refused.f90", mpi.name()));
        program
    };
    let vmd = Vmd::start("localhost", &[]);
    let job = |mpi: Mpi, me: &str, other: &str| Job {
        mpi,
        np: 2,
        program: build(mpi),
        args: vec![me.into(), other.into()],
        env: vec![],
        linking: Linking::Linked,
    };
    let (oa, ob) = run_pair(
        &vmd,
        &job(Mpi::OpenMpi, "refused-a", "refused-b"),
        &job(Mpi::Mpich, "refused-b", "refused-a"),
        Duration::from_secs(120),
    );
    let both = format!("Open MPI:\n{}\nMPICH:\n{}", text(&oa), text(&ob));
    for o in [&oa, &ob] {
        assert!(o.status.success(), "a job failed\n{both}");
        let out = String::from_utf8_lossy(&o.stdout);
        for r in 0..2 {
            assert!(
                out.contains(&format!("refused rank {r}: all checks passed")),
                "{both}"
            );
        }
        assert!(out.contains("MPI_Iscan refused"), "{both}");
        for r in 0..2 {
            for what in ["barrier and bcast", "allreduce and gather"] {
                assert!(
                    out.contains(&format!("refused rank {r}: {what} passed")),
                    "{both}"
                );
            }
        }
    }
}

/// Issue 17, item 1, from Fortran (tests/fortran/datatypes.f90, `use
/// mpi`): `MPI_INTEGER`(1/2/8), `MPI_REAL`(4/8), `MPI_DOUBLE_PRECISION`,
/// `MPI_COMPLEX`, `MPI_DOUBLE_COMPLEX`, `MPI_LOGICAL`, `MPI_CHARACTER` and
/// `MPI_2INTEGER` at extreme values (infinities, a NaN, denormals, -0)
/// cross bit for bit between an Open MPI and an MPICH Fortran program, in
/// both directions, with the right `MPI_Get_count`.
#[test]
fn fortran_datatypes_cross_intact_between_openmpi_and_mpich() {
    let dir = TempDir::new("fortran-datatypes");
    let vmd = Vmd::start("localhost", &[]);
    let job = |mpi: Mpi, me: &str, other: &str| {
        let out = dir.0.join(format!("datatypes-{}", mpi.name()));
        let mpifort = format!("mpifort.{}", mpi.name());
        let mut cmd = Command::new(&mpifort);
        cmd.args(["-O2", "-o"])
            .arg(&out)
            .arg(sources().join("datatypes.f90"))
            .args(link_args(mpi));
        run(cmd, &format!("{mpifort} datatypes.f90"));
        Job {
            mpi,
            np: 1,
            program: out,
            args: vec![me.into(), other.into()],
            env: vec![],
            linking: Linking::Linked,
        }
    };
    let (oa, ob) = run_pair(
        &vmd,
        &job(Mpi::OpenMpi, "fdt-a", "fdt-b"),
        &job(Mpi::Mpich, "fdt-b", "fdt-a"),
        Duration::from_secs(120),
    );
    for o in [&oa, &ob] {
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && out.contains("PASS fortran-datatypes") && !out.contains("WRONG"),
            "A (Open MPI):\n{}\nB (MPICH):\n{}",
            text(&oa),
            text(&ob)
        );
    }
}

/// Issue 17, items 2 and 5: the v and w collectives and all fifteen
/// nonblocking ones from Fortran's `use mpi` on an Isthmus
/// intercommunicator (tests/fortran/collectives.f90), the nonblocking ones
/// all outstanding at once and completed by one `MPI_Waitall`: Open MPI's
/// bindings (which call `PMPI_*` directly) reach Isthmus's bodies through
/// the interposed Fortran names. `first` takes the first group's roles (A:
/// the roots of Gatherv, Igather, Ibcast). Then `MPI_Comm_split` (an empty
/// side giving `MPI_COMM_NULL`) and `MPI_Comm_create` of the
/// intercommunicator, each new one used.
fn fortran_collectives(first: Mpi) {
    let dir = TempDir::new("fortran-collectives");
    let build = |mpi: Mpi| {
        let program = dir.0.join(format!("collectives-{}", mpi.name()));
        let mut cmd = Command::new(format!("mpifort.{}", mpi.name()));
        cmd.args(["-O2", "-o"])
            .arg(&program)
            .arg(sources().join("collectives.f90"))
            .args(link_args(mpi));
        run(cmd, &format!("mpifort.{} collectives.f90", mpi.name()));
        program
    };
    stages_pass(
        "fcoll",
        (first, build(first)),
        (first.other(), build(first.other())),
        "collectives",
        &[
            "blocking v and w",
            "nonblocking",
            "split and create",
            "all checks",
        ],
    );
}

/// Runs `a` and `b` (an implementation and a program each, 2 ranks) against
/// each other as the groups `<name>-a` and `<name>-b` (their program's
/// arguments) and checks that every rank of both printed
/// "`<says>` rank R: `<stage>` passed" for every stage, and no "FAILED".
fn stages_pass(name: &str, a: (Mpi, PathBuf), b: (Mpi, PathBuf), says: &str, stages: &[&str]) {
    let vmd = Vmd::start("localhost", &[]);
    let (ga, gb) = (format!("{name}-a"), format!("{name}-b"));
    let job = |(mpi, program): &(Mpi, PathBuf), me: &str, other: &str| Job {
        mpi: *mpi,
        np: 2,
        program: program.clone(),
        args: vec![me.into(), other.into()],
        env: vec![],
        linking: Linking::Linked,
    };
    let (oa, ob) = run_pair(
        &vmd,
        &job(&a, &ga, &gb),
        &job(&b, &gb, &ga),
        Duration::from_secs(180),
    );
    let both = format!(
        "A ({} {}):\n{}\nB ({} {}):\n{}",
        a.0.name(),
        a.1.display(),
        text(&oa),
        b.0.name(),
        b.1.display(),
        text(&ob)
    );
    for o in [&oa, &ob] {
        assert!(o.status.success(), "a job failed\n{both}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains("FAILED"), "{both}");
        for r in 0..2 {
            for what in stages {
                assert!(
                    out.contains(&format!("{says} rank {r}: {what} passed")),
                    "rank {r} did not pass {what}\n{both}"
                );
            }
        }
    }
}

#[test]
fn fortran_collectives_openmpi_roots_with_mpich() {
    fortran_collectives(Mpi::OpenMpi);
}

#[test]
fn fortran_collectives_mpich_roots_with_openmpi() {
    fortran_collectives(Mpi::Mpich);
}

/// tests/fortran/persist.F90 built for `mpi` with `binding` (MPICH's with
/// its MPI 4 calls: Open MPI 4.1 has no `MPI_Isendrecv` nor persistent
/// collectives).
fn build_persist(mpi: Mpi, binding: Binding, dir: &Path) -> PathBuf {
    let out = dir.join(format!("persist-{}-{binding:?}", mpi.name()));
    let mpifort = format!("mpifort.{}", mpi.name());
    let mut cmd = Command::new(&mpifort);
    cmd.args(["-O2", "-o"]).arg(&out);
    if mpi == Mpi::Mpich {
        cmd.arg("-DHAVE_MPI4");
    }
    match binding {
        Binding::UseMpi => {}
        Binding::MpifH => {
            cmd.args(["-DUSE_MPIF_H", "-fallow-argument-mismatch", "-w"]);
        }
        Binding::F08 => {
            let (moddir, object) = isthmus_f08_module(mpi, dir);
            cmd.arg("-DUSE_F08").arg("-I").arg(&moddir).arg(&object);
        }
    }
    cmd.arg(sources().join("persist.F90")).args(link_args(mpi));
    run(cmd, &format!("{mpifort} persist.F90 ({binding:?})"));
    out
}

/// Issue 17, item 5 (tests/fortran/persist.F90): what works from C on an
/// Isthmus communicator works from Fortran. Persistent point-to-point in
/// every mode restarted many times, `MPI_Startall`/`MPI_Waitall` mixing
/// native and Isthmus requests, `MPI_Isendrecv(_replace)` and persistent
/// collectives (MPICH's side; Open MPI 4.1's issues the nonblocking forms),
/// the group calls on a merged communicator and `MPI_Comm_create` of a
/// group of both jobs, `MPI_Comm_split` and `MPI_Comm_create` of the
/// intercommunicator and
/// `MPI_Intercomm_create` over the merged communicator. Open MPI's
/// bindings and MPICH's `use mpi_f08` call `PMPI_*` directly for these:
/// the interposed Fortran names carry them. `a` is side 1 (its group name
/// sorts first: the broadcast's root, the merged order's first ranks).
fn fortran_persist(a: (Mpi, Binding), b: (Mpi, Binding)) {
    let dir = TempDir::new("fortran-persist");
    stages_pass(
        "fpersist",
        (a.0, build_persist(a.0, a.1, &dir.0)),
        (b.0, build_persist(b.0, b.1, &dir.0)),
        "persist",
        &[
            "halo",
            "modes",
            "isendrecv",
            "persistent collective",
            "groups",
            "split and intercomm_create",
            "all checks",
        ],
    );
}

#[test]
fn fortran_persist_openmpi_use_mpi_with_mpich_f08() {
    fortran_persist((Mpi::OpenMpi, Binding::UseMpi), (Mpi::Mpich, Binding::F08));
}

#[test]
fn fortran_persist_mpich_use_mpi_with_openmpi_f08() {
    fortran_persist((Mpi::Mpich, Binding::UseMpi), (Mpi::OpenMpi, Binding::F08));
}

#[test]
fn fortran_persist_openmpi_f08_with_mpich_mpif_h() {
    fortran_persist((Mpi::OpenMpi, Binding::F08), (Mpi::Mpich, Binding::MpifH));
}

#[test]
fn fortran_persist_mpich_f08_with_openmpi_mpif_h() {
    fortran_persist((Mpi::Mpich, Binding::F08), (Mpi::OpenMpi, Binding::MpifH));
}

/// A program built with `mpifort.<mpi>` and libisthmus from
/// tests/fortran/sentinels.F90 (`use mpi`, or `mpif.h`), run alone as one
/// job of 2 ranks: the MPI's own Fortran sentinels (`MPI_IN_PLACE`,
/// `MPI_STATUS(ES)_IGNORE`, `MPI_UNWEIGHTED`) still mean themselves on
/// its `MPI_COMM_WORLD`. MPICH's binding knows them by the addresses of
/// the program's common blocks; before libisthmus depended on MPICH's
/// Fortran library, a program linked `-listhmus` exported none of them,
/// and its in-place `MPI_Allreduce` reduced zeros.
fn sentinels(mpi: Mpi, binding: Binding) {
    let dir = TempDir::new("fortran-sentinels");
    let out = dir.0.join(format!("sentinels-{}-{binding:?}", mpi.name()));
    let mpifort = format!("mpifort.{}", mpi.name());
    let mut cmd = Command::new(&mpifort);
    cmd.args(["-O2", "-o"]).arg(&out);
    if binding == Binding::MpifH {
        cmd.args(["-DUSE_MPIF_H", "-fallow-argument-mismatch", "-w"]);
    }
    cmd.arg(sources().join("sentinels.F90"))
        .args(link_args(mpi));
    run(cmd, &format!("{mpifort} sentinels.F90 ({binding:?})"));
    let vmd = Vmd::start("localhost", &[]);
    let job = Job {
        mpi,
        np: 2,
        program: out,
        args: vec![],
        env: vec![],
        linking: Linking::Linked,
    };
    let o = finish(
        launch(&vmd, &job),
        Duration::from_secs(60),
        "the sentinels job",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    for rank in 0..2 {
        assert!(
            out.contains(&format!("PASS sentinels rank {rank}\n")),
            "{} {binding:?}: rank {rank} did not pass\n{}",
            mpi.name(),
            text(&o)
        );
    }
}

#[test]
fn mpich_fortran_sentinels_work_with_libisthmus_use_mpi() {
    sentinels(Mpi::Mpich, Binding::UseMpi);
}

#[test]
fn mpich_fortran_sentinels_work_with_libisthmus_mpif_h() {
    sentinels(Mpi::Mpich, Binding::MpifH);
}

#[test]
fn openmpi_fortran_sentinels_work_with_libisthmus_use_mpi() {
    sentinels(Mpi::OpenMpi, Binding::UseMpi);
}

#[test]
fn openmpi_fortran_sentinels_work_with_libisthmus_mpif_h() {
    sentinels(Mpi::OpenMpi, Binding::MpifH);
}

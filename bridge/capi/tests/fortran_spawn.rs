//! `MPI_Comm_spawn` and the virtual machine's calls from Fortran, against a
//! real vmd with a tasker per implementation (as tests/spawn.rs and
//! tests/vmcalls.rs do for C): Open MPI managers spawn MPICH workers and
//! MPICH managers spawn Open MPI workers, in `use mpi` and `use mpi_f08`
//! both sides (and `MPI_Comm_spawn_multiple` from Open MPI's `use mpi`),
//! each exchanging point-to-point, merging and disconnecting (tests/fortran/spawn.f90, spawn_f08.f90: plain MPI,
//! libisthmus preloaded, the workers get theirs from their tasker); a
//! missing command gives an error that names it (Open MPI's `use
//! mpi_f08`); two-rank managers of each implementation in `use mpi`, `use
//! mpi_f08` and `mpif.h` call `MPI_Comm_spawn_multiple` of an Open MPI
//! command and an MPICH command, whose children are one world
//! (tests/fortran/spawn_cross.F90); and the `isthmus_vm` module spawns a
//! job, kills it and sees its exit, waiting and through a callback, from
//! each implementation's Fortran (tests/fortran/vmcalls.f90).

#![cfg(test)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

const GUARD: Duration = Duration::from_secs(120);

/// `tests/fortran/<source>` built with `mpifort.<mpi>` (plain: no
/// libisthmus linked), with `extra` arguments before the source; once per
/// directory.
fn fortran(mpi: Mpi, source: &str, dir: &TempDir, extra: &[&str]) -> PathBuf {
    let name = source.trim_end_matches(".f90");
    fortran_as(mpi, source, &format!("{name}-{}", mpi.name()), dir, extra)
}

/// [`fortran`] into `dir/<out>`.
fn fortran_as(mpi: Mpi, source: &str, out: &str, dir: &TempDir, extra: &[&str]) -> PathBuf {
    let out = dir.0.join(out);
    if out.exists() {
        return out;
    }
    let o = Command::new(format!("mpifort.{}", mpi.name()))
        .args(["-O2", "-o"])
        .arg(&out)
        .args(extra)
        .arg(crate_dir().join("tests/fortran").join(source))
        .envs(mpi.env())
        .output()
        .unwrap_or_else(|e| panic!("cannot run mpifort.{}: {e}", mpi.name()));
    assert!(
        o.status.success(),
        "mpifort.{} {source} failed:\n{}",
        mpi.name(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn job(mpi: Mpi, program: &Path, args: &[&str]) -> Job {
    Job {
        mpi,
        np: 1,
        program: program.to_path_buf(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: vec![],
        linking: Linking::Unmodified,
    }
}

/// Managers of `parent` spawn two workers of `child`, one run per
/// `(manager source, role, worker source)`: role `manager` (MPI_Comm_spawn)
/// or `multiple` (MPI_Comm_spawn_multiple, spawn.f90 only); both sides'
/// checks pass and each run's workers are one job of the virtual machine
/// of the child's implementation.
fn managers_spawn_workers(parent: Mpi, child: Mpi, runs: &[(&str, &str, &str)]) {
    let dir = TempDir::new("fortran-spawn");
    let m = Machine::start(&["openmpi", "mpich"]);
    for (manager, role, worker) in runs {
        let what = format!(
            "{parent:?} Fortran manager ({manager} {role}) spawning {child:?} Fortran workers ({worker})"
        );
        let manager = fortran(parent, manager, &dir, &[]);
        let worker = fortran(child, worker, &dir, &[]);
        let worker_s = worker.display().to_string();
        let before = m.jobs().lines().filter(|l| l.contains(&worker_s)).count();
        let o = finish(
            launch(&m.vmd, &job(parent, &manager, &[role, &worker_s])),
            GUARD,
            "manager",
        );
        let jobs = m.jobs();
        assert!(
            o.status.success() && lines(&o, &format!("PASS {role}")).len() == 1,
            "{what}\n{}\njobs:\n{jobs}",
            text(&o)
        );
        let spawned: Vec<&str> = jobs.lines().filter(|l| l.contains(&worker_s)).collect();
        assert!(
            spawned.len() == before + 1 && spawned.iter().all(|l| l.contains(child.name())),
            "{what}: not one more {child:?} job of the virtual machine:\n{jobs}"
        );
    }
}

/// Open MPI's `use mpi` (MPI_Comm_spawn and _multiple) and `use mpi_f08`
/// managers; MPICH's `use mpi_f08` and `use mpi` workers.
#[test]
fn open_mpi_fortran_managers_spawn_mpich_fortran_workers() {
    managers_spawn_workers(
        Mpi::OpenMpi,
        Mpi::Mpich,
        &[
            ("spawn.f90", "manager", "spawn_f08.f90"),
            ("spawn.f90", "multiple", "spawn_f08.f90"),
            ("spawn_f08.f90", "manager", "spawn.f90"),
        ],
    );
}

/// MPICH's `use mpi_f08` and `use mpi` managers; Open MPI's `use mpi` and
/// `use mpi_f08` workers.
#[test]
fn mpich_fortran_managers_spawn_open_mpi_fortran_workers() {
    managers_spawn_workers(
        Mpi::Mpich,
        Mpi::OpenMpi,
        &[
            ("spawn_f08.f90", "manager", "spawn.f90"),
            ("spawn.f90", "manager", "spawn_f08.f90"),
        ],
    );
}

/// tests/fortran/spawn_cross.F90 built for `mpi` in `binding` (`mpi`,
/// `f08` or `mpif.h`), plain; once per directory.
fn cross_program(mpi: Mpi, binding: &str, dir: &TempDir) -> PathBuf {
    let flags: &[&str] = match binding {
        "f08" => &["-DF08"],
        // mpif.h declares no interfaces: one buffer argument of two types.
        "mpif.h" => &["-DUSE_MPIF_H", "-fallow-argument-mismatch", "-w"],
        _ => &[],
    };
    let out = format!("spawn_cross-{}-{}", binding.replace('.', "_"), mpi.name());
    fortran_as(mpi, "spawn_cross.F90", &out, dir, flags)
}

/// Two ranks of a Fortran manager of `parent` (rank 1 the root) call
/// `MPI_Comm_spawn_multiple` of one rank of an `a` command and two of a `b`
/// command (`a` and `b` the two implementations, as each run says), all in
/// one binding per run (tests/fortran/spawn_cross.F90): both parents get
/// the intercommunicator whose remote group is the children's one world;
/// point-to-point both ways, Bcast both ways, Allreduce, the merge refused
/// (three jobs), disconnect; the children ran on their own libraries, as
/// one exited job of each implementation.
fn fortran_managers_spawn_across(parent: Mpi, runs: &[(&str, Mpi)]) {
    let dir = TempDir::new("fortran-spawn-cross");
    let m = Machine::start(&["openmpi", "mpich"]);
    for &(binding, a) in runs {
        let b = a.other();
        let manager = cross_program(parent, binding, &dir);
        let (wa, wb) = (
            cross_program(a, binding, &dir),
            cross_program(b, binding, &dir),
        );
        let (wa_s, wb_s) = (wa.display().to_string(), wb.display().to_string());
        let mut j = job(parent, &manager, &["manager", &wa_s, &wb_s]);
        j.np = 2;
        let o = finish(launch(&m.vmd, &j), GUARD, "manager");
        let all = format!(
            "{parent:?} Fortran managers ({binding}) spawning {a:?} + {b:?}:\n{}\njobs:\n{}",
            text(&o),
            m.jobs()
        );
        let passed = lines(&o, "PASS cross rank ");
        assert!(
            o.status.success() && passed.len() == 2 && passed.iter().all(|r| r == "0" || r == "1"),
            "{all}"
        );
        children_were_one_world(&m, &o, (a, &wa_s), (b, &wb_s), &all);
    }
}

/// Open MPI's `use mpi`, `use mpi_f08` and `mpif.h` managers (their own
/// Fortran entry points in libisthmus), the two orders of the commands.
#[test]
fn open_mpi_fortran_managers_spawn_multiple_across_both_implementations() {
    fortran_managers_spawn_across(
        Mpi::OpenMpi,
        &[
            ("mpi", Mpi::OpenMpi),
            ("f08", Mpi::Mpich),
            ("mpif.h", Mpi::Mpich),
        ],
    );
}

/// MPICH's `use mpi` and `mpif.h` (which reach the C calls) and `use
/// mpi_f08` (its own entry point in libisthmus) managers.
#[test]
fn mpich_fortran_managers_spawn_multiple_across_both_implementations() {
    fortran_managers_spawn_across(
        Mpi::Mpich,
        &[
            ("mpi", Mpi::OpenMpi),
            ("f08", Mpi::Mpich),
            ("mpif.h", Mpi::Mpich),
        ],
    );
}

/// A command that does not exist: every errcode is the returned code,
/// intercomm is MPI_COMM_NULL, and the message names the call, the command
/// and the reason.
#[test]
fn a_fortran_spawn_of_a_missing_command_says_so() {
    let dir = TempDir::new("fortran-spawn-error");
    let m = Machine::start(&["mpich"]);
    let manager = fortran(Mpi::OpenMpi, "spawn_f08.f90", &dir, &[]);
    let missing = dir.0.join("no-such-worker").display().to_string();
    let o = finish(
        launch(&m.vmd, &job(Mpi::OpenMpi, &manager, &["fail", &missing])),
        GUARD,
        "manager",
    );
    let errors = lines(&o, "SPAWN-ERROR same=1 null=1 ");
    assert!(
        o.status.success()
            && lines(&o, "PASS fail").len() == 1
            && errors.len() == 1
            && errors.iter().all(|e| e.contains("MPI_Comm_spawn")
                && e.contains(&missing)
                && e.contains("No such file")),
        "{}",
        text(&o)
    );
}

/// tests/fortran/vmcalls.f90 with the `isthmus_vm` module (compiled here
/// with the program) and libisthmus of `mpi` linked: the waiting form sees
/// the first job's exit; the callback form, on a thread of the library, sees
/// the killed worker's exit with its job id and the program's argument.
fn fortran_program_spawns_kills_and_sees_the_exit(mpi: Mpi) {
    let dir = TempDir::new("fortran-vmcalls");
    let m = Machine::start(&["exec"]);
    let lib = lib_dir(mpi);
    let moddir = dir.0.join("mod");
    std::fs::create_dir_all(&moddir).expect("module dir");
    let program = fortran(
        mpi,
        "vmcalls.f90",
        &dir,
        &[
            "-J",
            &moddir.display().to_string(),
            &crate_dir()
                .join("fortran/isthmus_vm.f90")
                .display()
                .to_string(),
            &format!("-L{}", lib.display()),
            "-listhmus",
            &format!("-Wl,-rpath,{}", lib.display()),
        ],
    );
    let mut j = job(mpi, &program, &[]);
    j.linking = Linking::Linked;
    let o = finish(launch(&m.vmd, &j), GUARD, "vmcalls");
    let all = format!("{mpi:?}\n{}\njobs:\n{}", text(&o), m.jobs());
    assert!(
        o.status.success() && lines(&o, "PASS vmcalls").len() == 1,
        "{all}"
    );
    let spawned = lines(&o, "SPAWNED job=").concat();
    assert!(
        lines(&o, "EVENT ").contains(&format!("job_exit job={spawned} state=4")),
        "{all}"
    );
    let worker = lines(&o, "SPAWNED callback job=").concat();
    assert!(
        !worker.is_empty()
            && worker != spawned
            && lines(&o, "CALLBACK ")
                == [format!("job_exit job={worker} state=4 arg=4242 calls=1")],
        "{all}"
    );
    let errors = lines(&o, "ERROR ");
    assert!(
        errors.len() == 1
            && errors
                .iter()
                .all(|e| e.contains("Isthmus_Spawn") && e.contains("/no/such/program")),
        "{all}"
    );
}

#[test]
fn an_mpich_fortran_program_spawns_kills_and_sees_the_exit_waiting_and_by_callback() {
    fortran_program_spawns_kills_and_sees_the_exit(Mpi::Mpich);
}

#[test]
fn an_open_mpi_fortran_program_spawns_kills_and_sees_the_exit_waiting_and_by_callback() {
    fortran_program_spawns_kills_and_sees_the_exit(Mpi::OpenMpi);
}

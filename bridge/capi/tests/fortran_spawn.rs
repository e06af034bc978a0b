//! `MPI_Comm_spawn` and the virtual machine's calls from Fortran, against a
//! real vmd with a tasker per implementation (as tests/spawn.rs and
//! tests/vmcalls.rs do for C): Open MPI managers spawn MPICH workers and
//! MPICH managers spawn Open MPI workers, in `use mpi` and `use mpi_f08`
//! both sides (and `MPI_Comm_spawn_multiple` from Open MPI's `use mpi`),
//! each exchanging point-to-point, merging and disconnecting (tests/fortran/spawn.f90, spawn_f08.f90: plain MPI,
//! libisthmus preloaded, the workers get theirs from their tasker); a
//! missing command gives an error that names it (Open MPI's `use
//! mpi_f08`); and the `isthmus_vm` module spawns a job, kills it and sees
//! its exit (tests/fortran/vmcalls.f90).

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
    let out = dir.0.join(format!(
        "{}-{}",
        source.trim_end_matches(".f90"),
        mpi.name()
    ));
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
/// with the program) and libisthmus linked.
#[test]
fn a_fortran_program_spawns_kills_and_sees_the_exit() {
    let dir = TempDir::new("fortran-vmcalls");
    let m = Machine::start(&["exec"]);
    let mpi = Mpi::Mpich;
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
    let all = format!("{}\njobs:\n{}", text(&o), m.jobs());
    assert!(
        o.status.success() && lines(&o, "PASS vmcalls").len() == 1,
        "{all}"
    );
    let spawned = lines(&o, "SPAWNED job=").concat();
    assert!(
        lines(&o, "EVENT ").contains(&format!("job_exit job={spawned} state=4")),
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

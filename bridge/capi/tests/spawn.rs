//! `MPI_Comm_spawn` across implementations through the virtual machine
//! (tests/c/spawn.c): a real vmd with a tasker per implementation, each
//! given its implementation's libisthmus (`--libisthmus`); the managers are
//! plain MPI programs run with the library preloaded, the workers plain MPI
//! programs that get it from their tasker. Both directions, on
//! `MPI_COMM_SELF` and on a two-rank communicator with a root that is not
//! rank 0; and the errors, each naming the command and the reason, with no
//! process left behind.

#![cfg(test)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::*;

const GUARD: Duration = Duration::from_secs(180);

/// tests/c/spawn.c built for `mpi`, plain (no libisthmus linked).
fn program(mpi: Mpi, dir: &TempDir) -> PathBuf {
    let out = dir.0.join(format!("spawn-{}", mpi.name()));
    build_c(
        mpi,
        &[crate_dir().join("tests/c/spawn.c")],
        &out,
        Linking::Unmodified,
    );
    out
}

fn manager_job(mpi: Mpi, program: &Path, np: usize, args: &[&str], env: &[(&str, &str)]) -> Job {
    Job {
        mpi,
        np,
        program: program.to_path_buf(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        linking: Linking::Unmodified,
    }
}

fn passed(o: &Output, mode: &str, ranks: usize) -> bool {
    let out = String::from_utf8_lossy(&o.stdout);
    o.status.success() && (0..ranks).all(|r| out.contains(&format!("PASS {mode} rank {r}")))
}

/// A manager of `parent` spawns 2 workers of `child` (the implementation
/// read from the binary, or given as `isthmus_impl`), on MPI_COMM_SELF and
/// from a two-rank job with rank 1 as root; every check on both sides
/// passes (the workers' `MPI_APPNUM` is 0, they find no `ISTHMUS_SPAWN_*`
/// left after `MPI_Init` and not the manager's `ISTHMUS_DATA_ADDR`), and
/// the workers are jobs of the virtual machine that exited 0.
fn manager_spawns_workers(parent: Mpi, child: Mpi) {
    let dir = TempDir::new("spawn");
    let m = Machine::start(&["openmpi", "mpich"]);
    let manager = program(parent, &dir);
    let worker = program(child, &dir);
    let worker = worker.to_str().expect("utf-8 path");
    for (np, mode, implementation) in [(1, "self", None), (2, "world", Some(child.name()))] {
        let mut args = vec!["manager", worker, "2", mode];
        args.extend(implementation);
        // A host-specific variable of the parent's that the children
        // must not get (they check).
        let job = manager_job(
            parent,
            &manager,
            np,
            &args,
            &[("ISTHMUS_DATA_ADDR", "127.0.0.1")],
        );
        let o = finish(launch(&m.vmd, &job), GUARD, "manager");
        assert!(
            passed(&o, "manager", np),
            "{parent:?} manager ({mode}) spawning {child:?} workers\n{}\njobs:\n{}",
            text(&o),
            m.jobs()
        );
    }
    // The children may still be finishing after the disconnect.
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = m.jobs();
        let workers: Vec<&str> = jobs.lines().filter(|l| l.contains(worker)).collect();
        let exited = workers.len() == 2
            && workers
                .iter()
                .all(|l| l.contains("exited") && l.contains(child.name()));
        if exited {
            break;
        }
        assert!(
            Instant::now() < end,
            "the workers are not two exited {child:?} jobs of the virtual machine:\n{jobs}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_open_mpi_manager_spawns_mpich_workers() {
    manager_spawns_workers(Mpi::OpenMpi, Mpi::Mpich);
}

#[test]
fn an_mpich_manager_spawns_open_mpi_workers() {
    manager_spawns_workers(Mpi::Mpich, Mpi::OpenMpi);
}

/// The `SPAWN-ERROR i class=c same=s null=n message` lines, by i.
fn spawn_errors(o: &Output) -> Vec<(String, String)> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("SPAWN-ERROR "))
        .filter_map(|l| {
            let mut w = l.splitn(5, ' ');
            let (_, class, same, null, message) =
                (w.next()?, w.next()?, w.next()?, w.next()?, w.next()?);
            (same == "same=1" && null == "null=1").then(|| (class.to_string(), message.to_string()))
        })
        .collect()
}

/// Processes whose command line names `program`.
fn running(program: &Path) -> Vec<String> {
    let needle = program.display().to_string();
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .filter(|c| c.contains(&needle))
                .collect()
        })
        .unwrap_or_default()
}

fn errors_of(parent: Mpi, child: Mpi) {
    let dir = TempDir::new("spawn-errors");
    let m = Machine::start(&["openmpi", "mpich"]);
    let manager = program(parent, &dir);
    let worker = program(child, &dir);
    let not_executable = dir.0.join("not-executable");
    std::fs::write(&not_executable, "#!/bin/sh\n").expect("write a file");
    let missing = dir.0.join("no-such-worker");
    let path = |p: &Path| p.display().to_string();
    let (worker_s, missing_s, not_exec_s) = (path(&worker), path(&missing), path(&not_executable));
    let args = [
        "fail",
        "3",
        &missing_s,
        "2",
        &not_exec_s,
        "2",
        "/bin/true",
        "1",
        &worker_s,
        "0",
        &worker_s,
        "2",
    ];
    let started = Instant::now();
    let o = finish(
        launch(&m.vmd, &manager_job(parent, &manager, 1, &args, &[])),
        GUARD,
        "manager",
    );
    let errors = spawn_errors(&o);
    let all = format!("{}\njobs:\n{}", text(&o), m.jobs());
    assert!(passed(&o, "fail", 1) && errors.len() == 5, "{all}");
    let said = |i: usize, words: &[&str]| {
        let (_, message) = &errors[i];
        assert!(
            message.contains("MPI_Comm_spawn") && words.iter().all(|w| message.contains(w)),
            "error {i} does not say {words:?}: {message}\n{all}"
        );
    };
    said(0, &[&missing_s, "No such file"]);
    said(1, &[&not_exec_s, "not executable"]);
    said(
        2,
        &[
            "/bin/true",
            "cannot tell its MPI implementation",
            "isthmus_impl",
        ],
    );
    said(3, &[&worker_s, "maxprocs is 0"]);
    said(
        4,
        &[
            &worker_s,
            child.name(),
            "did not all reach MPI_Init",
            "3.0 s",
            "killed",
        ],
    );
    // The command's errors share a class; a bad count and a deadline have
    // their own.
    let class = |i: usize| errors[i].0.clone();
    assert!(class(0) == class(1) && class(1) == class(2), "{all}");
    assert!(
        class(3) != class(0) && class(4) != class(0) && class(3) != class(4),
        "{all}"
    );
    // The sleeping workers were killed: a job of the virtual machine that
    // ended so, and no process of it left.
    assert!(started.elapsed() < Duration::from_secs(60), "{all}");
    let jobs = m.jobs();
    assert!(
        jobs.lines()
            .any(|l| l.contains(&worker_s) && l.contains("killed")),
        "{jobs}"
    );
    let left = running(&worker);
    assert!(left.is_empty(), "processes left behind: {left:?}\n{jobs}");

    // No vmd reachable.
    let nowhere = format!("unix:{}", dir.0.join("no-vmd.sock").display());
    let job = manager_job(
        parent,
        &manager,
        1,
        &["fail", "3", &worker_s, "2"],
        &[("ISTHMUS_VMD", &nowhere)],
    );
    let o = finish(launch(&m.vmd, &job), GUARD, "manager without a vmd");
    let errors = spawn_errors(&o);
    assert!(
        passed(&o, "fail", 1)
            && errors.len() == 1
            && errors[0].1.contains(&worker_s)
            && errors[0].1.contains("no vmd reachable"),
        "{}",
        text(&o)
    );
}

#[test]
fn spawn_errors_name_the_command_and_reason_and_leave_nothing_behind_open_mpi_manager() {
    errors_of(Mpi::OpenMpi, Mpi::Mpich);
}

#[test]
fn spawn_errors_name_the_command_and_reason_and_leave_nothing_behind_mpich_manager() {
    errors_of(Mpi::Mpich, Mpi::OpenMpi);
}

/// `MPI_Comm_spawn_multiple` of two commands of one implementation from a
/// manager of the other: one job of three ranks in which each runs its own
/// command with its own arguments and `isthmus_env`, one MPI_COMM_WORLD;
/// the manager exchanges with all three. Commands of two implementations
/// in one call are refused, saying why, and nothing is started.
fn spawn_multiple(parent: Mpi, child: Mpi) {
    let dir = TempDir::new("spawn-multiple");
    let m = Machine::start(&["openmpi", "mpich"]);
    let manager = program(parent, &dir);
    let worker = program(child, &dir);
    let worker_s = worker.display().to_string();
    let job = manager_job(parent, &manager, 1, &["multiple", &worker_s], &[]);
    let o = finish(launch(&m.vmd, &job), GUARD, "manager");
    assert!(
        passed(&o, "multiple", 1),
        "{}\njobs:\n{}",
        text(&o),
        m.jobs()
    );
    let jobs = m.jobs();
    assert_eq!(
        jobs.lines().filter(|l| l.contains(&worker_s)).count(),
        1,
        "not one job:\n{jobs}"
    );

    let mine = manager.display().to_string();
    let job = manager_job(parent, &manager, 1, &["mixed", &worker_s, &mine], &[]);
    let o = finish(launch(&m.vmd, &job), GUARD, "manager");
    let errors = spawn_errors(&o);
    assert!(
        passed(&o, "mixed", 1)
            && errors.len() == 1
            && errors[0].1.contains("MPI_Comm_spawn_multiple")
            && errors[0].1.contains("implementations differ")
            && errors[0].1.contains(child.name())
            && errors[0].1.contains(parent.name()),
        "{}",
        text(&o)
    );
    assert_eq!(
        m.jobs().lines().filter(|l| l.contains(&mine)).count(),
        0,
        "the refused spawn started something:\n{}",
        m.jobs()
    );
}

#[test]
fn an_open_mpi_manager_spawns_multiple_mpich_commands_as_one_job() {
    spawn_multiple(Mpi::OpenMpi, Mpi::Mpich);
}

#[test]
fn an_mpich_manager_spawns_multiple_open_mpi_commands_as_one_job() {
    spawn_multiple(Mpi::Mpich, Mpi::OpenMpi);
}

/// Children that exit with 3 before `MPI_Init`: the spawn fails as soon as
/// the resource manager reports it — well before its long deadline — with
/// an error naming the command and the exit status, and nothing is left.
fn a_child_that_dies_before_mpi_init(parent: Mpi, child: Mpi) {
    let dir = TempDir::new("spawn-dies");
    let m = Machine::start(&["openmpi", "mpich"]);
    let manager = program(parent, &dir);
    let worker = program(child, &dir);
    let worker_s = worker.display().to_string();
    // Past GUARD: only the early notice lets the manager finish in time.
    let job = manager_job(
        parent,
        &manager,
        1,
        &["fail", "600", &worker_s, "2"],
        &[("SPAWN_TEST_CHILD", "exit3")],
    );
    let o = finish(launch(&m.vmd, &job), GUARD, "manager");
    let errors = spawn_errors(&o);
    let all = format!("{}\njobs:\n{}", text(&o), m.jobs());
    assert!(passed(&o, "fail", 1) && errors.len() == 1, "{all}");
    let message = &errors[0].1;
    assert!(
        message.contains("MPI_Comm_spawn")
            && message.contains(&worker_s)
            && message.contains("exited with code 3")
            && message.contains("before it met its parents")
            && !message.contains("did not all reach MPI_Init"),
        "{all}"
    );
    let left = running(&worker);
    assert!(left.is_empty(), "processes left behind: {left:?}\n{all}");
    let jobs = m.jobs();
    assert!(
        jobs.lines()
            .any(|l| l.contains(&worker_s) && (l.contains("failed") || l.contains("killed"))),
        "{jobs}"
    );
}

#[test]
fn a_child_dying_before_mpi_init_fails_the_spawn_at_once_open_mpi_manager() {
    a_child_that_dies_before_mpi_init(Mpi::OpenMpi, Mpi::Mpich);
}

#[test]
fn a_child_dying_before_mpi_init_fails_the_spawn_at_once_mpich_manager() {
    a_child_that_dies_before_mpi_init(Mpi::Mpich, Mpi::OpenMpi);
}

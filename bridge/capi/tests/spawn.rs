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

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::*;

const GUARD: Duration = Duration::from_secs(180);

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
    let manager = spawn_program(parent, &dir);
    let worker = spawn_program(child, &dir);
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
    let manager = spawn_program(parent, &dir);
    let worker = spawn_program(child, &dir);
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
/// the manager exchanges with all three.
fn spawn_multiple(parent: Mpi, child: Mpi) {
    let dir = TempDir::new("spawn-multiple");
    let m = Machine::start(&["openmpi", "mpich"]);
    let manager = spawn_program(parent, &dir);
    let worker = spawn_program(child, &dir);
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
    let manager = spawn_program(parent, &dir);
    let worker = spawn_program(child, &dir);
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

/// `MPI_Comm_spawn_multiple` of an Open MPI command and an MPICH command
/// (each order) from a manager of `parent`, on `MPI_COMM_SELF` and from a
/// two-rank job with rank 1 as root (every parent gets the
/// intercommunicator): the children are the two parts of one world — 1
/// rank of the first command, 2 of the second, one MPI_COMM_WORLD of 3 in
/// the call's order, `MPI_APPNUM` the command's index, each on its own
/// implementation's library — and the managers' intercommunicator's
/// remote group is that world: point-to-point both ways, Bcast both ways,
/// Allreduce (the children's sum is over every parent), disconnect;
/// `MPI_Intercomm_merge` is refused, saying why (three jobs). The children
/// are two jobs of the virtual machine, one per implementation, that exit
/// 0.
fn spawn_multiple_across(parent: Mpi) {
    let dir = TempDir::new("spawn-cross");
    let m = Machine::start(&["openmpi", "mpich"]);
    let manager = spawn_program(parent, &dir);
    let other = spawn_program(parent.other(), &dir);
    let built = |mpi: Mpi| if mpi == parent { &manager } else { &other };
    let orders = [(Mpi::OpenMpi, Mpi::Mpich), (Mpi::Mpich, Mpi::OpenMpi)];
    for ((a, b), (np, mode)) in orders
        .into_iter()
        .flat_map(|o| [(1, "self"), (2, "world")].map(|m| (o, m)))
    {
        // A copy per order and mode, so that each run's jobs are told apart.
        let copy = |which: &str, mpi: Mpi| {
            let w = dir
                .0
                .join(format!("worker-{which}-{}-{}-{mode}", a.name(), b.name()));
            std::fs::copy(built(mpi), &w).expect("copy worker");
            w
        };
        let (wa, wb) = (copy("a", a), copy("b", b));
        let (wa_s, wb_s) = (wa.display().to_string(), wb.display().to_string());
        let job = manager_job(parent, &manager, np, &["cross", &wa_s, &wb_s, mode], &[]);
        let o = finish(launch(&m.vmd, &job), GUARD, "manager");
        let all = format!(
            "{a:?} + {b:?} from {np} {parent:?} parents ({mode}):\n{}\njobs:\n{}",
            text(&o),
            m.jobs()
        );
        assert!(passed(&o, "cross", np), "{all}");
        children_were_one_world(&m, &o, (a, &wa_s), (b, &wb_s), &all);
    }
}

#[test]
fn an_open_mpi_manager_spawns_multiple_across_both_implementations() {
    spawn_multiple_across(Mpi::OpenMpi);
}

#[test]
fn an_mpich_manager_spawns_multiple_across_both_implementations() {
    spawn_multiple_across(Mpi::Mpich);
}

/// The errors of `MPI_Comm_spawn_multiple` across implementations, each
/// naming the reason, every errcode the returned code, the intercomm
/// `MPI_COMM_NULL`, and no process left behind: a missing command (nothing
/// starts), a part with no tasker (the other part, started, is killed),
/// children that never reach `MPI_Init` (both parts killed at the
/// deadline), three implementations and interleaved implementations
/// (refused before anything starts).
fn spawn_multiple_across_errors(parent: Mpi) {
    let dir = TempDir::new("spawn-cross-errors");
    let m = Machine::start(&["openmpi", "mpich"]);
    let manager = spawn_program(parent, &dir);
    let ompi = spawn_program(Mpi::OpenMpi, &dir);
    let mpich = spawn_program(Mpi::Mpich, &dir);
    let missing = dir.0.join("no-such-worker");
    let path = |p: &Path| p.display().to_string();
    let (ompi_s, mpich_s, missing_s) = (path(&ompi), path(&mpich), path(&missing));
    let cases: [(&[&str], &[&str], bool); 5] = [
        (
            &["30", &ompi_s, "-", &missing_s, "-"],
            &[&missing_s, "No such file"],
            false,
        ),
        (
            &["30", &ompi_s, "-", &mpich_s, "mpich5"],
            &["refused its mpich5 job"],
            true,
        ),
        (
            &["3", &mpich_s, "-", &ompi_s, "-"],
            &["did not all reach MPI_Init", "3.0 s"],
            true,
        ),
        (
            &["30", &ompi_s, "-", &mpich_s, "-", &ompi_s, "openmpi5"],
            &["3 MPI implementations", "two parts at most"],
            false,
        ),
        (
            &["30", &ompi_s, "-", &mpich_s, "-", &ompi_s, "-"],
            &["interleave", "cannot follow the call's order"],
            false,
        ),
    ];
    // Error strings are cut (Open MPI's at 256 bytes, and the paths are
    // long): how a started part ended is checked in the job table.
    for (args, words, started) in cases {
        let before = m.jobs().lines().count();
        let mut all_args = vec!["crossfail"];
        all_args.extend_from_slice(args);
        let began = Instant::now();
        let o = finish(
            launch(&m.vmd, &manager_job(parent, &manager, 1, &all_args, &[])),
            GUARD,
            "manager",
        );
        let errors = spawn_errors(&o);
        let jobs = m.jobs();
        let all = format!("{args:?} from {parent:?}:\n{}\njobs:\n{jobs}", text(&o));
        assert!(passed(&o, "crossfail", 1) && errors.len() == 1, "{all}");
        let message = &errors[0].1;
        assert!(
            message.contains("MPI_Comm_spawn_multiple")
                && words.iter().all(|w| message.contains(w)),
            "the error does not say {words:?}: {message}\n{all}"
        );
        assert!(began.elapsed() < Duration::from_secs(60), "{all}");
        let workers = |l: &&str| l.contains(&ompi_s) || l.contains(&mpich_s);
        let now = jobs.lines().filter(workers).count();
        if started {
            assert!(now > 0, "no job was started:\n{all}");
        }
        assert!(
            jobs.lines()
                .skip(before)
                .filter(workers)
                .all(|l| l.contains("killed")),
            "a started part was not killed:\n{all}"
        );
        for w in [&ompi, &mpich] {
            let left = running(w);
            assert!(left.is_empty(), "processes left behind: {left:?}\n{all}");
        }
        if !started {
            assert_eq!(
                jobs.lines().count(),
                before,
                "the refused spawn started something:\n{all}"
            );
        }
    }
}

#[test]
fn spawn_multiple_across_implementations_errors_open_mpi_manager() {
    spawn_multiple_across_errors(Mpi::OpenMpi);
}

#[test]
fn spawn_multiple_across_implementations_errors_mpich_manager() {
    spawn_multiple_across_errors(Mpi::Mpich);
}

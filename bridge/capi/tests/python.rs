//! The `isthmus` Python package with mpi4py, run under the preloaded
//! library: Debian's mpi4py (built with Open MPI) and an mpi4py built with
//! MPICH (by scripts/install-deps.sh, in `ISTHMUS_MPI4PY_MPICH`, default
//! /opt/isthmus/mpi4py-mpich); `common::python_script` says which (the
//! registry's implementations' mpi4py runs in tests/matrix.rs). A Python job forms an Isthmus
//! intercommunicator with a C job of MPICH (buffer API) and with another
//! Python job, of the same or the other implementation (buffer and pickle
//! APIs); and mpi4py's own Open_port/Publish_name/Accept meet an unmodified
//! C program of MPICH, or mpi4py of the other implementation, that connects;
//! mpi4py's `Spawn` of workers of the other implementation, and its
//! `Spawn_multiple` of an Open MPI and an MPICH command from two ranks.

#![cfg(test)]

mod common;

use std::time::Duration;

use common::*;

fn python_job(mpi: Mpi, group: &str, peer: &str, mode: &str, np: usize) -> Job {
    python_script(mpi, np, "exchange.py", &[group, peer, mode])
}

fn passed(o: &std::process::Output, mode: &str, np: usize) -> bool {
    let out = String::from_utf8_lossy(&o.stdout);
    o.status.success() && (0..np).all(|r| out.contains(&format!("PASS {mode} rank {r}")))
}

/// The job's rank 0 ran mpi4py on `mpi` (the scripts print mpi4py's
/// `get_vendor()`).
fn ran_on(o: &std::process::Output, mpi: Mpi) -> bool {
    let vendor = match mpi {
        Mpi::OpenMpi => "VENDOR Open MPI",
        Mpi::Mpich | Mpi::Mpich5 => "VENDOR MPICH",
        Mpi::OpenMpi5 => "VENDOR Open MPI",
        Mpi::Impi | Mpi::AbiImpi => "VENDOR Intel",
        Mpi::Abi => "VENDOR MPICH",
    };
    String::from_utf8_lossy(&o.stdout).contains(vendor)
}

#[test]
fn python_with_open_mpi_exchanges_buffers_with_c_on_mpich() {
    let dir = TempDir::new("python");
    let vmd = Vmd::start("localhost", &[]);
    let peer = dir.0.join("peer-mpich");
    build_c(
        Mpi::Mpich,
        &[crate_dir().join("tests/python/peer.c")],
        &peer,
        Linking::Linked,
    );
    let py = python_job(Mpi::OpenMpi, "py-a", "c-b", "buffer", 2);
    let c = Job {
        mpi: Mpi::Mpich,
        np: 2,
        program: peer,
        args: vec!["c-b".into(), "py-a".into()],
        env: vec![],
        linking: Linking::Linked,
    };
    let (op, oc) = run_pair(&vmd, &py, &c, Duration::from_secs(180));
    assert!(
        passed(&op, "buffer", 2) && passed(&oc, "buffer", 2),
        "python:\n{}\nC:\n{}",
        text(&op),
        text(&oc)
    );
}

#[test]
fn two_python_jobs_exchange_objects_with_the_pickle_api() {
    let vmd = Vmd::start("localhost", &[]);
    let a = python_job(Mpi::OpenMpi, "py-left", "py-right", "pickle", 2);
    let b = python_job(Mpi::OpenMpi, "py-right", "py-left", "pickle", 2);
    let (oa, ob) = run_pair(&vmd, &a, &b, Duration::from_secs(180));
    assert!(
        passed(&oa, "pickle", 2) && passed(&ob, "pickle", 2),
        "left:\n{}\nright:\n{}",
        text(&oa),
        text(&ob)
    );
}

#[test]
fn mpi4py_accepts_with_its_own_calls_and_c_on_mpich_connects() {
    let dir = TempDir::new("python-ports");
    let vmd = Vmd::start("localhost", &[]);
    let connector = dir.0.join("ports-mpich");
    build_c(
        Mpi::Mpich,
        &[crate_dir().join("tests/c/ports.c")],
        &connector,
        Linking::Unmodified,
    );
    let py = python_script(Mpi::OpenMpi, 2, "ports.py", &["accept", "svc-python"]);
    let c = Job {
        mpi: Mpi::Mpich,
        np: 3,
        program: connector,
        args: vec!["connect".into(), "svc-python".into()],
        env: vec![],
        linking: Linking::Unmodified,
    };
    let (op, oc) = run_pair(&vmd, &py, &c, Duration::from_secs(180));
    assert!(
        passed(&op, "accept", 2) && passed(&oc, "connect", 3),
        "python:\n{}\nC:\n{}",
        text(&op),
        text(&oc)
    );
}

/// Runs two Python jobs at once; each must pass in its mode on every rank,
/// with mpi4py of the implementation it was started with.
fn python_pair(a: &Job, a_mode: &str, b: &Job, b_mode: &str) {
    let vmd = Vmd::start("localhost", &[]);
    let (oa, ob) = run_pair(&vmd, a, b, Duration::from_secs(180));
    assert!(
        passed(&oa, a_mode, a.np)
            && passed(&ob, b_mode, b.np)
            && ran_on(&oa, a.mpi)
            && ran_on(&ob, b.mpi),
        "{a_mode} ({:?}):\n{}\n{b_mode} ({:?}):\n{}",
        a.mpi,
        text(&oa),
        b.mpi,
        text(&ob)
    );
}

/// Two Python jobs, one on each implementation (`left` on `left_mpi`),
/// through the isthmus package in `mode` (exchange.py).
fn python_across(left_mpi: Mpi, mode: &str) {
    let a = python_job(left_mpi, "py-x-left", "py-x-right", mode, 2);
    let b = python_job(left_mpi.other(), "py-x-right", "py-x-left", mode, 2);
    python_pair(&a, mode, &b, mode);
}

#[test]
fn mpi4py_on_mpich_and_mpi4py_on_open_mpi_exchange_buffers() {
    python_across(Mpi::Mpich, "buffers");
}

#[test]
fn mpi4py_on_open_mpi_and_mpi4py_on_mpich_exchange_objects_with_the_pickle_api() {
    python_across(Mpi::OpenMpi, "pickle");
}

/// Issue 17, item 2, from mpi4py: `Barrier` and `Bcast` of doubles from
/// rank 0 of each job in turn, between mpi4py on Open MPI and mpi4py on
/// MPICH, both ways round (exchange.py, `coll`).
#[test]
fn mpi4py_barrier_and_bcast_open_mpi_left() {
    python_across(Mpi::OpenMpi, "coll");
}

#[test]
fn mpi4py_barrier_and_bcast_mpich_left() {
    python_across(Mpi::Mpich, "coll");
}

/// Issue 17, item 3, from mpi4py: `Merge()` of an Isthmus intercommunicator
/// between mpi4py on Open MPI and mpi4py on MPICH, both ways round, then
/// `Allreduce` (`MPI.SUM` and a Python-defined operation, not commutative)
/// and `Split` on the merged communicator (exchange.py, `merge`).
#[test]
fn mpi4py_merge_open_mpi_left() {
    python_across(Mpi::OpenMpi, "merge");
}

#[test]
fn mpi4py_merge_mpich_left() {
    python_across(Mpi::Mpich, "merge");
}

/// mpi4py's own Open_port/Publish_name/Accept on `acceptor` against
/// Lookup_name/Connect of mpi4py on the other implementation (ports.py).
fn mpi4py_ports_across(acceptor: Mpi, service: &str) {
    let a = python_script(acceptor, 2, "ports.py", &["accept", service]);
    let c = python_script(acceptor.other(), 3, "ports.py", &["connect", service]);
    python_pair(&a, "accept", &c, "connect");
}

#[test]
fn mpi4py_on_mpich_accepts_with_its_own_calls_and_mpi4py_on_open_mpi_connects() {
    mpi4py_ports_across(Mpi::Mpich, "svc-py-mpich-ompi");
}

#[test]
fn mpi4py_on_open_mpi_accepts_with_its_own_calls_and_mpi4py_on_mpich_connects() {
    mpi4py_ports_across(Mpi::OpenMpi, "svc-py-ompi-mpich");
}

/// The virtual machine from the isthmus package (tests/python/vm.py,
/// `calls`), with mpi4py of `mpi`: a job of the other implementation
/// spawned, seen running, killed, its ranks' and its own exits notified
/// through the events iterator; a host added and deleted, both notified;
/// the iterator's timeout kept; each bad call an IsthmusError (or
/// ValueError for an unknown kind) that says why.
fn python_runs_the_virtual_machine(mpi: Mpi) {
    let dir = TempDir::new("python-vm");
    let m = Machine::start(&["mpich", "openmpi"]);
    let sleeper = dir.0.join("sleeper");
    build_c(
        mpi.other(),
        &[crate_dir().join("tests/c/spawn.c")],
        &sleeper,
        Linking::Unmodified,
    );
    let sleeper = sleeper.display().to_string();
    let ghost = format!("py-ghost-{}", mpi.name());
    let job = python_script(mpi, 1, "vm.py", &["calls", &sleeper, &ghost]);
    let o = finish(launch(&m.vmd, &job), Duration::from_secs(180), "vm.py");
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let all = format!("{}\njobs:\n{}", text(&o), m.jobs());
    assert!(passed(&o, "calls", 1), "{all}");
    let spawned = out
        .lines()
        .find_map(|l| l.strip_prefix("SPAWNED job="))
        .unwrap_or_else(|| panic!("no job\n{all}"));
    let event = |words: &[&str]| {
        out.lines()
            .any(|l| l.starts_with("EVENT ") && words.iter().all(|w| l.contains(w)))
    };
    let job_is = format!("job={spawned} ");
    // At least one rank's end (the rm reports those its shims told before
    // the kill reached the launcher's process group), then the job's.
    assert!(event(&["task_exit", &job_is, "exit=('signal', "]), "{all}");
    assert!(event(&["job_exit", &job_is, "state=killed"]), "{all}");
    assert!(event(&["host_added", &format!("host={ghost}")]), "{all}");
    assert!(
        event(&["host_deleted", &format!("host={ghost}"), "reason="]),
        "{all}"
    );
    assert!(out.contains("TIMEOUT waited="), "{all}");
    let error = |case: &str, words: &[&str]| {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("ERROR {case} ")))
            .unwrap_or_else(|| panic!("no error for {case}\n{all}"));
        assert!(
            words.iter().all(|w| line.contains(w)),
            "{case}: {line}\n{all}"
        );
    };
    error("kill-unknown", &["Isthmus_Kill", "987654"]);
    error("spawn-missing", &["Isthmus_Spawn", "/no/such/program"]);
    error("spawn-env", &["Isthmus_Spawn", "\"FOO\" is not NAME=VALUE"]);
    error("spawn-no-tasker", &["Isthmus_Spawn", "impi", "refused"]);
    error(
        "delete-host-unknown",
        &["Isthmus_Delete_host", "no-such-host"],
    );
    error("events-kind", &["unknown event kind 'hosts'"]);
    error("events-closed", &["the subscription is closed"]);
}

#[test]
fn python_on_open_mpi_runs_the_virtual_machine() {
    python_runs_the_virtual_machine(Mpi::OpenMpi);
}

#[test]
fn python_on_mpich_runs_the_virtual_machine() {
    python_runs_the_virtual_machine(Mpi::Mpich);
}

/// mpi4py's own `MPI.COMM_SELF.Spawn(sys.executable, ...)` on `parent`
/// starts two mpi4py workers on the other implementation (info keys
/// `isthmus_impl` and `isthmus_env`, which gives them their PYTHONPATH and
/// a variable with a `;`); they find their parent with
/// `MPI.Comm.Get_parent()`, exchange, merge and disconnect.
fn mpi4py_spawns_across(parent: Mpi) {
    let m = Machine::start(&["mpich", "openmpi"]);
    let child = parent.other();
    let job = python_script(
        parent,
        1,
        "vm.py",
        &["parent", child.name(), "2", &python_path(child)],
    );
    let o = finish(launch(&m.vmd, &job), Duration::from_secs(180), "parent");
    assert!(
        passed(&o, "parent", 1) && ran_on(&o, parent),
        "{}\njobs:\n{}",
        text(&o),
        m.jobs()
    );
    // The workers were a job of the other implementation, which exited.
    let end = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = m.jobs();
        if jobs
            .lines()
            .any(|l| l.contains("python3") && l.contains(child.name()) && l.contains("exited"))
        {
            break;
        }
        assert!(std::time::Instant::now() < end, "{jobs}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn mpi4py_on_open_mpi_spawns_mpi4py_workers_on_mpich() {
    mpi4py_spawns_across(Mpi::OpenMpi);
}

#[test]
fn mpi4py_on_mpich_spawns_mpi4py_workers_on_open_mpi() {
    mpi4py_spawns_across(Mpi::Mpich);
}

/// mpi4py's `MPI.COMM_WORLD.Spawn_multiple` on two ranks of `parent`
/// (rank 1 the root) of one rank of an Open MPI command and two of an
/// MPICH command, each order (tests/c/spawn.c workers, vm.py `cross`):
/// both parents get the intercommunicator whose remote group is the
/// children's one world; point-to-point both ways, Bcast both ways,
/// Allreduce, Merge refused (three jobs), Disconnect; the children ran on
/// their own libraries, as one exited job of each implementation.
fn mpi4py_spawns_multiple_across(parent: Mpi) {
    let dir = TempDir::new("python-spawn-cross");
    let m = Machine::start(&["mpich", "openmpi"]);
    let (ompi, mpich) = (
        spawn_program(Mpi::OpenMpi, &dir),
        spawn_program(Mpi::Mpich, &dir),
    );
    for (a, b) in [(Mpi::OpenMpi, Mpi::Mpich), (Mpi::Mpich, Mpi::OpenMpi)] {
        // A copy per order, so that each order's jobs are told apart.
        let copy = |which: &str, mpi: Mpi| {
            let w = dir
                .0
                .join(format!("worker-{which}-{}-{}", a.name(), b.name()));
            let from = if mpi == Mpi::OpenMpi { &ompi } else { &mpich };
            std::fs::copy(from, &w).expect("copy worker");
            w.display().to_string()
        };
        let (wa, wb) = (copy("a", a), copy("b", b));
        let job = python_script(parent, 2, "vm.py", &["cross", &wa, &wb]);
        let o = finish(launch(&m.vmd, &job), Duration::from_secs(180), "cross");
        let all = format!(
            "mpi4py on {parent:?} spawning {a:?} + {b:?}:\n{}\njobs:\n{}",
            text(&o),
            m.jobs()
        );
        assert!(passed(&o, "cross", 2) && ran_on(&o, parent), "{all}");
        children_were_one_world(&m, &o, (a, &wa), (b, &wb), &all);
    }
}

#[test]
fn mpi4py_on_open_mpi_spawns_multiple_across_both_implementations() {
    mpi4py_spawns_multiple_across(Mpi::OpenMpi);
}

#[test]
fn mpi4py_on_mpich_spawns_multiple_across_both_implementations() {
    mpi4py_spawns_multiple_across(Mpi::Mpich);
}

/// mpi4py's `MPI.Comm.Join` on `python` with tests/c/join.c of the other
/// implementation (tests/python/join.py): the Python job listens or
/// connects as `python_listens` says, they join over that socket, exchange
/// both ways, Allreduce, Bcast each way, find the socket still usable and
/// disconnect.
fn mpi4py_joins_c_across(python: Mpi, python_listens: bool) {
    let dir = TempDir::new("python-join");
    let vmd = Vmd::start("localhost", &[]);
    let c = python.other();
    let program = dir.0.join(format!("join-{}", c.name()));
    build_c(
        c,
        &[
            crate_dir().join("tests/c/join.c"),
            crate_dir().join("tests/c/join_socket.c"),
        ],
        &program,
        Linking::Unmodified,
    );
    let file = dir.0.join("port").display().to_string();
    let (py_mode, c_mode) = match python_listens {
        true => ("listen", "connect"),
        false => ("connect", "listen"),
    };
    let py = python_script(python, 1, "join.py", &[py_mode, &file]);
    let peer = Job {
        mpi: c,
        np: 1,
        program,
        args: vec![c_mode.into(), file.clone()],
        env: vec![],
        linking: Linking::Unmodified,
    };
    let (op, oc) = run_pair(&vmd, &py, &peer, Duration::from_secs(180));
    assert!(
        passed(&op, "join", 1) && passed(&oc, "join", 1) && ran_on(&op, python),
        "mpi4py on {python:?} ({py_mode}):\n{}\nC on {c:?} ({c_mode}):\n{}",
        text(&op),
        text(&oc)
    );
}

#[test]
fn mpi4py_on_open_mpi_listens_and_joins_c_on_mpich() {
    mpi4py_joins_c_across(Mpi::OpenMpi, true);
}

#[test]
fn mpi4py_on_mpich_connects_and_joins_c_on_open_mpi() {
    mpi4py_joins_c_across(Mpi::Mpich, false);
}

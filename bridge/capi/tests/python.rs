//! The `isthmus` Python package with mpi4py (Debian's, built with Open
//! MPI), run under the preloaded library: a Python job forms an Isthmus
//! intercommunicator with a C job of MPICH (buffer API) and with another
//! Python job (pickle API); and mpi4py's own Open_port/Publish_name/Accept
//! meet an unmodified C program of MPICH that connects.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;

/// Debian's interpreter, where python3-mpi4py is installed.
const PYTHON: &str = "/usr/bin/python3";

fn python_job(group: &str, peer: &str, mode: &str, np: usize) -> Job {
    Job {
        mpi: Mpi::OpenMpi,
        np,
        program: PathBuf::from(PYTHON),
        args: vec![
            crate_dir()
                .join("tests/python/exchange.py")
                .display()
                .to_string(),
            group.into(),
            peer.into(),
            mode.into(),
        ],
        env: vec![(
            "PYTHONPATH".into(),
            crate_dir().join("python").display().to_string(),
        )],
        linking: Linking::Unmodified,
    }
}

fn passed(o: &std::process::Output, mode: &str, np: usize) -> bool {
    let out = String::from_utf8_lossy(&o.stdout);
    o.status.success() && (0..np).all(|r| out.contains(&format!("PASS {mode} rank {r}")))
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
    let py = python_job("py-a", "c-b", "buffer", 2);
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
    let a = python_job("py-left", "py-right", "pickle", 2);
    let b = python_job("py-right", "py-left", "pickle", 2);
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
    let py = Job {
        mpi: Mpi::OpenMpi,
        np: 2,
        program: PathBuf::from(PYTHON),
        args: vec![
            crate_dir()
                .join("tests/python/ports.py")
                .display()
                .to_string(),
            "svc-python".into(),
        ],
        env: vec![],
        linking: Linking::Unmodified,
    };
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

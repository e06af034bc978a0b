//! `MPI_Comm_join` across implementations (tests/c/join.c): a one-rank job
//! of each implementation, started separately, one listening on 127.0.0.1
//! and passing its port through a file, the other connecting; they join
//! over that socket, exchange, reduce, broadcast, find the socket still
//! usable and disconnect. Both pairings. And a join whose other end is not
//! joining (the test itself: silent, or speaking something else) fails
//! with an error that says so, within the deadline. From Fortran
//! (tests/fortran/join.F90 in `use mpi`, `use mpi_f08` and `mpif.h`, its
//! socket made by tests/c/join_socket.c, as join.c's, the checks of
//! tests/c/join.c): Open MPI's Fortran and MPICH's join, each binding of
//! each listening once and connecting once.

#![cfg(test)]

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::*;

const GUARD: Duration = Duration::from_secs(180);

/// tests/c/join.c built for `mpi`, plain (run with libisthmus preloaded).
fn program(mpi: Mpi, dir: &TempDir) -> PathBuf {
    let out = dir.0.join(format!("join-{}", mpi.name()));
    build_c(
        mpi,
        &[
            crate_dir().join("tests/c/join.c"),
            crate_dir().join("tests/c/join_socket.c"),
        ],
        &out,
        Linking::Unmodified,
    );
    out
}

fn job(mpi: Mpi, program: &Path, mode: &str, file: &Path, env: &[(&str, &str)]) -> Job {
    Job {
        mpi,
        np: 1,
        program: program.to_path_buf(),
        args: vec![mode.into(), file.display().to_string()],
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        linking: Linking::Unmodified,
    }
}

fn passed(o: &Output, mode: &str) -> bool {
    o.status.success()
        && String::from_utf8_lossy(&o.stdout).contains(&format!("PASS {mode} rank 0"))
}

fn join(listener: Mpi, connector: Mpi) {
    let dir = TempDir::new("join");
    let vmd = Vmd::start("localhost", &[]);
    let file = dir.0.join("port");
    let l = job(listener, &program(listener, &dir), "listen", &file, &[]);
    let c = job(connector, &program(connector, &dir), "connect", &file, &[]);
    let (ol, oc) = run_pair(&vmd, &l, &c, GUARD);
    assert!(
        passed(&ol, "join") && passed(&oc, "join"),
        "{listener:?} listening, {connector:?} connecting\nlistener:\n{}\nconnector:\n{}",
        text(&ol),
        text(&oc)
    );
}

#[test]
fn open_mpi_listens_and_mpich_connects_then_they_join() {
    join(Mpi::OpenMpi, Mpi::Mpich);
}

#[test]
fn mpich_listens_and_open_mpi_connects_then_they_join() {
    join(Mpi::Mpich, Mpi::OpenMpi);
}

/// tests/fortran/join.F90 built for `mpi` in `binding` (`mpi`, `f08` or
/// `mpif.h`) with its socket helper, plain (run with libisthmus preloaded);
/// once per directory.
fn fortran_program(mpi: Mpi, binding: &str, dir: &TempDir) -> PathBuf {
    let helper = dir.0.join("join_socket.o");
    if !helper.exists() {
        let o = Command::new("cc")
            .args(["-O2", "-c", "-o"])
            .arg(&helper)
            .arg(crate_dir().join("tests/c/join_socket.c"))
            .output()
            .expect("cannot run cc");
        assert!(
            o.status.success(),
            "cc join_socket.c: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let flags: &[&str] = match binding {
        "f08" => &["-DF08"],
        // mpif.h declares no interfaces: buffers of two types.
        "mpif.h" => &["-DUSE_MPIF_H", "-fallow-argument-mismatch", "-w"],
        _ => &[],
    };
    let out = dir.0.join(format!(
        "join-fortran-{}-{}",
        binding.replace('.', "_"),
        mpi.name()
    ));
    if out.exists() {
        return out;
    }
    let o = Command::new(format!("mpifort.{}", mpi.name()))
        .args(["-O2", "-o"])
        .arg(&out)
        .args(flags)
        .arg(crate_dir().join("tests/fortran/join.F90"))
        .arg(&helper)
        .envs(mpi.env())
        .output()
        .unwrap_or_else(|e| panic!("cannot run mpifort.{}: {e}", mpi.name()));
    assert!(
        o.status.success(),
        "mpifort.{} join.F90 ({binding}): {}",
        mpi.name(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Open MPI's Fortran program in each binding joins MPICH's in another
/// (`pairs`: Open MPI's binding, MPICH's), with `listener` listening and
/// the other connecting: both pass (tests/fortran/join.F90 talks with
/// Fortran's datatypes, so its peer is Fortran, not tests/c/join.c).
fn fortran_joins(listener: Mpi, pairs: &[(&str, &str)]) {
    let dir = TempDir::new("join-fortran");
    let vmd = Vmd::start("localhost", &[]);
    for &(ompi, mpich) in pairs {
        let binding = |mpi: Mpi| match mpi {
            Mpi::Mpich => mpich,
            _ => ompi,
        };
        let connector = listener.other();
        let file = dir.0.join(format!(
            "port-{}-{}",
            ompi.replace('.', "_"),
            mpich.replace('.', "_")
        ));
        let l = fortran_program(listener, binding(listener), &dir);
        let c = fortran_program(connector, binding(connector), &dir);
        let (ol, oc) = run_pair(
            &vmd,
            &job(listener, &l, "listen", &file, &[]),
            &job(connector, &c, "connect", &file, &[]),
            GUARD,
        );
        assert!(
            passed(&ol, "join") && passed(&oc, "join"),
            "{listener:?} Fortran ({}) listening, {connector:?} Fortran ({}) connecting\nlistener:\n{}\nconnector:\n{}",
            binding(listener),
            binding(connector),
            text(&ol),
            text(&oc)
        );
    }
}

/// Every binding of each side once, against another binding of the other.
const FORTRAN_PAIRS: [(&str, &str); 3] = [("mpi", "f08"), ("f08", "mpif.h"), ("mpif.h", "mpi")];

#[test]
fn open_mpi_fortran_listens_and_mpich_fortran_connects_then_they_join() {
    fortran_joins(Mpi::OpenMpi, &FORTRAN_PAIRS);
}

#[test]
fn mpich_fortran_listens_and_open_mpi_fortran_connects_then_they_join() {
    fortran_joins(Mpi::Mpich, &FORTRAN_PAIRS);
}

/// The `JOIN-ERROR null=1 <message>` line's message.
fn join_error(o: &Output) -> Option<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("JOIN-ERROR null=1 "))
        .map(str::to_string)
}

/// A join whose other end is this test: `say` is what it writes (nothing:
/// silent), then it holds the socket open until the job ends.
fn join_with_a_stranger(mpi: Mpi, say: &[u8]) -> (Output, String) {
    let dir = TempDir::new("join-fail");
    let vmd = Vmd::start("localhost", &[]);
    let file = dir.0.join("port");
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    std::fs::write(&file, format!("{port}\n")).expect("write the port");
    let j = job(
        mpi,
        &program(mpi, &dir),
        "fail",
        &file,
        &[("ISTHMUS_CONNECT_TIMEOUT", "3")],
    );
    let child = launch(&vmd, &j);
    let (mut sock, _) = listener.accept().expect("accept");
    sock.write_all(say).expect("write");
    let o = finish(child, GUARD, "join with a stranger");
    drop(sock);
    let message = join_error(&o).unwrap_or_default();
    (o, message)
}

fn strangers(mpi: Mpi) {
    let (o, message) = join_with_a_stranger(mpi, b"");
    assert!(
        passed(&o, "fail")
            && message.contains("MPI_Comm_join")
            && message.contains("said nothing")
            && message.contains("3.0 s"),
        "{}",
        text(&o)
    );
    let (o, message) = join_with_a_stranger(mpi, b"HTTP/1.1 200 OK\r\n");
    assert!(
        passed(&o, "fail")
            && message.contains("MPI_Comm_join")
            && message.contains("not joining through Isthmus")
            && message.contains("HTTP"),
        "{}",
        text(&o)
    );
}

#[test]
fn an_open_mpi_join_with_a_peer_that_does_not_join_fails_saying_so() {
    strangers(Mpi::OpenMpi);
}

#[test]
fn an_mpich_join_with_a_peer_that_does_not_join_fails_saying_so() {
    strangers(Mpi::Mpich);
}

//! Three separately started jobs (Open MPI, MPICH, Open MPI) form
//! intercommunicators with each other through `Isthmus_Intercomm_icreate`,
//! each in its own order, polling with `MPI_Test` (tests/c/mesh.c): all
//! six form, and no `MPI_Test` call blocks (the program checks < 0.5 s).
//! Before, the "ready" announcement blocked inside the test until the
//! peer's program tested too, and the three jobs waited for each other.

#![cfg(test)]

mod common;

use std::time::Duration;

use common::*;

#[test]
fn three_jobs_form_intercomms_through_icreate_and_mpi_test() {
    let dir = TempDir::new("capi-mesh");
    let vmd = Vmd::start("localhost", &[]);
    let program = |mpi: Mpi| {
        let out = dir.0.join(format!("mesh-{}", mpi.name()));
        build_c(
            mpi,
            &[crate_dir().join("tests/c/mesh.c")],
            &out,
            Linking::Linked,
        );
        out
    };
    let (ompi, mpich) = (program(Mpi::OpenMpi), program(Mpi::Mpich));
    let job = |mpi: Mpi, np: usize, me: &str, first: &str, second: &str| Job {
        mpi,
        np,
        program: if mpi == Mpi::OpenMpi {
            ompi.clone()
        } else {
            mpich.clone()
        },
        args: vec![me.into(), first.into(), second.into()],
        env: vec![],
        linking: Linking::Linked,
    };
    let jobs = [
        job(Mpi::OpenMpi, 2, "cmesh-a", "cmesh-b", "cmesh-c"),
        job(Mpi::Mpich, 2, "cmesh-b", "cmesh-c", "cmesh-a"),
        job(Mpi::OpenMpi, 1, "cmesh-c", "cmesh-a", "cmesh-b"),
    ];
    let children: Vec<_> = jobs.iter().map(|j| launch(&vmd, j)).collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(180), "mesh job"))
        .collect();
    for (o, j) in outs.iter().zip(&jobs) {
        let out = String::from_utf8_lossy(&o.stdout);
        print!("{out}");
        assert!(
            o.status.success() && (0..j.np).all(|r| out.contains(&format!("PASS mesh rank {r} "))),
            "{}:\n{}",
            j.args[0],
            text(o)
        );
    }
}

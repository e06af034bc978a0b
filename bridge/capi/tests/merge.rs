//! `MPI_Intercomm_merge` of an Isthmus intercommunicator from C
//! (tests/c/merge.c), between an Open MPI job of 2 ranks and an MPICH job
//! of 3, both ways round: the merged order follows the `high` flags (the
//! group that passed false first; equal flags: the group whose name sorts
//! first), and ranks, sizes, collectives whose values depend on the order,
//! point-to-point within and across the jobs in every send mode, dup and
//! compare all agree
//! with it; a split by job gives each job a native communicator; a split
//! whose colors span both jobs (keys interleaving them, a split of that
//! split, `MPI_UNDEFINED`) is a merged communicator on which all of that
//! holds again; `MPI_Comm_create` of one job's group, `create_group` and
//! `split_type` give native communicators, groups in both jobs are refused
//! with a message; `MPI_Irecv(MPI_ANY_SOURCE)` receives every message once,
//! in each source's order; `MPI_Comm_split` and `MPI_Comm_create` of the
//! Isthmus intercommunicator give intercommunicators between the subsets;
//! the nonblocking collectives (Ibarrier polled with MPI_Test alone, Ibcast,
//! Ireduce, Igather, Iscatter at every root, Iallreduce, Iallgather,
//! Ialltoall, Iscan, Iexscan, Ireduce_scatter(_block); non-commutative and in
//! place; several outstanding beside a native request, Igatherv with its
//! blocks reversed), on the merge's order and on a split that interleaves
//! the jobs;
//! the same through the large-count (`_c`) forms of the v/w collectives;
//! reductions of 20000 elements (the native steps' own tree on MPICH's
//! side) on the merged communicator and the intercommunicator.

#![cfg(test)]

mod common;

use std::time::Duration;

use common::*;

/// Job "a-…" (`a`, 2 ranks) and job "b-…" (the other implementation, 3
/// ranks) merge with the given high flags; `a_first`: the expected order.
fn merge(a: Mpi, high_a: bool, high_b: bool, a_first: bool) {
    merge_of("merge.c", a, high_a, high_b, a_first);
}

/// [`merge`] with the test program `source` (under tests/c).
fn merge_of(source: &str, a: Mpi, high_a: bool, high_b: bool, a_first: bool) {
    let dir = TempDir::new("merge");
    let vmd = Vmd::start("localhost", &[]);
    let tag = format!("{}-{}-{}", a.name(), u8::from(high_a), u8::from(high_b));
    let (ga, gb) = (format!("a-merge-{tag}"), format!("b-merge-{tag}"));
    let job = |mpi: Mpi, np: usize, me: &str, other: &str, high: bool, first: bool| {
        let program = dir.0.join(format!("merge-{}", mpi.name()));
        if !program.exists() {
            build_c(
                mpi,
                &[crate_dir().join("tests/c").join(source)],
                &program,
                Linking::Linked,
            );
        }
        Job {
            mpi,
            np,
            program,
            args: vec![
                me.into(),
                other.into(),
                u8::from(high).to_string(),
                if first { "me" } else { "peer" }.into(),
            ],
            env: vec![],
            linking: Linking::Linked,
        }
    };
    let ja = job(a, 2, &ga, &gb, high_a, a_first);
    let jb = job(a.other(), 3, &gb, &ga, high_b, !a_first);
    let (oa, ob) = run_pair(&vmd, &ja, &jb, Duration::from_secs(180));
    for (o, np, name) in [(&oa, 2, "a"), (&ob, 3, "b")] {
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && (0..np).all(|r| out.contains(&format!("PASS merge rank {r}\n"))),
            "job {name} failed\nA ({}):\n{}\nB ({}):\n{}",
            a.name(),
            text(&oa),
            a.other().name(),
            text(&ob)
        );
    }
    let out = String::from_utf8_lossy(&oa.stdout);
    assert!(
        out.contains("REFUSED MPI_Comm_create: ") && out.contains("both jobs"),
        "no refusal printed for MPI_Comm_create of groups in both jobs"
    );
    assert!(
        out.contains("SPLIT across both jobs: ok")
            && out.contains("INTERCOMM splits: ok")
            && out.contains("INTERCOMM_CREATE over merged: ok")
            && out.contains("GROUPS of both jobs: ok")
            && out.contains("NONBLOCKING collectives on merged: ok")
            && out.contains("NONBLOCKING collectives on an interleaving split: ok")
            && out.contains("LARGE reductions: ok")
            && out.contains("CARTESIAN grids: ok")
            && out.contains("GRAPHS: ok")
            && out.contains("NEIGHBORHOODS: ok"),
        "the splits spanning both jobs, of the intercommunicator, the intercomm_create over the merged one, the groups of both jobs, the nonblocking collectives, the large reductions, the Cartesian grids, the graphs or the neighbourhood collectives did not run:\n{out}"
    );
}

macro_rules! both_ways {
    ($name:ident, $high_a:expr, $high_b:expr, $a_first:expr) => {
        mod $name {
            use super::*;
            #[test]
            fn open_mpi_a_mpich_b() {
                merge(Mpi::OpenMpi, $high_a, $high_b, $a_first);
            }
            #[test]
            fn mpich_a_open_mpi_b() {
                merge(Mpi::Mpich, $high_a, $high_b, $a_first);
            }
        }
    };
}

// The group passing high = false comes first.
both_ways!(a_low_b_high, false, true, true);
both_ways!(a_high_b_low, true, false, false);
// Equal flags: the group whose name sorts first ("a-…") comes first.
both_ways!(both_low, false, false, true);
both_ways!(both_high, true, true, true);

// The v/w collectives and Reduce_scatter of the merged communicators through
// their large-count (`_c`) forms where mpi.h has them (MPICH's side;
// tests/c/large_count_v.h).
mod large_count {
    use super::*;
    #[test]
    fn open_mpi_a_mpich_b() {
        merge_of("large_count/merge.c", Mpi::OpenMpi, false, true, true);
    }
    #[test]
    fn mpich_a_open_mpi_b() {
        merge_of("large_count/merge.c", Mpi::Mpich, true, false, false);
    }
}

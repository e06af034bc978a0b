//! MPICH's own intercommunicator tests, and its intracommunicator tests on
//! the merge of an Isthmus intercommunicator (`tests/merged`)
//! (`shared/conformance/mpich` beside
//! the repository, or `$ISTHMUS_CONFORMANCE_DIR`; those of the v/w forms
//! and of Reduce_scatter in this crate's `tests/mpich`), unmodified, between two separately
//! started jobs — Open MPI on the left and MPICH on the right, and the other
//! way round — with Isthmus's MTest harness (tests/mtest), whose
//! `MTestGetIntercomm` returns an Isthmus intercommunicator.
//!
//! MPICH runs each test with N processes (its testlist) split into two
//! groups; here each job has N/2 ranks (or, for the collectives beyond
//! Barrier and Bcast, MPICH's N split unevenly too: 3+2, 3+4, 4+4) — except probe_intercomm, which
//! MPICH runs with 2 and which requires 2 in `MPI_COMM_WORLD`: its jobs get
//! 2 each. A test passes when both jobs exit 0 and each prints " No Errors".

#![cfg(test)]

mod common;

use common::*;

/// Runs `test` with `np` ranks in the left job and `np_right` in the
/// right one, `left` being the implementation of the left group, with
/// extra arguments.
fn conformance(test: &str, np: usize, np_right: usize, left: Mpi, args: &[&str]) {
    if let Err(why) = run_conformance(test, (np, np_right), (left, left.other()), args) {
        panic!("{why}");
    }
}

macro_rules! both_ways {
    ($name:ident, $test:expr, $np:expr $(, $arg:expr)*) => {
        both_ways_split!($name, $test, $np, $np $(, $arg)*);
    };
}

/// As `both_ways!`, with `$npl` ranks in the left job and `$npr` in the right.
macro_rules! both_ways_split {
    ($name:ident, $test:expr, $npl:expr, $npr:expr $(, $arg:expr)*) => {
        mod $name {
            use super::*;
            #[test]
            fn openmpi_left_mpich_right() {
                conformance($test, $npl, $npr, Mpi::OpenMpi, &[$($arg),*]);
            }
            #[test]
            fn mpich_left_openmpi_right() {
                conformance($test, $npl, $npr, Mpi::Mpich, &[$($arg),*]);
            }
        }
    };
}

// Ranks per job.
both_ways!(icsend, "pt2pt/icsend.c", 2);
both_ways!(icsend_randomized, "pt2pt/icsend.c", 2, "-randomize=1");
both_ways!(icprobe, "pt2pt/icprobe.c", 2);
both_ways!(icprobe_randomized, "pt2pt/icprobe.c", 2, "-randomize=1");
both_ways!(probe_intercomm, "comm/probe_intercomm.c", 2);
both_ways!(dupic, "comm/dupic.c", 2);
both_ways!(comm_idup_isend, "comm/comm_idup_isend.c", 3);
// Collectives: MPICH runs them with 5, 7 and 8 ranks; here 8 (4 per job)
// and 6 (3 per job).
both_ways!(icbarrier, "coll/icbarrier.c", 4);
both_ways!(icbarrier_np3, "coll/icbarrier.c", 3);
both_ways!(icbcast, "coll/icbcast.c", 4);
both_ways!(icbcast_np3, "coll/icbcast.c", 3);
// The rest of the blocking collectives, with MPICH's 5, 7 and 8 ranks
// split between the jobs (left + right): 3+2, 3+4, 4+4.
both_ways_split!(icallreduce_np5, "coll/icallreduce.c", 3, 2);
both_ways_split!(icallreduce_np7, "coll/icallreduce.c", 3, 4);
both_ways_split!(icallreduce_np8, "coll/icallreduce.c", 4, 4);
both_ways_split!(icgather_np5, "coll/icgather.c", 3, 2);
both_ways_split!(icgather_np7, "coll/icgather.c", 3, 4);
both_ways_split!(icgather_np8, "coll/icgather.c", 4, 4);
both_ways_split!(icscatter_np5, "coll/icscatter.c", 3, 2);
both_ways_split!(icscatter_np7, "coll/icscatter.c", 3, 4);
both_ways_split!(icscatter_np8, "coll/icscatter.c", 4, 4);
both_ways_split!(icallgather_np5, "coll/icallgather.c", 3, 2);
both_ways_split!(icallgather_np7, "coll/icallgather.c", 3, 4);
both_ways_split!(icallgather_np8, "coll/icallgather.c", 4, 4);
both_ways_split!(icalltoall_np5, "coll/icalltoall.c", 3, 2);
both_ways_split!(icalltoall_np7, "coll/icalltoall.c", 3, 4);
both_ways_split!(icalltoall_np8, "coll/icalltoall.c", 4, 4);
// The nonblocking forms (`-nonblocking=1`: MPI_Ibarrier, MPI_Ibcast,
// MPI_Iallreduce, MPI_Igather, MPI_Iscatter, MPI_Iallgather, MPI_Ialltoall,
// each followed by MPI_Wait), with the same rank counts.
const NB: &str = "-nonblocking=1";
both_ways!(icbarrier_nb, "coll/icbarrier.c", 4, NB);
both_ways!(icbarrier_nb_np3, "coll/icbarrier.c", 3, NB);
both_ways!(icbcast_nb, "coll/icbcast.c", 4, NB);
both_ways!(icbcast_nb_np3, "coll/icbcast.c", 3, NB);
both_ways_split!(icallreduce_nb_np5, "coll/icallreduce.c", 3, 2, NB);
both_ways_split!(icallreduce_nb_np7, "coll/icallreduce.c", 3, 4, NB);
both_ways_split!(icallreduce_nb_np8, "coll/icallreduce.c", 4, 4, NB);
both_ways_split!(icgather_nb_np5, "coll/icgather.c", 3, 2, NB);
both_ways_split!(icgather_nb_np7, "coll/icgather.c", 3, 4, NB);
both_ways_split!(icgather_nb_np8, "coll/icgather.c", 4, 4, NB);
both_ways_split!(icscatter_nb_np5, "coll/icscatter.c", 3, 2, NB);
both_ways_split!(icscatter_nb_np7, "coll/icscatter.c", 3, 4, NB);
both_ways_split!(icscatter_nb_np8, "coll/icscatter.c", 4, 4, NB);
both_ways_split!(icallgather_nb_np5, "coll/icallgather.c", 3, 2, NB);
both_ways_split!(icallgather_nb_np7, "coll/icallgather.c", 3, 4, NB);
both_ways_split!(icallgather_nb_np8, "coll/icallgather.c", 4, 4, NB);
both_ways_split!(icalltoall_nb_np5, "coll/icalltoall.c", 3, 2, NB);
both_ways_split!(icalltoall_nb_np7, "coll/icalltoall.c", 3, 4, NB);
both_ways_split!(icalltoall_nb_np8, "coll/icalltoall.c", 4, 4, NB);
// MPICH's tests of the v/w forms and of Reduce_scatter, kept in this
// crate (tests/mpich, unmodified), at MPICH's rank counts: 5 and 7
// blocking (3+2, 3+4), 8 with `-nonblocking` (4+4: MPI_Igatherv,
// MPI_Iscatterv, MPI_Iallgatherv, MPI_Ialltoallv, MPI_Ialltoallw);
// redscatinter (MPI_Reduce_scatter, MPI_Ireduce_scatter) with 8, both ways.
both_ways_split!(icgatherv_np5, "mpich/coll/icgatherv.c", 3, 2);
both_ways_split!(icgatherv_np7, "mpich/coll/icgatherv.c", 3, 4);
both_ways_split!(icgatherv_nb_np8, "mpich/coll/icgatherv.c", 4, 4, NB);
both_ways_split!(icscatterv_np5, "mpich/coll/icscatterv.c", 3, 2);
both_ways_split!(icscatterv_np7, "mpich/coll/icscatterv.c", 3, 4);
both_ways_split!(icscatterv_nb_np8, "mpich/coll/icscatterv.c", 4, 4, NB);
both_ways_split!(icallgatherv_np5, "mpich/coll/icallgatherv.c", 3, 2);
both_ways_split!(icallgatherv_np7, "mpich/coll/icallgatherv.c", 3, 4);
both_ways_split!(icallgatherv_nb_np8, "mpich/coll/icallgatherv.c", 4, 4, NB);
both_ways_split!(icalltoallv_np5, "mpich/coll/icalltoallv.c", 3, 2);
both_ways_split!(icalltoallv_np7, "mpich/coll/icalltoallv.c", 3, 4);
both_ways_split!(icalltoallv_nb_np8, "mpich/coll/icalltoallv.c", 4, 4, NB);
both_ways_split!(icalltoallw_np5, "mpich/coll/icalltoallw.c", 3, 2);
both_ways_split!(icalltoallw_np7, "mpich/coll/icalltoallw.c", 3, 4);
both_ways_split!(icalltoallw_nb_np8, "mpich/coll/icalltoallw.c", 4, 4, NB);
both_ways_split!(redscatinter_np8, "mpich/coll/redscatinter.c", 4, 4);
both_ways_split!(redscatinter_nb_np8, "mpich/coll/redscatinter.c", 4, 4, NB);
// MPI's progress rule (tests/c/nbcprogress.c): an MPI_Ibarrier polled with
// MPI_Test alone completes while its rank answers point-to-point and the
// other job enters late; nonblocking collectives outstanding together on
// one communicator (Ibcast, Iallreduce, Ireduce, Ialltoall), completed in
// reverse order and beside a native request; the v/w forms and
// Ireduce_scatter (counts differing per rank) all outstanding at once beside
// a native exchange, completed by polling MPI_Testall; MPI's argument errors.
both_ways_split!(nbcprogress_np4, "c/nbcprogress.c", 2, 2);
both_ways_split!(nbcprogress_np5, "c/nbcprogress.c", 3, 2);
// Persistent requests (tests/c/persist.c): point-to-point in every mode
// restarted many times beside native persistent requests, inactive
// requests, cancel and free; MPI_Isendrecv(_replace); the persistent
// collectives (MPICH's side; Open MPI 4.1's issues the nonblocking forms);
// on the merge too (a ring within and across the jobs, Allreduce, Scan).
both_ways_split!(persist_np4, "c/persist.c", 2, 2);
both_ways_split!(persist_np5, "c/persist.c", 3, 2);
// Isthmus's own, on the same harness (tests/c/intercoll.c): extreme values
// of MPI_SUM on long and MPI_MAX on double through MPI_Allreduce, a
// non-commutative user op through MPI_Reduce, Reduce_scatter(_block),
// Gather of a vector type, Scatter of long, Alltoallv/w, and MPI's errors
// for MPI_IN_PLACE and a bad root.
// Nonblocking duplication and partial elements (tests/c/idup_partial.c):
// idups posted in opposite orders on two communicators (a blocking one
// deadlocks), one completed by MPI_Test alone, dup/idup_with_info; messages
// that end inside a receive element, each job receiving, converted, with
// MPI's statuses (MPI_UNDEFINED count, the basics as elements).
both_ways_split!(idup_partial_np4, "c/idup_partial.c", 2, 2);
both_ways_split!(intercoll_np5, "c/intercoll.c", 3, 2);
both_ways_split!(intercoll_np8, "c/intercoll.c", 4, 4);
// The same and nbcprogress through the large-count (`_c`) forms of the
// v/w collectives and (I)Reduce_scatter where mpi.h has them (MPICH's
// side; tests/c/large_count_v.h), and a count past an int refused there.
both_ways_split!(intercoll_large_count_np5, "c/large_count/intercoll.c", 3, 2);
both_ways_split!(
    nbcprogress_large_count_np4,
    "c/large_count/nbcprogress.c",
    2,
    2
);
// MPICH's intracommunicator tests on the merge of an Isthmus
// intercommunicator: MPICH's rank counts split evenly between the jobs.
both_ways!(merged_allred3, "merged/allred3.c", 5);
both_ways!(merged_alltoall1, "merged/alltoall1.c", 4);
// MPI_Ialltoall (and MPI_Wait) on the merged communicator, in place too.
both_ways!(merged_alltoall1_nb, "merged/alltoall1.c", 4, NB);
both_ways!(merged_gather, "merged/gather.c", 2);
both_ways!(merged_exscan, "merged/exscan.c", 5);
// MPICH's intracommunicator tests kept in tests/mpich/merged (copies of
// pmodels/mpich's test/mpi at the suite's commit, unmodified, under MPICH's
// COPYRIGHT), on the merge of an Isthmus intercommunicator: Alltoallw with
// byte displacements and in place (with one type and per-block types),
// Reduce with a non-commutative operation at every root and in place, and
// Bsends still pending when the buffer is detached. MPICH's rank counts
// split evenly (bsendpending: 2, one per job).
both_ways!(merged_alltoallw2, "mpich/merged/alltoallw2.c", 5);
both_ways!(merged_red3, "mpich/merged/red3.c", 5);
both_ways!(merged_bsendpending, "mpich/merged/bsendpending.c", 1);

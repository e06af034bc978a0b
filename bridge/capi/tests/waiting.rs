//! Every way of waiting (`ISTHMUS_WAIT`: poll, adaptive, block) carries
//! MPICH's own intercommunicator collective tests, unmodified, between an
//! Open MPI job and an MPICH job both ways, with more ranks than this
//! machine has cores (4+4): the leaders wait for the bridge and the other
//! ranks wait in their collective's native step, which `isthmus_bridge::native`
//! runs as the MPI's nonblocking operation tested in a loop (yielding the
//! core, or sleeping under `block`) instead of the MPI's own spinning wait.
//! A value that is none of the three is a warning, and the default applies.

#![cfg(test)]

mod common;

use common::*;

fn conformance(test: &str, left: Mpi, wait: &str) {
    let np = (4, 4);
    if let Err(why) = run_conformance_with(
        test,
        np,
        (left, left.other()),
        &[],
        &[("ISTHMUS_WAIT", wait)],
    ) {
        panic!("ISTHMUS_WAIT={wait}: {why}");
    }
}

macro_rules! every_wait {
    ($name:ident, $test:expr) => {
        mod $name {
            use super::*;
            #[test]
            fn poll_openmpi_left() {
                conformance($test, Mpi::OpenMpi, "poll");
            }
            #[test]
            fn poll_mpich_left() {
                conformance($test, Mpi::Mpich, "poll");
            }
            #[test]
            fn block_openmpi_left() {
                conformance($test, Mpi::OpenMpi, "block");
            }
            #[test]
            fn block_mpich_left() {
                conformance($test, Mpi::Mpich, "block");
            }
            #[test]
            fn a_bad_value_waits_as_the_default() {
                conformance($test, Mpi::Mpich, "spin");
            }
        }
    };
}

every_wait!(icbarrier, "coll/icbarrier.c");
every_wait!(icallreduce, "coll/icallreduce.c");
every_wait!(icscatter, "coll/icscatter.c");

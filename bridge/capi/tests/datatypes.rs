//! Issue 17, item 1: every predefined datatype of `mpi.h` (the C ones, the
//! pair types, the Fortran ones seen from C), and derived types matched by
//! their basic-type sequence, cross between two jobs at extreme values, in
//! both directions (tests/c/datatypes.c): each arrives intact with the
//! right `MPI_Get_count`, and what MPI's type matching forbids is refused,
//! never delivered.

#![cfg(test)]

mod common;

use common::*;

/// Both directions between `a` and `b`: every case of the program is
/// reported by its receiver, and every one is OK.
fn every_type_crosses(a: Mpi, b: Mpi) {
    let (oa, ob) = datatypes_exchange(a, b);
    match datatypes_verdict(&oa, &ob) {
        Ok(table) => println!("{table}"),
        Err(why) => panic!("{why}\nA:\n{}\nB:\n{}", text(&oa), text(&ob)),
    }
}

#[test]
fn every_predefined_type_crosses_between_open_mpi_and_mpich() {
    every_type_crosses(Mpi::OpenMpi, Mpi::Mpich);
}

#[test]
fn every_predefined_type_crosses_between_two_open_mpi_jobs() {
    every_type_crosses(Mpi::OpenMpi, Mpi::OpenMpi);
}

#[test]
fn every_predefined_type_crosses_between_two_mpich_jobs() {
    every_type_crosses(Mpi::Mpich, Mpi::Mpich);
}

//! `MPI_Comm_create`, `MPI_Comm_create_group` and `MPI_Comm_split_type` on
//! a merged communicator. A group of both jobs' processes (an Isthmus
//! group, `crate::group`: `MPI_Comm_group` of a merged communicator and
//! what is made of it) makes `MPI_Comm_create` a merged split by the
//! members' places. A native group is an `MPI_Group` of this job's MPI,
//! which names this job's processes only: the new communicator is that job's native one,
//! made from the merged communicator's handle (this job's ranks of it, in
//! the merged order), at full native speed. `MPI_Comm_create` is collective
//! over both jobs: the job the group does not name passes
//! `MPI_GROUP_EMPTY` and gets `MPI_COMM_NULL`; groups given in both jobs
//! (each naming its own job's half) are refused at every rank, since no
//! `MPI_Group` says how the two halves interleave (`MPI_Comm_split`, whose
//! keys do, makes such communicators). `MPI_Comm_split_type` splits each
//! job on its own: processes of two jobs cannot share memory through MPI.

use std::ffi::c_int;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::coll::allgather;
use super::comm::raise;
use super::split::comm_split;
use super::wire::{mpi, Fail};
use crate::group::MPI_Group_size;
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::state::{MergedComm, Place};

/// `MPI_Comm_create` on a merged communicator.
///
/// # Safety
/// As `MPI_Comm_create`.
pub(crate) unsafe fn comm_create(
    mc: &MergedComm,
    comm: MPI_Comm,
    group: ffi::MPI_Group,
    newcomm: *mut MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Comm_create";
    let mut size: c_int = 0;
    // SAFETY: reads the program's group.
    if let Err(f) = mpi(unsafe { MPI_Group_size(group, &mut size) }) {
        return raise(comm, CALL, f);
    }
    // An Isthmus group (of both jobs' processes) is told as -1 - size, so
    // that every rank learns from the one exchange that the creation goes
    // by the group's members' merged ranks (a split), whatever it was given.
    if crate::group::isthmus(group).is_some() {
        size = -1 - size;
    }
    let mut all = vec![0 as c_int; mc.size() as usize];
    // SAFETY: one int from each rank into `all`; MPI_INT on both sides.
    let rc = unsafe {
        let int = ffi::RSMPI_INT32_T;
        allgather(
            mc,
            (&raw const size).cast(),
            1,
            int,
            all.as_mut_ptr().cast(),
            1,
            int,
            comm,
        )
    };
    if rc != 0 {
        return rc;
    }
    if all.iter().any(|&s| s < 0) {
        // SAFETY: forwarded.
        return unsafe { create_by_split(mc, comm, group, newcomm) };
    }
    let named = |remote: bool| {
        all.iter().enumerate().any(|(r, s)| {
            *s > 0
                && u32::try_from(r)
                    .ok()
                    .and_then(|r| mc.place(r))
                    .is_some_and(|p| matches!(p, Place::Remote(_)) == remote)
        })
    };
    if named(false) && named(true) {
        // SAFETY: the program's out-pointer.
        unsafe { *newcomm = comm_null() };
        let e = BridgeError::InvalidArgument(
            "the group names processes in both jobs of the merged Isthmus communicator (each \
             job passed a non-empty group): an MPI_Group of one MPI implementation names only \
             its own job's processes, so a group spanning both jobs cannot be expressed, nor the \
             order of its two halves; a group of one job's processes works (the other job \
             passes MPI_GROUP_EMPTY), and MPI_Comm_split makes communicators spanning both jobs"
                .into(),
        );
        return raise(comm, CALL, Fail::Bridge(e));
    }
    // SAFETY: the program's handle and group, our out-pointer; every rank of
    // this job calls it (with the same group, as MPI asks).
    let r = mpi(unsafe { ffi::PMPI_Comm_create(comm, group, newcomm) });
    match r {
        Ok(()) => 0,
        Err(f) => raise(comm, CALL, f),
    }
}

/// `MPI_Comm_create` where some rank gave an Isthmus group: each member's
/// color is its group's first member's merged rank (groups given at
/// different ranks are the same or disjoint, as MPI asks), its key its
/// place in the group, and the merged split does the rest (a native
/// communicator if the group is one job's, a merged one otherwise).
///
/// # Safety
/// As `MPI_Comm_create`.
unsafe fn create_by_split(
    mc: &MergedComm,
    comm: MPI_Comm,
    group: ffi::MPI_Group,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let ranks = match crate::group::merged_ranks(mc, group) {
        Ok(r) => r,
        Err(e) => {
            // The others go on to the split: take part with no color.
            // SAFETY: forwarded.
            let rc = unsafe { comm_split(mc, comm, ffi::MPI_UNDEFINED as c_int, 0, newcomm) };
            let _ = rc;
            return raise(comm, "MPI_Comm_create", Fail::Bridge(e));
        }
    };
    let me = mc.rank();
    let (color, key) = match ranks.iter().position(|&r| r == me) {
        Some(i) => (
            ranks
                .first()
                .map_or(0, |&r| c_int::try_from(r).unwrap_or(0)),
            c_int::try_from(i).unwrap_or(c_int::MAX),
        ),
        None => (ffi::MPI_UNDEFINED as c_int, 0),
    };
    // SAFETY: forwarded.
    unsafe { comm_split(mc, comm, color, key, newcomm) }
}

/// `MPI_Comm_create_group` on a merged communicator: the group names this
/// job's processes, so the job's native call on the handle is the whole
/// of it (only the group's members call).
///
/// # Safety
/// As `MPI_Comm_create_group`.
pub(crate) unsafe fn comm_create_group(
    _mc: &MergedComm,
    comm: MPI_Comm,
    group: ffi::MPI_Group,
    tag: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    // SAFETY: the program's arguments, on its handle.
    let r = unsafe { create_group(comm, group, tag, newcomm) };
    match r {
        Ok(()) => 0,
        Err(f) => raise(comm, "MPI_Comm_create_group", f),
    }
}

/// The job's own `MPI_Comm_create_group` on `comm`.
///
/// # Safety
/// As `MPI_Comm_create_group`.
#[cfg(not(isthmus_large_count))]
unsafe fn create_group(
    comm: MPI_Comm,
    group: ffi::MPI_Group,
    tag: c_int,
    newcomm: *mut MPI_Comm,
) -> Result<(), Fail> {
    // SAFETY: forwarded.
    mpi(unsafe { ffi::PMPI_Comm_create_group(comm, group, tag, newcomm) })
}

/// The job's own `MPI_Comm_create_group` on `comm`, as MPI 4's
/// `MPI_Comm_create_from_group` (the tag in its string tag, `comm`'s error
/// handler): MPICH 4.0's `MPI_Comm_create_group` crashes on any
/// communicator but `MPI_COMM_WORLD` (a duplicate of it included).
///
/// # Safety
/// As `MPI_Comm_create_group`.
#[cfg(isthmus_large_count)]
unsafe fn create_group(
    comm: MPI_Comm,
    group: ffi::MPI_Group,
    tag: c_int,
    newcomm: *mut MPI_Comm,
) -> Result<(), Fail> {
    let name = std::ffi::CString::new(format!("isthmus-merged-create-group:{tag}"))
        .map_err(|e| Fail::Bridge(BridgeError::InvalidArgument(e.to_string())))?;
    // SAFETY: reading rsmpi's exported constant.
    let mut handler = unsafe { ffi::RSMPI_ERRORS_RETURN };
    // SAFETY: the program's communicator; our out-handle.
    mpi(unsafe { ffi::PMPI_Comm_get_errhandler(comm, &mut handler) })?;
    // SAFETY: the program's group and out-pointer; a string of ours.
    let r = mpi(unsafe {
        ffi::PMPI_Comm_create_from_group(
            group,
            name.as_ptr(),
            ffi::RSMPI_INFO_NULL,
            handler,
            newcomm,
        )
    });
    // SAFETY: the reference MPI_Comm_get_errhandler gave us.
    unsafe { ffi::PMPI_Errhandler_free(&mut handler) };
    r
}

/// `MPI_Comm_split_type` on a merged communicator: each job's own split
/// (by key, then merged rank, as the handle keeps the merged order).
///
/// # Safety
/// As `MPI_Comm_split_type`.
pub(crate) unsafe fn comm_split_type(
    _mc: &MergedComm,
    comm: MPI_Comm,
    split_type: c_int,
    key: c_int,
    info: ffi::MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    // SAFETY: the program's arguments, on its handle.
    let r = mpi(unsafe { ffi::PMPI_Comm_split_type(comm, split_type, key, info, newcomm) });
    match r {
        Ok(()) => 0,
        Err(f) => raise(comm, "MPI_Comm_split_type", f),
    }
}

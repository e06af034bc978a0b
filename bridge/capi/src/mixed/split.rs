//! `MPI_Comm_split` and `MPI_Comm_create` of a mixed intercommunicator,
//! as MPI defines them for an intercommunicator: each group splits (or
//! keeps its part of `group`) on its own, and the new intercommunicator
//! joins the parts of one color of the two groups (`MPI_COMM_NULL` where
//! either part is empty). Built from calls that already work across jobs:
//! the local group's communicator splits (natively or as a merged split),
//! a private merge of the two groups tells every member where each
//! color's leaders are, and `MPI_Intercomm_create` over that merge joins
//! each color's parts — giving a native intercommunicator, an Isthmus one
//! or a mixed one, as the parts' jobs say.

use std::ffi::c_int;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::comm::merge;
use super::local;
use crate::merged::{free_native, mpi, Fail};
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::state::{self, LocalGroup, MixedInter};

/// The tag of the private merge's leaders' exchange (the merge is made
/// for one split and no other message travels on it).
const TAG: c_int = 0x1517;

/// Splits the local group's communicator: a native or merged
/// communicator of this color's part, or `MPI_COMM_NULL`.
fn split_local(mx: &MixedInter, color: c_int, key: c_int) -> Result<MPI_Comm, Fail> {
    let mut out = comm_null();
    match mx.local {
        // SAFETY: our private communicator; an out-handle.
        LocalGroup::Native(c) => mpi(unsafe { ffi::PMPI_Comm_split(c, color, key, &mut out) })?,
        LocalGroup::Merged(c) => {
            let mc = state::merged_comm(c).ok_or_else(|| {
                Fail::Bridge(BridgeError::InvalidArgument(
                    "the local group's communicator is gone".into(),
                ))
            })?;
            // SAFETY: as above.
            mpi(unsafe { crate::merged::comm_split(&mc, c, color, key, &mut out) })?
        }
    }
    Ok(out)
}

/// Frees a communicator of ours (a merged one's registration too).
fn free(c: MPI_Comm) {
    if c == comm_null() {
        return;
    }
    if state::merged_comm(c).is_some() {
        local::free(&LocalGroup::Merged(c));
    } else {
        free_native(c);
    }
}

/// This process's rank in a communicator of ours, native or merged.
fn rank_in(c: MPI_Comm) -> Result<u32, Fail> {
    if let Some(mc) = state::merged_comm(c) {
        return Ok(mc.rank());
    }
    let mut r: c_int = -1;
    // SAFETY: our native communicator; an out-value.
    mpi(unsafe { ffi::PMPI_Comm_rank(c, &mut r) })?;
    Ok(u32::try_from(r).unwrap_or(u32::MAX))
}

/// The new intercommunicator of this color's parts, given this process's
/// part (`part`, `MPI_COMM_NULL` for `MPI_UNDEFINED`).
fn join(mx: &MixedInter, comm: MPI_Comm, color: c_int, part: MPI_Comm) -> Result<MPI_Comm, Fail> {
    let both = merge(mx, comm, false)?;
    let made = (|| {
        let mc = state::merged_comm(both).ok_or_else(|| {
            Fail::Bridge(BridgeError::InvalidArgument(
                "the private merge is gone".into(),
            ))
        })?;
        let size = mc.size();
        let me = mc.rank();
        // In the merge, the group whose leader is rank 0 comes first.
        let ours_first = me == mx.rank;
        let mut leads: c_int = 0;
        if part != comm_null() {
            leads = c_int::from(rank_in(part)? == 0);
        }
        let mine = [
            if part == comm_null() {
                ffi::MPI_UNDEFINED
            } else {
                color
            },
            leads,
        ];
        let mut all = vec![0 as c_int; 2 * size as usize];
        // SAFETY: two ints from each rank of the merge.
        mpi(unsafe {
            crate::merged::allgather(
                &mc,
                mine.as_ptr().cast(),
                2,
                ffi::RSMPI_INT32_T,
                all.as_mut_ptr().cast(),
                2,
                ffi::RSMPI_INT32_T,
                both,
            )
        })?;
        // The other group's ranks in the merge.
        let theirs = if ours_first {
            mx.local_size..size
        } else {
            0..size - mx.local_size
        };
        let leader = all
            .chunks_exact(2)
            .enumerate()
            .filter(|(r, _)| theirs.contains(&(*r as u32)))
            .find(|(_, e)| e.first() == Some(&color) && e.get(1) == Some(&1))
            .map(|(r, _)| r);
        let (Some(leader), true) = (leader, part != comm_null()) else {
            return Ok(comm_null());
        };
        let mut out = comm_null();
        let leader = c_int::try_from(leader).unwrap_or(c_int::MAX);
        // SAFETY: this color's part, its leader 0, the merge as the peer
        // communicator; an out-handle.
        mpi(unsafe {
            crate::intercomm_create::MPI_Intercomm_create(part, 0, both, leader, TAG, &mut out)
        })?;
        Ok(out)
    })();
    free(both);
    made
}

fn split(mx: &MixedInter, comm: MPI_Comm, color: c_int, key: c_int) -> Result<MPI_Comm, Fail> {
    let part = split_local(mx, color, key)?;
    let made = join(mx, comm, color, part);
    free(part);
    made
}

/// `MPI_Comm_split` of a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Comm_split`.
pub(crate) unsafe fn comm_split(
    mx: &MixedInter,
    comm: MPI_Comm,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe {
        crate::merged::give_comm(split(mx, comm, color, key), comm, "MPI_Comm_split", newcomm)
    }
}

/// `MPI_Comm_create` of a mixed intercommunicator: the split whose one
/// color is `group`'s members, ordered as in `group` (a subset of the
/// local group).
///
/// # Safety
/// As `MPI_Comm_create`.
pub(crate) unsafe fn comm_create(
    mx: &MixedInter,
    comm: MPI_Comm,
    group: ffi::MPI_Group,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let mut r: c_int = ffi::MPI_UNDEFINED;
    // SAFETY: the program's group (ours or the MPI's); an out-value.
    let made = mpi(unsafe { crate::group::MPI_Group_rank(group, &mut r) }).and_then(|()| {
        let color = if r == ffi::MPI_UNDEFINED {
            ffi::MPI_UNDEFINED
        } else {
            0
        };
        split(mx, comm, color, r)
    });
    // SAFETY: the program's out-pointer.
    unsafe { crate::merged::give_comm(made, comm, "MPI_Comm_create", newcomm) }
}

//! `MPI_Comm_split` and `MPI_Comm_create` of an Isthmus
//! intercommunicator, with MPI's intercommunicator semantics: the new
//! communicator is an intercommunicator between this group's and the
//! other group's processes of the same color (split: ordered by key, then
//! rank; create: each group's `group` argument, in its order), and
//! `MPI_COMM_NULL` where either side is empty. Each group's side is its
//! job's own native split or create of the local handle; the groups learn
//! each other's new ranks through the intercommunicator's `MPI_Allgather`;
//! the bridge side is `InterComm::subset`, on a context both jobs derive
//! from the intercommunicator's, the count of communicators derived from
//! it and the color, with no message.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::errors;
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::state::{add_comm, BridgeComm};

/// The membership a process declares: its color (-1 for none) and its rank
/// in its group's side of the new communicator (-1 for none).
type Member = [c_int; 2];

/// Makes the native side `side` (this process's group's members of
/// `color`, or null) an intercommunicator with the other group's members
/// of the same color, or frees it and gives `MPI_COMM_NULL` when either
/// side is empty.
fn join(
    bc: &BridgeComm,
    comm: MPI_Comm,
    side: MPI_Comm,
    color: c_int,
    call: &'static str,
) -> Result<MPI_Comm, c_int> {
    let mut mine: Member = [-1, -1];
    if side != comm_null() && color >= 0 {
        let mut r: c_int = 0;
        // SAFETY: our new communicator; `r` an out-value.
        let rc = unsafe { ffi::PMPI_Comm_rank(side, &mut r) };
        if rc != 0 {
            return Err(errors::raise(comm, rc));
        }
        mine = [color, r];
    }
    let mut theirs = vec![[0 as c_int; 2]; bc.inter.remote_size() as usize];
    // SAFETY: two ints from each rank; the other group's into `theirs`.
    let rc = unsafe {
        let int = ffi::RSMPI_INT32_T;
        crate::coll::allgather(
            bc,
            mine.as_ptr().cast(),
            2,
            int,
            theirs.as_mut_ptr().cast(),
            2,
            int,
            comm,
        )
    };
    // Every rank of both groups counts the call, so both derive alike.
    let n = bc.derived.fetch_add(1, Ordering::Relaxed) + 1;
    let free = |mut c: MPI_Comm| {
        if c != comm_null() {
            // SAFETY: our new communicator, never handed out.
            unsafe { ffi::PMPI_Comm_free(&mut c) };
        }
    };
    if rc != 0 {
        free(side);
        return Err(rc);
    }
    let mut remote: Vec<(c_int, u32)> = theirs
        .iter()
        .enumerate()
        .filter(|(_, m)| color >= 0 && m[0] == color && m[1] >= 0)
        .filter_map(|(j, m)| Some((m[1], u32::try_from(j).ok()?)))
        .collect();
    if mine[1] < 0 || remote.is_empty() {
        free(side);
        return Ok(comm_null());
    }
    remote.sort_unstable();
    let remote: Vec<u32> = remote.into_iter().map(|(_, j)| j).collect();
    let mut size: c_int = 0;
    // SAFETY: our new communicator.
    let rc = unsafe { ffi::PMPI_Comm_size(side, &mut size) };
    if rc != 0 {
        free(side);
        return Err(errors::raise(comm, rc));
    }
    let mut key = n.to_le_bytes().to_vec();
    key.extend_from_slice(call.as_bytes());
    key.extend_from_slice(&color.to_le_bytes());
    let rank = u32::try_from(mine[1]).unwrap_or(u32::MAX);
    let size = u32::try_from(size).unwrap_or(0);
    match bc.inter.subset(&key, rank, size, &remote) {
        Ok(inter) => {
            add_comm(
                side,
                BridgeComm {
                    inter,
                    local_group: bc.local_group.clone(),
                    remote_group: bc.remote_group.clone(),
                    derived: Default::default(),
                    coll: Default::default(),
                },
            );
            Ok(side)
        }
        Err(e) => {
            free(side);
            Err(errors::fail(comm, call, &e))
        }
    }
}

fn finish(r: Result<MPI_Comm, c_int>, newcomm: *mut MPI_Comm) -> c_int {
    match r {
        Ok(c) => {
            // SAFETY: the program's out-pointer (the callers' contract).
            unsafe { *newcomm = c };
            0
        }
        Err(code) => {
            // SAFETY: as above.
            unsafe { *newcomm = comm_null() };
            code
        }
    }
}

/// `MPI_Comm_split` on an Isthmus intercommunicator.
///
/// # Safety
/// As `MPI_Comm_split`.
pub(crate) unsafe fn comm_split(
    bc: &BridgeComm,
    comm: MPI_Comm,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Comm_split";
    if color < 0 && color != ffi::MPI_UNDEFINED as c_int {
        let e = BridgeError::InvalidArgument(format!("color {color} is negative"));
        return finish(Err(errors::fail(comm, CALL, &e)), newcomm);
    }
    let mut side = comm_null();
    // SAFETY: the local handle (this group's intracommunicator), our
    // out-handle; every rank of this group calls it.
    let rc = unsafe { ffi::PMPI_Comm_split(comm, color, key, &mut side) };
    if rc != 0 {
        return finish(Err(errors::raise(comm, rc)), newcomm);
    }
    let color = if color == ffi::MPI_UNDEFINED as c_int {
        -1
    } else {
        color
    };
    finish(join(bc, comm, side, color, CALL), newcomm)
}

/// `MPI_Comm_create` on an Isthmus intercommunicator: `group` is a
/// subgroup of this group (MPI 2.2's intercommunicator form).
///
/// # Safety
/// As `MPI_Comm_create`.
pub(crate) unsafe fn comm_create(
    bc: &BridgeComm,
    comm: MPI_Comm,
    group: ffi::MPI_Group,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let mut side = comm_null();
    // SAFETY: the local handle and the program's group; our out-handle;
    // every rank of this group calls it.
    let rc = unsafe { ffi::PMPI_Comm_create(comm, group, &mut side) };
    if rc != 0 {
        return finish(Err(errors::raise(comm, rc)), newcomm);
    }
    finish(join(bc, comm, side, 0, "MPI_Comm_create"), newcomm)
}

include!(concat!(env!("OUT_DIR"), "/shells_intercomm_split.rs"));

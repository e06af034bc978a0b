//! Communicator calls on a bridge communicator: the ones whose answer for
//! an intercommunicator differs from its local handle's (`test_inter`,
//! `remote_size`, `compare`), and the ones that make or end one (`dup`,
//! `idup`, `free`, `disconnect`). All others that take a communicator
//! either work natively on the local handle (rank, size, group, attributes,
//! names, error handlers) or are refused (`refused`). The C entry points
//! that dispatch on one communicator are generated from `mpi-functions.txt`
//! (included at the end) around the bodies here; `compare`, `free` and
//! `disconnect` dispatch themselves.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use mpi::ffi;

use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Request};
use crate::state::{add_comm, bridge_comm, remove_comm, BridgeComm};

/// `MPI_Comm_test_inter` on an Isthmus communicator: an intercommunicator.
///
/// # Safety
/// As `MPI_Comm_test_inter`.
pub(crate) unsafe fn comm_test_inter(_bc: &BridgeComm, _comm: MPI_Comm, flag: *mut c_int) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe { *flag = 1 };
    0
}

/// `MPI_Comm_rank` on an Isthmus intercommunicator: the local handle's
/// (interposed for the merged communicators' sake, whose rank the local
/// handle does not know, from C and Fortran alike).
///
/// # Safety
/// As `MPI_Comm_rank`.
pub(crate) unsafe fn comm_rank(_bc: &BridgeComm, comm: MPI_Comm, rank: *mut c_int) -> c_int {
    // SAFETY: the program's arguments, passed on.
    unsafe { ffi::PMPI_Comm_rank(comm, rank) }
}

/// `MPI_Comm_size` on an Isthmus intercommunicator: the local group's (as
/// `comm_rank`).
///
/// # Safety
/// As `MPI_Comm_size`.
pub(crate) unsafe fn comm_size(_bc: &BridgeComm, comm: MPI_Comm, size: *mut c_int) -> c_int {
    // SAFETY: the program's arguments, passed on.
    unsafe { ffi::PMPI_Comm_size(comm, size) }
}

/// `MPI_Comm_remote_size` on an Isthmus communicator: the remote group's.
///
/// # Safety
/// As `MPI_Comm_remote_size`.
pub(crate) unsafe fn comm_remote_size(bc: &BridgeComm, _comm: MPI_Comm, size: *mut c_int) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe { *size = c_int::try_from(bc.inter.remote_size()).unwrap_or(c_int::MAX) };
    0
}

/// # Safety
/// As `MPI_Comm_compare`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(
    comm1: MPI_Comm,
    comm2: MPI_Comm,
    result: *mut c_int,
) -> c_int {
    let (x1, x2) = (
        crate::state::mixed_comm(comm1),
        crate::state::mixed_comm(comm2),
    );
    if x1.is_some() || x2.is_some() {
        let r = match (x1, x2) {
            _ if comm1 == comm2 => ffi::MPI_IDENT,
            // The same groups in the same order, another context.
            (Some(a), Some(b)) if a.union == b.union && a.peers == b.peers => ffi::MPI_CONGRUENT,
            _ => ffi::MPI_UNEQUAL,
        };
        // SAFETY: the program's out-pointer.
        unsafe { *result = r as c_int };
        return 0;
    }
    let (m1, m2) = (
        crate::state::merged_comm(comm1),
        crate::state::merged_comm(comm2),
    );
    if m1.is_some() || m2.is_some() {
        let r = match (m1, m2) {
            _ if comm1 == comm2 => ffi::MPI_IDENT,
            // The same two groups in the same order, another context.
            (Some(a), Some(b)) if crate::merged::same_group(&a, &b) => ffi::MPI_CONGRUENT,
            // Otherwise by their members, as MPI defines it (a split or a
            // create of the same processes in another order is similar).
            (Some(a), Some(b)) => {
                match (crate::group::of_merged(&a), crate::group::of_merged(&b)) {
                    (Ok(x), Ok(y)) => members_compared(&x, &y),
                    (Err(e), _) | (_, Err(e)) => {
                        return errors::fail(comm1, "MPI_Comm_compare", &e)
                    }
                }
            }
            // A merged communicator spans two jobs, a native one one job.
            _ => ffi::MPI_UNEQUAL,
        };
        // SAFETY: the program's out-pointer.
        unsafe { *result = r as c_int };
        return 0;
    }
    let (a, b) = (bridge_comm(comm1), bridge_comm(comm2));
    if a.is_none() && b.is_none() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Comm_compare(comm1, comm2, result) };
    }
    let r = match (a, b) {
        _ if comm1 == comm2 => ffi::MPI_IDENT,
        // Same two groups in the same incarnations, another context.
        (Some(a), Some(b))
            if a.local_group == b.local_group
                && a.remote_group == b.remote_group
                && a.inter.rank() == b.inter.rank() =>
        {
            ffi::MPI_CONGRUENT
        }
        _ => ffi::MPI_UNEQUAL,
    };
    // SAFETY: the program's out-pointer.
    unsafe { *result = r as c_int };
    0
}

/// `MPI_Comm_compare` of two communicators' members (different contexts):
/// congruent in the same order, similar as the same set, else unequal.
fn members_compared(a: &[crate::group::Proc], b: &[crate::group::Proc]) -> u32 {
    if a == b {
        return ffi::MPI_CONGRUENT;
    }
    let set =
        |v: &[crate::group::Proc]| v.iter().copied().collect::<std::collections::HashSet<_>>();
    if a.len() == b.len() && set(a) == set(b) {
        ffi::MPI_SIMILAR
    } else {
        ffi::MPI_UNEQUAL
    }
}

/// Duplicates a bridge communicator: the local handle natively
/// (collective over the local group, attributes copied as MPI does), the
/// bridge side by deriving the next context (both jobs derive in the same
/// order, as MPI requires of `MPI_Comm_dup` on an intercommunicator).
fn dup(bc: &BridgeComm, comm: MPI_Comm, call: &'static str) -> Result<MPI_Comm, c_int> {
    let mut newcomm = crate::mpi_glue::comm_null();
    // SAFETY: `comm` is a live communicator; `newcomm` an out-pointer.
    let rc = unsafe { ffi::PMPI_Comm_dup(comm, &mut newcomm) };
    if rc != 0 {
        return Err(rc);
    }
    let n = bc.derived.fetch_add(1, Ordering::Relaxed) + 1;
    match bc.inter.derived(n) {
        Ok(inter) => {
            add_comm(
                newcomm,
                BridgeComm {
                    inter,
                    local_group: bc.local_group.clone(),
                    remote_group: bc.remote_group.clone(),
                    derived: Default::default(),
                    coll: Default::default(),
                },
            );
            Ok(newcomm)
        }
        Err(e) => {
            // SAFETY: our own duplicate, never handed out.
            unsafe { ffi::PMPI_Comm_free(&mut newcomm) };
            Err(errors::fail(comm, call, &e))
        }
    }
}

/// `MPI_Comm_dup` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Comm_dup`.
pub(crate) unsafe fn comm_dup(bc: &BridgeComm, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    match dup(bc, comm, "MPI_Comm_dup") {
        Ok(c) => {
            // SAFETY: the program's out-pointer.
            unsafe { *newcomm = c };
            0
        }
        Err(code) => code,
    }
}

/// `MPI_Comm_dup_with_info` on an Isthmus communicator: as `MPI_Comm_dup`,
/// the new handle with the hints of `info` (the bridge uses none).
///
/// # Safety
/// As `MPI_Comm_dup_with_info`.
pub(crate) unsafe fn comm_dup_with_info(
    bc: &BridgeComm,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Comm_dup_with_info";
    let mut c = match dup(bc, comm, CALL) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Err(f) = crate::idup::set_hints(c, info) {
        if let Some(bc) = remove_comm(c) {
            bc.coll.free();
        }
        // SAFETY: our duplicate, never handed out.
        unsafe { ffi::PMPI_Comm_free(&mut c) };
        return crate::merged::raise(comm, CALL, f);
    }
    // SAFETY: the program's out-pointer.
    unsafe { *newcomm = c };
    0
}

/// `MPI_Comm_idup(_with_info)`: the bridge context derived at the call (in
/// `dup`'s order: no message), the job's own nonblocking duplicate of the
/// local handle, registered when the request completes (`crate::idup`).
///
/// # Safety
/// As `MPI_Comm_idup_with_info` (`info` may be MPI_INFO_NULL).
unsafe fn idup(
    bc: &BridgeComm,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    (newcomm, request): (*mut MPI_Comm, *mut MPI_Request),
    call: &'static str,
) -> c_int {
    let n = bc.derived.fetch_add(1, Ordering::Relaxed) + 1;
    let inter = match bc.inter.derived(n) {
        Ok(i) => i,
        Err(e) => return errors::fail(comm, call, &e),
    };
    let (local_group, remote_group) = (bc.local_group.clone(), bc.remote_group.clone());
    let finish = move |made: &[MPI_Comm]| match *made {
        [handle] => {
            add_comm(
                handle,
                BridgeComm {
                    inter,
                    local_group,
                    remote_group,
                    derived: Default::default(),
                    coll: Default::default(),
                },
            );
            Ok(crate::idup::Next::Done(handle))
        }
        _ => Err(crate::idup::wrong_count(made.len())),
    };
    // SAFETY: forwarded.
    unsafe {
        crate::idup::start(
            comm,
            call,
            &[comm],
            info,
            Box::new(finish),
            newcomm,
            request,
        )
    }
}

/// `MPI_Comm_idup` on an Isthmus communicator (see `idup`).
///
/// # Safety
/// As `MPI_Comm_idup`.
pub(crate) unsafe fn comm_idup(
    bc: &BridgeComm,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: reading rsmpi's exported constant.
    let none = unsafe { ffi::RSMPI_INFO_NULL };
    // SAFETY: forwarded.
    unsafe { idup(bc, comm, none, (newcomm, request), "MPI_Comm_idup") }
}

/// `MPI_Comm_idup_with_info` on an Isthmus communicator (see `idup`).
///
/// # Safety
/// As `MPI_Comm_idup_with_info`.
#[cfg(isthmus_mpi4)]
pub(crate) unsafe fn comm_idup_with_info(
    bc: &BridgeComm,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        idup(
            bc,
            comm,
            info,
            (newcomm, request),
            "MPI_Comm_idup_with_info",
        )
    }
}

/// # Safety
/// As `MPI_Comm_free`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    if !comm.is_null() {
        // SAFETY: non-null, the program's. Dropping the InterComm retires
        // its context: late messages for it are discarded; the native side
        // of its collectives is freed now, while MPI is sure to be up.
        if let Some(bc) = remove_comm(unsafe { *comm }) {
            bc.coll.free();
        } else {
            // SAFETY: as above. A merged communicator's private side, or a
            // mixed intercommunicator's.
            let c = unsafe { *comm };
            if !crate::merged::forget(c) {
                crate::mixed::forget(c);
            }
        }
    }
    // SAFETY: the program's argument, passed on.
    unsafe { ffi::PMPI_Comm_free(comm) }
}

/// # Safety
/// As `MPI_Comm_disconnect`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    let removed = if comm.is_null() {
        None
    } else {
        // SAFETY: non-null, the program's.
        remove_comm(unsafe { *comm })
    };
    // SAFETY: non-null when checked, the program's.
    if !comm.is_null()
        // SAFETY: as above.
        && (crate::merged::forget(unsafe { *comm }) || crate::mixed::forget(unsafe { *comm }))
    {
        // The handle is an intracommunicator duplicate: free it.
        // SAFETY: as above.
        return unsafe { ffi::PMPI_Comm_free(comm) };
    }
    if let Some(bc) = removed {
        bc.coll.free();
        // The local handle is an intracommunicator duplicate: free it.
        // SAFETY: non-null (checked above), the program's.
        return unsafe { ffi::PMPI_Comm_free(comm) };
    }
    // SAFETY: the program's argument, passed on.
    unsafe { ffi::PMPI_Comm_disconnect(comm) }
}

include!(concat!(env!("OUT_DIR"), "/shells_comms.rs"));

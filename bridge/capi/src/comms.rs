//! Communicator calls on a bridge communicator: the ones whose answer for
//! an intercommunicator differs from its local handle's (`test_inter`,
//! `remote_size`, `compare`), and the ones that make or end one (`dup`,
//! `idup`, `free`, `disconnect`). All others that take a communicator
//! either work natively on the local handle (rank, size, group, attributes,
//! names, error handlers) or are refused (`refused.c`).

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use mpi::ffi;

use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Request, Outcome};
use crate::requests;
use crate::state::{add_comm, bridge_comm, remove_comm, BridgeComm};

/// # Safety
/// As `MPI_Comm_test_inter`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    if bridge_comm(comm).is_some() {
        // SAFETY: the program's out-pointer.
        unsafe { *flag = 1 };
        return 0;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { ffi::PMPI_Comm_test_inter(comm, flag) }
}

/// # Safety
/// As `MPI_Comm_remote_size`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    if let Some(bc) = bridge_comm(comm) {
        // SAFETY: the program's out-pointer.
        unsafe { *size = c_int::try_from(bc.inter.remote_size()).unwrap_or(c_int::MAX) };
        return 0;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { ffi::PMPI_Comm_remote_size(comm, size) }
}

/// # Safety
/// As `MPI_Comm_compare`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(
    comm1: MPI_Comm,
    comm2: MPI_Comm,
    result: *mut c_int,
) -> c_int {
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

/// # Safety
/// As `MPI_Comm_dup`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    let Some(bc) = bridge_comm(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Comm_dup(comm, newcomm) };
    };
    match dup(&bc, comm, "MPI_Comm_dup") {
        Ok(c) => {
            // SAFETY: the program's out-pointer.
            unsafe { *newcomm = c };
            0
        }
        Err(code) => code,
    }
}

/// # Safety
/// As `MPI_Comm_dup_with_info` (the info is not used by the bridge).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup_with_info(
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    if bridge_comm(comm).is_none() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Comm_dup_with_info(comm, info, newcomm) };
    }
    // SAFETY: forwarded.
    unsafe { MPI_Comm_dup(comm, newcomm) }
}

/// `MPI_Comm_idup`: the duplicate is made at the call (the local part is a
/// native, collective dup; the bridge part needs no message), and the
/// request is complete at once.
///
/// # Safety
/// As `MPI_Comm_idup`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup(
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let Some(bc) = bridge_comm(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Comm_idup(comm, newcomm, request) };
    };
    let c = match dup(&bc, comm, "MPI_Comm_idup") {
        Ok(c) => c,
        Err(code) => return code,
    };
    match requests::completed(Outcome::empty()) {
        Ok(r) => {
            // SAFETY: the program's out-pointers.
            unsafe {
                *newcomm = c;
                *request = r;
            }
            0
        }
        Err(code) => code,
    }
}

/// # Safety
/// As `MPI_Comm_free`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    if !comm.is_null() {
        // SAFETY: non-null, the program's. Dropping the InterComm retires
        // its context: late messages for it are discarded.
        drop(remove_comm(unsafe { *comm }));
    }
    // SAFETY: the program's argument, passed on.
    unsafe { ffi::PMPI_Comm_free(comm) }
}

/// # Safety
/// As `MPI_Comm_disconnect`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    // SAFETY: non-null checked; the program's.
    if !comm.is_null() && remove_comm(unsafe { *comm }).is_some() {
        // The local handle is an intracommunicator duplicate: free it.
        // SAFETY: as above.
        return unsafe { ffi::PMPI_Comm_free(comm) };
    }
    // SAFETY: the program's argument, passed on.
    unsafe { ffi::PMPI_Comm_disconnect(comm) }
}

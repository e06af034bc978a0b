//! The reducing collectives on an Isthmus intercommunicator: `MPI_Reduce`
//! (the group without the root reduces natively to its leader, whose result
//! crosses to the root), `MPI_Allreduce` (each group reduces natively, the
//! leaders exchange, each group gets the other's result) and
//! `MPI_Reduce_scatter(_block)` (the same, the other group's result
//! scattered). The job's own MPI applies the operation, predefined or
//! user-defined, on the job's own datatype handle; only results cross.

use std::ffi::{c_int, c_void};

use mpi::ffi;
use mpi::raw::AsRaw;

use super::common::{
    check_not_in_place, code, deliver, made, outcome, role_or_raise, with_local, Role,
};
use crate::collbuf::{elements, int, times, LeaderRoom};
use crate::datatype;
use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};
use crate::state::BridgeComm;
use crate::unsigned_ops::native_op;

/// `MPI_Reduce` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Reduce`: `sendbuf` holds `count` elements in the group without
/// the root, `recvbuf` has room for them at the root.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn reduce(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Reduce";
    let fail = |e| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |local| {
        check_not_in_place(comm, CALL, &[sendbuf, recvbuf])?;
        let n = elements(count).map_err(fail)?;
        match role_or_raise(bc, comm, root, CALL)? {
            Role::Idle => Ok(()),
            Role::Root => {
                let max = datatype::capacity_bytes(n, datatype).map_err(fail)?;
                let got = bc.inter.reduce_recv(max).map_err(fail)?;
                // SAFETY: the root's buffer has room for `count` elements.
                unsafe { deliver(got, recvbuf, n, datatype) }.map_err(fail)
            }
            Role::From(root) => {
                let mut room = LeaderRoom::new(bc.inter.rank() == 0, n, datatype).map_err(fail)?;
                // SAFETY: the program's buffer and handles; the room has
                // space for `count` elements at the leader (the local root).
                let rc = unsafe {
                    reduce_to_leader(sendbuf, room.ptr(), count, datatype, op, local.as_raw())
                };
                let mine = room.at_leader().map(|at| {
                    // SAFETY: the room holds the local result when `rc` is 0.
                    unsafe { made(rc, "MPI_Reduce", at, n, datatype) }
                });
                outcome(comm, CALL, rc, bc.inter.reduce_send(local, root, mine))
            }
        }
    }))
}

/// `MPI_Allreduce` on an Isthmus communicator: `recvbuf` gets the
/// reduction of the other group's data.
///
/// # Safety
/// As `MPI_Allreduce`.
pub(crate) unsafe fn allreduce(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Allreduce";
    let fail = |e| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |local| {
        check_not_in_place(comm, CALL, &[sendbuf, recvbuf])?;
        let n = elements(count).map_err(fail)?;
        // SAFETY: recvbuf has room for `count` elements (MPI_Allreduce's contract).
        let raw = unsafe { datatype::raw_target(recvbuf, n, datatype) };
        if let Some(target) = raw.map_err(fail)? {
            // A predefined type: the leader reduces into scratch, and the
            // other group's result lands straight in every rank's recvbuf.
            let mut room = LeaderRoom::new(bc.inter.rank() == 0, n, datatype).map_err(fail)?;
            // SAFETY: the program's buffers and handles; the room has space
            // for `count` elements at the leader (the local root).
            let rc = unsafe {
                reduce_to_leader(sendbuf, room.ptr(), count, datatype, op, local.as_raw())
            };
            // SAFETY: the room holds the local result at the leader when `rc` is 0.
            let mine = room
                .at_leader()
                .map(|at| unsafe { made(rc, "MPI_Reduce", at, n, datatype) });
            let got = target.recv(|bytes| bc.inter.allreduce_into(local, mine, bytes));
            outcome(comm, CALL, rc, Ok(()))?;
            return got.map(drop).map_err(fail);
        }
        let max = datatype::capacity_bytes(n, datatype).map_err(fail)?;
        // The leader reduces into its own recvbuf, which the other group's
        // result overwrites once the local one has been sent.
        // SAFETY: the program's buffers and handles (MPI_Allreduce's contract).
        let rc = unsafe { reduce_to_leader(sendbuf, recvbuf, count, datatype, op, local.as_raw()) };
        let leader = bc.inter.rank() == 0;
        // SAFETY: recvbuf holds the local result at the leader when `rc` is 0.
        let mine = leader.then(|| unsafe { made(rc, "MPI_Reduce", recvbuf, n, datatype) });
        let got = bc.inter.allreduce_bytes(local, mine, max);
        outcome(comm, CALL, rc, Ok(()))?;
        let got = got.map_err(fail)?;
        // SAFETY: recvbuf has room for `count` elements.
        unsafe { deliver(got, recvbuf, n, datatype) }.map_err(fail)
    }))
}

/// The body of both reduce_scatter forms: `total` elements reduced in each
/// group, the other group's result shared out by `counts` (None: equal
/// blocks), this rank's `mine` elements into `recvbuf`.
///
/// # Safety
/// `sendbuf` holds `total` elements of `datatype`, `recvbuf` has room for `mine`.
#[allow(clippy::too_many_arguments)] // MPI's own and the shares
unsafe fn reduce_scatter_body(
    bc: &BridgeComm,
    call: &str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    total: usize,
    counts: Option<&[u64]>,
    mine: usize,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> Result<(), c_int> {
    let fail = |e| errors::fail(comm, call, &e);
    with_local(bc, comm, |local| {
        check_not_in_place(comm, call, &[sendbuf, recvbuf])?;
        let total_c = int(total).map_err(fail)?;
        let max = datatype::capacity_bytes(total, datatype).map_err(fail)?;
        let mut room = LeaderRoom::new(bc.inter.rank() == 0, total, datatype).map_err(fail)?;
        // SAFETY: the program's buffer and handles; the room has space for
        // `total` elements at the leader (the local root).
        let rc = unsafe {
            crate::native_step::reduce(
                sendbuf,
                room.ptr(),
                total_c,
                datatype,
                native_op(op, datatype),
                0,
                local.as_raw(),
            )
        };
        let reduced = room.at_leader().map(|at| {
            // SAFETY: the room holds the local result when `rc` is 0.
            unsafe { made(rc, "MPI_Reduce", at, total, datatype) }
        });
        let got = bc.inter.reduce_scatter_bytes(local, reduced, counts, max);
        outcome(comm, call, rc, Ok(()))?;
        let got = got.map_err(fail)?;
        // SAFETY: recvbuf has room for this rank's `mine` elements.
        unsafe { deliver(got, recvbuf, mine, datatype) }.map_err(fail)
    })
}

/// `MPI_Reduce_scatter_block` on an Isthmus communicator: each group
/// reduces `recvcount` elements per local rank; each rank gets its block of
/// the other group's result.
///
/// # Safety
/// As `MPI_Reduce_scatter_block`.
pub(crate) unsafe fn reduce_scatter_block(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Reduce_scatter_block";
    let n = match elements(recvcount).and_then(|n| times(n, bc.inter.local_size())) {
        Ok(total) => total,
        Err(e) => return errors::fail(comm, CALL, &e),
    };
    let mine = n / bc.inter.local_size().max(1) as usize;
    // SAFETY: MPI_Reduce_scatter_block's contract.
    code(unsafe {
        reduce_scatter_body(
            bc, CALL, sendbuf, recvbuf, n, None, mine, datatype, op, comm,
        )
    })
}

/// `MPI_Reduce_scatter` on an Isthmus communicator: each group reduces
/// the sum of its `recvcounts`; rank i gets `recvcounts[i]` elements of
/// the other group's result.
///
/// # Safety
/// As `MPI_Reduce_scatter`: `recvcounts` has one count per local rank.
pub(crate) unsafe fn reduce_scatter(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Reduce_scatter";
    let size = bc.inter.local_size() as usize;
    if recvcounts.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_COUNT as c_int);
    }
    // SAFETY: one count per local rank (MPI_Reduce_scatter's contract).
    let given = unsafe { std::slice::from_raw_parts(recvcounts, size) };
    let counts: Result<Vec<u64>, _> = given
        .iter()
        .map(|c| elements(*c).map(|n| n as u64))
        .collect();
    let counts = match counts {
        Ok(c) => c,
        Err(e) => return errors::fail(comm, CALL, &e),
    };
    let total = counts.iter().sum::<u64>() as usize;
    let mine = counts.get(bc.inter.rank() as usize).copied().unwrap_or(0) as usize;
    // SAFETY: MPI_Reduce_scatter's contract.
    code(unsafe {
        reduce_scatter_body(
            bc,
            CALL,
            sendbuf,
            recvbuf,
            total,
            Some(&counts),
            mine,
            datatype,
            op,
            comm,
        )
    })
}

/// The native step of a reduction across groups: this group's reduction
/// to its leader (local rank 0), by the job's operation for `op`.
///
/// # Safety
/// As `MPI_Reduce` to rank 0 of `local`.
unsafe fn reduce_to_leader(
    sendbuf: *const c_void,
    into: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    local: MPI_Comm,
) -> c_int {
    // SAFETY: forwarded (this function's contract).
    unsafe {
        crate::native_step::reduce(
            sendbuf,
            into,
            count,
            datatype,
            native_op(op, datatype),
            0,
            local,
        )
    }
}

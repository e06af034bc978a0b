//! `MPI_Gather` and `MPI_Allgather` on an Isthmus intercommunicator: a
//! group gathers its data natively to its leader (with the program's own
//! datatypes: the leader gathers `sendcount` elements of its `sendtype`
//! from each rank, which MPI's type matching allows), and the leader's one
//! message crosses — to the root (gather), or to the other leader, which
//! broadcasts it in its job (allgather). The v forms send each block
//! straight to where it goes: to the root (gatherv), or to the other
//! group's leader, which broadcasts the blocks in its job (allgatherv).

use std::ffi::{c_int, c_void};

use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;

use super::common::{
    check_not_in_place, code, deliver, made, message, outcome, role_or_raise, v_block, with_local,
    Role,
};
use crate::collbuf::{elements, times, LeaderRoom};
use crate::datatype;
use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};
use crate::state::BridgeComm;

/// The native gather to the leader: `(rc, room)`, `room` holding the
/// group's `sendcount` elements per rank at the leader when `rc` is 0.
///
/// # Safety
/// `sendbuf` holds `sendcount` elements of `sendtype`.
unsafe fn local_gather(
    bc: &BridgeComm,
    local: &SimpleCommunicator,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    total: usize,
) -> Result<(c_int, LeaderRoom), isthmus_bridge::BridgeError> {
    let mut room = LeaderRoom::new(bc.inter.rank() == 0, total, sendtype)?;
    // SAFETY: the program's buffer and handles; the room has space for
    // `sendcount` elements of every local rank at the leader.
    let rc = unsafe {
        crate::native_step::gather(
            sendbuf,
            sendcount,
            sendtype,
            room.ptr(),
            sendcount,
            sendtype,
            0,
            local.as_raw(),
        )
    };
    Ok((rc, room))
}

/// `MPI_Gather` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Gather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn gather(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Gather";
    let fail = |e| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |local| {
        check_not_in_place(comm, CALL, &[sendbuf, recvbuf])?;
        match role_or_raise(bc, comm, root, CALL)? {
            Role::Idle => Ok(()),
            Role::Root => {
                let n = elements(recvcount)
                    .and_then(|n| times(n, bc.inter.remote_size()))
                    .map_err(fail)?;
                let max = datatype::capacity_bytes(n, recvtype).map_err(fail)?;
                let got = bc.inter.gather_recv(max).map_err(fail)?;
                // SAFETY: the root's buffer has room for `recvcount` elements per remote rank.
                unsafe { deliver(got, recvbuf, n, recvtype) }.map_err(fail)
            }
            Role::From(root) => {
                let total = elements(sendcount)
                    .and_then(|n| times(n, bc.inter.local_size()))
                    .map_err(fail)?;
                // SAFETY: MPI_Gather's contract.
                let (rc, mut room) =
                    unsafe { local_gather(bc, local, sendbuf, sendcount, sendtype, total) }
                        .map_err(fail)?;
                let mine = room.at_leader().map(|at| {
                    // SAFETY: the leader's room holds the group's data when `rc` is 0.
                    unsafe { made(rc, "MPI_Gather", at, total, sendtype) }
                });
                outcome(comm, CALL, rc, bc.inter.gather_send(local, root, mine))
            }
        }
    }))
}

/// `MPI_Allgather` on an Isthmus communicator: `recvbuf` gets
/// `recvcount` elements of every rank of the other group.
///
/// # Safety
/// As `MPI_Allgather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn allgather(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Allgather";
    let fail = |e| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |local| {
        check_not_in_place(comm, CALL, &[sendbuf, recvbuf])?;
        let total = elements(sendcount)
            .and_then(|n| times(n, bc.inter.local_size()))
            .map_err(fail)?;
        let n = elements(recvcount)
            .and_then(|n| times(n, bc.inter.remote_size()))
            .map_err(fail)?;
        let max = datatype::capacity_bytes(n, recvtype).map_err(fail)?;
        // SAFETY: MPI_Allgather's contract.
        let (rc, mut room) =
            unsafe { local_gather(bc, local, sendbuf, sendcount, sendtype, total) }
                .map_err(fail)?;
        let mine = room.at_leader().map(|at| {
            // SAFETY: the leader's room holds the group's data when `rc` is 0.
            unsafe { made(rc, "MPI_Gather", at, total, sendtype) }
        });
        let got = bc.inter.allgather_bytes(local, mine, max);
        outcome(comm, CALL, rc, Ok(()))?;
        let got = got.map_err(fail)?;
        // SAFETY: recvbuf has room for `recvcount` elements per remote rank.
        unsafe { deliver(got, recvbuf, n, recvtype) }.map_err(fail)
    }))
}

/// `MPI_Gatherv` on an Isthmus communicator: each rank of the other
/// group sends its block straight to the root, which decodes block j into
/// `recvcounts[j]` elements at `displs[j]`.
///
/// # Safety
/// As `MPI_Gatherv`: at the root the arrays have an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn gatherv(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Gatherv";
    let fail = |e| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |_| {
        check_not_in_place(comm, CALL, &[sendbuf, recvbuf])?;
        match role_or_raise(bc, comm, root, CALL)? {
            Role::Idle => Ok(()),
            Role::Root => {
                // SAFETY: an entry per remote rank (MPI_Gatherv's contract).
                let block =
                    |j: u32| unsafe { v_block(recvbuf, recvcounts, displs, recvtype, j as usize) };
                bc.inter
                    .gatherv_recv(
                        |j| block(j).and_then(|(_, n, dt)| datatype::capacity_bytes(n, dt)),
                        |j, bytes, st| {
                            let (at, n, dt) = block(j)?;
                            // SAFETY: the root's block j has room for its count.
                            unsafe { deliver((bytes, st), at as *mut c_void, n, dt) }
                        },
                    )
                    .map_err(fail)
            }
            Role::From(root) => {
                // SAFETY: sendbuf holds `sendcount` elements.
                let msg =
                    elements(sendcount).and_then(|n| unsafe { message(sendbuf, n, sendtype) });
                bc.inter.gatherv_send(root, msg).map_err(fail)
            }
        }
    }))
}

/// `MPI_Allgatherv` on an Isthmus communicator: `recvbuf` gets the block
/// of every rank j of the other group, `recvcounts[j]` elements at `displs[j]`.
///
/// # Safety
/// As `MPI_Allgatherv`: the arrays have an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn allgatherv(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Allgatherv";
    let fail = |e| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |local| {
        check_not_in_place(comm, CALL, &[sendbuf, recvbuf])?;
        // SAFETY: an entry per remote rank (MPI_Allgatherv's contract).
        let block = |j: usize| unsafe { v_block(recvbuf, recvcounts, displs, recvtype, j) };
        // SAFETY: sendbuf holds `sendcount` elements.
        let msg = elements(sendcount).and_then(|n| unsafe { message(sendbuf, n, sendtype) });
        let blocks = bc
            .inter
            .allgatherv_bytes(local, msg, |j| {
                block(j as usize).and_then(|(_, n, dt)| datatype::capacity_bytes(n, dt))
            })
            .map_err(fail)?;
        let mut first = Ok(());
        for (j, got) in blocks.into_iter().enumerate() {
            let r = block(j).and_then(|(at, n, dt)| {
                // SAFETY: block j has room for its count.
                unsafe { deliver(got, at as *mut c_void, n, dt) }
            });
            if first.is_ok() {
                first = r;
            }
        }
        first.map_err(fail)
    }))
}

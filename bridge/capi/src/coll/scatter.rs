//! `MPI_Scatter` on an Isthmus intercommunicator: the root's whole buffer
//! crosses in one message to the other group's leader, which scatters it
//! natively in its job (as bytes; each rank decodes its share into its own
//! datatype). `MPI_Scatterv` sends each remote rank its block straight.

use std::ffi::{c_int, c_void};

use super::common::{
    check_not_in_place, code, deliver, message, role_or_raise, v_block, with_local, Role,
};
use crate::collbuf::{elements, times};
use crate::datatype;
use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};
use crate::state::BridgeComm;

/// `MPI_Scatter` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Scatter`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn scatter(
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
    const CALL: &str = "MPI_Scatter";
    let fail = |e| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |local| {
        check_not_in_place(comm, CALL, &[sendbuf, recvbuf])?;
        match role_or_raise(bc, comm, root, CALL)? {
            Role::Idle => Ok(()),
            Role::Root => {
                let msg = elements(sendcount)
                    .and_then(|n| times(n, bc.inter.remote_size()))
                    // SAFETY: the root's buffer holds `sendcount` elements per remote rank.
                    .and_then(|n| unsafe { message(sendbuf, n, sendtype) });
                bc.inter.scatter_send(msg).map_err(fail)
            }
            Role::From(root) => {
                let n = elements(recvcount).map_err(fail)?;
                let max = datatype::capacity_bytes(n, recvtype)
                    .map(|m| m.saturating_mul(bc.inter.local_size() as usize))
                    .map_err(fail)?;
                let got = bc.inter.scatter_recv(local, root, max).map_err(fail)?;
                // SAFETY: recvbuf has room for `recvcount` elements.
                unsafe { deliver(got, recvbuf, n, recvtype) }.map_err(fail)
            }
        }
    }))
}

/// `MPI_Scatterv` on an Isthmus communicator: the root sends each rank of
/// the other group its block (`sendcounts[j]` elements at `displs[j]`)
/// straight.
///
/// # Safety
/// As `MPI_Scatterv`: at the root the arrays have an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn scatterv(
    bc: &BridgeComm,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Scatterv";
    let fail = |e| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |_| {
        check_not_in_place(comm, CALL, &[sendbuf, recvbuf])?;
        match role_or_raise(bc, comm, root, CALL)? {
            Role::Idle => Ok(()),
            Role::Root => bc
                .inter
                .scatterv_send(|j| {
                    // SAFETY: an entry per remote rank; block j holds its
                    // count (MPI_Scatterv's contract).
                    unsafe {
                        let (at, n, dt) =
                            v_block(sendbuf, sendcounts, displs, sendtype, j as usize)?;
                        message(at, n, dt)
                    }
                })
                .map_err(fail),
            Role::From(root) => {
                let n = elements(recvcount).map_err(fail)?;
                let max = datatype::capacity_bytes(n, recvtype).map_err(fail)?;
                let got = bc.inter.scatterv_recv(root, max).map_err(fail)?;
                // SAFETY: recvbuf has room for `recvcount` elements.
                unsafe { deliver(got, recvbuf, n, recvtype) }.map_err(fail)
            }
        }
    }))
}

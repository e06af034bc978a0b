//! `MPI_Scatter` on an Isthmus intercommunicator: the root's whole buffer
//! crosses in one message to the other group's leader, which scatters it
//! natively in its job (as bytes; each rank decodes its share into its own
//! datatype).

use std::ffi::{c_int, c_void};

use super::common::{
    check_not_in_place, code, deliver, elements, message, role_or_raise, times, with_local, Role,
};
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

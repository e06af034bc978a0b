//! MPI's collective calls on an Isthmus intercommunicator, with MPI's
//! intercommunicator semantics: `MPI_Barrier` (every rank of both groups
//! has entered), the rooted ones (`MPI_Bcast`, `MPI_Gather`, `MPI_Scatter`,
//! `MPI_Reduce`: `root` is `MPI_ROOT` at the root, `MPI_PROC_NULL` at the
//! rest of its group, and the root's rank in the remote group at every rank
//! of the other group) and the ones where each group gets the other
//! group's data (`allreduce`, `allgather`, `alltoall`, `reduce_scatter`:
//! one module each). The algorithms are the bridge's (`isthmus_bridge::coll`,
//! local–global–local); this module gives them the job's side as a native
//! communicator, does the native steps that need the program's datatypes
//! and operations (a local reduce or gather to the leader: the job's own
//! MPI applies every operation, user-defined ones included, so no
//! arithmetic crosses implementations), and moves buffers through the
//! datatype glue (any datatype, derived ones too, as point-to-point).
//! `MPI_IN_PLACE`, which MPI defines for intracommunicators only, is an
//! `MPI_ERR_BUFFER`. The C entry points are generated from
//! `mpi-functions.txt` (included at the end).
//!
//! The nonblocking forms of all of them (`nonblocking`: `MPI_Ibarrier`,
//! `MPI_Ibcast`, `MPI_Igather(v)`, …) run the same algorithms as schedules
//! advanced by every wait and test (`nbc`).
//!
//! The large-count (`_c`) forms of the ones with arrays (`large_count`) copy
//! their `MPI_Count`/`MPI_Aint` arrays as ints and call the same bodies.

mod alltoall;
mod common;
mod gather;
#[cfg(isthmus_large_count)]
mod large_count;
mod nonblocking;
mod reduce;
mod scatter;

use std::ffi::{c_int, c_void};

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::collbuf::elements;
use crate::datatype;
use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::state::BridgeComm;
use common::{code, deliver, message, role_or_raise, with_local, Role};

pub(crate) use alltoall::{alltoall, alltoallv, alltoallw};
pub(crate) use gather::{allgather, allgatherv, gather, gatherv};
/// What the persistent `_c` forms (`persist::large_count`) convert with.
#[cfg(isthmus_large_count)]
pub(crate) use large_count::{done, AllToAll, Ints, Side};
#[cfg(isthmus_large_count)]
pub(crate) use large_count::{
    MPI_Allgatherv_c, MPI_Alltoallv_c, MPI_Alltoallw_c, MPI_Gatherv_c, MPI_Iallgatherv_c,
    MPI_Ialltoallv_c, MPI_Ialltoallw_c, MPI_Igatherv_c, MPI_Ireduce_scatter_c, MPI_Iscatterv_c,
    MPI_Reduce_scatter_c, MPI_Scatterv_c,
};
pub(crate) use nonblocking::{
    iallgather, iallgatherv, iallreduce, ialltoall, ialltoallv, ialltoallw, ibarrier, ibcast,
    igather, igatherv, ireduce, ireduce_scatter, ireduce_scatter_block, iscatter, iscatterv,
};
pub(crate) use reduce::{allreduce, reduce, reduce_scatter, reduce_scatter_block};
pub(crate) use scatter::{scatter, scatterv};

/// `MPI_Barrier` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Barrier`.
pub(crate) unsafe fn barrier(bc: &BridgeComm, comm: MPI_Comm) -> c_int {
    code(with_local(bc, comm, |local| {
        bc.inter
            .barrier(local)
            .map_err(|e| errors::fail(comm, "MPI_Barrier", &e))
    }))
}

/// `MPI_Bcast` on an Isthmus communicator.
///
/// # Safety
/// As `MPI_Bcast`: at the root `buffer` holds `count` elements of
/// `datatype`, at a receiving rank it has room for them.
pub(crate) unsafe fn bcast(
    bc: &BridgeComm,
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Bcast";
    let fail = |e: BridgeError| errors::fail(comm, CALL, &e);
    code(with_local(bc, comm, |local| {
        match role_or_raise(bc, comm, root, CALL)? {
            Role::Idle => Ok(()),
            Role::Root => {
                // SAFETY: the root's buffer holds `count` elements (MPI_Bcast's contract).
                let msg = elements(count).and_then(|n| unsafe { message(buffer, n, datatype) });
                bc.inter.bcast_send(msg).map_err(fail)
            }
            Role::From(root) => {
                let n = elements(count).map_err(fail)?;
                // SAFETY: the receiving buffer has room for `count` elements.
                let raw = unsafe { datatype::raw_target(buffer, n, datatype) };
                if let Some(target) = raw.map_err(fail)? {
                    // A predefined type: straight into the program's buffer.
                    return target
                        .recv(|bytes| bc.inter.bcast_recv_into(local, root, bytes))
                        .map(drop)
                        .map_err(fail);
                }
                let max = datatype::capacity_bytes(n, datatype).map_err(fail)?;
                let got = bc.inter.bcast_recv_bytes(local, root, max).map_err(fail)?;
                // SAFETY: the receiving buffer has room for `count` elements.
                unsafe { deliver(got, buffer, n, datatype) }.map_err(fail)
            }
        }
    }))
}

include!(concat!(env!("OUT_DIR"), "/shells_coll.rs"));

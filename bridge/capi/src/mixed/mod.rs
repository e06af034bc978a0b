//! Mixed intercommunicators: `MPI_Intercomm_create` whose local or remote
//! group spans both jobs (a group of a merged communicator, e.g. half of a
//! world's `MPI_COMM_WORLD`). State in `state::MixedInter`; here are the
//! bodies of the calls `mpi-functions.txt` gives a `+mixed` line, which
//! build.rs dispatches to on one (any other call taking a communicator is
//! refused with `errors::refuse_mixed`).
//!
//! A remote rank lives in this job (its rank in the handle, a native
//! communicator of this job's processes of both groups) or in the other
//! (its rank in `inter`, between this job's and the other job's processes
//! of both groups): point-to-point is `merged::pt2pt`'s, over those places
//! (`state::Peers`), `MPI_ANY_SOURCE` included. The collectives
//! (`coll/`, MPICH's `coll/inter` algorithms) run over the same places on
//! a private context and the local group's own intracommunicator
//! (`local`: native, or a private merged one). `split`: `MPI_Comm_split`
//! and `MPI_Comm_create` of one.

mod coll;
mod comm;
mod create;
mod local;
mod nonblocking;
pub mod spawned;
mod split;

/// Persistent point-to-point (`crate::persist`) and `MPI_Isendrecv(_replace)`.
// MPI 4 calls: only where the mpi.h has them (MPICH 4, not Open MPI 4.1).
#[cfg_attr(not(isthmus_large_count), allow(unused_imports))]
pub(crate) use crate::isendrecv::{
    merged_isendrecv as isendrecv, merged_isendrecv_replace as isendrecv_replace,
};
/// Point-to-point: `merged::pt2pt`'s bodies over the remote group's places.
pub(crate) use crate::merged::{
    bsend, ibsend, improbe, iprobe, irecv, irsend, isend, issend, mprobe, probe, recv, rsend, send,
    sendrecv, sendrecv_replace, ssend,
};
// MPI 4 calls: only where the mpi.h has them (MPICH 4, not Open MPI 4.1).
#[cfg_attr(not(isthmus_large_count), allow(unused_imports))]
pub(crate) use crate::persist::{
    merged_bsend_init as bsend_init, merged_recv_init as recv_init,
    merged_rsend_init as rsend_init, merged_send_init as send_init,
    merged_ssend_init as ssend_init, mixed_allgather_init as allgather_init,
    mixed_allgatherv_init as allgatherv_init, mixed_allreduce_init as allreduce_init,
    mixed_alltoall_init as alltoall_init, mixed_alltoallv_init as alltoallv_init,
    mixed_alltoallw_init as alltoallw_init, mixed_barrier_init as barrier_init,
    mixed_bcast_init as bcast_init, mixed_gather_init as gather_init,
    mixed_gatherv_init as gatherv_init, mixed_reduce_init as reduce_init,
    mixed_reduce_scatter_block_init as reduce_scatter_block_init,
    mixed_reduce_scatter_init as reduce_scatter_init, mixed_scatter_init as scatter_init,
    mixed_scatterv_init as scatterv_init,
};
pub(crate) use coll::{
    allgather, allgatherv, allreduce, alltoall, alltoallv, alltoallw, barrier, bcast, gather,
    gatherv, reduce, reduce_scatter, reduce_scatter_block, scatter, scatterv,
};
#[cfg(isthmus_mpi4)]
pub(crate) use comm::comm_idup_with_info;
pub(crate) use comm::{
    comm_dup, comm_dup_with_info, comm_group, comm_idup, comm_rank, comm_remote_group,
    comm_remote_size, comm_size, comm_test_inter, forget, intercomm_merge,
};
pub(crate) use create::create;
pub(crate) use nonblocking::{
    iallgather, iallgatherv, iallreduce, ialltoall, ialltoallv, ialltoallw, ibarrier, ibcast,
    igather, igatherv, ireduce, ireduce_scatter, ireduce_scatter_block, iscatter, iscatterv,
};
pub(crate) use split::{comm_create, comm_split};

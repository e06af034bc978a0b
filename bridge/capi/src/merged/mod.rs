//! Merged communicators: `MPI_Intercomm_merge` of an Isthmus
//! intercommunicator, one intracommunicator whose ranks live in two jobs
//! (and two MPI implementations). Its state and rank order are
//! `state::MergedComm`'s; here are the bodies of the calls that
//! `mpi-functions.txt` gives a `+merged` line: the merge itself and the
//! communicator calls (`comm`), the collectives (`coll`, over `wire`'s
//! messages between the jobs and `crate::collbuf`'s local buffers; `vcoll`
//! for the v-variants; `ordered` for the reductions whose order matters on
//! a split's interleaved order) and point-to-point (`pt2pt`, with
//! `anysource`'s queue of `MPI_ANY_SOURCE` receives; `mprobe`, the matched probes), the nonblocking collectives (`nonblocking`, as schedules of
//! `crate::nbc`), the splits (`split`:
//! one job's native communicators, or new merged ones), the
//! communicators made from groups (`create`) and the Cartesian and graph
//! topologies (`topo`, distributed graphs too) with their neighbourhood
//! collectives (`neighbor`). build.rs generates the dispatch: on a
//! merged communicator a `+merged` call reaches its body here, any other
//! call taking a communicator is refused with the merged communicator's
//! own message (`errors::refuse_merged`).

mod anysource;
mod coll;
mod comm;
mod create;
mod mprobe;
mod neighbor;
mod nonblocking;
mod ordered;
mod pt2pt;
mod split;
mod topo;
mod vcoll;
mod wire;

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};

/// Persistent requests (`crate::persist`) and `MPI_Isendrecv(_replace)`.
// MPI 4 calls: only where the mpi.h has them (MPICH 4, not Open MPI 4.1).
#[cfg_attr(not(isthmus_large_count), allow(unused_imports))]
pub(crate) use crate::isendrecv::{
    merged_isendrecv as isendrecv, merged_isendrecv_replace as isendrecv_replace,
};
// MPI 4 calls: only where the mpi.h has them (MPICH 4, not Open MPI 4.1).
#[cfg_attr(not(isthmus_large_count), allow(unused_imports))]
pub(crate) use crate::persist::{
    merged_allgather_init as allgather_init, merged_allgatherv_init as allgatherv_init,
    merged_allreduce_init as allreduce_init, merged_alltoall_init as alltoall_init,
    merged_alltoallv_init as alltoallv_init, merged_alltoallw_init as alltoallw_init,
    merged_barrier_init as barrier_init, merged_bcast_init as bcast_init,
    merged_bsend_init as bsend_init, merged_exscan_init as exscan_init,
    merged_gather_init as gather_init, merged_gatherv_init as gatherv_init,
    merged_neighbor_allgather_init as neighbor_allgather_init,
    merged_neighbor_allgatherv_init as neighbor_allgatherv_init,
    merged_neighbor_alltoall_init as neighbor_alltoall_init,
    merged_neighbor_alltoallv_init as neighbor_alltoallv_init,
    merged_neighbor_alltoallw_init as neighbor_alltoallw_init, merged_recv_init as recv_init,
    merged_reduce_init as reduce_init,
    merged_reduce_scatter_block_init as reduce_scatter_block_init,
    merged_reduce_scatter_init as reduce_scatter_init, merged_rsend_init as rsend_init,
    merged_scan_init as scan_init, merged_scatter_init as scatter_init,
    merged_scatterv_init as scatterv_init, merged_send_init as send_init,
    merged_ssend_init as ssend_init,
};
pub(crate) use coll::{
    allgather, allreduce, alltoall, barrier, bcast, exscan, gather, reduce, reduce_scatter,
    reduce_scatter_block, scan, scatter,
};
#[cfg(isthmus_mpi4)]
pub(crate) use comm::comm_idup_with_info;
pub(crate) use comm::{
    adopt, comm_dup, comm_dup_with_info, comm_group, comm_idup, comm_rank, comm_size,
    comm_test_inter, contexts, dup_later, duplicate, forget, free_native, give_comm,
    intercomm_merge, native_side, private_dup, raise, register_from, same_group,
};
pub(crate) use create::{comm_create, comm_create_group, comm_split_type};
pub(crate) use mprobe::{improbe, mprobe};
pub(crate) use neighbor::{
    ineighbor_allgather, ineighbor_allgatherv, ineighbor_alltoall, ineighbor_alltoallv,
    ineighbor_alltoallw, neighbor_allgather, neighbor_allgatherv, neighbor_alltoall,
    neighbor_alltoallv, neighbor_alltoallw,
};
pub(crate) use nonblocking::hidden_side;
pub(crate) use nonblocking::{
    iallgather, iallgatherv, iallreduce, ialltoall, ialltoallv, ialltoallw, ibarrier, ibcast,
    iexscan, igather, igatherv, ireduce, ireduce_scatter, ireduce_scatter_block, iscan, iscatter,
    iscatterv,
};
pub(crate) use pt2pt::{
    bsend, ibsend, iprobe, irecv, irsend, isend, issend, probe, recv, rsend, send, sendrecv,
    sendrecv_replace, ssend,
};
pub(crate) use split::comm_split;
pub(crate) use topo::dist_graph::{
    dist_graph_create, dist_graph_create_adjacent, dist_graph_neighbors, dist_graph_neighbors_count,
};
/// C's `MPI_UNWEIGHTED`, for the Fortran bodies (none in the standard ABI's build).
#[cfg(not(isthmus_mpi_abi))]
pub(crate) use topo::unweighted;
pub(crate) use topo::{
    cart_coords, cart_create, cart_get, cart_map, cart_rank, cart_shift, cart_sub, cartdim_get,
    graph_create, graph_get, graph_map, graph_neighbors, graph_neighbors_count, graphdims_get,
    topo_test,
};
pub(crate) use vcoll::{allgatherv, alltoallv, alltoallw, gatherv, scatterv, to_self, Derived};
pub(crate) use wire::{mpi, Fail};

include!(concat!(env!("OUT_DIR"), "/shells_merged.rs"));

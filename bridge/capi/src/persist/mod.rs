//! Persistent requests on Isthmus communicators: the stored calls
//! (`table`), the persistent point-to-point calls (`pt2pt`) and
//! collectives (`coll`), and `MPI_Start`/`MPI_Startall` (`start`). The
//! interposed waits and tests (`crate::requests`) put each persistent
//! request's operation in its place.

use std::ffi::{c_int, c_void};

// MPI 4 calls: only where the mpi.h has them (MPICH 4, not Open MPI 4.1).
#[cfg_attr(not(isthmus_large_count), allow(unused_imports))]
use mpi::ffi;

use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};

mod coll;
#[cfg(isthmus_large_count)]
mod large_count;
mod pt2pt;
mod start;
pub(crate) mod table;

// MPI 4 calls: only where the mpi.h has them (MPICH 4, not Open MPI 4.1).
#[cfg_attr(not(isthmus_large_count), allow(unused_imports))]
pub(crate) use coll::{
    allgather_init, allgatherv_init, allreduce_init, alltoall_init, alltoallv_init, alltoallw_init,
    barrier_init, bcast_init, gather_init, gatherv_init, merged_allgather_init,
    merged_allgatherv_init, merged_allreduce_init, merged_alltoall_init, merged_alltoallv_init,
    merged_alltoallw_init, merged_barrier_init, merged_bcast_init, merged_exscan_init,
    merged_gather_init, merged_gatherv_init, merged_neighbor_allgather_init,
    merged_neighbor_allgatherv_init, merged_neighbor_alltoall_init, merged_neighbor_alltoallv_init,
    merged_neighbor_alltoallw_init, merged_reduce_init, merged_reduce_scatter_block_init,
    merged_reduce_scatter_init, merged_scan_init, merged_scatter_init, merged_scatterv_init,
    reduce_init, reduce_scatter_block_init, reduce_scatter_init, scatter_init, scatterv_init,
};
#[cfg_attr(not(isthmus_large_count), allow(unused_imports))]
pub(crate) use coll::{
    mixed_allgather_init, mixed_allgatherv_init, mixed_allreduce_init, mixed_alltoall_init,
    mixed_alltoallv_init, mixed_alltoallw_init, mixed_barrier_init, mixed_bcast_init,
    mixed_gather_init, mixed_gatherv_init, mixed_reduce_init, mixed_reduce_scatter_block_init,
    mixed_reduce_scatter_init, mixed_scatter_init, mixed_scatterv_init,
};
#[cfg(isthmus_large_count)]
pub use large_count::{
    MPI_Allgatherv_init_c, MPI_Alltoallv_init_c, MPI_Alltoallw_init_c, MPI_Gatherv_init_c,
    MPI_Reduce_scatter_init_c, MPI_Scatterv_init_c,
};
pub(crate) use pt2pt::{
    bsend_init, merged_bsend_init, merged_recv_init, merged_rsend_init, merged_send_init,
    merged_ssend_init, recv_init, rsend_init, send_init, ssend_init,
};
pub use start::{MPI_Start, MPI_Startall};

include!(concat!(env!("OUT_DIR"), "/shells_persist.rs"));

//! Merged communicators: `MPI_Intercomm_merge` of an Isthmus
//! intercommunicator, one intracommunicator whose ranks live in two jobs
//! (and two MPI implementations). Its state and rank order are
//! `state::MergedComm`'s; here are the bodies of the calls that
//! `mpi-functions.txt` gives a `+merged` line: the merge itself and the
//! communicator calls (`comm`), the collectives (`coll`, over `wire`'s
//! messages between the jobs and `crate::collbuf`'s local buffers; `vcoll`
//! for the v-variants; `ordered` for the reductions whose order matters on
//! a split's interleaved order) and point-to-point (`pt2pt`, with
//! `anysource`'s queue of `MPI_ANY_SOURCE` receives), the nonblocking collectives (`nonblocking`, as schedules of
//! `crate::nbc`), the splits (`split`:
//! one job's native communicators, or new merged ones) and the
//! communicators made from groups (`create`). build.rs generates the dispatch: on a
//! merged communicator a `+merged` call reaches its body here, any other
//! call taking a communicator is refused with the merged communicator's
//! own message (`errors::refuse_merged`).

mod anysource;
mod coll;
mod comm;
mod create;
mod nonblocking;
mod ordered;
mod pt2pt;
mod split;
mod vcoll;
mod wire;

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};

pub(crate) use coll::{
    allgather, allreduce, alltoall, barrier, bcast, exscan, gather, reduce, reduce_scatter,
    reduce_scatter_block, scan, scatter,
};
pub(crate) use comm::{
    adopt, comm_dup, comm_dup_with_info, comm_group, comm_idup, comm_rank, comm_size,
    comm_test_inter, contexts, duplicate, forget, free_native, give_comm, give_idup,
    intercomm_merge, native_side, private_dup, raise, register_from, same_group,
};
pub(crate) use create::{comm_create, comm_create_group, comm_split_type};
pub(crate) use nonblocking::{
    iallgather, iallreduce, ialltoall, ibarrier, ibcast, iexscan, igather, ireduce,
    ireduce_scatter, ireduce_scatter_block, iscan, iscatter,
};
pub(crate) use pt2pt::{
    bsend, ibsend, iprobe, irecv, irsend, isend, issend, probe, recv, rsend, send, sendrecv, ssend,
};
pub(crate) use split::comm_split;
pub(crate) use vcoll::{allgatherv, alltoallv, alltoallw, gatherv, scatterv};
pub(crate) use wire::{mpi, Fail};

include!(concat!(env!("OUT_DIR"), "/shells_merged.rs"));

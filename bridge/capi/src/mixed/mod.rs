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
//! (`local`: native, or a private merged one).

mod coll;
mod comm;
mod create;
mod local;

/// Point-to-point: `merged::pt2pt`'s bodies over the remote group's places.
pub(crate) use crate::merged::{
    bsend, ibsend, iprobe, irecv, irsend, isend, issend, probe, recv, rsend, send, sendrecv, ssend,
};
pub(crate) use coll::{allgather, allreduce, alltoall, barrier, bcast, gather, reduce, scatter};
pub(crate) use comm::{
    comm_dup, comm_dup_with_info, comm_group, comm_idup, comm_rank, comm_remote_group,
    comm_remote_size, comm_size, comm_test_inter, forget, intercomm_merge,
};
pub(crate) use create::create;

//! A mixed intercommunicator's blocking collectives, MPICH's `coll/inter`
//! algorithms over its collective context (`MixedInter::coll`: the remote
//! group's places on a private native duplicate and a derived bridge
//! context, which no user receive names) and its local group's own
//! intracommunicator (`super::local`): one file per shape — `rooted`
//! (Bcast, Reduce, Gather, Scatter: the root's group's leader, or the root,
//! talks to the other group's leader, which works locally), `leaders`
//! (Barrier, Allreduce, Allgather, Reduce_scatter(_block): local step, the two leaders swap, local
//! step), `pairwise` (Alltoall: MPICH's pairwise exchange), `vector` (the v and w
//! forms: every block straight to where it goes); `steps`, what they share.

mod leaders;
mod pairwise;
mod rooted;
pub(crate) mod steps;
pub(crate) mod vector;

pub(crate) use leaders::{allgather, allreduce, barrier, reduce_scatter, reduce_scatter_block};
pub(crate) use pairwise::alltoall;
pub(crate) use rooted::{bcast, gather, reduce, scatter};
pub(crate) use vector::{allgatherv, alltoallv, alltoallw, gatherv, scatterv};

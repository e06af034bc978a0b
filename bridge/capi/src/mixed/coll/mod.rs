//! A mixed intercommunicator's blocking collectives, MPICH's `coll/inter`
//! algorithms over its collective context (`MixedInter::coll`: the remote
//! group's places on a private native duplicate and a derived bridge
//! context, which no user receive names) and its local group's own
//! intracommunicator (`super::local`): one file per shape — `rooted`
//! (Bcast, Reduce, Gather, Scatter: the root's group's leader, or the root,
//! talks to the other group's leader, which works locally), `leaders`
//! (Barrier, Allreduce, Allgather: local step, the two leaders swap, local
//! step), `pairwise` (Alltoall: MPICH's pairwise exchange); `steps`, what they share.

mod leaders;
mod pairwise;
mod rooted;
mod steps;

pub(crate) use leaders::{allgather, allreduce, barrier};
pub(crate) use pairwise::alltoall;
pub(crate) use rooted::{bcast, gather, reduce, scatter};

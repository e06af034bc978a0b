//! The nonblocking collectives on a merged communicator (`MPI_I*`), as
//! schedules (`crate::nbc`) advanced by every interposed wait and test,
//! so that an initiation never blocks and a request polled with
//! `MPI_Test` alone completes. Each is the blocking one's local–global–
//! local algorithm (`super::coll`) one non-blocking step at a time: the
//! job's native steps are its own `PMPI_I*` on a private duplicate, the
//! bridge steps go between the two jobs' leaders (or a root and the other
//! job's leader) on the communicator's nonblocking-collective context,
//! tagged by the operation's sequence number, and a leader hands what it
//! received to its job with `crate::nbc::share`.
//!
//! One file per algorithm: [`barrier`], [`bcast`], [`allreduce`],
//! [`reduce`], [`reduce_scatter`] (and its block form), [`prefix`] (scan and
//! exscan), [`gather`], [`scatter`], [`allgather`], [`alltoall`] (the blocks between the jobs
//! directly from rank to rank, beside a native all-to-all), [`vector`] (the v/w forms, likewise), [`neighbor`] (the neighbourhood collectives: each block straight to its neighbour); and [`setup`], what they share (the start of a schedule,
//! the leaders' exchange, messages and the `low op high` combination).
//! The algorithms above assume each job's ranks contiguous in the merged
//! order (the merge's own, and a split's that keeps them so). On an order
//! that interleaves the jobs: the v-forms place every block by its merged
//! rank, so the plain gathers, scatters and all-to-alls run as them; a
//! commutative reduction, Ibarrier and Ibcast take any order; a
//! non-commutative reduction and the prefixes fold every rank's input in
//! merged-rank order at every rank ([`ordered`]).

mod allgather;
mod allreduce;
mod alltoall;
mod barrier;
mod bcast;
mod gather;
mod neighbor;
mod ordered;
mod prefix;
mod reduce;
mod reduce_scatter;
mod scatter;
mod setup;
mod vector;

pub(crate) use allgather::iallgather;
pub(crate) use allreduce::iallreduce;
pub(crate) use alltoall::ialltoall;
pub(crate) use barrier::ibarrier;
pub(crate) use bcast::ibcast;
pub(crate) use gather::igather;
pub(crate) use neighbor::ineighbor;
pub(crate) use prefix::{iexscan, iscan};
pub(crate) use reduce::ireduce;
pub(crate) use reduce_scatter::{ireduce_scatter, ireduce_scatter_block};
pub(crate) use scatter::iscatter;
pub(crate) use setup::hidden_side;
pub(crate) use vector::{iallgatherv, ialltoallv, ialltoallw, igatherv, iscatterv};

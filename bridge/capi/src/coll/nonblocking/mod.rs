//! The nonblocking collectives on an Isthmus intercommunicator (`MPI_I*`
//! of every collective `coll` has), with MPI's intercommunicator
//! semantics and the blocking ones' local–global–local algorithms, as
//! schedules (`nbc`): each native step is the job's own `PMPI_I*` on the
//! communicator's private duplicate for them, each bridge step a send or
//! receive tagged with the operation's sequence number, and the program's
//! request completes when the last step does. Argument errors (a bad
//! root, `MPI_IN_PLACE`, a NULL array) are raised by the initiation, as
//! the blocking calls raise them.
//!
//! One file per shape of schedule, as MPICH's `src/mpi/coll` keeps one per
//! algorithm:
//! - [`direct`]: no native step; each block crosses straight from the rank
//!   that has it to the rank that wants it (alltoall, v and w; gatherv and
//!   scatterv; and the root's part of every rooted operation);
//! - [`from_root`]: the root's message to the other group's leader, which
//!   hands it to its job (bcast, scatter);
//! - [`to_root`]: a native step to the leader whose result crosses to the
//!   remote root (reduce, gather);
//! - [`exchange`]: a native step to the leader, the leaders' exchange and
//!   the other group's result handed to every rank (barrier, allreduce,
//!   allgather, reduce_scatter and its block form);
//! - [`allgatherv`]: every rank's block to the other group's leader, which
//!   hands all of them to its job;
//!
//! and [`setup`], what they share: a call's checks and start, the
//! leader's room for a native step's result, totals and decoding.

mod allgatherv;
mod direct;
mod exchange;
mod from_root;
mod setup;
mod to_root;

pub(crate) use allgatherv::iallgatherv;
pub(crate) use direct::{ialltoall, ialltoallv, ialltoallw, igatherv, iscatterv};
pub(crate) use exchange::{
    iallgather, iallreduce, ibarrier, ireduce_scatter, ireduce_scatter_block,
};
pub(crate) use from_root::{ibcast, iscatter};
pub(crate) use to_root::{igather, ireduce};

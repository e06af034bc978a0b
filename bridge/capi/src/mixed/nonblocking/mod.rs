//! The nonblocking collectives on a mixed intercommunicator (`MPI_I*`), as
//! schedules (`crate::nbc`) advanced by every interposed wait and test:
//! the blocking ones' algorithms (`super::coll`, MPICH's `coll/inter`)
//! one non-blocking step at a time, on the communicator's nonblocking side
//! (`MixedInter::nbc`: the sequence numbers and turns, a bridge context of
//! their own) — [`rooted`] (Ibcast, Ireduce, Igather, Iscatter),
//! [`leaders`] (Ibarrier, Iallreduce, Iallgather, Ireduce_scatter(_block)),
//! [`vector`] (the v/w forms and Ialltoall); [`setup`], the parts a
//! schedule is made of and how they run.

mod leaders;
mod rooted;
mod setup;
mod vector;

pub(crate) use leaders::{
    iallgather, iallreduce, ibarrier, ireduce_scatter, ireduce_scatter_block,
};
pub(crate) use rooted::{ibcast, igather, ireduce, iscatter};
pub(crate) use vector::{iallgatherv, ialltoall, ialltoallv, ialltoallw, igatherv, iscatterv};

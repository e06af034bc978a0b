//! Intercommunicator allreduce as MPICH's
//! `allreduce_inter_reduce_exchange_bcast`: each group reduces its data
//! natively to its leader (done by the caller: the job's own MPI applies
//! the operation, user-defined ones included), the two leaders exchange
//! their results over the bridge, and each leader broadcasts the other
//! group's result natively in its job. Two bridge messages, whatever the
//! sizes of the groups; no arithmetic crosses implementations.

use mpi::topology::Communicator;

use super::common::{exchange_and_share, exchange_and_share_into, Message, Share, TAG_ALLREDUCE};
use crate::error::Result;
use crate::intercomm::InterComm;
use crate::matching::Status;

/// Every rank's side: the leader's local result (`reduced`, at local rank
/// 0 only) goes to the other group; every rank returns the other group's
/// result (at most `max_bytes`), to decode.
pub(super) fn allreduce<C: Communicator>(
    ic: &InterComm,
    local: &C,
    reduced: Option<Result<Message<'_>>>,
    max_bytes: usize,
) -> Result<(Vec<u8>, Status)> {
    exchange_and_share(
        ic,
        local,
        TAG_ALLREDUCE,
        reduced,
        max_bytes,
        Share::Whole,
        "allreduce",
    )
}

/// [`allreduce`] into `buf`, every rank's room for the other group's
/// result (the leader's `reduced` must lie elsewhere).
pub(super) fn allreduce_into<C: Communicator>(
    ic: &InterComm,
    local: &C,
    reduced: Option<Result<Message<'_>>>,
    buf: &mut [u8],
) -> Result<Status> {
    exchange_and_share_into(ic, local, TAG_ALLREDUCE, reduced, buf, "allreduce")
}

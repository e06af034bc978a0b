//! Intercommunicator reduce_scatter (and its block form) as MPICH's
//! `reduce_scatter_inter_remote_reduce_local_scatter`: each group reduces
//! its whole vector natively to its leader (done by the caller: the job's
//! own MPI applies the operation), the leaders exchange their results over
//! the bridge, and each leader scatters the other group's result natively
//! in its job (equal blocks, or the group's `recvcounts`). Two bridge
//! messages, whatever the sizes of the groups.

use mpi::topology::Communicator;

use super::common::{exchange_and_share, Message, Share, TAG_REDUCE_SCATTER};
use crate::error::Result;
use crate::intercomm::InterComm;
use crate::matching::Status;

/// Every rank's side: the leader's local result (`reduced`, at local rank
/// 0 only) goes to the other group; every rank returns its share of the
/// other group's result (`counts` elements per rank, or equal shares when
/// None; at most `max_bytes` in all), to decode.
pub(super) fn reduce_scatter<C: Communicator>(
    ic: &InterComm,
    local: &C,
    reduced: Option<Result<Message<'_>>>,
    counts: Option<&[u64]>,
    max_bytes: usize,
) -> Result<(Vec<u8>, Status)> {
    let share = counts.map_or(Share::Even, Share::Counts);
    exchange_and_share(
        ic,
        local,
        TAG_REDUCE_SCATTER,
        reduced,
        max_bytes,
        share,
        "reduce_scatter",
    )
}

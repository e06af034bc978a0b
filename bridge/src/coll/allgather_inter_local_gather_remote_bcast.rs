//! Intercommunicator allgather as MPICH's
//! `allgather_inter_local_gather_remote_bcast`: each group gathers its
//! data natively to its leader (done by the caller, with the program's own
//! datatypes), the leaders exchange the gathered data over the bridge, and
//! each leader broadcasts the other group's data natively in its job. Two
//! bridge messages, whatever the sizes of the groups.

use mpi::topology::Communicator;

use super::common::{exchange_and_share, Message, Share, TAG_ALLGATHER};
use crate::error::Result;
use crate::intercomm::InterComm;
use crate::matching::Status;

/// Every rank's side: the leader's gathered data (`gathered`, at local rank
/// 0 only) goes to the other group; every rank returns the other group's
/// (at most `max_bytes`), to decode.
pub(super) fn allgather<C: Communicator>(
    ic: &InterComm,
    local: &C,
    gathered: Option<Result<Message<'_>>>,
    max_bytes: usize,
) -> Result<(Vec<u8>, Status)> {
    exchange_and_share(
        ic,
        local,
        TAG_ALLGATHER,
        gathered,
        max_bytes,
        Share::Whole,
        "allgather",
    )
}

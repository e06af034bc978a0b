//! Intercommunicator reduce as MPICH's `reduce_inter_local_reduce_remote_send`:
//! the group that does not hold the root reduces its data natively to its
//! leader (done by the caller: the job's own MPI applies the operation,
//! user-defined ones included), and the leader's one message crosses the
//! bridge to the root. No arithmetic crosses implementations.

use mpi::topology::Communicator;

use super::common::{Message, TAG_REDUCE};
use super::gather_inter_local_gather_remote_send::{local_then_remote_send, root_recv};
use crate::error::Result;
use crate::intercomm::InterComm;
use crate::matching::Status;

/// The reducing group's side: the leader's result (`reduced`, at local
/// rank 0 only) to remote rank `root`; every rank returns the leader's outcome.
pub(super) fn reduce_send<C: Communicator>(
    ic: &InterComm,
    local: &C,
    root: u32,
    reduced: Option<Result<Message<'_>>>,
) -> Result<()> {
    local_then_remote_send(ic, local, root, TAG_REDUCE, reduced, "reduce")
}

/// The root's side: the remote group's result (at most `max_bytes`).
pub(super) fn reduce_recv(ic: &InterComm, max_bytes: usize) -> Result<(Vec<u8>, Status)> {
    root_recv(ic, TAG_REDUCE, max_bytes)
}

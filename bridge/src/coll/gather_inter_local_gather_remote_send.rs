//! Intercommunicator gather as MPICH's
//! `gather_inter_local_gather_remote_send`: the sending group gathers its
//! data natively to its leader (local rank 0; done by the caller, with the
//! program's own datatypes), whose one message crosses the bridge to the
//! root. One bridge message, whatever the sizes of the groups. Reduce is
//! the same shape (see `reduce_inter_local_reduce_remote_send`).

use mpi::topology::Communicator;

use super::common::{recv_checked, send_or_notice, share_outcome, Message};
use crate::error::{BridgeError, Result};
use crate::intercomm::InterComm;
use crate::matching::Status;

/// The sending group's side, once the leader holds the group's message
/// (`gathered`, at local rank 0 only; an error there sends the failure
/// notice): the leader sends it to remote rank `root` under `tag`, and
/// every rank returns the leader's outcome.
pub(super) fn local_then_remote_send<C: Communicator>(
    ic: &InterComm,
    local: &C,
    root: u32,
    tag: i32,
    gathered: Option<Result<Message<'_>>>,
    what: &str,
) -> Result<()> {
    let sent = match gathered {
        Some(m) => send_or_notice(ic, root, tag, m),
        None if ic.rank() == 0 => Err(BridgeError::InvalidArgument(format!(
            "{what}: the leader has no message to send"
        ))),
        None => Ok(()),
    };
    share_outcome(ic, local, sent, what)
}

/// The root's side: the remote leader's message (at most `max_bytes`).
pub(super) fn root_recv(ic: &InterComm, tag: i32, max_bytes: usize) -> Result<(Vec<u8>, Status)> {
    recv_checked(ic, 0, tag, max_bytes)
}

//! Intercommunicator scatter as MPICH's
//! `scatter_inter_remote_send_local_scatter`: the root sends all its data
//! in one bridge message to the other group's leader (local rank 0), which
//! scatters it natively in its job, an equal share each. The rest of the
//! root's group takes no part.

use mpi::topology::Communicator;

use super::common::{recv_checked, send_or_notice, share_received, Message, Share, TAG_SCATTER};
use crate::error::Result;
use crate::intercomm::InterComm;
use crate::matching::Status;

/// The root's side: its message (or the failure notice) to the remote leader.
pub(super) fn scatter_send(ic: &InterComm, msg: Result<Message<'_>>) -> Result<()> {
    send_or_notice(ic, 0, TAG_SCATTER, msg)
}

/// A receiving rank's side: its share of the message of remote root
/// `root` (at most `max_bytes` in all, at the leader).
pub(super) fn scatter_recv<C: Communicator>(
    ic: &InterComm,
    local: &C,
    root: u32,
    max_bytes: usize,
) -> Result<(Vec<u8>, Status)> {
    let got = (ic.rank() == 0).then(|| recv_checked(ic, root, TAG_SCATTER, max_bytes));
    share_received(local, root, got, max_bytes, Share::Even, "scatter")
}

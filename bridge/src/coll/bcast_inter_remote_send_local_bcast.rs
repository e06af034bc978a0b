//! Intercommunicator broadcast as MPICH's
//! `bcast_inter_remote_send_local_bcast`: the root sends its buffer over
//! the bridge to the leader (local rank 0) of the other group, which
//! broadcasts it natively in its job. The rest of the root's group takes
//! no part. One bridge message, whatever the sizes of the groups.
//!
//! The leader first broadcasts how it went (the element count received,
//! or a failure), so that a wrong count or a lost root is an error at
//! every rank of the receiving group, never a rank waiting forever.
//!
//! Two forms: typed (`bcast`, into a slice of an `Equivalence` type), and
//! untyped (`bcast_send_bytes`/`bcast_recv_bytes`: a message already
//! encoded by the caller, with its type signature, as libisthmus encodes
//! any MPI datatype; the receiving ranks check and decode it themselves).

use mpi::datatype::Equivalence;
use mpi::topology::Communicator;

use super::common::{
    recv_checked, recv_checked_into, send_or_notice, share_received, share_received_into,
    BcastRole, Message, Share, TAG_BCAST,
};
use crate::error::{BridgeError, Result};
use crate::intercomm::{recv_typed_on, send_typed_on, InterComm};
use crate::matching::{Source, Status, Tag};
use crate::native;

/// What the leader broadcasts when it could not receive the root's message.
const LEADER_FAILED: u64 = u64::MAX;

pub(super) fn bcast<C, T>(ic: &InterComm, local: &C, role: BcastRole, buf: &mut [T]) -> Result<()>
where
    C: Communicator,
    T: Equivalence + Send + Sync + 'static,
{
    let root = match role {
        BcastRole::Idle => return Ok(()),
        BcastRole::Root => return send_typed_on(ic.coll_channel(), 0, TAG_BCAST, buf),
        BcastRole::From { root } => root,
    };
    let mut arrived = 0u64;
    let mut result = Ok(());
    if ic.rank() == 0 {
        let r = recv_typed_on(
            ic.coll_channel(),
            Source::Rank(root),
            Tag::Value(TAG_BCAST),
            buf,
            None,
        );
        arrived = match &r {
            Ok(st) => st.count,
            Err(_) => LEADER_FAILED,
        };
        result = r.map(|_| ());
    }
    native::bcast(local, 0, &mut arrived)?;
    result?;
    if arrived == LEADER_FAILED {
        return Err(BridgeError::Protocol(format!(
            "bcast: this job's leader could not receive the message of remote root {root}"
        )));
    }
    if arrived != buf.len() as u64 {
        return Err(BridgeError::InvalidArgument(format!(
            "bcast: the root sent {arrived} elements, the receiving group passed buffers of {}",
            buf.len()
        )));
    }
    native::bcast(local, 0, buf)
}

/// The root's side of the untyped broadcast: its encoded message (or, if
/// encoding it failed, the failure notice) to the other group's leader.
pub(super) fn bcast_send(ic: &InterComm, msg: Result<Message<'_>>) -> Result<()> {
    send_or_notice(ic, 0, TAG_BCAST, msg)
}

/// A receiving rank's side of the untyped broadcast from remote rank
/// `root`: the leader receives the root's message (at most `max_bytes`)
/// and hands it whole to every rank of its job (see `share_received`).
pub(super) fn bcast_recv_bytes<C: Communicator>(
    ic: &InterComm,
    local: &C,
    root: u32,
    max_bytes: usize,
) -> Result<(Vec<u8>, Status)> {
    let got = (ic.rank() == 0).then(|| recv_checked(ic, root, TAG_BCAST, max_bytes));
    share_received(local, root, got, max_bytes, Share::Whole, "bcast")
}

/// [`bcast_recv_bytes`] into `buf`, every receiving rank's room for the
/// root's message.
pub(super) fn bcast_recv_into<C: Communicator>(
    ic: &InterComm,
    local: &C,
    root: u32,
    buf: &mut [u8],
) -> Result<Status> {
    let got = if ic.rank() == 0 {
        Some(recv_checked_into(ic, root, TAG_BCAST, buf))
    } else {
        None
    };
    share_received_into(local, root, got, buf, "bcast")
}

//! Intercommunicator broadcast as MPICH's
//! `bcast_inter_remote_send_local_bcast`: the root sends its buffer over
//! the bridge to the leader (local rank 0) of the other group, which
//! broadcasts it natively in its job. The rest of the root's group takes
//! no part. One bridge message, whatever the sizes of the groups.
//!
//! The leader first broadcasts how it went (the element count received,
//! or a failure), so that a wrong count or a lost root is an error at
//! every rank of the receiving group, never a rank waiting forever.

use mpi::collective::Root;
use mpi::datatype::Equivalence;
use mpi::topology::Communicator;

use super::common::{BcastRole, TAG_BCAST};
use crate::error::{BridgeError, Result};
use crate::intercomm::{recv_typed_on, send_typed_on, InterComm};
use crate::matching::{Source, Tag};

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
    let leader = local.process_at_rank(0);
    leader.broadcast_into(&mut arrived);
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
    leader.broadcast_into(buf);
    Ok(())
}

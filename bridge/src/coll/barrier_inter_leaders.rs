//! Intercommunicator barrier, local–global–local: a native barrier in each
//! job (everyone here has entered), the two leaders (local rank 0) trade
//! one empty message over the bridge (everyone there has entered too),
//! then each leader tells its job, by a native broadcast, that the barrier
//! is passed — or that the exchange failed, so that no rank waits for a
//! leader that will never say so. Two bridge messages in all, whatever
//! the sizes of the groups.

use mpi::topology::Communicator;

use super::common::TAG_BARRIER;
use crate::error::{BridgeError, Result};
use crate::intercomm::InterComm;
use crate::matching::{Source, Tag};
use crate::native;
use crate::wire::WireType;

pub(super) fn barrier<C: Communicator>(ic: &InterComm, local: &C) -> Result<()> {
    native::barrier(local)?;
    let mut failed = 0u8;
    let mut result = Ok(());
    if ic.rank() == 0 {
        result = leaders_exchange(ic);
        failed = u8::from(result.is_err());
    }
    native::bcast(local, 0, &mut failed)?;
    if failed != 0 && result.is_ok() {
        result = Err(BridgeError::Protocol(
            "barrier: this job's leader could not reach the other job's leader".into(),
        ));
    }
    result
}

/// One empty message each way between the leaders, on the collective channel.
fn leaders_exchange(ic: &InterComm) -> Result<()> {
    let ch = ic.coll_channel();
    let sig = u8::type_sig()?;
    let sent = ch.isend(0, TAG_BARRIER, &sig, 0, Vec::new().into())?;
    ch.recv_into(
        Source::Rank(0),
        Tag::Value(TAG_BARRIER),
        Some(sig.signature),
        &mut [],
        None,
    )?;
    sent.wait()
}

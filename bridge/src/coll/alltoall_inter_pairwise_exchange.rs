//! Intercommunicator alltoall (and its v and w forms) as MPICH's
//! `alltoall_inter_pairwise_exchange`: in step i each rank sends its block
//! for remote rank (rank + i) mod n and receives the block of remote rank
//! (rank - i) mod n, n the larger group's size — every block crosses the
//! bridge once, straight from its sender to its receiver, and no more
//! (personalized data: no leader would save a byte). The sends are started
//! ahead (the bridge's sends never wait for the receiver to post) and the
//! receives taken in the pairwise order.
//!
//! A block that fails at its sender crosses as a failure notice and a
//! receive that fails is reported once the exchange is over: every block
//! is still sent and received, so no rank waits forever and the next
//! collective finds no stale message.

use super::common::{isend_or_notice, recv_checked, Message, TAG_ALLTOALL};
use crate::error::Result;
use crate::intercomm::InterComm;
use crate::matching::Status;

/// The exchange: `block(j)` is this rank's message for remote rank j,
/// `capacity(j)` the most bytes the block of remote rank j may have, and
/// `deliver(j, bytes, status)` takes it. The first error is returned.
pub(super) fn alltoall<'a>(
    ic: &InterComm,
    mut block: impl FnMut(u32) -> Result<Message<'a>>,
    capacity: impl Fn(u32) -> Result<usize>,
    mut deliver: impl FnMut(u32, Vec<u8>, Status) -> Result<()>,
) -> Result<()> {
    let (rank, remote) = (ic.rank(), ic.remote_size());
    let n = ic.local_size().max(remote);
    let mut first = Ok(());
    let mut keep = |r: Result<()>| {
        if first.is_ok() {
            first = r;
        }
    };
    let mut sends = Vec::new();
    for i in 0..n {
        let dst = (rank + i) % n;
        if dst < remote {
            match isend_or_notice(ic, dst, TAG_ALLTOALL, block(dst)) {
                Ok(s) => sends.push(s),
                Err(e) => keep(Err(e)),
            }
        }
    }
    for i in 0..n {
        let src = (rank + n - i) % n;
        if src < remote {
            // Received even when this rank cannot take it, so that the
            // block does not linger for the next collective.
            let cap = capacity(src);
            let got = recv_checked(ic, src, TAG_ALLTOALL, *cap.as_ref().unwrap_or(&usize::MAX));
            keep(cap.and(got).and_then(|(bytes, st)| deliver(src, bytes, st)));
        }
    }
    for s in sends {
        keep(s.wait());
    }
    first
}

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

use super::common::{isend_or_notice, recv_checked, recv_checked_into, Message, TAG_ALLTOALL};
use crate::error::Result;
use crate::intercomm::InterComm;
use crate::matching::Status;

/// The receive of one remote rank's block, as the caller takes it: into
/// memory of its own (the program's buffer: on this host a large block
/// lent by its sender is read straight into it) or into a vector of ours.
/// A block the caller takes neither way is received and dropped, so that
/// it does not linger for the next collective.
pub struct BlockRecv<'c> {
    ic: &'c InterComm,
    source: u32,
    taken: bool,
}

impl BlockRecv<'_> {
    /// The remote rank whose block this is.
    pub fn source(&self) -> u32 {
        self.source
    }

    /// Receives the block into `buf` (the room for all of it).
    pub fn into_slice(&mut self, buf: &mut [u8]) -> Result<Status> {
        self.taken = true;
        recv_checked_into(self.ic, self.source, TAG_ALLTOALL, buf)
    }

    /// Receives the block (at most `max_bytes`) into a vector.
    pub fn into_vec(&mut self, max_bytes: usize) -> Result<(Vec<u8>, Status)> {
        self.taken = true;
        recv_checked(self.ic, self.source, TAG_ALLTOALL, max_bytes)
    }
}

/// The exchange: `block(j)` is this rank's message for remote rank j, and
/// `receive(j, r)` takes remote rank j's block through `r`. The first
/// error is returned.
pub(super) fn alltoall<'a>(
    ic: &InterComm,
    mut block: impl FnMut(u32) -> Result<Message<'a>>,
    mut receive: impl FnMut(u32, &mut BlockRecv<'_>) -> Result<()>,
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
            let mut r = BlockRecv {
                ic,
                source: src,
                taken: false,
            };
            keep(receive(src, &mut r));
            if !r.taken {
                // Received even when this rank cannot take it, so that the
                // block does not linger for the next collective.
                keep(r.into_vec(usize::MAX).map(drop));
            }
        }
    }
    for s in sends {
        keep(s.wait());
    }
    first
}

//! Intercommunicator gatherv and scatterv, linear as MPICH's
//! `gatherv_allcomm_linear` and `scatterv_allcomm_linear`: each rank of the
//! other group sends its block straight to the root (gatherv), or the root
//! sends each remote rank its block (scatterv). The blocks differ in size
//! and place, so each crosses once, straight to where it goes: no leader
//! would save a byte.
//!
//! Every block is sent and received even when one fails (a failed block
//! crosses as a failure notice), so no rank waits forever and the next
//! collective finds no stale message; the first error is returned.

use super::common::{isend_or_notice, recv_checked, send_or_notice, Message};
use crate::error::Result;
use crate::intercomm::InterComm;
use crate::matching::Status;

/// A sending rank's side of gatherv: its block to remote rank `root`.
pub(super) fn send_to_root(
    ic: &InterComm,
    root: u32,
    tag: i32,
    msg: Result<Message<'_>>,
) -> Result<()> {
    send_or_notice(ic, root, tag, msg)
}

/// The root's side of gatherv: the block of every remote rank j (at most
/// `capacity(j)` bytes) to `deliver(j, bytes, status)`.
pub(super) fn recv_from_each(
    ic: &InterComm,
    tag: i32,
    capacity: impl Fn(u32) -> Result<usize>,
    mut deliver: impl FnMut(u32, Vec<u8>, Status) -> Result<()>,
) -> Result<()> {
    let mut first = Ok(());
    for j in 0..ic.remote_size() {
        let cap = capacity(j);
        let got = recv_checked(ic, j, tag, *cap.as_ref().unwrap_or(&usize::MAX));
        let r = cap.and(got).and_then(|(bytes, st)| deliver(j, bytes, st));
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// The root's side of scatterv: `block(j)` to every remote rank j.
pub(super) fn send_to_each<'a>(
    ic: &InterComm,
    tag: i32,
    mut block: impl FnMut(u32) -> Result<Message<'a>>,
) -> Result<()> {
    let mut first = Ok(());
    let mut sends = Vec::new();
    for j in 0..ic.remote_size() {
        match isend_or_notice(ic, j, tag, block(j)) {
            Ok(s) => sends.push(s),
            Err(e) if first.is_ok() => first = Err(e),
            Err(_) => {}
        }
    }
    for s in sends {
        let r = s.wait();
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// A receiving rank's side of scatterv: its block from remote rank `root`.
pub(super) fn recv_from_root(
    ic: &InterComm,
    root: u32,
    tag: i32,
    max_bytes: usize,
) -> Result<(Vec<u8>, Status)> {
    recv_checked(ic, root, tag, max_bytes)
}

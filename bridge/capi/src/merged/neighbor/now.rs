//! The blocking neighbourhood collectives' exchange: every block straight
//! to its neighbour, natively (`PMPI_Isend`/`PMPI_Irecv` on the
//! collectives' private native side) to a neighbour in this job, over the
//! bridge's collective context (a tag of its own per direction) to one in
//! the other. Every receive is posted before any send, and the native ones
//! complete before the bridge's are waited for, so no rank waits on a
//! bridge message while a neighbour of its own job waits on it natively.

use std::ffi::c_int;

use isthmus_bridge::RecvRequest;
use mpi::ffi;

use super::blocks::{place, start_native, Block, Way};
use crate::collbuf::elements;
use crate::lent_send::LentSend;
use crate::merged::wire::{complete, mpi, post, send_lent, Fail, TAG_NEIGHBOR};
use crate::mpi_glue::proc_null;
use crate::state::{MergedComm, Place};

/// Native requests in flight, cancelled and freed if the exchange fails
/// before it waited for them (the error is the caller's to raise).
struct NativeRequests(Vec<ffi::MPI_Request>);

impl NativeRequests {
    fn wait(mut self) -> Result<(), Fail> {
        let mut reqs = std::mem::take(&mut self.0);
        let n = c_int::try_from(reqs.len()).map_err(|_| Fail::Mpi(ffi::MPI_ERR_COUNT as c_int))?;
        // SAFETY: live requests of ours; statuses ignored.
        mpi(unsafe { ffi::PMPI_Waitall(n, reqs.as_mut_ptr(), crate::mpi_glue::statuses_ignore()) })
    }
}

impl Drop for NativeRequests {
    fn drop(&mut self) {
        for r in &mut self.0 {
            // SAFETY: live requests of ours, each cancelled and freed once.
            unsafe {
                ffi::PMPI_Cancel(r);
                ffi::PMPI_Request_free(r);
            }
        }
    }
}

/// Starts `b`'s native message on the collectives' private native side
/// (see `start_native`).
///
/// # Safety
/// As `start_native`'s.
unsafe fn start(
    b: &Block,
    way: Way,
    local: u32,
    mc: &MergedComm,
) -> Result<ffi::MPI_Request, Fail> {
    // SAFETY: null, written by MPI.
    let mut r = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: the caller's contract; `r` is ours.
    mpi(unsafe { start_native(b, way, local, mc.native, &mut r) })?;
    Ok(r)
}

/// Receives `recvs` and sends `sends`, each from or to its neighbour.
///
/// # Safety
/// Every block addresses its `count` elements of its type, readable for a
/// send and writable for a receive, until this returns.
pub(super) unsafe fn exchange(
    mc: &MergedComm,
    recvs: &[Block],
    sends: &[Block],
) -> Result<(), Fail> {
    let mut native = NativeRequests(Vec::new());
    let mut bridged: Vec<(RecvRequest, &Block)> = Vec::new();
    for b in recvs.iter().filter(|b| b.peer != proc_null()) {
        match place(mc, b.peer)? {
            Place::Local(l) => {
                // SAFETY: the block is writable until the wait (this
                // function's contract).
                native.0.push(unsafe { start(b, Way::In, l, mc) }?);
            }
            Place::Remote(r) => {
                let req = post(&mc.coll, r, TAG_NEIGHBOR + b.tag, elements(b.count)?, b.dt)?;
                bridged.push((req, b));
            }
        }
    }
    let mut lent: Vec<LentSend> = Vec::new();
    for b in sends.iter().filter(|b| b.peer != proc_null()) {
        match place(mc, b.peer)? {
            Place::Local(l) => {
                // SAFETY: the block is readable and unchanged until the
                // wait (this function's contract).
                native.0.push(unsafe { start(b, Way::Out, l, mc) }?);
            }
            // SAFETY: as above; the guard waits for the send before the
            // block may go.
            Place::Remote(r) => lent.push(unsafe {
                send_lent(
                    &mc.coll,
                    r,
                    TAG_NEIGHBOR + b.tag,
                    b.buf,
                    elements(b.count)?,
                    b.dt,
                )
            }?),
        }
    }
    native.wait()?;
    for (req, b) in bridged {
        // SAFETY: the block is writable (this function's contract).
        unsafe { complete(req, b.buf, elements(b.count)?, b.dt) }?;
    }
    for s in lent {
        s.wait()?;
    }
    Ok(())
}

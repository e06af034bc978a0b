//! The nonblocking neighbourhood collectives (`MPI_Ineighbor_*`) on a
//! merged communicator: the blocks `merged::neighbor` lays out, moved by a
//! schedule on the communicator's nonblocking side (`MergedComm::nbc`).
//! The bridge's sends start and its receives are posted at once; in the
//! operation's turn each block for a neighbour of this job is a
//! `PMPI_Isend`/`PMPI_Irecv` on the side's native duplicate (the earlier
//! operations' issued first, so that those of two operations pair in
//! order); the request completes when all have, each bridge block decoded
//! into its place. The bridge messages of one operation between two
//! processes carry one tag (the operation's sequence number) and match in
//! the order they were posted, so both ends post them by the neighbour's
//! tag first: on a grid, the order in which its two directions pair.

use std::ffi::c_int;
use std::sync::Arc;

use super::setup::{message, settle, start, Call};
use crate::collbuf::elements;
use crate::datatype;
use crate::lent_send::LentSend;
use crate::merged::neighbor::blocks::{place, start_native, Block, Way};
use crate::mpi_glue::{proc_null, MPI_Comm, MPI_Request};
use crate::nbc::{Fail, Next, Op, Stage, Wait};
use crate::state::{BridgeComm, MergedComm, Place};

/// Starts the exchange of `recvs` and `sends` behind the program's
/// `request` (`name`'s; an error at the start is raised on `comm`).
///
/// # Safety
/// Every block addresses its `count` elements of its type, readable for a
/// send and writable for a receive, until the request completes (MPI's
/// rule for a nonblocking collective's buffers).
pub(crate) unsafe fn ineighbor(
    mc: &MergedComm,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    name: &'static str,
    recvs: Vec<Block>,
    sends: Vec<Block>,
) -> c_int {
    let call = Call {
        comm,
        request,
        name,
    };
    // SAFETY: this function's contract.
    unsafe { start(mc, call, |op, bc| plan(mc, op, bc, recvs, sends)) }
}

/// The schedule: the bridge's messages now, the native ones in the
/// operation's turn, then every block in place.
fn plan(
    mc: &MergedComm,
    op: &mut Op,
    bc: &Arc<BridgeComm>,
    mut recvs: Vec<Block>,
    mut sends: Vec<Block>,
) -> Result<Stage, Fail> {
    let seq = op.seq();
    // Stable: a neighbour's blocks of one tag keep their order.
    recvs.sort_by_key(|b| b.tag);
    sends.sort_by_key(|b| b.tag);
    let mut natives = Vec::new();
    let mut waits = Vec::with_capacity(recvs.len() + sends.len());
    let mut first_err = None;
    for b in sends.into_iter().filter(|b| b.peer != proc_null()) {
        match place(mc, b.peer)? {
            Place::Local(l) => natives.push((Way::Out, l, b)),
            Place::Remote(r) => {
                // SAFETY: the block is the program's, unchanged until the
                // request completes (MPI's contract), which the guard's
                // wait comes before.
                let sent = unsafe {
                    let msg = message(b.buf, b.count, b.dt);
                    bc.inter.nbc_isend_lent(r, seq, msg)
                };
                match sent {
                    Ok(s) => waits.push(Wait::Lent(LentSend::new(s))),
                    // Every other message still goes and every receive is
                    // posted, so that no neighbour waits forever.
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
    }
    let mut into = Vec::new();
    for b in recvs.into_iter().filter(|b| b.peer != proc_null()) {
        match place(mc, b.peer)? {
            Place::Local(l) => natives.push((Way::In, l, b)),
            Place::Remote(r) => {
                let n = elements(b.count)?;
                let cap = datatype::capacity_bytes(n, b.dt)?;
                waits.push(Wait::Recv(bc.inter.nbc_irecv(r, seq, cap)?));
                into.push((r, b.buf, n, b.dt));
            }
        }
    }
    let bc = Arc::clone(bc);
    Ok(Stage::native(vec![], move |cx, _| {
        for (way, l, b) in natives {
            // SAFETY: the block is the program's, writable for a receive
            // and unchanged for a send, until the request completes.
            let req = cx.issue(|c, q| unsafe { start_native(&b, way, l, c, q) })?;
            waits.push(Wait::Native(req));
        }
        cx.natives_done();
        // SAFETY: the blocks are the program's until the request completes.
        let last = unsafe { settle(bc, first_err, into, Box::new(())) };
        Ok(Next::Stage(Stage::after(waits, last)))
    }))
}

//! `MPI_Iallgatherv`, as the blocking one (MPICH's
//! `allgatherv_inter_remote_gather_local_bcast`): every rank sends its
//! block to the other group's leader, which receives one block from each
//! remote rank and hands them all to its job natively (`share_blocks`);
//! every rank decodes each block into its own place.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::setup::{start, Call};
use crate::coll::common::{deliver, message, v_block};
use crate::collbuf::elements;
use crate::datatype;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{share_blocks, Fail, Op, Stage, Wait};
use crate::state::BridgeComm;

/// `MPI_Iallgatherv` on an Isthmus communicator: `recvbuf` gets the
/// block of every rank j of the other group, `recvcounts[j]` elements at
/// `displs[j]`.
///
/// # Safety
/// As `MPI_Iallgatherv`: the arrays have an entry per remote rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iallgatherv(
    bc: &Arc<BridgeComm>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Iallgatherv");
    let remote = bc.inter.remote_size();
    let plan = |op: &mut Op| {
        let seq = op.seq();
        let blocks = (0..remote)
            // SAFETY: an entry per remote rank, read here, at the
            // initiation (MPI_Iallgatherv's contract).
            .map(|j| unsafe { v_block(recvbuf, recvcounts, displs, recvtype, j as usize) })
            .collect::<Result<Vec<_>, _>>()?;
        let mut waits = Vec::with_capacity(1 + remote as usize);
        let leader = bc.inter.rank() == 0;
        if leader {
            for (j, (_, n, dt)) in (0..remote).zip(&blocks) {
                let cap = datatype::capacity_bytes(*n, *dt)?;
                waits.push(Wait::Recv(bc.inter.nbc_irecv(j, seq, cap)?));
            }
        }
        // Sent (a block that could not be made as the failure notice)
        // whatever comes of it, so that the remote leader never waits.
        let mine = elements(sendcount).and_then(|n| {
            // SAFETY: sendbuf holds `sendcount` elements (MPI_Iallgatherv's contract).
            unsafe { message(sendbuf, n, sendtype) }
        });
        let mut own = Ok(());
        match bc.inter.nbc_isend(0, seq, mine) {
            Ok(s) => waits.push(Wait::Send(s)),
            Err(e) => own = Err(e),
        }
        let bc = Arc::clone(bc);
        Ok(Stage::native(waits, move |cx, mut a| {
            let own = own.and_then(|()| a.sent());
            let got = leader.then(|| {
                (0..remote)
                    .map(|j| bc.inter.nbc_received(j, a.received()))
                    .collect::<Result<Vec<_>, _>>()
            });
            share_blocks(cx, got, remote as usize, "allgatherv", move |got| {
                own?;
                let mut first = Ok(());
                for ((at, n, dt), got) in blocks.into_iter().zip(got) {
                    // SAFETY: block j of recvbuf has room for its count
                    // and is the program's until completion.
                    let put = unsafe { deliver(got, at.cast_mut(), n, dt) };
                    if first.is_ok() {
                        first = put;
                    }
                }
                first.map_err(Fail::from)
            })
        }))
    };
    // SAFETY: the program's request; its buffers stay valid until the
    // request completes (MPI_Iallgatherv's contract).
    unsafe { start(bc, call, &[sendbuf, recvbuf], plan) }
}

//! `MPI_Ibarrier`: a native barrier in each job, one empty message each
//! way between the leaders, and the leader's outcome broadcast in its job.

use std::ffi::c_int;
use std::sync::Arc;

use isthmus_bridge::{BridgeError, CollMessage, TypeSig, WireFormat};
use mpi::ffi;

use super::{start, Call};
use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Request};
use crate::nbc::{share_outcome, Fail, Next, Stage, Wait};
use crate::state::BridgeComm;

/// An empty message (the barrier's).
fn empty<'a>() -> CollMessage<'a> {
    CollMessage {
        sig: TypeSig {
            signature: 0,
            format: WireFormat::native(),
            elem_size: 0,
        },
        count: 0,
        bytes: Vec::new().into(),
    }
}

/// `MPI_Ibarrier` on an Isthmus communicator: a native barrier in each
/// job, one empty message each way between the leaders, and the leader's
/// outcome broadcast in its job.
///
/// # Safety
/// As `MPI_Ibarrier`.
pub(crate) unsafe fn ibarrier(
    bc: &Arc<BridgeComm>,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call::new(comm, request, "MPI_Ibarrier");
    // SAFETY: the program's request (checked by `start`); the schedule
    // uses no buffer of the program's.
    unsafe { start(bc, call, &[], |op| barrier(op.seq(), bc)) }
}

/// Every rank's part of the barrier numbered `seq`.
fn barrier(seq: u64, bc: &Arc<BridgeComm>) -> Result<Stage, BridgeError> {
    let recv = if bc.inter.rank() == 0 {
        Some(bc.inter.nbc_irecv(0, seq, 0)?)
    } else {
        None
    };
    let bc = Arc::clone(bc);
    Ok(Stage::native(vec![], move |cx, _| {
        // SAFETY: the job's native communicator and a request of ours.
        let barrier = cx.issue(|c, r| unsafe { ffi::PMPI_Ibarrier(c, r) })?;
        Ok(Next::Stage(Stage::native(
            vec![Wait::Native(barrier)],
            move |cx, a| {
                let rc = a.native_rc();
                let Some(recv) = recv else {
                    return share_outcome(cx, None, rc, "barrier");
                };
                let mine = if rc == 0 {
                    Ok(empty())
                } else {
                    Err(BridgeError::Protocol(format!(
                        "barrier: this job's own MPI_Ibarrier failed: {}",
                        errors::error_string(rc)
                    )))
                };
                let sent = match bc.inter.nbc_isend(0, seq, mine) {
                    Ok(s) => s,
                    Err(e) => return share_outcome(cx, Some(Err(e.into())), 0, "barrier"),
                };
                Ok(Next::Stage(Stage::native(
                    vec![Wait::Send(sent), Wait::Recv(recv)],
                    move |cx, mut a| {
                        let got = a
                            .sent()
                            .and_then(|()| bc.inter.nbc_received(0, a.received()));
                        share_outcome(cx, Some(got.map(drop).map_err(Fail::from)), 0, "barrier")
                    },
                )))
            },
        )))
    }))
}

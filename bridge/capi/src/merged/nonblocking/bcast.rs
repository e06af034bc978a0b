//! `MPI_Ibcast` on a merged communicator: a native broadcast in the root's
//! job, the root's message to the other job's leader, which hands it to
//! its job.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::setup::{decode, message, mpi, start, Call};
use crate::collbuf::{elements, int};
use crate::datatype;
use crate::merged::wire::root_place;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{share, Fail, Next, Share, Stage, Wait};
use crate::state::{MergedComm, Place};

/// `MPI_Ibcast` on a merged communicator.
///
/// # Safety
/// As `MPI_Ibcast`: the buffer stays the program's until the request
/// completes.
pub(crate) unsafe fn ibcast(
    mc: &MergedComm,
    buffer: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ibcast",
    };
    let place = root_place(mc, root);
    // SAFETY: MPI_Ibcast's contract: the root's buffer holds `count`
    // elements, the others' have room for them.
    unsafe {
        start(mc, call, |op, bc| {
            let n = elements(count)?;
            match place.map_err(Fail::from)? {
                Place::Local(r) => {
                    let lr = int(r as usize)?;
                    // The root sends to the other job's leader at once.
                    let sent = if bc.inter.rank() == r {
                        let msg = message(buffer, count, dt);
                        vec![Wait::Send(bc.inter.nbc_isend(0, op.seq(), msg)?)]
                    } else {
                        vec![]
                    };
                    Ok(Stage::native(vec![], move |cx, _| {
                        let req = cx.issue(|c, r| ffi::PMPI_Ibcast(buffer, count, dt, lr, c, r))?;
                        let mut waits = sent;
                        waits.push(Wait::Native(req));
                        Ok(Next::Stage(Stage::after(waits, |_, mut a| {
                            mpi(a.native_rc())?;
                            a.sent()?;
                            Ok(Next::Done)
                        })))
                    }))
                }
                Place::Remote(r) => {
                    let max = datatype::capacity_bytes(n, dt)?;
                    let leader = bc.inter.rank() == 0;
                    let waits = if leader {
                        vec![Wait::Recv(bc.inter.nbc_irecv(r, op.seq(), max)?)]
                    } else {
                        vec![]
                    };
                    let bc = std::sync::Arc::clone(bc);
                    Ok(Stage::native(waits, move |cx, mut a| {
                        let got = leader.then(|| bc.inter.nbc_received(r, a.received()));
                        share(cx, r, got, max, Share::Whole, "bcast", move |b, s| {
                            decode(&(b, s), buffer, n, dt)
                        })
                    }))
                }
            }
        })
    }
}

//! `MPI_Ireduce` on a merged communicator: each job reduces natively (the
//! root's job to the root, the other to its leader), the other job's
//! leader sends its partial result to the root, which combines the two as
//! `low op high`.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::ordered::{self, Fold, Keep};
use super::setup::{combine, decode, mpi, start, to_remote_root, Call, ToLeader};
use crate::collbuf::{elements, input, int, Extents, LeaderRoom, Scratch};
use crate::datatype;
use crate::merged::wire::root_place;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{Fail, Next, Stage, Wait};
use crate::state::{MergedComm, Place};
use crate::unsigned_ops::native_op;

/// `MPI_Ireduce` on a merged communicator.
///
/// # Safety
/// As `MPI_Ireduce`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ireduce(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ireduce",
    };
    let place = root_place(mc, root);
    let (low, native) = (mc.low, mc.native);
    let nop = native_op(op, dt);
    // SAFETY: MPI_Ireduce's contract.
    unsafe {
        start(mc, call, |sched, bc| {
            let n = elements(count)?;
            let me = bc.inter.rank();
            if ordered::needed(mc, op, dt)? {
                // Every rank folds; the root keeps it.
                let at_root = matches!(place, Ok(Place::Local(r)) if r == me);
                let keep = at_root.then(|| Keep::all(recvbuf, count));
                let input = input(sendbuf, recvbuf);
                // SAFETY: the program's buffers, valid until completion.
                return ordered::fold_in_order(
                    sched,
                    bc,
                    mc,
                    input,
                    count,
                    dt,
                    op,
                    Fold::All,
                    keep,
                );
            }
            let seq = sched.seq();
            match place.map_err(Fail::from)? {
                Place::Remote(r) => {
                    // This job's result at its leader, then to the root.
                    let room = LeaderRoom::new(me == 0, n, dt)?;
                    let native: ToLeader = Box::new(move |c, at, q| {
                        // SAFETY: the program's send buffer; the room holds
                        // `count` elements at the leader.
                        ffi::PMPI_Ireduce(sendbuf, at, count, dt, nop, 0, c, q)
                    });
                    to_remote_root(sched, bc, room, (count, dt), native, r, "reduce")
                }
                Place::Local(r) if r != me => {
                    let lr = int(r as usize)?;
                    Ok(Stage::native(vec![], move |cx, _| {
                        let req = cx.issue(|c, q| {
                            ffi::PMPI_Ireduce(sendbuf, recvbuf, count, dt, nop, lr, c, q)
                        })?;
                        Ok(Next::Stage(Stage::after(
                            vec![Wait::Native(req)],
                            |_, a| {
                                mpi(a.native_rc())?;
                                Ok(Next::Done)
                            },
                        )))
                    }))
                }
                Place::Local(r) => {
                    // The root: this job's result in recvbuf, the other's
                    // from its leader, combined.
                    let lr = int(r as usize)?;
                    let max = datatype::capacity_bytes(n, dt)?;
                    let recv = bc.inter.nbc_irecv(0, seq, max)?;
                    let mut theirs = Scratch::new(n, &Extents::of(dt)?)?;
                    let bc = std::sync::Arc::clone(bc);
                    Ok(Stage::native(vec![], move |cx, _| {
                        let req = cx.issue(|c, q| {
                            ffi::PMPI_Ireduce(sendbuf, recvbuf, count, dt, nop, lr, c, q)
                        })?;
                        Ok(Next::Stage(Stage::after(
                            vec![Wait::Native(req), Wait::Recv(recv)],
                            move |_, mut a| {
                                let got = bc.inter.nbc_received(0, a.received());
                                mpi(a.native_rc())?;
                                let t = theirs.ptr();
                                decode(&got?, t, n, dt)?;
                                combine(low, recvbuf, t, count, dt, op, native)?;
                                Ok(Next::Done)
                            },
                        )))
                    }))
                }
            }
        })
    }
}

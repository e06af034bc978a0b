//! `MPI_Iscan` and `MPI_Iexscan` on a merged communicator: each job's
//! native prefix, and the first job's total, sent by its last rank to the
//! second job's leader, which hands it to its job, where every rank puts
//! it before its own prefix (`total op prefix`, the merge's order). On an
//! order that does not keep each job's ranks together, [`super::ordered`].

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use mpi::ffi;

use super::ordered::{self, Fold, Keep};
use super::setup::{combine, decode, message, mpi, start, Call};
use crate::collbuf::{elements, input, Extents, Scratch};
use crate::datatype;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::{share, Fail, Next, Share, Stage, Wait};
use crate::state::MergedComm;
use crate::unsigned_ops::native_op;

/// Which prefix.
#[derive(Clone, Copy)]
enum Kind {
    Inclusive,
    Exclusive,
}

/// A prefix reduction's arguments.
#[derive(Clone, Copy)]
struct Prefix {
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
}

impl Prefix {
    /// The job's native prefix step.
    fn issue(&self, kind: Kind, c: MPI_Comm, q: *mut MPI_Request) -> c_int {
        let nop = native_op(self.op, self.dt);
        let (s, r, n, dt) = (self.sendbuf, self.recvbuf, self.count, self.dt);
        // SAFETY: the program's buffers and handles, valid until completion.
        unsafe {
            match kind {
                Kind::Inclusive => ffi::PMPI_Iscan(s, r, n, dt, nop, c, q),
                Kind::Exclusive => ffi::PMPI_Iexscan(s, r, n, dt, nop, c, q),
            }
        }
    }
}

/// The schedule of either prefix.
///
/// # Safety
/// As `MPI_Iscan`.
unsafe fn prefix(mc: &MergedComm, call: Call, kind: Kind, p: Prefix) -> c_int {
    let (low, native) = (mc.low, mc.native);
    let remote = mc.order.remote_ranks().len() as u32;
    // SAFETY: this function's contract.
    unsafe {
        start(mc, call, move |op, bc| {
            if !mc.order.contiguous_jobs() {
                // Each job's native prefix would be no run of MPI's order.
                let keep = Some(Keep::all(p.recvbuf, p.count));
                let fold = match kind {
                    Kind::Inclusive => Fold::Inclusive,
                    Kind::Exclusive => Fold::Exclusive,
                };
                let input = input(p.sendbuf, p.recvbuf);
                // SAFETY: the program's buffers, valid until completion.
                return ordered::fold_in_order(op, bc, mc, input, p.count, p.dt, p.op, fold, keep);
            }
            let n = elements(p.count)?;
            let e = Extents::of(p.dt)?;
            let (me, size, seq) = (bc.inter.rank(), bc.inter.local_size(), op.seq());
            let bc = Arc::clone(bc);
            if low {
                if me + 1 != size {
                    return Ok(Stage::native(vec![], move |cx, _| {
                        let req = cx.issue(|c, q| p.issue(kind, c, q))?;
                        Ok(Next::Stage(Stage::after(
                            vec![Wait::Native(req)],
                            |_, a| {
                                mpi(a.native_rc())?;
                                Ok(Next::Done)
                            },
                        )))
                    }));
                }
                // The last rank: its input kept before the native step
                // (which may write over it in place), for the job's total.
                let mut own = Scratch::new(n, &e)?;
                if let Kind::Exclusive = kind {
                    // SAFETY: the input holds `count` elements; so has the scratch.
                    crate::merged::wire::copy(
                        native,
                        input(p.sendbuf, p.recvbuf),
                        own.ptr(),
                        p.count,
                        p.dt,
                    )
                    .map_err(Fail::from)?;
                }
                return Ok(Stage::native(vec![], move |cx, _| {
                    let req = cx.issue(|c, q| p.issue(kind, c, q))?;
                    Ok(Next::Stage(Stage::after(
                        vec![Wait::Native(req)],
                        move |_, a| {
                            let rc = a.native_rc();
                            let total = match kind {
                                Kind::Inclusive => p.recvbuf,
                                Kind::Exclusive if size == 1 => own.ptr(),
                                Kind::Exclusive => {
                                    let o = own.ptr();
                                    mpi(rc).and_then(|()| {
                                        // SAFETY: both hold `count` elements:
                                        // total = prefix op own input.
                                        mpi(crate::local_reduce::reduce_local(
                                            p.recvbuf,
                                            o,
                                            p.count,
                                            p.dt,
                                            native_op(p.op, p.dt),
                                        ))
                                    })?;
                                    o
                                }
                            };
                            let msg = if rc == 0 {
                                // SAFETY: `total` holds `count` elements, kept until sent.
                                message(total, p.count, p.dt)
                            } else {
                                Err(isthmus_bridge::BridgeError::Protocol(
                                    "this job's own prefix reduction failed".into(),
                                ))
                            };
                            let sent = bc.inter.nbc_isend(0, seq, msg)?;
                            Ok(Next::Stage(Stage::after(
                                vec![Wait::Send(sent)],
                                move |_, mut a| {
                                    a.sent()?;
                                    drop(own);
                                    Ok(Next::Done)
                                },
                            )))
                        },
                    )))
                }));
            }
            // The second job: its prefix, then the first job's total before it.
            let src = remote.saturating_sub(1);
            let max = datatype::capacity_bytes(n, p.dt)?;
            let recv = if me == 0 {
                Some(bc.inter.nbc_irecv(src, seq, max)?)
            } else {
                None
            };
            let mut theirs = Scratch::new(n, &e)?;
            Ok(Stage::native(vec![], move |cx, _| {
                let req = cx.issue(|c, q| p.issue(kind, c, q))?;
                let mut waits = vec![Wait::Native(req)];
                let leader = recv.is_some();
                waits.extend(recv.map(Wait::Recv));
                Ok(Next::Stage(Stage::native(waits, move |cx, mut a| {
                    let rc = a.native_rc();
                    let got = leader.then(|| bc.inter.nbc_received(src, a.received()));
                    share(cx, src, got, max, Share::Whole, "prefix", move |b, s| {
                        mpi(rc)?;
                        if let (Kind::Exclusive, 0) = (kind, me) {
                            // The first rank of the second job: the total alone.
                            return decode(&(b, s), p.recvbuf, n, p.dt);
                        }
                        let t = theirs.ptr();
                        decode(&(b, s), t, n, p.dt)?;
                        // The total is the first group's: `total op prefix`.
                        combine(false, p.recvbuf, t, p.count, p.dt, p.op, native)
                    })
                })))
            }))
        })
    }
}

/// `MPI_Iscan` on a merged communicator (`MPI_IN_PLACE` too).
///
/// # Safety
/// As `MPI_Iscan`: the buffers stay the program's until the request
/// completes.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iscan(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Iscan",
    };
    let p = Prefix {
        sendbuf,
        recvbuf,
        count,
        dt,
        op,
    };
    // SAFETY: forwarded.
    unsafe { prefix(mc, call, Kind::Inclusive, p) }
}

/// `MPI_Iexscan` on a merged communicator (`MPI_IN_PLACE` too; rank 0's
/// receive buffer is left as it was, as MPI leaves it undefined).
///
/// # Safety
/// As `MPI_Iexscan`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iexscan(
    mc: &MergedComm,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Iexscan",
    };
    let p = Prefix {
        sendbuf,
        recvbuf,
        count,
        dt,
        op,
    };
    // SAFETY: forwarded.
    unsafe { prefix(mc, call, Kind::Exclusive, p) }
}

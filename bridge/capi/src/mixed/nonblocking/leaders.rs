//! The nonblocking collectives every rank of both groups gets a result
//! of, as the blocking ones (`mixed::coll::leaders`): a local step to the
//! leader, the two leaders swap, a local step from the leader.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use mpi::ffi;

use super::setup::{room, start, Call, Local, Part, Plan};
use crate::collbuf::{elements, times};
use crate::mixed::coll::steps::int;
use crate::mixed::coll::vector::not_in_place;
use crate::mpi_glue::{byte, MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::Fail;
use crate::state::MixedInter;

/// The leaders' swap (the leader's part only): `mine` out, `theirs` in.
fn swap(
    mx: &MixedInter,
    mine: (*mut c_void, c_int, MPI_Datatype),
    theirs: (*mut c_void, c_int, MPI_Datatype),
) -> Option<Part> {
    (mx.rank == 0).then(|| {
        Part::Talk(
            vec![(0, mine.0, mine.1, mine.2)],
            vec![(0, theirs.0, theirs.1, theirs.2)],
        )
    })
}

/// `MPI_Ibarrier` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Ibarrier`.
pub(crate) unsafe fn ibarrier(
    mx: &Arc<MixedInter>,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ibarrier",
    };
    let plan = || {
        let none = std::ptr::null_mut();
        let mut parts = vec![Part::Local(Local::Barrier)];
        parts.extend(swap(mx, (none, 0, byte()), (none, 0, byte())));
        parts.push(Part::Local(Local::Barrier));
        Ok(Plan::of(parts))
    };
    // SAFETY: MPI_Ibarrier's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Iallreduce` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Iallreduce`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iallreduce(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Iallreduce",
    };
    let plan = || {
        let mut room = room(mx, elements(n)?, dt)?;
        let at = room.ptr();
        let mut parts = vec![Part::Local(Local::Reduce(sendbuf, at, n, dt, op))];
        parts.extend(swap(mx, (at, n, dt), (recvbuf, n, dt)));
        parts.push(Part::Local(Local::Bcast(recvbuf, n, dt)));
        Ok(Plan::keeping(parts, Box::new(room)))
    };
    // SAFETY: MPI_Iallreduce's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Iallgather` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Iallgather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iallgather(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Iallgather",
    };
    let plan = || {
        let mine = times(elements(sendcount)?, mx.local_size)?;
        let theirs = int(times(elements(recvcount)?, mx.peers.size())?)?;
        let mut room = room(mx, mine, sendtype)?;
        let at = room.ptr();
        let mut parts = vec![Part::Local(Local::Gather(
            (sendbuf, sendcount, sendtype),
            (at, sendcount, sendtype),
        ))];
        parts.extend(swap(
            mx,
            (at, int(mine)?, sendtype),
            (recvbuf, theirs, recvtype),
        ));
        parts.push(Part::Local(Local::Bcast(recvbuf, theirs, recvtype)));
        Ok(Plan::keeping(parts, Box::new(room)))
    };
    // SAFETY: MPI_Iallgather's contract.
    unsafe { start(mx, call, plan) }
}

/// The local reduction of `total` elements to the leader and the
/// leaders' swap, then `last` (the scatter of the other group's result,
/// at `theirs`, in the group).
fn reduce_swap(
    mx: &MixedInter,
    sendbuf: *const c_void,
    total: usize,
    (dt, op): (MPI_Datatype, ffi::MPI_Op),
    last: impl FnOnce(*mut c_void) -> Local,
    keep: Box<dyn std::any::Any>,
) -> Result<Plan, Fail> {
    let n = int(total)?;
    let (mut mine, mut theirs) = (room(mx, total, dt)?, room(mx, total, dt)?);
    let (m, t) = (mine.ptr(), theirs.ptr());
    let mut parts = vec![Part::Local(Local::Reduce(sendbuf, m, n, dt, op))];
    parts.extend(swap(mx, (m, n, dt), (t, n, dt)));
    parts.push(Part::Local(last(t)));
    Ok(Plan::keeping(parts, Box::new((mine, theirs, keep))))
}

/// `MPI_Ireduce_scatter` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Ireduce_scatter`: `recvcounts` has an entry per local rank.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ireduce_scatter(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ireduce_scatter",
    };
    let plan = || {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        // SAFETY: an entry per local rank (MPI's contract).
        let counts = unsafe { crate::collbuf::ints(recvcounts, mx.local_size as usize) }?.to_vec();
        let mut displs = Vec::with_capacity(counts.len());
        let mut total = 0usize;
        for &c in &counts {
            displs.push(int(total)?);
            total = total
                .checked_add(elements(c)?)
                .ok_or(Fail::Mpi(ffi::MPI_ERR_COUNT as c_int))?;
        }
        let me = counts.get(mx.rank as usize).copied().unwrap_or(0);
        let (cp, dp) = (counts.as_ptr(), displs.as_ptr());
        let last =
            move |t: *mut c_void| Local::Scatterv((t.cast_const(), cp, dp, dt), (recvbuf, me, dt));
        reduce_swap(
            mx,
            sendbuf,
            total,
            (dt, op),
            last,
            Box::new((counts, displs)),
        )
    };
    // SAFETY: MPI_Ireduce_scatter's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Ireduce_scatter_block` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Ireduce_scatter_block`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ireduce_scatter_block(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ireduce_scatter_block",
    };
    let plan = || {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        let total = times(elements(recvcount)?, mx.local_size)?;
        let last = move |t: *mut c_void| {
            Local::Scatter((t.cast_const(), recvcount, dt), (recvbuf, recvcount, dt))
        };
        reduce_swap(mx, sendbuf, total, (dt, op), last, Box::new(()))
    };
    // SAFETY: MPI_Ireduce_scatter_block's contract.
    unsafe { start(mx, call, plan) }
}

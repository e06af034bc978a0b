//! The collectives every rank of both groups gets a result of, through
//! the two leaders (local rank 0 of each group; MPICH's
//! `barrier_inter_bcast`, `allreduce_inter_reduce_exchange_bcast`,
//! `allgather_inter_local_gather_remote_bcast`): a local step to the
//! leader, the leaders swap, a local step from the leader.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::collbuf::{elements, times, Scratch};
use crate::merged::Fail;
use crate::mixed::coll::steps::{code, extents, int, sendrecv};
use crate::mixed::coll::vector::not_in_place;
use crate::mixed::local;
use crate::mpi_glue::{byte, MPI_Comm, MPI_Datatype};
use crate::state::MixedInter;

/// `MPI_Barrier` on a mixed intercommunicator: every rank of each group
/// has entered once the leaders swapped, which the second local barrier
/// tells the rest.
///
/// # Safety
/// As `MPI_Barrier`.
pub(crate) unsafe fn barrier(mx: &MixedInter, comm: MPI_Comm) -> c_int {
    let run = || -> Result<(), Fail> {
        local::barrier(&mx.local)?;
        if mx.rank == 0 {
            let none = std::ptr::null_mut::<c_void>();
            // SAFETY: no data either way.
            unsafe { sendrecv(mx, (none, 0, byte(), 0), (none, 0, byte(), 0)) }?;
        }
        local::barrier(&mx.local)
    };
    code(comm, "MPI_Barrier", run())
}

/// `MPI_Allreduce` on a mixed intercommunicator: each group's reduction at
/// its leader, swapped, and broadcast in the other group.
///
/// # Safety
/// As `MPI_Allreduce`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn allreduce(
    mx: &MixedInter,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        let mut room = Scratch::new(elements(n)?, &extents(dt)?)?;
        // SAFETY: the program's input; our scratch of `n` elements.
        unsafe { local::reduce(&mx.local, sendbuf, room.ptr(), n, dt, op, 0) }?;
        if mx.rank == 0 {
            // SAFETY: ours and the program's buffers of `n` elements.
            unsafe { sendrecv(mx, (room.ptr(), n, dt, 0), (recvbuf, n, dt, 0)) }?;
        }
        // SAFETY: the program's buffer.
        unsafe { local::bcast(&mx.local, recvbuf, n, dt, 0) }
    };
    code(comm, "MPI_Allreduce", run())
}

/// `MPI_Allgather` on a mixed intercommunicator: each group gathered at
/// its leader, swapped, and broadcast in the other group.
///
/// # Safety
/// As `MPI_Allgather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn allgather(
    mx: &MixedInter,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        let leader = mx.rank == 0;
        let mine = times(elements(sendcount)?, mx.local_size)?;
        let theirs = int(times(elements(recvcount)?, mx.peers.size())?)?;
        let mut room = Scratch::new(if leader { mine } else { 0 }, &extents(sendtype)?)?;
        // SAFETY: the program's block; our scratch of a block per local
        // rank at the leader.
        unsafe {
            local::gather(
                &mx.local,
                sendbuf,
                sendcount,
                sendtype,
                room.ptr(),
                sendcount,
                sendtype,
                0,
            )
        }?;
        if leader {
            let mine = int(mine)?;
            // SAFETY: ours, and the program's buffer of a block per remote rank.
            unsafe {
                sendrecv(
                    mx,
                    (room.ptr(), mine, sendtype, 0),
                    (recvbuf, theirs, recvtype, 0),
                )
            }?;
        }
        // SAFETY: as above.
        unsafe { local::bcast(&mx.local, recvbuf, theirs, recvtype, 0) }
    };
    code(comm, "MPI_Allgather", run())
}

/// The local reduction of `total` elements to the leader, swapped with the
/// other group's: the other group's reduction at the leader (in `room`).
///
/// # Safety
/// `sendbuf` holds `total` elements of `dt`.
unsafe fn reduce_swap(
    mx: &MixedInter,
    sendbuf: *const c_void,
    total: usize,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
) -> Result<Scratch, Fail> {
    let e = extents(dt)?;
    let leader = mx.rank == 0;
    let n = int(total)?;
    let mut mine = Scratch::new(if leader { total } else { 0 }, &e)?;
    let mut theirs = Scratch::new(if leader { total } else { 0 }, &e)?;
    // SAFETY: the program's input; our scratch of `total` elements at the leader.
    unsafe { local::reduce(&mx.local, sendbuf, mine.ptr(), n, dt, op, 0) }?;
    if leader {
        // SAFETY: our scratch buffers of `total` elements.
        unsafe { sendrecv(mx, (mine.ptr(), n, dt, 0), (theirs.ptr(), n, dt, 0)) }?;
    }
    Ok(theirs)
}

/// `MPI_Reduce_scatter` on a mixed intercommunicator: each group's
/// reduction of the whole vector at its leader, swapped, and scattered in
/// the other group by its `recvcounts` (MPICH's
/// `reduce_scatter_inter_remote_reduce_local_scatter`, the two
/// reductions side by side).
///
/// # Safety
/// As `MPI_Reduce_scatter`: `recvcounts` has an entry per local rank.
pub(crate) unsafe fn reduce_scatter(
    mx: &MixedInter,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        // SAFETY: an entry per local rank (MPI's contract).
        let counts = unsafe { crate::collbuf::ints(recvcounts, mx.local_size as usize) }?;
        let mut displs = Vec::with_capacity(counts.len());
        let mut total = 0usize;
        for &c in counts {
            displs.push(int(total)?);
            total = total
                .checked_add(elements(c)?)
                .ok_or(Fail::Mpi(ffi::MPI_ERR_COUNT as c_int))?;
        }
        let me = counts.get(mx.rank as usize).copied().unwrap_or(0);
        // SAFETY: the program's vector of the counts' sum.
        let mut theirs = unsafe { reduce_swap(mx, sendbuf, total, dt, op) }?;
        // SAFETY: the other group's reduction at the leader; the program's block.
        unsafe {
            local::scatterv(
                &mx.local,
                theirs.ptr(),
                counts.as_ptr(),
                displs.as_ptr(),
                dt,
                recvbuf,
                me,
                dt,
                0,
            )
        }
    };
    code(comm, "MPI_Reduce_scatter", run())
}

/// `MPI_Reduce_scatter_block` on a mixed intercommunicator: as
/// `MPI_Reduce_scatter` with `recvcount` elements per local rank.
///
/// # Safety
/// As `MPI_Reduce_scatter_block`.
pub(crate) unsafe fn reduce_scatter_block(
    mx: &MixedInter,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        let total = times(elements(recvcount)?, mx.local_size)?;
        // SAFETY: the program's vector of a block per local rank.
        let mut theirs = unsafe { reduce_swap(mx, sendbuf, total, dt, op) }?;
        // SAFETY: the other group's reduction at the leader; the program's block.
        unsafe {
            local::scatter(
                &mx.local,
                theirs.ptr(),
                recvcount,
                dt,
                recvbuf,
                recvcount,
                dt,
                0,
            )
        }
    };
    code(comm, "MPI_Reduce_scatter_block", run())
}

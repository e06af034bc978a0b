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

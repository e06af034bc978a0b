//! Rooted collectives on a mixed intercommunicator (MPICH's
//! `bcast_inter_remote_send_local_bcast`, `reduce_inter_local_reduce_remote_send`,
//! `gather_inter_local_gather_remote_send`, `scatter_inter_remote_send_local_scatter`):
//! the root and the other group's leader (local rank 0) exchange one
//! message, the leader's group does the rest among itself.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::collbuf::{elements, times, Scratch};
use crate::merged::Fail;
use crate::mixed::coll::steps::{code, extents, int, recv, role, send, Role};
use crate::mixed::local;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};
use crate::state::MixedInter;

/// `MPI_Bcast` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Bcast`.
pub(crate) unsafe fn bcast(
    mx: &MixedInter,
    buf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        match role(mx, root)? {
            Role::Idle => Ok(()),
            // SAFETY: the program's buffer of `n` elements.
            Role::Root => unsafe { send(mx, buf, n, dt, 0) },
            Role::From(r) => {
                if mx.rank == 0 {
                    // SAFETY: as above.
                    unsafe { recv(mx, buf, n, dt, r) }?;
                }
                // SAFETY: as above.
                unsafe { local::bcast(&mx.local, buf, n, dt, 0) }
            }
        }
    };
    code(comm, "MPI_Bcast", run())
}

/// `MPI_Reduce` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Reduce`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn reduce(
    mx: &MixedInter,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        match role(mx, root)? {
            Role::Idle => Ok(()),
            // SAFETY: the program's buffer of `n` elements.
            Role::Root => unsafe { recv(mx, recvbuf, n, dt, 0) },
            Role::From(r) => {
                let mut room = Scratch::new(elements(n)?, &extents(dt)?)?;
                // SAFETY: the program's input; our scratch of `n` elements.
                unsafe { local::reduce(&mx.local, sendbuf, room.ptr(), n, dt, op, 0) }?;
                if mx.rank == 0 {
                    // SAFETY: as above.
                    unsafe { send(mx, room.ptr(), n, dt, r) }?;
                }
                Ok(())
            }
        }
    };
    code(comm, "MPI_Reduce", run())
}

/// `MPI_Gather` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Gather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn gather(
    mx: &MixedInter,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        match role(mx, root)? {
            Role::Idle => Ok(()),
            Role::Root => {
                let all = int(times(elements(recvcount)?, mx.peers.size())?)?;
                // SAFETY: the root's buffer of a block per remote rank.
                unsafe { recv(mx, recvbuf, all, recvtype, 0) }
            }
            Role::From(r) => {
                let all = times(elements(sendcount)?, mx.local_size)?;
                let leader = mx.rank == 0;
                let mut room = Scratch::new(if leader { all } else { 0 }, &extents(sendtype)?)?;
                // SAFETY: the program's block; our scratch of a block per
                // local rank at the leader.
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
                    // SAFETY: as above.
                    unsafe { send(mx, room.ptr(), int(all)?, sendtype, r) }?;
                }
                Ok(())
            }
        }
    };
    code(comm, "MPI_Gather", run())
}

/// `MPI_Scatter` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Scatter`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn scatter(
    mx: &MixedInter,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        match role(mx, root)? {
            Role::Idle => Ok(()),
            Role::Root => {
                let all = int(times(elements(sendcount)?, mx.peers.size())?)?;
                // SAFETY: the root's buffer of a block per remote rank.
                unsafe { send(mx, sendbuf, all, sendtype, 0) }
            }
            Role::From(r) => {
                let all = times(elements(recvcount)?, mx.local_size)?;
                let leader = mx.rank == 0;
                let mut room = Scratch::new(if leader { all } else { 0 }, &extents(recvtype)?)?;
                if leader {
                    // SAFETY: our scratch of a block per local rank.
                    unsafe { recv(mx, room.ptr(), int(all)?, recvtype, r) }?;
                }
                // SAFETY: our scratch at the leader; the program's block.
                unsafe {
                    local::scatter(
                        &mx.local,
                        room.ptr(),
                        recvcount,
                        recvtype,
                        recvbuf,
                        recvcount,
                        recvtype,
                        0,
                    )
                }
            }
        }
    };
    code(comm, "MPI_Scatter", run())
}

//! The rooted nonblocking collectives on a mixed intercommunicator, as the
//! blocking ones (`mixed::coll::rooted`): the root and the other group's
//! leader exchange one message, the leader's group does the rest among
//! itself.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use mpi::ffi;

use super::setup::{room, start, Call, Local, Part, Plan};
use crate::collbuf::{elements, times};
use crate::mixed::coll::steps::{int, role, Role};
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::state::MixedInter;

fn remote(r: c_int) -> u32 {
    u32::try_from(r).unwrap_or(u32::MAX)
}

/// `MPI_Ibcast` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Ibcast`.
pub(crate) unsafe fn ibcast(
    mx: &Arc<MixedInter>,
    buf: *mut c_void,
    n: c_int,
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
    let plan = || {
        Ok(Plan::of(match role(mx, root)? {
            Role::Idle => vec![],
            Role::Root => vec![Part::Talk(vec![(0, buf, n, dt)], vec![])],
            Role::From(r) => {
                let mut parts = Vec::new();
                if mx.rank == 0 {
                    parts.push(Part::Talk(vec![], vec![(remote(r), buf, n, dt)]));
                }
                parts.push(Part::Local(Local::Bcast(buf, n, dt)));
                parts
            }
        }))
    };
    // SAFETY: MPI_Ibcast's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Ireduce` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Ireduce`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ireduce(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
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
    let plan = || {
        Ok(match role(mx, root)? {
            Role::Idle => Plan::of(vec![]),
            Role::Root => Plan::of(vec![Part::Talk(vec![], vec![(0, recvbuf, n, dt)])]),
            Role::From(r) => {
                let mut room = room(mx, elements(n)?, dt)?;
                let at = room.ptr();
                let mut parts = vec![Part::Local(Local::Reduce(sendbuf, at, n, dt, op))];
                if mx.rank == 0 {
                    parts.push(Part::Talk(vec![(remote(r), at, n, dt)], vec![]));
                }
                Plan::keeping(parts, Box::new(room))
            }
        })
    };
    // SAFETY: MPI_Ireduce's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Igather` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Igather`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn igather(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Igather",
    };
    let plan = || {
        Ok(match role(mx, root)? {
            Role::Idle => Plan::of(vec![]),
            Role::Root => {
                let all = int(times(elements(recvcount)?, mx.peers.size())?)?;
                Plan::of(vec![Part::Talk(vec![], vec![(0, recvbuf, all, recvtype)])])
            }
            Role::From(r) => {
                let all = times(elements(sendcount)?, mx.local_size)?;
                let mut room = room(mx, all, sendtype)?;
                let at = room.ptr();
                let mut parts = vec![Part::Local(Local::Gather(
                    (sendbuf, sendcount, sendtype),
                    (at, sendcount, sendtype),
                ))];
                if mx.rank == 0 {
                    parts.push(Part::Talk(
                        vec![(remote(r), at, int(all)?, sendtype)],
                        vec![],
                    ));
                }
                Plan::keeping(parts, Box::new(room))
            }
        })
    };
    // SAFETY: MPI_Igather's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Iscatter` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Iscatter`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iscatter(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Iscatter",
    };
    let plan = || {
        Ok(match role(mx, root)? {
            Role::Idle => Plan::of(vec![]),
            Role::Root => {
                let all = int(times(elements(sendcount)?, mx.peers.size())?)?;
                let out = (0, sendbuf.cast_mut(), all, sendtype);
                Plan::of(vec![Part::Talk(vec![out], vec![])])
            }
            Role::From(r) => {
                let all = times(elements(recvcount)?, mx.local_size)?;
                let mut room = room(mx, all, recvtype)?;
                let at = room.ptr();
                let mut parts = Vec::new();
                if mx.rank == 0 {
                    parts.push(Part::Talk(
                        vec![],
                        vec![(remote(r), at, int(all)?, recvtype)],
                    ));
                }
                parts.push(Part::Local(Local::Scatter(
                    (at.cast_const(), recvcount, recvtype),
                    (recvbuf, recvcount, recvtype),
                )));
                Plan::keeping(parts, Box::new(room))
            }
        })
    };
    // SAFETY: MPI_Iscatter's contract.
    unsafe { start(mx, call, plan) }
}

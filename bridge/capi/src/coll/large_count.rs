//! The large-count (`_c`, MPI 4) forms of the collectives that take arrays:
//! `MPI_Gatherv_c`, `MPI_Scatterv_c`, `MPI_Allgatherv_c`, `MPI_Alltoallv_c`,
//! `MPI_Alltoallw_c`, `MPI_Reduce_scatter_c` and their nonblocking forms.
//! Their counts are `MPI_Count` and their displacements `MPI_Aint`; on an
//! Isthmus communicator every entry must fit an `int` (what the bridge's
//! bodies take, and what the v-forms without `_c` carry), and the call goes
//! to the ordinary form's body with the arrays copied as ints. mpi4py 4 on
//! an MPI 4 library calls these for every v-collective. Elsewhere the call
//! goes to `PMPI_*_c`. Only compiled where `mpi.h` declares them (MPICH 4,
//! MPICH 5, Intel MPI, the standard ABI); `mpi-functions.txt` lists them
//! `own`, so build.rs generates no shell for them.
//!
//! The arrays are read only where MPI says they are significant (a rooted
//! call's at its root), with the length MPI gives them: the remote group's
//! size on an intercommunicator, plain or mixed (the local group's for
//! `Reduce_scatter`'s counts), the communicator's size on a merged one. The nonblocking bodies
//! read their arrays at the call, so the copies may end with it.

use std::ffi::{c_int, c_void};
use std::fmt::Display;
use std::sync::Arc;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::errors;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::state::{bridge_comm, merged_comm, BridgeComm, MergedComm, MixedInter};

/// Which kind of Isthmus communicator a call was given.
pub(crate) enum Side {
    Inter(Arc<BridgeComm>),
    Merged(Arc<MergedComm>),
    Mixed(Arc<MixedInter>),
}

impl Side {
    pub(crate) fn of(comm: MPI_Comm) -> Option<Side> {
        if let Some(mc) = merged_comm(comm) {
            return Some(Side::Merged(mc));
        }
        if let Some(mx) = crate::state::mixed_comm(comm) {
            return Some(Side::Mixed(mx));
        }
        bridge_comm(comm).map(Side::Inter)
    }

    /// The length of an array with one entry per rank the call exchanges
    /// with: the remote group, or the whole merged communicator.
    pub(crate) fn peers(&self) -> usize {
        match self {
            Side::Inter(bc) => bc.inter.remote_size() as usize,
            Side::Merged(mc) => mc.size() as usize,
            Side::Mixed(mx) => mx.peers.size() as usize,
        }
    }

    /// `Reduce_scatter`'s counts: one per rank of the group that gets the
    /// result's blocks (the local group on an intercommunicator).
    pub(crate) fn receivers(&self) -> usize {
        match self {
            Side::Inter(bc) => bc.inter.local_size() as usize,
            Side::Merged(mc) => mc.size() as usize,
            Side::Mixed(mx) => mx.local_size as usize,
        }
    }

    /// A rooted call's arrays' length where they are significant (at the
    /// root), `None` elsewhere.
    pub(crate) fn at_root(&self, root: c_int) -> Option<usize> {
        let is_root = match self {
            Side::Inter(_) | Side::Mixed(_) => root == ffi::MPI_ROOT,
            Side::Merged(mc) => i64::from(root) == i64::from(mc.rank()),
        };
        is_root.then(|| self.peers())
    }
}

/// `value` as an `int`, or the call's error raised on `comm`.
fn small<T: Copy + Display + TryInto<c_int>>(
    value: T,
    what: &str,
    comm: MPI_Comm,
    call: &str,
) -> Result<c_int, c_int> {
    value.try_into().map_err(|_| {
        let e = BridgeError::InvalidArgument(format!(
            "{what} {value} does not fit an int, which is what the bridge carries"
        ));
        errors::fail(comm, call, &e)
    })
}

/// An array of the program's as ints, kept for the length of the call.
pub(crate) struct Ints(Option<Vec<c_int>>);

impl Ints {
    /// `n` entries of `array` as ints; nothing where the array is not
    /// significant (`n` is `None`) or not given (the body then says so).
    ///
    /// # Safety
    /// `array`, if not null, has `n` entries (the call's contract).
    pub(crate) unsafe fn read<T: Copy + Display + TryInto<c_int>>(
        array: *const T,
        n: Option<usize>,
        what: &str,
        comm: MPI_Comm,
        call: &str,
    ) -> Result<Ints, c_int> {
        let Some(n) = n.filter(|_| !array.is_null()) else {
            return Ok(Ints(None));
        };
        // SAFETY: not null, with `n` entries (the caller's contract).
        let given = unsafe { std::slice::from_raw_parts(array, n) };
        given
            .iter()
            .map(|&v| small(v, what, comm, call))
            .collect::<Result<Vec<_>, _>>()
            .map(|v| Ints(Some(v)))
    }

    /// A count of the call's as an int, or the error raised on `comm`.
    pub(crate) fn small<T: Copy + Display + TryInto<c_int>>(
        value: T,
        what: &str,
        comm: MPI_Comm,
        call: &str,
    ) -> Result<c_int, c_int> {
        small(value, what, comm, call)
    }

    pub(crate) fn ptr(&self) -> *const c_int {
        self.0.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
    }
}

/// The value a call returns, whether its conversion failed or its body ran.
pub(crate) fn done(r: Result<c_int, c_int>) -> c_int {
    r.unwrap_or_else(|code| code)
}

/// `MPI_Gatherv_c`.
///
/// # Safety
/// As `MPI_Gatherv_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Gatherv_c(
    sendbuf: *const c_void,
    sendcount: ffi::MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    displs: *const ffi::MPI_Aint,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Gatherv_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Gatherv_c(
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
            )
        };
    };
    done((|| {
        let sendcount = small(sendcount, "sendcount", comm, CALL)?;
        let n = side.at_root(root);
        // SAFETY: significant arrays have an entry per peer.
        let counts = unsafe { Ints::read(recvcounts, n, "a count", comm, CALL) }?;
        // SAFETY: as the counts.
        let displs = unsafe { Ints::read(displs, n, "a displacement", comm, CALL) }?;
        let (c, d) = (counts.ptr(), displs.ptr());
        // SAFETY: the program's arguments, the arrays as ints.
        Ok(unsafe {
            match &side {
                Side::Inter(bc) => crate::coll::gatherv(
                    bc, sendbuf, sendcount, sendtype, recvbuf, c, d, recvtype, root, comm,
                ),
                Side::Merged(mc) => crate::merged::gatherv(
                    mc, sendbuf, sendcount, sendtype, recvbuf, c, d, recvtype, root, comm,
                ),
                Side::Mixed(mx) => crate::mixed::gatherv(
                    mx, sendbuf, sendcount, sendtype, recvbuf, c, d, recvtype, root, comm,
                ),
            }
        })
    })())
}

/// `MPI_Scatterv_c`.
///
/// # Safety
/// As `MPI_Scatterv_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Scatterv_c(
    sendbuf: *const c_void,
    sendcounts: *const ffi::MPI_Count,
    displs: *const ffi::MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: ffi::MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Scatterv_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Scatterv_c(
                sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
            )
        };
    };
    done((|| {
        let recvcount = small(recvcount, "recvcount", comm, CALL)?;
        let n = side.at_root(root);
        // SAFETY: significant arrays have an entry per peer.
        let counts = unsafe { Ints::read(sendcounts, n, "a count", comm, CALL) }?;
        // SAFETY: as the counts.
        let displs = unsafe { Ints::read(displs, n, "a displacement", comm, CALL) }?;
        let (c, d) = (counts.ptr(), displs.ptr());
        // SAFETY: the program's arguments, the arrays as ints.
        Ok(unsafe {
            match &side {
                Side::Inter(bc) => crate::coll::scatterv(
                    bc, sendbuf, c, d, sendtype, recvbuf, recvcount, recvtype, root, comm,
                ),
                Side::Merged(mc) => crate::merged::scatterv(
                    mc, sendbuf, c, d, sendtype, recvbuf, recvcount, recvtype, root, comm,
                ),
                Side::Mixed(mx) => crate::mixed::scatterv(
                    mx, sendbuf, c, d, sendtype, recvbuf, recvcount, recvtype, root, comm,
                ),
            }
        })
    })())
}

/// `MPI_Allgatherv_c`.
///
/// # Safety
/// As `MPI_Allgatherv_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Allgatherv_c(
    sendbuf: *const c_void,
    sendcount: ffi::MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    displs: *const ffi::MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Allgatherv_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Allgatherv_c(
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
            )
        };
    };
    done((|| {
        let sendcount = small(sendcount, "sendcount", comm, CALL)?;
        let n = Some(side.peers());
        // SAFETY: an entry per peer.
        let counts = unsafe { Ints::read(recvcounts, n, "a count", comm, CALL) }?;
        // SAFETY: as the counts.
        let displs = unsafe { Ints::read(displs, n, "a displacement", comm, CALL) }?;
        let (c, d) = (counts.ptr(), displs.ptr());
        // SAFETY: the program's arguments, the arrays as ints.
        Ok(unsafe {
            match &side {
                Side::Inter(bc) => crate::coll::allgatherv(
                    bc, sendbuf, sendcount, sendtype, recvbuf, c, d, recvtype, comm,
                ),
                Side::Merged(mc) => crate::merged::allgatherv(
                    mc, sendbuf, sendcount, sendtype, recvbuf, c, d, recvtype, comm,
                ),
                Side::Mixed(mx) => crate::mixed::allgatherv(
                    mx, sendbuf, sendcount, sendtype, recvbuf, c, d, recvtype, comm,
                ),
            }
        })
    })())
}

/// The four arrays of an all-to-all as ints (the send ones not read when
/// the send buffer is `MPI_IN_PLACE`, which MPI allows on a merged
/// communicator).
pub(crate) struct AllToAll {
    pub(crate) sendcounts: Ints,
    pub(crate) sdispls: Ints,
    pub(crate) recvcounts: Ints,
    pub(crate) rdispls: Ints,
}

impl AllToAll {
    /// # Safety
    /// Each array not null has an entry per peer (the call's contract).
    pub(crate) unsafe fn read(
        side: &Side,
        in_place: bool,
        arrays: [(*const ffi::MPI_Count, *const ffi::MPI_Aint); 2],
        comm: MPI_Comm,
        call: &str,
    ) -> Result<AllToAll, c_int> {
        let [(sc, sd), (rc, rd)] = arrays;
        let n = Some(side.peers());
        let send = if in_place { None } else { n };
        // SAFETY: each array has an entry per peer (the caller's contract).
        unsafe {
            Ok(AllToAll {
                sendcounts: Ints::read(sc, send, "a count", comm, call)?,
                sdispls: Ints::read(sd, send, "a displacement", comm, call)?,
                recvcounts: Ints::read(rc, n, "a count", comm, call)?,
                rdispls: Ints::read(rd, n, "a displacement", comm, call)?,
            })
        }
    }
}

/// `MPI_Alltoallv_c`.
///
/// # Safety
/// As `MPI_Alltoallv_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Alltoallv_c(
    sendbuf: *const c_void,
    sendcounts: *const ffi::MPI_Count,
    sdispls: *const ffi::MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    rdispls: *const ffi::MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Alltoallv_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Alltoallv_c(
                sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                comm,
            )
        };
    };
    let in_place = crate::collbuf::is_in_place(sendbuf);
    done((|| {
        let arrays = [(sendcounts, sdispls), (recvcounts, rdispls)];
        // SAFETY: MPI_Alltoallv_c's arrays.
        let a = unsafe { AllToAll::read(&side, in_place, arrays, comm, CALL) }?;
        let (sc, sd) = (a.sendcounts.ptr(), a.sdispls.ptr());
        let (rc, rd) = (a.recvcounts.ptr(), a.rdispls.ptr());
        // SAFETY: the program's arguments, the arrays as ints.
        Ok(unsafe {
            match &side {
                Side::Inter(bc) => crate::coll::alltoallv(
                    bc, sendbuf, sc, sd, sendtype, recvbuf, rc, rd, recvtype, comm,
                ),
                Side::Merged(mc) => crate::merged::alltoallv(
                    mc, sendbuf, sc, sd, sendtype, recvbuf, rc, rd, recvtype, comm,
                ),
                Side::Mixed(mx) => crate::mixed::alltoallv(
                    mx, sendbuf, sc, sd, sendtype, recvbuf, rc, rd, recvtype, comm,
                ),
            }
        })
    })())
}

/// `MPI_Alltoallw_c`.
///
/// # Safety
/// As `MPI_Alltoallw_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Alltoallw_c(
    sendbuf: *const c_void,
    sendcounts: *const ffi::MPI_Count,
    sdispls: *const ffi::MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    rdispls: *const ffi::MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Alltoallw_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Alltoallw_c(
                sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                comm,
            )
        };
    };
    let in_place = crate::collbuf::is_in_place(sendbuf);
    done((|| {
        let arrays = [(sendcounts, sdispls), (recvcounts, rdispls)];
        // SAFETY: MPI_Alltoallw_c's arrays.
        let a = unsafe { AllToAll::read(&side, in_place, arrays, comm, CALL) }?;
        let (sc, sd) = (a.sendcounts.ptr(), a.sdispls.ptr());
        let (rc, rd) = (a.recvcounts.ptr(), a.rdispls.ptr());
        // SAFETY: the program's arguments, the arrays as ints.
        Ok(unsafe {
            match &side {
                Side::Inter(bc) => crate::coll::alltoallw(
                    bc, sendbuf, sc, sd, sendtypes, recvbuf, rc, rd, recvtypes, comm,
                ),
                Side::Merged(mc) => crate::merged::alltoallw(
                    mc, sendbuf, sc, sd, sendtypes, recvbuf, rc, rd, recvtypes, comm,
                ),
                Side::Mixed(mx) => crate::mixed::alltoallw(
                    mx, sendbuf, sc, sd, sendtypes, recvbuf, rc, rd, recvtypes, comm,
                ),
            }
        })
    })())
}

/// `MPI_Reduce_scatter_c`.
///
/// # Safety
/// As `MPI_Reduce_scatter_c`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Reduce_scatter_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm)
        };
    };
    done((|| {
        let n = Some(side.receivers());
        // SAFETY: an entry per receiving rank.
        let counts = unsafe { Ints::read(recvcounts, n, "a count", comm, CALL) }?;
        let c = counts.ptr();
        // SAFETY: the program's arguments, the counts as ints.
        Ok(unsafe {
            match &side {
                Side::Inter(bc) => {
                    crate::coll::reduce_scatter(bc, sendbuf, recvbuf, c, datatype, op, comm)
                }
                Side::Merged(mc) => {
                    crate::merged::reduce_scatter(mc, sendbuf, recvbuf, c, datatype, op, comm)
                }
                Side::Mixed(mx) => {
                    crate::mixed::reduce_scatter(mx, sendbuf, recvbuf, c, datatype, op, comm)
                }
            }
        })
    })())
}

/// `MPI_Igatherv_c`.
///
/// # Safety
/// As `MPI_Igatherv_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Igatherv_c(
    sendbuf: *const c_void,
    sendcount: ffi::MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    displs: *const ffi::MPI_Aint,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Igatherv_c";
    done((|| {
        let Some(side) = Side::of(comm) else {
            // SAFETY: the program's arguments, passed on.
            return Ok(unsafe {
                ffi::PMPI_Igatherv_c(
                    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                    comm, request,
                )
            });
        };
        let sendcount = small(sendcount, "sendcount", comm, CALL)?;
        let n = side.at_root(root);
        // SAFETY: significant arrays have an entry per peer.
        let counts = unsafe { Ints::read(recvcounts, n, "a count", comm, CALL) }?;
        // SAFETY: as the counts.
        let displs = unsafe { Ints::read(displs, n, "a displacement", comm, CALL) }?;
        // SAFETY: the program's arguments, the arrays as ints (read at the
        // call by the body).
        Ok(unsafe {
            match &side {
                Side::Merged(mc) => crate::merged::igatherv(
                    mc,
                    sendbuf,
                    sendcount,
                    sendtype,
                    recvbuf,
                    counts.ptr(),
                    displs.ptr(),
                    recvtype,
                    root,
                    comm,
                    request,
                ),
                Side::Inter(bc) => crate::coll::igatherv(
                    bc,
                    sendbuf,
                    sendcount,
                    sendtype,
                    recvbuf,
                    counts.ptr(),
                    displs.ptr(),
                    recvtype,
                    root,
                    comm,
                    request,
                ),
                Side::Mixed(mx) => crate::mixed::igatherv(
                    mx,
                    sendbuf,
                    sendcount,
                    sendtype,
                    recvbuf,
                    counts.ptr(),
                    displs.ptr(),
                    recvtype,
                    root,
                    comm,
                    request,
                ),
            }
        })
    })())
}

/// `MPI_Iscatterv_c`.
///
/// # Safety
/// As `MPI_Iscatterv_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Iscatterv_c(
    sendbuf: *const c_void,
    sendcounts: *const ffi::MPI_Count,
    displs: *const ffi::MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: ffi::MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Iscatterv_c";
    done((|| {
        let Some(side) = Side::of(comm) else {
            // SAFETY: the program's arguments, passed on.
            return Ok(unsafe {
                ffi::PMPI_Iscatterv_c(
                    sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                    comm, request,
                )
            });
        };
        let recvcount = small(recvcount, "recvcount", comm, CALL)?;
        let n = side.at_root(root);
        // SAFETY: significant arrays have an entry per peer.
        let counts = unsafe { Ints::read(sendcounts, n, "a count", comm, CALL) }?;
        // SAFETY: as the counts.
        let displs = unsafe { Ints::read(displs, n, "a displacement", comm, CALL) }?;
        // SAFETY: the program's arguments, the arrays as ints (read at the
        // call by the body).
        Ok(unsafe {
            match &side {
                Side::Merged(mc) => crate::merged::iscatterv(
                    mc,
                    sendbuf,
                    counts.ptr(),
                    displs.ptr(),
                    sendtype,
                    recvbuf,
                    recvcount,
                    recvtype,
                    root,
                    comm,
                    request,
                ),
                Side::Inter(bc) => crate::coll::iscatterv(
                    bc,
                    sendbuf,
                    counts.ptr(),
                    displs.ptr(),
                    sendtype,
                    recvbuf,
                    recvcount,
                    recvtype,
                    root,
                    comm,
                    request,
                ),
                Side::Mixed(mx) => crate::mixed::iscatterv(
                    mx,
                    sendbuf,
                    counts.ptr(),
                    displs.ptr(),
                    sendtype,
                    recvbuf,
                    recvcount,
                    recvtype,
                    root,
                    comm,
                    request,
                ),
            }
        })
    })())
}

/// `MPI_Iallgatherv_c`.
///
/// # Safety
/// As `MPI_Iallgatherv_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Iallgatherv_c(
    sendbuf: *const c_void,
    sendcount: ffi::MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    displs: *const ffi::MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Iallgatherv_c";
    done((|| {
        let Some(side) = Side::of(comm) else {
            // SAFETY: the program's arguments, passed on.
            return Ok(unsafe {
                ffi::PMPI_Iallgatherv_c(
                    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                    request,
                )
            });
        };
        let sendcount = small(sendcount, "sendcount", comm, CALL)?;
        let n = Some(side.peers());
        // SAFETY: an entry per remote rank.
        let counts = unsafe { Ints::read(recvcounts, n, "a count", comm, CALL) }?;
        // SAFETY: as the counts.
        let displs = unsafe { Ints::read(displs, n, "a displacement", comm, CALL) }?;
        // SAFETY: the program's arguments, the arrays as ints (read at the
        // call by the body).
        Ok(unsafe {
            match &side {
                Side::Merged(mc) => crate::merged::iallgatherv(
                    mc,
                    sendbuf,
                    sendcount,
                    sendtype,
                    recvbuf,
                    counts.ptr(),
                    displs.ptr(),
                    recvtype,
                    comm,
                    request,
                ),
                Side::Inter(bc) => crate::coll::iallgatherv(
                    bc,
                    sendbuf,
                    sendcount,
                    sendtype,
                    recvbuf,
                    counts.ptr(),
                    displs.ptr(),
                    recvtype,
                    comm,
                    request,
                ),
                Side::Mixed(mx) => crate::mixed::iallgatherv(
                    mx,
                    sendbuf,
                    sendcount,
                    sendtype,
                    recvbuf,
                    counts.ptr(),
                    displs.ptr(),
                    recvtype,
                    comm,
                    request,
                ),
            }
        })
    })())
}

/// `MPI_Ialltoallv_c`.
///
/// # Safety
/// As `MPI_Ialltoallv_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Ialltoallv_c(
    sendbuf: *const c_void,
    sendcounts: *const ffi::MPI_Count,
    sdispls: *const ffi::MPI_Aint,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    rdispls: *const ffi::MPI_Aint,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Ialltoallv_c";
    done((|| {
        let Some(side) = Side::of(comm) else {
            // SAFETY: the program's arguments, passed on.
            return Ok(unsafe {
                ffi::PMPI_Ialltoallv_c(
                    sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                    comm, request,
                )
            });
        };
        let arrays = [(sendcounts, sdispls), (recvcounts, rdispls)];
        // SAFETY: MPI_Ialltoallv_c's arrays.
        let a = unsafe { AllToAll::read(&side, false, arrays, comm, CALL) }?;
        // SAFETY: the program's arguments, the arrays as ints (read at the
        // call by the body).
        Ok(unsafe {
            match &side {
                Side::Merged(mc) => crate::merged::ialltoallv(
                    mc,
                    sendbuf,
                    a.sendcounts.ptr(),
                    a.sdispls.ptr(),
                    sendtype,
                    recvbuf,
                    a.recvcounts.ptr(),
                    a.rdispls.ptr(),
                    recvtype,
                    comm,
                    request,
                ),
                Side::Inter(bc) => crate::coll::ialltoallv(
                    bc,
                    sendbuf,
                    a.sendcounts.ptr(),
                    a.sdispls.ptr(),
                    sendtype,
                    recvbuf,
                    a.recvcounts.ptr(),
                    a.rdispls.ptr(),
                    recvtype,
                    comm,
                    request,
                ),
                Side::Mixed(mx) => crate::mixed::ialltoallv(
                    mx,
                    sendbuf,
                    a.sendcounts.ptr(),
                    a.sdispls.ptr(),
                    sendtype,
                    recvbuf,
                    a.recvcounts.ptr(),
                    a.rdispls.ptr(),
                    recvtype,
                    comm,
                    request,
                ),
            }
        })
    })())
}

/// `MPI_Ialltoallw_c`.
///
/// # Safety
/// As `MPI_Ialltoallw_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Ialltoallw_c(
    sendbuf: *const c_void,
    sendcounts: *const ffi::MPI_Count,
    sdispls: *const ffi::MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    rdispls: *const ffi::MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Ialltoallw_c";
    done((|| {
        let Some(side) = Side::of(comm) else {
            // SAFETY: the program's arguments, passed on.
            return Ok(unsafe {
                ffi::PMPI_Ialltoallw_c(
                    sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                    recvtypes, comm, request,
                )
            });
        };
        let arrays = [(sendcounts, sdispls), (recvcounts, rdispls)];
        // SAFETY: MPI_Ialltoallw_c's arrays.
        let a = unsafe { AllToAll::read(&side, false, arrays, comm, CALL) }?;
        // SAFETY: the program's arguments, the arrays as ints (read at the
        // call by the body).
        Ok(unsafe {
            match &side {
                Side::Merged(mc) => crate::merged::ialltoallw(
                    mc,
                    sendbuf,
                    a.sendcounts.ptr(),
                    a.sdispls.ptr(),
                    sendtypes,
                    recvbuf,
                    a.recvcounts.ptr(),
                    a.rdispls.ptr(),
                    recvtypes,
                    comm,
                    request,
                ),
                Side::Inter(bc) => crate::coll::ialltoallw(
                    bc,
                    sendbuf,
                    a.sendcounts.ptr(),
                    a.sdispls.ptr(),
                    sendtypes,
                    recvbuf,
                    a.recvcounts.ptr(),
                    a.rdispls.ptr(),
                    recvtypes,
                    comm,
                    request,
                ),
                Side::Mixed(mx) => crate::mixed::ialltoallw(
                    mx,
                    sendbuf,
                    a.sendcounts.ptr(),
                    a.sdispls.ptr(),
                    sendtypes,
                    recvbuf,
                    a.recvcounts.ptr(),
                    a.rdispls.ptr(),
                    recvtypes,
                    comm,
                    request,
                ),
            }
        })
    })())
}

/// `MPI_Ireduce_scatter_c`.
///
/// # Safety
/// As `MPI_Ireduce_scatter_c`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const ffi::MPI_Count,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Ireduce_scatter_c";
    done((|| {
        let Some(side) = Side::of(comm) else {
            // SAFETY: the program's arguments, passed on.
            return Ok(unsafe {
                ffi::PMPI_Ireduce_scatter_c(
                    sendbuf, recvbuf, recvcounts, datatype, op, comm, request,
                )
            });
        };
        let n = Some(side.receivers());
        // SAFETY: an entry per rank that gets a block.
        let counts = unsafe { Ints::read(recvcounts, n, "a count", comm, CALL) }?;
        let c = counts.ptr();
        // SAFETY: the program's arguments, the counts as ints (read at the
        // call by the body).
        Ok(unsafe {
            match &side {
                Side::Merged(mc) => crate::merged::ireduce_scatter(
                    mc, sendbuf, recvbuf, c, datatype, op, comm, request,
                ),
                Side::Inter(bc) => crate::coll::ireduce_scatter(
                    bc, sendbuf, recvbuf, c, datatype, op, comm, request,
                ),
                Side::Mixed(mx) => crate::mixed::ireduce_scatter(
                    mx, sendbuf, recvbuf, c, datatype, op, comm, request,
                ),
            }
        })
    })())
}

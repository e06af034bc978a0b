//! The large-count (`_c`, MPI 4) forms of the persistent collectives that
//! take arrays: `MPI_Gatherv_init_c`, `MPI_Scatterv_init_c`,
//! `MPI_Allgatherv_init_c`, `MPI_Alltoallv_init_c`, `MPI_Alltoallw_init_c`
//! and `MPI_Reduce_scatter_init_c`. On an Isthmus communicator (every
//! kind) the arrays are converted at the call as `coll::large_count`
//! converts the nonblocking forms' (every entry must fit an `int`), kept
//! with the stored call, and each `MPI_Start` issues the interposed
//! nonblocking form with them; elsewhere the call is the MPI's
//! `PMPI_*_init_c`. Only compiled where `mpi.h` declares them;
//! `mpi-functions.txt` lists them `own`.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::coll::{done, AllToAll, Ints, Side};
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::persist::pt2pt::stored;

type Counts = *const ffi::MPI_Count;
type Displs = *const ffi::MPI_Aint;

/// `MPI_Gatherv_init_c`.
///
/// # Safety
/// As `MPI_Gatherv_init_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Gatherv_init_c(
    sendbuf: *const c_void,
    sendcount: ffi::MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Counts,
    displs: Displs,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Gatherv_init_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Gatherv_init_c(
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
                info, request,
            )
        };
    };
    done((|| {
        let sn = Ints::small(sendcount, "sendcount", comm, CALL)?;
        let n = side.at_root(root);
        // SAFETY: significant arrays have an entry per peer.
        let (c, d) = unsafe {
            (
                Ints::read(recvcounts, n, "a count", comm, CALL)?,
                Ints::read(displs, n, "a displacement", comm, CALL)?,
            )
        };
        let start = Box::new(move |req| {
            // SAFETY: the persistent request's buffers (valid until it is
            // freed, MPI's rule) and our arrays.
            unsafe {
                crate::coll::MPI_Igatherv(
                    sendbuf,
                    sn,
                    sendtype,
                    recvbuf,
                    c.ptr(),
                    d.ptr(),
                    recvtype,
                    root,
                    comm,
                    req,
                )
            }
        });
        // SAFETY: the program's out-pointer.
        Ok(unsafe { stored(comm, CALL, start, request) })
    })())
}

/// `MPI_Scatterv_init_c`.
///
/// # Safety
/// As `MPI_Scatterv_init_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Scatterv_init_c(
    sendbuf: *const c_void,
    sendcounts: Counts,
    displs: Displs,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: ffi::MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Scatterv_init_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Scatterv_init_c(
                sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
                info, request,
            )
        };
    };
    done((|| {
        let rn = Ints::small(recvcount, "recvcount", comm, CALL)?;
        let n = side.at_root(root);
        // SAFETY: significant arrays have an entry per peer.
        let (c, d) = unsafe {
            (
                Ints::read(sendcounts, n, "a count", comm, CALL)?,
                Ints::read(displs, n, "a displacement", comm, CALL)?,
            )
        };
        let start = Box::new(move |req| {
            // SAFETY: as in MPI_Gatherv_init_c.
            unsafe {
                crate::coll::MPI_Iscatterv(
                    sendbuf,
                    c.ptr(),
                    d.ptr(),
                    sendtype,
                    recvbuf,
                    rn,
                    recvtype,
                    root,
                    comm,
                    req,
                )
            }
        });
        // SAFETY: the program's out-pointer.
        Ok(unsafe { stored(comm, CALL, start, request) })
    })())
}

/// `MPI_Allgatherv_init_c`.
///
/// # Safety
/// As `MPI_Allgatherv_init_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Allgatherv_init_c(
    sendbuf: *const c_void,
    sendcount: ffi::MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Counts,
    displs: Displs,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Allgatherv_init_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Allgatherv_init_c(
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, info,
                request,
            )
        };
    };
    done((|| {
        let sn = Ints::small(sendcount, "sendcount", comm, CALL)?;
        let n = Some(side.peers());
        // SAFETY: an entry per peer.
        let (c, d) = unsafe {
            (
                Ints::read(recvcounts, n, "a count", comm, CALL)?,
                Ints::read(displs, n, "a displacement", comm, CALL)?,
            )
        };
        let start = Box::new(move |req| {
            // SAFETY: as in MPI_Gatherv_init_c.
            unsafe {
                crate::coll::MPI_Iallgatherv(
                    sendbuf,
                    sn,
                    sendtype,
                    recvbuf,
                    c.ptr(),
                    d.ptr(),
                    recvtype,
                    comm,
                    req,
                )
            }
        });
        // SAFETY: the program's out-pointer.
        Ok(unsafe { stored(comm, CALL, start, request) })
    })())
}

/// `MPI_Alltoallv_init_c`.
///
/// # Safety
/// As `MPI_Alltoallv_init_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Alltoallv_init_c(
    sendbuf: *const c_void,
    sendcounts: Counts,
    sdispls: Displs,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Counts,
    rdispls: Displs,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Alltoallv_init_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Alltoallv_init_c(
                sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                comm, info, request,
            )
        };
    };
    let in_place = crate::collbuf::is_in_place(sendbuf);
    done((|| {
        let arrays = [(sendcounts, sdispls), (recvcounts, rdispls)];
        // SAFETY: the call's arrays.
        let a = unsafe { AllToAll::read(&side, in_place, arrays, comm, CALL) }?;
        let start = Box::new(move |req| {
            // SAFETY: as in MPI_Gatherv_init_c.
            unsafe {
                crate::coll::MPI_Ialltoallv(
                    sendbuf,
                    a.sendcounts.ptr(),
                    a.sdispls.ptr(),
                    sendtype,
                    recvbuf,
                    a.recvcounts.ptr(),
                    a.rdispls.ptr(),
                    recvtype,
                    comm,
                    req,
                )
            }
        });
        // SAFETY: the program's out-pointer.
        Ok(unsafe { stored(comm, CALL, start, request) })
    })())
}

/// `MPI_Alltoallw_init_c`.
///
/// # Safety
/// As `MPI_Alltoallw_init_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Alltoallw_init_c(
    sendbuf: *const c_void,
    sendcounts: Counts,
    sdispls: Displs,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Counts,
    rdispls: Displs,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Alltoallw_init_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Alltoallw_init_c(
                sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                comm, info, request,
            )
        };
    };
    let in_place = crate::collbuf::is_in_place(sendbuf);
    done((|| {
        let arrays = [(sendcounts, sdispls), (recvcounts, rdispls)];
        // SAFETY: the call's arrays.
        let a = unsafe { AllToAll::read(&side, in_place, arrays, comm, CALL) }?;
        let start = Box::new(move |req| {
            // SAFETY: as in MPI_Gatherv_init_c; the type arrays are the
            // program's, valid until the request is freed.
            unsafe {
                crate::coll::MPI_Ialltoallw(
                    sendbuf,
                    a.sendcounts.ptr(),
                    a.sdispls.ptr(),
                    sendtypes,
                    recvbuf,
                    a.recvcounts.ptr(),
                    a.rdispls.ptr(),
                    recvtypes,
                    comm,
                    req,
                )
            }
        });
        // SAFETY: the program's out-pointer.
        Ok(unsafe { stored(comm, CALL, start, request) })
    })())
}

/// `MPI_Reduce_scatter_init_c`.
///
/// # Safety
/// As `MPI_Reduce_scatter_init_c`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // MPI's own
pub unsafe extern "C" fn MPI_Reduce_scatter_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: Counts,
    datatype: MPI_Datatype,
    op: ffi::MPI_Op,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Reduce_scatter_init_c";
    let Some(side) = Side::of(comm) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe {
            ffi::PMPI_Reduce_scatter_init_c(
                sendbuf, recvbuf, recvcounts, datatype, op, comm, info, request,
            )
        };
    };
    done((|| {
        // SAFETY: an entry per rank that gets a block.
        let c = unsafe { Ints::read(recvcounts, Some(side.receivers()), "a count", comm, CALL) }?;
        let start = Box::new(move |req| {
            // SAFETY: as in MPI_Gatherv_init_c.
            unsafe {
                crate::coll::MPI_Ireduce_scatter(sendbuf, recvbuf, c.ptr(), datatype, op, comm, req)
            }
        });
        // SAFETY: the program's out-pointer.
        Ok(unsafe { stored(comm, CALL, start, request) })
    })())
}

//! The collectives of Open MPI's Fortran (`ompi_bcast_f`, `mpi_bcast_`,
//! `ompi_ibcast_f`, …, which call `PMPI_*` directly): Fortran handles
//! converted as Open MPI's own binding does, then this library's C entry
//! point, so that on an Isthmus communicator the call reaches its body
//! (`crate::coll`, or `crate::merged` on a merged one) instead of running
//! on the local handle. Each collective's conversion is written once
//! ([`collective!`]) and gives its blocking body and its nonblocking one,
//! whose request goes back as a Fortran handle. MPICH's Fortran
//! collectives call the C entry points themselves (their Fortran names
//! pass the call on), but for `use mpi_f08`'s `MPI_Barrier` and
//! `MPI_Ibarrier`, which use these bodies (`mpich_f08`).
//!
//! Count and displacement arrays are Fortran `INTEGER`s, C `int`s here, and
//! pass as they are (MPI asks the program to leave them alone until a
//! nonblocking call completes); `MPI_Alltoallw`'s datatype arrays are
//! converted, one handle per block (the remote group's size on an
//! intercommunicator), and the C bodies read them at the call.

use std::ffi::{c_int, c_void};

use super::convert::*;
use crate::mpi_glue::{request_null, MPI_Comm, MPI_Datatype, MPI_Request};
use crate::{coll, comms};

/// Runs a nonblocking call's C body with a C request and hands the program
/// its Fortran handle, on success only (as Open MPI's binding does).
///
/// # Safety
/// `request` is the program's request argument (or null).
pub(super) unsafe fn started(
    request: *mut Fint,
    start: impl FnOnce(*mut MPI_Request) -> c_int,
) -> c_int {
    let mut r = request_null();
    let rc = start(&mut r);
    if rc == 0 {
        // SAFETY: the program's request (or null).
        unsafe { put(request, request_c2f(r)) };
    }
    rc
}

/// How many blocks an all-to-all over `comm` has: the remote group's size
/// on an intercommunicator, the group's otherwise.
fn blocks(comm: MPI_Comm) -> Result<usize, c_int> {
    let (mut inter, mut n) = (0 as c_int, 0 as c_int);
    // SAFETY: a converted handle and our out-integers; the C entry points
    // answer for Isthmus, merged and native communicators alike.
    let rc = unsafe { comms::MPI_Comm_test_inter(comm, &mut inter) };
    if rc != 0 {
        return Err(rc);
    }
    // SAFETY: as above.
    let rc = unsafe {
        if inter != 0 {
            comms::MPI_Comm_remote_size(comm, &mut n)
        } else {
            comms::MPI_Comm_size(comm, &mut n)
        }
    };
    if rc != 0 {
        return Err(rc);
    }
    Ok(usize::try_from(n).unwrap_or(0))
}

/// `n` Fortran datatype handles as C's (empty for a null array).
///
/// # Safety
/// `types` is null or the program's array of at least `n` handles.
pub(super) unsafe fn types_f2c(types: *const Fint, n: usize) -> Vec<MPI_Datatype> {
    if types.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    let f = unsafe { std::slice::from_raw_parts(types, n) };
    f.iter().map(|t| type_f2c(*t)).collect()
}

/// `MPI_Alltoallw`'s datatype arrays as C's: `sendtypes` is not read when
/// the send buffer is `MPI_IN_PLACE` (MPI ignores it; the receive types
/// stand in for it).
///
/// # Safety
/// As the Fortran call: the arrays hold a handle per block of `comm`.
unsafe fn w_types(
    sendbuf: *const c_void,
    sendtypes: *const Fint,
    recvtypes: *const Fint,
    comm: MPI_Comm,
) -> Result<(Vec<MPI_Datatype>, Vec<MPI_Datatype>), c_int> {
    let n = blocks(comm)?;
    // SAFETY: the caller's contract.
    let recv = unsafe { types_f2c(recvtypes, n) };
    let send = if crate::collbuf::is_in_place(buffer(sendbuf)) {
        recv.clone()
    } else {
        // SAFETY: the caller's contract.
        unsafe { types_f2c(sendtypes, n) }
    };
    Ok((send, recv))
}

collective!(coll: barrier / ibarrier => MPI_Barrier / MPI_Ibarrier
    (comm: *const Fint) => (comm_f2c(int!(comm))));

collective!(coll: bcast / ibcast => MPI_Bcast / MPI_Ibcast
    (buf: *mut c_void, count: *const Fint, datatype: *const Fint, root: *const Fint,
     comm: *const Fint)
    => (buffer(buf) as *mut c_void, int!(count), type_f2c(int!(datatype)), int!(root),
        comm_f2c(int!(comm))));

collective!(coll: allreduce / iallreduce => MPI_Allreduce / MPI_Iallreduce
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, datatype: *const Fint,
     op: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), buffer(recvbuf) as *mut c_void, int!(count),
        type_f2c(int!(datatype)), op_f2c(int!(op)), comm_f2c(int!(comm))));

collective!(coll: reduce / ireduce => MPI_Reduce / MPI_Ireduce
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, datatype: *const Fint,
     op: *const Fint, root: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), buffer(recvbuf) as *mut c_void, int!(count),
        type_f2c(int!(datatype)), op_f2c(int!(op)), int!(root), comm_f2c(int!(comm))));

collective!(coll: reduce_scatter_block / ireduce_scatter_block
    => MPI_Reduce_scatter_block / MPI_Ireduce_scatter_block
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: *const Fint,
     datatype: *const Fint, op: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), buffer(recvbuf) as *mut c_void, int!(recvcount),
        type_f2c(int!(datatype)), op_f2c(int!(op)), comm_f2c(int!(comm))));

collective!(coll: reduce_scatter / ireduce_scatter => MPI_Reduce_scatter / MPI_Ireduce_scatter
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Fint,
     datatype: *const Fint, op: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), buffer(recvbuf) as *mut c_void, recvcounts,
        type_f2c(int!(datatype)), op_f2c(int!(op)), comm_f2c(int!(comm))));

collective!(coll: gather / igather => MPI_Gather / MPI_Igather
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint, root: *const Fint,
     comm: *const Fint)
    => (buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, int!(recvcount), type_f2c(int!(recvtype)), int!(root),
        comm_f2c(int!(comm))));

collective!(coll: scatter / iscatter => MPI_Scatter / MPI_Iscatter
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint, root: *const Fint,
     comm: *const Fint)
    => (buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, int!(recvcount), type_f2c(int!(recvtype)), int!(root),
        comm_f2c(int!(comm))));

collective!(coll: allgather / iallgather => MPI_Allgather / MPI_Iallgather
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, int!(recvcount), type_f2c(int!(recvtype)),
        comm_f2c(int!(comm))));

collective!(coll: alltoall / ialltoall => MPI_Alltoall / MPI_Ialltoall
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, int!(recvcount), type_f2c(int!(recvtype)),
        comm_f2c(int!(comm))));

collective!(coll: gatherv / igatherv => MPI_Gatherv / MPI_Igatherv
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
     recvtype: *const Fint, root: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, recvcounts, displs, type_f2c(int!(recvtype)),
        int!(root), comm_f2c(int!(comm))));

collective!(coll: scatterv / iscatterv => MPI_Scatterv / MPI_Iscatterv
    (sendbuf: *const c_void, sendcounts: *const Fint, displs: *const Fint,
     sendtype: *const Fint, recvbuf: *mut c_void, recvcount: *const Fint,
     recvtype: *const Fint, root: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), sendcounts, displs, type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, int!(recvcount), type_f2c(int!(recvtype)),
        int!(root), comm_f2c(int!(comm))));

collective!(coll: allgatherv / iallgatherv => MPI_Allgatherv / MPI_Iallgatherv
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
     recvtype: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, recvcounts, displs, type_f2c(int!(recvtype)),
        comm_f2c(int!(comm))));

collective!(coll: alltoallv / ialltoallv => MPI_Alltoallv / MPI_Ialltoallv
    (sendbuf: *const c_void, sendcounts: *const Fint, sdispls: *const Fint,
     sendtype: *const Fint, recvbuf: *mut c_void, recvcounts: *const Fint,
     rdispls: *const Fint, recvtype: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), sendcounts, sdispls, type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, recvcounts, rdispls, type_f2c(int!(recvtype)),
        comm_f2c(int!(comm))));

/// Runs `call` with `MPI_Alltoallw`'s type arrays converted (`w_types`)
/// and the C communicator.
///
/// # Safety
/// As the Fortran call: `comm` a reference, the type arrays the program's.
unsafe fn with_w_types(
    sendbuf: *const c_void,
    sendtypes: *const Fint,
    recvtypes: *const Fint,
    comm: *const Fint,
    call: impl FnOnce(&[MPI_Datatype], &[MPI_Datatype], MPI_Comm) -> c_int,
) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let c = comm_f2c(unsafe { int!(comm) });
    // SAFETY: the program's type arrays, a handle per block.
    match unsafe { w_types(sendbuf, sendtypes, recvtypes, c) } {
        Ok((send, recv)) => call(&send, &recv, c),
        Err(rc) => rc,
    }
}

/// `MPI_Alltoallw` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const Fint,
    sdispls: *const Fint,
    sendtypes: *const Fint,
    recvbuf: *mut c_void,
    recvcounts: *const Fint,
    rdispls: *const Fint,
    recvtypes: *const Fint,
    comm: *const Fint,
) -> c_int {
    // SAFETY: the program's arguments; our converted type arrays.
    unsafe {
        with_w_types(sendbuf, sendtypes, recvtypes, comm, |send, recv, c| {
            coll::MPI_Alltoallw(
                buffer(sendbuf),
                sendcounts,
                sdispls,
                send.as_ptr(),
                buffer(recvbuf) as *mut c_void,
                recvcounts,
                rdispls,
                recv.as_ptr(),
                c,
            )
        })
    }
}

/// `MPI_Ialltoallw` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn ialltoallw(
    sendbuf: *const c_void,
    sendcounts: *const Fint,
    sdispls: *const Fint,
    sendtypes: *const Fint,
    recvbuf: *mut c_void,
    recvcounts: *const Fint,
    rdispls: *const Fint,
    recvtypes: *const Fint,
    comm: *const Fint,
    request: *mut Fint,
) -> c_int {
    // SAFETY: the program's arguments; our converted type arrays, which
    // the C body reads at the call; the program's request.
    unsafe {
        with_w_types(sendbuf, sendtypes, recvtypes, comm, |send, recv, c| {
            started(request, |r| {
                coll::MPI_Ialltoallw(
                    buffer(sendbuf),
                    sendcounts,
                    sdispls,
                    send.as_ptr(),
                    buffer(recvbuf) as *mut c_void,
                    recvcounts,
                    rdispls,
                    recv.as_ptr(),
                    c,
                    r,
                )
            })
        })
    }
}

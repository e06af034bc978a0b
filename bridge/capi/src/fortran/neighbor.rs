//! The neighborhood collectives of Open MPI's Fortran (`ompi_neighbor_*_f`,
//! `mpi_neighbor_*_`, `ompi_ineighbor_*_f`, …, which call `PMPI_*`
//! directly) on a merged communicator's topology: Fortran handles and
//! buffers converted as Open MPI's own binding does, then this library's C
//! entry point (`crate::merged`'s shells), as the other collectives are
//! (`ompi_coll`). Re-exported by `fortran::merged`, whose bodies the
//! `+merged fortran` names call. MPICH's Fortran bindings of these calls
//! carry buffers and reach the C entry points themselves.
//!
//! Count and displacement arrays pass as they are (Fortran `INTEGER`s are
//! C `int`s; `MPI_Neighbor_alltoallw`'s displacements are
//! `INTEGER(KIND=MPI_ADDRESS_KIND)`, C's `MPI_Aint`); its datatype arrays
//! are converted, one handle per neighbour (the topology's in- and
//! out-degree), and the C bodies read them at the call.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use super::convert::*;
use super::ompi_coll::{started, types_f2c};
use crate::merged;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};

collective!(merged: neighbor_allgather / ineighbor_allgather
    => MPI_Neighbor_allgather / MPI_Ineighbor_allgather
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, int!(recvcount), type_f2c(int!(recvtype)),
        comm_f2c(int!(comm))));

collective!(merged: neighbor_alltoall / ineighbor_alltoall
    => MPI_Neighbor_alltoall / MPI_Ineighbor_alltoall
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, int!(recvcount), type_f2c(int!(recvtype)),
        comm_f2c(int!(comm))));

collective!(merged: neighbor_allgatherv / ineighbor_allgatherv
    => MPI_Neighbor_allgatherv / MPI_Ineighbor_allgatherv
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
     recvtype: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), int!(sendcount), type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, recvcounts, displs, type_f2c(int!(recvtype)),
        comm_f2c(int!(comm))));

collective!(merged: neighbor_alltoallv / ineighbor_alltoallv
    => MPI_Neighbor_alltoallv / MPI_Ineighbor_alltoallv
    (sendbuf: *const c_void, sendcounts: *const Fint, sdispls: *const Fint,
     sendtype: *const Fint, recvbuf: *mut c_void, recvcounts: *const Fint,
     rdispls: *const Fint, recvtype: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), sendcounts, sdispls, type_f2c(int!(sendtype)),
        buffer(recvbuf) as *mut c_void, recvcounts, rdispls, type_f2c(int!(recvtype)),
        comm_f2c(int!(comm))));

/// How many neighbours `comm`'s topology gives this process: the blocks it
/// receives and sends (`2 × ndims` both on a grid, its neighbours both on
/// a graph, the in- and out-degree on a distributed graph).
fn degrees(comm: MPI_Comm) -> Result<(usize, usize), c_int> {
    let mut kind: c_int = 0;
    // SAFETY: a converted handle and our integers; the C entry points
    // answer (or raise the communicator's error) for any communicator.
    let rc = unsafe { merged::MPI_Topo_test(comm, &mut kind) };
    if rc != 0 {
        return Err(rc);
    }
    let (mut i, mut o, mut w) = (0 as c_int, 0 as c_int, 0 as c_int);
    // SAFETY: as above; RSMPI_CART and RSMPI_GRAPH are immutable
    // constants exported by rsmpi's C shim.
    let rc = unsafe {
        if kind == ffi::RSMPI_CART {
            let rc = merged::MPI_Cartdim_get(comm, &mut i);
            i *= 2;
            o = i;
            rc
        } else if kind == ffi::RSMPI_GRAPH {
            let mut rank: c_int = 0;
            let rc = crate::comms::MPI_Comm_rank(comm, &mut rank);
            if rc != 0 {
                return Err(rc);
            }
            let rc = merged::MPI_Graph_neighbors_count(comm, rank, &mut i);
            o = i;
            rc
        } else {
            // A distributed graph's degrees, or the communicator's error
            // (MPI_ERR_TOPOLOGY) for one without a topology.
            merged::MPI_Dist_graph_neighbors_count(comm, &mut i, &mut o, &mut w)
        }
    };
    if rc != 0 {
        return Err(rc);
    }
    let n = |d: c_int| usize::try_from(d).unwrap_or(0);
    Ok((n(i), n(o)))
}

/// Runs `call` with `MPI_Neighbor_alltoallw`'s type arrays converted (the
/// send types one per out-neighbour, the receive types one per
/// in-neighbour) and the C communicator.
///
/// # Safety
/// As the Fortran call: `comm` a reference, the type arrays the program's.
unsafe fn with_w_types(
    sendtypes: *const Fint,
    recvtypes: *const Fint,
    comm: *const Fint,
    call: impl FnOnce(&[MPI_Datatype], &[MPI_Datatype], MPI_Comm) -> c_int,
) -> c_int {
    // SAFETY: a Fortran argument, passed by reference.
    let c = comm_f2c(unsafe { int!(comm) });
    match degrees(c) {
        // SAFETY: the program's type arrays, a handle per neighbour.
        Ok((ins, outs)) => unsafe {
            call(&types_f2c(sendtypes, outs), &types_f2c(recvtypes, ins), c)
        },
        Err(rc) => rc,
    }
}

/// `MPI_Neighbor_alltoallw` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn neighbor_alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const Fint,
    sdispls: *const ffi::MPI_Aint,
    sendtypes: *const Fint,
    recvbuf: *mut c_void,
    recvcounts: *const Fint,
    rdispls: *const ffi::MPI_Aint,
    recvtypes: *const Fint,
    comm: *const Fint,
) -> c_int {
    // SAFETY: the program's arguments; our converted type arrays.
    unsafe {
        with_w_types(sendtypes, recvtypes, comm, |send, recv, c| {
            merged::MPI_Neighbor_alltoallw(
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

/// `MPI_Ineighbor_alltoallw` for Open MPI's Fortran.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn ineighbor_alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const Fint,
    sdispls: *const ffi::MPI_Aint,
    sendtypes: *const Fint,
    recvbuf: *mut c_void,
    recvcounts: *const Fint,
    rdispls: *const ffi::MPI_Aint,
    recvtypes: *const Fint,
    comm: *const Fint,
    request: *mut Fint,
) -> c_int {
    // SAFETY: the program's arguments; our converted type arrays, which
    // the C body reads at the call; the program's request.
    unsafe {
        with_w_types(sendtypes, recvtypes, comm, |send, recv, c| {
            started(request, |r| {
                merged::MPI_Ineighbor_alltoallw(
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

//! Fortran bodies of the calls carried only on merged communicators (a
//! `+merged fortran` line in `mpi-functions.txt`): the process topologies
//! (Cartesian, graph and distributed graph), the neighborhood collectives
//! (`neighbor`, re-exported here), the prefix reductions (`MPI_Scan`,
//! `MPI_Exscan` and their nonblocking forms, which MPI does not define on
//! an intercommunicator) and `MPI_Comm_split_type`.
//!
//! Open MPI's Fortran bindings and MPICH's `use mpi_f08` call `PMPI_X`,
//! past the C `MPI_X` whose shell sends a merged communicator to
//! `crate::merged`; on a merged communicator the generated Fortran names
//! call these instead (on any other the call is passed on to the MPI
//! library's own binding, or refused on an Isthmus intercommunicator).
//! Each converts as the implementations' own bindings do — handles with
//! `MPI_Comm_f2c`/`c2f`, a `LOGICAL` as an integer that is true when not
//! zero and written back as 1 (gfortran's `.true.`, which both
//! implementations' bindings assume), Fortran's `MPI_UNWEIGHTED` and
//! `MPI_WEIGHTS_EMPTY` (each binding's own sentinels) as C's — and calls
//! the C entry point, which reports errors through the communicator's
//! handler as from C.

use std::ffi::{c_int, c_void};

use super::convert::{
    buffer, comm_f2c, get, info_f2c, op_f2c, put, type_f2c, weights, Fint, Weights,
};
pub(super) use super::neighbor::{
    ineighbor_allgather, ineighbor_allgatherv, ineighbor_alltoall, ineighbor_alltoallv,
    ineighbor_alltoallw, neighbor_allgather, neighbor_allgatherv, neighbor_alltoall,
    neighbor_alltoallv, neighbor_alltoallw,
};
use super::ompi::new_comm;
use crate::errors::{self, Class};
use crate::merged;
use crate::mpi_glue::MPI_Comm;

/// A Fortran `LOGICAL` argument as C's int (absent: false).
///
/// # Safety
/// `p` is null or points to a `LOGICAL` (an integer's size).
unsafe fn logical(p: *const Fint) -> c_int {
    // SAFETY: the caller's contract.
    c_int::from(unsafe { get(p) }.is_some_and(|v| v != 0))
}

/// A Fortran `LOGICAL` array of `n` elements as C's ints; `None` if the
/// array is absent (the C call then reports it) and for a negative `n` an
/// empty one (the C call reports the count). `Err`: no memory for it.
///
/// # Safety
/// `p` is null or points to `n` `LOGICAL`s.
unsafe fn logicals(p: *const Fint, n: Fint) -> Result<Option<Vec<c_int>>, ()> {
    if p.is_null() {
        return Ok(None);
    }
    let n = usize::try_from(n).unwrap_or(0);
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| ())?;
    // SAFETY: the caller's contract: `n` readable LOGICALs at `p`.
    let f = unsafe { std::slice::from_raw_parts(p, n) };
    v.extend(f.iter().map(|&l| c_int::from(l != 0)));
    Ok(Some(v))
}

/// The C pointer of a converted array (null when absent).
fn ptr(v: &Option<Vec<c_int>>) -> *const c_int {
    v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
}

/// The error of a `LOGICAL` array too large to convert.
fn no_memory(comm: MPI_Comm, call: &str) -> c_int {
    errors::raise(
        comm,
        errors::code(
            Class::Resources,
            &format!("{call}: no memory to convert a LOGICAL array"),
        ),
    )
}

/// `MPI_CART_CREATE(COMM_OLD, NDIMS, DIMS, PERIODS, REORDER, COMM_CART)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn cart_create(
    comm: *const Fint,
    ndims: *const Fint,
    dims: *const Fint,
    periods: *const Fint,
    reorder: *const Fint,
    comm_cart: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers.
    let (c, n) = unsafe { (comm_f2c(int!(comm)), int!(ndims)) };
    // SAFETY: PERIODS holds NDIMS LOGICALs (the call's contract).
    let Ok(periods) = (unsafe { logicals(periods, n) }) else {
        return no_memory(c, "MPI_Cart_create");
    };
    // SAFETY: converted handle and arrays, the program's integer array,
    // our out-handle.
    unsafe {
        let reorder = logical(reorder);
        new_comm(comm_cart, |out| {
            merged::MPI_Cart_create(c, n, dims, ptr(&periods), reorder, out)
        })
    }
}

/// `MPI_CART_SUB(COMM, REMAIN_DIMS, NEWCOMM)`: REMAIN_DIMS has as many
/// elements as the grid has dimensions.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn cart_sub(
    comm: *const Fint,
    remain_dims: *const Fint,
    newcomm: *mut Fint,
) -> c_int {
    // SAFETY: the program's integer.
    let c = comm_f2c(unsafe { int!(comm) });
    let mut n: c_int = 0;
    // SAFETY: a converted handle, our integer.
    let rc = unsafe { merged::MPI_Cartdim_get(c, &mut n) };
    if rc != 0 {
        return rc;
    }
    // SAFETY: REMAIN_DIMS holds one LOGICAL per dimension (the call's contract).
    let Ok(remain) = (unsafe { logicals(remain_dims, n) }) else {
        return no_memory(c, "MPI_Cart_sub");
    };
    // SAFETY: a converted handle and array, our out-handle.
    unsafe { new_comm(newcomm, |out| merged::MPI_Cart_sub(c, ptr(&remain), out)) }
}

/// `MPI_CART_GET(COMM, MAXDIMS, DIMS, PERIODS, COORDS)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn cart_get(
    comm: *const Fint,
    maxdims: *const Fint,
    dims: *mut Fint,
    periods: *mut Fint,
    coords: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers.
    let (c, max) = unsafe { (comm_f2c(int!(comm)), int!(maxdims)) };
    // SAFETY: the program's arrays of MAXDIMS elements (the call's contract).
    let rc = unsafe { merged::MPI_Cart_get(c, max, dims, periods, coords) };
    if rc != 0 || periods.is_null() {
        return rc;
    }
    // C wrote ints (whatever the grid's maker passed as true); a LOGICAL
    // has their size, and true is 1.
    let mut n: c_int = 0;
    // SAFETY: a converted handle, our integer.
    if unsafe { merged::MPI_Cartdim_get(c, &mut n) } == 0 {
        let n = usize::try_from(n.min(max)).unwrap_or(0);
        // SAFETY: PERIODS has MAXDIMS >= n elements, just written by C.
        for l in unsafe { std::slice::from_raw_parts_mut(periods, n) } {
            *l = Fint::from(*l != 0);
        }
    }
    rc
}

/// `MPI_CART_MAP(COMM, NDIMS, DIMS, PERIODS, NEWRANK)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn cart_map(
    comm: *const Fint,
    ndims: *const Fint,
    dims: *const Fint,
    periods: *const Fint,
    newrank: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers.
    let (c, n) = unsafe { (comm_f2c(int!(comm)), int!(ndims)) };
    // SAFETY: PERIODS holds NDIMS LOGICALs (the call's contract).
    let Ok(periods) = (unsafe { logicals(periods, n) }) else {
        return no_memory(c, "MPI_Cart_map");
    };
    // SAFETY: converted handle and array, the program's array and integer.
    unsafe { merged::MPI_Cart_map(c, n, dims, ptr(&periods), newrank) }
}

/// `MPI_CART_COORDS(COMM, RANK, MAXDIMS, COORDS)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn cart_coords(
    comm: *const Fint,
    rank: *const Fint,
    maxdims: *const Fint,
    coords: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers and array.
    unsafe { merged::MPI_Cart_coords(comm_f2c(int!(comm)), int!(rank), int!(maxdims), coords) }
}

/// `MPI_CART_RANK(COMM, COORDS, RANK)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn cart_rank(comm: *const Fint, coords: *const Fint, rank: *mut Fint) -> c_int {
    // SAFETY: the program's integers and array.
    unsafe { merged::MPI_Cart_rank(comm_f2c(int!(comm)), coords, rank) }
}

/// `MPI_CART_SHIFT(COMM, DIRECTION, DISP, RANK_SOURCE, RANK_DEST)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn cart_shift(
    comm: *const Fint,
    direction: *const Fint,
    disp: *const Fint,
    source: *mut Fint,
    dest: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers.
    unsafe {
        merged::MPI_Cart_shift(
            comm_f2c(int!(comm)),
            int!(direction),
            int!(disp),
            source,
            dest,
        )
    }
}

/// `MPI_CARTDIM_GET(COMM, NDIMS)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn cartdim_get(comm: *const Fint, ndims: *mut Fint) -> c_int {
    // SAFETY: the program's integers.
    unsafe { merged::MPI_Cartdim_get(comm_f2c(int!(comm)), ndims) }
}

/// `MPI_GRAPH_CREATE(COMM_OLD, NNODES, INDEX, EDGES, REORDER, COMM_GRAPH)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn graph_create(
    comm: *const Fint,
    nnodes: *const Fint,
    index: *const Fint,
    edges: *const Fint,
    reorder: *const Fint,
    comm_graph: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers and arrays, our out-handle.
    unsafe {
        let (c, n, reorder) = (comm_f2c(int!(comm)), int!(nnodes), logical(reorder));
        new_comm(comm_graph, |out| {
            merged::MPI_Graph_create(c, n, index, edges, reorder, out)
        })
    }
}

/// `MPI_GRAPH_GET(COMM, MAXINDEX, MAXEDGES, INDEX, EDGES)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn graph_get(
    comm: *const Fint,
    maxindex: *const Fint,
    maxedges: *const Fint,
    index: *mut Fint,
    edges: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers and arrays.
    unsafe {
        merged::MPI_Graph_get(
            comm_f2c(int!(comm)),
            int!(maxindex),
            int!(maxedges),
            index,
            edges,
        )
    }
}

/// `MPI_GRAPH_MAP(COMM, NNODES, INDEX, EDGES, NEWRANK)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn graph_map(
    comm: *const Fint,
    nnodes: *const Fint,
    index: *const Fint,
    edges: *const Fint,
    newrank: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers and arrays.
    unsafe { merged::MPI_Graph_map(comm_f2c(int!(comm)), int!(nnodes), index, edges, newrank) }
}

/// `MPI_GRAPH_NEIGHBORS(COMM, RANK, MAXNEIGHBORS, NEIGHBORS)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn graph_neighbors(
    comm: *const Fint,
    rank: *const Fint,
    maxneighbors: *const Fint,
    neighbors: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers and array.
    unsafe {
        merged::MPI_Graph_neighbors(
            comm_f2c(int!(comm)),
            int!(rank),
            int!(maxneighbors),
            neighbors,
        )
    }
}

/// `MPI_GRAPH_NEIGHBORS_COUNT(COMM, RANK, NNEIGHBORS)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn graph_neighbors_count(
    comm: *const Fint,
    rank: *const Fint,
    nneighbors: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers.
    unsafe { merged::MPI_Graph_neighbors_count(comm_f2c(int!(comm)), int!(rank), nneighbors) }
}

/// `MPI_GRAPHDIMS_GET(COMM, NNODES, NEDGES)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn graphdims_get(
    comm: *const Fint,
    nnodes: *mut Fint,
    nedges: *mut Fint,
) -> c_int {
    // SAFETY: the program's integers.
    unsafe { merged::MPI_Graphdims_get(comm_f2c(int!(comm)), nnodes, nedges) }
}

/// `MPI_TOPO_TEST(COMM, STATUS)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn topo_test(comm: *const Fint, status: *mut Fint) -> c_int {
    // SAFETY: the program's integers.
    unsafe { merged::MPI_Topo_test(comm_f2c(int!(comm)), status) }
}

/// A Fortran weights argument for `n` weights as the C call takes it:
/// `MPI_UNWEIGHTED` as C's; `MPI_WEIGHTS_EMPTY` as an array of none
/// (`Err` if `n > 0`, which MPI does not allow); the program's array as it
/// is. (Only a merged communicator's calls get these: they read no
/// weights for a degree of zero.)
fn c_weights(p: *const Fint, n: c_int) -> Result<*const c_int, ()> {
    match weights(p) {
        Weights::Unweighted => Ok(merged::unweighted()),
        Weights::Empty if n > 0 => Err(()),
        Weights::Empty => Ok(std::ptr::NonNull::<c_int>::dangling().as_ptr()),
        Weights::Array => Ok(p),
    }
}

/// The error of `MPI_WEIGHTS_EMPTY` given for a nonzero degree.
fn weights_not_empty(comm: MPI_Comm, call: &str) -> c_int {
    errors::raise(
        comm,
        errors::code(
            Class::InvalidArgument,
            &format!("{call}: MPI_WEIGHTS_EMPTY for a nonzero degree"),
        ),
    )
}

/// `MPI_DIST_GRAPH_CREATE_ADJACENT(COMM_OLD, INDEGREE, SOURCES,
/// SOURCEWEIGHTS, OUTDEGREE, DESTINATIONS, DESTWEIGHTS, INFO, REORDER,
/// COMM_DIST_GRAPH)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn dist_graph_create_adjacent(
    comm: *const Fint,
    indegree: *const Fint,
    sources: *const Fint,
    sourceweights: *const Fint,
    outdegree: *const Fint,
    destinations: *const Fint,
    destweights: *const Fint,
    info: *const Fint,
    reorder: *const Fint,
    comm_dist_graph: *mut Fint,
) -> c_int {
    const CALL: &str = "MPI_Dist_graph_create_adjacent";
    // SAFETY: the program's integers.
    let (c, ind, outd) = unsafe { (comm_f2c(int!(comm)), int!(indegree), int!(outdegree)) };
    let (Ok(sw), Ok(dw)) = (c_weights(sourceweights, ind), c_weights(destweights, outd)) else {
        return weights_not_empty(c, CALL);
    };
    // SAFETY: converted handles and weights, the program's integer arrays,
    // our out-handle.
    unsafe {
        let (info, reorder) = (info_f2c(int!(info)), logical(reorder));
        new_comm(comm_dist_graph, |out| {
            merged::MPI_Dist_graph_create_adjacent(
                c,
                ind,
                sources,
                sw,
                outd,
                destinations,
                dw,
                info,
                reorder,
                out,
            )
        })
    }
}

/// `MPI_DIST_GRAPH_CREATE(COMM_OLD, N, SOURCES, DEGREES, DESTINATIONS,
/// WEIGHTS, INFO, REORDER, COMM_DIST_GRAPH)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(super) unsafe fn dist_graph_create(
    comm: *const Fint,
    n: *const Fint,
    sources: *const Fint,
    degrees: *const Fint,
    destinations: *const Fint,
    weights: *const Fint,
    info: *const Fint,
    reorder: *const Fint,
    comm_dist_graph: *mut Fint,
) -> c_int {
    const CALL: &str = "MPI_Dist_graph_create";
    // SAFETY: the program's integers.
    let (c, nodes) = unsafe { (comm_f2c(int!(comm)), int!(n)) };
    // The weights are one per edge: as many as the degrees add up to.
    let edges = match usize::try_from(nodes) {
        // SAFETY: DEGREES holds N integers (the call's contract).
        Ok(k) if k > 0 && !degrees.is_null() => unsafe { std::slice::from_raw_parts(degrees, k) }
            .iter()
            .fold(0, |a: c_int, &d| a.saturating_add(d.max(0))),
        _ => 0,
    };
    let Ok(w) = c_weights(weights, edges) else {
        return weights_not_empty(c, CALL);
    };
    // SAFETY: converted handles and weights, the program's integer arrays,
    // our out-handle.
    unsafe {
        let (info, reorder) = (info_f2c(int!(info)), logical(reorder));
        new_comm(comm_dist_graph, |out| {
            merged::MPI_Dist_graph_create(
                c,
                nodes,
                sources,
                degrees,
                destinations,
                w,
                info,
                reorder,
                out,
            )
        })
    }
}

/// `MPI_DIST_GRAPH_NEIGHBORS_COUNT(COMM, INDEGREE, OUTDEGREE, WEIGHTED)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn dist_graph_neighbors_count(
    comm: *const Fint,
    indegree: *mut Fint,
    outdegree: *mut Fint,
    weighted: *mut Fint,
) -> c_int {
    let mut w: c_int = 0;
    // SAFETY: the program's integers, our flag.
    let rc = unsafe {
        merged::MPI_Dist_graph_neighbors_count(comm_f2c(int!(comm)), indegree, outdegree, &mut w)
    };
    if rc == 0 {
        // SAFETY: the program's LOGICAL (or null).
        unsafe { put(weighted, Fint::from(w != 0)) };
    }
    rc
}

/// `MPI_DIST_GRAPH_NEIGHBORS(COMM, MAXINDEGREE, SOURCES, SOURCEWEIGHTS,
/// MAXOUTDEGREE, DESTINATIONS, DESTWEIGHTS)`: a weights argument that is
/// `MPI_UNWEIGHTED` or `MPI_WEIGHTS_EMPTY` gets no weights written.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn dist_graph_neighbors(
    comm: *const Fint,
    maxindegree: *const Fint,
    sources: *mut Fint,
    sourceweights: *mut Fint,
    maxoutdegree: *const Fint,
    destinations: *mut Fint,
    destweights: *mut Fint,
) -> c_int {
    let out = |p: *mut Fint| match weights(p) {
        Weights::Array => p,
        Weights::Unweighted | Weights::Empty => merged::unweighted().cast_mut(),
    };
    // SAFETY: the program's integers and arrays (of the sizes it gave).
    unsafe {
        merged::MPI_Dist_graph_neighbors(
            comm_f2c(int!(comm)),
            int!(maxindegree),
            sources,
            out(sourceweights),
            int!(maxoutdegree),
            destinations,
            out(destweights),
        )
    }
}

collective!(merged: scan / iscan => MPI_Scan / MPI_Iscan
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, datatype: *const Fint,
     op: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), buffer(recvbuf) as *mut c_void, int!(count),
        type_f2c(int!(datatype)), op_f2c(int!(op)), comm_f2c(int!(comm))));

collective!(merged: exscan / iexscan => MPI_Exscan / MPI_Iexscan
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, datatype: *const Fint,
     op: *const Fint, comm: *const Fint)
    => (buffer(sendbuf), buffer(recvbuf) as *mut c_void, int!(count),
        type_f2c(int!(datatype)), op_f2c(int!(op)), comm_f2c(int!(comm))));

/// `MPI_COMM_SPLIT_TYPE(COMM, SPLIT_TYPE, KEY, INFO, NEWCOMM)`.
///
/// # Safety
/// As the Fortran call: every argument a reference (or null).
pub(super) unsafe fn comm_split_type(
    comm: *const Fint,
    split_type: *const Fint,
    key: *const Fint,
    info: *const Fint,
    newcomm: *mut Fint,
) -> c_int {
    // SAFETY: converted handles, the program's integers, our out-handle.
    unsafe {
        let (c, t, k, i) = (
            comm_f2c(int!(comm)),
            int!(split_type),
            int!(key),
            info_f2c(int!(info)),
        );
        new_comm(newcomm, |out| merged::MPI_Comm_split_type(c, t, k, i, out))
    }
}

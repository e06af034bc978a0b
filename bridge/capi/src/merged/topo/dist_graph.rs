//! Distributed graph topologies on merged communicators
//! (`MPI_Dist_graph_create_adjacent`, `MPI_Dist_graph_create` and their
//! queries): each process keeps its own sources and destinations (and
//! their weights), as MPI's own implementations do, on a merged duplicate
//! of all of the old communicator's ranks in their order (`reorder` and
//! `info` are hints, not taken). `MPI_Dist_graph_create`, where a process
//! may name edges between any two, sends each edge to both of its ends
//! with the merged communicator's own `MPI_Alltoall` and `MPI_Alltoallv`.

use std::ffi::c_int;

use mpi::ffi;

use super::{give, ints, make, topology_of, unweighted, DistGraph, Topology};
use crate::errors;
use crate::mpi_glue::MPI_Comm;
use crate::state::MergedComm;

/// `n` weights at `p`: None for `MPI_UNWEIGHTED`; a zero degree reads
/// nothing (`MPI_WEIGHTS_EMPTY` or any pointer).
///
/// # Safety
/// A `p` other than `MPI_UNWEIGHTED` addresses `n` ints when `n > 0`.
unsafe fn weights(comm: MPI_Comm, p: *const c_int, n: c_int) -> Result<Option<Vec<c_int>>, c_int> {
    if p == unweighted() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    unsafe { ints(comm, p, n) }.map(Some)
}

/// A degree or count of edges: MPI_ERR_ARG raised if negative.
fn degree(comm: MPI_Comm, n: c_int) -> Result<c_int, c_int> {
    if n < 0 {
        return Err(errors::raise(comm, ffi::MPI_ERR_ARG as c_int));
    }
    Ok(n)
}

/// `ranks`, each checked to be a rank of a communicator of `size`
/// (MPI_ERR_RANK raised if not).
fn checked(comm: MPI_Comm, size: u32, ranks: Vec<c_int>) -> Result<Vec<c_int>, c_int> {
    if ranks
        .iter()
        .any(|&r| r < 0 || i64::from(r) >= i64::from(size))
    {
        return Err(errors::raise(comm, ffi::MPI_ERR_RANK as c_int));
    }
    Ok(ranks)
}

/// `MPI_Dist_graph_create_adjacent` on a merged communicator: every rank,
/// in order, with the neighbours it names.
///
/// # Safety
/// As `MPI_Dist_graph_create_adjacent`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn dist_graph_create_adjacent(
    mc: &MergedComm,
    comm: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    _info: ffi::MPI_Info,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    if comm_dist_graph.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    let graph = || -> Result<DistGraph, c_int> {
        let (i, o) = (degree(comm, indegree)?, degree(comm, outdegree)?);
        // SAFETY: the program's arrays of indegree and outdegree ints
        // (MPI_Dist_graph_create_adjacent's contract).
        let (s, sw, d, dw) = unsafe {
            (
                ints(comm, sources, i)?,
                weights(comm, sourceweights, i)?,
                ints(comm, destinations, o)?,
                weights(comm, destweights, o)?,
            )
        };
        Ok(DistGraph {
            sources: checked(comm, mc.size(), s)?,
            destinations: checked(comm, mc.size(), d)?,
            weighted: sw.is_some() || dw.is_some(),
            source_weights: sw.unwrap_or_default(),
            dest_weights: dw.unwrap_or_default(),
        })
    };
    match graph() {
        // SAFETY: the program's out-pointer, checked non-null.
        Ok(g) => unsafe { give(make(mc, comm, 0, Topology::DistGraph(g)), comm_dist_graph) },
        Err(rc) => rc,
    }
}

/// `MPI_Dist_graph_create` on a merged communicator: the edges every
/// process names, each sent to its source (an out-edge there) and its
/// destination (an in-edge), kept in the order of the ranks that named
/// them and, from one rank, in its order.
///
/// # Safety
/// As `MPI_Dist_graph_create`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn dist_graph_create(
    mc: &MergedComm,
    comm: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_in: *const c_int,
    _info: ffi::MPI_Info,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    if comm_dist_graph.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    let graph = || -> Result<DistGraph, c_int> {
        let size = mc.size();
        let n = degree(comm, n)?;
        // SAFETY: the program's arrays of n sources and n degrees.
        let (s, deg) = unsafe { (ints(comm, sources, n)?, ints(comm, degrees, n)?) };
        let s = checked(comm, size, s)?;
        let mut total: c_int = 0;
        for &k in &deg {
            total = degree(comm, k)?
                .checked_add(total)
                .ok_or_else(|| errors::raise(comm, ffi::MPI_ERR_ARG as c_int))?;
        }
        // SAFETY: the program's arrays of sum(degrees) destinations and weights.
        let (d, w) = unsafe {
            (
                ints(comm, destinations, total)?,
                weights(comm, weights_in, total)?,
            )
        };
        let d = checked(comm, size, d)?;
        // What goes to each rank: (0, destination, weight) for an edge out
        // of it, (1, source, weight) for an edge into it.
        let mut to: Vec<Vec<c_int>> = vec![Vec::new(); size as usize];
        let mut next = 0usize;
        for (&from, &k) in s.iter().zip(&deg) {
            for _ in 0..k {
                let (Some(&dest), weight) = (d.get(next), w.as_ref().and_then(|w| w.get(next)))
                else {
                    break;
                };
                let weight = weight.copied().unwrap_or(1);
                // Both ends are ranks of the communicator (checked).
                if let Some(v) = to.get_mut(from as usize) {
                    v.extend([0, dest, weight]);
                }
                if let Some(v) = to.get_mut(dest as usize) {
                    v.extend([1, from, weight]);
                }
                next += 1;
            }
        }
        let received = exchange(mc, comm, &to)?;
        let mut g = DistGraph {
            sources: Vec::new(),
            source_weights: Vec::new(),
            destinations: Vec::new(),
            dest_weights: Vec::new(),
            weighted: w.is_some(),
        };
        for e in received.chunks_exact(3) {
            if let [kind, other, weight] = *e {
                let (ranks, weights) = if kind == 0 {
                    (&mut g.destinations, &mut g.dest_weights)
                } else {
                    (&mut g.sources, &mut g.source_weights)
                };
                ranks.push(other);
                weights.push(weight);
            }
        }
        if !g.weighted {
            g.source_weights.clear();
            g.dest_weights.clear();
        }
        Ok(g)
    };
    match graph() {
        // SAFETY: the program's out-pointer, checked non-null.
        Ok(g) => unsafe { give(make(mc, comm, 0, Topology::DistGraph(g)), comm_dist_graph) },
        Err(rc) => rc,
    }
}

/// Sends `to[r]` to each rank r of `comm` and returns what every rank sent
/// this one, in rank order (the merged communicator's `MPI_Alltoall` of the
/// lengths, then its `MPI_Alltoallv`).
fn exchange(mc: &MergedComm, comm: MPI_Comm, to: &[Vec<c_int>]) -> Result<Vec<c_int>, c_int> {
    let too_long = || errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    let counts: Vec<c_int> = to
        .iter()
        .map(|v| c_int::try_from(v.len()))
        .collect::<Result<_, _>>()
        .map_err(|_| too_long())?;
    let mut sdispls = Vec::with_capacity(to.len());
    let mut at: c_int = 0;
    for &c in &counts {
        sdispls.push(at);
        at = at.checked_add(c).ok_or_else(too_long)?;
    }
    let sendbuf: Vec<c_int> = to.concat();
    let mut rcounts = vec![0 as c_int; to.len()];
    // SAFETY: reading rsmpi's predefined handle.
    let int = unsafe { ffi::RSMPI_INT32_T };
    // SAFETY: one int to and from each rank, in buffers of ours.
    let rc = unsafe {
        crate::merged::alltoall(
            mc,
            counts.as_ptr().cast(),
            1,
            int,
            rcounts.as_mut_ptr().cast(),
            1,
            int,
            comm,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    let mut rdispls = Vec::with_capacity(to.len());
    let mut total: c_int = 0;
    for &c in &rcounts {
        rdispls.push(total);
        total = total.checked_add(c.max(0)).ok_or_else(too_long)?;
    }
    let mut recvbuf = vec![0 as c_int; total as usize];
    // SAFETY: the counts and displacements describe buffers of ours.
    let rc = unsafe {
        crate::merged::alltoallv(
            mc,
            sendbuf.as_ptr().cast(),
            counts.as_ptr(),
            sdispls.as_ptr(),
            int,
            recvbuf.as_mut_ptr().cast(),
            rcounts.as_ptr(),
            rdispls.as_ptr(),
            int,
            comm,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    Ok(recvbuf)
}

/// `comm`'s distributed graph (this process's part), or MPI_ERR_TOPOLOGY
/// raised on it.
fn dist_graph(comm: MPI_Comm) -> Result<DistGraph, c_int> {
    match topology_of(comm) {
        Some(Topology::DistGraph(g)) => Ok(g),
        _ => Err(errors::raise(comm, ffi::MPI_ERR_TOPOLOGY as c_int)),
    }
}

/// `MPI_Dist_graph_neighbors_count` on a merged distributed graph.
///
/// # Safety
/// As `MPI_Dist_graph_neighbors_count`.
pub(crate) unsafe fn dist_graph_neighbors_count(
    _mc: &MergedComm,
    comm: MPI_Comm,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    let g = match dist_graph(comm) {
        Ok(g) => g,
        Err(rc) => return rc,
    };
    if indegree.is_null() || outdegree.is_null() || weighted.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    // SAFETY: the program's out-pointers, checked non-null.
    unsafe {
        *indegree = g.sources.len() as c_int;
        *outdegree = g.destinations.len() as c_int;
        *weighted = c_int::from(g.weighted);
    }
    0
}

/// Writes as many of `from` as `max` allows to `to`, unless `to` is
/// `MPI_UNWEIGHTED` or null.
///
/// # Safety
/// Any other `to` has room for `max` ints.
unsafe fn put(from: &[c_int], max: c_int, to: *mut c_int) {
    if to.cast_const() == unweighted() {
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { super::put_ints(from, max, to) }
}

/// `MPI_Dist_graph_neighbors` on a merged distributed graph (as many as
/// `maxindegree` and `maxoutdegree` hold; weights only of a weighted graph).
///
/// # Safety
/// As `MPI_Dist_graph_neighbors`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn dist_graph_neighbors(
    _mc: &MergedComm,
    comm: MPI_Comm,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    let g = match dist_graph(comm) {
        Ok(g) => g,
        Err(rc) => return rc,
    };
    // SAFETY: the program's arrays of maxindegree and maxoutdegree ints.
    unsafe {
        put(&g.sources, maxindegree, sources);
        put(&g.destinations, maxoutdegree, destinations);
        if g.weighted {
            put(&g.source_weights, maxindegree, sourceweights);
            put(&g.dest_weights, maxoutdegree, destweights);
        }
    }
    0
}

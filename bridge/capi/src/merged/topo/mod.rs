//! Cartesian and graph topologies on merged communicators
//! (`MPI_Cart_create`, `MPI_Cart_sub`, `MPI_Graph_create` and the queries
//! on what they make), so that a program
//! whose `MPI_COMM_WORLD` spans two jobs (or that merged an
//! intercommunicator) lays its grid over both, as ocean and atmosphere
//! models do.
//!
//! The grid is the communicator's ranks in row-major order: `reorder` is
//! ignored, which MPI allows (the ranks keep their order). A grid made of
//! both jobs' ranks is a merged communicator (the split of the old one's
//! first `nnodes` ranks) that carries its dimensions and periods as an
//! attribute under a keyval of ours, so that `MPI_Comm_dup` copies them
//! and `MPI_Comm_free` drops them as MPI does a topology; the queries
//! (`MPI_Cart_coords`, `_rank`, `_shift`, `_get`, `MPI_Cartdim_get`,
//! `MPI_Topo_test`) are arithmetic on it. A grid, or a `MPI_Cart_sub`
//! slice of one, whose ranks all live in one job is that job's own
//! Cartesian communicator (`PMPI_Cart_create` on the native split, at
//! full native speed, its queries the MPI's own). Graph topologies
//! (`MPI_Graph_create`, its queries and `MPI_Graph_map`) are kept and
//! made the same way, and distributed graphs (`dist_graph`) over all of the
//! communicator's ranks. [`neighbors`] gives the neighbourhood collectives
//! (`super::neighbor`) a process's neighbours in MPI's order.

pub(crate) mod dist_graph;

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use mpi::ffi;

use super::split::comm_split;
use crate::errors;
use crate::mpi_glue::{comm_null, proc_null, MPI_Comm};
use crate::state::{self, MergedComm};

/// A Cartesian grid: its extent and periodicity in each dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cart {
    dims: Vec<c_int>,
    periods: Vec<bool>,
}

impl Cart {
    /// The number of processes the grid holds, or None past an `int`.
    fn nnodes(dims: &[c_int]) -> Option<c_int> {
        dims.iter().try_fold(1 as c_int, |n, &d| n.checked_mul(d))
    }

    fn size(&self) -> c_int {
        Self::nnodes(&self.dims).unwrap_or(c_int::MAX)
    }

    /// The coordinates of `rank` (row-major: the last dimension varies fastest).
    fn coords(&self, rank: c_int) -> Vec<c_int> {
        let mut left = rank;
        let mut out = vec![0; self.dims.len()];
        for (c, &d) in out.iter_mut().zip(&self.dims).rev() {
            *c = left % d;
            left /= d;
        }
        out
    }

    /// The rank at `coords`; a coordinate outside a periodic dimension
    /// wraps, outside another one gives None.
    fn rank(&self, coords: &[c_int]) -> Option<c_int> {
        let mut r: c_int = 0;
        for ((&c, &d), &p) in coords.iter().zip(&self.dims).zip(&self.periods) {
            let c = if p {
                c.rem_euclid(d)
            } else if (0..d).contains(&c) {
                c
            } else {
                return None;
            };
            r = r * d + c;
        }
        Some(r)
    }

    /// `MPI_Cart_shift`'s (source, dest) of `rank` along `direction` by `disp`.
    fn shift(&self, rank: c_int, direction: usize, disp: c_int) -> (c_int, c_int) {
        let at = |by: c_int| {
            let mut c = self.coords(rank);
            if let Some(x) = c.get_mut(direction) {
                *x = x.saturating_add(by);
            }
            self.rank(&c).unwrap_or_else(proc_null)
        };
        (at(disp.saturating_neg()), at(disp))
    }
}

/// A graph topology as `MPI_Graph_create` gives it: `index[i]` is the
/// number of edges of nodes 0..=i, `edges` their neighbours in order.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Graph {
    index: Vec<c_int>,
    edges: Vec<c_int>,
}

impl Graph {
    fn nnodes(&self) -> c_int {
        self.index.len() as c_int
    }

    /// The neighbours of `rank` (a node of the graph).
    fn neighbors(&self, rank: usize) -> &[c_int] {
        let from = match rank.checked_sub(1) {
            Some(r) => self.index.get(r).copied().unwrap_or(0),
            None => 0,
        };
        let to = self.index.get(rank).copied().unwrap_or(from);
        let (from, to) = (from.max(0) as usize, to.max(0) as usize);
        self.edges.get(from..to).unwrap_or(&[])
    }
}

/// This process's part of a distributed graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DistGraph {
    /// Where its receive blocks come from, in order.
    pub(crate) sources: Vec<c_int>,
    pub(crate) source_weights: Vec<c_int>,
    /// Where its send blocks go, in order.
    pub(crate) destinations: Vec<c_int>,
    pub(crate) dest_weights: Vec<c_int>,
    /// False if made with `MPI_UNWEIGHTED`.
    pub(crate) weighted: bool,
}

impl DistGraph {
    /// The graph as the MPI's own over `out`, a native communicator of the
    /// same ranks in the same order; its return code.
    fn create_native(&self, out: MPI_Comm, made: &mut MPI_Comm) -> c_int {
        let w = |v: &Vec<c_int>| {
            if self.weighted {
                v.as_ptr()
            } else {
                unweighted()
            }
        };
        // SAFETY: `out` is a live native communicator of ours; each array
        // holds its degree's ints (or is MPI_UNWEIGHTED); `made` is ours.
        unsafe {
            ffi::PMPI_Dist_graph_create_adjacent(
                out,
                self.sources.len() as c_int,
                self.sources.as_ptr(),
                w(&self.source_weights),
                self.destinations.len() as c_int,
                self.destinations.as_ptr(),
                w(&self.dest_weights),
                ffi::RSMPI_INFO_NULL,
                0,
                made,
            )
        }
    }
}

/// The MPI's `MPI_UNWEIGHTED`.
pub(crate) fn unweighted() -> *const c_int {
    // SAFETY: rsmpi's shim returns the MPI's constant, nothing else.
    unsafe { ffi::RSMPI_UNWEIGHTED() }.cast_const()
}

/// What a merged communicator made by the topology calls carries.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Topology {
    Cart(Cart),
    Graph(Graph),
    /// This process's part of a distributed graph (each has its own).
    DistGraph(DistGraph),
}

impl Topology {
    /// The number of processes it places (a distributed graph: all of its
    /// communicator's, which it is never asked).
    fn nnodes(&self) -> c_int {
        match self {
            Topology::Cart(c) => c.size(),
            Topology::Graph(g) => g.nnodes(),
            Topology::DistGraph(_) => c_int::MAX,
        }
    }
}

/// A process's neighbours in a topology, in MPI's order (MPI 4.0 §8.6),
/// each with the tag that pairs its message: a merged rank (or
/// `MPI_PROC_NULL` off a grid's edge) and 0 or 1.
pub(crate) struct Neighbors {
    /// Whom the receive blocks come from, in the receive buffer's order.
    pub(crate) sources: Vec<(c_int, i32)>,
    /// Whom the send blocks go to, in the send buffer's order.
    pub(crate) destinations: Vec<(c_int, i32)>,
}

/// The neighbours of `rank` (this process's) in `comm`'s topology, or
/// MPI_ERR_TOPOLOGY raised on a communicator without one.
///
/// On a grid each dimension gives its neighbour in the negative direction,
/// then in the positive one. A message sent in the positive direction
/// travels with tag 1, in the negative one with tag 0, so that on a
/// periodic dimension of extent 1 or 2 (where both neighbours are one
/// process) the block received from the negative side is the one that side
/// sent in the positive direction, as MPI 4.1 says (Open MPI's own
/// neighbourhood collectives pair them the same way). Graph neighbours
/// (repeated edges too) pair in list order with tag 0.
pub(crate) fn neighbors(comm: MPI_Comm, rank: c_int) -> Result<Neighbors, c_int> {
    let topology =
        topology_of(comm).ok_or_else(|| errors::raise(comm, ffi::MPI_ERR_TOPOLOGY as c_int))?;
    Ok(match topology {
        Topology::Cart(c) => {
            let (mut sources, mut destinations) = (Vec::new(), Vec::new());
            for d in 0..c.dims.len() {
                let (negative, positive) = c.shift(rank, d, 1);
                sources.extend([(negative, 1), (positive, 0)]);
                destinations.extend([(negative, 0), (positive, 1)]);
            }
            Neighbors {
                sources,
                destinations,
            }
        }
        Topology::Graph(g) => {
            let n: Vec<(c_int, i32)> = usize::try_from(rank)
                .map(|r| g.neighbors(r).iter().map(|&x| (x, 0)).collect())
                .unwrap_or_default();
            Neighbors {
                sources: n.clone(),
                destinations: n,
            }
        }
        Topology::DistGraph(g) => Neighbors {
            sources: g.sources.iter().map(|&x| (x, 0)).collect(),
            destinations: g.destinations.iter().map(|&x| (x, 0)).collect(),
        },
    })
}

/// The keyval under which a merged communicator keeps its `Topology` (a
/// `Box` as the attribute's value), created at the first one; None if MPI
/// refused it.
fn keyval() -> Option<c_int> {
    static KEYVAL: OnceLock<Option<c_int>> = OnceLock::new();
    *KEYVAL.get_or_init(|| {
        let mut k: c_int = 0;
        // SAFETY: MPI is initialized (we are inside an MPI call on a live
        // communicator); the callbacks match MPI's copy and delete
        // signatures; `k` is a valid out-pointer.
        let rc = unsafe {
            ffi::PMPI_Comm_create_keyval(
                Some(copy_topology),
                Some(delete_topology),
                &mut k,
                std::ptr::null_mut(),
            )
        };
        (rc == 0).then_some(k)
    })
}

/// MPI's copy callback: a duplicate communicator gets its own copy of the
/// topology.
unsafe extern "C" fn copy_topology(
    _old: MPI_Comm,
    _keyval: c_int,
    _extra: *mut c_void,
    value_in: *mut c_void,
    value_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: `value_in` is a `Box<Topology>` we stored (set_topology); MPI
    // hands the attribute back unchanged and keeps it alive during the copy.
    let copy = Box::new(unsafe { &*(value_in as *const Topology) }.clone());
    // SAFETY: MPI's out-pointers for the new value and the flag.
    unsafe {
        *(value_out as *mut *mut c_void) = Box::into_raw(copy) as *mut c_void;
        *flag = 1;
    }
    0
}

/// MPI's delete callback: the communicator (or the attribute) is gone.
unsafe extern "C" fn delete_topology(
    _comm: MPI_Comm,
    _keyval: c_int,
    value: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    // SAFETY: `value` is a `Box<Topology>` we stored and MPI deletes it once.
    drop(unsafe { Box::from_raw(value as *mut Topology) });
    0
}

fn set_topology(comm: MPI_Comm, topology: Topology) -> Result<(), c_int> {
    let k = keyval().ok_or(ffi::MPI_ERR_OTHER as c_int)?;
    let value = Box::into_raw(Box::new(topology));
    // SAFETY: a live communicator of ours and our keyval; MPI keeps the
    // pointer until delete_topology.
    let rc = unsafe { ffi::PMPI_Comm_set_attr(comm, k, value as *mut c_void) };
    if rc != 0 {
        // SAFETY: MPI did not take it.
        drop(unsafe { Box::from_raw(value) });
        return Err(rc);
    }
    Ok(())
}

/// The topology of `comm`, if it is a merged communicator that has one.
fn topology_of(comm: MPI_Comm) -> Option<Topology> {
    let k = keyval()?;
    let mut value: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: a live communicator (the caller's argument), our keyval,
    // valid out-pointers.
    let rc = unsafe {
        ffi::PMPI_Comm_get_attr(
            comm,
            k,
            &mut value as *mut *mut c_void as *mut c_void,
            &mut flag,
        )
    };
    if rc != 0 || flag == 0 || value.is_null() {
        return None;
    }
    // SAFETY: the attribute is a `Box<Topology>` of ours, alive while
    // `comm` is.
    Some(unsafe { &*(value as *const Topology) }.clone())
}

/// `comm`'s grid, or MPI_ERR_TOPOLOGY raised on it.
fn grid(comm: MPI_Comm) -> Result<Cart, c_int> {
    match topology_of(comm) {
        Some(Topology::Cart(c)) => Ok(c),
        _ => Err(errors::raise(comm, ffi::MPI_ERR_TOPOLOGY as c_int)),
    }
}

/// `comm`'s graph, or MPI_ERR_TOPOLOGY raised on it.
fn graph(comm: MPI_Comm) -> Result<Graph, c_int> {
    match topology_of(comm) {
        Some(Topology::Graph(g)) => Ok(g),
        _ => Err(errors::raise(comm, ffi::MPI_ERR_TOPOLOGY as c_int)),
    }
}

/// `n` ints at `p` (MPI's array arguments), or MPI_ERR_ARG raised on `comm`.
///
/// # Safety
/// A non-null `p` addresses `n` ints.
unsafe fn ints(comm: MPI_Comm, p: *const c_int, n: c_int) -> Result<Vec<c_int>, c_int> {
    match usize::try_from(n) {
        Ok(0) => Ok(Vec::new()),
        Ok(_) if p.is_null() => Err(errors::raise(comm, ffi::MPI_ERR_ARG as c_int)),
        // SAFETY: the caller's contract.
        Ok(n) => Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec()),
        Err(_) => Err(errors::raise(comm, ffi::MPI_ERR_DIMS as c_int)),
    }
}

/// The grid `ndims`, `dims`, `periods` describe, checked against a
/// communicator of `size` ranks: MPI_ERR_DIMS for a negative count or
/// extent, MPI_ERR_ARG for a grid larger than the communicator.
///
/// # Safety
/// As `MPI_Cart_create`'s arrays.
unsafe fn described(
    comm: MPI_Comm,
    size: u32,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
) -> Result<Cart, c_int> {
    // SAFETY: the caller's contract.
    let (d, p) = unsafe { (ints(comm, dims, ndims)?, ints(comm, periods, ndims)?) };
    if d.iter().any(|&x| x <= 0) {
        return Err(errors::raise(comm, ffi::MPI_ERR_DIMS as c_int));
    }
    match Cart::nnodes(&d) {
        Some(n) if i64::from(n) <= i64::from(size) => Ok(Cart {
            dims: d,
            periods: p.iter().map(|&x| x != 0).collect(),
        }),
        _ => Err(errors::raise(comm, ffi::MPI_ERR_ARG as c_int)),
    }
}

/// The ranks of `comm` with `color` (MPI_UNDEFINED: none) with the
/// topology `topology`, in `comm`'s order: a merged communicator carrying
/// it, or, when they are all of one job, that job's own communicator with
/// that topology.
fn make(
    mc: &MergedComm,
    comm: MPI_Comm,
    color: c_int,
    topology: Topology,
) -> Result<MPI_Comm, c_int> {
    let mut out = comm_null();
    // SAFETY: the program's communicator; `out` is ours.
    let rc = unsafe { comm_split(mc, comm, color, mc.rank() as c_int, &mut out) };
    if rc != 0 || out == comm_null() {
        return if rc != 0 { Err(rc) } else { Ok(out) };
    }
    if state::merged_comm(out).is_some() {
        if let Err(rc) = set_topology(out, topology) {
            crate::merged::forget(out);
            crate::merged::free_native(out);
            return Err(errors::raise(comm, rc));
        }
        return Ok(out);
    }
    // One job's ranks: its MPI's own topology over them.
    let mut made = comm_null();
    let rc = match &topology {
        Topology::Cart(cart) => {
            let periods: Vec<c_int> = cart.periods.iter().map(|&p| c_int::from(p)).collect();
            // SAFETY: `out` is a native communicator of ours; the arrays
            // hold `dims.len()` ints each.
            unsafe {
                ffi::PMPI_Cart_create(
                    out,
                    cart.dims.len() as c_int,
                    cart.dims.as_ptr(),
                    periods.as_ptr(),
                    0,
                    &mut made,
                )
            }
        }
        // SAFETY: as above; `index` holds nnodes ints, `edges` its last.
        Topology::Graph(g) => unsafe {
            ffi::PMPI_Graph_create(
                out,
                g.nnodes(),
                g.index.as_ptr(),
                g.edges.as_ptr(),
                0,
                &mut made,
            )
        },
        // A distributed graph spans all of its communicator's ranks, in
        // order: the split's ranks are the graph's.
        Topology::DistGraph(g) => g.create_native(out, &mut made),
    };
    // SAFETY: our split, never handed out.
    unsafe { ffi::PMPI_Comm_free(&mut out) };
    if rc != 0 {
        return Err(errors::raise(comm, rc));
    }
    Ok(made)
}

/// `made` into the program's out-handle `out` (checked non-null), or its
/// error code.
///
/// # Safety
/// `out` is the program's out-pointer.
unsafe fn give(made: Result<MPI_Comm, c_int>, out: *mut MPI_Comm) -> c_int {
    match made {
        Ok(c) => {
            // SAFETY: the program's out-pointer, checked non-null by the caller.
            unsafe { *out = c };
            0
        }
        Err(rc) => rc,
    }
}

/// `MPI_Cart_create` and `MPI_Graph_create`: `topology` over the first
/// `nnodes` ranks of `comm`, in order (`reorder` ignored, as MPI allows);
/// the others get `MPI_COMM_NULL`.
///
/// # Safety
/// `out` is the program's out-pointer (checked non-null).
unsafe fn create_over_first(
    mc: &MergedComm,
    comm: MPI_Comm,
    topology: Topology,
    out: *mut MPI_Comm,
) -> c_int {
    let color = if (mc.rank() as c_int) < topology.nnodes() {
        0
    } else {
        ffi::MPI_UNDEFINED as c_int
    };
    // SAFETY: forwarded.
    unsafe { give(make(mc, comm, color, topology), out) }
}

/// `MPI_Cart_map` and `MPI_Graph_map`: the rank this process would have in
/// `topology` made over `comm` (its own, or `MPI_UNDEFINED` past its
/// nodes), into the program's `newrank`.
///
/// # Safety
/// `newrank` is the program's out-pointer.
unsafe fn mapped(
    mc: &MergedComm,
    comm: MPI_Comm,
    topology: Result<Topology, c_int>,
    newrank: *mut c_int,
) -> c_int {
    let topology = match topology {
        Ok(t) => t,
        Err(rc) => return rc,
    };
    if newrank.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    let me = mc.rank() as c_int;
    // SAFETY: the program's out-pointer, checked non-null.
    unsafe {
        *newrank = if me < topology.nnodes() {
            me
        } else {
            ffi::MPI_UNDEFINED as c_int
        }
    };
    0
}

/// `MPI_Cart_create` on a merged communicator: its first `nnodes` ranks,
/// in order (`reorder` ignored); the others get `MPI_COMM_NULL`.
///
/// # Safety
/// As `MPI_Cart_create`.
pub(crate) unsafe fn cart_create(
    mc: &MergedComm,
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut MPI_Comm,
) -> c_int {
    if comm_cart.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    // SAFETY: the program's arrays (MPI_Cart_create's contract).
    match unsafe { described(comm, mc.size(), ndims, dims, periods) } {
        // SAFETY: the program's out-pointer, checked non-null.
        Ok(cart) => unsafe { create_over_first(mc, comm, Topology::Cart(cart), comm_cart) },
        Err(rc) => rc,
    }
}

/// `MPI_Cart_sub` on a merged grid: one grid per slice of the dimensions
/// `remain_dims` drops, each in the parent's order.
///
/// # Safety
/// As `MPI_Cart_sub`.
pub(crate) unsafe fn cart_sub(
    mc: &MergedComm,
    comm: MPI_Comm,
    remain_dims: *const c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let cart = match grid(comm) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    if newcomm.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    // SAFETY: one flag per dimension (MPI_Cart_sub's contract).
    let remain = match unsafe { ints(comm, remain_dims, cart.dims.len() as c_int) } {
        Ok(r) => r,
        Err(rc) => return rc,
    };
    let coords = cart.coords(mc.rank() as c_int);
    let (mut color, mut sub) = (
        0 as c_int,
        Cart {
            dims: Vec::new(),
            periods: Vec::new(),
        },
    );
    for (((&keep, &d), &p), &c) in remain
        .iter()
        .zip(&cart.dims)
        .zip(&cart.periods)
        .zip(&coords)
    {
        if keep != 0 {
            sub.dims.push(d);
            sub.periods.push(p);
        } else {
            color = color * d + c;
        }
    }
    // SAFETY: the program's out-pointer, checked non-null.
    unsafe { give(make(mc, comm, color, Topology::Cart(sub)), newcomm) }
}

/// `MPI_Topo_test`: `MPI_CART` on a merged grid, `MPI_GRAPH` on a merged
/// graph, `MPI_DIST_GRAPH` on a merged distributed graph, else
/// `MPI_UNDEFINED`.
///
/// # Safety
/// As `MPI_Topo_test`.
pub(crate) unsafe fn topo_test(_mc: &MergedComm, comm: MPI_Comm, status: *mut c_int) -> c_int {
    if status.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    let t = match topology_of(comm) {
        // SAFETY: reading an immutable constant exported by rsmpi's C shim.
        Some(Topology::Cart(_)) => unsafe { ffi::RSMPI_CART },
        // SAFETY: as above.
        Some(Topology::Graph(_)) => unsafe { ffi::RSMPI_GRAPH },
        // SAFETY: as above.
        Some(Topology::DistGraph(_)) => unsafe { ffi::RSMPI_DIST_GRAPH },
        None => ffi::MPI_UNDEFINED as c_int,
    };
    // SAFETY: the program's out-pointer, checked non-null.
    unsafe { *status = t };
    0
}

/// `MPI_Cartdim_get` on a merged grid.
///
/// # Safety
/// As `MPI_Cartdim_get`.
pub(crate) unsafe fn cartdim_get(_mc: &MergedComm, comm: MPI_Comm, ndims: *mut c_int) -> c_int {
    let cart = match grid(comm) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    if ndims.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    // SAFETY: the program's out-pointer, checked non-null.
    unsafe { *ndims = cart.dims.len() as c_int };
    0
}

/// `MPI_Cart_get` on a merged grid.
///
/// # Safety
/// As `MPI_Cart_get`: each array holds `maxdims` ints.
pub(crate) unsafe fn cart_get(
    mc: &MergedComm,
    comm: MPI_Comm,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    let cart = match grid(comm) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    let n = cart.dims.len();
    if n == 0 {
        return 0;
    }
    if usize::try_from(maxdims).map_or(true, |m| m < n)
        || dims.is_null()
        || periods.is_null()
        || coords.is_null()
    {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    let mine = cart.coords(mc.rank() as c_int);
    for (i, ((&d, &p), c)) in cart.dims.iter().zip(&cart.periods).zip(mine).enumerate() {
        // SAFETY: each array holds maxdims >= n ints (the call's contract).
        unsafe {
            *dims.add(i) = d;
            *periods.add(i) = c_int::from(p);
            *coords.add(i) = c;
        }
    }
    0
}

/// `MPI_Cart_rank` on a merged grid.
///
/// # Safety
/// As `MPI_Cart_rank`: `coords` holds one int per dimension.
pub(crate) unsafe fn cart_rank(
    _mc: &MergedComm,
    comm: MPI_Comm,
    coords: *const c_int,
    rank: *mut c_int,
) -> c_int {
    let cart = match grid(comm) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    // SAFETY: one int per dimension (the call's contract).
    let c = match unsafe { ints(comm, coords, cart.dims.len() as c_int) } {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    match (cart.rank(&c), rank.is_null()) {
        (Some(r), false) => {
            // SAFETY: the program's out-pointer, checked non-null.
            unsafe { *rank = r };
            0
        }
        // A coordinate outside a non-periodic dimension.
        _ => errors::raise(comm, ffi::MPI_ERR_ARG as c_int),
    }
}

/// `MPI_Cart_coords` on a merged grid.
///
/// # Safety
/// As `MPI_Cart_coords`: `coords` holds `maxdims` ints.
pub(crate) unsafe fn cart_coords(
    _mc: &MergedComm,
    comm: MPI_Comm,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> c_int {
    let cart = match grid(comm) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    if !(0..cart.size()).contains(&rank) {
        return errors::raise(comm, ffi::MPI_ERR_RANK as c_int);
    }
    let n = cart.dims.len();
    if n == 0 {
        return 0;
    }
    if usize::try_from(maxdims).map_or(true, |m| m < n) || coords.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    for (i, c) in cart.coords(rank).into_iter().enumerate() {
        // SAFETY: `coords` holds maxdims >= n ints (the call's contract).
        unsafe { *coords.add(i) = c };
    }
    0
}

/// `MPI_Cart_shift` on a merged grid: `MPI_PROC_NULL` past the edge of a
/// non-periodic dimension.
///
/// # Safety
/// As `MPI_Cart_shift`.
pub(crate) unsafe fn cart_shift(
    mc: &MergedComm,
    comm: MPI_Comm,
    direction: c_int,
    disp: c_int,
    rank_source: *mut c_int,
    rank_dest: *mut c_int,
) -> c_int {
    let cart = match grid(comm) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    let Some(d) = usize::try_from(direction)
        .ok()
        .filter(|&d| d < cart.dims.len())
    else {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    };
    if rank_source.is_null() || rank_dest.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    let (source, dest) = cart.shift(mc.rank() as c_int, d, disp);
    // SAFETY: the program's out-pointers, checked non-null.
    unsafe {
        *rank_source = source;
        *rank_dest = dest;
    }
    0
}

/// `MPI_Cart_map` on a merged communicator: the rank each process would
/// have in `MPI_Cart_create`'s grid (its own, or `MPI_UNDEFINED` past the
/// grid), as ranks keep their order here.
///
/// # Safety
/// As `MPI_Cart_map`.
pub(crate) unsafe fn cart_map(
    mc: &MergedComm,
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    // SAFETY: the program's arrays (MPI_Cart_map's contract).
    let cart = unsafe { described(comm, mc.size(), ndims, dims, periods) };
    // SAFETY: the program's out-pointer.
    unsafe { mapped(mc, comm, cart.map(Topology::Cart), newrank) }
}

/// The graph `nnodes`, `index`, `edges` describe, checked against a
/// communicator of `size` ranks: MPI_ERR_ARG for more nodes than ranks, a
/// negative count, an index that decreases, or an edge to no node.
///
/// # Safety
/// As `MPI_Graph_create`'s arrays.
unsafe fn described_graph(
    comm: MPI_Comm,
    size: u32,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
) -> Result<Graph, c_int> {
    let arg = || errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    if nnodes < 0 || i64::from(nnodes) > i64::from(size) {
        return Err(arg());
    }
    // SAFETY: the caller's contract: `index` holds nnodes ints.
    let index = unsafe { ints(comm, index, nnodes)? };
    let mut last = 0;
    for &i in &index {
        if i < last {
            return Err(arg());
        }
        last = i;
    }
    // SAFETY: the caller's contract: `edges` holds index[nnodes - 1] ints.
    let edges = unsafe { ints(comm, edges, last)? };
    if edges.iter().any(|&e| !(0..nnodes).contains(&e)) {
        return Err(arg());
    }
    Ok(Graph { index, edges })
}

/// `MPI_Graph_create` on a merged communicator: its first `nnodes` ranks,
/// in order (`reorder` ignored); the others get `MPI_COMM_NULL`.
///
/// # Safety
/// As `MPI_Graph_create`.
pub(crate) unsafe fn graph_create(
    mc: &MergedComm,
    comm: MPI_Comm,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    comm_graph: *mut MPI_Comm,
) -> c_int {
    if comm_graph.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    // SAFETY: the program's arrays (MPI_Graph_create's contract).
    match unsafe { described_graph(comm, mc.size(), nnodes, index, edges) } {
        // SAFETY: the program's out-pointer, checked non-null.
        Ok(g) => unsafe { create_over_first(mc, comm, Topology::Graph(g), comm_graph) },
        Err(rc) => rc,
    }
}

/// `MPI_Graphdims_get` on a merged graph.
///
/// # Safety
/// As `MPI_Graphdims_get`.
pub(crate) unsafe fn graphdims_get(
    _mc: &MergedComm,
    comm: MPI_Comm,
    nnodes: *mut c_int,
    nedges: *mut c_int,
) -> c_int {
    let g = match graph(comm) {
        Ok(g) => g,
        Err(rc) => return rc,
    };
    if nnodes.is_null() || nedges.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    // SAFETY: the program's out-pointers, checked non-null.
    unsafe {
        *nnodes = g.nnodes();
        *nedges = g.edges.len() as c_int;
    }
    0
}

/// Writes as many of `from` as `max` allows (at least 0) to `to`.
///
/// # Safety
/// A non-null `to` has room for `max` ints.
unsafe fn put_ints(from: &[c_int], max: c_int, to: *mut c_int) {
    let n = from.len().min(usize::try_from(max).unwrap_or(0));
    if n == 0 || to.is_null() {
        return;
    }
    // SAFETY: `to` has room for max >= n ints (the caller's contract);
    // `from` holds n.
    unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), to, n) };
}

/// `MPI_Graph_get` on a merged graph (as much of the index and the edges
/// as `maxindex` and `maxedges` hold).
///
/// # Safety
/// As `MPI_Graph_get`.
pub(crate) unsafe fn graph_get(
    _mc: &MergedComm,
    comm: MPI_Comm,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    let g = match graph(comm) {
        Ok(g) => g,
        Err(rc) => return rc,
    };
    // SAFETY: the program's arrays of maxindex and maxedges ints.
    unsafe {
        put_ints(&g.index, maxindex, index);
        put_ints(&g.edges, maxedges, edges);
    }
    0
}

/// The neighbours of node `rank` of `comm`'s graph, or the error raised.
fn neighbors_of(comm: MPI_Comm, rank: c_int) -> Result<Vec<c_int>, c_int> {
    let g = graph(comm)?;
    match usize::try_from(rank) {
        Ok(r) if rank < g.nnodes() => Ok(g.neighbors(r).to_vec()),
        _ => Err(errors::raise(comm, ffi::MPI_ERR_RANK as c_int)),
    }
}

/// `MPI_Graph_neighbors_count` on a merged graph.
///
/// # Safety
/// As `MPI_Graph_neighbors_count`.
pub(crate) unsafe fn graph_neighbors_count(
    _mc: &MergedComm,
    comm: MPI_Comm,
    rank: c_int,
    nneighbors: *mut c_int,
) -> c_int {
    let n = match neighbors_of(comm, rank) {
        Ok(n) => n,
        Err(rc) => return rc,
    };
    if nneighbors.is_null() {
        return errors::raise(comm, ffi::MPI_ERR_ARG as c_int);
    }
    // SAFETY: the program's out-pointer, checked non-null.
    unsafe { *nneighbors = n.len() as c_int };
    0
}

/// `MPI_Graph_neighbors` on a merged graph (as many as `maxneighbors`).
///
/// # Safety
/// As `MPI_Graph_neighbors`.
pub(crate) unsafe fn graph_neighbors(
    _mc: &MergedComm,
    comm: MPI_Comm,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    let n = match neighbors_of(comm, rank) {
        Ok(n) => n,
        Err(rc) => return rc,
    };
    // SAFETY: the program's array of maxneighbors ints.
    unsafe { put_ints(&n, maxneighbors, neighbors) };
    0
}

/// `MPI_Graph_map` on a merged communicator: each process's own rank, or
/// `MPI_UNDEFINED` past the graph's nodes (ranks keep their order here).
///
/// # Safety
/// As `MPI_Graph_map`.
pub(crate) unsafe fn graph_map(
    mc: &MergedComm,
    comm: MPI_Comm,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    // SAFETY: the program's arrays (MPI_Graph_map's contract).
    let g = unsafe { described_graph(comm, mc.size(), nnodes, index, edges) };
    // SAFETY: the program's out-pointer.
    unsafe { mapped(mc, comm, g.map(Topology::Graph), newrank) }
}

#[cfg(test)]
mod tests {
    use super::Cart;

    fn grid(dims: &[i32], periods: &[bool]) -> Cart {
        Cart {
            dims: dims.to_vec(),
            periods: periods.to_vec(),
        }
    }

    #[test]
    fn ranks_and_coordinates_are_row_major_and_inverse() {
        let g = grid(&[2, 3, 4], &[false, true, false]);
        assert_eq!(g.size(), 24);
        assert_eq!(g.coords(0), vec![0, 0, 0]);
        assert_eq!(g.coords(5), vec![0, 1, 1]);
        assert_eq!(g.coords(23), vec![1, 2, 3]);
        for r in 0..24 {
            assert_eq!(g.rank(&g.coords(r)), Some(r));
        }
        // A periodic dimension wraps, the others do not.
        assert_eq!(g.rank(&[0, -1, 0]), Some(8));
        assert_eq!(g.rank(&[0, 3, 0]), Some(0));
        assert_eq!(g.rank(&[2, 0, 0]), None);
        assert_eq!(g.rank(&[0, 0, -1]), None);
    }

    #[test]
    fn a_graphs_neighbours_are_its_index_slices() {
        // 0 - 1, 0 - 2, 2 - 3 (MPI's example layout).
        let g = super::Graph {
            index: vec![2, 3, 5, 6],
            edges: vec![1, 2, 0, 0, 3, 2],
        };
        assert_eq!(g.nnodes(), 4);
        assert_eq!(g.neighbors(0), &[1, 2]);
        assert_eq!(g.neighbors(1), &[0]);
        assert_eq!(g.neighbors(2), &[0, 3]);
        assert_eq!(g.neighbors(3), &[2]);
        assert_eq!(g.neighbors(4), &[] as &[i32]);
    }

    #[test]
    fn a_shift_wraps_where_periodic_and_falls_off_elsewhere() {
        let null = crate::mpi_glue::proc_null;
        let g = grid(&[3, 2], &[false, true]);
        // Rank 2 is (1, 0).
        assert_eq!(g.shift(2, 0, 1), (0, 4));
        assert_eq!(g.shift(2, 0, 2), (null(), null()));
        assert_eq!(g.shift(2, 1, 1), (3, 3));
        assert_eq!(g.shift(0, 0, -1), (2, null()));
    }
}

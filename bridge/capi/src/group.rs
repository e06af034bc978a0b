//! MPI groups that hold processes of two jobs: `MPI_Comm_group` of a merged
//! communicator, `MPI_Comm_remote_group` of an Isthmus intercommunicator,
//! and what the group calls make of them. An `MPI_Group` of one MPI
//! implementation names only its own job's processes, so such a group is
//! Isthmus's own: a list of processes, this job's named by their rank in
//! its `MPI_COMM_WORLD`, the other job's by their engine's identity (the
//! same through every communicator that reaches them), behind a handle
//! that is a real group of this MPI (the calling process alone), so that
//! the handle is valid wherever one is expected.
//!
//! Every group call is interposed; with no Isthmus group alive (the common
//! case) each is the MPI's own after one atomic load. When an operand is
//! Isthmus's, the MPI's native groups are read as lists of processes too
//! (through `MPI_Group_translate_ranks` to the job's world), the result is
//! computed as MPI defines it, and it is a native group again when all its
//! processes are this job's (so it works with every native call), an
//! Isthmus group otherwise. `MPI_Comm_create` of a merged communicator
//! takes Isthmus groups (`merged::create`). An Isthmus group given to a
//! call on a native communicator stands for the calling process alone, and
//! Fortran's group calls (Open MPI's call `PMPI_*` directly) see that too.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use isthmus_bridge::BridgeError;
use mpi::ffi;
use uuid::Uuid;

use crate::errors;
use crate::mpi_glue::{proc_null, MPI_Comm};
use crate::state::{BridgeComm, MergedComm, Place};

use mpi::ffi::MPI_Group;

/// A process a group holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proc {
    /// Of this job: its rank in this job's `MPI_COMM_WORLD`.
    Local(u32),
    /// Of another job: its engine's identity.
    Remote(Uuid),
}

static GROUPS: RwLock<Option<HashMap<usize, Arc<[Proc]>>>> = RwLock::new(None);
static COUNT: AtomicUsize = AtomicUsize::new(0);

fn key(g: MPI_Group) -> usize {
    g.0 as usize
}

/// The processes of `g` if it is an Isthmus group.
pub fn isthmus(g: MPI_Group) -> Option<Arc<[Proc]>> {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let m = GROUPS.read().unwrap_or_else(|p| p.into_inner());
    m.as_ref()?.get(&key(g)).cloned()
}

fn self_comm() -> MPI_Comm {
    // SAFETY: reading an immutable constant exported by rsmpi's C shim.
    unsafe { ffi::RSMPI_COMM_SELF }
}

fn world_group() -> Result<MPI_Group, c_int> {
    // SAFETY: reading a constant; an out-handle.
    unsafe {
        let mut g = ffi::RSMPI_GROUP_NULL;
        check(ffi::PMPI_Comm_group(ffi::RSMPI_COMM_WORLD, &mut g))?;
        Ok(g)
    }
}

fn check(rc: c_int) -> Result<(), c_int> {
    if rc == 0 {
        Ok(())
    } else {
        Err(rc)
    }
}

/// An MPI error code raised on `MPI_COMM_SELF` (errors not tied to a
/// communicator), as a result.
fn raise<T>(code: u32) -> Result<T, c_int> {
    Err(errors::raise(self_comm(), code as c_int))
}

/// Where each member of native group `g` sits in native group `to` (its
/// rank there, or `MPI_UNDEFINED`), in `g`'s order.
fn translate_all(g: MPI_Group, to: MPI_Group) -> Result<Vec<c_int>, c_int> {
    let mut n: c_int = 0;
    // SAFETY: a native group; an out-value.
    check(unsafe { ffi::PMPI_Group_size(g, &mut n) })?;
    let from: Vec<c_int> = (0..n).collect();
    let mut ranks = vec![0 as c_int; from.len()];
    if n > 0 {
        // SAFETY: `n` ranks in and out.
        check(unsafe {
            ffi::PMPI_Group_translate_ranks(g, n, from.as_ptr(), to, ranks.as_mut_ptr())
        })?;
    }
    Ok(ranks)
}

/// Where each member of native communicator `from` sits in native
/// communicator `to`, in `from`'s order (`MPI_UNDEFINED` if not there).
pub fn comm_ranks_in(from: MPI_Comm, to: MPI_Comm) -> Result<Vec<c_int>, c_int> {
    // SAFETY: a constant of the MPI library.
    let (mut a, mut b) = unsafe { (ffi::RSMPI_GROUP_NULL, ffi::RSMPI_GROUP_NULL) };
    // SAFETY: native communicators; out-handles, freed below.
    let r = check(unsafe { ffi::PMPI_Comm_group(from, &mut a) })
        .and_then(|()| check(unsafe { ffi::PMPI_Comm_group(to, &mut b) }))
        .and_then(|()| translate_all(a, b));
    for g in [&mut a, &mut b] {
        // SAFETY: reading a constant.
        if *g != unsafe { ffi::RSMPI_GROUP_NULL } {
            // SAFETY: our group.
            unsafe { ffi::PMPI_Group_free(g) };
        }
    }
    r
}

/// This job's processes as their ranks in its world say.
fn local_procs(world_ranks: Vec<c_int>) -> Result<Vec<Proc>, c_int> {
    world_ranks
        .into_iter()
        .map(|r| {
            u32::try_from(r)
                .map(Proc::Local)
                .or_else(|_| raise(ffi::MPI_ERR_GROUP))
        })
        .collect()
}

/// The ranks of a native group's processes in this job's world.
fn native_procs(g: MPI_Group) -> Result<Vec<Proc>, c_int> {
    let mut world = world_group()?;
    let ranks = translate_all(g, world);
    // SAFETY: our group.
    unsafe { ffi::PMPI_Group_free(&mut world) };
    local_procs(ranks?)
}

/// The processes of any group, Isthmus's or native.
fn procs(g: MPI_Group) -> Result<Arc<[Proc]>, c_int> {
    match isthmus(g) {
        Some(p) => Ok(p),
        None => native_procs(g).map(Arc::from),
    }
}

fn my_world_rank() -> Result<c_int, c_int> {
    let mut r: c_int = 0;
    // SAFETY: an out-value.
    check(unsafe { ffi::PMPI_Comm_rank(ffi::RSMPI_COMM_WORLD, &mut r) })?;
    Ok(r)
}

fn me() -> Result<Proc, c_int> {
    Ok(Proc::Local(u32::try_from(my_world_rank()?).unwrap_or(0)))
}

/// A group of `procs`: `MPI_GROUP_EMPTY`, a native group when they are all
/// this job's, an Isthmus group otherwise.
fn make(procs: Vec<Proc>) -> Result<MPI_Group, c_int> {
    // An empty group comes from the implementation's own constructor (an
    // include of no ranks): Open MPI counts references even on
    // MPI_GROUP_EMPTY, and the program frees what a constructor gave it.
    let local: Option<Vec<c_int>> = procs
        .iter()
        .map(|p| match p {
            Proc::Local(r) => c_int::try_from(*r).ok(),
            Proc::Remote(_) => None,
        })
        .collect();
    let mut world = world_group()?;
    let mut out = world;
    // An Isthmus group's handle: a real group of this MPI, the caller alone.
    let ranks = match &local {
        Some(ranks) => ranks.clone(),
        None => vec![my_world_rank()?],
    };
    let n = c_int::try_from(ranks.len()).unwrap_or(c_int::MAX);
    // SAFETY: `n` ranks of the world group; an out-handle.
    let rc = unsafe { ffi::PMPI_Group_incl(world, n, ranks.as_ptr(), &mut out) };
    // SAFETY: our group.
    unsafe { ffi::PMPI_Group_free(&mut world) };
    check(rc)?;
    if local.is_none() {
        let mut m = GROUPS.write().unwrap_or_else(|p| p.into_inner());
        if m.get_or_insert_with(HashMap::new)
            .insert(key(out), Arc::from(procs))
            .is_none()
        {
            COUNT.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(out)
}

/// Writes a result or returns its error.
fn give<T>(r: Result<T, c_int>, out: *mut T) -> c_int {
    match r {
        Ok(v) => {
            // SAFETY: the program's out-pointer (the calls' contract).
            unsafe { *out = v };
            0
        }
        Err(code) => code,
    }
}

/// The processes of a merged communicator, in its rank order.
pub fn of_merged(mc: &MergedComm) -> Result<Vec<Proc>, BridgeError> {
    // SAFETY: reading a constant.
    let world = unsafe { ffi::RSMPI_COMM_WORLD };
    let local = comm_ranks_in(mc.native, world)
        .and_then(local_procs)
        .map_err(|rc| {
            BridgeError::InvalidArgument(format!(
                "this job's side of the communicator could not be read (MPI error {rc})"
            ))
        })?;
    (0..mc.size())
        .map(|r| match mc.place(r) {
            Some(Place::Local(i)) => local.get(i as usize).copied().ok_or_else(|| {
                BridgeError::InvalidArgument(format!("local rank {i} out of range"))
            }),
            Some(Place::Remote(j)) => remote(&mc.inter, j),
            None => Err(BridgeError::InvalidArgument(format!(
                "merged rank {r} out of range"
            ))),
        })
        .collect()
}

fn remote(inter: &isthmus_bridge::InterComm, j: u32) -> Result<Proc, BridgeError> {
    inter
        .remote_process(j)
        .map(Proc::Remote)
        .ok_or_else(|| BridgeError::InvalidArgument(format!("remote rank {j} out of range")))
}

/// `MPI_Comm_group` of a merged communicator.
pub fn comm_group_merged(mc: &MergedComm, comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    let r = of_merged(mc)
        .map_err(|e| errors::fail(comm, "MPI_Comm_group", &e))
        .and_then(make);
    give(r, group)
}

/// `MPI_Comm_remote_group` of an Isthmus intercommunicator.
///
/// # Safety
/// As `MPI_Comm_remote_group`.
pub(crate) unsafe fn comm_remote_group(
    bc: &BridgeComm,
    comm: MPI_Comm,
    group: *mut MPI_Group,
) -> c_int {
    let r = (0..bc.inter.remote_size())
        .map(|j| remote(&bc.inter, j))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| errors::fail(comm, "MPI_Comm_remote_group", &e))
        .and_then(make);
    give(r, group)
}

/// Runs `f` on the processes of the operands when one of them is an
/// Isthmus group, else returns `None` (the MPI's own call then).
fn with_procs<T>(
    groups: &[MPI_Group],
    f: impl FnOnce(&[Arc<[Proc]>]) -> Result<T, c_int>,
) -> Option<Result<T, c_int>> {
    if !groups.iter().any(|&g| isthmus(g).is_some()) {
        return None;
    }
    Some(
        groups
            .iter()
            .map(|&g| procs(g))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|p| f(&p)),
    )
}

fn len(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// `MPI_Group_size`.
///
/// # Safety
/// As `MPI_Group_size`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_size(group: MPI_Group, size: *mut c_int) -> c_int {
    match with_procs(&[group], |p| Ok(p.first().map_or(0, |g| len(g.len())))) {
        Some(r) => give(r, size),
        // SAFETY: the program's arguments, passed on.
        None => unsafe { ffi::PMPI_Group_size(group, size) },
    }
}

/// `MPI_Group_rank`.
///
/// # Safety
/// As `MPI_Group_rank`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_rank(group: MPI_Group, rank: *mut c_int) -> c_int {
    let r = with_procs(&[group], |p| {
        let me = me()?;
        let g = p.first().map_or(&[][..], |g| &g[..]);
        Ok(g.iter()
            .position(|&q| q == me)
            .map_or(ffi::MPI_UNDEFINED as c_int, len))
    });
    match r {
        Some(r) => give(r, rank),
        // SAFETY: the program's arguments, passed on.
        None => unsafe { ffi::PMPI_Group_rank(group, rank) },
    }
}

/// `MPI_Group_translate_ranks`.
///
/// # Safety
/// As `MPI_Group_translate_ranks`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_translate_ranks(
    group1: MPI_Group,
    n: c_int,
    ranks1: *const c_int,
    group2: MPI_Group,
    ranks2: *mut c_int,
) -> c_int {
    let r = with_procs(&[group1, group2], |p| {
        let (Some(a), Some(b)) = (p.first(), p.get(1)) else {
            return raise(ffi::MPI_ERR_GROUP);
        };
        let n = usize::try_from(n).or_else(|_| raise(ffi::MPI_ERR_ARG))?;
        if n > 0 && (ranks1.is_null() || ranks2.is_null()) {
            return raise(ffi::MPI_ERR_ARG);
        }
        let given = if n == 0 {
            &[][..]
        } else {
            // SAFETY: `n` ranks in, not null (the call's contract).
            unsafe { std::slice::from_raw_parts(ranks1, n) }
        };
        let mut out = Vec::with_capacity(n);
        for &r in given {
            if r == proc_null() {
                out.push(r);
                continue;
            }
            let Some(q) = usize::try_from(r).ok().and_then(|r| a.get(r)) else {
                return raise(ffi::MPI_ERR_RANK);
            };
            out.push(
                b.iter()
                    .position(|x| x == q)
                    .map_or(ffi::MPI_UNDEFINED as c_int, len),
            );
        }
        // SAFETY: `n` ranks out (the call's contract).
        unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), ranks2, n) };
        Ok(())
    });
    match r {
        Some(Ok(())) => 0,
        Some(Err(code)) => code,
        // SAFETY: the program's arguments, passed on.
        None => unsafe { ffi::PMPI_Group_translate_ranks(group1, n, ranks1, group2, ranks2) },
    }
}

/// `MPI_Group_compare`.
///
/// # Safety
/// As `MPI_Group_compare`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_compare(
    group1: MPI_Group,
    group2: MPI_Group,
    result: *mut c_int,
) -> c_int {
    let r = with_procs(&[group1, group2], |p| {
        let (Some(a), Some(b)) = (p.first(), p.get(1)) else {
            return raise(ffi::MPI_ERR_GROUP);
        };
        Ok(if a[..] == b[..] {
            ffi::MPI_IDENT
        } else if a.len() == b.len() && a.iter().all(|x| b.contains(x)) {
            ffi::MPI_SIMILAR
        } else {
            ffi::MPI_UNEQUAL
        } as c_int)
    });
    match r {
        Some(r) => give(r, result),
        // SAFETY: the program's arguments, passed on.
        None => unsafe { ffi::PMPI_Group_compare(group1, group2, result) },
    }
}

/// The set operations, in MPI's order.
fn set_op(
    g1: MPI_Group,
    g2: MPI_Group,
    out: *mut MPI_Group,
    f: fn(&[Proc], &[Proc]) -> Vec<Proc>,
    native: unsafe extern "C" fn(MPI_Group, MPI_Group, *mut MPI_Group) -> c_int,
) -> c_int {
    let r = with_procs(&[g1, g2], |p| match (p.first(), p.get(1)) {
        (Some(a), Some(b)) => make(f(a, b)),
        _ => raise(ffi::MPI_ERR_GROUP),
    });
    match r {
        Some(r) => give(r, out),
        // SAFETY: the program's arguments, passed on.
        None => unsafe { native(g1, g2, out) },
    }
}

/// `MPI_Group_union`: the first group's processes, then the second's that
/// are not in the first.
///
/// # Safety
/// As `MPI_Group_union`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_union(
    g1: MPI_Group,
    g2: MPI_Group,
    out: *mut MPI_Group,
) -> c_int {
    set_op(
        g1,
        g2,
        out,
        |a, b| {
            a.iter()
                .chain(b.iter().filter(|x| !a.contains(x)))
                .copied()
                .collect()
        },
        ffi::PMPI_Group_union,
    )
}

/// `MPI_Group_intersection`: the first group's processes that are in the
/// second, in the first's order.
///
/// # Safety
/// As `MPI_Group_intersection`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_intersection(
    g1: MPI_Group,
    g2: MPI_Group,
    out: *mut MPI_Group,
) -> c_int {
    set_op(
        g1,
        g2,
        out,
        |a, b| a.iter().filter(|x| b.contains(x)).copied().collect(),
        ffi::PMPI_Group_intersection,
    )
}

/// `MPI_Group_difference`: the first group's processes that are not in the
/// second, in the first's order.
///
/// # Safety
/// As `MPI_Group_difference`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_difference(
    g1: MPI_Group,
    g2: MPI_Group,
    out: *mut MPI_Group,
) -> c_int {
    set_op(
        g1,
        g2,
        out,
        |a, b| a.iter().filter(|x| !b.contains(x)).copied().collect(),
        ffi::PMPI_Group_difference,
    )
}

/// The ranks `ranks` (`n` of them) of a group of `size`: each valid and
/// given once, or MPI's error.
fn chosen(size: usize, n: c_int, ranks: *const c_int) -> Result<Vec<usize>, c_int> {
    let n = usize::try_from(n).or_else(|_| raise(ffi::MPI_ERR_ARG))?;
    if n == 0 {
        return Ok(Vec::new());
    }
    if ranks.is_null() {
        return raise(ffi::MPI_ERR_ARG);
    }
    // SAFETY: `n` ranks (the call's contract).
    let given = unsafe { std::slice::from_raw_parts(ranks, n) };
    let mut seen = vec![false; size];
    given
        .iter()
        .map(|&r| {
            let i = usize::try_from(r).ok().filter(|&i| i < size);
            match i.and_then(|i| seen.get_mut(i).map(|s| (i, s))) {
                Some((i, s)) if !*s => {
                    *s = true;
                    Ok(i)
                }
                _ => raise(ffi::MPI_ERR_RANK),
            }
        })
        .collect()
}

/// The ranks of MPI's `(first, last, stride)` triplets, as `chosen`.
fn ranged(size: usize, n: c_int, ranges: *const [c_int; 3]) -> Result<Vec<usize>, c_int> {
    let n = usize::try_from(n).or_else(|_| raise(ffi::MPI_ERR_ARG))?;
    if n == 0 {
        return Ok(Vec::new());
    }
    if ranges.is_null() {
        return raise(ffi::MPI_ERR_ARG);
    }
    // SAFETY: `n` triplets (the call's contract).
    let given = unsafe { std::slice::from_raw_parts(ranges, n) };
    let mut ranks = Vec::new();
    for &[first, last, stride] in given {
        if stride == 0 {
            return raise(ffi::MPI_ERR_ARG);
        }
        let mut r = i64::from(first);
        let (last, stride) = (i64::from(last), i64::from(stride));
        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
            ranks.push(c_int::try_from(r).unwrap_or(-1));
            if ranks.len() > size {
                return raise(ffi::MPI_ERR_RANK);
            }
            r += stride;
        }
    }
    chosen(size, len(ranks.len()), ranks.as_ptr())
}

/// An inclusion or exclusion of chosen ranks.
fn subset(
    group: MPI_Group,
    out: *mut MPI_Group,
    pick: impl FnOnce(usize) -> Result<Vec<usize>, c_int>,
    include: bool,
) -> Option<c_int> {
    let r = with_procs(&[group], |p| {
        let g = p.first().map_or(&[][..], |g| &g[..]);
        let ranks = pick(g.len())?;
        let members = if include {
            ranks.iter().filter_map(|&i| g.get(i).copied()).collect()
        } else {
            g.iter()
                .enumerate()
                .filter(|(i, _)| !ranks.contains(i))
                .map(|(_, q)| *q)
                .collect()
        };
        make(members)
    })?;
    Some(give(r, out))
}

/// `MPI_Group_incl`.
///
/// # Safety
/// As `MPI_Group_incl`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_incl(
    group: MPI_Group,
    n: c_int,
    ranks: *const c_int,
    out: *mut MPI_Group,
) -> c_int {
    subset(group, out, |size| chosen(size, n, ranks), true)
        // SAFETY: the program's arguments, passed on.
        .unwrap_or_else(|| unsafe { ffi::PMPI_Group_incl(group, n, ranks, out) })
}

/// `MPI_Group_excl`.
///
/// # Safety
/// As `MPI_Group_excl`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_excl(
    group: MPI_Group,
    n: c_int,
    ranks: *const c_int,
    out: *mut MPI_Group,
) -> c_int {
    subset(group, out, |size| chosen(size, n, ranks), false)
        // SAFETY: the program's arguments, passed on.
        .unwrap_or_else(|| unsafe { ffi::PMPI_Group_excl(group, n, ranks, out) })
}

/// `MPI_Group_range_incl`.
///
/// # Safety
/// As `MPI_Group_range_incl`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_incl(
    group: MPI_Group,
    n: c_int,
    ranges: *mut [c_int; 3],
    out: *mut MPI_Group,
) -> c_int {
    subset(group, out, |size| ranged(size, n, ranges), true)
        // SAFETY: the program's arguments, passed on.
        .unwrap_or_else(|| unsafe { ffi::PMPI_Group_range_incl(group, n, ranges, out) })
}

/// `MPI_Group_range_excl`.
///
/// # Safety
/// As `MPI_Group_range_excl`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_excl(
    group: MPI_Group,
    n: c_int,
    ranges: *mut [c_int; 3],
    out: *mut MPI_Group,
) -> c_int {
    subset(group, out, |size| ranged(size, n, ranges), false)
        // SAFETY: the program's arguments, passed on.
        .unwrap_or_else(|| unsafe { ffi::PMPI_Group_range_excl(group, n, ranges, out) })
}

/// `MPI_Group_free`: an Isthmus group's list goes with its handle.
///
/// # Safety
/// As `MPI_Group_free`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_free(group: *mut MPI_Group) -> c_int {
    if !group.is_null() && COUNT.load(Ordering::Relaxed) > 0 {
        // SAFETY: the program's handle.
        let k = key(unsafe { *group });
        let mut m = GROUPS.write().unwrap_or_else(|p| p.into_inner());
        if m.as_mut().and_then(|m| m.remove(&k)).is_some() {
            COUNT.fetch_sub(1, Ordering::Relaxed);
        }
    }
    // SAFETY: the program's handle (or our placeholder behind it).
    unsafe { ffi::PMPI_Group_free(group) }
}

/// Where each member of `group` sits in merged communicator `mc` (its merged
/// rank), in the group's order, for `MPI_Comm_create`; an error if one is
/// not in it.
pub fn merged_ranks(mc: &MergedComm, group: MPI_Group) -> Result<Vec<u32>, BridgeError> {
    let all = of_merged(mc)?;
    let members = procs(group).map_err(|rc| {
        BridgeError::InvalidArgument(format!("the group could not be read (MPI error {rc})"))
    })?;
    members
        .iter()
        .map(|q| {
            all.iter()
                .position(|x| x == q)
                .and_then(|r| u32::try_from(r).ok())
                .ok_or_else(|| {
                    BridgeError::InvalidArgument(
                        "the group holds a process that is not in the communicator".into(),
                    )
                })
        })
        .collect()
}

include!(concat!(env!("OUT_DIR"), "/shells_group.rs"));

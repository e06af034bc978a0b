//! The native reduce step of a job whose MPI reduces large buffers slowly:
//! a binomial tree of the job's own point-to-point messages, each node
//! combining what its children send with `local_reduce`'s loops.
//!
//! MPICH 4.0's `MPI_Ireduce` (and its blocking `MPI_Reduce`) of 1 MiB of
//! doubles between two ranks of one host: 185-215 µs, where the transfer
//! alone (UCX's single copy) and a plain loop take 107 — and Open MPI's
//! own reduce 99. Its reduction keeps temporary buffers and runs its
//! slower `MPI_Reduce_local` paths (see `local_reduce`). Only the
//! reductions those loops compute (SUM and PROD of floating types, every
//! predefined one of the 32- and 64-bit integer types, integer MAX and
//! MIN: all commutative, so any tree order is MPI's) and only at sizes
//! where the transfer dominates, in jobs of two ranks (where the tree is
//! one message; see [`TREE_MAX_RANKS`]), take the tree; the rest stays
//! the MPI's.
//! A tree's messages travel on the step's communicator, always a private
//! native duplicate (the collectives' native side), under a tag of their
//! own: nothing of the program's can match them.

use std::ffi::{c_int, c_void};

use isthmus_bridge::native::run;
use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Op};

use crate::collbuf::{is_in_place, Extents, Scratch};
use crate::local_reduce::{own_loop_takes, reduce_local};

/// The tag of the tree's messages on the private native side.
const TAG_TREE: c_int = 0x1573;

/// From this many bytes on the tree is taken (below, the MPI's own reduce
/// is latency-tuned and the transfer does not dominate).
pub(crate) const TREE_MIN_BYTES: usize = 64 << 10;

/// The most ranks a job may have for the tree: with four ranks on two
/// cores MPICH's own (Rabenseifner's reduce-scatter and gather, less data
/// on any one rank) beat it (an intercommunicator 1 MiB Allreduce on
/// 4 + 4: 4.6-6.2 ms with MPICH's, 7.7-12 with the tree); with two, the
/// tree is one message and one loop (2 + 2: 930-2150 µs → 644-774).
const TREE_MAX_RANKS: c_int = 2;

/// Whether the tree reduces `count` elements of `dt` with `op` on `comm`:
/// a reduction `local_reduce`'s loops compute, of at least
/// [`TREE_MIN_BYTES`], in a job of at most [`TREE_MAX_RANKS`].
pub(crate) fn takes(count: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> bool {
    let Some(elem) = own_loop_takes(dt, op) else {
        return false;
    };
    let mut size = 0;
    // SAFETY: a valid communicator (the step's); one out-value.
    let rc = unsafe { ffi::PMPI_Comm_size(comm, &mut size) };
    rc == 0
        && size <= TREE_MAX_RANKS
        && usize::try_from(count).is_ok_and(|n| n.saturating_mul(elem) >= TREE_MIN_BYTES)
}

/// `MPI_Reduce(send, recv, count, dt, op, root, comm)` by the tree, for a
/// reduction [`takes`] accepted. Returns MPI's error code.
///
/// # Safety
/// As `MPI_Reduce`, on a communicator no other thread uses meanwhile and
/// no message of the program's travels on (the collectives' native side).
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn reduce(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let (mut rank, mut size) = (0, 0);
    // SAFETY: a valid communicator (the caller's contract); two out-values.
    let rc = unsafe { ffi::PMPI_Comm_rank(comm, &mut rank) | ffi::PMPI_Comm_size(comm, &mut size) };
    if rc != 0 {
        return rc;
    }
    // SAFETY: forwarded (this function's contract).
    match unsafe { tree(send, recv, count, dt, op, (rank, size, root), comm) } {
        Ok(()) => 0,
        Err(rc) => rc,
    }
}

/// The tree's steps at this rank (`rank` of the job's `size`, to `root`);
/// `Err` carries MPI's error code.
///
/// # Safety
/// As [`reduce`]'s.
unsafe fn tree(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: MPI_Op,
    (rank, size, root): (c_int, c_int, c_int),
    comm: MPI_Comm,
) -> Result<(), c_int> {
    let ok = |rc: c_int| if rc == 0 { Ok(()) } else { Err(rc) };
    let (Ok(n), Ok(e), true) = (usize::try_from(count), Extents::of(dt), size > 0) else {
        return Err(ffi::MPI_ERR_ARG as c_int);
    };
    let scratch = |slot: &mut Option<Scratch>| match slot {
        Some(s) => Ok(s.ptr()),
        None => Scratch::new(n, &e)
            .map(|s| slot.insert(s).ptr())
            .map_err(|_| ffi::MPI_ERR_NO_MEM as c_int),
    };
    let vrank = (rank - root).rem_euclid(size);
    let real = |v: c_int| (v + root) % size;
    // The partial result so far: the input alone until a child's came in.
    // At the root it builds up in `recv` (in place: the input is there).
    let in_place = vrank == 0 && is_in_place(send);
    let input: *const c_void = if in_place { recv } else { send };
    let (mut acc_scratch, mut tmp_scratch) = (None, None);
    let mut acc: Option<*mut c_void> = in_place.then_some(recv);
    let mut mask = 1;
    while mask < size {
        if vrank & mask != 0 {
            let partial = acc.map_or(input, |a| a.cast_const());
            // SAFETY: `partial` holds `count` elements (the input, or a
            // buffer this loop filled); the request is waited for here.
            return ok(unsafe {
                run(|req| {
                    ffi::PMPI_Isend(partial, count, dt, real(vrank - mask), TAG_TREE, comm, req)
                })
            });
        }
        let child = vrank + mask;
        if child < size {
            // The first child's partial goes where ours builds up, and
            // ours is combined into it; a later child's into scratch,
            // combined into what built up.
            let (into, from, other) = match acc {
                None => {
                    let a = if vrank == 0 {
                        recv
                    } else {
                        scratch(&mut acc_scratch)?
                    };
                    (a, a, input)
                }
                Some(a) => {
                    let t = scratch(&mut tmp_scratch)?;
                    (a, t, t.cast_const())
                }
            };
            acc = Some(into);
            // SAFETY: `from` has room for `count` elements (the root's
            // receive buffer, or scratch); waited for here.
            ok(unsafe {
                run(|req| ffi::PMPI_Irecv(from, count, dt, real(child), TAG_TREE, comm, req))
            })?;
            // SAFETY: both hold `count` elements of `dt`.
            ok(unsafe { reduce_local(other, into, count, dt, op) })?;
        }
        mask <<= 1;
    }
    // The root of a job of one: the result is its input.
    if acc.is_none() {
        let bytes = e.span(n).map_err(|_| ffi::MPI_ERR_COUNT as c_int)?;
        // SAFETY: the input's and the root's buffer hold `n` elements of
        // a gapless predefined type (what `takes` accepted), `bytes` in
        // all, distinct (not in place).
        unsafe { std::ptr::copy_nonoverlapping(send.cast::<u8>(), recv.cast::<u8>(), bytes) };
    }
    Ok(())
}

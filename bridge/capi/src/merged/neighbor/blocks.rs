//! The blocks of a neighbourhood collective: where each lies in the
//! program's buffers and which neighbour it goes to or comes from, laid
//! out from the call's arguments over `topo::neighbors`' lists, for the
//! blocking exchange (`now`) and the nonblocking one
//! (`merged::nonblocking::neighbor`) alike.

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::collbuf::{array, elements, offset, Extents};
use crate::merged::wire::Fail;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::state::{MergedComm, Place};

/// The tag of the neighbourhood collectives' native messages (plus the
/// neighbour's tag, 0 or 1): apart from every other native step's.
pub(crate) const NATIVE_TAG: c_int = 0x4e42;

/// One block of an exchange: `count` elements of `dt` at `buf`, to or from
/// merged rank `peer` (or `MPI_PROC_NULL`) with the neighbour's tag.
pub(crate) struct Block {
    pub(crate) peer: c_int,
    pub(crate) tag: i32,
    pub(crate) buf: *mut c_void,
    pub(crate) count: c_int,
    pub(crate) dt: MPI_Datatype,
}

/// Where merged rank `peer` lives.
pub(crate) fn place(mc: &MergedComm, peer: c_int) -> Result<Place, Fail> {
    u32::try_from(peer)
        .ok()
        .and_then(|p| mc.place(p))
        .ok_or(Fail::Mpi(ffi::MPI_ERR_RANK as c_int))
}

/// Blocks at `base`, the i-th `counts[i]` elements of `dt` at `at[i]`
/// (`at` in the type's extents) for neighbour i.
pub(super) fn laid_out(
    base: *const c_void,
    who: &[(c_int, i32)],
    counts: &[c_int],
    at: &[usize],
    dt: MPI_Datatype,
) -> Result<Vec<Block>, Fail> {
    let e = Extents::of(dt)?;
    who.iter()
        .zip(counts.iter().zip(at))
        .map(|(&(peer, tag), (&count, &k))| {
            Ok(Block {
                peer,
                tag,
                buf: e.at(base, k)?,
                count,
                dt,
            })
        })
        .collect()
}

/// The program's array at `p` with one entry per neighbour (`collbuf::array`;
/// with no neighbours MPI reads none, so any pointer will do).
///
/// # Safety
/// A non-null `p` addresses `n` entries that stay unchanged during the call.
pub(super) unsafe fn per_neighbor<'a, T>(p: *const T, n: usize) -> Result<&'a [T], Fail> {
    if n == 0 {
        return Ok(&[]);
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { array(p, n, "a per-neighbour array") }?)
}

/// Displacements in elements, each checked non-negative.
pub(super) fn displs(d: &[c_int]) -> Result<Vec<usize>, Fail> {
    d.iter().map(|&x| elements(x).map_err(Fail::from)).collect()
}

/// Where the blocks of one count lie in their buffer.
pub(super) enum Spread {
    /// The i-th `i * count` elements in.
    Consecutive,
    /// All the one block at the start (an allgather's send).
    Same,
}

/// Blocks of `count` elements of `dt` at `base` for each of `who`.
pub(super) fn uniform(
    base: *const c_void,
    who: &[(c_int, i32)],
    count: c_int,
    dt: MPI_Datatype,
    spread: Spread,
) -> Result<Vec<Block>, Fail> {
    let c = elements(count)?;
    let at = (0..who.len())
        .map(|i| match spread {
            Spread::Consecutive => i
                .checked_mul(c)
                .ok_or(Fail::Mpi(ffi::MPI_ERR_COUNT as c_int)),
            Spread::Same => Ok(0),
        })
        .collect::<Result<Vec<usize>, Fail>>()?;
    laid_out(base, who, &vec![count; who.len()], &at, dt)
}

/// Blocks of `MPI_Neighbor_alltoallw`: each its own type, at a byte
/// displacement.
pub(super) fn typed(
    base: *const c_void,
    who: &[(c_int, i32)],
    counts: &[c_int],
    at: &[ffi::MPI_Aint],
    types: &[MPI_Datatype],
) -> Result<Vec<Block>, Fail> {
    who.iter()
        .zip(counts.iter().zip(at.iter().zip(types)))
        .map(|(&(peer, tag), (&count, (&d, &dt)))| {
            let bytes = usize::try_from(d).map_err(|_| Fail::Mpi(ffi::MPI_ERR_ARG as c_int))?;
            Ok(Block {
                peer,
                tag,
                buf: offset(base, 1, Some(bytes))?,
                count,
                dt,
            })
        })
        .collect()
}

/// Which way a block moves.
#[derive(Clone, Copy)]
pub(crate) enum Way {
    In,
    Out,
}

/// Starts `b`'s message from (`In`) or to (`Out`) rank `local` of this job
/// on `comm`, a native communicator of the job's, into `request`: its
/// `PMPI_Irecv` or `PMPI_Isend` with the neighbourhood collectives' tag.
///
/// # Safety
/// The block is writable (`In`), or readable and unchanged (`Out`), until
/// the request completes; `request` is writable.
pub(crate) unsafe fn start_native(
    b: &Block,
    way: Way,
    local: u32,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let (rank, tag) = (local as c_int, NATIVE_TAG + b.tag);
    // SAFETY: this function's contract.
    unsafe {
        match way {
            Way::In => ffi::PMPI_Irecv(b.buf, b.count, b.dt, rank, tag, comm, request),
            Way::Out => ffi::PMPI_Isend(b.buf, b.count, b.dt, rank, tag, comm, request),
        }
    }
}

//! `MPI_Comm_split` of a merged communicator. Each color's ranks are
//! ordered by key, then merged rank, as MPI says. A color whose ranks live
//! in one job is that job's native communicator (split from the merged
//! communicator's handle), at full native speed. A color whose ranks live
//! in both jobs is a new merged communicator: its handle is the same native
//! split (this job's ranks of the color, in the new order), with an
//! Isthmus intercommunicator between the two jobs' subsets
//! (`InterComm::subset`, a context both jobs derive alike from the merged
//! communicator's, the split's count and the color, with no message) and
//! the new order, which may interleave the jobs.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use mpi::ffi;

use super::coll::allgather;
use super::comm::{adopt, contexts, native_side, raise};
use super::wire::{mpi, Fail};
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::state::{MergedComm, Order, Place};

/// Every rank's (color, key), by merged rank (undefined as -1: the two
/// implementations' `MPI_UNDEFINED` need not agree; MPI's colors are never
/// negative).
fn colors(
    mc: &MergedComm,
    comm: MPI_Comm,
    color: c_int,
    key: c_int,
) -> Result<Vec<[c_int; 2]>, c_int> {
    let mine: [c_int; 2] = [
        if color == ffi::MPI_UNDEFINED as c_int {
            -1
        } else {
            color
        },
        key,
    ];
    let mut all = vec![[0 as c_int; 2]; mc.size() as usize];
    // SAFETY: two ints from each rank into `all` (2 × size ints); MPI_INT on both sides.
    let rc = unsafe {
        let int = ffi::RSMPI_INT32_T;
        allgather(
            mc,
            mine.as_ptr().cast(),
            2,
            int,
            all.as_mut_ptr().cast(),
            2,
            int,
            comm,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    Ok(all)
}

/// The merged ranks of `color`, in the new communicator's order.
fn members(all: &[[c_int; 2]], color: c_int) -> Vec<u32> {
    let mut m: Vec<(c_int, u32)> = all
        .iter()
        .enumerate()
        .filter(|(_, ck)| ck[0] == color)
        .filter_map(|(r, ck)| Some((ck[1], u32::try_from(r).ok()?)))
        .collect();
    m.sort_unstable();
    m.into_iter().map(|(_, r)| r).collect()
}

/// Makes the native split `handle` (this job's ranks of the color, in the
/// new order) a merged communicator over `members` (merged ranks of `mc`,
/// in the new order), its intercommunicator derived under `key`.
fn spanning(mc: &MergedComm, handle: MPI_Comm, members: &[u32], key: &[u8]) -> Result<(), Fail> {
    let mut places = Vec::with_capacity(members.len());
    let (mut locals, mut remotes) = (Vec::new(), Vec::new());
    let mut me = None;
    for &m in members {
        match mc.place(m) {
            Some(Place::Local(i)) => {
                if i == mc.inter.rank() {
                    me = Some(locals.len());
                }
                places.push(Place::Local(locals.len() as u32));
                locals.push(i);
            }
            Some(Place::Remote(j)) => {
                places.push(Place::Remote(remotes.len() as u32));
                remotes.push(j);
            }
            None => return Err(Fail::Mpi(ffi::MPI_ERR_RANK as c_int)),
        }
    }
    let me = me.ok_or(Fail::Mpi(ffi::MPI_ERR_RANK as c_int))? as u32;
    let inter = mc.inter.subset(key, me, locals.len() as u32, &remotes)?;
    let ctx = contexts(inter)?;
    let native = native_side(handle)?;
    adopt(
        handle,
        native,
        ctx,
        Order::of(places, me),
        (mc.local_group.clone(), mc.remote_group.clone()),
    )?;
    Ok(())
}

/// `MPI_Comm_split` on a merged communicator.
///
/// # Safety
/// As `MPI_Comm_split`.
pub(crate) unsafe fn comm_split(
    mc: &MergedComm,
    comm: MPI_Comm,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Comm_split";
    let all = match colors(mc, comm, color, key) {
        Ok(a) => a,
        Err(code) => return code,
    };
    // Every rank of both jobs counts the split, so both derive alike.
    let n = mc.derived.fetch_add(1, Ordering::Relaxed) + 1;
    let mine = all.get(mc.rank() as usize).map_or(-1, |ck| ck[0]);
    let members = if mine < 0 {
        Vec::new()
    } else {
        members(&all, mine)
    };
    let remote = |m: &u32| matches!(mc.place(*m), Some(Place::Remote(_)));
    let spans = members.iter().any(remote) && !members.iter().all(remote);
    let native_color = if mine < 0 {
        ffi::MPI_UNDEFINED as c_int
    } else {
        mine
    };
    let mut out = comm_null();
    // SAFETY: the program's handle (this job's side of it), our out-handle;
    // every rank of this job calls it.
    let r = mpi(unsafe { ffi::PMPI_Comm_split(comm, native_color, key, &mut out) });
    if let Err(f) = r {
        return raise(comm, CALL, f);
    }
    if spans {
        let mut k = n.to_le_bytes().to_vec();
        k.extend_from_slice(b"split");
        k.extend_from_slice(&mine.to_le_bytes());
        if let Err(f) = spanning(mc, out, &members, &k) {
            // SAFETY: our split, never handed out.
            unsafe { ffi::PMPI_Comm_free(&mut out) };
            // SAFETY: the program's out-pointer.
            unsafe { *newcomm = comm_null() };
            return raise(comm, CALL, f);
        }
    }
    // SAFETY: the program's out-pointer.
    unsafe { *newcomm = out };
    0
}

#[cfg(test)]
mod tests {
    use super::members;

    #[test]
    fn a_colors_members_go_by_key_then_old_rank() {
        let all = [[0, 5], [1, 0], [0, 1], [0, 5], [-1, 0], [0, -2]];
        assert_eq!(members(&all, 0), vec![5, 2, 0, 3]);
        assert_eq!(members(&all, 1), vec![1]);
        assert!(members(&all, 2).is_empty());
    }
}

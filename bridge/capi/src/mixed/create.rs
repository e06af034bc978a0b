//! Making a mixed intercommunicator at every member of both groups, once
//! the leaders swapped their groups over the merged `peer_comm` (every
//! member must be in it: its rank there names it; `intercomm_create`).
//!
//! The union of both groups, ordered by rank in `peer_comm`, is split by
//! job: this job's processes of both groups get one native communicator
//! (the handle: a native intercommunicator between this job's part of
//! each group over `peer_comm`'s native side, merged; or a duplicate of
//! this job's part when the other group has none here), and an
//! intercommunicator to the other job's processes (a subset of
//! `peer_comm`'s, keyed by both leaders' nonces). The local group gets its
//! own private intracommunicator for the collectives' local steps.

use std::ffi::c_int;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::merged::{duplicate, free_native, mpi, Fail};
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::state::{self, LocalGroup, Member, MergedComm, MixedColl, MixedInter, Order, Place};

fn bad(why: impl Into<String>) -> Fail {
    Fail::Bridge(BridgeError::InvalidArgument(why.into()))
}

/// The members of both groups in the union's order (by rank in
/// `peer_comm`), their places still `peer_comm`'s, with those ranks.
fn union(peer: &MergedComm, local: &[u32], remote: &[u32]) -> Result<Vec<(u32, Member)>, Fail> {
    let mut all = Vec::with_capacity(local.len() + remote.len());
    for (ours, list) in [(true, local), (false, remote)] {
        for (rank, &q) in list.iter().enumerate() {
            let place = peer.place(q).ok_or_else(|| {
                bad(format!(
                    "rank {q} of peer_comm (size {}) named by a leader",
                    peer.size()
                ))
            })?;
            let rank = u32::try_from(rank).map_err(|_| bad("groups too large"))?;
            all.push((q, Member { ours, rank, place }));
        }
    }
    all.sort_by_key(|(q, _)| *q);
    if all.windows(2).any(|w| matches!(w, [a, b] if a.0 == b.0)) {
        return Err(bad(
            "the local and remote groups overlap (MPI requires them disjoint)",
        ));
    }
    Ok(all)
}

/// The local group's private intracommunicator and its native part (this
/// job's members, in the group's order).
fn local_group(local_comm: MPI_Comm) -> Result<(LocalGroup, MPI_Comm), Fail> {
    match state::merged_comm(local_comm) {
        Some(lmc) => {
            let c = crate::merged::private_dup(&lmc, local_comm)?;
            Ok((LocalGroup::Merged(c), c))
        }
        None => {
            let c = duplicate(local_comm)?;
            Ok((LocalGroup::Native(c), c))
        }
    }
}

/// The native communicator of this job's members of both groups: over
/// `peer`'s native side between this job's part of each group (its first
/// member in the group's order leads), merged; a duplicate of `ours` when
/// the other group has no member here.
fn job_handle(
    peer: &MergedComm,
    ours: MPI_Comm,
    all: &[(u32, Member)],
    tag: c_int,
) -> Result<MPI_Comm, Fail> {
    let first = |mine: bool| {
        all.iter()
            .filter(|(_, m)| m.ours == mine && matches!(m.place, Place::Local(_)))
            .min_by_key(|(_, m)| m.rank)
            .map(|(q, m)| (*q, m.place))
    };
    let (Some((my_first, _)), theirs) = (first(true), first(false)) else {
        return Err(bad("this process is not in its own group's list"));
    };
    let Some((their_first, Place::Local(leader))) = theirs else {
        return duplicate(ours);
    };
    let leader = c_int::try_from(leader).map_err(|_| bad("rank too large"))?;
    let mut ic = comm_null();
    // SAFETY: `ours` is this job's part of our group (its rank 0 leads);
    // `peer.native` holds both leaders; out-handle.
    mpi(unsafe { ffi::PMPI_Intercomm_create(ours, 0, peer.native, leader, tag, &mut ic) })?;
    let mut handle = comm_null();
    // The part with the lower first rank in peer_comm comes first.
    let high = c_int::from(my_first > their_first);
    // SAFETY: our native intercommunicator; an out-handle.
    let r = mpi(unsafe { ffi::PMPI_Intercomm_merge(ic, high, &mut handle) });
    free_native(ic);
    r.map(|()| handle)
}

/// The mixed intercommunicator of this process, from `peer` (the merged
/// `peer_comm`), both groups as ranks of it (`local` in the local group's
/// order, `remote` in the remote group's), the leaders' nonces (lower
/// first) and the program's tag. Collective over both groups.
pub fn create(
    local_comm: MPI_Comm,
    peer: &MergedComm,
    (local, remote): (&[u32], &[u32]),
    nonces: (u64, u64),
    tag: c_int,
) -> Result<MPI_Comm, Fail> {
    let all = union(peer, local, remote)?;
    let rank = match state::merged_comm(local_comm) {
        Some(lmc) => lmc.rank(),
        None => {
            let mut r: c_int = 0;
            // SAFETY: the program's communicator; an out-value.
            mpi(unsafe { ffi::PMPI_Comm_rank(local_comm, &mut r) })?;
            u32::try_from(r).map_err(|_| bad("negative rank"))?
        }
    };
    let (group, ours) = local_group(local_comm)?;
    let made = job_handle(peer, ours, &all, tag).and_then(|handle| {
        finish(peer, &all, (rank, local.len()), nonces, handle).inspect_err(|_| free_native(handle))
    });
    match made {
        Ok((handle, mx)) => {
            state::add_mixed(
                handle,
                MixedInter {
                    local: group,
                    local_group: peer.local_group.clone(),
                    remote_group: peer.remote_group.clone(),
                    ..mx
                },
            );
            Ok(handle)
        }
        Err(f) => {
            crate::mixed::local::free(&group);
            Err(f)
        }
    }
}

/// The places in the handle and the new contexts, once the handle exists.
fn finish(
    peer: &MergedComm,
    all: &[(u32, Member)],
    (rank, local_size): (u32, usize),
    (low, high): (u64, u64),
    handle: MPI_Comm,
) -> Result<(MPI_Comm, MixedInter), Fail> {
    let in_handle = crate::group::comm_ranks_in(peer.native, handle).map_err(Fail::Mpi)?;
    let mut me = None;
    let (mut here, mut there) = (0u32, Vec::new());
    let mut members = Vec::with_capacity(all.len());
    for (_, m) in all {
        let place = match m.place {
            Place::Local(n) => {
                let h = in_handle
                    .get(n as usize)
                    .and_then(|&h| u32::try_from(h).ok())
                    .ok_or_else(|| bad("a member of this job is not in the new handle"))?;
                if m.ours && m.rank == rank {
                    me = Some(here);
                }
                here += 1;
                Place::Local(h)
            }
            Place::Remote(j) => {
                there.push(j);
                Place::Remote(u32::try_from(there.len() - 1).unwrap_or(u32::MAX))
            }
        };
        members.push(Member { place, ..*m });
    }
    let me = me.ok_or_else(|| bad("this process is not in its own group's list"))?;
    let mut key = b"mixed".to_vec();
    key.extend_from_slice(&low.to_le_bytes());
    key.extend_from_slice(&high.to_le_bytes());
    let inter = peer.inter.subset(&key, me, here, &there)?;
    let (inter, coll_inter) = crate::merged::contexts(inter)?;
    let mut remote: Vec<&Member> = members.iter().filter(|m| !m.ours).collect();
    remote.sort_by_key(|m| m.rank);
    let peers = Order::of(remote.iter().map(|m| m.place).collect(), 0);
    let nbc = crate::merged::hidden_side(&coll_inter, ("", ""))?;
    let native = duplicate(handle)?;
    let local_size = u32::try_from(local_size).map_err(|_| bad("groups too large"))?;
    Ok((
        handle,
        MixedInter {
            peers: peers.clone(),
            inter,
            coll: MixedColl {
                peers,
                inter: coll_inter,
                native,
            },
            nbc,
            rank,
            local_size,
            // Replaced by the caller (it keeps the group's ownership).
            local: LocalGroup::Native(comm_null()),
            union: members.into(),
            local_group: String::new(),
            remote_group: String::new(),
            derived: Default::default(),
            three_jobs: false,
        },
    ))
}

//! `MPI_Intercomm_create` whose peer communicator is a merged one (the
//! merge of an Isthmus intercommunicator, or anything derived from it):
//! when each group is one job's and the two are different jobs, the new
//! communicator is an Isthmus intercommunicator between them, as MPI's own
//! would be; when a group spans both jobs (its `local_comm` is a merged
//! communicator), a mixed intercommunicator (`crate::mixed`).
//!
//! `peer_comm` is significant only at the leader, so only the leader can
//! tell which case a call is: it broadcasts its verdict over `local_comm`
//! (natively, or the merged broadcast when `local_comm` is merged) before
//! anything else, and every rank goes the same way. With a merged
//! `peer_comm` the leaders first swap their groups (each member's rank in
//! `peer_comm`: every member must be in it) and a random nonce over
//! `peer_comm` with the program's tag, as MPI's leaders do (natively when
//! both leaders are in one job, over the bridge otherwise). Then: both
//! groups in this job — the MPI's own call on `peer_comm`'s native side;
//! each group in one job, the two in different jobs — every member derives
//! the new intercommunicator from the merged one (`InterComm::subset`,
//! keyed by both nonces so that two creates between the same groups never
//! share a context), found by its context among the merged communicators
//! it belongs to, its native handle a duplicate of `local_comm`; a group
//! in both jobs — a mixed intercommunicator (`crate::mixed::create`).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::{BridgeError, Source, Tag};
use mpi::ffi;

use crate::errors;
use crate::mpi_glue::{comm_null, MPI_Comm, MPI_Datatype};
use crate::state::{
    add_comm, bridge_comm, merged_comm, merged_with_context, mixed_comm, BridgeComm, MergedComm,
    Place,
};

const CALL: &str = "MPI_Intercomm_create";

/// What the leader found, broadcast first: the MPI's own call, or the
/// bridge (with how long the lists that follow are), or a failure, or a
/// mixed intercommunicator (a group spans both jobs).
const NATIVE: i64 = 0;
const BRIDGE: i64 = 1;
const FAILED: i64 = 2;
const MIXED: i64 = 3;

/// The leader's verdict and, across jobs, what every member needs:
/// `[mode, context, nonce_low, nonce_high, local_len, remote_len]`.
type Header = [i64; 6];

/// A broadcast over `local_comm` from `root`: the merged body on a merged
/// communicator, the MPI's own on a native one.
///
/// # Safety
/// As `MPI_Bcast`.
unsafe fn bcast_local(
    local_comm: MPI_Comm,
    local_mc: Option<&Arc<MergedComm>>,
    (buf, n, dt): (*mut c_void, c_int, MPI_Datatype),
    root: c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        match local_mc {
            Some(mc) => crate::merged::bcast(mc, buf, n, dt, root, local_comm),
            None => ffi::PMPI_Bcast(buf, n, dt, root, local_comm),
        }
    }
}

/// `MPI_Intercomm_create`.
///
/// # Safety
/// As `MPI_Intercomm_create`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create(
    local_comm: MPI_Comm,
    local_leader: c_int,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    if bridge_comm(local_comm).is_some() || mixed_comm(local_comm).is_some() {
        // An intercommunicator is no local group (MPI asks for an intra-).
        return errors::refuse(local_comm, CALL);
    }
    let local_mc = merged_comm(local_comm);
    let mut rank: c_int = -1;
    match &local_mc {
        Some(mc) => rank = c_int::try_from(mc.rank()).unwrap_or(c_int::MAX),
        None => {
            // SAFETY: the program's communicator; `rank` an out-value.
            let rc = unsafe { ffi::PMPI_Comm_rank(local_comm, &mut rank) };
            if rc != 0 {
                return errors::raise(local_comm, rc);
            }
        }
    }
    let leader = rank == local_leader;
    let mut header: Header = [NATIVE, 0, 0, 0, 0, 0];
    let mut lists: Vec<u32> = Vec::new();
    let mut peer = peer_comm;
    let mut peer_leader = remote_leader;
    let mut failure = None;
    if leader {
        match lead(
            local_comm,
            local_mc.is_some(),
            peer_comm,
            remote_leader,
            tag,
        ) {
            Ok(Lead::Native(p, r)) => (peer, peer_leader) = (p, r),
            Ok(Lead::Bridge(h, l)) => (header, lists) = (h, l),
            Err(code) => {
                header[0] = FAILED;
                failure = Some(code);
            }
        }
    }
    // SAFETY: six i64 from the leader to every member of local_comm.
    let rc = unsafe {
        bcast_local(
            local_comm,
            local_mc.as_ref(),
            (header.as_mut_ptr().cast(), 6, ffi::RSMPI_INT64_T),
            local_leader,
        )
    };
    if rc != 0 {
        return errors::raise(local_comm, rc);
    }
    match header[0] {
        NATIVE => {
            // SAFETY: the program's arguments (the merged peer_comm, at the
            // leader, as its native side and rank).
            unsafe {
                ffi::PMPI_Intercomm_create(
                    local_comm,
                    local_leader,
                    peer,
                    peer_leader,
                    tag,
                    newintercomm,
                )
            }
        }
        mode @ (BRIDGE | MIXED) => {
            // SAFETY: the program's out-pointer.
            unsafe { *newintercomm = comm_null() };
            let r = if mode == BRIDGE {
                member(local_comm, local_leader, leader, header, lists)
            } else {
                let how = (local_leader, leader, tag);
                mixed_member(local_comm, local_mc.as_ref(), how, header, lists)
            };
            match r {
                Ok(c) => {
                    // SAFETY: as above.
                    unsafe { *newintercomm = c };
                    0
                }
                Err(code) => code,
            }
        }
        _ => {
            // SAFETY: the program's out-pointer.
            unsafe { *newintercomm = comm_null() };
            failure.unwrap_or_else(|| {
                errors::fail(
                    local_comm,
                    CALL,
                    &BridgeError::Protocol(
                        "the local leader could not reach the other leader".into(),
                    ),
                )
            })
        }
    }
}

/// What the leader decided.
enum Lead {
    /// The MPI's own call, with this peer communicator and remote leader.
    Native(MPI_Comm, c_int),
    /// Across jobs: the header and the two groups (this one's, then the
    /// other's), as every member gets them.
    Bridge(Header, Vec<u32>),
}

/// At the leader: the case, and with a merged `peer_comm` the swap with
/// the other leader: `[nonce, members...]` each way, the members as ranks
/// of `peer_comm`, on its point-to-point with the program's tag (as MPI's
/// leaders do). Then: both groups in this job — the MPI's own call on
/// `peer_comm`'s native side; this group in this job and the other in the
/// other — an Isthmus intercommunicator; a group in both jobs — a mixed
/// one (`crate::mixed`).
fn lead(
    local_comm: MPI_Comm,
    local_merged: bool,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
) -> Result<Lead, c_int> {
    let fail = |e: BridgeError| errors::fail(local_comm, CALL, &e);
    if bridge_comm(peer_comm).is_some() || mixed_comm(peer_comm).is_some() {
        return Err(fail(BridgeError::InvalidArgument(
            "peer_comm is an Isthmus intercommunicator; give its merge (MPI_Intercomm_merge)"
                .into(),
        )));
    }
    let Some(mc) = merged_comm(peer_comm) else {
        if local_merged {
            return Err(fail(BridgeError::InvalidArgument(
                "local_comm spans both jobs, so peer_comm must be a merged Isthmus \
                 communicator holding every member of both groups (e.g. a world's \
                 MPI_COMM_WORLD); this one is a native communicator of one job"
                    .into(),
            )));
        }
        return Ok(Lead::Native(peer_comm, remote_leader));
    };
    let place = u32::try_from(remote_leader)
        .ok()
        .and_then(|r| mc.order.place(r))
        .ok_or_else(|| {
            fail(BridgeError::InvalidArgument(format!(
                "remote_leader {remote_leader} is not a rank of peer_comm (size {})",
                mc.order.size()
            )))
        })?;
    let mine = peer_ranks(local_comm, &mc).map_err(fail)?;
    let nonce = uuid::Uuid::new_v4().as_u64_pair().0;
    let mut out = vec![nonce];
    out.extend(mine.iter().map(|&r| u64::from(r)));
    let theirs = swap(&mc, peer_comm, place, tag, &out).map_err(&fail)?;
    let (their_nonce, their_ranks) = match theirs.as_slice() {
        [n, rest @ ..] if !rest.is_empty() => (*n, rest),
        _ => {
            return Err(fail(BridgeError::Protocol(
                "the other leader's group is empty".into(),
            )))
        }
    };
    let their_ranks = their_ranks
        .iter()
        .map(|&r| u32::try_from(r).ok().filter(|&r| r < mc.size()))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| {
            fail(BridgeError::Protocol(
                "the other leader sent a rank out of range".into(),
            ))
        })?;
    let native = |q: &u32| match mc.place(*q) {
        Some(Place::Local(n)) => Some(n),
        _ => None,
    };
    let remote = |q: &u32| match mc.place(*q) {
        Some(Place::Remote(j)) => Some(j),
        _ => None,
    };
    let mine_here: Option<Vec<u32>> = mine.iter().map(native).collect();
    let theirs_here: Option<Vec<u32>> = their_ranks.iter().map(native).collect();
    let theirs_there: Option<Vec<u32>> = their_ranks.iter().map(remote).collect();
    let len = |v: &[u32]| v.len() as i64;
    match (mine_here, theirs_here, theirs_there) {
        (Some(_), Some(_), _) => {
            let r = match place {
                Place::Local(r) => c_int::try_from(r).unwrap_or(c_int::MAX),
                Place::Remote(_) => {
                    return Err(fail(BridgeError::Protocol(
                        "the remote leader is not where its group is".into(),
                    )))
                }
            };
            Ok(Lead::Native(mc.native, r))
        }
        (Some(here), None, Some(there)) => {
            let (low, high) = if mc.low {
                (nonce, their_nonce)
            } else {
                (their_nonce, nonce)
            };
            let header: Header = [
                BRIDGE,
                mc.inter.context() as i64,
                low as i64,
                high as i64,
                len(&here),
                len(&there),
            ];
            let mut lists = here;
            lists.extend(there);
            Ok(Lead::Bridge(header, lists))
        }
        _ => {
            let header: Header = [
                MIXED,
                mc.inter.context() as i64,
                nonce.min(their_nonce) as i64,
                nonce.max(their_nonce) as i64,
                len(&mine),
                len(&their_ranks),
            ];
            let mut lists = mine;
            lists.extend(their_ranks);
            Ok(Lead::Bridge(header, lists))
        }
    }
}

/// Sends `out` to the other leader (at `place` in `peer`) and receives
/// its list, natively when it is in this job, over the bridge otherwise.
fn swap(
    peer: &MergedComm,
    peer_comm: MPI_Comm,
    place: Place,
    tag: c_int,
    out: &[u64],
) -> Result<Vec<u64>, BridgeError> {
    let limit = peer.size() as usize + 1;
    let mut theirs = vec![0u64; limit];
    match place {
        Place::Remote(r) => {
            peer.inter.send(r, tag, out)?;
            let st = peer
                .inter
                .recv(Source::Rank(r), Tag::Value(tag), &mut theirs)?;
            theirs.truncate(usize::try_from(st.count).unwrap_or(0));
        }
        Place::Local(r) => {
            let r = c_int::try_from(r).unwrap_or(c_int::MAX);
            let too_large = || BridgeError::InvalidArgument("groups too large".into());
            let n = c_int::try_from(out.len()).map_err(|_| too_large())?;
            let max = c_int::try_from(limit).map_err(|_| too_large())?;
            let mut st = crate::mpi_glue::empty_status();
            let mut got: c_int = 0;
            // SAFETY: our buffers of `n` and `max` u64; peer_comm's handle is
            // a native communicator of this job's ranks, `r` the other
            // leader's rank in it.
            let rc = unsafe {
                ffi::PMPI_Sendrecv(
                    out.as_ptr().cast(),
                    n,
                    ffi::RSMPI_UINT64_T,
                    r,
                    tag,
                    theirs.as_mut_ptr().cast(),
                    max,
                    ffi::RSMPI_UINT64_T,
                    r,
                    tag,
                    peer_comm,
                    &mut st,
                ) | ffi::PMPI_Get_count(&st, ffi::RSMPI_UINT64_T, &mut got)
            };
            if rc != 0 {
                return Err(BridgeError::Protocol(format!(
                    "the swap with the other leader failed (MPI error {rc})"
                )));
            }
            theirs.truncate(usize::try_from(got).unwrap_or(0));
        }
    }
    Ok(theirs)
}

/// Each member of `local_comm`'s rank in `peer` (a merged communicator),
/// in `local_comm`'s order.
fn peer_ranks(local_comm: MPI_Comm, peer: &MergedComm) -> Result<Vec<u32>, BridgeError> {
    let mine = crate::group::of_comm(local_comm)?;
    let all = crate::group::of_merged(peer)?;
    mine.iter()
        .map(|p| {
            all.iter()
                .position(|q| q == p)
                .and_then(|r| u32::try_from(r).ok())
        })
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| {
            BridgeError::InvalidArgument(
                "a process of local_comm is not in peer_comm (the merged communicator); \
                 across jobs every member of both groups must be in peer_comm"
                    .into(),
            )
        })
}

/// At every member: the two groups the leader found (`lists`, filled at
/// the leader), broadcast over `local_comm`, and the merged `peer_comm`
/// they are ranks of, found by its context.
fn from_leader(
    local_comm: MPI_Comm,
    local_mc: Option<&Arc<MergedComm>>,
    (local_leader, leader): (c_int, bool),
    header: Header,
    mut lists: Vec<u32>,
) -> Result<(Arc<MergedComm>, Vec<u32>), c_int> {
    let [_, context, _, _, local_len, remote_len] = header;
    let fail = |e: BridgeError| errors::fail(local_comm, CALL, &e);
    if !leader {
        lists = vec![0; local_len as usize + remote_len as usize];
    }
    let n = c_int::try_from(lists.len())
        .map_err(|_| fail(BridgeError::InvalidArgument("groups too large".into())))?;
    // SAFETY: `n` u32 from the leader to every member.
    let rc = unsafe {
        bcast_local(
            local_comm,
            local_mc,
            (lists.as_mut_ptr().cast(), n, ffi::RSMPI_UINT32_T),
            local_leader,
        )
    };
    if rc != 0 {
        return Err(errors::raise(local_comm, rc));
    }
    let Some(mc) = merged_with_context(context as u64) else {
        return Err(fail(BridgeError::InvalidArgument(
            "this process is not in the leader's peer_comm (the merged communicator): across \
             jobs every member of both groups must be in peer_comm"
                .into(),
        )));
    };
    Ok((mc, lists))
}

/// At every member, for a mixed intercommunicator: the two groups (ranks
/// of `peer_comm`) from the leader, then `crate::mixed::create`.
fn mixed_member(
    local_comm: MPI_Comm,
    local_mc: Option<&Arc<MergedComm>>,
    (local_leader, leader, tag): (c_int, bool, c_int),
    header: Header,
    lists: Vec<u32>,
) -> Result<MPI_Comm, c_int> {
    let [_, _, low, high, local_len, _] = header;
    let (mc, lists) = from_leader(local_comm, local_mc, (local_leader, leader), header, lists)?;
    let (mine, theirs) = lists.split_at((local_len as usize).min(lists.len()));
    crate::mixed::create(
        local_comm,
        &mc,
        (mine, theirs),
        (low as u64, high as u64),
        tag,
    )
    .map_err(|f| crate::merged::raise(local_comm, CALL, f))
}

/// At every member: the two groups from the leader, then the new
/// intercommunicator derived from the merged one.
fn member(
    local_comm: MPI_Comm,
    local_leader: c_int,
    leader: bool,
    header: Header,
    lists: Vec<u32>,
) -> Result<MPI_Comm, c_int> {
    let [_, _, low, high, local_len, remote_len] = header;
    let fail = |e: BridgeError| errors::fail(local_comm, CALL, &e);
    let (local_len, remote_len) = (local_len as usize, remote_len as usize);
    let (mc, lists) = from_leader(local_comm, None, (local_leader, leader), header, lists)?;
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: the program's communicator; out-values.
    unsafe {
        ffi::PMPI_Comm_rank(local_comm, &mut rank);
        ffi::PMPI_Comm_size(local_comm, &mut size);
    }
    let remote = lists.get(local_len..local_len + remote_len).unwrap_or(&[]);
    let mut key = b"icreate".to_vec();
    key.extend_from_slice(&low.to_le_bytes());
    key.extend_from_slice(&high.to_le_bytes());
    let inter = mc
        .inter
        .subset(&key, rank as u32, size as u32, remote)
        .map_err(fail)?;
    let mut handle = comm_null();
    // SAFETY: the program's communicator; our new duplicate.
    let rc = unsafe { ffi::PMPI_Comm_dup(local_comm, &mut handle) };
    if rc != 0 {
        return Err(errors::raise(local_comm, rc));
    }
    add_comm(handle, new_side(&mc, inter));
    Ok(handle)
}

fn new_side(mc: &Arc<MergedComm>, inter: isthmus_bridge::InterComm) -> BridgeComm {
    BridgeComm {
        inter,
        local_group: mc.local_group.clone(),
        remote_group: mc.remote_group.clone(),
        derived: Default::default(),
        coll: Default::default(),
    }
}

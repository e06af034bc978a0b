//! `MPI_Intercomm_create` whose peer communicator is a merged one (the
//! merge of an Isthmus intercommunicator, or anything derived from it)
//! and whose two leaders live in different jobs: each side's `local_comm`
//! is a native communicator of its job, and the new communicator is an
//! Isthmus intercommunicator between them, as MPI's own would be.
//!
//! `peer_comm` is significant only at the leader, so only the leader can
//! tell which case a call is: it broadcasts its verdict over `local_comm`
//! (natively) before anything else, and every rank goes the same way —
//! the MPI's own call when the leaders share a job (a merged `peer_comm`
//! then becomes its native side), the bridge otherwise. Across jobs, the
//! leaders swap their groups (each member's rank in its job's side of the
//! merged communicator) and a random nonce over `peer_comm` with the
//! program's tag, as MPI's leaders do; each leader broadcasts the other
//! group to its own, and every member derives the new intercommunicator
//! from the merged one (`InterComm::subset`, keyed by both nonces so that
//! two creates between the same groups never share a context), found by
//! its context among the merged communicators it belongs to. The native
//! handle of the result is a duplicate of `local_comm`.

use std::ffi::c_int;
use std::sync::Arc;

use isthmus_bridge::{BridgeError, Source, Tag};
use mpi::ffi;

use crate::errors;
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::state::{
    add_comm, bridge_comm, merged_comm, merged_with_context, BridgeComm, MergedComm, Place,
};

const CALL: &str = "MPI_Intercomm_create";

/// What the leader found, broadcast first: the MPI's own call, or the
/// bridge (with how long the lists that follow are), or a failure.
const NATIVE: i64 = 0;
const BRIDGE: i64 = 1;
const FAILED: i64 = 2;

/// The leader's verdict and, across jobs, what every member needs:
/// `[mode, context, nonce_low, nonce_high, local_len, remote_len]`.
type Header = [i64; 6];

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
    if bridge_comm(local_comm).is_some() {
        // An intercommunicator is no local group (MPI asks for an intra-).
        return errors::refuse(local_comm, CALL);
    }
    if merged_comm(local_comm).is_some() {
        // Its group spans two jobs: an Isthmus intercommunicator's local
        // group is one job's.
        return errors::fail(
            local_comm,
            CALL,
            &BridgeError::InvalidArgument(
                "a local_comm spanning both jobs of a merged Isthmus communicator is not \
                 supported yet; give each job's own communicator (e.g. a split of the merged \
                 communicator by job)"
                    .into(),
            ),
        );
    }
    let mut rank: c_int = -1;
    // SAFETY: the program's communicator; `rank` an out-value.
    let rc = unsafe { ffi::PMPI_Comm_rank(local_comm, &mut rank) };
    if rc != 0 {
        return errors::raise(local_comm, rc);
    }
    let leader = rank == local_leader;
    let mut header: Header = [NATIVE, 0, 0, 0, 0, 0];
    let mut lists: Vec<u32> = Vec::new();
    let mut peer = peer_comm;
    let mut peer_leader = remote_leader;
    let mut failure = None;
    if leader {
        match lead(local_comm, peer_comm, remote_leader, tag) {
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
        ffi::PMPI_Bcast(
            header.as_mut_ptr().cast(),
            6,
            ffi::RSMPI_INT64_T,
            local_leader,
            local_comm,
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
        BRIDGE => {
            // SAFETY: the program's out-pointer.
            unsafe { *newintercomm = comm_null() };
            let r = member(local_comm, local_leader, leader, header, lists);
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

/// At the leader: the case, and across jobs the swap with the other leader.
fn lead(
    local_comm: MPI_Comm,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
) -> Result<Lead, c_int> {
    let fail = |e: BridgeError| errors::fail(local_comm, CALL, &e);
    if bridge_comm(peer_comm).is_some() {
        return Err(fail(BridgeError::InvalidArgument(
            "peer_comm is an Isthmus intercommunicator; give its merge (MPI_Intercomm_merge)"
                .into(),
        )));
    }
    let Some(mc) = merged_comm(peer_comm) else {
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
    let remote = match place {
        Place::Local(r) => {
            let r = c_int::try_from(r).unwrap_or(c_int::MAX);
            return Ok(Lead::Native(mc.native, r));
        }
        Place::Remote(r) => r,
    };
    let mine = job_ranks(local_comm, &mc).map_err(fail)?;
    let nonce = uuid::Uuid::new_v4().as_u64_pair().0;
    // [nonce, members...] to the other leader, on peer_comm's
    // point-to-point context with the program's tag, as MPI's leaders do.
    let mut out = vec![nonce];
    out.extend(mine.iter().map(|&r| u64::from(r)));
    mc.inter.send(remote, tag, &out).map_err(&fail)?;
    let limit = mc.inter.remote_size() as usize + 1;
    let mut theirs = vec![0u64; limit];
    let st = mc
        .inter
        .recv(Source::Rank(remote), Tag::Value(tag), &mut theirs)
        .map_err(&fail)?;
    theirs.truncate(usize::try_from(st.count).unwrap_or(0));
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
        .map(|&r| {
            u32::try_from(r)
                .ok()
                .filter(|&r| r < mc.inter.remote_size())
        })
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| {
            fail(BridgeError::Protocol(
                "the other leader sent a rank out of range".into(),
            ))
        })?;
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
        mine.len() as i64,
        their_ranks.len() as i64,
    ];
    let mut lists = mine;
    lists.extend(their_ranks);
    Ok(Lead::Bridge(header, lists))
}

/// Each member of `local_comm`'s rank in this job's side of `mc` (its
/// native communicator), in `local_comm`'s order.
fn job_ranks(local_comm: MPI_Comm, mc: &MergedComm) -> Result<Vec<u32>, BridgeError> {
    let ranks = crate::group::comm_ranks_in(local_comm, mc.native).map_err(|rc| {
        BridgeError::InvalidArgument(format!(
            "local_comm's group could not be read (MPI error {rc})"
        ))
    })?;
    ranks
        .iter()
        .map(|&r| u32::try_from(r).ok())
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| {
            BridgeError::InvalidArgument(
                "a process of local_comm is not in peer_comm (the merged communicator)".into(),
            )
        })
}

/// At every member: the two groups from the leader, then the new
/// intercommunicator derived from the merged one.
fn member(
    local_comm: MPI_Comm,
    local_leader: c_int,
    leader: bool,
    header: Header,
    mut lists: Vec<u32>,
) -> Result<MPI_Comm, c_int> {
    let [_, context, low, high, local_len, remote_len] = header;
    let fail = |e: BridgeError| errors::fail(local_comm, CALL, &e);
    let (local_len, remote_len) = (local_len as usize, remote_len as usize);
    if !leader {
        lists = vec![0; local_len + remote_len];
    }
    let n = c_int::try_from(lists.len())
        .map_err(|_| fail(BridgeError::InvalidArgument("groups too large".into())))?;
    // SAFETY: `n` u32 from the leader to every member.
    let rc = unsafe {
        ffi::PMPI_Bcast(
            lists.as_mut_ptr().cast(),
            n,
            ffi::RSMPI_UINT32_T,
            local_leader,
            local_comm,
        )
    };
    if rc != 0 {
        return Err(errors::raise(local_comm, rc));
    }
    let Some(mc) = merged_with_context(context as u64) else {
        return Err(fail(BridgeError::InvalidArgument(
            "this process is not in the leader's peer_comm (the merged communicator)".into(),
        )));
    };
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

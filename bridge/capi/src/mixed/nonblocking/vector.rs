//! The personalized nonblocking collectives on a mixed intercommunicator,
//! as the blocking ones (`mixed::coll::vector`, `pairwise`): every block
//! crosses straight to where it goes — to or from the root (Igatherv,
//! Iscatterv), to the other group's leader, which broadcasts them all in
//! its group as one indexed element (Iallgatherv), or between each pair of
//! ranks (Ialltoall(v,w): the pairwise exchange's messages, all posted at
//! once, since each is told apart by its source and the operation's tag).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::setup::{start, Block, Call, Local, Part, Plan};
use crate::collbuf::{elements, ints};
use crate::merged::Derived;
use crate::mixed::coll::steps::{extents, role, Role};
use crate::mixed::coll::vector::{not_in_place, v_block, w_block};
use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::nbc::Fail;
use crate::state::MixedInter;

/// Block `j` of a v-form buffer for each remote rank.
///
/// # Safety
/// `counts` and `displs` have an entry per remote rank.
unsafe fn v_blocks(
    mx: &MixedInter,
    base: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    dt: MPI_Datatype,
) -> Result<Vec<Block>, Fail> {
    let e = extents(dt)?;
    (0..mx.peers.size())
        .map(|j| {
            // SAFETY: this function's contract.
            let (at, n) = unsafe { v_block(base, counts, displs, &e, j) }?;
            Ok((j, at, n, dt))
        })
        .collect()
}

/// `MPI_Igatherv` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Igatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn igatherv(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Igatherv",
    };
    let plan = || {
        Ok(Plan::of(match role(mx, root)? {
            Role::Idle => vec![],
            Role::Root => {
                not_in_place(&[recvbuf.cast_const()])?;
                // SAFETY: an entry per remote rank (MPI's contract).
                let ins = unsafe { v_blocks(mx, recvbuf, recvcounts, displs, recvtype) }?;
                vec![Part::Talk(vec![], ins)]
            }
            Role::From(r) => {
                not_in_place(&[sendbuf])?;
                let out = (r as u32, sendbuf.cast_mut(), sendcount, sendtype);
                vec![Part::Talk(vec![out], vec![])]
            }
        }))
    };
    // SAFETY: MPI_Igatherv's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Iscatterv` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Iscatterv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iscatterv(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Iscatterv",
    };
    let plan = || {
        Ok(Plan::of(match role(mx, root)? {
            Role::Idle => vec![],
            Role::Root => {
                not_in_place(&[sendbuf])?;
                // SAFETY: an entry per remote rank (MPI's contract).
                let outs = unsafe { v_blocks(mx, sendbuf, sendcounts, displs, sendtype) }?;
                vec![Part::Talk(outs, vec![])]
            }
            Role::From(r) => {
                not_in_place(&[recvbuf.cast_const()])?;
                vec![Part::Talk(
                    vec![],
                    vec![(r as u32, recvbuf, recvcount, recvtype)],
                )]
            }
        }))
    };
    // SAFETY: MPI_Iscatterv's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Iallgatherv` on a mixed intercommunicator: every rank's block to
/// the other group's leader, which broadcasts them in its group.
///
/// # Safety
/// As `MPI_Iallgatherv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iallgatherv(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Iallgatherv",
    };
    let plan = || {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        let remote = mx.peers.size() as usize;
        let ins = if mx.rank == 0 {
            // SAFETY: an entry per remote rank (MPI's contract).
            unsafe { v_blocks(mx, recvbuf, recvcounts, displs, recvtype) }?
        } else {
            vec![]
        };
        let out = (0, sendbuf.cast_mut(), sendcount, sendtype);
        // SAFETY: an entry per remote rank (MPI's contract).
        let (counts, displs) = unsafe { (ints(recvcounts, remote)?, ints(displs, remote)?) };
        let all = Derived::indexed(counts, displs, recvtype)?;
        let parts = vec![
            Part::Talk(vec![out], ins),
            Part::Local(Local::Bcast(recvbuf, 1, all.0)),
        ];
        Ok(Plan::keeping(parts, Box::new(all)))
    };
    // SAFETY: MPI_Iallgatherv's contract.
    unsafe { start(mx, call, plan) }
}

/// The blocks of an all-to-all: `block(j)` each way for every remote rank.
fn all_pairs(
    mx: &MixedInter,
    mut block: impl FnMut(u32) -> Result<(Block, Block), Fail>,
) -> Result<Plan, Fail> {
    let (mut outs, mut ins) = (Vec::new(), Vec::new());
    for j in 0..mx.peers.size() {
        let (o, i) = block(j)?;
        outs.push(o);
        ins.push(i);
    }
    Ok(Plan::of(vec![Part::Talk(outs, ins)]))
}

/// `MPI_Ialltoall` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Ialltoall`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ialltoall(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ialltoall",
    };
    let plan = || {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        let (se, re) = (extents(sendtype)?, extents(recvtype)?);
        let (sn, rn) = (elements(sendcount)?, elements(recvcount)?);
        all_pairs(mx, |j| {
            let s = se.at(sendbuf, j as usize * sn)?;
            let r = re.at(recvbuf, j as usize * rn)?;
            Ok(((j, s, sendcount, sendtype), (j, r, recvcount, recvtype)))
        })
    };
    // SAFETY: MPI_Ialltoall's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Ialltoallv` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Ialltoallv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ialltoallv(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ialltoallv",
    };
    let plan = || {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        let (se, re) = (extents(sendtype)?, extents(recvtype)?);
        all_pairs(mx, |j| {
            // SAFETY: an entry per remote rank (MPI's contract).
            let (s, sn) = unsafe { v_block(sendbuf, sendcounts, sdispls, &se, j) }?;
            // SAFETY: as above.
            let (r, rn) = unsafe { v_block(recvbuf, recvcounts, rdispls, &re, j) }?;
            Ok(((j, s, sn, sendtype), (j, r, rn, recvtype)))
        })
    };
    // SAFETY: MPI_Ialltoallv's contract.
    unsafe { start(mx, call, plan) }
}

/// `MPI_Ialltoallw` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Ialltoallw`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn ialltoallw(
    mx: &Arc<MixedInter>,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let call = Call {
        comm,
        request,
        name: "MPI_Ialltoallw",
    };
    let plan = || {
        not_in_place(&[sendbuf, recvbuf.cast_const()])?;
        all_pairs(mx, |j| {
            // SAFETY: an entry per remote rank (MPI's contract).
            let (s, sn, st) = unsafe { w_block(sendbuf, sendcounts, sdispls, sendtypes, j) }?;
            // SAFETY: as above.
            let (r, rn, rt) = unsafe { w_block(recvbuf, recvcounts, rdispls, recvtypes, j) }?;
            Ok(((j, s, sn, st), (j, r, rn, rt)))
        })
    };
    // SAFETY: MPI_Ialltoallw's contract.
    unsafe { start(mx, call, plan) }
}

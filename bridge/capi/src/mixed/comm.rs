//! The communicator calls on a mixed intercommunicator: its sizes, rank,
//! groups, duplicates, freeing, and `MPI_Intercomm_merge` (a merged
//! communicator over both groups, `crate::merged`'s).

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use super::local;
use crate::merged::{duplicate, free_native, mpi, Fail};
use crate::mpi_glue::{comm_null, MPI_Comm, MPI_Request};
use crate::state::{self, LocalGroup, Member, MixedColl, MixedInter, Order, Place};

fn int(n: u32) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// `MPI_Comm_rank`: the rank in the local group.
///
/// # Safety
/// As `MPI_Comm_rank`.
pub(crate) unsafe fn comm_rank(mx: &MixedInter, _comm: MPI_Comm, rank: *mut c_int) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe { *rank = int(mx.rank) };
    0
}

/// `MPI_Comm_size`: the local group's size.
///
/// # Safety
/// As `MPI_Comm_size`.
pub(crate) unsafe fn comm_size(mx: &MixedInter, _comm: MPI_Comm, size: *mut c_int) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe { *size = int(mx.local_size) };
    0
}

/// `MPI_Comm_remote_size`: the remote group's size.
///
/// # Safety
/// As `MPI_Comm_remote_size`.
pub(crate) unsafe fn comm_remote_size(mx: &MixedInter, _comm: MPI_Comm, size: *mut c_int) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe { *size = int(mx.peers.size()) };
    0
}

/// `MPI_Comm_test_inter`: an intercommunicator.
///
/// # Safety
/// As `MPI_Comm_test_inter`.
pub(crate) unsafe fn comm_test_inter(_mx: &MixedInter, _comm: MPI_Comm, flag: *mut c_int) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe { *flag = 1 };
    0
}

/// `MPI_Comm_group`: the local group (an Isthmus group of both jobs'
/// processes, or a native one if all are this job's).
///
/// # Safety
/// As `MPI_Comm_group`.
pub(crate) unsafe fn comm_group(
    mx: &MixedInter,
    comm: MPI_Comm,
    group: *mut ffi::MPI_Group,
) -> c_int {
    crate::group::comm_group_mixed(mx, comm, true, group, "MPI_Comm_group")
}

/// `MPI_Comm_remote_group`: the remote group.
///
/// # Safety
/// As `MPI_Comm_remote_group`.
pub(crate) unsafe fn comm_remote_group(
    mx: &MixedInter,
    comm: MPI_Comm,
    group: *mut ffi::MPI_Group,
) -> c_int {
    crate::group::comm_group_mixed(mx, comm, false, group, "MPI_Comm_remote_group")
}

/// A duplicate of the local group's communicator.
fn dup_local(g: &LocalGroup) -> Result<LocalGroup, Fail> {
    match *g {
        LocalGroup::Native(c) => duplicate(c).map(LocalGroup::Native),
        LocalGroup::Merged(c) => {
            let mc = state::merged_comm(c).ok_or_else(|| {
                Fail::Bridge(BridgeError::InvalidArgument(
                    "the local group's communicator is gone".into(),
                ))
            })?;
            crate::merged::private_dup(&mc, c).map(LocalGroup::Merged)
        }
    }
}

/// A duplicate: the handle and the private sides natively, the contexts
/// derived (both groups derive in the same order, as MPI requires).
fn dup(mx: &MixedInter, comm: MPI_Comm) -> Result<MPI_Comm, Fail> {
    let n = mx.derived.fetch_add(1, Ordering::Relaxed) + 1;
    let (inter, coll_inter) = crate::merged::contexts(mx.inter.derived(n)?)?;
    let nbc = crate::merged::hidden_side(&coll_inter, (&mx.local_group, &mx.remote_group))?;
    let handle = duplicate(comm)?;
    let native = match duplicate(mx.coll.native) {
        Ok(c) => c,
        Err(f) => {
            free_native(handle);
            return Err(f);
        }
    };
    let group = match dup_local(&mx.local) {
        Ok(g) => g,
        Err(f) => {
            free_native(handle);
            free_native(native);
            return Err(f);
        }
    };
    state::add_mixed(
        handle,
        MixedInter {
            peers: mx.peers.clone(),
            inter,
            coll: MixedColl {
                peers: mx.coll.peers.clone(),
                inter: coll_inter,
                native,
            },
            nbc,
            rank: mx.rank,
            local_size: mx.local_size,
            local: group,
            union: mx.union.clone(),
            local_group: mx.local_group.clone(),
            remote_group: mx.remote_group.clone(),
            derived: Default::default(),
            three_jobs: mx.three_jobs,
        },
    );
    Ok(handle)
}

/// `MPI_Comm_dup`.
///
/// # Safety
/// As `MPI_Comm_dup`.
pub(crate) unsafe fn comm_dup(mx: &MixedInter, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY: forwarded.
    unsafe { crate::merged::give_comm(dup(mx, comm), comm, "MPI_Comm_dup", newcomm) }
}

/// `MPI_Comm_dup_with_info`: as `MPI_Comm_dup`, the new handle with the
/// hints of `info` (the bridge uses none).
///
/// # Safety
/// As `MPI_Comm_dup_with_info`.
pub(crate) unsafe fn comm_dup_with_info(
    mx: &MixedInter,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let made = dup(mx, comm).and_then(|c| {
        crate::idup::set_hints(c, info)
            .map(|()| c)
            .inspect_err(|_| {
                forget(c);
                free_native(c);
            })
    });
    // SAFETY: forwarded.
    unsafe { crate::merged::give_comm(made, comm, "MPI_Comm_dup_with_info", newcomm) }
}

/// How the local group's communicator of a duplicate is made from its
/// native duplicates.
enum LocalLater {
    /// One native duplicate.
    Native,
    /// A private merged duplicate: two (its handle, its private side).
    Merged(crate::idup::Finish),
}

/// `MPI_Comm_idup(_with_info)`: the contexts derived at the call (in
/// `dup`'s order), the job's own nonblocking duplicates of the handle, the
/// collectives' side and the local group's communicator(s), registered
/// when the request completes (`crate::idup`).
///
/// # Safety
/// As `MPI_Comm_idup_with_info` (`info` may be MPI_INFO_NULL).
unsafe fn idup(
    mx: &MixedInter,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    (newcomm, request): (*mut MPI_Comm, *mut MPI_Request),
    call: &'static str,
) -> c_int {
    let n = mx.derived.fetch_add(1, Ordering::Relaxed) + 1;
    let contexts = match mx.inter.derived(n).and_then(crate::merged::contexts) {
        Ok(c) => c,
        Err(e) => return crate::errors::fail(comm, call, &e),
    };
    let nbc = match crate::merged::hidden_side(&contexts.1, (&mx.local_group, &mx.remote_group)) {
        Ok(b) => b,
        Err(e) => return crate::errors::fail(comm, call, &e),
    };
    let mut natives = vec![comm, mx.coll.native];
    let local = match mx.local {
        LocalGroup::Native(c) => {
            natives.push(c);
            LocalLater::Native
        }
        LocalGroup::Merged(c) => {
            let later = state::merged_comm(c)
                .ok_or_else(|| {
                    BridgeError::InvalidArgument("the local group's communicator is gone".into())
                })
                .and_then(|mc| crate::merged::dup_later(&mc, c));
            match later {
                Ok((more, finish)) => {
                    natives.extend(more);
                    LocalLater::Merged(finish)
                }
                Err(e) => return crate::errors::fail(comm, call, &e),
            }
        }
    };
    let template = MixedInter {
        peers: mx.peers.clone(),
        inter: contexts.0,
        coll: MixedColl {
            peers: mx.coll.peers.clone(),
            inter: contexts.1,
            native: comm_null(),
        },
        nbc,
        rank: mx.rank,
        local_size: mx.local_size,
        local: LocalGroup::Native(comm_null()),
        union: mx.union.clone(),
        local_group: mx.local_group.clone(),
        remote_group: mx.remote_group.clone(),
        derived: Default::default(),
        three_jobs: mx.three_jobs,
    };
    let finish = move |made: &[MPI_Comm]| {
        let [handle, native, rest @ ..] = made else {
            return Err(crate::idup::wrong_count(made.len()));
        };
        let local = match (local, rest) {
            (LocalLater::Native, [c]) => LocalGroup::Native(*c),
            (LocalLater::Merged(f), [_, _]) => match f(rest)? {
                crate::idup::Next::Done(c) => LocalGroup::Merged(c),
                crate::idup::Next::Then(..) => return Err(crate::idup::wrong_count(rest.len())),
            },
            _ => return Err(crate::idup::wrong_count(made.len())),
        };
        state::add_mixed(
            *handle,
            MixedInter {
                coll: MixedColl {
                    native: *native,
                    ..template.coll
                },
                local,
                ..template
            },
        );
        Ok(crate::idup::Next::Done(*handle))
    };
    // SAFETY: forwarded.
    unsafe {
        crate::idup::start(
            comm,
            call,
            &natives,
            info,
            Box::new(finish),
            newcomm,
            request,
        )
    }
}

/// `MPI_Comm_idup` (see `idup`).
///
/// # Safety
/// As `MPI_Comm_idup`.
pub(crate) unsafe fn comm_idup(
    mx: &MixedInter,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: reading rsmpi's exported constant.
    let none = unsafe { ffi::RSMPI_INFO_NULL };
    // SAFETY: forwarded.
    unsafe { idup(mx, comm, none, (newcomm, request), "MPI_Comm_idup") }
}

/// `MPI_Comm_idup_with_info` (see `idup`).
///
/// # Safety
/// As `MPI_Comm_idup_with_info`.
#[cfg(isthmus_mpi4)]
pub(crate) unsafe fn comm_idup_with_info(
    mx: &MixedInter,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        idup(
            mx,
            comm,
            info,
            (newcomm, request),
            "MPI_Comm_idup_with_info",
        )
    }
}

/// Forgets the mixed intercommunicator `comm` if it is one, freeing its
/// private sides; the caller frees the handle. `MPI_Comm_free`'s and
/// `MPI_Comm_disconnect`'s hook.
pub fn forget(comm: MPI_Comm) -> bool {
    match state::remove_mixed(comm) {
        Some(mx) => {
            mx.nbc.coll.free();
            free_native(mx.coll.native);
            local::free(&mx.local);
            true
        }
        None => false,
    }
}

/// The leaders swap their groups' `high` flags; every rank learns the
/// other group's.
fn remote_high(mx: &MixedInter, high: bool) -> Result<bool, Fail> {
    let mut theirs = [0u8];
    if mx.rank == 0 {
        let mine = [u8::from(high)];
        // SAFETY: one byte each way.
        mpi(unsafe {
            crate::merged::sendrecv(
                &mx.coll,
                mine.as_ptr().cast(),
                1,
                crate::mpi_glue::byte(),
                0,
                0,
                theirs.as_mut_ptr().cast(),
                1,
                crate::mpi_glue::byte(),
                0,
                0,
                mx.coll.native,
                crate::mpi_glue::status_ignore(),
            )
        })?;
    }
    // SAFETY: one byte.
    unsafe {
        local::bcast(
            &mx.local,
            theirs.as_mut_ptr().cast(),
            1,
            crate::mpi_glue::byte(),
            0,
        )
    }?;
    Ok(theirs[0] != 0)
}

/// The merged order: the group that passed `high` false first (equal
/// flags: the group holding the union's first member), each group in its
/// own order; and this job's and the other job's members in it.
fn merged_order(mx: &MixedInter, ours_first: bool) -> Vec<Member> {
    let mut all: Vec<Member> = mx.union.to_vec();
    all.sort_by_key(|m| (m.ours != ours_first, m.rank));
    all
}

/// The merged communicator over both groups (`high` as the merge's).
pub(super) fn merge(mx: &MixedInter, comm: MPI_Comm, high: bool) -> Result<MPI_Comm, Fail> {
    let theirs = remote_high(mx, high)?;
    let ours_first = if high == theirs {
        mx.union.first().is_some_and(|m| m.ours)
    } else {
        !high
    };
    let all = merged_order(mx, ours_first);
    let n = mx.derived.fetch_add(1, Ordering::Relaxed) + 1;
    // This job's members in the merged order get native ranks 0, 1, ...
    // in a split of the handle; the other job's, their place in the new
    // intercommunicator's remote group.
    let (mut places, mut remote, mut key, mut me) = (Vec::new(), Vec::new(), 0, None);
    for m in &all {
        match m.place {
            Place::Local(h) => {
                if m.ours && m.rank == mx.rank {
                    me = Some((key, h));
                }
                places.push(Place::Local(key));
                key += 1;
            }
            Place::Remote(j) => {
                places.push(Place::Remote(
                    u32::try_from(remote.len()).unwrap_or(u32::MAX),
                ));
                remote.push(j);
            }
        }
    }
    let (me, _) = me.ok_or_else(|| {
        Fail::Bridge(BridgeError::InvalidArgument(
            "this process is not in its own group".into(),
        ))
    })?;
    let mut split = comm_null();
    // SAFETY: the handle (this job's members of both groups); out-handle.
    mpi(unsafe { ffi::PMPI_Comm_split(comm, 0, int(me), &mut split) })?;
    let mut k = b"merge".to_vec();
    k.extend_from_slice(&n.to_le_bytes());
    let made = mx
        .inter
        .subset(&k, me, key, &remote)
        .map_err(Fail::from)
        .and_then(|inter| Ok(crate::merged::contexts(inter)?))
        .and_then(|contexts| {
            crate::merged::register_from(
                split,
                contexts,
                Order::of(places, me),
                (mx.local_group.clone(), mx.remote_group.clone()),
            )
        });
    free_native(split);
    made
}

/// `MPI_Intercomm_merge` of a mixed intercommunicator: a merged
/// communicator over both groups.
///
/// # Safety
/// As `MPI_Intercomm_merge`.
pub(crate) unsafe fn intercomm_merge(
    mx: &MixedInter,
    comm: MPI_Comm,
    high: c_int,
    newintracomm: *mut MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Intercomm_merge";
    if newintracomm.is_null() {
        let e = BridgeError::InvalidArgument("newintracomm is NULL".into());
        return crate::errors::fail(comm, CALL, &e);
    }
    if mx.three_jobs {
        // SAFETY: non-null, the program's out-pointer.
        unsafe { *newintracomm = comm_null() };
        let code = crate::errors::code(
            crate::errors::Class::Refused,
            &format!(
                "{CALL}: this intercommunicator's processes are in three jobs \
                 (MPI_Comm_spawn_multiple's parents, and their children's world of two \
                 implementations); a merged communicator spans two jobs"
            ),
        );
        return crate::errors::raise(comm, code);
    }
    // SAFETY: non-null, the program's out-pointer.
    unsafe { crate::merged::give_comm(merge(mx, comm, high != 0), comm, CALL, newintracomm) }
}

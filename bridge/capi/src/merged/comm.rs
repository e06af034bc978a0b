//! `MPI_Intercomm_merge` of a bridge intercommunicator, and the
//! communicator calls whose answer on the merged communicator differs from
//! its native handle's: rank, size, group, test_inter, dup, free.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use isthmus_bridge::{BridgeError, InterComm, Source, Tag};
use mpi::ffi;

use super::wire::{leader_step, mpi, Fail, TAG_MERGE};
use crate::errors;
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::state::{self, BridgeComm, MergedComm, Order};

/// Raises `f` on `comm` as `call`'s error.
pub fn raise(comm: MPI_Comm, call: &str, f: Fail) -> c_int {
    match f {
        Fail::Mpi(rc) => errors::raise(comm, rc),
        Fail::Bridge(BridgeError::PeerFailed { rank, reason }) => {
            let code = errors::code(
                errors::Class::PeerFailed,
                &format!("{call}: {}", failed_rank(comm, rank, &reason)),
            );
            errors::raise(comm, code)
        }
        Fail::Bridge(e) => errors::fail(comm, call, &e),
    }
}

/// A failed process of the other job, named by its rank in `comm` (the
/// bridge names it by its rank in the other job).
fn failed_rank(comm: MPI_Comm, remote: u32, reason: &str) -> String {
    let merged = state::merged_comm(comm)
        .and_then(|mc| mc.order.remote_ranks().get(remote as usize).copied());
    match merged {
        Some(r) => format!(
            "rank {r} of this communicator (rank {remote} of the other job) has failed \
             (a process is dead when its connection closes): {reason}"
        ),
        None => format!("rank {remote} of the other job has failed: {reason}"),
    }
}

/// A native duplicate of `comm` (collective over this job's ranks of it).
pub fn duplicate(comm: MPI_Comm) -> Result<MPI_Comm, Fail> {
    let mut dup = comm_null();
    // SAFETY: `comm` is live; `dup` an out-pointer.
    mpi(unsafe { crate::native_step::comm_dup(comm, &mut dup) })?;
    Ok(dup)
}

/// Frees a native communicator of ours (nothing for `MPI_COMM_NULL`).
pub fn free_native(mut c: MPI_Comm) {
    if c != comm_null() {
        // SAFETY: a communicator of ours, freed once.
        unsafe { ffi::PMPI_Comm_free(&mut c) };
    }
}

/// The two contexts of a merged communicator from the intercomm context
/// `inter` (derived once more, as `n` = 0, which `MPI_Comm_dup` never
/// uses: it counts from 1).
pub fn contexts(inter: InterComm) -> Result<(InterComm, InterComm), BridgeError> {
    let coll = inter.derived(0)?;
    Ok((inter, coll))
}

/// Makes the merged communicator's native handle (from `from`, the
/// program's communicator: its attributes are copied as `MPI_Comm_dup`
/// does) and private native side (from `side`), and registers it with its
/// contexts and order.
fn register(
    (from, side): (MPI_Comm, MPI_Comm),
    contexts: (InterComm, InterComm),
    order: Order,
    groups: (String, String),
) -> Result<MPI_Comm, Fail> {
    let handle = duplicate(from)?;
    match duplicate(side) {
        Ok(native) => match adopt(handle, native, contexts, order, groups) {
            Ok(()) => Ok(handle),
            Err(e) => {
                free_native(native);
                free_native(handle);
                Err(e.into())
            }
        },
        Err(f) => {
            free_native(handle);
            Err(f)
        }
    }
}

/// Registers `handle` (this job's ranks of it, in the merged order) as a
/// merged communicator with its private native side `native` (a duplicate
/// of it), its contexts and its order, with the side of its nonblocking
/// collectives (`super::nonblocking`).
pub fn adopt(
    handle: MPI_Comm,
    native: MPI_Comm,
    (inter, coll): (InterComm, InterComm),
    order: Order,
    groups: (String, String),
) -> Result<(), BridgeError> {
    let nbc = super::nonblocking::hidden_side(&coll, (&groups.0, &groups.1))?;
    state::add_merged(
        handle,
        MergedComm {
            inter,
            coll,
            native,
            low: order.place(0) == Some(state::Place::Local(0)),
            local_group: groups.0,
            remote_group: groups.1,
            derived: Default::default(),
            order,
            nbc,
        },
    );
    Ok(())
}

/// A private native duplicate of `comm` (the collectives' native side).
pub fn native_side(comm: MPI_Comm) -> Result<MPI_Comm, Fail> {
    duplicate(comm)
}

/// Whether this job comes first, from both groups' `high` flags (MPI: the
/// group that passed false first) and, for equal flags, their names: the
/// group whose name sorts first comes first, on both sides alike.
fn is_low(high: bool, remote_high: bool, local: &str, remote: &str) -> Result<bool, BridgeError> {
    if high != remote_high {
        return Ok(!high);
    }
    match local.cmp(remote) {
        std::cmp::Ordering::Less => Ok(true),
        std::cmp::Ordering::Greater => Ok(false),
        std::cmp::Ordering::Equal => Err(BridgeError::InvalidArgument(format!(
            "both groups are named {local:?} and passed the same high flag: no order for the merge"
        ))),
    }
}

/// The leaders trade their groups' `high` flags; every rank learns the remote one.
fn remote_high(
    bc: &BridgeComm,
    coll: &InterComm,
    native: MPI_Comm,
    high: bool,
) -> Result<bool, Fail> {
    let mut theirs = [0u8];
    leader_step(native, bc.inter.rank() == 0, || {
        let sent = coll.isend::<u8>(0, TAG_MERGE, &[u8::from(high)])?;
        coll.recv::<u8>(Source::Rank(0), Tag::Value(TAG_MERGE), &mut theirs)?;
        sent.wait()?;
        Ok(())
    })?;
    // SAFETY: one byte, on a private native duplicate.
    mpi(unsafe {
        crate::native_step::bcast(theirs.as_mut_ptr().cast(), 1, ffi::RSMPI_UINT8_T, 0, native)
    })?;
    Ok(theirs[0] != 0)
}

fn merge(bc: &BridgeComm, comm: MPI_Comm, high: bool) -> Result<MPI_Comm, Fail> {
    let n = bc.derived.fetch_add(1, Ordering::Relaxed) + 1;
    let (inter, coll) = contexts(bc.inter.derived(n)?)?;
    // The flags go on the new communicator's collective context, with a
    // temporary native duplicate (nothing is registered until the order is known).
    let tmp = duplicate(comm)?;
    let theirs = remote_high(bc, &coll, tmp, high);
    free_native(tmp);
    let low = is_low(high, theirs?, &bc.local_group, &bc.remote_group)?;
    let order = Order::contiguous(low, inter.local_size(), inter.remote_size(), inter.rank());
    register(
        (comm, comm),
        (inter, coll),
        order,
        (bc.local_group.clone(), bc.remote_group.clone()),
    )
}

/// `MPI_Intercomm_merge` on an Isthmus intercommunicator.
///
/// # Safety
/// As `MPI_Intercomm_merge`.
pub(crate) unsafe fn intercomm_merge(
    bc: &BridgeComm,
    intercomm: MPI_Comm,
    high: c_int,
    newintracomm: *mut MPI_Comm,
) -> c_int {
    const CALL: &str = "MPI_Intercomm_merge";
    if newintracomm.is_null() {
        let e = BridgeError::InvalidArgument("newintracomm is NULL".into());
        return errors::fail(intercomm, CALL, &e);
    }
    match merge(bc, intercomm, high != 0) {
        Ok(c) => {
            // SAFETY: non-null, the program's out-pointer.
            unsafe { *newintracomm = c };
            0
        }
        Err(f) => raise(intercomm, CALL, f),
    }
}

/// `MPI_Comm_rank` on a merged communicator.
///
/// # Safety
/// As `MPI_Comm_rank`.
pub(crate) unsafe fn comm_rank(mc: &MergedComm, _comm: MPI_Comm, rank: *mut c_int) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe { *rank = c_int::try_from(mc.rank()).unwrap_or(c_int::MAX) };
    0
}

/// `MPI_Comm_size` on a merged communicator.
///
/// # Safety
/// As `MPI_Comm_size`.
pub(crate) unsafe fn comm_size(mc: &MergedComm, _comm: MPI_Comm, size: *mut c_int) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe { *size = c_int::try_from(mc.size()).unwrap_or(c_int::MAX) };
    0
}

/// `MPI_Comm_test_inter` on a merged communicator: an intracommunicator.
///
/// # Safety
/// As `MPI_Comm_test_inter`.
pub(crate) unsafe fn comm_test_inter(_mc: &MergedComm, _comm: MPI_Comm, flag: *mut c_int) -> c_int {
    // SAFETY: the program's out-pointer.
    unsafe { *flag = 0 };
    0
}

/// `MPI_Comm_group` on a merged communicator: an Isthmus group of both
/// jobs' processes in the merged order (`crate::group`).
///
/// # Safety
/// As `MPI_Comm_group`.
pub(crate) unsafe fn comm_group(
    mc: &MergedComm,
    comm: MPI_Comm,
    group: *mut ffi::MPI_Group,
) -> c_int {
    crate::group::comm_group_merged(mc, comm, group)
}

fn dup(mc: &MergedComm, comm: MPI_Comm) -> Result<MPI_Comm, Fail> {
    let n = mc.derived.fetch_add(1, Ordering::Relaxed) + 1;
    register(
        (comm, mc.native),
        contexts(mc.inter.derived(n)?)?,
        mc.order.clone(),
        (mc.local_group.clone(), mc.remote_group.clone()),
    )
}

/// A private merged duplicate of `comm` (collective over its ranks): the
/// local group of a mixed intercommunicator (`crate::mixed`).
pub fn private_dup(mc: &MergedComm, comm: MPI_Comm) -> Result<MPI_Comm, Fail> {
    dup(mc, comm)
}

/// Registers a merged communicator made elsewhere (`crate::mixed`'s
/// merge): `from` is duplicated as its handle and its private side.
pub fn register_from(
    from: MPI_Comm,
    contexts: (InterComm, InterComm),
    order: Order,
    groups: (String, String),
) -> Result<MPI_Comm, Fail> {
    register((from, from), contexts, order, groups)
}

/// `MPI_Comm_dup` on a merged communicator: a merged communicator of the
/// same order on new contexts (attributes copied natively).
///
/// # Safety
/// As `MPI_Comm_dup`.
pub(crate) unsafe fn comm_dup(mc: &MergedComm, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY: forwarded.
    unsafe { give_comm(dup(mc, comm), comm, "MPI_Comm_dup", newcomm) }
}

/// A call's new communicator into the program's `out`, or its failure
/// raised on `comm` (merged communicators and mixed intercommunicators
/// alike).
///
/// # Safety
/// `out` is the program's out-pointer.
pub unsafe fn give_comm(
    made: Result<MPI_Comm, Fail>,
    comm: MPI_Comm,
    call: &str,
    out: *mut MPI_Comm,
) -> c_int {
    match made {
        Ok(c) => {
            // SAFETY: the program's out-pointer.
            unsafe { *out = c };
            0
        }
        Err(f) => {
            // MPI: a call that fails to make a communicator gives
            // MPI_COMM_NULL (MPICH's attr/attrerr checks it after an
            // attribute copy callback fails a dup).
            if !out.is_null() {
                // SAFETY: the program's out-pointer, checked non-null.
                unsafe { *out = comm_null() };
            }
            raise(comm, call, f)
        }
    }
}

/// `MPI_Comm_dup_with_info`: as `MPI_Comm_dup`, the new handle with the
/// hints of `info` (the bridge uses none).
///
/// # Safety
/// As `MPI_Comm_dup_with_info`.
pub(crate) unsafe fn comm_dup_with_info(
    mc: &MergedComm,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let made = dup(mc, comm).and_then(|c| {
        crate::idup::set_hints(c, info)
            .map(|()| c)
            .inspect_err(|_| {
                forget(c);
                free_native(c);
            })
    });
    // SAFETY: forwarded.
    unsafe { give_comm(made, comm, "MPI_Comm_dup_with_info", newcomm) }
}

/// A merged duplicate of `comm` made without blocking (`crate::idup`): its
/// contexts are derived now (in the order of the calls, as `dup`'s); the
/// native communicators to duplicate (the handle, the private side); and
/// what registers the duplicates of those two as the new communicator.
/// (A mixed intercommunicator's local group duplicates both at once;
/// the merged communicator's own `MPI_Comm_idup` takes its private side
/// from the new handle, `dup_chained`.)
pub fn dup_later(
    mc: &MergedComm,
    comm: MPI_Comm,
) -> Result<([MPI_Comm; 2], crate::idup::Finish), BridgeError> {
    let (contexts, order, groups) = derive(mc)?;
    let finish = move |made: &[MPI_Comm]| match *made {
        [handle, native] => {
            adopt(handle, native, contexts, order, groups)?;
            Ok(crate::idup::Next::Done(handle))
        }
        _ => Err(crate::idup::wrong_count(made.len())),
    };
    Ok(([comm, mc.native], Box::new(finish)))
}

/// [`dup_later`] in two stages: the program's handle first, then the
/// private side duplicated from the new handle (which nothing else
/// duplicates meanwhile), so that Isthmus never duplicates a parent the
/// program may be duplicating at the same time (see `crate::idup::Next`).
fn dup_chained(
    mc: &MergedComm,
    comm: MPI_Comm,
) -> Result<(MPI_Comm, crate::idup::Finish), BridgeError> {
    let (contexts, order, groups) = derive(mc)?;
    let finish = move |made: &[MPI_Comm]| match *made {
        [handle] => {
            let side = move |made: &[MPI_Comm]| match *made {
                [native] => {
                    adopt(handle, native, contexts, order, groups)?;
                    Ok(crate::idup::Next::Done(handle))
                }
                _ => Err(crate::idup::wrong_count(made.len())),
            };
            Ok(crate::idup::Next::Then(vec![handle], Box::new(side)))
        }
        _ => Err(crate::idup::wrong_count(made.len())),
    };
    Ok((comm, Box::new(finish)))
}

/// A duplicate's contexts (derived now, in the order of the calls) and
/// what it inherits.
#[allow(clippy::type_complexity)] // the three parts `adopt` takes
fn derive(
    mc: &MergedComm,
) -> Result<((InterComm, InterComm), Order, (String, String)), BridgeError> {
    let n = mc.derived.fetch_add(1, Ordering::Relaxed) + 1;
    let contexts = contexts(mc.inter.derived(n)?)?;
    Ok((
        contexts,
        mc.order.clone(),
        (mc.local_group.clone(), mc.remote_group.clone()),
    ))
}

/// `MPI_Comm_idup(_with_info)` on a merged communicator: the job's own
/// nonblocking duplicate of the handle, then of the new handle for the
/// private side, registered when the request completes (`crate::idup`).
///
/// # Safety
/// As `MPI_Comm_idup_with_info` (`info` may be MPI_INFO_NULL).
unsafe fn idup(
    mc: &MergedComm,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    (newcomm, request): (*mut MPI_Comm, *mut crate::mpi_glue::MPI_Request),
    call: &'static str,
) -> c_int {
    match dup_chained(mc, comm) {
        // SAFETY: forwarded.
        Ok((handle, finish)) => unsafe {
            crate::idup::start(comm, call, &[handle], info, finish, newcomm, request)
        },
        Err(e) => errors::fail(comm, call, &e),
    }
}

/// `MPI_Comm_idup` on a merged communicator (see `idup`).
///
/// # Safety
/// As `MPI_Comm_idup`.
pub(crate) unsafe fn comm_idup(
    mc: &MergedComm,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    request: *mut crate::mpi_glue::MPI_Request,
) -> c_int {
    // SAFETY: reading rsmpi's exported constant.
    let none = unsafe { ffi::RSMPI_INFO_NULL };
    // SAFETY: forwarded.
    unsafe { idup(mc, comm, none, (newcomm, request), "MPI_Comm_idup") }
}

/// `MPI_Comm_idup_with_info` on a merged communicator (see `idup`).
///
/// # Safety
/// As `MPI_Comm_idup_with_info`.
#[cfg(isthmus_mpi4)]
pub(crate) unsafe fn comm_idup_with_info(
    mc: &MergedComm,
    comm: MPI_Comm,
    info: ffi::MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut crate::mpi_glue::MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        idup(
            mc,
            comm,
            info,
            (newcomm, request),
            "MPI_Comm_idup_with_info",
        )
    }
}

/// Forgets the merged communicator `comm` if it is one, freeing its
/// private native side (its contexts retire with it); the caller frees the
/// handle. `MPI_Comm_free`'s and `MPI_Comm_disconnect`'s hook.
pub fn forget(comm: MPI_Comm) -> bool {
    match state::remove_merged(comm) {
        Some(mc) => {
            mc.nbc.coll.free();
            free_native(mc.native);
            true
        }
        None => false,
    }
}

/// Do two merged communicators have the same group in the same order
/// (`MPI_Comm_compare`: congruent)?
pub fn same_group(a: &MergedComm, b: &MergedComm) -> bool {
    a.order == b.order && a.local_group == b.local_group && a.remote_group == b.remote_group
}

#[cfg(test)]
mod tests {
    use super::is_low;

    #[test]
    fn the_group_passing_high_false_comes_first() {
        assert!(is_low(false, true, "b", "a").unwrap());
        assert!(!is_low(true, false, "a", "b").unwrap());
    }

    #[test]
    fn equal_flags_order_by_group_name_alike_on_both_sides() {
        for high in [false, true] {
            assert!(is_low(high, high, "a-job", "b-job").unwrap());
            assert!(!is_low(high, high, "b-job", "a-job").unwrap());
        }
        let e = is_low(true, true, "same", "same").unwrap_err().to_string();
        assert!(e.contains("same high flag"), "{e}");
    }
}

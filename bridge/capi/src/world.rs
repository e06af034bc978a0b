//! One `MPI_COMM_WORLD` across implementations (issue 19, first cut): a job
//! started with `ISTHMUS_WORLD=NAME:INDEX/PARTS` is one part of a world;
//! its `MPI_Init` (and `MPI_Init_thread`) meets the other part and returns
//! with `MPI_COMM_WORLD` spanning both, part 0's ranks first.
//!
//! How: part `i` registers its native world as the group
//! `isthmus-world:NAME/i` and forms an Isthmus intercommunicator with the
//! other part's group (`ports::form`, as `MPI_Comm_connect`/`accept` do),
//! within `ISTHMUS_WORLD_TIMEOUT` seconds (default 300), else a clear error
//! naming the missing part. Then the predefined `MPI_COMM_WORLD` handle
//! itself is registered as a merged communicator (`state::add_merged`, as
//! `MPI_Intercomm_merge` registers its result): every interposed call on it
//! dispatches to `crate::merged` — rank, size, point-to-point, collectives,
//! dup, split, create — and what `merged` refuses is refused on it with the
//! merged communicator's message (`MPI_Comm_group`, `MPI_Intercomm_create`,
//! the nonblocking collectives...). The handle keeps its native meaning
//! for `PMPI_*`: the merged code sends within the part on it (its native
//! ranks are the part's ranks in order), and its collectives' native steps
//! run on a private duplicate, so nothing recurses. `MPI_APPNUM`,
//! `MPI_UNIVERSE_SIZE` and `MPI_TAG_UB` are the world's
//! (`crate::world_attrs`). `MPI_Finalize` is a barrier over the world
//! before the native finalize ([`leave`]).
//!
//! Failures: the part stays registered until `MPI_Finalize`, so the vmd
//! tells the other part's processes when one of this part's dies (its
//! session ends: the kernel closes its socket), and the bridge fails every
//! operation involving it (`MPI_ERRORS_RETURN`: an error naming the world
//! rank, see `merged::comm::raise`; by default: printed, abort). A part's
//! `MPI_Abort` tells every process of the other part (`crate::abort`).
//!
//! Two parts for now; a different count is refused at `MPI_Init`.

use std::ffi::c_int;
use std::sync::Mutex;
use std::time::Duration;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::errors::{self, Class};
use crate::merged::{adopt, contexts, native_side, Fail};
use crate::mpi_glue::MPI_Comm;
use crate::ports::{form_keeping, Failure};
use crate::state::{self, Order};

/// `NAME:INDEX/PARTS`: this job's part of a world.
pub const WORLD: &str = "ISTHMUS_WORLD";
/// Seconds `MPI_Init` waits for the other parts (default 300).
pub const WORLD_TIMEOUT: &str = "ISTHMUS_WORLD_TIMEOUT";
const DEFAULT_TIMEOUT_SECS: f64 = 300.0;
const CALL: &str = "MPI_Init";

/// This job's place in a world, from `ISTHMUS_WORLD`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    pub index: u32,
    pub parts: u32,
}

impl Part {
    /// Reads `NAME:INDEX/PARTS`; the error says what is wrong with it.
    pub fn parse(spec: &str) -> Result<Part, String> {
        let bad = |why: &str| format!("{WORLD}={spec:?} is not NAME:INDEX/PARTS: {why}");
        let (name, place) = spec.rsplit_once(':').ok_or_else(|| bad("no ':'"))?;
        let (index, parts) = place.split_once('/').ok_or_else(|| bad("no '/'"))?;
        let index: u32 = index
            .trim()
            .parse()
            .map_err(|_| bad("INDEX is not a number"))?;
        let parts: u32 = parts
            .trim()
            .parse()
            .map_err(|_| bad("PARTS is not a number"))?;
        if name.is_empty() {
            return Err(bad("NAME is empty"));
        }
        if index >= parts {
            return Err(bad("INDEX must be below PARTS"));
        }
        if parts != 2 {
            return Err(format!(
                "{WORLD}={spec:?}: a world of {parts} parts; this version joins exactly 2 \
                 (the world is a merged communicator, which spans two jobs: one Isthmus \
                 intercommunicator's two sides)"
            ));
        }
        Ok(Part {
            name: name.to_string(),
            index,
            parts,
        })
    }

    /// The group name part `i` of this world registers.
    pub fn group(&self, i: u32) -> String {
        format!("isthmus-world:{}/{i}", self.name)
    }

    /// The other part's index (two parts).
    pub fn other(&self) -> u32 {
        1 - self.index.min(1)
    }
}

/// The intercommunicator the world was merged from: kept for the life of
/// the process (the world's contexts are derived from it); the part's
/// registration, kept until `MPI_Finalize` so that the vmd reports a
/// process of this part that dies to the other part (`MEMBER_DIED`: its
/// operations involving that process fail instead of waiting); and the
/// other part's processes (`MPI_Abort` tells them, `crate::abort`).
struct Joined {
    _inter: MPI_Comm,
    handle: Option<isthmus_bridge::Handle>,
    others: Vec<uuid::Uuid>,
}
// SAFETY: an MPI handle is only a name (see `parent::Parent`).
unsafe impl Send for Joined {}
static JOINED: Mutex<Option<Joined>> = Mutex::new(None);

fn world() -> MPI_Comm {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

fn timeout() -> Duration {
    let s = std::env::var(WORLD_TIMEOUT)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(DEFAULT_TIMEOUT_SECS);
    Duration::from_secs_f64(s.clamp(0.001, 1e7))
}

/// Joins the world if `ISTHMUS_WORLD` is set (called by `MPI_Init` and
/// `MPI_Init_thread` after the native initialisation); 0 or the error,
/// raised on `MPI_COMM_WORLD` (by default: printed, then abort).
pub fn join() -> c_int {
    let Ok(spec) = std::env::var(WORLD) else {
        return 0;
    };
    let part = match Part::parse(&spec) {
        Ok(p) => p,
        Err(why) => {
            let code = errors::code(Class::InvalidArgument, &format!("{CALL}: {why}"));
            return errors::raise(world(), code);
        }
    };
    let wait = timeout();
    let (inter, handle) = match form_keeping(
        world(),
        &part.group(part.index),
        &part.group(part.other()),
        wait,
    ) {
        Ok(c) => c,
        Err(Failure::Mpi(code)) => return errors::raise(world(), code),
        Err(Failure::Bridge(BridgeError::RemoteNotReady { waited, .. })) => {
            let code = errors::code(
                Class::RemoteNotReady,
                &format!(
                    "{CALL}: {WORLD}={spec}: part {} of world {:?} (group {}) did not arrive \
                     within {waited:?} ({WORLD_TIMEOUT} sets the deadline)",
                    part.other(),
                    part.name,
                    part.group(part.other())
                ),
            );
            return errors::raise(world(), code);
        }
        Err(Failure::Bridge(e)) => {
            let code = errors::code(
                Class::of(&e),
                &format!("{CALL}: {WORLD}={spec}: cannot meet the other part: {e}"),
            );
            return errors::raise(world(), code);
        }
    };
    let others = state::bridge_comm(inter)
        .map(|bc| {
            (0..bc.inter.remote_size())
                .filter_map(|r| bc.inter.remote_process(r))
                .collect()
        })
        .unwrap_or_default();
    *JOINED.lock().unwrap_or_else(|p| p.into_inner()) = Some(Joined {
        _inter: inter,
        handle: Some(handle),
        others,
    });
    match merge_world(&part, inter) {
        Ok(()) => 0,
        Err(Fail::Mpi(code)) => errors::raise(world(), code),
        Err(Fail::Bridge(e)) => errors::fail(world(), CALL, &e),
    }
}

/// Registers `MPI_COMM_WORLD` as the merge of `inter` (part 0 first) and
/// sets the world's attributes.
fn merge_world(part: &Part, inter: MPI_Comm) -> Result<(), Fail> {
    let bc = state::bridge_comm(inter).ok_or_else(unregistered)?;
    let n = bc
        .derived
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let (merged_inter, coll) = contexts(bc.inter.derived(n)?)?;
    let order = Order::contiguous(
        part.index == 0,
        merged_inter.local_size(),
        merged_inter.remote_size(),
        merged_inter.rank(),
    );
    let size = c_int::try_from(order.size()).unwrap_or(c_int::MAX);
    let native = native_side(world())?;
    adopt(
        world(),
        native,
        (merged_inter, coll),
        order,
        (bc.local_group.clone(), bc.remote_group.clone()),
    )?;
    let tag_ub = smallest_tag_ub()?;
    // A spawned world's processes have their command's index (`appnum`).
    let appnum = crate::appnum::spawned()
        .unwrap_or_else(|| c_int::try_from(part.index).unwrap_or(c_int::MAX));
    crate::world_attrs::set(world(), appnum, size, tag_ub);
    Ok(())
}

fn unregistered() -> Fail {
    Fail::Bridge(BridgeError::InvalidArgument(
        "the world's communicators are not registered (freed during MPI_Init?)".into(),
    ))
}

/// The smallest `MPI_TAG_UB` of the world's ranks (the native ones of both
/// implementations), by an Allreduce over the world just made.
fn smallest_tag_ub() -> Result<c_int, Fail> {
    let mut value: *const c_int = std::ptr::null();
    let mut flag: c_int = 0;
    let tag_ub = crate::world_attrs::key(ffi::MPI_TAG_UB).unwrap_or(c_int::MAX);
    // SAFETY: the native world's predefined attribute; out-pointers ours.
    let rc = unsafe {
        ffi::PMPI_Comm_get_attr(
            world(),
            tag_ub,
            (&mut value as *mut *const c_int).cast(),
            &mut flag,
        )
    };
    if rc != 0 {
        return Err(Fail::Mpi(rc));
    }
    // MPI guarantees at least 32767.
    let mine: c_int = if flag != 0 && !value.is_null() {
        // SAFETY: MPI's pointer to the attribute's int.
        unsafe { *value }
    } else {
        32767
    };
    let mut least: c_int = mine;
    let mc = state::merged_comm(world()).ok_or_else(unregistered)?;
    // SAFETY: one int each way over the world (registered just now).
    let rc = unsafe {
        crate::merged::allreduce(
            &mc,
            (&mine as *const c_int).cast(),
            (&mut least as *mut c_int).cast(),
            1,
            ffi::RSMPI_INT32_T,
            ffi::RSMPI_MIN,
            world(),
        )
    };
    if rc != 0 {
        return Err(Fail::Mpi(rc));
    }
    Ok(least)
}

/// `MPI_Finalize`'s first step in a world: a barrier over the whole world,
/// so that no part finalizes while another still talks to it. 0 when this
/// job is no part of a world.
pub fn leave() -> c_int {
    let handle = match JOINED.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        None => return 0,
        Some(j) => j.handle.take(),
    };
    let rc = match state::merged_comm(world()) {
        // SAFETY: the world, registered at MPI_Init.
        Some(mc) => unsafe { crate::merged::barrier(&mc, world()) },
        None => 0,
    };
    // Leaving in order, so that this part's end is no death to the other
    // (collective over this part, whose ranks all got here).
    if let (Some(h), Some(b)) = (handle, state::opened()) {
        if let Err(e) = b.leave(h) {
            tracing::debug!(error = %e, "leaving the world's group");
        }
    }
    rc
}

/// The other part's processes, if this job is a part of a world.
pub fn other_processes() -> Vec<uuid::Uuid> {
    JOINED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|j| j.others.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::Part;

    #[test]
    fn a_part_is_name_index_and_count() {
        let p = Part::parse("run7:1/2").unwrap();
        assert_eq!((p.name.as_str(), p.index, p.parts), ("run7", 1, 2));
        assert_eq!(p.other(), 0);
        assert_eq!(p.group(0), "isthmus-world:run7/0");
        // A name may hold ':' itself: the last one separates.
        assert_eq!(Part::parse("a:b:0/2").unwrap().name, "a:b");
    }

    #[test]
    fn bad_parts_are_refused_with_the_reason() {
        for (spec, why) in [
            ("run7", "no ':'"),
            ("run7:0", "no '/'"),
            ("run7:x/2", "INDEX"),
            (":0/2", "NAME is empty"),
            ("run7:2/2", "below PARTS"),
            ("run7:0/3", "exactly 2"),
        ] {
            let e = Part::parse(spec).unwrap_err();
            assert!(e.contains(why), "{spec}: {e}");
        }
    }
}

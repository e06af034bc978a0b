//! What the datatype layer knows of an MPI datatype, cached for the
//! predefined ones.
//!
//! Describing a type takes a dozen MPI calls; a predefined type never
//! changes and its handle is never freed, so its description is kept. A
//! derived type's handle may be freed and reused for another type, so it is
//! described afresh on each call.

use std::cell::RefCell;
use std::ffi::c_int;
use std::sync::{Arc, OnceLock, RwLock};

use isthmus_bridge::datatype::{datatype_info, TypeInfo};
use isthmus_bridge::BridgeError;
use mpi::ffi;
use rustc_hash::FxHashMap;

use crate::mpi_glue::MPI_Datatype;

static NAMED: RwLock<Option<FxHashMap<usize, Arc<TypeInfo>>>> = RwLock::new(None);

fn key(dt: MPI_Datatype) -> usize {
    dt.0 as usize
}

pub(crate) fn combiner(dt: MPI_Datatype) -> Option<c_int> {
    let (mut ni, mut na, mut nd, mut combiner): (c_int, c_int, c_int, c_int) = (0, 0, 0, -1);
    // SAFETY: PMPI_Type_get_envelope only reads the handle and writes the
    // four out-parameters.
    let rc = unsafe { ffi::PMPI_Type_get_envelope(dt, &mut ni, &mut na, &mut nd, &mut combiner) };
    (rc == 0).then_some(combiner)
}

/// Whether `dt` is predefined. `MPI_COMBINER_NAMED` is 0 in Open MPI and 1
/// in MPICH: read it from a type known to be predefined.
pub(crate) fn is_named(dt: MPI_Datatype) -> bool {
    static NAMED: OnceLock<Option<c_int>> = OnceLock::new();
    // SAFETY: reading rsmpi's exported constant.
    let named = *NAMED.get_or_init(|| combiner(unsafe { ffi::RSMPI_INT32_T }));
    named.is_some() && combiner(dt) == named
}

thread_local! {
    /// The predefined type this thread described last: most programs send
    /// one type over and over, and the shared table's lock was a cost per
    /// message the Rust API does not pay (issue 18). A predefined handle
    /// names the same type for the whole run, so the entry never goes stale.
    static LAST_NAMED: RefCell<Option<(usize, Arc<TypeInfo>)>> = const { RefCell::new(None) };
}

/// The description of `dt`.
pub fn info_of(dt: MPI_Datatype) -> Result<Arc<TypeInfo>, BridgeError> {
    let hit = LAST_NAMED.with(|last| match &*last.borrow() {
        Some((k, info)) if *k == key(dt) => Some(Arc::clone(info)),
        _ => None,
    });
    if let Some(info) = hit {
        return Ok(info);
    }
    let (info, named) = info_of_shared(dt)?;
    if named {
        LAST_NAMED.with(|last| *last.borrow_mut() = Some((key(dt), Arc::clone(&info))));
    }
    Ok(info)
}

/// [`info_of`] through the process-wide table of predefined types; true
/// when `dt` is one of them.
fn info_of_shared(dt: MPI_Datatype) -> Result<(Arc<TypeInfo>, bool), BridgeError> {
    if let Some(i) = NAMED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .and_then(|m| m.get(&key(dt)))
    {
        return Ok((Arc::clone(i), true));
    }
    let info = Arc::new(datatype_info(dt)?);
    let named = is_named(dt);
    if named {
        NAMED
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(FxHashMap::default)
            .insert(key(dt), Arc::clone(&info));
    }
    Ok((info, named))
}

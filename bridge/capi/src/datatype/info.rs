//! What the datatype layer knows of an MPI datatype, cached for the
//! predefined ones.
//!
//! Describing a type takes a dozen MPI calls; a predefined type never
//! changes and its handle is never freed, so its description is kept. A
//! derived type's handle may be freed and reused for another type, so it is
//! described afresh on each call.

use std::cell::Cell;
use std::ffi::c_int;
use std::ops::Deref;
use std::sync::{Arc, OnceLock, RwLock};

use isthmus_bridge::datatype::{datatype_info, TypeInfo};
use isthmus_bridge::BridgeError;
use mpi::ffi;
use rustc_hash::FxHashMap;

use crate::mpi_glue::MPI_Datatype;

/// The predefined types' descriptions, kept for the whole run: there are
/// a few dozen (every handle in it is a predefined one, see [`is_named`]),
/// so leaking each once is bounded, and a reference to it costs no
/// reference count on every message (issue 18).
static NAMED: RwLock<Option<FxHashMap<usize, &'static TypeInfo>>> = RwLock::new(None);

/// A datatype's description: a predefined type's, kept for the whole run,
/// or a derived type's own.
#[derive(Clone)]
pub enum TypeRef {
    Named(&'static TypeInfo),
    Derived(Arc<TypeInfo>),
}

impl Deref for TypeRef {
    type Target = TypeInfo;

    fn deref(&self) -> &TypeInfo {
        match self {
            TypeRef::Named(i) => i,
            TypeRef::Derived(i) => i,
        }
    }
}

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
    static LAST_NAMED: Cell<Option<(usize, &'static TypeInfo)>> = const { Cell::new(None) };
}

/// The description of `dt`.
pub fn info_of(dt: MPI_Datatype) -> Result<TypeRef, BridgeError> {
    if let Some((k, info)) = LAST_NAMED.get() {
        if k == key(dt) {
            return Ok(TypeRef::Named(info));
        }
    }
    let info = info_of_shared(dt)?;
    if let TypeRef::Named(i) = info {
        LAST_NAMED.set(Some((key(dt), i)));
    }
    Ok(info)
}

/// [`info_of`] through the process-wide table of predefined types.
fn info_of_shared(dt: MPI_Datatype) -> Result<TypeRef, BridgeError> {
    if let Some(i) = NAMED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .and_then(|m| m.get(&key(dt)))
    {
        return Ok(TypeRef::Named(i));
    }
    let info = datatype_info(dt)?;
    if !is_named(dt) {
        return Ok(TypeRef::Derived(Arc::new(info)));
    }
    let mut named = NAMED.write().unwrap_or_else(|p| p.into_inner());
    // Another thread may have described it meanwhile: keep the first.
    let kept = *named
        .get_or_insert_with(FxHashMap::default)
        .entry(key(dt))
        .or_insert_with(|| Box::leak(Box::new(info)));
    Ok(TypeRef::Named(kept))
}

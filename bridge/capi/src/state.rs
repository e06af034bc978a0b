//! The library's process-wide state: the bridge (one per process, opened at
//! the first `Isthmus_Register`), the registered handles, and the map from
//! MPI communicator handles to bridge intercommunicators.
//!
//! The map is read on every interposed call, so it comes with a count kept
//! in an atomic: while no bridge communicator exists, calls on ordinary
//! communicators go to `PMPI_*` after one relaxed load.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use isthmus_bridge::{Bridge, BridgeError, Handle, InterComm};

use crate::mpi_glue::{comm_key, MPI_Comm};

/// The bridge of this process, opened once and kept until exit.
static BRIDGE: OnceLock<Bridge> = OnceLock::new();
/// Serializes opening it, so that a failed attempt can be retried.
static OPENING: Mutex<()> = Mutex::new(());

/// The process's bridge, connecting to the vmd on first use.
pub fn bridge() -> Result<&'static Bridge, BridgeError> {
    if let Some(b) = BRIDGE.get() {
        return Ok(b);
    }
    let _guard = OPENING.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(b) = BRIDGE.get() {
        return Ok(b);
    }
    init_logging();
    let b = Bridge::connect()?;
    Ok(BRIDGE.get_or_init(|| b))
}

/// The process's bridge if it was opened (never connects).
pub fn opened() -> Option<&'static Bridge> {
    BRIDGE.get()
}

/// With `ISTHMUS_LOG` set (a filter such as `info` or
/// `isthmus_bridge=debug`), the library's log lines go to standard error:
/// where each data connection goes, refused connections, failures. Unset:
/// nothing is logged. A program that installed its own subscriber keeps it.
fn init_logging() {
    if let Ok(filter) = std::env::var("ISTHMUS_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .try_init();
    }
}

/// A registered group, as `Isthmus_Register` returned it.
pub struct Registered {
    pub handle: Handle,
    /// A private duplicate of the registered communicator: each
    /// intercommunicator's local handle is duplicated from it.
    pub base: MPI_Comm,
}

// SAFETY: MPI handles are process-wide values, not tied to the thread that
// created them; MPI's own thread level governs their concurrent use, as for
// any handle a program passes between threads.
unsafe impl Send for Registered {}
// SAFETY: as above; `Handle` itself is only read through `&`.
unsafe impl Sync for Registered {}

static HANDLES: Mutex<Option<HashMap<c_int, Arc<Registered>>>> = Mutex::new(None);
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

pub fn add_handle(r: Registered) -> c_int {
    let id = c_int::try_from(NEXT_HANDLE.fetch_add(1, Ordering::Relaxed)).unwrap_or(c_int::MAX);
    let mut h = HANDLES.lock().unwrap_or_else(|p| p.into_inner());
    h.get_or_insert_with(HashMap::new).insert(id, Arc::new(r));
    id
}

pub fn handle(id: c_int) -> Option<Arc<Registered>> {
    let h = HANDLES.lock().unwrap_or_else(|p| p.into_inner());
    h.as_ref()?.get(&id).cloned()
}

pub fn take_handle(id: c_int) -> Option<Arc<Registered>> {
    let mut h = HANDLES.lock().unwrap_or_else(|p| p.into_inner());
    h.as_mut()?.remove(&id)
}

/// An MPI communicator whose point-to-point traffic goes over the bridge.
pub struct BridgeComm {
    pub inter: InterComm,
    /// Names of the two groups and their incarnations (`MPI_Comm_compare`).
    pub local_group: String,
    pub remote_group: String,
    /// How many communicators were derived from this one (`MPI_Comm_dup`).
    pub derived: AtomicU64,
    /// This job's side as a native communicator for the collectives'
    /// local steps (made at the first collective; see `coll`).
    pub coll: crate::local_side::LocalSide,
}

static COMMS: RwLock<Option<HashMap<usize, Arc<BridgeComm>>>> = RwLock::new(None);
static COMM_COUNT: AtomicUsize = AtomicUsize::new(0);

/// The bridge communicator behind `comm`, if it is one. The fast path for
/// ordinary communicators is the atomic load.
#[inline]
pub fn bridge_comm(comm: MPI_Comm) -> Option<Arc<BridgeComm>> {
    if COMM_COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let m = COMMS.read().unwrap_or_else(|p| p.into_inner());
    m.as_ref()?.get(&comm_key(comm)).cloned()
}

pub fn add_comm(comm: MPI_Comm, c: BridgeComm) {
    let mut m = COMMS.write().unwrap_or_else(|p| p.into_inner());
    if m.get_or_insert_with(HashMap::new)
        .insert(comm_key(comm), Arc::new(c))
        .is_none()
    {
        COMM_COUNT.fetch_add(1, Ordering::Relaxed);
    }
}

pub fn remove_comm(comm: MPI_Comm) -> Option<Arc<BridgeComm>> {
    let mut m = COMMS.write().unwrap_or_else(|p| p.into_inner());
    let gone = m.as_mut()?.remove(&comm_key(comm));
    if gone.is_some() {
        COMM_COUNT.fetch_sub(1, Ordering::Relaxed);
    }
    gone
}

//! The library's process-wide state: the bridge (one per process, opened at
//! the first `Isthmus_Register`), the registered handles, and the map from
//! MPI communicator handles to bridge intercommunicators.
//!
//! Two kinds of Isthmus communicator, each in a map of its own: a bridge
//! intercommunicator (`BridgeComm`) and a merged intracommunicator
//! (`MergedComm`, `MPI_Intercomm_merge` of one).
//!
//! The maps are read on every interposed call, so they come with one count
//! kept in an atomic: while no Isthmus communicator exists, calls on
//! ordinary communicators go to `PMPI_*` after one relaxed load.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use rustc_hash::FxHashMap;

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
    // A peer's MPI_Abort ends this process too.
    b.engine().on_abort(crate::peer_abort::handler());
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

static COMMS: RwLock<Option<FxHashMap<usize, Arc<BridgeComm>>>> = RwLock::new(None);
static COMM_COUNT: AtomicUsize = AtomicUsize::new(0);
/// Advanced by every change of `COMMS`: a thread's cached lookup
/// (`LAST_COMM`) holds while it is unchanged.
static COMMS_VERSION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The bridge communicator this thread looked up last, with the
    /// table's version then. A program sends on one communicator over and
    /// over; the table's lock and the reference count it took were a cost
    /// per message that the Rust API does not pay (issue 18). Weak, so
    /// that the cache never keeps a freed communicator alive.
    static LAST_COMM: RefCell<Option<(usize, u64, Weak<BridgeComm>)>> = const { RefCell::new(None) };
}

/// The bridge communicator behind `comm`, if it is one. The fast path for
/// ordinary communicators is the atomic load.
#[inline]
pub fn bridge_comm(comm: MPI_Comm) -> Option<Arc<BridgeComm>> {
    if COMM_COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let key = comm_key(comm);
    let version = COMMS_VERSION.load(Ordering::Acquire);
    let hit = LAST_COMM.with(|last| match &*last.borrow() {
        Some((k, v, bc)) if *k == key && *v == version => bc.upgrade(),
        _ => None,
    });
    if hit.is_some() {
        return hit;
    }
    let found = {
        let m = COMMS.read().unwrap_or_else(|p| p.into_inner());
        m.as_ref()?.get(&key).cloned()
    };
    if let Some(bc) = &found {
        LAST_COMM.with(|last| *last.borrow_mut() = Some((key, version, Arc::downgrade(bc))));
    }
    found
}

pub fn add_comm(comm: MPI_Comm, c: BridgeComm) {
    let mut m = COMMS.write().unwrap_or_else(|p| p.into_inner());
    if m.get_or_insert_with(FxHashMap::default)
        .insert(comm_key(comm), Arc::new(c))
        .is_none()
    {
        COMM_COUNT.fetch_add(1, Ordering::Relaxed);
    }
    COMMS_VERSION.fetch_add(1, Ordering::Release);
}

pub fn remove_comm(comm: MPI_Comm) -> Option<Arc<BridgeComm>> {
    let mut m = COMMS.write().unwrap_or_else(|p| p.into_inner());
    let gone = m.as_mut()?.remove(&comm_key(comm));
    if gone.is_some() {
        COMM_COUNT.fetch_sub(1, Ordering::Relaxed);
    }
    COMMS_VERSION.fetch_add(1, Ordering::Release);
    gone
}

/// Where a rank of a merged communicator lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In this job: its rank in the native local side.
    Local(u32),
    /// In the other job: its rank in the remote group of the intercomm.
    Remote(u32),
}

/// A merged communicator (`MPI_Intercomm_merge` of a bridge
/// intercommunicator, or a split of one whose ranks live in both jobs):
/// one intracommunicator over both jobs.
///
/// Order (`order`): the merge's (MPI 4.0 §7.6.2: the group whose `high`
/// flag is false comes first; with equal flags, the group whose name (as
/// registered) sorts first, so both sides agree), each job's ranks
/// contiguous; a split's, by key then old rank, may interleave the jobs.
/// Either way each job's ranks keep their local order: the native handle's
/// and `inter`'s local rank i is the job's i-th rank in the merged order.
///
/// Traffic: between jobs, point-to-point on `inter` (a context derived from
/// the intercomm's for this merge), collectives' bridge messages on `coll`
/// (derived from `inter`, so never matched by a user receive); inside the
/// job, the user's point-to-point on the handle itself (a native duplicate
/// of the local side, ranks translated), the collectives' native steps on
/// `native`, a second private duplicate no user call names.
pub struct MergedComm {
    pub inter: InterComm,
    pub coll: InterComm,
    pub native: MPI_Comm,
    /// Merged rank 0 is in this job.
    pub low: bool,
    pub local_group: String,
    pub remote_group: String,
    /// How many communicators were derived from this one (`MPI_Comm_dup`).
    pub derived: AtomicU64,
    /// Where each merged rank lives.
    pub order: Order,
    /// The side of its nonblocking collectives: a bridge communicator of
    /// its own between the two jobs' parts, on a context of its own
    /// (`merged::nonblocking`), never seen by the program.
    pub nbc: Arc<BridgeComm>,
}

// SAFETY: `native` is an MPI handle, a process-wide value (see `Registered`).
unsafe impl Send for MergedComm {}
// SAFETY: as above; it is only read.
unsafe impl Sync for MergedComm {}

/// A merged communicator's rank order: where each merged rank lives, and
/// back. Each job's ranks appear in their local order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// Merged rank -> place.
    places: Arc<[Place]>,
    /// This job's local rank i -> merged rank.
    local: Arc<[u32]>,
    /// The other job's rank j -> merged rank.
    remote: Arc<[u32]>,
    /// This process's rank in its job.
    local_rank: u32,
}

impl Order {
    /// The merge's order: each job contiguous, this job's first if `low`.
    pub fn contiguous(low: bool, local_size: u32, remote_size: u32, local_rank: u32) -> Order {
        let local = (0..local_size).map(Place::Local);
        let remote = (0..remote_size).map(Place::Remote);
        let places: Vec<Place> = if low {
            local.chain(remote).collect()
        } else {
            remote.chain(local).collect()
        };
        Order::of(places, local_rank)
    }
    /// The order `places` (merged rank -> place; each job's ranks in their
    /// local order, each once).
    ///
    /// A merged communicator's places name each job's ranks 0, 1, ... in
    /// order; a mixed intercommunicator's remote group (`MixedInter`) names
    /// some of its handle's native ranks, in any order: the maps back are
    /// indexed by the rank a place names, `u32::MAX` where none does.
    pub fn of(places: Vec<Place>, local_rank: u32) -> Order {
        let width = |local: bool| {
            places
                .iter()
                .filter_map(|p| match (p, local) {
                    (Place::Local(r), true) | (Place::Remote(r), false) => Some(*r as usize + 1),
                    _ => None,
                })
                .max()
                .unwrap_or(0)
        };
        let (mut local, mut remote) = (vec![u32::MAX; width(true)], vec![u32::MAX; width(false)]);
        for (m, p) in places.iter().enumerate() {
            let m = u32::try_from(m).unwrap_or(u32::MAX);
            let slot = match p {
                Place::Local(r) => local.get_mut(*r as usize),
                Place::Remote(r) => remote.get_mut(*r as usize),
            };
            if let Some(slot) = slot {
                *slot = m;
            }
        }
        Order {
            places: places.into(),
            local: local.into(),
            remote: remote.into(),
            local_rank,
        }
    }
    /// Size of the merged communicator.
    pub fn size(&self) -> u32 {
        u32::try_from(self.places.len()).unwrap_or(u32::MAX)
    }
    /// This process's merged rank.
    pub fn rank(&self) -> u32 {
        self.merged_rank(Place::Local(self.local_rank))
    }
    /// Where merged rank `r` lives; None if it is not a rank of this communicator.
    pub fn place(&self, r: u32) -> Option<Place> {
        self.places.get(r as usize).copied()
    }
    /// The merged rank of `p` (`u32::MAX` for a place that is none of ours).
    pub fn merged_rank(&self, p: Place) -> u32 {
        let (ranks, r) = match p {
            Place::Local(r) => (&self.local, r),
            Place::Remote(r) => (&self.remote, r),
        };
        ranks.get(r as usize).copied().unwrap_or(u32::MAX)
    }
    /// The merged ranks of this job's ranks, in local order.
    pub fn local_ranks(&self) -> &Arc<[u32]> {
        &self.local
    }
    /// The merged ranks of the other job's ranks, in their order.
    pub fn remote_ranks(&self) -> &Arc<[u32]> {
        &self.remote
    }
    /// Each job's ranks are contiguous (the merge's own order): the low
    /// job's, then the other's.
    pub fn contiguous_jobs(&self) -> bool {
        let first = |v: &[u32]| v.first().copied().unwrap_or(0);
        let runs = |v: &[u32]| v.windows(2).all(|w| matches!(w, [a, b] if a + 1 == *b));
        runs(&self.local)
            && runs(&self.remote)
            && (first(&self.local) == 0 || first(&self.remote) == 0)
    }
}

impl MergedComm {
    /// Ranks of this job.
    pub fn local_size(&self) -> u32 {
        self.inter.local_size()
    }
    /// Ranks of the other job.
    pub fn remote_size(&self) -> u32 {
        self.inter.remote_size()
    }
    /// Size of the merged communicator.
    pub fn size(&self) -> u32 {
        self.order.size()
    }
    /// This process's merged rank.
    pub fn rank(&self) -> u32 {
        self.order.rank()
    }
    /// Where merged rank `r` lives; None if it is not a rank of this communicator.
    pub fn place(&self, r: u32) -> Option<Place> {
        self.order.place(r)
    }
    /// The merged rank of `p`.
    pub fn merged_rank(&self, p: Place) -> u32 {
        self.order.merged_rank(p)
    }
}

/// What point-to-point on an Isthmus communicator whose ranks live in two
/// jobs needs (`merged::pt2pt`): where each rank a call names lives — a
/// merged communicator's own ranks, a mixed intercommunicator's remote
/// group — and the intercommunicator to the other job's.
pub trait Peers: Send + Sync {
    /// The ranks a call names, as places (and back, for statuses).
    fn order(&self) -> &Order;
    /// The bridge to the ranks of the other job.
    fn inter(&self) -> &InterComm;
}

impl Peers for MergedComm {
    fn order(&self) -> &Order {
        &self.order
    }
    fn inter(&self) -> &InterComm {
        &self.inter
    }
}

impl<T: Peers + ?Sized> Peers for Arc<T> {
    fn order(&self) -> &Order {
        (**self).order()
    }
    fn inter(&self) -> &InterComm {
        (**self).inter()
    }
}

/// The point-to-point side of `comm` if it is a merged communicator or a
/// mixed intercommunicator (`merged::anysource` finds its receives' so).
pub fn peers(comm: MPI_Comm) -> Option<Arc<dyn Peers>> {
    if let Some(mc) = merged_comm(comm) {
        return Some(mc);
    }
    mixed_comm(comm).map(|mx| mx as Arc<dyn Peers>)
}

static MERGED: RwLock<Option<FxHashMap<usize, Arc<MergedComm>>>> = RwLock::new(None);

/// The merged communicator behind `comm`, if it is one (the same fast path
/// as `bridge_comm`).
#[inline]
pub fn merged_comm(comm: MPI_Comm) -> Option<Arc<MergedComm>> {
    if COMM_COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let m = MERGED.read().unwrap_or_else(|p| p.into_inner());
    m.as_ref()?.get(&comm_key(comm)).cloned()
}

/// Is `comm` an Isthmus communicator of any kind?
pub fn is_isthmus(comm: MPI_Comm) -> bool {
    bridge_comm(comm).is_some() || merged_comm(comm).is_some() || mixed_comm(comm).is_some()
}

/// The merged communicator of this process whose point-to-point context is
/// `context` (`MPI_Intercomm_create`: the leader names its `peer_comm` so).
pub fn merged_with_context(context: u64) -> Option<Arc<MergedComm>> {
    let m = MERGED.read().unwrap_or_else(|p| p.into_inner());
    m.as_ref()?
        .values()
        .find(|mc| mc.inter.context() == context)
        .cloned()
}

pub fn add_merged(comm: MPI_Comm, c: MergedComm) {
    let mut m = MERGED.write().unwrap_or_else(|p| p.into_inner());
    if m.get_or_insert_with(FxHashMap::default)
        .insert(comm_key(comm), Arc::new(c))
        .is_none()
    {
        COMM_COUNT.fetch_add(1, Ordering::Relaxed);
    }
}

pub fn remove_merged(comm: MPI_Comm) -> Option<Arc<MergedComm>> {
    let mut m = MERGED.write().unwrap_or_else(|p| p.into_inner());
    let gone = m.as_mut()?.remove(&comm_key(comm));
    if gone.is_some() {
        COMM_COUNT.fetch_sub(1, Ordering::Relaxed);
    }
    gone
}

/// The local group of a mixed intercommunicator as an intracommunicator
/// of its own, for the local steps of its collectives: a private native
/// duplicate when the group is one job's, a private merged communicator
/// (registered in the merged map) when it spans both.
pub enum LocalGroup {
    Native(MPI_Comm),
    Merged(MPI_Comm),
}

/// A mixed intercommunicator (`MPI_Intercomm_create` whose local or remote
/// group spans both jobs; `src/mixed/`): an intercommunicator whose remote
/// group's ranks live in this job (reached natively on the handle, a
/// native communicator of this job's processes of both groups) or in the
/// other (reached over `inter`, an intercommunicator between this job's
/// and the other job's processes of both groups).
pub struct MixedInter {
    /// The remote group's ranks as places: `Local(rank in the handle)` or
    /// `Remote(rank in inter's remote group)`.
    pub peers: Order,
    pub inter: InterComm,
    /// The collectives' point-to-point: the same places on a private
    /// native duplicate of the handle and a context derived from `inter`.
    pub coll: MixedColl,
    /// The side of its nonblocking collectives (`mixed::nonblocking`): a
    /// bridge communicator on a context derived from `coll.inter`, whose
    /// sequence numbers, turns and native duplicate the schedules use.
    pub nbc: Arc<BridgeComm>,
    /// This process's rank in its (local) group, and the group's size.
    pub rank: u32,
    pub local_size: u32,
    pub local: LocalGroup,
    /// Both groups' members in one order (`mixed::Union`), for the
    /// groups, dup and merge.
    pub union: Arc<[Member]>,
    /// Names of the two groups' origin (the peer communicator's).
    pub local_group: String,
    pub remote_group: String,
    /// How many communicators were derived from this one.
    pub derived: AtomicU64,
    /// Its processes are in three jobs (`MPI_Comm_spawn_multiple` across
    /// implementations, `mixed::spawned`): no merge.
    pub three_jobs: bool,
}

/// The collectives' point-to-point side of a mixed intercommunicator.
pub struct MixedColl {
    pub peers: Order,
    pub inter: InterComm,
    pub native: MPI_Comm,
}

/// One process of a mixed intercommunicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// In the calling process's own group (else in the remote one).
    pub ours: bool,
    /// Its rank in its group.
    pub rank: u32,
    /// Where it lives: `Local(rank in the handle)`, `Remote(rank in inter's remote group)`.
    pub place: Place,
}

// SAFETY: the handles are MPI handles, process-wide values (see `Registered`).
unsafe impl Send for MixedInter {}
// SAFETY: as above; they are only read.
unsafe impl Sync for MixedInter {}
// SAFETY: as above.
unsafe impl Send for MixedColl {}
// SAFETY: as above.
unsafe impl Sync for MixedColl {}

impl Peers for MixedInter {
    fn order(&self) -> &Order {
        &self.peers
    }
    fn inter(&self) -> &InterComm {
        &self.inter
    }
}

impl Peers for MixedColl {
    fn order(&self) -> &Order {
        &self.peers
    }
    fn inter(&self) -> &InterComm {
        &self.inter
    }
}

static MIXED: RwLock<Option<FxHashMap<usize, Arc<MixedInter>>>> = RwLock::new(None);

/// The mixed intercommunicator behind `comm`, if it is one (the same fast
/// path as `bridge_comm`).
#[inline]
pub fn mixed_comm(comm: MPI_Comm) -> Option<Arc<MixedInter>> {
    if COMM_COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let m = MIXED.read().unwrap_or_else(|p| p.into_inner());
    m.as_ref()?.get(&comm_key(comm)).cloned()
}

pub fn add_mixed(comm: MPI_Comm, c: MixedInter) {
    let mut m = MIXED.write().unwrap_or_else(|p| p.into_inner());
    if m.get_or_insert_with(FxHashMap::default)
        .insert(comm_key(comm), Arc::new(c))
        .is_none()
    {
        COMM_COUNT.fetch_add(1, Ordering::Relaxed);
    }
}

pub fn remove_mixed(comm: MPI_Comm) -> Option<Arc<MixedInter>> {
    let mut m = MIXED.write().unwrap_or_else(|p| p.into_inner());
    let gone = m.as_mut()?.remove(&comm_key(comm));
    if gone.is_some() {
        COMM_COUNT.fetch_sub(1, Ordering::Relaxed);
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::{Order, Place};

    fn order(low: bool) -> Order {
        Order::contiguous(low, 2, 3, 1)
    }

    #[test]
    fn the_low_job_comes_first_and_each_job_stays_contiguous() {
        let lo = order(true);
        assert_eq!((lo.size(), lo.rank()), (5, 1));
        assert_eq!(lo.place(0), Some(Place::Local(0)));
        assert_eq!(lo.place(1), Some(Place::Local(1)));
        assert_eq!(lo.place(2), Some(Place::Remote(0)));
        assert_eq!(lo.place(4), Some(Place::Remote(2)));
        assert_eq!(lo.place(5), None);
        assert!(lo.contiguous_jobs());
        let hi = order(false);
        assert_eq!((hi.size(), hi.rank()), (5, 4));
        assert_eq!(hi.place(0), Some(Place::Remote(0)));
        assert_eq!(hi.place(2), Some(Place::Remote(2)));
        assert_eq!(hi.place(3), Some(Place::Local(0)));
        assert_eq!(hi.place(u32::MAX), None);
        assert!(hi.contiguous_jobs());
    }

    #[test]
    fn merged_rank_inverts_place() {
        let mixed = Order::of(
            vec![
                Place::Remote(0),
                Place::Local(0),
                Place::Remote(1),
                Place::Local(1),
            ],
            1,
        );
        assert_eq!(mixed.rank(), 3);
        assert!(!mixed.contiguous_jobs());
        assert_eq!(&mixed.local_ranks()[..], &[1, 3]);
        assert_eq!(&mixed.remote_ranks()[..], &[0, 2]);
        for o in [order(true), order(false), mixed] {
            for r in 0..o.size() {
                let p = o.place(r).unwrap();
                assert_eq!(o.merged_rank(p), r);
            }
        }
    }

    #[test]
    fn a_remote_group_may_name_native_ranks_in_any_order_with_gaps() {
        let o = Order::of(vec![Place::Local(3), Place::Remote(1), Place::Local(0)], 1);
        assert_eq!(o.size(), 3);
        assert_eq!(o.merged_rank(Place::Local(3)), 0);
        assert_eq!(o.merged_rank(Place::Local(0)), 2);
        assert_eq!(o.merged_rank(Place::Remote(1)), 1);
        assert_eq!(o.merged_rank(Place::Local(1)), u32::MAX);
        assert_eq!(o.merged_rank(Place::Remote(0)), u32::MAX);
        assert_eq!(o.merged_rank(Place::Local(9)), u32::MAX);
    }
}

//! Bridge requests as MPI requests, and the interposed wait/test family.
//!
//! Each non-blocking bridge operation is paired with a generalized request
//! (`MPI_Grequest_start`), a real `MPI_Request` that can sit in the same
//! array as native ones. The interposed `MPI_Wait*`/`MPI_Test*` calls first
//! finish the bridge operations among their arguments (decoding received
//! data into the user's buffer, on the calling thread) and mark their
//! generalized requests complete; then the native call does the rest —
//! status (through the request's query function), freeing, native requests.
//!
//! A nonblocking collective's request is a generalized request too
//! ([`start_schedule`]), completed when its schedule (`nbc`) ends.
//! While any schedule is under way, every interposed wait and test first
//! advances them all (`nbc::progress`), and the waits poll (each a loop of
//! its test) rather than block in MPI or in the bridge, so that schedules
//! go on whatever request the program waits for.
//!
//! A failed bridge operation is reported the way MPI reports a failed
//! request: the single-request calls return its code, the array calls
//! return `MPI_ERR_IN_STATUS` with the code in the status; either way it
//! goes through the communicator's error handler first.

use crate::failed_requests::{record_failure, take_failure, Failure};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use isthmus_bridge::wait::{Backoff, Pause};
use isthmus_bridge::{BridgeError, PendingInterComm, RecvRequest, SendRequest};
use mpi::ffi;

use crate::datatype::decode_received;
use crate::errors;
use crate::mpi_glue::{
    comm_null, fill_status, request_key, request_null, status_ignore, statuses_ignore, MPI_Comm,
    MPI_Request, MPI_Status, Outcome,
};
use crate::state::{self, BridgeComm};

/// An operation its own module advances (a merged communicator's
/// `MPI_ANY_SOURCE` receive, `merged::anysource`): every interposed wait
/// and test polls it, as it does a bridge request.
pub trait Polled: Send {
    /// Advances the operation: its outcome once it completed (its source
    /// already the communicator's rank), `None` while it has not.
    fn poll(&mut self) -> Option<Result<Outcome, BridgeError>>;
    /// `MPI_Cancel`: true if the operation was cancelled (nothing was
    /// received); false if it matched a message, and completes as a receive.
    fn cancel(&mut self) -> bool;
}

/// What a bridge request is doing.
pub enum Op {
    /// Polled by its own module (see [`Polled`]).
    Polled(Box<dyn Polled>),
    Send(SendRequest),
    Recv {
        req: RecvRequest,
        buf: *mut c_void,
        count: usize,
        /// Held until the receive decodes (the program may free it).
        dt: crate::datatype::HeldType,
    },
    /// A native request of a merged communicator (`merged::pt2pt`), whose
    /// status must name a merged rank: completed with `PMPI_Wait`/`PMPI_Test`
    /// and reported through the generalized request.
    Native(MPI_Request),
    /// `Isthmus_Intercomm_icreate`: the local handle is duplicated at the
    /// call; it becomes a bridge communicator and is written to `out` when
    /// the intercommunicator is formed.
    Create {
        pending: Box<PendingInterComm<'static>>,
        newcomm: MPI_Comm,
        out: *mut MPI_Comm,
        local_group: String,
        remote_group: String,
    },
}

struct Entry {
    op: Op,
    /// The request's generalized request, completed when `op` is.
    req: MPI_Request,
    /// Where errors are raised.
    comm: MPI_Comm,
    call: &'static str,
    outcome: Arc<Mutex<Outcome>>,
    /// The status's source as the communicator's rank: a merged
    /// communicator's ranks of the group the request's source counts in
    /// (else the source as it is).
    sources: Option<Arc<[u32]>>,
}

// SAFETY: an entry's raw pointers are the user's buffers and handles that
// MPI's rules keep valid until the request completes; the entry is only
// used by the thread that finishes the request (it is taken out of the
// table first), as MPI requires of a request's completion.
unsafe impl Send for Entry {}

static PENDING: Mutex<Option<HashMap<usize, Entry>>> = Mutex::new(None);
static PENDING_COUNT: AtomicUsize = AtomicUsize::new(0);

fn pending() -> std::sync::MutexGuard<'static, Option<HashMap<usize, Entry>>> {
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

fn take(key: usize) -> Option<Entry> {
    if PENDING_COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let e = pending().as_mut()?.remove(&key);
    if e.is_some() {
        PENDING_COUNT.fetch_sub(1, Ordering::Relaxed);
    }
    e
}

fn put_back(key: usize, e: Entry) {
    pending().get_or_insert_with(HashMap::new).insert(key, e);
    PENDING_COUNT.fetch_add(1, Ordering::Relaxed);
}

fn is_bridge(key: usize) -> bool {
    PENDING_COUNT.load(Ordering::Relaxed) != 0
        && pending().as_ref().is_some_and(|m| m.contains_key(&key))
}

unsafe extern "C" fn query(extra: *mut c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: `extra` is the `Arc<Mutex<Outcome>>` given to Grequest_start,
    // alive until `free` runs, which MPI calls after the last query.
    let outcome = unsafe { &*(extra as *const Mutex<Outcome>) };
    let o = *outcome.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: MPI passes a valid status to the query function.
    unsafe { fill_status(status, &o) };
    0
}

unsafe extern "C" fn free(extra: *mut c_void) -> c_int {
    // SAFETY: the pointer came from Arc::into_raw in `start`; MPI calls the
    // free function exactly once.
    drop(unsafe { Arc::from_raw(extra as *const Mutex<Outcome>) });
    0
}

unsafe extern "C" fn cancel(_extra: *mut c_void, _complete: c_int) -> c_int {
    // Cancellation is done by the interposed MPI_Cancel before MPI sees it.
    0
}

fn grequest(outcome: &Arc<Mutex<Outcome>>) -> Result<MPI_Request, c_int> {
    let mut req = request_null();
    let extra = Arc::into_raw(Arc::clone(outcome)) as *mut c_void;
    // SAFETY: the callbacks match MPI's prototypes; `extra` stays valid
    // until `free` (one reference is owned by MPI from here).
    let rc =
        unsafe { ffi::PMPI_Grequest_start(Some(query), Some(free), Some(cancel), extra, &mut req) };
    if rc != 0 {
        // SAFETY: MPI did not take the reference; give it back.
        drop(unsafe { Arc::from_raw(extra as *const Mutex<Outcome>) });
        return Err(rc);
    }
    Ok(req)
}

/// Starts tracking `op` and returns its MPI request.
pub fn start(op: Op, comm: MPI_Comm, call: &'static str) -> Result<MPI_Request, c_int> {
    start_from(op, comm, call, None)
}

/// [`start`], the status's source `s` reported as `sources[s]` (a merged
/// communicator's request: its ranks of the group `s` counts in).
pub fn start_from(
    op: Op,
    comm: MPI_Comm,
    call: &'static str,
    sources: Option<Arc<[u32]>>,
) -> Result<MPI_Request, c_int> {
    let outcome = Arc::new(Mutex::new(Outcome::empty()));
    let req = grequest(&outcome)?;
    put_back(
        request_key(req),
        Entry {
            op,
            req,
            comm,
            call,
            outcome,
            sources,
        },
    );
    Ok(req)
}

/// Runs a nonblocking collective's schedule from `first` (`op` begun on
/// its communicator): the program's request, written to `request`, is a
/// generalized request completed when the schedule ends; its first steps
/// are taken at once.
///
/// # Safety
/// `request` is the program's writable `MPI_Request`; every buffer and
/// handle the stages use stays valid until the request completes (MPI's
/// rule for a nonblocking collective's arguments).
pub(crate) unsafe fn start_schedule(
    op: crate::nbc::Op,
    first: crate::nbc::Stage,
    request: *mut MPI_Request,
) -> c_int {
    let outcome = Arc::new(Mutex::new(Outcome::empty()));
    let req = match grequest(&outcome) {
        Ok(r) => r,
        Err(rc) => return errors::raise(op.comm(), rc),
    };
    op.run(first, req, outcome);
    // SAFETY: the program's out-pointer (this function's contract).
    unsafe { *request = req };
    progress();
    0
}

/// Advances every nonblocking collective's schedule, and completes the
/// requests of those that ended: successfully, or with their error code
/// (raised through their communicator's error handler when the program
/// waits for or tests the request).
fn progress() {
    for f in crate::nbc::progress() {
        if let Some((code, comm)) = f.failed {
            record_failure(f.key, Failure { code, comm });
            *f.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Outcome {
                error: code,
                ..Outcome::empty()
            };
        }
        // SAFETY: the schedule's generalized request, not yet completed.
        unsafe { ffi::PMPI_Grequest_complete(f.req) };
        if crate::nbc::retire(f.key) {
            // The last one: what the program freed meanwhile goes now.
            crate::nbc::deferred::flush();
        }
    }
}

/// A request that is complete at once with `outcome` (e.g. to `MPI_PROC_NULL`).
pub fn completed(outcome: Outcome) -> Result<MPI_Request, c_int> {
    let outcome = Arc::new(Mutex::new(outcome));
    let req = grequest(&outcome)?;
    // SAFETY: `req` is the generalized request just started.
    let rc = unsafe { ffi::PMPI_Grequest_complete(req) };
    if rc != 0 {
        return Err(rc);
    }
    Ok(req)
}

/// Finishes `e` if its operation is done (blocking if `block`); puts it
/// back otherwise. True if it finished.
fn finish(key: usize, e: Entry, block: bool) -> bool {
    let Entry {
        op,
        req,
        comm,
        call,
        outcome,
        sources,
    } = e;
    let result: Result<Outcome, BridgeError> = match op {
        Op::Send(r) => {
            if !block && !r.test() {
                put_back(
                    key,
                    Entry {
                        op: Op::Send(r),
                        req,
                        comm,
                        call,
                        outcome,
                        sources,
                    },
                );
                return false;
            }
            r.wait().map(|()| Outcome {
                source: 0,
                tag: 0,
                bytes: 0,
                cancelled: false,
                error: 0,
            })
        }
        Op::Recv {
            req: r,
            buf,
            count,
            dt,
        } => {
            if !block && !r.test() {
                put_back(
                    key,
                    Entry {
                        op: Op::Recv {
                            req: r,
                            buf,
                            count,
                            dt,
                        },
                        req,
                        comm,
                        call,
                        outcome,
                        sources,
                    },
                );
                return false;
            }
            r.wait().and_then(|(bytes, st)| {
                // SAFETY: `buf` addresses `count` elements of `dt`, as the
                // program promised MPI_Irecv until the request completes.
                unsafe { decode_received(&bytes, &st, buf, count, dt.get()) }
            })
        }
        Op::Native(mut native) => {
            let mut st = crate::mpi_glue::empty_status();
            let mut done: c_int = 1;
            // SAFETY: our native request and a status of ours.
            let rc = unsafe {
                if block {
                    ffi::PMPI_Wait(&mut native, &mut st)
                } else {
                    ffi::PMPI_Test(&mut native, &mut done, &mut st)
                }
            };
            if rc == 0 && done == 0 {
                put_back(
                    key,
                    Entry {
                        op: Op::Native(native),
                        req,
                        comm,
                        call,
                        outcome,
                        sources,
                    },
                );
                return false;
            }
            Ok(crate::mpi_glue::outcome_of(&st, rc))
        }
        Op::Polled(mut p) => {
            let mut backoff = Backoff::new();
            loop {
                if let Some(r) = p.poll() {
                    break r;
                }
                if !block {
                    let op = Op::Polled(p);
                    let e = Entry {
                        op,
                        req,
                        comm,
                        call,
                        outcome,
                        sources,
                    };
                    put_back(key, e);
                    return false;
                }
                backoff.pause();
            }
        }
        Op::Create {
            mut pending,
            newcomm,
            out,
            local_group,
            remote_group,
        } => {
            let (formed, pending) = if block {
                (pending.wait().map(Some), None)
            } else {
                let f = pending.test();
                (f, Some(pending))
            };
            match formed {
                Ok(None) => {
                    if let Some(pending) = pending {
                        put_back(
                            key,
                            Entry {
                                op: Op::Create {
                                    pending,
                                    newcomm,
                                    out,
                                    local_group,
                                    remote_group,
                                },
                                req,
                                comm,
                                call,
                                outcome,
                                sources,
                            },
                        );
                    }
                    return false;
                }
                Ok(Some(inter)) => {
                    state::add_comm(
                        newcomm,
                        BridgeComm {
                            inter,
                            local_group,
                            remote_group,
                            derived: Default::default(),
                            coll: Default::default(),
                        },
                    );
                    // SAFETY: `out` is the program's MPI_Comm, valid until
                    // the request completes (as for MPI_Comm_idup).
                    unsafe { *out = newcomm };
                    Ok(Outcome::empty())
                }
                Err(e) => {
                    let mut dead = newcomm;
                    // SAFETY: `newcomm` is our duplicate, never handed out.
                    unsafe {
                        ffi::PMPI_Comm_free(&mut dead);
                        *out = comm_null();
                    }
                    Err(e)
                }
            }
        }
    };
    let o = match result {
        Ok(mut o) if o.source >= 0 && o.source != crate::mpi_glue::proc_null() => {
            if let Some(map) = &sources {
                let mapped = usize::try_from(o.source).ok().and_then(|s| map.get(s));
                o.source = mapped.map_or(c_int::MAX, |&m| c_int::try_from(m).unwrap_or(c_int::MAX));
            }
            o
        }
        Ok(o) => o,
        Err(e) => {
            let code = errors::code_of(call, &e);
            record_failure(key, Failure { code, comm });
            Outcome {
                error: code,
                ..Outcome::empty()
            }
        }
    };
    *outcome.lock().unwrap_or_else(|p| p.into_inner()) = o;
    // SAFETY: `req` is our generalized request, not yet completed.
    unsafe { ffi::PMPI_Grequest_complete(req) };
    true
}

/// Finishes every bridge request among `reqs` that is done; true if none
/// is left pending.
/// Every nonblocking collective's schedule is advanced first.
fn advance(reqs: &[MPI_Request]) -> bool {
    progress();
    let mut all = true;
    for r in reqs {
        let key = request_key(*r);
        if let Some(e) = take(key) {
            all &= finish(key, e, false);
        } else if crate::nbc::owns(key) {
            all = false;
        }
    }
    all
}

/// Snapshots the keys of `reqs` (MPI overwrites finished ones with null).
fn keys_of(reqs: &[MPI_Request]) -> Vec<(usize, usize)> {
    reqs.iter()
        .enumerate()
        .map(|(i, r)| (i, request_key(*r)))
        .collect()
}

/// # Safety
/// `ptr` addresses `n` requests.
unsafe fn slice<'a>(ptr: *mut MPI_Request, n: c_int) -> &'a mut [MPI_Request] {
    let n = usize::try_from(n).unwrap_or(0);
    if n == 0 || ptr.is_null() {
        return &mut [];
    }
    // SAFETY: the caller guarantees `n` requests at `ptr`.
    unsafe { std::slice::from_raw_parts_mut(ptr, n) }
}

/// Puts `code` in the status of each failed position (statuses of the
/// others get MPI_SUCCESS), for MPI_ERR_IN_STATUS.
///
/// # Safety
/// `statuses` is ignore/null or holds one status per position.
unsafe fn mark_statuses(statuses: *mut MPI_Status, codes: &[(usize, c_int)], n: usize) {
    if statuses.is_null() || statuses == statuses_ignore() {
        return;
    }
    for i in 0..n {
        let code = codes.iter().find(|(j, _)| *j == i).map_or(0, |(_, c)| *c);
        // SAFETY: one status per position.
        unsafe { (*statuses.add(i)).MPI_ERROR = code };
    }
}

/// What an array call returns once MPI completed `keys` (position, request
/// key) with `rc`: MPI_ERR_IN_STATUS with each failed bridge request's code
/// in its status (raised through its error handler), else `rc`.
///
/// # Safety
/// `statuses` is ignore/null or holds `n` statuses.
unsafe fn in_status(
    rc: c_int,
    keys: &[(usize, usize)],
    statuses: *mut MPI_Status,
    n: usize,
) -> c_int {
    let failed = failures(keys);
    if failed.is_empty() {
        return rc;
    }
    // SAFETY: the caller's contract.
    unsafe { mark_statuses(statuses, &failed, n) };
    ffi::MPI_ERR_IN_STATUS as c_int
}

/// Collects the failures among `keys` (positions MPI completed), raising
/// each through its error handler.
fn failures(keys: &[(usize, usize)]) -> Vec<(usize, c_int)> {
    let mut out = Vec::new();
    for &(i, key) in keys {
        if let Some(f) = take_failure(key) {
            errors::raise(f.comm, f.code);
            out.push((i, f.code));
        }
    }
    out
}

/// Reports the failure of the bridge request `key`, which MPI just
/// completed into `status`, if it failed: its code in the status, raised
/// through its communicator's error handler.
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE` or a writable status.
unsafe fn reported(key: usize, status: *mut MPI_Status) -> Option<c_int> {
    let f = take_failure(key)?;
    if status != status_ignore() && !status.is_null() {
        // SAFETY: a writable status (the caller's contract).
        unsafe { (*status).MPI_ERROR = f.code };
    }
    Some(errors::raise(f.comm, f.code))
}

// ------------------------------------------------------------ interposed

/// # Safety
/// As `MPI_Wait`.
unsafe fn wait_ops(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    if nothing_of_ours() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Wait(request, status) };
    }
    if !crate::nbc::idle() {
        // Schedules under way: poll, advancing them, whatever the request.
        let mut pause = Pause::new();
        loop {
            let mut flag = 0;
            // SAFETY: forwarded contract; `flag` is ours.
            let rc = unsafe { test_ops(request, &mut flag, status) };
            if rc != 0 || flag != 0 {
                return rc;
            }
            pause.pause();
        }
    }
    if request.is_null() {
        // SAFETY: as above (MPI reports the null pointer).
        return unsafe { ffi::PMPI_Wait(request, status) };
    }
    // SAFETY: `request` is non-null and the program's.
    let key = request_key(unsafe { *request });
    if let Some(e) = take(key) {
        finish(key, e, true);
    }
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Wait(request, status) };
    // SAFETY: the program's status (or ignore).
    unsafe { reported(key, status) }.unwrap_or(rc)
}

/// No bridge request or schedule is pending or has an unreported failure:
/// the call is MPI's alone (three relaxed loads on the path of every plain
/// program).
fn nothing_of_ours() -> bool {
    PENDING_COUNT.load(Ordering::Relaxed) == 0
        && crate::failed_requests::none()
        && crate::nbc::idle()
}

/// A test that found nothing of the program's done while something of
/// ours is pending: every few of them the core goes to whatever else is
/// runnable (`sched_yield`, as Open MPI's `mpi_yield_when_idle` does in
/// its progress loop). A program polling `MPI_Test` otherwise keeps its
/// core from what its request waits for when cores are shared: the peer
/// ranks, the bridge's poller (an `MPI_Ibarrier` polled with `MPI_Test`
/// on a merged communicator of 2 + 2 ranks on two cores took 11.5 ms, one
/// time slice a step). A yield with nothing else runnable returns at once.
fn idle_test() {
    thread_local! {
        static IDLE_TESTS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    let n = IDLE_TESTS.with(|c| {
        let n = c.get().wrapping_add(1);
        c.set(n);
        n
    });
    if n.is_multiple_of(IDLE_TESTS_PER_YIELD) {
        std::thread::yield_now();
    }
}

/// Unsuccessful tests between two yields ([`idle_test`]).
const IDLE_TESTS_PER_YIELD: u32 = 4;

/// # Safety
/// As `MPI_Test`.
unsafe fn test_ops(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    if request.is_null() || nothing_of_ours() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Test(request, flag, status) };
    }
    progress();
    // SAFETY: non-null, the program's.
    let key = request_key(unsafe { *request });
    if crate::nbc::owns(key) {
        // SAFETY: `flag` is the program's out-pointer.
        unsafe { *flag = 0 };
        idle_test();
        return 0;
    }
    if let Some(e) = take(key) {
        if !finish(key, e, false) {
            // SAFETY: `flag` is the program's out-pointer.
            unsafe { *flag = 0 };
            idle_test();
            return 0;
        }
    }
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Test(request, flag, status) };
    // SAFETY: `flag` is the program's out-pointer, set by MPI.
    if rc == 0 && unsafe { *flag } == 0 {
        idle_test();
    }
    // SAFETY: the program's status (or ignore).
    unsafe { reported(key, status) }.unwrap_or(rc)
}

/// # Safety
/// As `MPI_Waitall`.
unsafe fn waitall_ops(
    count: c_int,
    requests: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> c_int {
    if nothing_of_ours() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Waitall(count, requests, statuses) };
    }
    if !crate::nbc::idle() {
        // Schedules under way: poll, advancing them, whatever the requests.
        let mut pause = Pause::new();
        loop {
            let mut flag = 0;
            // SAFETY: forwarded contract; `flag` is ours.
            let rc = unsafe { testall_ops(count, requests, &mut flag, statuses) };
            if rc != 0 || flag != 0 {
                return rc;
            }
            pause.pause();
        }
    }
    // SAFETY: the program passes `count` requests.
    let reqs = unsafe { slice(requests, count) };
    let keys = keys_of(reqs);
    let bridge: Vec<usize> = keys
        .iter()
        .filter(|(_, k)| is_bridge(*k))
        .map(|(i, _)| *i)
        .collect();
    let natives = keys.len() - bridge.len();
    if natives == 0 || bridge.is_empty() {
        // Only bridge requests (or none): block on each in turn.
        for key in bridge.iter().filter_map(|&i| keys.get(i)).map(|k| k.1) {
            if let Some(e) = take(key) {
                finish(key, e, true);
            }
        }
    } else {
        // Mixed: finish bridge requests as they complete, and let MPI make
        // progress on the native ones meanwhile (without completing them:
        // their statuses come from the final MPI_Waitall).
        let mut pause = Pause::new();
        while !advance(reqs) {
            for r in reqs.iter_mut() {
                if !is_bridge(request_key(*r)) && *r != request_null() {
                    let mut flag = 0;
                    // SAFETY: a live request of the program.
                    unsafe { ffi::PMPI_Request_get_status(*r, &mut flag, status_ignore()) };
                }
            }
            pause.pause();
        }
    }
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Waitall(count, requests, statuses) };
    // SAFETY: `statuses` is the program's array of `count`, or ignore.
    unsafe { in_status(rc, &keys, statuses, keys.len()) }
}

/// # Safety
/// As `MPI_Testall`.
unsafe fn testall_ops(
    count: c_int,
    requests: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    if nothing_of_ours() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Testall(count, requests, flag, statuses) };
    }
    // SAFETY: the program passes `count` requests.
    let reqs = unsafe { slice(requests, count) };
    let keys = keys_of(reqs);
    advance(reqs);
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Testall(count, requests, flag, statuses) };
    // SAFETY: `flag` is the program's out-pointer.
    if unsafe { *flag } == 0 {
        idle_test();
        return rc;
    }
    // SAFETY: as above.
    unsafe { in_status(rc, &keys, statuses, keys.len()) }
}

/// # Safety
/// As `MPI_Waitany`.
unsafe fn waitany_ops(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if nothing_of_ours() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Waitany(count, requests, index, status) };
    }
    let mut pause = Pause::new();
    loop {
        let mut flag = 0;
        // SAFETY: forwarded contract; `flag` is ours.
        let rc = unsafe { testany_ops(count, requests, index, &mut flag, status) };
        if rc != 0 || flag != 0 {
            return rc;
        }
        pause.pause();
    }
}

/// # Safety
/// As `MPI_Testany`.
unsafe fn testany_ops(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if nothing_of_ours() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Testany(count, requests, index, flag, status) };
    }
    // SAFETY: the program passes `count` requests.
    let reqs = unsafe { slice(requests, count) };
    let keys = keys_of(reqs);
    advance(reqs);
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Testany(count, requests, index, flag, status) };
    // SAFETY: out-pointers set by MPI.
    let (done, i) = unsafe { (*flag, *index) };
    if done == 0 {
        idle_test();
    }
    if done != 0 {
        if let Some(&(_, key)) = usize::try_from(i).ok().and_then(|i| keys.get(i)) {
            // SAFETY: the program's status (or ignore).
            if let Some(code) = unsafe { reported(key, status) } {
                return code;
            }
        }
    }
    rc
}

/// # Safety
/// As `MPI_Waitsome`.
unsafe fn waitsome_ops(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    if nothing_of_ours() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Waitsome(incount, requests, outcount, indices, statuses) };
    }
    let mut pause = Pause::new();
    loop {
        // SAFETY: forwarded contract.
        let rc = unsafe { testsome_ops(incount, requests, outcount, indices, statuses) };
        // SAFETY: out-pointer set by MPI.
        if rc != 0 || unsafe { *outcount } != 0 {
            return rc;
        }
        pause.pause();
    }
}

/// # Safety
/// As `MPI_Testsome`.
unsafe fn testsome_ops(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    if nothing_of_ours() {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Testsome(incount, requests, outcount, indices, statuses) };
    }
    // SAFETY: the program passes `incount` requests.
    let reqs = unsafe { slice(requests, incount) };
    let keys = keys_of(reqs);
    advance(reqs);
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Testsome(incount, requests, outcount, indices, statuses) };
    // SAFETY: set by MPI.
    let n = unsafe { *outcount };
    if n == 0 {
        idle_test();
    }
    let Ok(n) = usize::try_from(n) else {
        return rc; // MPI_UNDEFINED: no active requests
    };
    // SAFETY: MPI wrote `n` indices.
    let done: Vec<usize> = (0..n)
        .filter_map(|j| usize::try_from(unsafe { *indices.add(j) }).ok())
        .collect();
    let completed: Vec<(usize, usize)> = done
        .iter()
        .enumerate()
        .filter_map(|(slot, &i)| keys.get(i).map(|&(_, k)| (slot, k)))
        .collect();
    // SAFETY: statuses are per output slot.
    unsafe { in_status(rc, &completed, statuses, n) }
}

/// # Safety
/// As `MPI_Request_get_status`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(
    request: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // A persistent request of ours: its operation's state (an inactive
    // one's, MPI_REQUEST_NULL's: complete, with an empty status).
    let request = crate::persist::table::stand_in(request).unwrap_or(request);
    progress();
    let key = request_key(request);
    if let Some(e) = take(key) {
        finish(key, e, false);
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { ffi::PMPI_Request_get_status(request, flag, status) }
}

/// # Safety
/// As `MPI_Request_free`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    if !request.is_null() {
        // A persistent request of ours: its operation, if active, is freed
        // as a nonblocking one is (it completes on its own), then the
        // program's handle.
        // SAFETY: non-null, the program's.
        if let Some(active) = crate::persist::table::remove(unsafe { *request }) {
            if let Some(mut op) = active {
                // SAFETY: the operation's request, ours.
                unsafe { MPI_Request_free(&mut op) };
            }
            // SAFETY: the program's handle, an inactive native request.
            return unsafe { ffi::PMPI_Request_free(request) };
        }
        // SAFETY: non-null, the program's.
        let key = request_key(unsafe { *request });
        if let Some(e) = take(key) {
            // A send goes on by itself; a receive is cancelled unless a
            // message matched it, which is then delivered into the buffer
            // (MPI lets a freed receive complete on its own).
            let e = match e.op {
                Op::Recv {
                    req,
                    buf,
                    count,
                    dt,
                } => match req.cancel() {
                    None => None,
                    Some(r) => {
                        if let Ok((bytes, st)) = r {
                            // SAFETY: the buffer stays the program's until
                            // the receive completes, which is now.
                            let _ = unsafe { decode_received(&bytes, &st, buf, count, dt.get()) };
                        }
                        None
                    }
                },
                Op::Native(mut native) => {
                    // SAFETY: our native request; MPI completes it on its own.
                    unsafe { ffi::PMPI_Request_free(&mut native) };
                    None
                }
                Op::Polled(mut p) => {
                    // Matched already: its message is delivered now.
                    if !p.cancel() {
                        let mut backoff = Backoff::new();
                        while p.poll().is_none() {
                            backoff.pause();
                        }
                    }
                    None
                }
                other => Some(other),
            };
            drop(e);
            // SAFETY: our generalized request: complete it so MPI frees it.
            unsafe { ffi::PMPI_Grequest_complete(*request) };
        }
        take_failure(key);
    }
    // SAFETY: the program's argument, passed on.
    unsafe { ffi::PMPI_Request_free(request) }
}

/// # Safety
/// As `MPI_Cancel`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(request: *mut MPI_Request) -> c_int {
    if request.is_null() {
        // SAFETY: passed on, MPI reports it.
        return unsafe { ffi::PMPI_Cancel(request) };
    }
    // A persistent request of ours: its operation, if active (an inactive
    // one has nothing to cancel).
    // SAFETY: non-null, the program's.
    if let Some(mut op) = crate::persist::table::stand_in(unsafe { *request }) {
        if op == request_null() {
            return 0;
        }
        // SAFETY: the operation's request, ours.
        return unsafe { MPI_Cancel(&mut op) };
    }
    // SAFETY: non-null, the program's.
    let key = request_key(unsafe { *request });
    let Some(e) = take(key) else {
        // SAFETY: passed on.
        return unsafe { ffi::PMPI_Cancel(request) };
    };
    match e.op {
        Op::Recv {
            req,
            buf,
            count,
            dt,
        } => {
            let Entry {
                req: greq,
                comm,
                call,
                outcome,
                ..
            } = e;
            match req.cancel() {
                None => {
                    *outcome.lock().unwrap_or_else(|p| p.into_inner()) = Outcome {
                        cancelled: true,
                        ..Outcome::empty()
                    };
                    // SAFETY: our generalized request, not yet completed.
                    unsafe { ffi::PMPI_Grequest_complete(greq) };
                }
                Some(r) => {
                    // Too late: it matched. Complete it as a receive.
                    let o = r.and_then(|(bytes, st)| {
                        // SAFETY: the buffer is the program's until completion.
                        unsafe { decode_received(&bytes, &st, buf, count, dt.get()) }
                    });
                    let o = o.unwrap_or_else(|err| {
                        let code = errors::code_of(call, &err);
                        record_failure(key, Failure { code, comm });
                        Outcome {
                            error: code,
                            ..Outcome::empty()
                        }
                    });
                    *outcome.lock().unwrap_or_else(|p| p.into_inner()) = o;
                    // SAFETY: as above.
                    unsafe { ffi::PMPI_Grequest_complete(greq) };
                }
            }
            0
        }
        // A native receive is cancelled natively; its completion says so.
        Op::Native(mut native) => {
            // SAFETY: our native request.
            let rc = unsafe { ffi::PMPI_Cancel(&mut native) };
            put_back(
                key,
                Entry {
                    op: Op::Native(native),
                    ..e
                },
            );
            rc
        }
        Op::Polled(mut p) => {
            if p.cancel() {
                *e.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Outcome {
                    cancelled: true,
                    ..Outcome::empty()
                };
                // SAFETY: our generalized request, not yet completed.
                unsafe { ffi::PMPI_Grequest_complete(e.req) };
            } else {
                put_back(
                    key,
                    Entry {
                        op: Op::Polled(p),
                        ..e
                    },
                );
            }
            0
        }
        // A send or a creation cannot be taken back; MPI lets a cancel
        // fail to cancel (the status then says not cancelled).
        op => {
            put_back(key, Entry { op, ..e });
            0
        }
    }
}

// ------------------------------------------------- persistent requests

/// Runs `f` on the `count` requests at `requests` with each persistent
/// request of ours (`persist::table`) replaced by its operation (by
/// `MPI_REQUEST_NULL` while inactive, which every wait and test completes
/// at once with an empty status, as MPI does an inactive persistent
/// request); then puts the program's handles back, those whose operation
/// completed now inactive. Without persistent requests, `f` on `requests`.
///
/// # Safety
/// `requests` addresses `count` requests (or is null); `f` is a wait or
/// test over that many.
unsafe fn with_stand_ins(
    requests: *mut MPI_Request,
    count: c_int,
    f: impl FnOnce(*mut MPI_Request) -> c_int,
) -> c_int {
    if !crate::persist::table::any() || requests.is_null() {
        return f(requests);
    }
    // SAFETY: the caller's contract.
    let reqs = unsafe { slice(requests, count) };
    let stand: Vec<Option<MPI_Request>> = reqs
        .iter()
        .map(|r| crate::persist::table::stand_in(*r))
        .collect();
    if stand.iter().all(Option::is_none) {
        return f(requests);
    }
    let mut ops: Vec<MPI_Request> = reqs
        .iter()
        .zip(&stand)
        .map(|(r, s)| s.unwrap_or(*r))
        .collect();
    let rc = f(ops.as_mut_ptr());
    for ((r, s), op) in reqs.iter_mut().zip(&stand).zip(&ops) {
        if s.is_some() {
            crate::persist::table::settle(*r, *op);
        } else {
            *r = *op;
        }
    }
    rc
}

/// # Safety
/// As `MPI_Wait`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    // SAFETY: one request of the program's; forwarded.
    unsafe { with_stand_ins(request, 1, |r| wait_ops(r, status)) }
}

/// # Safety
/// As `MPI_Test`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    request: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe { with_stand_ins(request, 1, |r| test_ops(r, flag, status)) }
}

/// # Safety
/// As `MPI_Waitall`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    requests: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the program's `count` requests; forwarded.
    unsafe { with_stand_ins(requests, count, |r| waitall_ops(count, r, statuses)) }
}

/// # Safety
/// As `MPI_Testall`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    requests: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe { with_stand_ins(requests, count, |r| testall_ops(count, r, flag, statuses)) }
}

/// # Safety
/// As `MPI_Waitany`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe { with_stand_ins(requests, count, |r| waitany_ops(count, r, index, status)) }
}

/// # Safety
/// As `MPI_Testany`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        with_stand_ins(requests, count, |r| {
            testany_ops(count, r, index, flag, status)
        })
    }
}

/// # Safety
/// As `MPI_Waitsome`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        with_stand_ins(requests, incount, |r| {
            waitsome_ops(incount, r, outcount, indices, statuses)
        })
    }
}

/// # Safety
/// As `MPI_Testsome`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        with_stand_ins(requests, incount, |r| {
            testsome_ops(incount, r, outcount, indices, statuses)
        })
    }
}

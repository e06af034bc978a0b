//! Completion objects and the non-blocking request handles
//! ([`SendRequest`], [`RecvRequest`], [`TypedRecvRequest`]) with
//! wait/test/wait_all/wait_any. Completions are set by whichever thread
//! finishes the operation (reader, writer, or caller) and wake waiters through
//! a Condvar; nothing spins.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::engine::Inner;
use crate::error::{BridgeError, Result};
use crate::intercomm::Status;
use crate::matching::Ctx;
use crate::wire::WireType;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked while holding it; the
    // protected queues stay structurally valid, so keep going.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn cv_wait<'a, T>(
    cv: &Condvar,
    g: MutexGuard<'a, T>,
    deadline: Option<Instant>,
) -> (MutexGuard<'a, T>, bool) {
    match deadline {
        None => (cv.wait(g).unwrap_or_else(|p| p.into_inner()), false),
        Some(d) => {
            let now = Instant::now();
            if now >= d {
                return (g, true);
            }
            let (g, _) = cv
                .wait_timeout(g, d - now)
                .unwrap_or_else(|p| p.into_inner());
            (g, Instant::now() >= d)
        }
    }
}

/// Engine-wide wake-up for `wait_any`: bumped on every completion while someone waits in `wait_any`.
#[doc(hidden)]
#[derive(Default)]
pub struct AnyNotifier {
    generation: Mutex<u64>,
    cv: Condvar,
    waiters: AtomicUsize,
}

impl AnyNotifier {
    fn bump(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            *lock(&self.generation) += 1;
            self.cv.notify_all();
        }
    }
}

enum Slot<T> {
    Pending,
    Done(Result<T>),
    Taken,
}

struct SlotState<T> {
    slot: Slot<T>,
    /// Threads blocked on `cv`. std's Condvar makes a futex syscall on every
    /// notify; most completions are set by the very thread that waits for them
    /// (leader/follower reading), so notify only when someone sleeps.
    sleepers: usize,
}

/// One-shot completion cell. The first `complete` wins; later ones are ignored.
pub(crate) struct Completion<T> {
    state: Mutex<SlotState<T>>,
    cv: Condvar,
    any: Arc<AnyNotifier>,
}

impl<T> Completion<T> {
    pub(crate) fn new(any: Arc<AnyNotifier>) -> Arc<Self> {
        Arc::new(Completion {
            state: Mutex::new(SlotState {
                slot: Slot::Pending,
                sleepers: 0,
            }),
            cv: Condvar::new(),
            any,
        })
    }

    pub(crate) fn complete(&self, r: Result<T>) {
        let wake = {
            let mut s = lock(&self.state);
            if !matches!(s.slot, Slot::Pending) {
                return;
            }
            s.slot = Slot::Done(r);
            s.sleepers > 0
        };
        if wake {
            self.cv.notify_all();
        }
        self.any.bump();
    }

    pub(crate) fn is_pending(&self) -> bool {
        matches!(lock(&self.state).slot, Slot::Pending)
    }

    /// Wait until done or the deadline passes; `None` on timeout.
    pub(crate) fn wait_until(&self, deadline: Option<Instant>) -> Option<Result<T>> {
        let mut s = lock(&self.state);
        loop {
            match std::mem::replace(&mut s.slot, Slot::Taken) {
                Slot::Done(r) => return Some(r),
                Slot::Taken => {
                    return Some(Err(BridgeError::InvalidArgument(
                        "request result was already taken".into(),
                    )))
                }
                Slot::Pending => s.slot = Slot::Pending,
            }
            s.sleepers += 1;
            let (g, timed_out) = cv_wait(&self.cv, s, deadline);
            s = g;
            s.sleepers -= 1;
            if timed_out && matches!(s.slot, Slot::Pending) {
                return None;
            }
        }
    }
}

pub(crate) fn deadline_of(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + t)
}

/// Common interface of request handles, for [`wait_all`] / [`wait_any`].
pub trait Request {
    /// What a successful wait yields.
    type Output;
    /// True once the operation finished (successfully or not); never blocks.
    fn is_complete(&self) -> bool;
    /// Block until complete (or `timeout` elapses: `Err(Timeout)`; the request then stays valid
    /// for sends, and is withdrawn for receives).
    fn wait_timeout(self, timeout: Option<Duration>) -> Result<Self::Output>;
    #[doc(hidden)]
    fn notifier(&self) -> &Arc<AnyNotifier>;
}

/// Handle of a non-blocking send (`isend*` / `issend*`).
/// Dropping it does not cancel the send: the message still goes out.
#[must_use = "a send request should be waited on to learn whether the send succeeded"]
pub struct SendRequest {
    pub(crate) done: Arc<Completion<()>>,
}

impl SendRequest {
    /// Block until the send completed (eager: handed to the kernel; synchronous: matched by the receiver).
    pub fn wait(self) -> Result<()> {
        Request::wait_timeout(self, None)
    }
    /// Like [`SendRequest::wait`] with an upper bound.
    pub fn wait_timeout(self, timeout: Duration) -> Result<()> {
        Request::wait_timeout(self, Some(timeout))
    }
    /// Non-blocking completion check.
    pub fn test(&self) -> bool {
        !self.done.is_pending()
    }
}

impl Request for SendRequest {
    type Output = ();
    fn is_complete(&self) -> bool {
        self.test()
    }
    fn wait_timeout(self, timeout: Option<Duration>) -> Result<()> {
        match self.done.wait_until(deadline_of(timeout)) {
            Some(r) => r,
            None => Err(BridgeError::Timeout(timeout.unwrap_or_default())),
        }
    }
    fn notifier(&self) -> &Arc<AnyNotifier> {
        &self.done.any
    }
}

/// Result of a matched owned receive: payload bytes (None when written into a caller buffer) + status.
pub(crate) type RecvOutcome = (Option<Vec<u8>>, Status);

/// Handle of a non-blocking byte receive (`irecv_bytes`); yields the payload and its status.
/// Dropping a still-pending request withdraws the receive (no message is lost).
#[must_use = "a receive request must be waited on to get the message"]
pub struct RecvRequest {
    pub(crate) done: Arc<Completion<RecvOutcome>>,
    pub(crate) ctx: Arc<Ctx>,
    pub(crate) id: u64,
    /// Engine and the one peer that can deliver the message, so `wait` can read
    /// its connection itself (None for a request completed at creation).
    pub(crate) via: Option<(Arc<Inner>, Option<Uuid>)>,
}

impl RecvRequest {
    /// Block until a message matched; returns its bytes and status.
    pub fn wait(self) -> Result<(Vec<u8>, Status)> {
        Request::wait_timeout(self, None)
    }
    /// Like [`RecvRequest::wait`] with an upper bound; on timeout the receive is withdrawn.
    pub fn wait_timeout(self, timeout: Duration) -> Result<(Vec<u8>, Status)> {
        Request::wait_timeout(self, Some(timeout))
    }
    /// Non-blocking completion check.
    pub fn test(&self) -> bool {
        !self.done.is_pending()
    }
}

impl Request for RecvRequest {
    type Output = (Vec<u8>, Status);
    fn is_complete(&self) -> bool {
        self.test()
    }
    fn wait_timeout(self, timeout: Option<Duration>) -> Result<(Vec<u8>, Status)> {
        let deadline = deadline_of(timeout);
        let first = match &self.via {
            Some((inner, peer)) => inner.wait_from(*peer, &self.done, deadline),
            None => self.done.wait_until(deadline),
        };
        let r = match first {
            Some(r) => r,
            None => {
                // Withdraw; if the reader claimed it meanwhile, take its result instead.
                if self.ctx.withdraw(self.id) {
                    return Err(BridgeError::Timeout(timeout.unwrap_or_default()));
                }
                self.done
                    .wait_until(None)
                    .unwrap_or(Err(BridgeError::EngineShutDown))
            }
        };
        r.map(|(v, st)| (v.unwrap_or_default(), st))
    }
    fn notifier(&self) -> &Arc<AnyNotifier> {
        &self.done.any
    }
}

impl Drop for RecvRequest {
    fn drop(&mut self) {
        if self.done.is_pending() {
            self.ctx.withdraw(self.id);
        }
    }
}

/// Handle of a typed non-blocking receive into a caller slice (`InterComm::irecv`).
#[must_use = "a receive request must be waited on to get the message"]
pub struct TypedRecvRequest<'a, T: WireType> {
    pub(crate) inner: RecvRequest,
    pub(crate) out: &'a mut [T],
}

impl<T: WireType> TypedRecvRequest<'_, T> {
    /// Block until a message matched and was decoded into the slice.
    pub fn wait(self) -> Result<Status> {
        Request::wait_timeout(self, None)
    }
    /// Like [`TypedRecvRequest::wait`] with an upper bound.
    pub fn wait_timeout(self, timeout: Duration) -> Result<Status> {
        Request::wait_timeout(self, Some(timeout))
    }
    /// Non-blocking completion check.
    pub fn test(&self) -> bool {
        self.inner.test()
    }
}

impl<T: WireType> Request for TypedRecvRequest<'_, T> {
    type Output = Status;
    fn is_complete(&self) -> bool {
        self.inner.test()
    }
    fn wait_timeout(self, timeout: Option<Duration>) -> Result<Status> {
        let out = self.out;
        let (bytes, st) = Request::wait_timeout(self.inner, timeout)?;
        T::decode_into(st.format, &bytes, out)?;
        Ok(st)
    }
    fn notifier(&self) -> &Arc<AnyNotifier> {
        self.inner.notifier()
    }
}

/// Wait for every request; results in the same order.
pub fn wait_all<R: Request>(reqs: Vec<R>) -> Vec<Result<R::Output>> {
    reqs.into_iter().map(|r| r.wait_timeout(None)).collect()
}

/// Block until at least one request completed and return its index (call
/// `wait` on it to get the result). `Err(Timeout)` if none finished in time;
/// `Err(InvalidArgument)` for an empty slice.
pub fn wait_any<R: Request>(reqs: &[R], timeout: Option<Duration>) -> Result<usize> {
    let first = reqs
        .first()
        .ok_or_else(|| BridgeError::InvalidArgument("wait_any on an empty request list".into()))?;
    let any = Arc::clone(first.notifier());
    any.waiters.fetch_add(1, Ordering::SeqCst);
    struct Unregister<'a>(&'a AnyNotifier);
    impl Drop for Unregister<'_> {
        fn drop(&mut self) {
            self.0.waiters.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let _guard = Unregister(&any);
    let deadline = deadline_of(timeout);
    let mut gen = lock(&any.generation);
    loop {
        // Check with the generation lock held: a completion after this scan bumps the generation and notifies.
        if let Some(i) = reqs.iter().position(|r| r.is_complete()) {
            return Ok(i);
        }
        let seen = *gen;
        loop {
            let (g, timed_out) = cv_wait(&any.cv, gen, deadline);
            gen = g;
            if *gen != seen {
                break;
            }
            if timed_out {
                return Err(BridgeError::Timeout(timeout.unwrap_or_default()));
            }
        }
    }
}

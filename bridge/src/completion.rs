//! One-shot completion cells ([`Completion`]) and the engine-wide wake-up
//! that `wait_any` sleeps on ([`AnyNotifier`]). A completion is set by
//! whichever thread finishes the operation (reader, writer, or the caller
//! itself) and wakes its waiters through a Condvar; nothing spins.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::error::{BridgeError, Result};
use crate::sync::{cv_wait, lock};

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

    /// Block until `ready` yields a value (re-checked after every completion
    /// of this engine); None if `deadline` passed first.
    pub(crate) fn wait_for<T>(
        &self,
        mut ready: impl FnMut() -> Option<T>,
        deadline: Option<Instant>,
    ) -> Option<T> {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        struct Unregister<'a>(&'a AnyNotifier);
        impl Drop for Unregister<'_> {
            fn drop(&mut self) {
                self.0.waiters.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _guard = Unregister(self);
        let mut gen = lock(&self.generation);
        loop {
            // Check with the generation lock held: a completion after this scan bumps the generation and notifies.
            if let Some(v) = ready() {
                return Some(v);
            }
            let seen = *gen;
            loop {
                let (g, timed_out) = cv_wait(&self.cv, gen, deadline);
                gen = g;
                if *gen != seen {
                    break;
                }
                if timed_out {
                    return None;
                }
            }
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

    /// The engine-wide notifier this completion bumps.
    pub(crate) fn notifier(&self) -> &Arc<AnyNotifier> {
        &self.any
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

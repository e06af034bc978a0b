//! Synchronisation helpers shared by every module that blocks: locking that
//! survives poisoning, Condvar waits with an optional deadline.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked while holding it; the
    // protected queues stay structurally valid, so keep going.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Wait on `cv` until notified or `deadline` passes; the flag says whether it passed.
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

pub(crate) fn deadline_of(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + t)
}

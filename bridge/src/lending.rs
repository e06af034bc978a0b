//! Nonblocking sends that lend the caller's buffer instead of copying it:
//! [`send_scope`] runs a closure with a [`SendScope`], and
//! [`InterComm::isend_scoped`](crate::InterComm::isend_scoped) sends a
//! buffer borrowed for that scope. The request refers to the buffer until
//! it completes (as `MPI_Isend` does), so a large message between two
//! processes of one host is read by the receiver straight out of it
//! (single copy), and nothing is copied or charged to the sender's budget
//! on any transport. Soundness does not rest on the program waiting: the
//! scope waits, before it returns (or unwinds), for every send started in
//! it — as `std::thread::scope` joins its threads — so the borrowed memory
//! outlives every read of it even if a request is dropped or forgotten.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::completion::Completion;
use crate::sync::lock;

/// The sends started in one [`send_scope`]; it lends them buffers that live
/// at least as long as the scope (`'scope`), borrowed from outside it (`'env`).
pub struct SendScope<'scope, 'env: 'scope> {
    /// The completions of the sends started in the scope (a send completes
    /// after the last read of its buffer, successfully or not).
    started: Mutex<Vec<Arc<Completion<()>>>>,
    /// Invariant in both lifetimes, as `std::thread::Scope`: the closure
    /// cannot shorten them.
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

impl SendScope<'_, '_> {
    /// A send started in the scope, whose buffer the scope must outlive.
    pub(crate) fn started(&self, done: Arc<Completion<()>>) {
        let mut started = lock(&self.started);
        // Forget the sends that completed already (a long-lived scope with
        // many sends keeps only those under way).
        started.retain(|d| d.is_pending());
        started.push(done);
    }

    /// Wait until every send started in the scope completed. A send
    /// completes when its receiver took the message, or fails when the
    /// receiver's process fails or the engine shuts down.
    fn wait_all(&self) {
        let started = std::mem::take(&mut *lock(&self.started));
        for done in started {
            // The outcome is the request's to report; here only the end counts.
            let _ = done.wait_until(None);
        }
    }
}

/// Runs `f` with a scope in which nonblocking sends lend their buffers
/// (`InterComm::isend_scoped`): nothing is copied, and the receiver of a
/// large message on the same host reads it from the buffer (single copy).
/// Returns `f`'s result once every send started in the scope completed
/// (also when `f` panics, before the panic goes on): as with
/// `MPI_Waitall`, that waits for the receivers to take the messages.
pub fn send_scope<'env, F, R>(f: F) -> R
where
    F: for<'scope> FnOnce(&'scope SendScope<'scope, 'env>) -> R,
{
    /// Waits for the scope's sends when dropped: after `f`, or while unwinding.
    struct WaitOnExit<'a, 'scope, 'env>(&'a SendScope<'scope, 'env>);
    impl Drop for WaitOnExit<'_, '_, '_> {
        fn drop(&mut self) {
            self.0.wait_all();
        }
    }
    let scope = SendScope {
        started: Mutex::new(Vec::new()),
        scope: PhantomData,
        env: PhantomData,
    };
    let _wait = WaitOnExit(&scope);
    f(&scope)
}

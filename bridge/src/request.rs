//! The non-blocking request handles ([`SendRequest`], [`RecvRequest`],
//! [`TypedRecvRequest`]) with wait/test, and [`wait_all`] / [`wait_any`]
//! over them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::warn;
use uuid::Uuid;

use crate::completion::{AnyNotifier, Completion};
use crate::error::{BridgeError, Result};
use crate::matching::{Ctx, RecvOutcome, Status};
use crate::sync::deadline_of;
use crate::wire::WireType;

/// How a receive request makes progress while its owner waits: the engine
/// reads the sender's connection on the waiting thread when only one peer
/// can deliver the message (leader/follower), else waits for its readers.
pub(crate) trait RecvProgress: Send + Sync {
    /// Block until `done` completes; None on timeout (`done` still pending).
    fn wait_recv(
        self: Arc<Self>,
        peer: Option<Uuid>,
        done: &Completion<RecvOutcome>,
        deadline: Option<Instant>,
    ) -> Option<Result<RecvOutcome>>;
}

/// How a single-copy send makes progress while its owner waits: it
/// completes on the receiver's answer (the end of its read of our
/// memory), which the waiting thread reads from the receiver's connection
/// itself, as a receive does. Without it the answer waits
/// for the poller thread, which takes a connection back only after a
/// quiet tick (`transport::poller::HANDBACK_TICK`, 1 ms) once an
/// application thread read it last: a 1 MiB exchange by single copy took
/// 1.4 ms instead of 0.2.
pub(crate) trait SendProgress: Send + Sync {
    /// Block until `done` completes; None on timeout (`done` still pending).
    fn wait_send(
        self: Arc<Self>,
        peer: Uuid,
        done: &Completion<()>,
        deadline: Option<Instant>,
    ) -> Option<Result<()>>;
}

/// How long a receive waits before it says what the engine holds for it
/// (and again every as long): a receive that waits this long for a
/// message its peer sent is the rare hang of ARCHITECTURE's limits, and
/// the report says where the message is (unexpected, announced, nowhere).
pub(crate) const STALL_REPORT: Duration = Duration::from_secs(30);

/// Waits with `wait` (given a deadline, None on timeout) until `deadline`,
/// in steps of at most [`STALL_REPORT`]; after each step that ends with
/// the receive still pending, logs `describe()`'s account and waits again
/// (each step looks again for the sender's connection, so a receive that
/// began before it was accepted reads it itself from then on).
pub(crate) fn wait_watched<T>(
    mut wait: impl FnMut(Option<Instant>) -> Option<Result<T>>,
    deadline: Option<Instant>,
    describe: impl Fn() -> String,
) -> Option<Result<T>> {
    let began = Instant::now();
    loop {
        let step = Instant::now() + STALL_REPORT;
        let until = match deadline {
            Some(d) if d <= step => return wait(Some(d)),
            _ => step,
        };
        if let Some(r) = wait(Some(until)) {
            return Some(r);
        }
        let what = describe();
        warn!(waited = ?began.elapsed(), "a receive is still waiting: {what}");
    }
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
    /// Engine and receiver of a single-copy send, so that `wait` reads the
    /// receiver's answer itself, and how long the receiver's read takes
    /// (the wait polls through it, see `wait::expecting`). None: another
    /// thread completes the send.
    pub(crate) via: Option<(Arc<dyn SendProgress>, Uuid, Duration)>,
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
        let deadline = deadline_of(timeout);
        let r = match self.via {
            Some((progress, peer, read)) => {
                crate::wait::expecting(read, || progress.wait_send(peer, &self.done, deadline))
            }
            None => self.done.wait_until(deadline),
        };
        match r {
            Some(r) => r,
            None => Err(BridgeError::Timeout(timeout.unwrap_or_default())),
        }
    }
    fn notifier(&self) -> &Arc<AnyNotifier> {
        self.done.notifier()
    }
}

/// Handle of a non-blocking byte receive (`irecv_bytes`); yields the payload and its status.
/// Dropping a still-pending request withdraws the receive (no message is lost).
#[must_use = "a receive request must be waited on to get the message"]
pub struct RecvRequest {
    pub(crate) done: Arc<Completion<RecvOutcome>>,
    pub(crate) ctx: Arc<Ctx>,
    pub(crate) id: u64,
    /// Engine and the one peer that can deliver the message, so `wait` can read
    /// its connection itself (None for a request completed at creation).
    pub(crate) via: Option<(Arc<dyn RecvProgress>, Option<Uuid>)>,
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
    /// Cancels the receive (`MPI_Cancel`): `None` if no message had matched
    /// it, so none is consumed; else the message that did, which must be
    /// delivered as if the receive had completed.
    pub fn cancel(self) -> Option<Result<(Vec<u8>, Status)>> {
        if self.done.is_pending() && self.ctx.withdraw(self.id) {
            return None;
        }
        let r = self
            .done
            .wait_until(None)
            .unwrap_or(Err(BridgeError::EngineShutDown));
        Some(r.map(|(v, st)| (v.unwrap_or_default(), st)))
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
            Some((progress, peer)) => wait_watched(
                |d| Arc::clone(progress).wait_recv(*peer, &self.done, d),
                deadline,
                || self.ctx.describe_wait(self.id, *peer),
            ),
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
        self.done.notifier()
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
    first
        .notifier()
        .wait_for(
            || reqs.iter().position(|r| r.is_complete()),
            deadline_of(timeout),
        )
        .ok_or(BridgeError::Timeout(timeout.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watched_wait_reports_each_step_and_keeps_waiting_until_done() {
        let mut calls = Vec::new();
        let reports = std::cell::Cell::new(0);
        let r = wait_watched(
            |d| {
                calls.push(d);
                (calls.len() == 3).then_some(Ok(7))
            },
            None,
            || {
                reports.set(reports.get() + 1);
                "state".to_owned()
            },
        );
        assert_eq!(r.map(|r| r.ok()), Some(Some(7)));
        assert_eq!(calls.len(), 3);
        assert_eq!(reports.get(), 2);
        // Every step has a deadline: nothing waits unwatched.
        assert!(calls.iter().all(|d| d.is_some()));
        // A deadline within the step is the last one, with no report.
        let soon = Instant::now() + Duration::from_millis(5);
        let mut steps = 0;
        let r: Option<Result<()>> = wait_watched(
            |d| {
                steps += 1;
                assert_eq!(d, Some(soon));
                None
            },
            Some(soon),
            || unreachable!("no report before the deadline"),
        );
        assert!(r.is_none());
        assert_eq!(steps, 1);
    }
}

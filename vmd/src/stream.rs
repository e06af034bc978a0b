//! The skeleton shared by the vmd's three hello-first streams (a task's
//! session, a tasker's link, a joined host's link): the reply stream fed by
//! a task of its own, and the rule that the first message up is a hello.

use std::future::Future;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Response, Status, Streaming};

/// How many messages may queue for a slow stream or watcher before its
/// producer waits.
pub const QUEUE: usize = 1024;

/// Where a stream's messages down go.
pub type Outgoing<T> = mpsc::Sender<Result<T, Status>>;

/// Runs `serve` on a task of its own with the sender of a new reply stream,
/// and returns that stream as the call's response.
pub fn serve<T, F, Fut>(serve: F) -> Response<ReceiverStream<Result<T, Status>>>
where
    F: FnOnce(Outgoing<T>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(serve(tx));
    Response::new(ReceiverStream::new(rx))
}

/// How long a hello-first stream may stay silent before its hello: a
/// stream that never says who it is holds memory for nothing.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(10);

/// Reads the first message of a hello-first stream and picks the hello out
/// of it with `hello`, waiting at most [`HELLO_DEADLINE`].
pub async fn hello<Up, T, H>(
    inbound: &mut Streaming<Up>,
    out: &Outgoing<T>,
    must_start: &str,
    hello: impl FnOnce(Up) -> Option<H>,
) -> Option<H> {
    hello_within(inbound, out, must_start, HELLO_DEADLINE, hello).await
}

/// Like [`hello`], with its own deadline. A stream that starts with
/// anything else is told `must_start`, one silent past `deadline` is told
/// so (`DEADLINE_EXCEEDED`), one that breaks is told why; then it is
/// ended. `None` means the caller has nothing left to do.
pub async fn hello_within<Up, T, H>(
    inbound: &mut Streaming<Up>,
    out: &Outgoing<T>,
    must_start: &str,
    deadline: Duration,
    hello: impl FnOnce(Up) -> Option<H>,
) -> Option<H> {
    let refusal = match tokio::time::timeout(deadline, inbound.message()).await {
        Ok(Ok(Some(first))) => match hello(first) {
            Some(h) => return Some(h),
            None => Status::failed_precondition(must_start),
        },
        Ok(Ok(None)) => return None,
        Ok(Err(status)) => broken(status),
        Err(_) => Status::deadline_exceeded(format!("no Hello within {deadline:?}: {must_start}")),
    };
    let _ = out.send(Err(refusal)).await;
    None
}

/// The status that ends a stream whose next message could not be read:
/// the reason, never a silent close. A message over the size limit is
/// `RESOURCE_EXHAUSTED`, as gRPC names it.
pub fn broken(status: Status) -> Status {
    if status.code() == Code::OutOfRange && status.message().contains("too large") {
        Status::resource_exhausted(status.message().to_string())
    } else {
        status
    }
}

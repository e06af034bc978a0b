//! The skeleton shared by the vmd's three hello-first streams (a task's
//! session, a tasker's link, a joined host's link): the reply stream fed by
//! a task of its own, and the rule that the first message up is a hello.

use std::future::Future;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Response, Status, Streaming};

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

/// Reads the first message of a hello-first stream and picks the hello out
/// of it with `hello`. A stream that starts with anything else is told
/// `must_start` and ended; a stream that ends or breaks first is just over.
/// `None` means the caller has nothing left to do.
pub async fn hello<Up, T, H>(
    inbound: &mut Streaming<Up>,
    out: &Outgoing<T>,
    must_start: &str,
    hello: impl FnOnce(Up) -> Option<H>,
) -> Option<H> {
    match inbound.message().await {
        Ok(Some(first)) => match hello(first) {
            Some(h) => Some(h),
            None => {
                let _ = out.send(Err(Status::failed_precondition(must_start))).await;
                None
            }
        },
        Ok(None) | Err(_) => None,
    }
}

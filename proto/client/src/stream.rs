//! Opening a hello-first stream (a session, a tasker's registration, a
//! joining vmd's host link): the first message up is the caller's hello,
//! the first message down the vmd's welcome or refusal.

use std::future::Future;
use std::time::Duration;

use tonic::{Response, Status, Streaming};

use crate::error::{ClientError, Result};

/// Waits up to `timeout` for the stream opened by `opening` (whose request
/// stream already starts with the hello) and for its first message down.
/// Returns the stream and that message; the caller checks it is a welcome.
pub async fn open<Down>(
    opening: impl Future<Output = std::result::Result<Response<Streaming<Down>>, Status>>,
    timeout: Duration,
) -> Result<(Streaming<Down>, Down)> {
    let mut down = tokio::time::timeout(timeout, opening)
        .await
        .map_err(|_| ClientError::Timeout(timeout))??
        .into_inner();
    let first = tokio::time::timeout(timeout, down.message())
        .await
        .map_err(|_| ClientError::Timeout(timeout))??;
    match first {
        Some(msg) => Ok((down, msg)),
        None => Err(ClientError::Closed),
    }
}

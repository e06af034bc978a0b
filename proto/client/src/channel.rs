//! Opening a gRPC channel to a vmd: one place for the address form and the
//! connection's timeouts and keepalive, shared by every client.

use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

use crate::error::{ClientError, Result};

/// The vmd address from `ISTHMUS_VMD`, or the default loopback address.
pub fn default_addr() -> String {
    isthmus_types::env::vmd_addr()
}

/// Opens a gRPC channel to a vmd (`host:port` or `http://host:port`).
pub async fn channel(addr: &str) -> Result<Channel> {
    let uri = if addr.contains("://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    };
    let endpoint = Endpoint::from_shared(uri)
        .map_err(|e| ClientError::BadAddress {
            addr: addr.to_string(),
            reason: e.to_string(),
        })?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5))
        // A vmd whose host vanished without closing the socket is found out
        // by keepalive pings.
        .http2_keep_alive_interval(Duration::from_secs(1))
        .keep_alive_timeout(Duration::from_secs(2));
    endpoint
        .connect()
        .await
        .map_err(|source| ClientError::Connect {
            addr: addr.to_string(),
            source,
        })
}

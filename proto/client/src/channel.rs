//! Opening a gRPC channel to a vmd: one place for the address forms (see
//! [`crate::auth`]) and the connection's timeouts and keepalive, shared by
//! every client.

use std::path::PathBuf;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

use crate::auth::{Credentials, Target, TlsIdentity};
use crate::error::{ClientError, Result};

/// A channel to a vmd with this client's credentials on every call.
pub type VmdChannel = InterceptedService<Channel, Credentials>;

/// The vmd address from `ISTHMUS_VMD`, or the default Unix socket.
pub fn default_addr() -> String {
    isthmus_types::env::vmd_addr()
}

/// Opens a gRPC channel to a vmd (`unix:/path`, `host:port`,
/// `http://host:port`; `https://` needs [`channel_tls`]).
pub async fn channel(addr: &str) -> Result<VmdChannel> {
    channel_with(addr, None).await
}

/// Opens a channel to `addr`, showing `tls` to an `https://` vmd.
pub async fn channel_tls(addr: &str, tls: &TlsIdentity) -> Result<VmdChannel> {
    channel_with(addr, Some(tls)).await
}

async fn channel_with(addr: &str, tls: Option<&TlsIdentity>) -> Result<VmdChannel> {
    let connect_err = |source| ClientError::Connect {
        addr: addr.to_string(),
        source,
    };
    match Target::parse(addr)? {
        Target::Unix(path) => {
            // The URI is not used: the connector dials the socket.
            let endpoint = settings(Endpoint::from_static("http://[::]:50051"));
            let channel = endpoint
                .connect_with_connector(tower::service_fn(move |_| unix_connect(path.clone())))
                .await
                .map_err(connect_err)?;
            Ok(InterceptedService::new(channel, Credentials::none()))
        }
        Target::Tcp(uri) => {
            let credentials = Credentials::from_token_file(&isthmus_types::env::token_file())?;
            let channel = settings(endpoint(addr, uri)?)
                .connect()
                .await
                .map_err(connect_err)?;
            Ok(InterceptedService::new(channel, credentials))
        }
        Target::Tls(uri) => {
            let Some(tls) = tls else {
                return Err(ClientError::BadAddress {
                    addr: addr.to_string(),
                    reason: "an https:// vmd needs a host certificate of the virtual machine (only vmds join over TLS)".into(),
                });
            };
            let endpoint = settings(endpoint(addr, uri)?);
            let channel = tls_endpoint(addr, endpoint, tls)?
                .connect()
                .await
                .map_err(connect_err)?;
            Ok(InterceptedService::new(channel, Credentials::none()))
        }
    }
}

fn endpoint(addr: &str, uri: String) -> Result<Endpoint> {
    Endpoint::from_shared(uri).map_err(|e| ClientError::BadAddress {
        addr: addr.to_string(),
        reason: e.to_string(),
    })
}

async fn unix_connect(path: PathBuf) -> std::io::Result<TokioIo<tokio::net::UnixStream>> {
    Ok(TokioIo::new(tokio::net::UnixStream::connect(path).await?))
}

#[cfg(feature = "tls")]
fn tls_endpoint(addr: &str, endpoint: Endpoint, tls: &TlsIdentity) -> Result<Endpoint> {
    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
    let config = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&tls.ca_pem))
        .identity(Identity::from_pem(&tls.cert_pem, &tls.key_pem));
    endpoint
        .tls_config(config)
        .map_err(|e| ClientError::BadAddress {
            addr: addr.to_string(),
            reason: format!("TLS set-up: {e}"),
        })
}

#[cfg(not(feature = "tls"))]
fn tls_endpoint(addr: &str, _: Endpoint, _: &TlsIdentity) -> Result<Endpoint> {
    Err(ClientError::BadAddress {
        addr: addr.to_string(),
        reason: "this client was built without TLS".into(),
    })
}

/// Timeouts and keepalive shared by every form of address.
fn settings(endpoint: Endpoint) -> Endpoint {
    endpoint
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5))
        // A vmd whose host vanished without closing the socket is found out
        // by keepalive pings.
        .http2_keep_alive_interval(Duration::from_secs(1))
        .keep_alive_timeout(Duration::from_secs(2))
}

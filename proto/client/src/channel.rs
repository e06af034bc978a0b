//! Opening a gRPC channel to a vmd: one place for the address forms (see
//! [`crate::auth`]) and the connection's timeouts and keepalive, shared by
//! every client.
//!
//! Liveness: a process that dies closes its connections (the kernel does it
//! for a crash or kill -9), so a death is seen at once without pings. HTTP/2
//! keepalive only decides about a peer that vanished without closing (its
//! host lost power or network), and a peer that is merely stopped (a
//! debugger, SIGSTOP, swapping, a loaded node) must never be taken for one:
//! as etcd's lease TTLs and Slurm's `SlurmdTimeout`, the grace is in tens of
//! seconds ([`Keepalive::REMOTE`]), and on a Unix socket or loopback, where
//! the vmd is this host's own and its death is always seen as a close, there
//! is none.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

use crate::auth::{Credentials, Target, TlsIdentity};
use crate::error::{ClientError, Result};

/// Overrides the client's keepalive: `off`, or `INTERVAL/TIMEOUT` in seconds
/// (e.g. `10/60`).
pub const KEEPALIVE_ENV: &str = "ISTHMUS_KEEPALIVE";

/// HTTP/2 keepalive of a connection: a ping after `interval` without
/// traffic; the connection is given up when a ping goes unanswered for
/// `timeout`. A peer stopped for less than `timeout` is unharmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keepalive {
    pub interval: Duration,
    pub timeout: Duration,
}

impl Keepalive {
    /// The default for connections that leave the host: a vanished host is
    /// noticed within about 70 s, a process stopped for up to 60 s survives.
    pub const REMOTE: Keepalive = Keepalive {
        interval: Duration::from_secs(10),
        timeout: Duration::from_secs(60),
    };

    /// Parses `off` (`None`) or `INTERVAL/TIMEOUT` in seconds.
    pub fn parse(text: &str) -> std::result::Result<Option<Keepalive>, String> {
        let text = text.trim();
        if text == "off" {
            return Ok(None);
        }
        let (interval, timeout) = text
            .split_once('/')
            .ok_or("expected \"off\" or INTERVAL/TIMEOUT in seconds, e.g. 10/60")?;
        let secs = |what: &str, s: &str| -> std::result::Result<Duration, String> {
            let v: f64 = s
                .trim()
                .parse()
                .map_err(|_| format!("{what} {s:?} is not a number of seconds"))?;
            if !(v > 0.0 && v <= 86_400.0) {
                return Err(format!("{what} must be above 0 and at most 86400 seconds"));
            }
            Ok(Duration::from_secs_f64(v))
        };
        Ok(Some(Keepalive {
            interval: secs("interval", interval)?,
            timeout: secs("timeout", timeout)?,
        }))
    }

    /// The keepalive for a connection to `addr`: [`KEEPALIVE_ENV`] if set,
    /// else none on a Unix socket or loopback and [`Keepalive::REMOTE`]
    /// otherwise.
    pub fn for_addr(addr: &str) -> Result<Option<Keepalive>> {
        if let Ok(value) = std::env::var(KEEPALIVE_ENV) {
            return Keepalive::parse(&value).map_err(|reason| ClientError::BadSetting {
                name: KEEPALIVE_ENV,
                value,
                reason,
            });
        }
        Ok((!is_loopback(addr)).then_some(Keepalive::REMOTE))
    }
}

/// Whether `addr` (a Unix socket, or `host:port` with or without a scheme)
/// names this host.
fn is_loopback(addr: &str) -> bool {
    if addr.starts_with("unix:") || addr.starts_with('/') {
        return true;
    }
    let rest = addr.split_once("://").map_or(addr, |(_, r)| r);
    let host = match rest.rsplit_once(':') {
        Some((h, _)) => h,
        None => rest,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A channel to a vmd with this client's credentials on every call.
pub type VmdChannel = InterceptedService<Channel, Credentials>;

/// The vmd address from `ISTHMUS_VMD`, or the default Unix socket.
pub fn default_addr() -> String {
    isthmus_types::env::vmd_addr()
}

/// Opens a gRPC channel to a vmd (`unix:/path`, `host:port`,
/// `http://host:port`; `https://` needs [`channel_tls`]).
pub async fn channel(addr: &str) -> Result<VmdChannel> {
    channel_with(addr, None, None).await
}

/// Opens a channel to `addr`, showing `tls` to an `https://` vmd (whose
/// certificate must name the address it is dialled at).
pub async fn channel_tls(addr: &str, tls: &TlsIdentity) -> Result<VmdChannel> {
    channel_with(addr, Some(tls), None).await
}

/// Opens a channel to the vmd of host `host` at the `https://` address
/// `addr` it advertised, showing `tls`: the vmd's certificate must be the
/// virtual machine's certificate for `host`, whatever address answers.
pub async fn channel_tls_to_host(addr: &str, tls: &TlsIdentity, host: &str) -> Result<VmdChannel> {
    channel_with(addr, Some(tls), Some(host)).await
}

async fn channel_with(
    addr: &str,
    tls: Option<&TlsIdentity>,
    server_name: Option<&str>,
) -> Result<VmdChannel> {
    let connect_err = |source| ClientError::Connect {
        addr: addr.to_string(),
        source,
    };
    let keepalive = Keepalive::for_addr(addr)?;
    match Target::parse(addr)? {
        Target::Unix(path) => {
            // The URI is not used: the connector dials the socket.
            let endpoint = settings(Endpoint::from_static("http://[::]:50051"), keepalive);
            let channel = endpoint
                .connect_with_connector(tower::service_fn(move |_| unix_connect(path.clone())))
                .await
                .map_err(connect_err)?;
            Ok(InterceptedService::new(channel, Credentials::none()))
        }
        Target::Tcp(uri) => {
            // A malformed address is named as such before any token is read.
            let endpoint = endpoint(addr, uri)?;
            let credentials = Credentials::from_token_file(&isthmus_types::env::token_file())?;
            let channel = settings(endpoint, keepalive)
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
            let endpoint = settings(endpoint(addr, uri)?, keepalive);
            let channel = tls_endpoint(addr, endpoint, tls, server_name)?
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
fn tls_endpoint(
    addr: &str,
    endpoint: Endpoint,
    tls: &TlsIdentity,
    server_name: Option<&str>,
) -> Result<Endpoint> {
    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
    let mut config = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&tls.ca_pem))
        .identity(Identity::from_pem(&tls.cert_pem, &tls.key_pem));
    if let Some(name) = server_name {
        config = config.domain_name(name);
    }
    endpoint
        .tls_config(config)
        .map_err(|e| ClientError::BadAddress {
            addr: addr.to_string(),
            reason: format!("TLS set-up: {e}"),
        })
}

#[cfg(not(feature = "tls"))]
fn tls_endpoint(addr: &str, _: Endpoint, _: &TlsIdentity, _: Option<&str>) -> Result<Endpoint> {
    Err(ClientError::BadAddress {
        addr: addr.to_string(),
        reason: "this client was built without TLS".into(),
    })
}

/// Timeouts shared by every form of address, and the keepalive chosen for
/// this one.
fn settings(endpoint: Endpoint, keepalive: Option<Keepalive>) -> Endpoint {
    let endpoint = endpoint
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5));
    match keepalive {
        Some(k) => endpoint
            .http2_keep_alive_interval(k.interval)
            .keep_alive_timeout(k.timeout),
        None => endpoint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keepalive_settings() {
        assert_eq!(Keepalive::parse("off"), Ok(None));
        assert_eq!(Keepalive::parse("10/60"), Ok(Some(Keepalive::REMOTE)));
        assert_eq!(
            Keepalive::parse(" 0.5 / 2 "),
            Ok(Some(Keepalive {
                interval: Duration::from_millis(500),
                timeout: Duration::from_secs(2)
            }))
        );
        for bad in ["", "10", "a/1", "0/5", "5/-1", "1/1e9"] {
            assert!(Keepalive::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn loopback_addresses() {
        for a in [
            "unix:/run/isthmus/vmd.sock",
            "/tmp/x/vmd.sock",
            "127.0.0.1:7711",
            "http://127.0.0.1:1",
            "localhost:7711",
            "[::1]:7711",
            "http://[::1]:5",
        ] {
            assert!(is_loopback(a), "{a}");
        }
        for a in [
            "10.0.0.2:7711",
            "http://node3:7711",
            "https://node3:7711",
            "[2001:db8::1]:1",
        ] {
            assert!(!is_loopback(a), "{a}");
        }
    }
}

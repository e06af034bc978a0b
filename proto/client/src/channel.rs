//! Opening a gRPC channel to a vmd: one place for the address form and the
//! connection's timeouts and keepalive, shared by every client.
//!
//! Liveness: a process that dies closes its connections (the kernel does it
//! for a crash or kill -9), so a death is seen at once without pings. HTTP/2
//! keepalive only decides about a peer that vanished without closing (its
//! host lost power or network), and a peer that is merely stopped (a
//! debugger, SIGSTOP, swapping, a loaded node) must never be taken for one:
//! as etcd's lease TTLs and Slurm's `SlurmdTimeout`, the grace is in tens of
//! seconds ([`Keepalive::REMOTE`]), and on loopback, where the vmd is this
//! host's own and its death is always seen as a close, there is none.

use std::net::IpAddr;
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

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
    /// else none on loopback and [`Keepalive::REMOTE`] otherwise.
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

/// Whether `addr` (`host:port`, with or without a scheme) names this host.
fn is_loopback(addr: &str) -> bool {
    let rest = addr.split_once("://").map_or(addr, |(_, r)| r);
    let host = match rest.rsplit_once(':') {
        Some((h, _)) => h,
        None => rest,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

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
    let mut endpoint = Endpoint::from_shared(uri)
        .map_err(|e| ClientError::BadAddress {
            addr: addr.to_string(),
            reason: e.to_string(),
        })?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5));
    if let Some(k) = Keepalive::for_addr(addr)? {
        endpoint = endpoint
            .http2_keep_alive_interval(k.interval)
            .keep_alive_timeout(k.timeout);
    }
    endpoint
        .connect()
        .await
        .map_err(|source| ClientError::Connect {
            addr: addr.to_string(),
            source,
        })
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
            "127.0.0.1:7711",
            "http://127.0.0.1:1",
            "localhost:7711",
            "[::1]:7711",
            "http://[::1]:5",
        ] {
            assert!(is_loopback(a), "{a}");
        }
        for a in ["10.0.0.2:7711", "http://node3:7711", "[2001:db8::1]:1"] {
            assert!(!is_loopback(a), "{a}");
        }
    }
}

//! Where the data path listens and what it tells peers: the listen
//! address ([`DATA_ADDR_ENV`]), the addresses published in the endpoint
//! ([`DATA_ADVERTISE_ENV`], else the host's interface addresses when
//! listening on all of them), the [`Locality`] that decides whether a peer
//! can use our Unix socket, and the [`Route`] a data connection took.
//!
//! Choice of transport (written down in ARCHITECTURE.md, "Data path"): a
//! peer uses the Unix socket only when both records name the same host
//! *and* the same locality — the kernel's boot id and the inode of the
//! network namespace the engine was started in. An abstract Unix socket
//! exists in one network namespace of one kernel, which is exactly that
//! pair; host names alone are not enough (network namespaces, containers,
//! two machines configured with the same name). If the Unix connect fails
//! all the same, the dialer falls back to the TCP addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::unix::fs::MetadataExt;

use tracing::{debug, warn};

use crate::error::{BridgeError, Result};

/// The IP address the bridge's TCP listener binds (port 0 always: every
/// process has a port of its own). `0.0.0.0` or `::` listen on all
/// addresses; then the published addresses are [`DATA_ADVERTISE_ENV`] or,
/// without it, the host's non-loopback interface addresses.
/// Unset: see [`default_listen`].
pub const DATA_ADDR_ENV: &str = isthmus_types::env::DATA_ADDR;

/// Comma- or space-separated IP addresses to publish instead of the listen
/// address (with the listener's port), in the order peers should try them:
/// for addresses the host's interfaces do not show (NAT, forwarding) or to
/// choose among many.
pub const DATA_ADVERTISE_ENV: &str = isthmus_types::env::DATA_ADVERTISE;

/// At most this many TCP addresses are published per endpoint.
pub const MAX_PUBLISHED: usize = 16;

/// Where a process's sockets live: the kernel (boot id) and the network
/// namespace (inode of `/proc/thread-self/ns/net`). Two engines with equal
/// localities can reach each other's abstract Unix sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Locality {
    /// `/proc/sys/kernel/random/boot_id`, as 16 bytes.
    pub boot_id: [u8; 16],
    /// Inode number of the network namespace.
    pub netns: u64,
}

impl Locality {
    /// The locality of the calling thread (the one that creates the
    /// engine's sockets), or None if /proc does not tell it.
    pub fn current() -> Option<Locality> {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let boot_id = uuid::Uuid::parse_str(boot.trim()).ok()?.into_bytes();
        let netns = std::fs::metadata("/proc/thread-self/ns/net")
            .or_else(|_| std::fs::metadata("/proc/self/ns/net"))
            .ok()?
            .ino();
        Some(Locality { boot_id, netns })
    }
}

/// How an outgoing data connection reached its peer (what
/// [`Engine::route_to`](crate::Engine::route_to) reports and the bridge
/// logs at info level when it opens one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub transport: Transport,
    /// Our end: `ip:port` for TCP, empty for a Unix socket.
    pub local: String,
    /// The peer's address we connected to: `ip:port`, or the Unix socket name.
    pub remote: String,
    /// Frames go through a shared-memory ring (the socket then only
    /// carries wake-ups and tells that the peer is gone); see
    /// `ISTHMUS_TRANSPORT`.
    pub shared_memory: bool,
    /// Large messages to the peer go by single copy: on shared memory, the
    /// peer said it may read them from our memory (`ISTHMUS_SHM_CMA`).
    /// Known once the peer read our first frame.
    pub single_copy: bool,
}

/// The kind of socket of a data connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Unix,
    Tcp,
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
        })
    }
}

/// Parse a listen address: an IPv4 or IPv6 address (brackets allowed),
/// `0.0.0.0` or `::` for all. A port is refused: each process listens on
/// a port the kernel picks.
pub fn parse_ip(s: &str) -> std::result::Result<IpAddr, String> {
    let t = s.trim();
    let inner = t
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(t);
    inner.parse::<IpAddr>().map_err(|_| {
        if t.parse::<SocketAddr>().is_ok() {
            format!("{t:?} has a port; give the IP address only (each process listens on a port of its own)")
        } else {
            format!("{t:?} is not an IP address")
        }
    })
}

/// Parse [`DATA_ADVERTISE_ENV`]'s value: IP addresses separated by commas
/// or white space; unspecified addresses are refused.
pub fn parse_advertise(s: &str) -> std::result::Result<Vec<IpAddr>, String> {
    let mut out = Vec::new();
    for part in s.split(|c: char| c == ',' || c.is_whitespace()) {
        if part.is_empty() {
            continue;
        }
        let ip = parse_ip(part)?;
        if ip.is_unspecified() {
            return Err(format!(
                "{part:?} cannot be published: peers cannot dial it"
            ));
        }
        out.push(ip);
    }
    Ok(out)
}

/// The listen address and published addresses from the environment
/// ([`DATA_ADDR_ENV`], [`DATA_ADVERTISE_ENV`]); an unset listen address is
/// the host's data address as its vmd tells it (`host_data_addr`, `vmd
/// --data-addr`), else [`default_listen`] of the vmd address. A malformed
/// value is an error naming where it came from (not a silent default).
pub fn from_env(vmd_addr: &str, host_data_addr: &str) -> Result<(IpAddr, Vec<IpAddr>)> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let listen = match var(DATA_ADDR_ENV) {
        Some(v) => parse_ip(&v)
            .map_err(|e| BridgeError::InvalidArgument(format!("{DATA_ADDR_ENV}: {e}")))?,
        None if !host_data_addr.trim().is_empty() => parse_ip(host_data_addr).map_err(|e| {
            BridgeError::InvalidArgument(format!("the vmd's data address (--data-addr): {e}"))
        })?,
        None => default_listen(vmd_addr),
    };
    let advertise = match var(DATA_ADVERTISE_ENV) {
        Some(v) => parse_advertise(&v)
            .map_err(|e| BridgeError::InvalidArgument(format!("{DATA_ADVERTISE_ENV}: {e}")))?,
        None => Vec::new(),
    };
    Ok((listen, advertise))
}

/// The listen address when none is configured: if the vmd is reached over
/// TCP at a non-loopback IP address, the local address the kernel routes
/// to it from (the host's address on the network the virtual machine
/// uses; no packet is sent); otherwise (a Unix socket, loopback, or a host
/// name, which is not resolved here) `127.0.0.1`, so that nothing listens
/// beyond the host unless asked to.
pub fn default_listen(vmd_addr: &str) -> IpAddr {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let rest = vmd_addr
        .strip_prefix("https://")
        .or_else(|| vmd_addr.strip_prefix("http://"))
        .unwrap_or(vmd_addr);
    let Ok(vmd) = rest.trim_end_matches('/').parse::<SocketAddr>() else {
        return loopback;
    };
    if vmd.ip().is_loopback() || vmd.ip().is_unspecified() {
        return loopback;
    }
    let any: SocketAddr = match vmd {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    // A connected UDP socket only asks the routing table; nothing is sent.
    match UdpSocket::bind(any)
        .and_then(|s| s.connect(vmd).map(|_| s))
        .and_then(|s| s.local_addr())
    {
        Ok(local) => {
            debug!(vmd = %vmd, data = %local.ip(), "data address: the route to the vmd");
            local.ip()
        }
        Err(e) => {
            warn!(vmd = %vmd, error = %e, "no route to the vmd's address; the data path listens on loopback");
            loopback
        }
    }
}

/// The TCP addresses to publish for a listener bound at `bound`:
/// `advertise` (with the bound port) when given; for an unspecified bound
/// address, `interfaces` of its family (IPv4 too for `::` when the kernel
/// accepts IPv4 on IPv6 sockets, `v4_on_v6`) without loopback, IPv6
/// link-local or unspecified addresses, or — if that leaves none — the
/// loopback address; otherwise `bound` itself.
pub fn published(
    bound: SocketAddr,
    advertise: &[IpAddr],
    interfaces: &[IpAddr],
    v4_on_v6: bool,
) -> Vec<SocketAddr> {
    let port = bound.port();
    let out: Vec<SocketAddr> = if !advertise.is_empty() {
        advertise
            .iter()
            .map(|ip| SocketAddr::new(*ip, port))
            .collect()
    } else if bound.ip().is_unspecified() {
        let family_ok = |ip: &IpAddr| match (bound.ip(), ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) => true,
            (IpAddr::V6(_), IpAddr::V6(_)) => true,
            (IpAddr::V6(_), IpAddr::V4(_)) => v4_on_v6,
            (IpAddr::V4(_), IpAddr::V6(_)) => false,
        };
        let mut v: Vec<SocketAddr> = interfaces
            .iter()
            .filter(|ip| family_ok(ip) && reachable_off_host(ip))
            .map(|ip| SocketAddr::new(*ip, port))
            .collect();
        // IPv4 first: on dual-stack hosts it is the address most peers share.
        v.sort_by_key(|a| a.is_ipv6());
        v.dedup();
        if v.is_empty() {
            let lo = match bound.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            };
            warn!(%bound, "listening on all addresses but the host has no non-loopback address; publishing loopback only");
            v.push(SocketAddr::new(lo, port));
        }
        v
    } else {
        vec![bound]
    };
    out.into_iter().take(MAX_PUBLISHED).collect()
}

/// An address another host could dial (not loopback, not IPv6 link-local,
/// which needs a scope only this host knows, not unspecified).
fn reachable_off_host(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !v4.is_loopback() && !v4.is_unspecified(),
        IpAddr::V6(v6) => {
            !v6.is_loopback() && !v6.is_unspecified() && (v6.segments()[0] & 0xffc0) != 0xfe80
        }
    }
}

/// Whether an IPv6 socket bound to `::` also accepts IPv4
/// (`net.ipv6.bindv6only` is 0, Linux's default).
pub fn v4_on_v6() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv6/bindv6only").map_or(true, |s| s.trim() == "0")
}

/// The IP addresses of this network namespace's interfaces that are up,
/// in the kernel's order.
pub fn interface_addresses() -> Result<Vec<IpAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a pointer to a list it allocated into
    // `head` (a valid out-pointer) and returns 0, or returns -1 and leaves
    // nothing to free.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(BridgeError::io(
            "listing the interface addresses (getifaddrs)",
            std::io::Error::last_os_error(),
        ));
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a non-null node of the list getifaddrs returned,
        // which stays allocated until freeifaddrs below.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_flags & (libc::IFF_UP as libc::c_uint) == 0 {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points to a sockaddr of the list.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        if family == libc::AF_INET {
            // SAFETY: the family says this sockaddr is a sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                sin.sin_addr.s_addr,
            ))));
        } else if family == libc::AF_INET6 {
            // SAFETY: the family says this sockaddr is a sockaddr_in6.
            let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
            out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
        }
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed once;
    // nothing borrowed from the list outlives this call.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn listen_addresses_parse_with_precise_errors() {
        assert_eq!(parse_ip("10.77.1.2"), Ok(ip("10.77.1.2")));
        assert_eq!(parse_ip(" :: "), Ok(ip("::")));
        assert_eq!(parse_ip("[fd00::1]"), Ok(ip("fd00::1")));
        assert!(parse_ip("10.0.0.1:80").unwrap_err().contains("has a port"));
        assert!(parse_ip("myhost")
            .unwrap_err()
            .contains("not an IP address"));
        assert_eq!(
            parse_advertise("10.0.0.1, fd00::2 10.0.0.3"),
            Ok(vec![ip("10.0.0.1"), ip("fd00::2"), ip("10.0.0.3")])
        );
        assert!(parse_advertise("0.0.0.0").is_err());
    }

    #[test]
    fn published_addresses() {
        let ifs = [
            ip("127.0.0.1"),
            ip("10.77.3.1"),
            ip("::1"),
            ip("fe80::1"),
            ip("fd00::7"),
            ip("10.77.4.1"),
        ];
        let any4: SocketAddr = "0.0.0.0:4000".parse().unwrap();
        let any6: SocketAddr = "[::]:4000".parse().unwrap();
        let sa = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            published(any4, &[], &ifs, true),
            vec![sa("10.77.3.1:4000"), sa("10.77.4.1:4000")]
        );
        assert_eq!(
            published(any6, &[], &ifs, true),
            vec![
                sa("10.77.3.1:4000"),
                sa("10.77.4.1:4000"),
                sa("[fd00::7]:4000")
            ]
        );
        assert_eq!(
            published(any6, &[], &ifs, false),
            vec![sa("[fd00::7]:4000")]
        );
        assert_eq!(
            published(any4, &[], &[ip("127.0.0.1")], true),
            vec![sa("127.0.0.1:4000")]
        );
        assert_eq!(
            published(any4, &[ip("192.0.2.9")], &ifs, true),
            vec![sa("192.0.2.9:4000")]
        );
        let one = sa("10.77.3.1:5000");
        assert_eq!(published(one, &[], &ifs, true), vec![one]);
    }

    #[test]
    fn default_listen_is_loopback_without_a_routed_vmd() {
        let lo = ip("127.0.0.1");
        assert_eq!(default_listen("unix:/run/isthmus/vmd.sock"), lo);
        assert_eq!(default_listen("http://127.0.0.1:4000"), lo);
        assert_eq!(default_listen("https://vmd.example:4000"), lo);
    }

    #[test]
    fn this_process_has_a_locality() {
        let a = Locality::current().expect("/proc tells boot id and netns");
        assert_eq!(Some(a), Locality::current());
    }

    #[test]
    fn interfaces_include_loopback() {
        let ifs = interface_addresses().unwrap();
        assert!(ifs.iter().any(|i| i.is_loopback()), "{ifs:?}");
    }
}

//! Who is calling: the one interceptor every service of the vmd sits
//! behind. It reads what the connection proves and attaches an
//! [`Identity`] to the request, or refuses with UNAUTHENTICATED before any
//! RPC runs:
//!
//! * Unix socket: the peer's uid from SO_PEERCRED (tonic's
//!   `UdsConnectInfo`). The vmd's own uid and root are the operator; uids
//!   given with `--allow-uid` are local users; anyone else is refused.
//! * TCP with TLS: the client certificate, already verified against the
//!   virtual machine's CA by rustls; its common name is a peer host.
//! * Plain TCP (loopback, or non-loopback with `--insecure-no-tls`): the
//!   `authorization: Bearer` token, compared in constant time with the one
//!   in the runtime directory's 0600 file; whoever can read it is the
//!   operator.
//!
//! The family's rule ([`super::rules`]) is then checked in the same place,
//! so that a refused caller never reaches a service.

use std::collections::BTreeSet;
use std::sync::Arc;

use subtle::ConstantTimeEq;
use tonic::service::Interceptor;
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo, UdsConnectInfo};
use tonic::{Request, Status};
use tracing::warn;

use super::identity::{Identity, Kind};
use super::rules::{self, Rule};

/// Who this vmd lets in, shared by every service's interceptor.
pub struct Policy {
    /// The vmd's own uid (the operator's).
    pub operator_uid: u32,
    /// Other local uids allowed on the Unix socket.
    pub allowed: BTreeSet<u32>,
    /// The TCP listener's token (hex).
    pub token: String,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token.
        f.debug_struct("Policy")
            .field("operator_uid", &self.operator_uid)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

/// The interceptor of one service: attaches the caller's identity and
/// checks the service's rule.
#[derive(Clone)]
pub struct Authenticator {
    policy: Arc<Policy>,
    rule: Rule,
}

impl Authenticator {
    pub fn new(policy: Arc<Policy>, rule: Rule) -> Self {
        Self { policy, rule }
    }

    fn identify<T>(&self, request: &Request<T>) -> Result<Identity, Status> {
        let ext = request.extensions();
        if let Some(uds) = ext.get::<UdsConnectInfo>() {
            let Some(cred) = uds.peer_cred else {
                return Err(Status::unauthenticated(
                    "the vmd could not read this connection's peer credentials",
                ));
            };
            let uid = cred.uid();
            let pid = cred.pid().and_then(|p| u32::try_from(p).ok());
            return if uid == self.policy.operator_uid || uid == 0 {
                Ok(Identity {
                    uid: Some(uid),
                    pid,
                    kind: Kind::Operator,
                })
            } else if self.policy.allowed.contains(&uid) {
                Ok(Identity {
                    uid: Some(uid),
                    pid,
                    kind: Kind::Local,
                })
            } else {
                warn!(uid, "refused a local user not allowed on this vmd");
                Err(Status::unauthenticated(format!(
                    "uid {uid} is not allowed on this vmd (its operator can let it in with --allow-uid {uid})"
                )))
            };
        }
        if let Some(tls) = ext.get::<TlsConnectInfo<TcpConnectInfo>>() {
            let certs = tls.peer_certs().unwrap_or_default();
            let Some(first) = certs.first() else {
                return Err(Status::unauthenticated(
                    "a TLS client must show a host certificate of this virtual machine",
                ));
            };
            let host = super::ca::peer_host(first.as_ref())
                .map_err(|e| Status::unauthenticated(e.to_string()))?;
            return Ok(Identity {
                uid: None,
                pid: None,
                kind: Kind::Peer(host),
            });
        }
        if ext.get::<TcpConnectInfo>().is_some() {
            let given = request
                .metadata()
                .get(isthmus_client::auth::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            let Some(given) = given else {
                return Err(Status::unauthenticated(
                    "a TCP client must send the vmd's token (authorization: Bearer, read from the runtime directory's token file)",
                ));
            };
            let expected = self.policy.token.as_bytes();
            if bool::from(given.as_bytes().ct_eq(expected)) {
                return Ok(Identity {
                    uid: Some(self.policy.operator_uid),
                    pid: None,
                    kind: Kind::Operator,
                });
            }
            warn!(remote = ?request.remote_addr(), "refused a TCP client with a wrong token");
            return Err(Status::unauthenticated("wrong token"));
        }
        Err(Status::unauthenticated("unknown kind of connection"))
    }
}

impl Interceptor for Authenticator {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let identity = self.identify(&request)?;
        rules::check(self.rule, &identity, None)?;
        request.extensions_mut().insert(identity);
        Ok(request)
    }
}

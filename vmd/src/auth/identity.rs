//! Who is calling, as the services see it: the [`Identity`] that the
//! interceptor ([`super::authenticator`]) attached to a request, which the
//! rules ([`super::rules`]) and the services read.

use tonic::{Request, Status};

/// What kind of caller an identity is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The vmd's own uid, root, or a holder of the token.
    Operator,
    /// Another local user let in with `--allow-uid`.
    Local,
    /// Another host's vmd, named by its certificate.
    Peer(String),
}

/// The caller of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The caller's uid (none for a peer host: its uids are not ours).
    pub uid: Option<u32>,
    /// The caller's pid (Unix socket only: SO_PEERCRED); what a task
    /// resuming its session after a vmd restart is checked by.
    pub pid: Option<u32>,
    pub kind: Kind,
}

impl Identity {
    pub fn is_operator(&self) -> bool {
        self.kind == Kind::Operator
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.kind, self.uid) {
            (Kind::Operator, Some(uid)) => write!(f, "operator (uid {uid})"),
            (Kind::Operator, None) => write!(f, "operator"),
            (Kind::Local, Some(uid)) => write!(f, "uid {uid}"),
            (Kind::Local, None) => write!(f, "local user"),
            (Kind::Peer(host), _) => write!(f, "vmd of host {host}"),
        }
    }
}

/// The identity attached to `request` by the interceptor; a request that
/// has none did not come through it, which is refused too.
pub fn of<T>(request: &Request<T>) -> Result<Identity, Status> {
    request
        .extensions()
        .get::<Identity>()
        .cloned()
        .ok_or_else(|| Status::unauthenticated("no identity on this request"))
}

//! Authentication and authorization on the control path. Who is trusted:
//! the vmd's own user (the operator) and root; local users the operator
//! names (`--allow-uid`); other hosts' vmds holding a certificate from the
//! virtual machine's CA. Nobody else reaches any RPC.
//!
//! * [`runtime_dir`] — the private directory holding the Unix socket and
//!   the loopback token file, checked before use.
//! * [`authenticator`] — the one interceptor: connection → [`Identity`]
//!   (SO_PEERCRED uid, token, or TLS certificate), UNAUTHENTICATED if none.
//! * [`identity`]    — the caller of a request, as services and rules read it.
//! * [`rules`]       — the rule of each RPC family, table-driven;
//!   PERMISSION_DENIED naming the rule.
//! * [`ca`]          — the virtual machine's CA and host certificates.
//! * [`users`]       — local user names and uids (owners in refusals,
//!   qualified group names).

pub mod authenticator;
pub mod ca;
pub mod identity;
pub mod rules;
pub mod runtime_dir;
pub mod users;

pub use authenticator::{Authenticator, Policy};
pub use identity::{Identity, Kind};
pub use rules::{Rule, Target};
pub use runtime_dir::RuntimeDir;

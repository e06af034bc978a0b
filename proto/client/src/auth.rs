//! How a client proves who it is to a vmd, by the form of its address:
//!
//! * `unix:/path` — the vmd's Unix socket. Nothing to send: the vmd reads
//!   the connecting process's uid from the socket (SO_PEERCRED).
//! * `host:port`, `http://host:port` — the vmd's TCP listener. The client
//!   reads the vmd's token from a 0600 file (path from `ISTHMUS_TOKEN_FILE`,
//!   else the default runtime directory's `token`) and sends it as
//!   `authorization: Bearer …` on every call. Whoever can read the file is
//!   the vmd's own user.
//! * `https://host:port` — mutual TLS (only with the `tls` feature): the
//!   client shows a host certificate signed by the virtual machine's CA
//!   ([`TlsIdentity`]); joining vmds use it.

use std::path::{Path, PathBuf};

use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::{Request, Status};

use crate::error::{ClientError, Result};

/// The metadata key the token travels in.
pub const AUTHORIZATION: &str = "authorization";

/// Where a vmd address leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A Unix socket path.
    Unix(PathBuf),
    /// Plain TCP (with the token), as an `http://` URI.
    Tcp(String),
    /// Mutual TLS, as an `https://` URI.
    Tls(String),
}

impl Target {
    pub fn parse(addr: &str) -> Result<Self> {
        let bad = |reason: &str| ClientError::BadAddress {
            addr: addr.to_string(),
            reason: reason.to_string(),
        };
        if let Some(path) = addr.strip_prefix("unix:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(bad("a unix: address needs a socket path"));
            }
            return Ok(Target::Unix(PathBuf::from(path)));
        }
        if addr.starts_with("https://") {
            return Ok(Target::Tls(addr.to_string()));
        }
        if addr.starts_with("http://") {
            return Ok(Target::Tcp(addr.to_string()));
        }
        if addr.contains("://") {
            return Err(bad("expected unix:/path, host:port, http://… or https://…"));
        }
        if addr.starts_with('/') {
            return Ok(Target::Unix(PathBuf::from(addr)));
        }
        Ok(Target::Tcp(format!("http://{addr}")))
    }
}

/// What a client adds to each call: the token for a TCP vmd, nothing else.
#[derive(Clone, Default)]
pub struct Credentials {
    bearer: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token.
        f.debug_struct("Credentials")
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Credentials {
    /// No credential: the Unix socket and TLS prove identity themselves.
    pub fn none() -> Self {
        Self::default()
    }

    /// A bearer token.
    pub fn token(token: &str) -> Result<Self> {
        let value = format!("Bearer {}", token.trim())
            .parse()
            .map_err(|_| ClientError::Token {
                path: PathBuf::new(),
                reason: "the token is not printable ASCII".into(),
            })?;
        Ok(Self {
            bearer: Some(value),
        })
    }

    /// The token read from `path`.
    pub fn from_token_file(path: &Path) -> Result<Self> {
        let token = std::fs::read_to_string(path).map_err(|e| ClientError::Token {
            path: path.to_path_buf(),
            reason: format!(
                "{e} (a TCP vmd needs its token: set {} to the token file in the vmd's runtime directory, or use its unix: socket)",
                isthmus_types::env::TOKEN_FILE_ENV
            ),
        })?;
        Self::token(&token).map_err(|_| ClientError::Token {
            path: path.to_path_buf(),
            reason: "the token is not printable ASCII".into(),
        })
    }
}

impl Interceptor for Credentials {
    fn call(&mut self, mut request: Request<()>) -> std::result::Result<Request<()>, Status> {
        if let Some(b) = &self.bearer {
            request.metadata_mut().insert(AUTHORIZATION, b.clone());
        }
        Ok(request)
    }
}

/// A client's TLS identity: the virtual machine's CA (to check the vmd) and
/// this host's certificate and key (to be checked by it).
pub use isthmus_types::tls::TlsPem as TlsIdentity;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_forms() {
        assert_eq!(
            Target::parse("unix:/run/x/vmd.sock").ok(),
            Some(Target::Unix("/run/x/vmd.sock".into()))
        );
        assert_eq!(
            Target::parse("127.0.0.1:7711").ok(),
            Some(Target::Tcp("http://127.0.0.1:7711".into()))
        );
        assert_eq!(
            Target::parse("https://10.0.0.1:7711").ok(),
            Some(Target::Tls("https://10.0.0.1:7711".into()))
        );
        assert!(Target::parse("unix:").is_err());
        assert!(Target::parse("ftp://x").is_err());
    }

    #[test]
    fn debug_hides_the_token() {
        let c = Credentials::token("sekrit").expect("token");
        assert!(!format!("{c:?}").contains("sekrit"));
    }
}

//! [`Endpoint`]: how to reach one engine (process identity + Unix and TCP
//! addresses), and its opaque versioned binary record that the group service
//! publishes.
//!
//! Record layout (version 1, all integers little-endian):
//! `"ISEP" | version u8 = 1 | uuid [16] | host_len u16 | host utf-8 |
//!  unix_len u16 (0xFFFF = absent) | unix utf-8 | tcp_len u16 (0xFFFF = absent) | tcp "ip:port" utf-8`.

use std::net::SocketAddr;

use uuid::Uuid;

use crate::error::{BridgeError, Result};

const ENDPOINT_MAGIC: &[u8; 4] = b"ISEP";
const ENDPOINT_VERSION: u8 = 1;
const ABSENT: u16 = 0xFFFF;

/// Where and who a bridge engine is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// Identity of the process (engine) — also what failure reports refer to.
    pub process: Uuid,
    /// Host name as configured in the engine; equal hosts use the Unix socket.
    pub host: String,
    /// Unix socket address: a filesystem path, or `@name` for the Linux abstract namespace.
    pub unix: Option<String>,
    /// TCP listening address.
    pub tcp: Option<SocketAddr>,
}

impl Endpoint {
    /// Versioned binary record (see module docs).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.host.len());
        out.extend_from_slice(ENDPOINT_MAGIC);
        out.push(ENDPOINT_VERSION);
        out.extend_from_slice(self.process.as_bytes());
        put_str(&mut out, Some(&self.host));
        put_str(&mut out, self.unix.as_deref());
        put_str(&mut out, self.tcp.map(|a| a.to_string()).as_deref());
        out
    }

    /// Parse a record produced by [`Endpoint::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Endpoint> {
        let mut r = Cursor { bytes, pos: 0 };
        if r.take(4)? != ENDPOINT_MAGIC {
            return Err(BridgeError::BadEndpoint(
                "record does not start with the ISEP magic".into(),
            ));
        }
        let version = r.take(1)?[0];
        if version != ENDPOINT_VERSION {
            return Err(BridgeError::BadEndpoint(format!("unsupported endpoint record version {version} (this build reads {ENDPOINT_VERSION})")));
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(r.take(16)?);
        let host = r
            .string()?
            .ok_or_else(|| BridgeError::BadEndpoint("host is missing".into()))?;
        let unix = r.string()?;
        let tcp = match r.string()? {
            None => None,
            Some(s) => Some(
                s.parse::<SocketAddr>()
                    .map_err(|e| BridgeError::BadEndpoint(format!("bad TCP address {s:?}: {e}")))?,
            ),
        };
        if r.pos != bytes.len() {
            return Err(BridgeError::BadEndpoint(format!(
                "{} trailing bytes after the record",
                bytes.len() - r.pos
            )));
        }
        Ok(Endpoint {
            process: Uuid::from_bytes(id),
            host,
            unix,
            tcp,
        })
    }
}

fn put_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.extend_from_slice(&ABSENT.to_le_bytes()),
        Some(s) => {
            // Names longer than 64 KiB - 2 are truncated at a char boundary; no real host/path is that long.
            let mut end = s.len().min(ABSENT as usize - 1);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            out.extend_from_slice(&(end as u16).to_le_bytes());
            out.extend_from_slice(&s.as_bytes()[..end]);
        }
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| {
                BridgeError::BadEndpoint(format!(
                    "record truncated: need {n} bytes at offset {}, have {}",
                    self.pos,
                    self.bytes.len()
                ))
            })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn string(&mut self) -> Result<Option<String>> {
        let b = self.take(2)?;
        let len = u16::from_le_bytes([b[0], b[1]]);
        if len == ABSENT {
            return Ok(None);
        }
        let s = self.take(len as usize)?;
        let s = std::str::from_utf8(s)
            .map_err(|e| BridgeError::BadEndpoint(format!("string field is not UTF-8: {e}")))?;
        Ok(Some(s.to_owned()))
    }
}

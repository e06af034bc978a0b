//! [`Endpoint`]: how to reach one engine (process identity, public key,
//! Unix and TCP addresses), and its opaque versioned binary record that the
//! group service publishes.
//!
//! Record layout (version 3, all integers little-endian):
//! `"ISEP" | version u8 = 3 | uuid [16] | public key [32] | host_len u16 | host utf-8 |
//!  locality u8 (0 = unknown, 1 = follows) [| boot id [16] | netns inode u64] |
//!  unix_len u16 (0xFFFF = absent) | unix utf-8 |
//!  tcp_count u8 | tcp_count × (len u16 | "ip:port" utf-8)`.
//!
//! Both sides of a pair are built from the same source, so a decoder reads
//! exactly one version and refuses others with an error that says which
//! (version 2 had one TCP address and no locality).
//!
//! The process id is derived from the public key ([`process_id`]), so a
//! record cannot bind one process's id to another process's key: a record
//! whose id does not match its key is refused when it is decoded, and
//! `Engine::intercomm` refuses such an endpoint too. Version-1 records
//! (no key) are refused: they cannot authenticate a data connection.

use std::net::SocketAddr;

use sha2::{Digest, Sha512};
use uuid::Uuid;

use crate::address::{Locality, MAX_PUBLISHED};
use crate::error::{BridgeError, Result};

const ENDPOINT_MAGIC: &[u8; 4] = b"ISEP";
const ENDPOINT_VERSION: u8 = 3;

/// Length of an Ed25519 public key.
pub const PUBLIC_KEY_LEN: usize = 32;

/// The process id that belongs to an Ed25519 public key: the first 16 bytes
/// of its SHA-512, as a version-8 (custom) UUID.
pub fn process_id(public_key: &[u8; PUBLIC_KEY_LEN]) -> Uuid {
    let digest = Sha512::digest(public_key);
    let mut id = [0u8; 16];
    for (i, d) in id.iter_mut().zip(digest.iter()) {
        *i = *d;
    }
    uuid::Builder::from_custom_bytes(id).into_uuid()
}
const ABSENT: u16 = 0xFFFF;

/// Where and who a bridge engine is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// Identity of the process (engine) — also what failure reports refer to.
    pub process: Uuid,
    /// The engine's Ed25519 public key; `process` is [`process_id`] of it.
    /// Data connections from this process are signed with the matching
    /// private key, which never leaves the process.
    pub public_key: [u8; PUBLIC_KEY_LEN],
    /// Host name as configured in the engine (the vmd's host).
    pub host: String,
    /// Kernel and network namespace the engine's sockets live in; a peer
    /// with the same host *and* locality dials the Unix socket.
    pub locality: Option<Locality>,
    /// Unix socket address: a filesystem path, or `@name` for the Linux abstract namespace.
    pub unix: Option<String>,
    /// TCP addresses to dial, in order (at most [`MAX_PUBLISHED`] are encoded).
    pub tcp: Vec<SocketAddr>,
}

impl Endpoint {
    /// Versioned binary record (see module docs).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.host.len());
        out.extend_from_slice(ENDPOINT_MAGIC);
        out.push(ENDPOINT_VERSION);
        out.extend_from_slice(self.process.as_bytes());
        out.extend_from_slice(&self.public_key);
        put_str(&mut out, Some(&self.host));
        match &self.locality {
            None => out.push(0),
            Some(l) => {
                out.push(1);
                out.extend_from_slice(&l.boot_id);
                out.extend_from_slice(&l.netns.to_le_bytes());
            }
        }
        put_str(&mut out, self.unix.as_deref());
        let tcp = self.tcp.iter().take(MAX_PUBLISHED);
        out.push(tcp.len() as u8);
        for a in tcp {
            put_str(&mut out, Some(&a.to_string()));
        }
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
        let version = r.byte()?;
        if version != ENDPOINT_VERSION {
            let what = match version {
                1 | 2 => "from an older Isthmus build (one TCP address, no locality)",
                _ => "unknown to this build",
            };
            return Err(BridgeError::BadEndpoint(format!(
                "endpoint record version {version} is {what}; this build reads version {ENDPOINT_VERSION} only: \
                 build both jobs' Isthmus from the same source"
            )));
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(r.take(16)?);
        let mut public_key = [0u8; PUBLIC_KEY_LEN];
        public_key.copy_from_slice(r.take(PUBLIC_KEY_LEN)?);
        let host = r
            .string()?
            .ok_or_else(|| BridgeError::BadEndpoint("host is missing".into()))?;
        let locality = match r.byte()? {
            0 => None,
            1 => {
                let mut boot_id = [0u8; 16];
                boot_id.copy_from_slice(r.take(16)?);
                let mut ino = [0u8; 8];
                ino.copy_from_slice(r.take(8)?);
                Some(Locality {
                    boot_id,
                    netns: u64::from_le_bytes(ino),
                })
            }
            other => {
                return Err(BridgeError::BadEndpoint(format!(
                    "locality flag {other} (expected 0 or 1)"
                )))
            }
        };
        let unix = r.string()?;
        let count = r.byte()? as usize;
        if count > MAX_PUBLISHED {
            return Err(BridgeError::BadEndpoint(format!(
                "{count} TCP addresses (at most {MAX_PUBLISHED})"
            )));
        }
        let mut tcp = Vec::with_capacity(count);
        for _ in 0..count {
            let s = r
                .string()?
                .ok_or_else(|| BridgeError::BadEndpoint("absent TCP address in the list".into()))?;
            tcp.push(
                s.parse::<SocketAddr>()
                    .map_err(|e| BridgeError::BadEndpoint(format!("bad TCP address {s:?}: {e}")))?,
            );
        }
        if r.pos != bytes.len() {
            return Err(BridgeError::BadEndpoint(format!(
                "{} trailing bytes after the record",
                bytes.len() - r.pos
            )));
        }
        let ep = Endpoint {
            process: Uuid::from_bytes(id),
            public_key,
            host,
            locality,
            unix,
            tcp,
        };
        ep.check_identity()?;
        Ok(ep)
    }

    /// Refuse an endpoint whose process id is not the one of its public key.
    pub(crate) fn check_identity(&self) -> Result<()> {
        let expected = process_id(&self.public_key);
        if self.process != expected {
            return Err(BridgeError::BadEndpoint(format!(
                "process id {} does not belong to the record's public key (expected {expected})",
                self.process
            )));
        }
        Ok(())
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
            out.extend_from_slice(s.as_bytes().get(..end).unwrap_or_default());
        }
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .pos
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.pos..end))
            .ok_or_else(|| {
                BridgeError::BadEndpoint(format!(
                    "record truncated: need {n} bytes at offset {}, have {}",
                    self.pos,
                    self.bytes.len()
                ))
            })?;
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.take(N)?;
        b.try_into().map_err(|_| {
            BridgeError::BadEndpoint(format!("record field of {} bytes, not {N}", b.len()))
        })
    }
    fn byte(&mut self) -> Result<u8> {
        let [b] = self.array::<1>()?;
        Ok(b)
    }
    fn string(&mut self) -> Result<Option<String>> {
        let len = u16::from_le_bytes(self.array::<2>()?);
        if len == ABSENT {
            return Ok(None);
        }
        let s = self.take(len as usize)?;
        let s = std::str::from_utf8(s)
            .map_err(|e| BridgeError::BadEndpoint(format!("string field is not UTF-8: {e}")))?;
        Ok(Some(s.to_owned()))
    }
}

//! The data connection's handshake: a challenge–response in which the
//! connector proves it is the process it claims to be, and the acceptor
//! proves the same to the connector. Wire format, signing and checking
//! only; sockets, deadlines and where the keys come from are the caller's.
//!
//! Each engine generates its own Ed25519 key pair when it starts
//! ([`Identity`]); the private key never leaves the process. Its public key
//! travels in the endpoint record the process publishes through its
//! authenticated vmd session, and its process id is derived from that key
//! (see `endpoint::process_id`).
//!
//! Wire (integers little-endian):
//! ```text
//! connector → acceptor  HELLO      "ISTHMUS\0" | version u16 = 2 | reserved u16 | uuid_c [16] | Nc [32]
//! acceptor → connector  CHALLENGE  status u8 (0 ok, 1 bad magic/version) | uuid_a [16] | Na [32] | sig_a [64]
//! connector → acceptor  PROOF      sig_c [64]
//! sig_c = Ed25519 by the connector over "isthmus-data-v2"          | uuid_c | uuid_a | Nc | Na
//! sig_a = Ed25519 by the acceptor  over "isthmus-data-v2-acceptor" | uuid_c | uuid_a | Nc | Na
//! ```
//! Nc and Na are fresh random nonces, so a recorded PROOF is worthless on
//! another connection; the two labels differ, so neither side's signature
//! can stand in for the other's. The acceptor checks sig_c with the public
//! key of the member named uuid_c in the remote group tables it holds; the
//! connector checks sig_a with the key of the endpoint it meant to reach,
//! and then starts sending frames without waiting for a verdict: a refused
//! connection is simply closed by the acceptor.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::io::{Read, Write};
use uuid::Uuid;

use crate::endpoint::{process_id, Endpoint, PUBLIC_KEY_LEN};
use crate::error::{BridgeError, Result};

pub(crate) const HANDSHAKE_MAGIC: &[u8; 8] = b"ISTHMUS\0";
pub(crate) const PROTOCOL_VERSION: u16 = 2;
const STATUS_OK: u8 = 0;
const STATUS_BAD_VERSION: u8 = 1;
const CONNECTOR_LABEL: &[u8] = b"isthmus-data-v2";
const ACCEPTOR_LABEL: &[u8] = b"isthmus-data-v2-acceptor";
const NONCE_LEN: usize = 32;
const SIG_LEN: usize = 64;

/// Why a handshake failed, for the log and for `BridgeError::Connect`.
pub(crate) type Outcome<T> = std::result::Result<T, String>;

/// This process's key pair and the process id derived from it.
pub(crate) struct Identity {
    key: SigningKey,
    process: Uuid,
}

impl Identity {
    /// A fresh key pair from the operating system's random source.
    pub(crate) fn generate() -> Result<Identity> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| {
            BridgeError::io(
                "reading random bytes for the engine's key",
                std::io::Error::other(e.to_string()),
            )
        })?;
        let key = SigningKey::from_bytes(&seed);
        seed.fill(0);
        std::hint::black_box(&seed);
        let process = process_id(&key.verifying_key().to_bytes());
        Ok(Identity { key, process })
    }

    pub(crate) fn process(&self) -> Uuid {
        self.process
    }

    pub(crate) fn public_key(&self) -> [u8; PUBLIC_KEY_LEN] {
        self.key.verifying_key().to_bytes()
    }
}

fn nonce() -> Outcome<[u8; NONCE_LEN]> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::fill(&mut n).map_err(|e| format!("no random bytes for a nonce: {e}"))?;
    Ok(n)
}

/// What both signatures cover, after their label.
fn transcript(
    label: &[u8],
    connector: Uuid,
    acceptor: Uuid,
    nc: &[u8; NONCE_LEN],
    na: &[u8; NONCE_LEN],
) -> Vec<u8> {
    let mut t = Vec::with_capacity(label.len() + 32 + 2 * NONCE_LEN);
    t.extend_from_slice(label);
    t.extend_from_slice(connector.as_bytes());
    t.extend_from_slice(acceptor.as_bytes());
    t.extend_from_slice(nc);
    t.extend_from_slice(na);
    t
}

fn verify(public_key: &[u8; PUBLIC_KEY_LEN], message: &[u8], sig: &[u8; SIG_LEN]) -> bool {
    VerifyingKey::from_bytes(public_key)
        .and_then(|k| k.verify_strict(message, &Signature::from_bytes(sig)))
        .is_ok()
}

fn io_reason(step: &str, e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            format!("{step}: no answer before the handshake deadline")
        }
        std::io::ErrorKind::UnexpectedEof => format!("{step}: connection closed"),
        _ => format!("{step}: {e}"),
    }
}

/// Connector side: prove we are `me` to the process `peer` and check that
/// it is `peer`. On success the stream carries our frames.
pub(crate) fn connect(
    stream: &mut (impl Read + Write),
    me: &Identity,
    peer: &Endpoint,
) -> Outcome<()> {
    let nc = nonce()?;
    let mut hello = Vec::with_capacity(28 + NONCE_LEN);
    hello.extend_from_slice(HANDSHAKE_MAGIC);
    hello.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    hello.extend_from_slice(&0u16.to_le_bytes());
    hello.extend_from_slice(me.process.as_bytes());
    hello.extend_from_slice(&nc);
    stream
        .write_all(&hello)
        .map_err(|e| io_reason("sending the handshake", e))?;
    let mut status = [0u8; 1];
    stream
        .read_exact(&mut status)
        .map_err(|e| io_reason("waiting for the peer's challenge", e))?;
    match status[0] {
        STATUS_OK => {}
        STATUS_BAD_VERSION => {
            return Err("peer rejected our protocol version (an older or newer bridge?)".into())
        }
        s => {
            return Err(format!(
                "peer answered the handshake with unknown status {s}"
            ))
        }
    }
    let mut challenge = [0u8; 16 + NONCE_LEN + SIG_LEN];
    stream
        .read_exact(&mut challenge)
        .map_err(|e| io_reason("reading the peer's challenge", e))?;
    let short = || "the peer's challenge is too short".to_string();
    let got = uuid_at(&challenge, 0).ok_or_else(short)?;
    if got != peer.process {
        return Err(format!(
            "reached process {got}, not the expected one (stale endpoint?)"
        ));
    }
    let na = array_at::<NONCE_LEN>(&challenge, 16).ok_or_else(short)?;
    let sig_a = array_at::<SIG_LEN>(&challenge, 16 + NONCE_LEN).ok_or_else(short)?;
    if !verify(
        &peer.public_key,
        &transcript(ACCEPTOR_LABEL, me.process, peer.process, &nc, &na),
        &sig_a,
    ) {
        return Err(format!(
            "the process listening there could not prove it is {} (bad signature)",
            peer.process
        ));
    }
    let sig_c = me.key.sign(&transcript(
        CONNECTOR_LABEL,
        me.process,
        peer.process,
        &nc,
        &na,
    ));
    stream
        .write_all(&sig_c.to_bytes())
        .map_err(|e| io_reason("sending our proof", e))
}

/// What a connector claimed and the proof it sent, waiting to be checked
/// against the claimed process's public key.
pub(crate) struct Claim {
    pub(crate) peer: Uuid,
    signed: Vec<u8>,
    proof: [u8; SIG_LEN],
}

impl Claim {
    /// Whether the proof was signed by the owner of `public_key` (which must
    /// be the claimed process's: the id is derived from the key).
    pub(crate) fn check(&self, public_key: &[u8; PUBLIC_KEY_LEN]) -> Outcome<()> {
        if process_id(public_key) != self.peer {
            return Err("the key we hold for the claimed process is not its key".into());
        }
        if verify(public_key, &self.signed, &self.proof) {
            Ok(())
        } else {
            Err("signature check failed (wrong key or replayed handshake)".into())
        }
    }
}

/// Length of the connector's HELLO.
pub(crate) const HELLO_LEN: usize = 12 + 16 + NONCE_LEN;
/// Length of the connector's PROOF.
pub(crate) const PROOF_LEN: usize = SIG_LEN;

/// A HELLO the acceptor answered with its challenge, waiting for the PROOF.
pub(crate) struct Challenged {
    peer: Uuid,
    signed: Vec<u8>,
}

impl Challenged {
    /// The connector's PROOF arrived: what it claims, to be checked.
    pub(crate) fn with_proof(self, proof: [u8; PROOF_LEN]) -> Claim {
        Claim {
            peer: self.peer,
            signed: self.signed,
            proof,
        }
    }
}

/// A HELLO the acceptor cannot answer: what to send before closing, and why.
pub(crate) struct Refusal {
    pub(crate) reply: Vec<u8>,
    pub(crate) reason: String,
}

/// Acceptor side, on a whole HELLO: our signed challenge (so the connector
/// knows it reached us) to send, and what the PROOF must then sign. No I/O,
/// so the caller can run it on a non-blocking socket.
pub(crate) fn answer_hello(
    hello: &[u8; HELLO_LEN],
    me: &Identity,
) -> std::result::Result<(Vec<u8>, Challenged), Refusal> {
    let version = u16::from_le_bytes([hello[8], hello[9]]);
    if &hello[..8] != HANDSHAKE_MAGIC || version != PROTOCOL_VERSION {
        return Err(Refusal {
            reply: vec![STATUS_BAD_VERSION],
            reason: format!(
                "bad magic or protocol version {version} (this build speaks {PROTOCOL_VERSION})"
            ),
        });
    }
    let short = || Refusal {
        reply: Vec::new(),
        reason: "the HELLO is too short".into(),
    };
    let peer = uuid_at(hello, 12).ok_or_else(short)?;
    let nc = array_at::<NONCE_LEN>(hello, 28).ok_or_else(short)?;
    let na = nonce().map_err(|reason| Refusal {
        reply: Vec::new(),
        reason,
    })?;
    let sig_a = me
        .key
        .sign(&transcript(ACCEPTOR_LABEL, peer, me.process, &nc, &na));
    let mut reply = Vec::with_capacity(1 + 16 + NONCE_LEN + SIG_LEN);
    reply.push(STATUS_OK);
    reply.extend_from_slice(me.process.as_bytes());
    reply.extend_from_slice(&na);
    reply.extend_from_slice(&sig_a.to_bytes());
    Ok((
        reply,
        Challenged {
            peer,
            signed: transcript(CONNECTOR_LABEL, peer, me.process, &nc, &na),
        },
    ))
}

/// Acceptor side on a blocking stream, up to the connector's proof (the
/// engine runs [`answer_hello`] on non-blocking sockets instead).
#[cfg(test)]
pub(crate) fn challenge(stream: &mut (impl Read + Write), me: &Identity) -> Outcome<Claim> {
    let mut hello = [0u8; HELLO_LEN];
    stream
        .read_exact(&mut hello)
        .map_err(|e| io_reason("reading the handshake", e))?;
    let (reply, challenged) = match answer_hello(&hello, me) {
        Ok(x) => x,
        Err(r) => {
            let _ = stream.write_all(&r.reply);
            return Err(r.reason);
        }
    };
    stream
        .write_all(&reply)
        .map_err(|e| io_reason("sending our challenge", e))?;
    let mut proof = [0u8; PROOF_LEN];
    stream
        .read_exact(&mut proof)
        .map_err(|e| io_reason("reading the connector's proof", e))?;
    Ok(challenged.with_proof(proof))
}

/// `N` bytes of `b` from `at`; `None` past its end (the callers' buffers
/// have a fixed size, so only a wrong offset could get there).
fn array_at<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn uuid_at(b: &[u8], at: usize) -> Option<Uuid> {
    array_at::<16>(b, at).map(Uuid::from_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    fn endpoint(id: &Identity) -> Endpoint {
        Endpoint {
            process: id.process(),
            public_key: id.public_key(),
            host: "h".into(),
            locality: None,
            unix: None,
            tcp: Vec::new(),
        }
    }

    #[test]
    fn both_sides_prove_who_they_are() {
        let (a, c) = (Identity::generate().unwrap(), Identity::generate().unwrap());
        let a_ep = endpoint(&a);
        let (mut s1, mut s2) = UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || connect(&mut s1, &c, &a_ep).map(|_| c));
        let claim = challenge(&mut s2, &a).unwrap();
        let c = t.join().unwrap().unwrap();
        assert_eq!(claim.peer, c.process());
        claim.check(&c.public_key()).unwrap();
        // Another key, even one whose id is forged to match, does not pass.
        let other = Identity::generate().unwrap();
        assert!(claim.check(&other.public_key()).is_err());
    }

    #[test]
    fn connector_refuses_an_impostor_acceptor() {
        let (real, impostor, c) = (
            Identity::generate().unwrap(),
            Identity::generate().unwrap(),
            Identity::generate().unwrap(),
        );
        // The impostor answers with the real process's id but signs with its own key.
        let impostor = Identity {
            key: impostor.key,
            process: real.process(),
        };
        let real_ep = endpoint(&real);
        let (mut s1, mut s2) = UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || connect(&mut s1, &c, &real_ep));
        let _ = challenge(&mut s2, &impostor);
        let err = t.join().unwrap().unwrap_err();
        assert!(err.contains("could not prove"), "{err}");
    }
}

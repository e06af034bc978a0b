//! Forged data connections (issue 9): real engines in this process, and an
//! attacker on raw sockets that speaks the handshake from its wire
//! description (see the bridge's `handshake` module). Each forgery must be
//! refused — the socket closed — while the legitimate exchange between the
//! real peers goes on and nobody is marked failed.

#![cfg(test)]

mod common;

use common::mpi;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ed25519_dalek::{Signer, SigningKey};
use isthmus_bridge::*;
use uuid::Uuid;

/// Hang guard for anything that must happen; never a measured time.
const T: Duration = Duration::from_secs(60);

fn engine_on(host: &str, admission: Duration) -> Arc<Engine> {
    mpi();
    Engine::start(EngineConfig {
        admission_timeout: admission,
        ..EngineConfig::new(host)
    })
    .expect("engine starts")
}

fn engine() -> Arc<Engine> {
    engine_on("testhost", DEFAULT_ADMISSION_TIMEOUT)
}

/// Two engines with an intercomm (one rank each side) and a first exchange
/// done, so each holds the other's real connection.
fn pair(
    a: Arc<Engine>,
    b: Arc<Engine>,
    context: u64,
) -> (Arc<Engine>, Arc<Engine>, InterComm, InterComm) {
    let ca = a.intercomm(context, 0, 1, vec![b.endpoint()]).unwrap();
    let cb = b.intercomm(context, 0, 1, vec![a.endpoint()]).unwrap();
    exchange(&ca, &cb, 0);
    (a, b, ca, cb)
}

/// Messages flow both ways (standard and synchronous sends) and ANY_SOURCE
/// receives work: nobody is marked failed on either side.
fn exchange(a: &InterComm, b: &InterComm, round: u64) {
    a.send(0, 1, &[round, 1]).unwrap();
    let mut x = [0u64; 2];
    let st = b.recv_timeout(Source::Any, Tag::Any, &mut x, T).unwrap();
    assert_eq!(
        (x, st.tag),
        ([round, 1], 1),
        "b got a message that a did not send"
    );
    std::thread::scope(|s| {
        let h = s.spawn(|| b.ssend_timeout(0, 2, &[round, 2], T));
        let mut y = [0u64; 2];
        let st = a.recv_timeout(Source::Any, Tag::Any, &mut y, T).unwrap();
        assert_eq!((y, st.tag), ([round, 2], 2));
        h.join().unwrap().unwrap();
    });
}

// ---- the attacker: the handshake as its wire description gives it ----

const MAGIC: &[u8; 8] = b"ISTHMUS\0";
const VERSION: u16 = 2;

enum Raw {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Raw {
    fn tcp(ep: &Endpoint) -> Raw {
        let s = TcpStream::connect(ep.tcp[0]).unwrap();
        s.set_read_timeout(Some(T)).unwrap();
        Raw::Tcp(s)
    }
    fn unix(ep: &Endpoint) -> Raw {
        let name = ep.unix.as_deref().unwrap().strip_prefix('@').unwrap();
        let s = UnixStream::connect_addr(&UnixAddr::from_abstract_name(name).unwrap()).unwrap();
        s.set_read_timeout(Some(T)).unwrap();
        Raw::Unix(s)
    }
    fn io(&mut self) -> &mut dyn ReadWrite {
        match self {
            Raw::Tcp(s) => s,
            Raw::Unix(s) => s,
        }
    }
    fn send(&mut self, b: &[u8]) {
        // The acceptor may already have closed: that is what the tests want.
        let _ = self.io().write_all(b);
    }
    /// The acceptor's challenge: (its uuid, Na, its signature).
    fn challenge(&mut self) -> (Uuid, [u8; 32], [u8; 64]) {
        let mut b = [0u8; 1 + 16 + 32 + 64];
        self.io().read_exact(&mut b).unwrap();
        assert_eq!(b[0], 0, "acceptor refused our hello");
        (
            Uuid::from_slice(&b[1..17]).unwrap(),
            b[17..49].try_into().unwrap(),
            b[49..].try_into().unwrap(),
        )
    }
    /// Whether the acceptor closed the connection (EOF or reset) before the
    /// hang guard; anything it sends after the handshake would be a bug too,
    /// except the notice that its grant follows (sent to a connector no
    /// table names yet, before it waits for one; it grants nothing).
    fn closed_by_acceptor(&mut self) -> bool {
        let mut got = Vec::new();
        let mut b = [0u8; 64];
        loop {
            match self.io().read(&mut b) {
                Ok(0) => return got.is_empty() || got == grant_follows(),
                Ok(n) => {
                    got.extend_from_slice(&b[..n]);
                    if !grant_follows().starts_with(&got) {
                        return false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    return matches!(
                        e.kind(),
                        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                    ) && (got.is_empty() || got == grant_follows())
                }
            }
        }
    }
    /// Reads the acceptor's "grant follows" notice (admission pending).
    fn expect_grant_follows(&mut self) {
        let mut b = [0u8; 56];
        self.io().read_exact(&mut b).unwrap();
        assert_eq!(b.to_vec(), grant_follows(), "expected 'grant follows'");
    }
}

/// CREDIT frame (kind 8) of 0 bytes with seq 1: "admission pending, the
/// grant follows" (see the bridge's `frame` module).
fn grant_follows() -> Vec<u8> {
    let mut f = [0u8; 56];
    f[0] = 8;
    f[24..32].copy_from_slice(&1u64.to_le_bytes());
    f.to_vec()
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

fn hello(claimed: Uuid, nc: &[u8; 32]) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(claimed.as_bytes());
    h.extend_from_slice(nc);
    h
}

fn transcript(label: &[u8], c: Uuid, a: Uuid, nc: &[u8; 32], na: &[u8; 32]) -> Vec<u8> {
    [label, c.as_bytes(), a.as_bytes(), nc, na].concat()
}

fn fresh_key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

/// Frames a forged connection tries to slip in: a message (tag 0) and a BYE
/// (which, if believed, would make the claimed peer look gone).
fn injected_frames(context: u64) -> Vec<u8> {
    let mut eager = [0u8; 56];
    eager[0] = 1; // EAGER
    eager[8..16].copy_from_slice(&context.to_le_bytes());
    eager[24..32].copy_from_slice(&9999u64.to_le_bytes());
    eager[40..48].copy_from_slice(&1u64.to_le_bytes());
    eager[48..56].copy_from_slice(&8u64.to_le_bytes());
    let mut bye = [0u8; 56];
    bye[0] = 4; // BYE
    [&eager[..], &[0xAB; 8], &bye[..]].concat()
}

/// Run the whole handshake claiming `claimed`, signing with `key`, then try
/// to inject frames. Returns whether the acceptor closed the connection.
fn forge(mut raw: Raw, target: &Endpoint, claimed: Uuid, key: &SigningKey, context: u64) -> bool {
    let nc = [7u8; 32];
    raw.send(&hello(claimed, &nc));
    let (acceptor, na, _sig) = raw.challenge();
    assert_eq!(acceptor, target.process);
    let sig = key.sign(&transcript(b"isthmus-data-v2", claimed, acceptor, &nc, &na));
    raw.send(&sig.to_bytes());
    raw.send(&injected_frames(context));
    raw.closed_by_acceptor()
}

// ---- the tests ----

#[test]
fn handshake_signed_with_another_key_is_refused() {
    let (ea, eb, a, b) = pair(engine(), engine(), 11);
    let claimed = ea.endpoint().process;
    // Over TCP and over the Unix socket, with a key that is not a's.
    assert!(forge(
        Raw::tcp(&eb.endpoint()),
        &eb.endpoint(),
        claimed,
        &fresh_key(1),
        11
    ));
    assert!(forge(
        Raw::unix(&eb.endpoint()),
        &eb.endpoint(),
        claimed,
        &fresh_key(2),
        11
    ));
    // An all-zero "signature" is refused too.
    let mut raw = Raw::unix(&eb.endpoint());
    raw.send(&hello(claimed, &[0; 32]));
    raw.challenge();
    raw.send(&[0u8; 64]);
    raw.send(&injected_frames(11));
    assert!(raw.closed_by_acceptor());
    for round in 1..4 {
        exchange(&a, &b, round);
    }
}

#[test]
fn replayed_handshake_is_refused() {
    // Different hosts: the connector uses TCP, through a relay that records
    // what it sends.
    let ea = engine_on("host-a", DEFAULT_ADMISSION_TIMEOUT);
    let eb = engine_on("host-b", DEFAULT_ADMISSION_TIMEOUT);
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut via_relay = eb.endpoint();
    via_relay.tcp = vec![relay.local_addr().unwrap()];
    let recorded = Arc::new(Mutex::new(Vec::<u8>::new()));
    let (rec, real) = (Arc::clone(&recorded), eb.endpoint().tcp[0]);
    std::thread::spawn(move || {
        let (mut from_a, _) = relay.accept().unwrap();
        let mut to_b = TcpStream::connect(real).unwrap();
        let (mut back_from_b, mut back_to_a) =
            (to_b.try_clone().unwrap(), from_a.try_clone().unwrap());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut back_from_b, &mut back_to_a);
        });
        let mut buf = [0u8; 4096];
        while let Ok(n) = from_a.read(&mut buf) {
            if n == 0 || to_b.write_all(&buf[..n]).is_err() {
                break;
            }
            rec.lock().unwrap().extend_from_slice(&buf[..n]);
        }
        let _ = to_b.shutdown(std::net::Shutdown::Both);
    });
    let a = ea.intercomm(13, 0, 1, vec![via_relay]).unwrap();
    let b = eb.intercomm(13, 0, 1, vec![ea.endpoint()]).unwrap();
    exchange(&a, &b, 0);
    // HELLO (60 bytes), PROOF (64), then a's frames.
    let bytes = recorded.lock().unwrap().clone();
    assert!(
        bytes.len() > 124,
        "the relay recorded the handshake and a frame"
    );
    // Replay it all on a new connection: the acceptor's fresh nonce makes the proof worthless.
    let mut raw = Raw::tcp(&eb.endpoint());
    raw.send(&bytes[..60]);
    let (acceptor, _na, _) = raw.challenge();
    assert_eq!(acceptor, eb.endpoint().process);
    raw.send(&bytes[60..]);
    assert!(
        raw.closed_by_acceptor(),
        "a replayed handshake was admitted"
    );
    // Same over the Unix socket.
    let mut raw = Raw::unix(&eb.endpoint());
    raw.send(&bytes[..60]);
    raw.challenge();
    raw.send(&bytes[60..]);
    assert!(
        raw.closed_by_acceptor(),
        "a replayed handshake was admitted"
    );
    for round in 1..4 {
        exchange(&a, &b, round);
    }
}

#[test]
fn spoofed_process_id_neither_takes_over_nor_fails_the_peer() {
    let (ea, eb, a, b) = pair(engine(), engine(), 17);
    let (pa, target) = (ea.endpoint().process, eb.endpoint());
    const N: u64 = 3000;
    std::thread::scope(|s| {
        // a streams to b while the attacks run.
        let sender = s.spawn(|| {
            for i in 0..N {
                if i % 500 == 0 {
                    a.ssend_timeout(0, 5, &[i], T).unwrap();
                } else {
                    a.send(0, 5, &[i]).unwrap();
                }
            }
        });
        let receiver = s.spawn(|| {
            let mut x = [0u64];
            for i in 0..N {
                b.recv_timeout(Source::Rank(0), Tag::Value(5), &mut x, T)
                    .unwrap();
                assert_eq!(x[0], i, "message order or content changed");
            }
        });
        // Connect-and-close claiming a's id, at every stage of the handshake.
        for transport in 0..2 {
            let raw = || {
                if transport == 0 {
                    Raw::tcp(&target)
                } else {
                    Raw::unix(&target)
                }
            };
            drop(raw()); // nothing at all
            let mut r = raw();
            r.send(&hello(pa, &[3; 32])[..20]); // half a hello
            drop(r);
            let mut r = raw();
            r.send(&hello(pa, &[3; 32]));
            r.challenge(); // the whole challenge, then gone
            drop(r);
            let mut r = raw();
            r.send(&hello(pa, &[3; 32]));
            r.challenge();
            r.send(&[1u8; 64]); // a bad proof, then frames
            r.send(&injected_frames(17));
            assert!(r.closed_by_acceptor());
            assert!(forge(raw(), &target, pa, &fresh_key(9), 17));
        }
        sender.join().unwrap();
        receiver.join().unwrap();
    });
    for round in 1..4 {
        exchange(&a, &b, round);
    }
}

#[test]
fn a_connector_that_never_completes_the_handshake_is_closed() {
    let (_ea, eb, a, b) = pair(engine(), engine(), 19);
    std::thread::scope(|s| {
        // One says nothing; one trickles a byte at a time, which must not
        // stretch the deadline beyond the whole handshake's.
        let silent = s.spawn(|| Raw::tcp(&eb.endpoint()).closed_by_acceptor());
        let trickler = s.spawn(|| {
            let name = eb.endpoint().unix.unwrap();
            let addr = UnixAddr::from_abstract_name(name.strip_prefix('@').unwrap()).unwrap();
            let mut sock = UnixStream::connect_addr(&addr).unwrap();
            // One byte a second: 60 s for the hello, far beyond the handshake's
            // deadline; a per-read timeout alone would never fire.
            for byte in hello(Uuid::nil(), &[5; 32]) {
                if sock.write_all(&[byte]).is_err() {
                    return true;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            false
        });
        assert!(silent.join().unwrap(), "a silent connector was not closed");
        assert!(
            trickler.join().unwrap(),
            "a trickling connector was not closed"
        );
    });
    exchange(&a, &b, 1);
}

#[test]
fn a_connection_before_the_intercomm_waits_for_the_table() {
    let ea = engine();
    let eb = engine();
    // a forms its intercomm and sends before b has formed its own: b does not
    // know a's key yet, so a's connection waits for b's table.
    let a = ea.intercomm(23, 0, 1, vec![eb.endpoint()]).unwrap();
    std::thread::scope(|s| {
        // A small standard send waits (as MPI allows) until b admitted a's
        // connection, so that it goes out eagerly; an ssend until matched.
        let h1 = s.spawn(|| a.send(0, 1, &[41u64]));
        let h = s.spawn(|| a.ssend_timeout(0, 2, &[42u64], T));
        let b = eb.intercomm(23, 0, 1, vec![ea.endpoint()]).unwrap();
        let mut x = [0u64];
        b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut x, T)
            .unwrap();
        assert_eq!(x[0], 41);
        b.recv_timeout(Source::Rank(0), Tag::Value(2), &mut x, T)
            .unwrap();
        assert_eq!(x[0], 42);
        h1.join().unwrap().unwrap();
        h.join().unwrap().unwrap();
        exchange(&a, &b, 1);
    });
}

#[test]
fn strangers_wait_bounded_per_source_and_in_time() {
    // A process no remote table names, with its own valid key and a correct
    // signature: it waits for a table, and is refused at the deadline.
    let (_ea, eb, a, b) = pair(engine(), engine_on("testhost", Duration::from_secs(1)), 29);
    let stranger = fresh_key(3);
    let id = process_id(&stranger.verifying_key().to_bytes());
    assert!(forge(
        Raw::tcp(&eb.endpoint()),
        &eb.endpoint(),
        id,
        &stranger,
        29
    ));

    // With a long deadline, strangers fill their source's places (TCP from
    // 127.0.0.1); the next one is closed at accept while they still wait,
    // and known peers (over the Unix socket, another source) are admitted.
    const PLACES: u8 = 8;
    let limited = Engine::start(EngineConfig {
        admission_timeout: T * 2,
        admission_per_source: PLACES.into(),
        ..EngineConfig::new("testhost")
    })
    .unwrap();
    let (ea, ec, a2, c) = pair(engine(), limited, 31);
    let target = ec.endpoint();
    let mut waiting: Vec<Raw> = (0..PLACES)
        .map(|i| {
            let key = fresh_key(100 + i);
            let id = process_id(&key.verifying_key().to_bytes());
            let mut r = Raw::tcp(&target);
            let nc = [i; 32];
            r.send(&hello(id, &nc));
            let (acc, na, _) = r.challenge();
            r.send(
                &key.sign(&transcript(b"isthmus-data-v2", id, acc, &nc, &na))
                    .to_bytes(),
            );
            r.expect_grant_follows();
            r
        })
        .collect();
    // One more stranger from the same source: closed at once, unanswered.
    let one_more = fresh_key(250);
    let id = process_id(&one_more.verifying_key().to_bytes());
    let mut r = Raw::tcp(&target);
    r.send(&hello(id, &[250; 32]));
    assert!(
        r.closed_by_acceptor(),
        "a stranger over its source's limit was answered"
    );
    for r in &mut waiting {
        let Raw::Tcp(s) = r else { unreachable!() };
        s.set_nonblocking(true).unwrap();
    }
    let closed = |waiting: &mut Vec<Raw>| {
        waiting
            .iter()
            .filter(|r| {
                let Raw::Tcp(s) = r else { unreachable!() };
                let mut s: &TcpStream = s;
                let mut b = [0u8; 1];
                !matches!(
                    s.read(&mut b).map_err(|e| e.kind()),
                    Err(ErrorKind::WouldBlock)
                )
            })
            .count()
    };
    assert_eq!(
        closed(&mut waiting),
        0,
        "a waiting stranger was closed early"
    );
    // A new engine that c learns about now is admitted despite the full source.
    let ed = engine();
    let cd = ec.intercomm(37, 0, 1, vec![ed.endpoint()]).unwrap();
    let dc = ed.intercomm(37, 0, 1, vec![ec.endpoint()]).unwrap();
    exchange(&dc, &cd, 0);
    exchange(&a2, &c, 1);
    exchange(&a, &b, 1);
    assert_eq!(
        closed(&mut waiting),
        0,
        "a waiting stranger was refused before its deadline"
    );
    drop(ea);
}

/// A process admitted for one intercomm (C, a member of A↔C) sends frames
/// carrying another intercomm's context (A↔B) and claiming B's rank, both
/// to a context A already has and to one A forms only later: A discards
/// them, receives only B's messages, and nobody is marked failed.
#[test]
fn frames_claiming_another_intercomms_rank_are_discarded() {
    let (ea, eb, ec) = (engine(), engine(), engine());
    let ac = ea.intercomm(51, 0, 1, vec![ec.endpoint()]).unwrap();
    let ca = ec.intercomm(51, 0, 1, vec![ea.endpoint()]).unwrap();
    exchange(&ac, &ca, 0);
    let ab = ea.intercomm(52, 0, 1, vec![eb.endpoint()]).unwrap();
    let ba = eb.intercomm(52, 0, 1, vec![ea.endpoint()]).unwrap();
    // C poses as rank 0 of A↔B: on a context A has, and on one it has not yet.
    let forged_now = ec.intercomm(52, 0, 1, vec![ea.endpoint()]).unwrap();
    let forged_early = ec.intercomm(53, 0, 1, vec![ea.endpoint()]).unwrap();
    forged_now.send(0, 7, &[666u64, 666]).unwrap();
    forged_early.send(0, 7, &[666u64, 666]).unwrap();
    // C's frames are on A's socket before B's: what A receives next on 52
    // must still be B's.
    exchange(&ca, &ac, 1);
    exchange(&ba, &ab, 1);
    assert!(
        ab.iprobe(Source::Any, Tag::Any).unwrap().is_none(),
        "a forged message is waiting on A↔B"
    );
    let ab2 = ea.intercomm(53, 0, 1, vec![eb.endpoint()]).unwrap();
    let ba2 = eb.intercomm(53, 0, 1, vec![ea.endpoint()]).unwrap();
    exchange(&ba2, &ab2, 2);
    assert!(
        ab2.iprobe(Source::Any, Tag::Any).unwrap().is_none(),
        "a forged early message survived A's forming the intercomm"
    );
    // C itself is no worse off.
    exchange(&ac, &ca, 3);
}

/// A frame header of `kind` with every other field 0.
fn bare_frame(kind: u8) -> [u8; 56] {
    let mut f = [0u8; 56];
    f[0] = kind;
    f
}

/// An admitted process — its key is in a table (an intercomm names it) —
/// that sends DUPLEX or MOVED where they cannot come has that connection
/// ended (the bridge's `transport::duplex`): DUPLEX after another frame,
/// DUPLEX on the Unix socket, MOVED as a first frame, MOVED when nobody
/// offered it our connection. The exchange between the real peers goes on.
#[test]
fn duplex_and_moved_where_they_cannot_come_end_the_connection() {
    const CREDIT: u8 = 8;
    const DUPLEX: u8 = 11;
    const MOVED: u8 = 12;
    let (ea, eb, a, b) = pair(engine(), engine(), 61);
    let target = ea.endpoint();
    let cases: [(bool, &[u8]); 4] = [
        (true, &[CREDIT, DUPLEX]),
        (false, &[DUPLEX]),
        (true, &[MOVED]),
        (true, &[DUPLEX, MOVED]),
    ];
    for (i, (tcp, kinds)) in cases.into_iter().enumerate() {
        let key = fresh_key(40 + i as u8);
        let public_key = key.verifying_key().to_bytes();
        let me = Endpoint {
            process: process_id(&public_key),
            public_key,
            host: "elsewhere".into(),
            locality: None,
            unix: None,
            tcp: Vec::new(),
        };
        let _named = ea.intercomm(70 + i as u64, 0, 1, vec![me.clone()]).unwrap();
        let mut raw = if tcp {
            Raw::tcp(&target)
        } else {
            Raw::unix(&target)
        };
        let nc = [5u8; 32];
        raw.send(&hello(me.process, &nc));
        let (acceptor, na, _sig) = raw.challenge();
        let sig = key.sign(&transcript(
            b"isthmus-data-v2",
            me.process,
            acceptor,
            &nc,
            &na,
        ));
        raw.send(&sig.to_bytes());
        let mut grant = [0u8; 56];
        raw.io().read_exact(&mut grant).unwrap();
        assert_eq!(grant[0], CREDIT, "case {i}: admitted with a grant");
        for &k in kinds {
            raw.send(&bare_frame(k));
        }
        assert!(raw.closed_by_acceptor(), "case {i} ({kinds:?}): still open");
    }
    for round in 1..3 {
        exchange(&a, &b, round);
    }
    drop(eb);
}

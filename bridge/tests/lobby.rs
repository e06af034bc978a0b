//! Connections waiting to be admitted hold no thread (issue 23, item 9):
//! 300 raw connections start a handshake with ids no table names. The
//! engine's threads stay as they were, its per-source limit refuses all
//! but that many at accept, the rest wait and are closed at their
//! (shortened) admission deadline, and a legitimate peer that connects
//! meanwhile — before the table naming it, too — is admitted.
//!
//! One test in its own binary: it counts this process's threads and
//! descriptors, which other tests running alongside would change.

#![cfg(test)]

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ed25519_dalek::{Signer, SigningKey};
use isthmus_bridge::*;
use uuid::Uuid;

/// Hang guard for anything that must happen; never a measured time.
const T: Duration = Duration::from_secs(60);
const STRANGERS: usize = 300;
const PER_SOURCE: usize = 16;
const ADMISSION: Duration = Duration::from_secs(4);

fn mpi() {
    let (universe, _) =
        mpi::initialize_with_threading(mpi::Threading::Multiple).expect("MPI initialises once");
    std::mem::forget(universe);
}

fn engine(config: EngineConfig) -> Arc<Engine> {
    Engine::start(config).expect("engine starts")
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

fn descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn hello(claimed: Uuid, nc: &[u8; 32]) -> Vec<u8> {
    let mut h = b"ISTHMUS\0".to_vec();
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(claimed.as_bytes());
    h.extend_from_slice(nc);
    h
}

/// CREDIT frame of 0 bytes with seq 1: "admission pending, the grant follows".
fn grant_follows() -> Vec<u8> {
    let mut f = [0u8; 56];
    f[0] = 8;
    f[24..32].copy_from_slice(&1u64.to_le_bytes());
    f.to_vec()
}

struct Stranger {
    sock: TcpStream,
    key: SigningKey,
    id: Uuid,
    nc: [u8; 32],
}

/// What the acceptor did with a connection that sent its HELLO.
enum Answer {
    /// Its challenge: (its id, Na).
    Challenge(Uuid, [u8; 32]),
    /// Closed it (EOF or reset) without a word.
    Closed,
}

fn answer(s: &mut TcpStream) -> Answer {
    let mut b = [0u8; 1 + 16 + 32 + 64];
    match s.read_exact(&mut b) {
        Ok(()) => {
            assert_eq!(b[0], 0, "acceptor refused our hello's version");
            Answer::Challenge(
                Uuid::from_slice(&b[1..17]).unwrap(),
                b[17..49].try_into().unwrap(),
            )
        }
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset
            ) =>
        {
            Answer::Closed
        }
        Err(e) => panic!("neither a challenge nor a close: {e}"),
    }
}

/// Blocks until the acceptor closes `s`; Err if it sent anything.
fn closed(s: &mut TcpStream) -> Result<(), String> {
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => Ok(()),
        Ok(n) => Err(format!("acceptor sent {n} bytes instead of closing")),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(()),
        Err(e) => Err(format!("no close: {e}")),
    }
}

#[test]
fn three_hundred_unpublished_handshakes_hold_no_thread() {
    mpi();
    let acceptor = engine(EngineConfig {
        admission_timeout: ADMISSION,
        admission_per_source: PER_SOURCE,
        ..EngineConfig::new("testhost")
    });
    let friend = engine(EngineConfig::new("testhost"));
    let target = acceptor.endpoint();
    let (threads_before, fds_before) = (threads(), descriptors());

    // 300 strangers over TCP from 127.0.0.1, each with a fresh key whose
    // id no table names.
    let mut strangers: Vec<Stranger> = (0..STRANGERS)
        .map(|i| {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
            let key = SigningKey::from_bytes(&seed);
            let id = process_id(&key.verifying_key().to_bytes());
            let mut sock = TcpStream::connect(target.tcp[0]).unwrap();
            sock.set_read_timeout(Some(T)).unwrap();
            let nc = seed;
            // A refused connection may already be closed: what we check.
            let _ = sock.write_all(&hello(id, &nc));
            Stranger { sock, key, id, nc }
        })
        .collect();
    let threads_connected = threads();
    let mut waiting = Vec::new();
    let mut refused = 0;
    for mut s in strangers.drain(..) {
        match answer(&mut s.sock) {
            Answer::Challenge(acc, na) => {
                assert_eq!(acc, target.process);
                let t = [
                    &b"isthmus-data-v2"[..],
                    s.id.as_bytes(),
                    acc.as_bytes(),
                    &s.nc,
                    &na,
                ]
                .concat();
                s.sock.write_all(&s.key.sign(&t).to_bytes()).unwrap();
                waiting.push(s);
            }
            Answer::Closed => refused += 1,
        }
    }
    assert_eq!(
        (waiting.len(), refused),
        (PER_SOURCE, STRANGERS - PER_SOURCE),
        "the per-source limit should let exactly {PER_SOURCE} in"
    );
    let mut b = [0u8; 56];
    for s in &mut waiting {
        s.sock.read_exact(&mut b).unwrap();
        assert_eq!(b.to_vec(), grant_follows(), "expected 'grant follows'");
    }
    let parked = Instant::now();
    let (threads_parked, fds_parked) = (threads(), descriptors());
    println!(
        "threads: {threads_before} before, {threads_connected} after {STRANGERS} connections, \
         {threads_parked} with {PER_SOURCE} waiting; descriptors: {fds_before} before, {fds_parked} with them waiting"
    );
    assert!(
        threads_connected <= threads_before + 1 && threads_parked <= threads_before + 1,
        "connections made the engine start threads: {threads_before} → {threads_connected} → {threads_parked}"
    );
    // Ours and the acceptor's end of each waiting connection, nothing for
    // the refused ones.
    assert!(
        fds_parked <= fds_before + 2 * PER_SOURCE + 4,
        "descriptors: {fds_before} → {fds_parked}"
    );

    // Meanwhile a legitimate peer (over the Unix socket: another source)
    // connects before the acceptor knows it, waits in the lobby too, and is
    // admitted when the table comes.
    let context = 0x10bb;
    let a = friend
        .intercomm(context, 0, 1, vec![acceptor.endpoint()])
        .unwrap();
    std::thread::scope(|sc| {
        let sent = sc.spawn(|| a.send(0, 1, &[41u64]));
        std::thread::sleep(Duration::from_millis(200));
        let b = acceptor
            .intercomm(context, 0, 1, vec![friend.endpoint()])
            .unwrap();
        let mut x = [0u64];
        b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut x, T)
            .unwrap();
        assert_eq!(x[0], 41);
        sent.join().unwrap().unwrap();
        b.send(0, 2, &[42u64]).unwrap();
        a.recv_timeout(Source::Rank(0), Tag::Value(2), &mut x, T)
            .unwrap();
        assert_eq!(x[0], 42);
    });
    assert!(
        parked.elapsed() < ADMISSION,
        "the legitimate exchange took too long to prove anything"
    );

    // The strangers are closed at their admission deadline, not before.
    for s in &mut waiting {
        closed(&mut s.sock).unwrap();
    }
    let waited = parked.elapsed();
    println!("strangers closed after {waited:?} (deadline {ADMISSION:?})");
    assert!(
        waited >= ADMISSION - Duration::from_millis(300)
            && waited < ADMISSION + Duration::from_secs(3),
        "closed after {waited:?}, deadline {ADMISSION:?}"
    );
    drop(waiting);
    // Their places are free again: a new connection from the same source
    // gets a challenge.
    let mut again = TcpStream::connect(target.tcp[0]).unwrap();
    again.set_read_timeout(Some(T)).unwrap();
    again.write_all(&hello(Uuid::new_v4(), &[9; 32])).unwrap();
    assert!(matches!(answer(&mut again), Answer::Challenge(..)));
}

//! Bounded resources of the data path, with real processes and sockets:
//! a receiver sent far more than its unexpected-memory bound, forged
//! headers, thousands of connections, handshakes that never finish.
//!
//! The receiver of the memory tests runs in a child process (this test
//! binary re-executed on an `#[ignore]`d entry point) so that its peak
//! memory (VmHWM) is its own.

#![cfg(test)]

mod common;

use common::mpi;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::{Signer, SigningKey};
use isthmus_bridge::*;

const T: Duration = Duration::from_secs(120);
const CONTEXT: u64 = 0xb0_0d;

fn engine() -> Arc<Engine> {
    mpi();
    Engine::start(EngineConfig::new("testhost")).expect("engine starts")
}

/// An engine that sends everything above the eager limit by rendezvous,
/// whatever its credit (no large eager sends).
fn rendezvous_engine() -> Arc<Engine> {
    mpi();
    let mut cfg = EngineConfig::new("testhost");
    cfg.large_eager_limit = cfg.eager_limit;
    Engine::start(cfg).expect("engine starts")
}

/// Runs the calling test's body in a process of its own, because fd and
/// thread counts and peak memory are per process and the harness runs
/// tests in parallel. True in that process (run the body), false in the parent.
fn isolated(name: &str) -> bool {
    if std::env::var("ISTHMUS_ISOLATED").as_deref() == Ok(name) {
        return true;
    }
    let st = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            name,
            "--nocapture",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env("ISTHMUS_ISOLATED", name)
        .status()
        .unwrap();
    assert!(st.success(), "{name} failed in its own process");
    false
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn checksum(v: &[u8]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Length of message `i` of a flood whose largest message is `size`:
/// with `ISTHMUS_FLOOD_MIXED` set, odd messages are small (eager) ones.
fn flood_len(i: u64, size: usize, mixed: bool) -> usize {
    if mixed && i % 2 == 1 {
        8 << 10
    } else {
        size
    }
}

/// Message `i` of the flood: its bytes are derived from `i`.
fn flood_message(i: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| (i as usize).wrapping_mul(31).wrapping_add(j) as u8)
        .collect()
}

fn status_field(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// Child side of `unexpected_flood_*`: start an engine, print its endpoint,
/// read the sender's; wait until the LAST message's envelope is visible
/// (probe), report peak memory, then receive everything and check it.
#[test]
#[ignore = "child process of the unexpected-flood test"]
fn flood_receiver_child() {
    let Ok(peer) = std::env::var("ISTHMUS_FLOOD_PEER") else {
        return;
    };
    let count: u64 = std::env::var("ISTHMUS_FLOOD_COUNT")
        .unwrap()
        .parse()
        .unwrap();
    let size: usize = std::env::var("ISTHMUS_FLOOD_SIZE")
        .unwrap()
        .parse()
        .unwrap();
    let mixed = std::env::var_os("ISTHMUS_FLOOD_MIXED").is_some();
    let e = engine();
    println!("START_KIB {}", status_field("VmHWM:"));
    println!("ENDPOINT {}", hex(&e.endpoint().encode()));
    std::io::stdout().flush().unwrap();
    let ep = Endpoint::decode(&unhex(&peer)).unwrap();
    let c = e.intercomm(CONTEXT, 0, 1, vec![ep]).unwrap();
    // Every message was sent (or announced) before any receive is posted.
    c.probe_timeout(Source::Rank(0), Tag::Value((count - 1) as i32), T)
        .unwrap();
    let hwm_kib = status_field("VmHWM:");
    println!("PEAK_KIB {hwm_kib}");
    std::io::stdout().flush().unwrap();
    // Receive only once the sender looked at its requests.
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    let mut buf = vec![0u8; size];
    for i in 0..count {
        let len = flood_len(i, size, mixed);
        let st = c
            .recv_timeout(Source::Rank(0), Tag::Value(i as i32), &mut buf, T)
            .unwrap();
        assert_eq!(st.bytes as usize, len, "message {i}");
        assert_eq!(
            checksum(&buf[..len]),
            checksum(&flood_message(i, len)),
            "message {i}"
        );
    }
    // Tell the sender everything arrived intact.
    c.send(0, 1 << 30, &[1u8]).unwrap();
    println!("CHILD_OK");
}

/// What the receiver of a flood reported.
struct Flooded {
    /// Peak memory before any message arrived, KiB.
    start_kib: u64,
    /// Peak memory once every message was sent or announced, KiB.
    peak_kib: u64,
    /// Send requests complete when the receiver had every envelope but had posted nothing.
    complete_before_receives: usize,
    /// How much the sender's peak memory grew while it posted its sends, KiB.
    sender_grew_kib: u64,
}

/// How a flood's sender posts its messages.
#[derive(Clone, Copy, PartialEq)]
enum Post {
    /// `isend_bytes`: each message a vector given to the bridge.
    Owned,
    /// `isend_lent`: each message lent from a buffer made beforehand.
    Lent,
}

/// Sends `count` messages (see `flood_len`) with isend to a receiver
/// process that posts no receive before it saw the last one's envelope.
fn flood(count: u64, size: usize, mixed: bool, env: &[(&str, &str)]) -> Flooded {
    flood_with(Post::Owned, count, size, mixed, env)
}

fn flood_with(post: Post, count: u64, size: usize, mixed: bool, env: &[(&str, &str)]) -> Flooded {
    let e = engine();
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        "flood_receiver_child",
        "--ignored",
        "--nocapture",
    ])
    .env("ISTHMUS_FLOOD_PEER", hex(&e.endpoint().encode()))
    .env("ISTHMUS_FLOOD_COUNT", count.to_string())
    .env("ISTHMUS_FLOOD_SIZE", size.to_string())
    .stdin(Stdio::piped())
    .stdout(Stdio::piped());
    if mixed {
        cmd.env("ISTHMUS_FLOOD_MIXED", "1");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut start_kib = None;
    let ep = loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "child ended early");
        if let Some(v) = line.trim().strip_prefix("START_KIB ") {
            start_kib = v.parse::<u64>().ok();
        }
        if let Some(h) = line.trim().strip_prefix("ENDPOINT ") {
            break Endpoint::decode(&unhex(h)).unwrap();
        }
    };
    let c = e.intercomm(CONTEXT, 0, 1, vec![ep]).unwrap();
    let sig = u8::type_sig().unwrap();
    let mut reqs = Vec::new();
    // The lent buffers are the program's: made (and counted) before.
    let lent: Vec<Vec<u8>> = match post {
        Post::Lent => (0..count)
            .map(|i| flood_message(i, flood_len(i, size, mixed)))
            .collect(),
        Post::Owned => Vec::new(),
    };
    let before_kib = status_field("VmHWM:");
    for i in 0..count {
        let len = flood_len(i, size, mixed);
        let r = match post {
            Post::Owned => c.isend_bytes(0, i as i32, &sig, len as u64, flood_message(i, len)),
            // SAFETY: `lent` is neither changed nor dropped before every
            // request completed (`wait_all` below).
            Post::Lent => unsafe {
                let b = &lent[i as usize];
                c.isend_lent(0, i as i32, &sig, len as u64, b.as_ptr(), b.len())
            },
        };
        reqs.push(r.unwrap());
    }
    let sender_grew_kib = status_field("VmHWM:").saturating_sub(before_kib);
    let mut peak = None;
    let mut complete_before_receives = 0;
    let mut ok = false;
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(v) = line.trim().strip_prefix("PEAK_KIB ") {
            peak = Some(v.parse::<u64>().unwrap());
            complete_before_receives = reqs.iter().filter(|r| r.test()).count();
            writeln!(stdin, "GO").unwrap();
        }
        ok |= line.contains("CHILD_OK");
    }
    for r in wait_all(reqs) {
        r.unwrap();
    }
    let mut done = [0u8];
    c.recv_timeout(Source::Rank(0), Tag::Value(1 << 30), &mut done, T)
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(ok, "receiver did not check every message");
    drop(lent);
    Flooded {
        start_kib: start_kib.unwrap(),
        peak_kib: peak.unwrap(),
        complete_before_receives,
        sender_grew_kib,
    }
}

/// Issue 23, item 2, in the Rust API: 256 sends of 1 MiB lent with
/// `isend_lent` to a receiver that posts nothing before it saw the last
/// one's envelope stay incomplete (all but the receiver's 4 MiB eager
/// window), every message arrives intact, and the sender's peak memory
/// grows by less than 16 MiB while it posts them (`isend_bytes` of the
/// same messages, for comparison, holds them all: 256 MiB).
#[test]
fn lent_isends_stay_incomplete_and_hold_no_copy() {
    if !isolated("lent_isends_stay_incomplete_and_hold_no_copy") {
        return;
    }
    let f = flood_with(Post::Lent, 256, 1 << 20, false, &[]);
    println!(
        "sender grew by {} KiB posting 256 MiB of lent sends; {} of 256 complete before any receive",
        f.sender_grew_kib, f.complete_before_receives
    );
    assert!(
        f.sender_grew_kib < 16 << 10,
        "the sender grew by {} KiB for 256 MiB of lent sends",
        f.sender_grew_kib
    );
    assert!(
        f.complete_before_receives <= 8,
        "{} lent sends completed before the receiver received",
        f.complete_before_receives
    );
}

/// A receiver whose unexpected-memory bound is 1 MiB is sent 264 MiB
/// (1024 messages of 256 KiB and 1024 of 8 KiB, interleaved) before it
/// posts a single receive: every message arrives intact, its memory grows by
/// far less than what was sent, and the sender's large messages wait.
#[test]
fn unexpected_flood_is_bounded_and_lossless() {
    let f = flood(
        2048,
        256 << 10,
        true,
        &[
            ("ISTHMUS_UNEXPECTED_LIMIT", "1m"),
            ("ISTHMUS_EAGER_WINDOW", "256k"),
        ],
    );
    let grew_mib = f.peak_kib.saturating_sub(f.start_kib) >> 10;
    println!(
        "receiver peak grew by {grew_mib} MiB for 264 MiB sent; {} of 2048 sends complete before any receive",
        f.complete_before_receives
    );
    assert!(
        grew_mib < 64,
        "receiver grew by {grew_mib} MiB while 264 MiB were unexpected"
    );
    // Only eager messages within the 256 KiB window can be complete.
    assert!(
        f.complete_before_receives < 64,
        "{}",
        f.complete_before_receives
    );
    assert!(f.complete_before_receives > 0, "no message went eagerly");
}

/// Measurement: the receiver's peak memory when 2 GiB arrive unexpectedly.
/// `ISTHMUS_FLOOD_MIB` overrides the amount.
#[test]
#[ignore = "measurement (2 GiB); run explicitly"]
fn measure_unexpected_2gib_peak() {
    let mib: u64 = std::env::var("ISTHMUS_FLOOD_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2048);
    let f = flood(mib, 1 << 20, false, &[]);
    println!(
        "MEASURE receiver peak for {mib} MiB unexpected: {} MiB (at start {} MiB)",
        f.peak_kib >> 10,
        f.start_kib >> 10
    );
}

fn count_dir(p: &str) -> usize {
    std::fs::read_dir(p).unwrap().count()
}

/// A process the test speaks for on raw sockets: a real key pair, and an
/// endpoint (with no address) that a receiver can be told about.
struct Fake {
    key: SigningKey,
    endpoint: Endpoint,
}

/// `n` fake processes, distinct per `seed`.
fn fakes(seed: u32, n: u32) -> Vec<Fake> {
    (0..n)
        .map(|i| {
            let mut k = [0u8; 32];
            k[..4].copy_from_slice(&seed.to_le_bytes());
            k[4..8].copy_from_slice(&i.to_le_bytes());
            let key = SigningKey::from_bytes(&k);
            let public_key = key.verifying_key().to_bytes();
            let endpoint = Endpoint {
                process: process_id(&public_key),
                public_key,
                host: "nowhere".into(),
                locality: None,
                unix: None,
                tcp: Vec::new(),
            };
            Fake { key, endpoint }
        })
        .collect()
}

/// Tell `e` about `fakes` (a remote group of an intercomm), so that their
/// connections are admitted. Keep the returned InterComm alive.
fn known_to(e: &Arc<Engine>, context: u64, fakes: &[Fake]) -> InterComm {
    let remote = fakes.iter().map(|f| f.endpoint.clone()).collect();
    e.intercomm(context, 0, 1, remote).unwrap()
}

/// Opens a data connection as `me` and passes the signed handshake (see the
/// bridge's `handshake` module for the wire), then reads the credit grant.
fn handshaken(ep: &Endpoint, me: &Fake) -> UnixStream {
    let name = ep.unix.as_ref().unwrap().strip_prefix('@').unwrap();
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let mut s = UnixStream::connect_addr(&addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let claimed = me.endpoint.process;
    let nc = [9u8; 32];
    let mut hello = Vec::new();
    hello.extend_from_slice(b"ISTHMUS\0");
    hello.extend_from_slice(&2u16.to_le_bytes());
    hello.extend_from_slice(&0u16.to_le_bytes());
    hello.extend_from_slice(claimed.as_bytes());
    hello.extend_from_slice(&nc);
    s.write_all(&hello).unwrap();
    let mut challenge = [0u8; 1 + 16 + 32 + 64];
    s.read_exact(&mut challenge).unwrap();
    assert_eq!(challenge[0], 0, "hello accepted");
    let acceptor = &challenge[1..17];
    assert_eq!(acceptor, ep.process.as_bytes());
    let na = &challenge[17..49];
    let transcript: Vec<u8> = [
        &b"isthmus-data-v2"[..],
        claimed.as_bytes(),
        acceptor,
        &nc,
        na,
    ]
    .concat();
    s.write_all(&me.key.sign(&transcript).to_bytes()).unwrap();
    // The acceptor's credit grant: one CREDIT frame (kind 8).
    let mut grant = [0u8; 56];
    s.read_exact(&mut grant).unwrap();
    assert_eq!(grant[0], 8);
    s.set_read_timeout(None).unwrap();
    s
}

/// A 56-byte frame header (see bridge/src/frame.rs).
#[allow(clippy::too_many_arguments)]
fn header(kind: u8, context: u64, tag: i32, seq: u64, count: u64, len: u64) -> [u8; 56] {
    let mut b = [0u8; 56];
    b[0] = kind;
    b[1] = if cfg!(target_endian = "little") { 0 } else { 1 };
    b[8..16].copy_from_slice(&context.to_le_bytes());
    b[16..20].copy_from_slice(&tag.to_le_bytes());
    b[24..32].copy_from_slice(&seq.to_le_bytes());
    b[32..40].copy_from_slice(&u8::type_sig().unwrap().signature.to_le_bytes());
    b[40..48].copy_from_slice(&count.to_le_bytes());
    b[48..56].copy_from_slice(&len.to_le_bytes());
    b
}

/// Reads until the peer closes; false if it did not within the hang guard.
fn closed_by_peer(s: &mut UnixStream) -> bool {
    s.set_read_timeout(Some(T)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

/// A real pair of engines with an intercomm each way, to show that the
/// legitimate exchange is unaffected.
fn legit_pair(context: u64) -> (Arc<Engine>, Arc<Engine>, InterComm, InterComm) {
    let (ea, eb) = (engine(), engine());
    let a = ea.intercomm(context, 0, 1, vec![eb.endpoint()]).unwrap();
    let b = eb.intercomm(context, 0, 1, vec![ea.endpoint()]).unwrap();
    (ea, eb, a, b)
}

fn exchange(a: &InterComm, b: &InterComm, tag: i32) {
    let small: Vec<u32> = (0..100).collect();
    let big: Vec<u8> = flood_message(tag as u64, 1 << 20);
    let r1 = a.isend(0, tag, &small).unwrap();
    let r2 = a.isend(0, tag + 1, &big).unwrap();
    let mut s = vec![0u32; 100];
    b.recv_timeout(Source::Rank(0), Tag::Value(tag), &mut s, T)
        .unwrap();
    let mut g = vec![0u8; 1 << 20];
    b.recv_timeout(Source::Rank(0), Tag::Value(tag + 1), &mut g, T)
        .unwrap();
    assert_eq!(s, small);
    assert_eq!(checksum(&g), checksum(&big));
    r1.wait_timeout(T).unwrap();
    r2.wait_timeout(T).unwrap();
}

/// A VM member that forges headers — a 2^31-byte eager message followed by
/// 32 MiB, DATA nobody asked for, pushed DATA (sent on credit, see the
/// bridge's `engine::push`) beyond its credit, an unknown frame kind — is
/// cut off without
/// the receiver touching the claimed memory; the legitimate exchange between
/// the receiver and a real peer goes on.
#[test]
fn forged_headers_are_cut_off() {
    if !isolated("forged_headers_are_cut_off") {
        return;
    }
    let (_ea, eb, a, b) = legit_pair(0xf0);
    let forgers = fakes(1, 5);
    let _known = known_to(&eb, 0xf1, &forgers);
    // Flag PUSHED (bit 1 of byte 2) on a 2^31-byte DATA: over any window.
    let mut pushed = header(7, 0xf0, 1, 78, 1 << 31, 1 << 31);
    pushed[2] = 2;
    exchange(&a, &b, 10);
    let hwm0 = status_field("VmHWM:");
    let junk = vec![0x5au8; 32 << 20];
    let forgeries: Vec<(&str, Vec<u8>)> = vec![
        (
            "huge eager",
            header(1, 0xf0, 1, 1, 1 << 31, 1 << 31).to_vec(),
        ),
        ("unasked DATA", header(7, 0xf0, 1, 77, 16, 16).to_vec()),
        ("pushed DATA beyond its credit", pushed.to_vec()),
        ("unknown kind", header(99, 0xf0, 1, 1, 0, 0).to_vec()),
        (
            "payload on a control frame",
            header(6, 0xf0, 0, 1, 0, 1 << 40).to_vec(),
        ),
    ];
    for ((what, hdr), forger) in forgeries.into_iter().zip(&forgers) {
        let mut s = handshaken(&eb.endpoint(), forger);
        s.write_all(&hdr).unwrap();
        // The receiver may close before taking it all: errors are expected.
        let _ = s.write_all(&junk);
        assert!(closed_by_peer(&mut s), "{what}: connection not closed");
        exchange(&a, &b, 20);
    }
    let grew_mib = status_field("VmHWM:").saturating_sub(hwm0) >> 10;
    // The junk buffer itself is 32 MiB; the claimed 2 GiB must not show.
    assert!(grew_mib < 512, "peak memory grew by {grew_mib} MiB");
}

/// Descriptors the legitimate pair of a connection-count test may hold
/// beyond its count before (a connection each way, with its shared-memory
/// segment and doorbell).
const FD_SLACK: usize = 8;

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + T;
    while !f() {
        assert!(std::time::Instant::now() < deadline, "hang guard: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 2000 data connections opened (handshake passed) and closed against one
/// engine: no thread per connection, and fds and threads return to where
/// they were.
#[test]
fn two_thousand_connections_leave_nothing_behind() {
    if !isolated("two_thousand_connections_leave_nothing_behind") {
        return;
    }
    let e = engine();
    let ep = e.endpoint();
    let many = fakes(2, 2000);
    let _known = known_to(&e, 0xc1, &many);
    // Let the engine's own threads settle before counting: the legitimate
    // pair talks both ways, so each side's outgoing connection (and the
    // one a receiver opens lazily to return credit) exists already.
    let (_ea, _eb, a, b) = legit_pair(0xc0);
    exchange(&a, &b, 1);
    exchange(&b, &a, 2);
    let fds0 = count_dir("/proc/self/fd");
    let threads0 = count_dir("/proc/self/task");
    let mut open = Vec::new();
    for f in &many {
        open.push(handshaken(&ep, f));
    }
    // Handshakes run on the engine's one lobby thread: 2000 open
    // connections cost no thread.
    wait_until("no thread per connection", || {
        count_dir("/proc/self/task") <= threads0
    });
    for mut s in open.drain(..) {
        // An orderly goodbye (BYE), then close.
        let _ = s.write_all(&header(4, 0, 0, 0, 0, 0));
    }
    // Within a few of their count before: a leak per connection would
    // leave thousands, while the legitimate pair may still open or close a
    // connection of its own meanwhile (on a loaded machine the count once
    // stayed off by the pair's descriptors for the whole two minutes).
    let mut fds = 0;
    let returned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("fds return to their count before", || {
            fds = count_dir("/proc/self/fd");
            fds <= fds0 + FD_SLACK
        })
    }));
    assert!(
        returned.is_ok(),
        "{fds} descriptors open after the 2000 closed, {fds0} before"
    );
    // At most as many as before: a short-lived thread counted then (the
    // legitimate pair's handshake, still ending on a loaded machine) may be
    // gone too.
    wait_until("threads return to their count before", || {
        count_dir("/proc/self/task") <= threads0
    });
    exchange(&a, &b, 3);
}

/// A connection that never finishes its handshake (silent, or trickling
/// bytes) is closed after the handshake deadline; others are not held up.
#[test]
fn unfinished_handshakes_are_closed() {
    if !isolated("unfinished_handshakes_are_closed") {
        return;
    }
    mpi();
    let mut cfg = EngineConfig::new("testhost");
    cfg.handshake_timeout = Duration::from_millis(300);
    let e = Engine::start(cfg).unwrap();
    let ep = e.endpoint();
    let one = fakes(3, 1);
    let _known = known_to(&e, 0xe0, &one);
    let name = ep.unix.as_ref().unwrap().strip_prefix('@').unwrap();
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let fds0 = count_dir("/proc/self/fd");
    let mut silent = UnixStream::connect_addr(&addr).unwrap();
    let mut trickle = UnixStream::connect_addr(&addr).unwrap();
    // A full handshake still passes while the two hang.
    drop(handshaken(&ep, &one[0]));
    let t = std::thread::spawn(move || {
        for b in b"ISTHMUS\0" {
            if trickle.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        closed_by_peer(&mut trickle)
    });
    assert!(closed_by_peer(&mut silent), "silent handshake not closed");
    assert!(t.join().unwrap(), "trickling handshake not closed");
    drop(silent);
    // Within a few of their count before: a leak per connection would
    // leave thousands, while the legitimate pair may still open or close a
    // connection of its own meanwhile (on a loaded machine the count once
    // stayed off by the pair's descriptors for the whole two minutes).
    let mut fds = 0;
    let returned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("fds return to their count before", || {
            fds = count_dir("/proc/self/fd");
            fds <= fds0 + FD_SLACK
        })
    }));
    assert!(
        returned.is_ok(),
        "{fds} descriptors open after the 2000 closed, {fds0} before"
    );
}

/// Measurement: fds and threads after 2000 connections opened and closed.
#[test]
#[ignore = "measurement; run explicitly"]
fn measure_2000_connections() {
    if !isolated("measure_2000_connections") {
        return;
    }
    let e = engine();
    let ep = e.endpoint();
    let many = fakes(4, 2000);
    let _known = known_to(&e, 0xc2, &many);
    let fds0 = count_dir("/proc/self/fd");
    let threads0 = count_dir("/proc/self/task");
    let mut open = Vec::new();
    for f in &many {
        open.push(handshaken(&ep, f));
    }
    let fds_open = count_dir("/proc/self/fd");
    let threads_open = count_dir("/proc/self/task");
    drop(open);
    // Settle (the engine sees 2000 EOFs), then count.
    std::thread::sleep(Duration::from_secs(3));
    let fds1 = count_dir("/proc/self/fd");
    let threads1 = count_dir("/proc/self/task");
    println!(
        "MEASURE fds {fds0} -> {fds_open} open -> {fds1} closed; threads {threads0} -> {threads_open} open -> {threads1} closed"
    );
}

/// Two processes send each other large (rendezvous) messages at the same
/// time with their receives posted first — MPI's sendrecv and
/// isend+irecv+waitall patterns — and neither waits for the other forever.
/// Also many more small blocking sends than the credit window holds, with
/// the receiver posting as it goes.
#[test]
fn mutual_large_sends_with_posted_receives_complete() {
    let (_ea, _eb, a, b) = legit_pair(0xd0);
    let n = 8 << 20;
    let side = |me: &InterComm, seed: u64| {
        let out = flood_message(seed, n);
        for round in 0..4 {
            // sendrecv: receive posted, then a blocking send.
            let r = me
                .irecv_bytes(Source::Rank(0), Tag::Value(round), None, n)
                .unwrap();
            me.send(0, round, &out).unwrap();
            let (got, st) = r.wait_timeout(T).unwrap();
            assert_eq!(st.bytes as usize, n);
            assert_eq!(checksum(&got), checksum(&flood_message(seed ^ 1, n)));
            // isend + irecv + waitall.
            let s = me.isend(0, 100 + round, &out).unwrap();
            let r = me
                .irecv_bytes(Source::Rank(0), Tag::Value(100 + round), None, n)
                .unwrap();
            s.wait_timeout(T).unwrap();
            let (got, _) = r.wait_timeout(T).unwrap();
            assert_eq!(checksum(&got), checksum(&flood_message(seed ^ 1, n)));
        }
        // 4000 small blocking sends, far beyond the window; the peer receives them in order.
        let rx = std::thread::scope(|s| {
            let h = s.spawn(|| {
                let mut x = [0u64; 64];
                for i in 0..4000u64 {
                    me.recv_timeout(Source::Rank(0), Tag::Value(7), &mut x, T)
                        .unwrap();
                    assert_eq!(x[0], i);
                }
            });
            for i in 0..4000u64 {
                me.send(0, 7, &[i; 64]).unwrap();
            }
            h.join().is_ok()
        });
        assert!(rx);
    };
    std::thread::scope(|s| {
        let ha = s.spawn(|| side(&a, 2));
        let hb = s.spawn(|| side(&b, 3));
        ha.join().unwrap();
        hb.join().unwrap();
    });
}

/// Messages for contexts nobody registered are bounded: a 257th unknown
/// context is refused and one older than the configured age is evicted.
/// Either way a rendezvous sender is released (its payload discarded) rather
/// than left waiting forever, and a context registered in time keeps its
/// messages.
#[test]
fn unknown_contexts_are_bounded_in_count_and_age() {
    let ea = rendezvous_engine();
    let mut cfg = EngineConfig::new("testhost");
    cfg.early_context_age = Duration::from_secs(3600);
    let eb = Engine::start(cfg).unwrap();
    // eb admits ea's connection only once it holds a table naming ea: an
    // intercomm on another context, so that the 257 contexts below are
    // unknown to eb when their announcements arrive.
    let _k = eb.intercomm(99, 0, 1, vec![ea.endpoint()]).unwrap();
    let big = flood_message(5, 128 << 10);
    let comms: Vec<InterComm> = (0..257u64)
        .map(|c| ea.intercomm(1000 + c, 0, 1, vec![eb.endpoint()]).unwrap())
        .collect();
    let mut reqs: Vec<SendRequest> = comms.iter().map(|c| c.isend(0, 1, &big).unwrap()).collect();
    // The 257th context is one too many: its announcement is answered and
    // its payload discarded.
    reqs.pop().unwrap().wait_timeout(T).unwrap();
    assert!(
        reqs.iter().all(|r| !r.test()),
        "kept contexts wait for their receives"
    );
    // A context registered late still gets its message.
    let b = eb.intercomm(1005, 0, 1, vec![ea.endpoint()]).unwrap();
    let mut got = vec![0u8; 128 << 10];
    b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut got, T)
        .unwrap();
    assert_eq!(checksum(&got), checksum(&big));
    reqs.remove(5).wait_timeout(T).unwrap();

    // Age: with a zero age, the next unknown context evicts the older ones.
    let ec = rendezvous_engine();
    let mut cfg = EngineConfig::new("testhost");
    cfg.early_context_age = Duration::ZERO;
    let ed = Engine::start(cfg).unwrap();
    // ed knows ec through an intercomm on another context.
    let _d = ed.intercomm(99, 0, 1, vec![ec.endpoint()]).unwrap();
    let c1 = ec.intercomm(1, 0, 1, vec![ed.endpoint()]).unwrap();
    let c2 = ec.intercomm(2, 0, 1, vec![ed.endpoint()]).unwrap();
    let r1 = c1.isend(0, 1, &big).unwrap();
    // Both announcements travel on one connection, in order: context 2's
    // arrival finds context 1 older than zero and evicts it, which releases r1.
    let r2 = c2.isend(0, 1, &big).unwrap();
    r1.wait_timeout(T).unwrap();
    drop(r2);
}

/// Issue 23, item 2, the bookkeeping: the sends that wait for their
/// receivers have a bound in number (`max_pending_sends`, here 16) as in
/// bytes, since each costs memory whatever its payload. Past it a
/// nonblocking send — lent, owned or borrowed — fails at once with
/// `TooManyPendingSends` naming the limit and sends nothing; every send that
/// was started arrives intact once the receiver receives; their completion
/// gives the slots back; a blocking send past the bound is not refused (it
/// waits for its match).
#[test]
fn pending_sends_past_their_bound_fail_and_the_rest_arrive() {
    const LIMIT: u64 = 16;
    const LEN: usize = 256 << 10;
    mpi();
    let mut cfg = EngineConfig::new("testhost");
    // Every message of LEN goes by rendezvous, so each one waits as a
    // pending send until the receiver posts its receive.
    cfg.large_eager_limit = cfg.eager_limit;
    cfg.max_pending_sends = LIMIT;
    let ea = Engine::start(cfg).expect("engine starts");
    let eb = engine();
    let a = ea.intercomm(0x9e_d0, 0, 1, vec![eb.endpoint()]).unwrap();
    let b = eb.intercomm(0x9e_d0, 0, 1, vec![ea.endpoint()]).unwrap();
    let sig = u8::type_sig().unwrap();
    let lent: Vec<Vec<u8>> = (0..LIMIT).map(|i| flood_message(i, LEN)).collect();
    let mut reqs = Vec::new();
    for (i, m) in lent.iter().enumerate() {
        // SAFETY: `lent` outlives every request, which all complete below.
        let r = unsafe { a.isend_lent(0, i as i32, &sig, LEN as u64, m.as_ptr(), m.len()) };
        reqs.push(r.unwrap());
    }
    let refused = [
        // SAFETY: refused before anything refers to the memory.
        unsafe { a.isend_lent(0, 99, &sig, LEN as u64, lent[0].as_ptr(), LEN) }.err(),
        a.isend_bytes(0, 99, &sig, LEN as u64, flood_message(99, LEN))
            .err(),
        a.isend_borrowed(0, 99, &sig, LEN as u64, &lent[1]).err(),
        a.issend_bytes(0, 99, &sig, LEN as u64, flood_message(99, LEN))
            .err(),
    ];
    for e in refused {
        match e {
            Some(BridgeError::TooManyPendingSends { limit }) => assert_eq!(limit, LIMIT),
            other => panic!("expected TooManyPendingSends, got {other:?}"),
        }
    }
    let msg = BridgeError::TooManyPendingSends { limit: LIMIT }.to_string();
    assert!(msg.contains("ISTHMUS_MAX_PENDING_SENDS"), "{msg}");
    assert!(
        reqs.iter().all(|r| !r.test()),
        "no send completed before its receive"
    );
    // A blocking send past the bound is not refused; the receiver takes
    // everything, and the refused tag 99 never came.
    let big = flood_message(1000, LEN);
    std::thread::scope(|s| {
        let rx = s.spawn(|| {
            let mut buf = vec![0u8; LEN];
            for i in 0..LIMIT {
                let st = b
                    .recv_timeout(Source::Rank(0), Tag::Value(i as i32), &mut buf, T)
                    .unwrap();
                assert_eq!(st.bytes as usize, LEN);
                assert_eq!(
                    checksum(&buf),
                    checksum(&flood_message(i, LEN)),
                    "message {i}"
                );
            }
            b.recv_timeout(Source::Rank(0), Tag::Value(1000), &mut buf, T)
                .unwrap();
            assert_eq!(checksum(&buf), checksum(&big));
            assert!(b.iprobe(Source::Rank(0), Tag::Value(99)).unwrap().is_none());
        });
        a.send(0, 1000, &big).unwrap();
        rx.join().unwrap();
    });
    for r in wait_all(reqs) {
        r.unwrap();
    }
    drop(lent);
    // The slots came back: as many sends can wait again.
    let again: Vec<_> = (0..LIMIT)
        .map(|i| {
            a.isend_bytes(0, 2000 + i as i32, &sig, LEN as u64, flood_message(i, LEN))
                .unwrap()
        })
        .collect();
    let mut buf = vec![0u8; LEN];
    for i in 0..LIMIT {
        b.recv_timeout(Source::Rank(0), Tag::Value(2000 + i as i32), &mut buf, T)
            .unwrap();
        assert_eq!(checksum(&buf), checksum(&flood_message(i, LEN)));
    }
    for r in wait_all(again) {
        r.unwrap();
    }
}

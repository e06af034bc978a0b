//! Completed sends are delivered, and a sender's memory is bounded, with
//! real processes and sockets: the sender runs in a child process (this
//! test binary re-executed on an `#[ignore]`d entry point) that ends —
//! drops its intercommunicator and its engine and leaves `main` — while
//! the receiver in the test process has not received yet; and whose peak
//! memory (VmHWM) is its own.

#![cfg(test)]

mod common;

use common::mpi;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use isthmus_bridge::*;

const T: Duration = Duration::from_secs(120);
const CONTEXT: u64 = 0xde_11;
const SMALL: usize = 1 << 10;
const LARGE: usize = 200 << 10;
/// Phase A and C of the mixed run: small sends, most of them without credit.
const PHASE_A: u64 = 3000;
const PHASE_C: u64 = 6000;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn status_field(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// Message `i` of `len` bytes: its index, then bytes derived from it.
fn message(i: u64, len: usize) -> Vec<u8> {
    let mut m: Vec<u8> = (0..len)
        .map(|j| (i as usize).wrapping_mul(31).wrapping_add(j) as u8)
        .collect();
    m[..8].copy_from_slice(&i.to_le_bytes());
    m
}

/// The plan of the mixed run: (length, synchronous) of message `i`.
/// A: small sends (the first within the receiver's credit, the rest
/// buffered and announced); B: rendezvous-size sends and synchronous ones
/// (which wait for the receiver); C: more small sends than the announcements
/// a sender may have outstanding (so some are held back at its end).
fn mixed_plan() -> Vec<(usize, bool)> {
    let mut plan = vec![(SMALL, false); PHASE_A as usize];
    plan.extend([
        (LARGE, false),
        (LARGE, false),
        (SMALL, true),
        (LARGE, false),
        (LARGE, true),
    ]);
    plan.extend(vec![(SMALL, false); PHASE_C as usize]);
    plan
}

fn line_from(out: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "sender ended before saying {prefix}"
        );
        if let Some(v) = line.trim().strip_prefix(prefix) {
            return v.trim().to_owned();
        }
    }
}

/// The sender: an engine of its own on host `DELIVERY_HOST` (another name
/// than the receiver's: TCP; the same: the Unix socket), sends the plan of
/// `DELIVERY_MODE`, says SENT, drops everything and ends.
#[test]
#[ignore = "child process of the delivery tests"]
fn sender_child() {
    let Ok(peer) = std::env::var("DELIVERY_PEER") else {
        return;
    };
    let mode = std::env::var("DELIVERY_MODE").unwrap();
    let host = std::env::var("DELIVERY_HOST").unwrap();
    mpi();
    let start_kib = status_field("VmHWM:");
    let (e, c) = child_engine(&host, &peer);
    let sig = u8::type_sig().unwrap();
    let started = Instant::now();
    match mode.as_str() {
        "mixed" => {
            for (i, (len, sync)) in mixed_plan().into_iter().enumerate() {
                let m = message(i as u64, len);
                if sync {
                    c.ssend_bytes(0, 7, &sig, len as u64, &m).unwrap();
                } else {
                    c.send_bytes(0, 7, &sig, len as u64, &m).unwrap();
                }
            }
        }
        "small" => {
            for i in 0..2000 {
                let m = message(i, SMALL);
                c.send_bytes(0, 7, &sig, SMALL as u64, &m).unwrap();
            }
        }
        "flood" => {
            let count: u64 = std::env::var("DELIVERY_COUNT").unwrap().parse().unwrap();
            let before_kib = status_field("VmHWM:");
            println!("BEFORE_KIB {before_kib}");
            for i in 0..count {
                let m = message(i, SMALL);
                c.send_bytes(0, 7, &sig, SMALL as u64, &m).unwrap();
            }
        }
        m => panic!("unknown mode {m}"),
    }
    println!("SENT {:.3}", started.elapsed().as_secs_f64());
    std::io::stdout().flush().unwrap();
    let ending = Instant::now();
    drop(c);
    drop(e);
    println!(
        "ENDED {:.3} START_KIB {start_kib} PEAK_KIB {}",
        ending.elapsed().as_secs_f64(),
        status_field("VmHWM:")
    );
}

/// A child's engine on `host`, its endpoint said on standard output, and
/// its intercomm to the test process (whose endpoint is `peer`, in hex).
fn child_engine(host: &str, peer: &str) -> (Arc<Engine>, InterComm) {
    let e = Engine::start(EngineConfig::new(host)).unwrap();
    println!("ENDPOINT {}", hex(&e.endpoint().encode()));
    std::io::stdout().flush().unwrap();
    let c = e
        .intercomm(CONTEXT, 0, 1, vec![Endpoint::decode(&unhex(peer)).unwrap()])
        .unwrap();
    (e, c)
}

/// The receiver (this process) and its sender child.
struct Pair {
    _engine: Arc<Engine>,
    comm: InterComm,
    child: Child,
    out: BufReader<ChildStdout>,
}

fn start_pair(mode: &str, same_host: bool, receiver: EngineConfig, env: &[(&str, &str)]) -> Pair {
    mpi();
    let e = Engine::start(receiver).unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "sender_child", "--ignored", "--nocapture"])
        .env("DELIVERY_PEER", hex(&e.endpoint().encode()))
        .env("DELIVERY_MODE", mode)
        .env(
            "DELIVERY_HOST",
            if same_host { "testhost" } else { "otherhost" },
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let ep = Endpoint::decode(&unhex(&line_from(&mut out, "ENDPOINT "))).unwrap();
    let comm = e.intercomm(CONTEXT, 0, 1, vec![ep]).unwrap();
    Pair {
        _engine: e,
        comm,
        child,
        out,
    }
}

/// Receives the next message, which must be message `i` of `len` bytes, intact.
fn expect(c: &InterComm, buf: &mut [u8], i: u64, len: usize) {
    let st = c
        .recv_timeout(Source::Rank(0), Tag::Any, buf, T)
        .unwrap_or_else(|e| panic!("message {i}: {e}"));
    assert_eq!(st.bytes as usize, len, "length of message {i}");
    let got = u64::from_le_bytes(buf[..8].try_into().unwrap());
    assert_eq!(got, i, "message {i} arrived out of order (got {got})");
    assert!(buf[..len] == message(i, len)[..], "message {i} corrupted");
}

/// The sender's last line and its standard error, once it ended successfully.
fn finish(mut p: Pair) -> (String, String) {
    let ended = line_from(&mut p.out, "ENDED ");
    let mut err = String::new();
    p.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(p.child.wait().unwrap().success(), "sender failed: {err}");
    (ended, err)
}

fn field(line: &str, name: &str) -> u64 {
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == name {
            return it.next().unwrap().parse().unwrap();
        }
    }
    panic!("no {name} in {line:?}")
}

/// Item 1 of issue 23: a sender completes small sends within credit and
/// without (buffered, announced, some held back over the announcement
/// limit), rendezvous-size sends and synchronous ones, then drops its
/// intercommunicator and engine and ends while the receiver is still
/// asleep. Every message arrives, intact and in order, and the sender
/// reports nothing undelivered.
fn completed_sends_are_delivered(same_host: bool) {
    let mut cfg = EngineConfig::new("testhost");
    // A small window: most small sends find no credit.
    cfg.eager_window = 256 << 10;
    // Messages above 64 KiB go by rendezvous, whatever the credit.
    let sender = [("ISTHMUS_LARGE_EAGER_LIMIT", "64k")];
    let mut p = start_pair("mixed", same_host, cfg, &sender);
    let plan = mixed_plan();
    let mut buf = vec![0u8; LARGE];
    // Asleep while the sender's first small sends complete; it then waits
    // in its rendezvous-size and synchronous sends for these receives.
    std::thread::sleep(Duration::from_secs(2));
    let ab = (PHASE_A + 5) as usize;
    for (i, (len, _)) in plan.iter().enumerate().take(ab) {
        expect(&p.comm, &mut buf, i as u64, *len);
    }
    // Every send completed; the sender now ends while nothing is received.
    let sent = line_from(&mut p.out, "SENT ");
    std::thread::sleep(Duration::from_secs(1));
    for (i, (len, _)) in plan.iter().enumerate().skip(ab) {
        expect(&p.comm, &mut buf, i as u64, *len);
    }
    let (ended, err) = finish(p);
    println!("sender sent in {sent} s; its end took {ended}");
    assert!(!err.contains("undelivered"), "sender reported: {err}");
    // The sender waited in its end for the receives (after the 1 s sleep).
    let end_s: f64 = ended.split_whitespace().next().unwrap().parse().unwrap();
    assert!(end_s >= 0.5, "the sender's end did not wait ({end_s} s)");
}

#[test]
fn completed_sends_are_delivered_over_unix() {
    completed_sends_are_delivered(true)
}

#[test]
fn completed_sends_are_delivered_over_tcp() {
    completed_sends_are_delivered(false)
}

/// A flood of `mib` MiB of 1 KiB blocking sends to a receiver asleep for
/// `sleep`: every message arrives intact and in order. Returns the
/// sender's peak memory growth during the sends and its end, in KiB.
fn flood(mib: u64, sleep: Duration, env: &[(&str, &str)]) -> u64 {
    let count = mib << 10;
    let count_s = count.to_string();
    let mut env = env.to_vec();
    env.push(("DELIVERY_COUNT", &count_s));
    let mut p = start_pair("flood", true, EngineConfig::new("testhost"), &env);
    let before: u64 = line_from(&mut p.out, "BEFORE_KIB ").parse().unwrap();
    std::thread::sleep(sleep);
    let mut buf = vec![0u8; SMALL];
    let started = Instant::now();
    for i in 0..count {
        expect(&p.comm, &mut buf, i, SMALL);
    }
    let received_s = started.elapsed().as_secs_f64();
    let (ended, err) = finish(p);
    assert!(!err.contains("undelivered"), "sender reported: {err}");
    let peak = field(&ended, "PEAK_KIB");
    println!(
        "flood of {mib} MiB: received in {received_s:.1} s; sender peak {} MiB, {} MiB above its level before the sends",
        peak >> 10,
        peak.saturating_sub(before) >> 10
    );
    peak.saturating_sub(before)
}

/// Item 2 of issue 23: 64 MiB of 1 KiB sends to a receiver asleep for 2 s,
/// with the sender's bound at 8 MiB: its memory grows by less than the
/// bound plus 16 MiB (without the bound it held every message: ~96 MiB),
/// and every message arrives intact.
#[test]
fn sender_memory_is_bounded() {
    let grew_kib = flood(
        64,
        Duration::from_secs(2),
        &[("ISTHMUS_SEND_BUFFER_LIMIT", "8m")],
    );
    assert!(
        grew_kib < (8 + 16) << 10,
        "sender grew by {} MiB with an 8 MiB bound",
        grew_kib >> 10
    );
}

/// Measurement: the flood, 512 MiB of 1 KiB sends with the default
/// bound, to a receiver asleep for `DELIVERY_SLEEP` seconds (default 30).
/// `DELIVERY_MIB` overrides the amount.
#[test]
#[ignore = "measurement (512 MiB); run explicitly"]
fn measure_512mib_flood() {
    let mib = std::env::var("DELIVERY_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512);
    let sleep = std::env::var("DELIVERY_SLEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let grew = flood(mib, Duration::from_secs(sleep), &[]);
    println!(
        "MEASURE sender grew by {} MiB for a {mib} MiB flood (bound {} MiB)",
        grew >> 10,
        DEFAULT_SEND_BUFFER_LIMIT >> 20
    );
}

/// The sender's end is bounded by `ISTHMUS_FINALIZE_TIMEOUT` and reports
/// per peer what it could not deliver: 2000 small sends (most without
/// credit) to a receiver that never receives; the sender ends within about
/// its 1 s deadline and says, on standard error, how many announced
/// messages the peer never matched.
#[test]
fn a_receiver_that_never_receives_is_reported_at_the_deadline() {
    let mut cfg = EngineConfig::new("testhost");
    cfg.eager_window = 256 << 10;
    let p = start_pair("small", true, cfg, &[("ISTHMUS_FINALIZE_TIMEOUT", "1")]);
    let (ended, err) = finish(p);
    let end_s: f64 = ended.split_whitespace().next().unwrap().parse().unwrap();
    assert!(
        (0.9..10.0).contains(&end_s),
        "the sender's end took {end_s} s with a 1 s deadline"
    );
    assert!(
        err.contains("undelivered to process") && err.contains("ISTHMUS_FINALIZE_TIMEOUT"),
        "sender reported: {err}"
    );
}

/// A receiver that dies is the one case where completed sends are lost,
/// and the sender is told: the receiver's engine aborts (no BYE, sockets
/// closed) while the sender ends with announced messages outstanding; the
/// sender ends at once and reports them with the failure.
#[test]
fn a_receiver_that_dies_is_reported_by_the_sender() {
    let mut cfg = EngineConfig::new("testhost");
    cfg.eager_window = 256 << 10;
    let mut p = start_pair("small", true, cfg, &[]);
    line_from(&mut p.out, "SENT ");
    std::thread::sleep(Duration::from_millis(500));
    p._engine.abort_for_test();
    let (ended, err) = finish(p);
    let end_s: f64 = ended.split_whitespace().next().unwrap().parse().unwrap();
    assert!(end_s < 10.0, "the sender's end took {end_s} s");
    assert!(
        err.contains("undelivered to process") && err.contains("without BYE"),
        "sender reported: {err}"
    );
}

/// Messages of the answering-receiver test: within the receiver's window
/// (all eager), so the sender ends as soon as its last one is in its socket.
const DUPLEX_LEN: usize = 32 << 10;
const DUPLEX_COUNT: u64 = 96;

/// The receiver of the answering-receiver test: answers the sender's first
/// message (on the sender's own TCP connection if it offered that), then
/// receives the others, answering each with a small message the sender
/// never receives (it has ended), and says RECEIVED with their number.
#[test]
#[ignore = "child process of the delivery tests"]
fn answering_receiver_child() {
    let Ok(peer) = std::env::var("DELIVERY_SENDER") else {
        return;
    };
    mpi();
    let (_e, c) = child_engine("otherhost", &peer);
    let mut buf = vec![0u8; DUPLEX_LEN];
    expect(&c, &mut buf, 0, DUPLEX_LEN);
    c.send(0, 8, &[0u64]).unwrap();
    for i in 1..DUPLEX_COUNT {
        expect(&c, &mut buf, i, DUPLEX_LEN);
        // Fails once the sender is gone; the answers are not the point.
        let _ = c.send(0, 9, &[i]);
    }
    println!("RECEIVED {DUPLEX_COUNT}");
    std::io::stdout().flush().unwrap();
}

/// A sender ends while its receiver answers (messages the sender never
/// reads): every completed send arrives, intact and in order, and the
/// receiver ends successfully. Two ways to lose the tail, both held:
/// - On a duplex TCP connection (`transport::duplex`) the receiver writes
///   on the sender's connection; closing a TCP socket with unread bytes,
///   or receiving bytes after it was closed, resets the connection and
///   drops what it had not sent. The sender's goodbye shuts only its
///   writing half and waits until the receiver acknowledged everything
///   (with a plain close, "failed to fill whole buffer" at message 4).
/// - Either way (also with one connection per direction, `tcp_duplex`
///   off), the receiver's answers fail to be written once the sender is
///   gone; that must fail only its sends, not the receives of what the
///   sender completed before (it did, one run in two, at message 3).
#[test]
fn a_sender_that_ends_while_its_receiver_answers_delivers_everything() {
    for (round, duplex) in [true, true, false, false].into_iter().enumerate() {
        mpi();
        let mut cfg = EngineConfig::new("testhost");
        cfg.tcp_duplex = duplex;
        let e = Engine::start(cfg).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "answering_receiver_child",
                "--ignored",
                "--nocapture",
            ])
            .env("DELIVERY_SENDER", hex(&e.endpoint().encode()))
            .env(TCP_DUPLEX_ENV, if duplex { "on" } else { "off" })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let ep = Endpoint::decode(&unhex(&line_from(&mut out, "ENDPOINT "))).unwrap();
        let receiver = ep.process;
        let c = e.intercomm(CONTEXT, 0, 1, vec![ep]).unwrap();
        let sig = u8::type_sig().unwrap();
        let first = message(0, DUPLEX_LEN);
        c.send_bytes(0, 7, &sig, DUPLEX_LEN as u64, &first).unwrap();
        let mut answer = [0u64];
        c.recv_timeout(Source::Rank(0), Tag::Value(8), &mut answer, T)
            .unwrap();
        let route = e.route_to(receiver).unwrap();
        assert_eq!(route.transport, Transport::Tcp);
        // The receiver stops for a while: the sender's last messages wait
        // in its socket, the receiver's answers come after the sender ended.
        let pid = child.id() as libc::pid_t;
        // SAFETY: signals to our own child process, which has not been reaped.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        let resume = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: as above; the child is reaped only after this thread is joined.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        });
        for i in 1..DUPLEX_COUNT {
            let m = message(i, DUPLEX_LEN);
            c.send_bytes(0, 7, &sig, DUPLEX_LEN as u64, &m).unwrap();
        }
        drop(c);
        drop(e);
        resume.join().unwrap();
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        let received = rest
            .lines()
            .find_map(|l| l.trim().strip_prefix("RECEIVED "))
            .map(str::to_owned);
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(
            status.success(),
            "round {round} (duplex {duplex}): receiver failed: {err}"
        );
        assert_eq!(
            received,
            Some(DUPLEX_COUNT.to_string()),
            "round {round} (duplex {duplex}): {err}"
        );
    }
}

//! The shared-memory transport with real processes: this test binary is
//! re-executed as the peer (an `#[ignore]`d entry point) on the same host,
//! so the data connections go through memfd rings handed over the Unix
//! socket (`ISTHMUS_TRANSPORT`, default `shm`). Both directions, every
//! size class, many senders at once, a peer killed in the middle of a
//! message, and a peer that scribbles over its ring; every way of waiting
//! (`ISTHMUS_WAIT`), and a bad value of it. Large messages single-copy
//! (`ISTHMUS_SHM_CMA`): the same bytes with it on and off, a peer killed
//! while one is read from its memory, a peer that advertises memory it
//! does not have, and a sender that exited before its message was read
//! (its pid taken by another process when we may: an error, never that
//! process's bytes). The Rust API's large sends go by single copy too
//! (`send_scope`, counted by `single_copy_stats`).

#![cfg(test)]

mod common;

use common::mpi;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use isthmus_bridge::wait::{self, WaitMode};
use isthmus_bridge::*;

const T: Duration = Duration::from_secs(60);
const CONTEXT: u64 = 0x5e_4d;
/// Size classes: empty, tiny, small, eager at the limit (64 KiB), large
/// eager (within the window), rendezvous (4 MiB + odd, several rings' worth).
const SIZES: [usize; 7] = [0, 8, 1000, 65_536 - 1, 65_536, 1 << 20, (4 << 20) + 3];
const STREAM_LEN: usize = 16 << 20;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// Message `i` of `len` bytes: its index (when it fits), then bytes derived from it.
fn message(i: u64, len: usize) -> Vec<u8> {
    let mut m: Vec<u8> = (0..len)
        .map(|j| (i as usize).wrapping_mul(131).wrapping_add(j / 7) as u8)
        .collect();
    if len >= 8 {
        m[..8].copy_from_slice(&i.to_le_bytes());
    }
    m
}

fn line_from(out: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    lines_until(out, prefix).0
}

/// The value of the first line starting with `prefix`, and the lines before it.
fn lines_until(out: &mut BufReader<ChildStdout>, prefix: &str) -> (String, Vec<String>) {
    let mut before = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "peer ended before saying {prefix}"
        );
        if let Some(v) = line.trim().strip_prefix(prefix) {
            return (v.trim().to_owned(), before);
        }
        before.push(line.clone());
    }
}

fn say(what: impl std::fmt::Display) {
    println!("{what}");
    std::io::stdout().flush().unwrap();
}

/// The peer: rank `SHM_RANK` of `SHM_SIZE` on host "testhost", talking to
/// the test process (rank 0 of the other side), doing `SHM_MODE`.
#[test]
#[ignore = "child process of the shared-memory tests"]
fn shm_child() {
    let Ok(peer) = std::env::var("SHM_PEER") else {
        return;
    };
    let mode = std::env::var("SHM_MODE").unwrap();
    if mode == "impostor" {
        impostor();
        return;
    }
    let rank: u32 = std::env::var("SHM_RANK").unwrap().parse().unwrap();
    let size: u32 = std::env::var("SHM_SIZE").unwrap().parse().unwrap();
    if std::env::var_os("SHM_LOG").is_some() {
        // The log on stdout, between our own lines, for the test to read.
        tracing_subscriber::fmt()
            .with_writer(std::io::stdout)
            .with_ansi(false)
            .init();
    }
    mpi();
    let e = Engine::start(EngineConfig::new("testhost")).unwrap();
    say(format_args!("ENDPOINT {}", hex(&e.endpoint().encode())));
    // The way this process waits (`ISTHMUS_WAIT`, read here first).
    say(format_args!("WAIT {:?}", wait::mode()));
    let parent = Endpoint::decode(&unhex(&peer)).unwrap();
    let parent_id = parent.process;
    let c = e.intercomm(CONTEXT, rank, size, vec![parent]).unwrap();
    let sig = u8::type_sig().unwrap();
    match mode.as_str() {
        // Every size class back and forth: receive one, send it back.
        "echo" => {
            let mut buf = vec![0u8; *SIZES.iter().max().unwrap()];
            for (i, len) in SIZES.iter().enumerate() {
                let st = c
                    .recv_bytes_into_timeout(Source::Rank(0), Tag::Any, None, &mut buf, T)
                    .unwrap();
                assert_eq!(st.bytes as usize, *len);
                assert!(
                    buf[..*len] == message(i as u64, *len)[..],
                    "message {i} corrupted"
                );
                if i == 1 {
                    // The parent read our first message (and our SHM frame,
                    // which says whether it may read our memory) before it
                    // sent this one.
                    let r = e.route_to(parent_id).unwrap();
                    say(format_args!("ROUTE {} {}", r.shared_memory, r.single_copy));
                }
                c.send_bytes(0, st.tag, &sig, *len as u64, &buf[..*len])
                    .unwrap();
            }
        }
        // Many messages of mixed sizes, in order, to rank 0.
        "many" => {
            let n: u64 = std::env::var("SHM_COUNT").unwrap().parse().unwrap();
            for i in 0..n {
                let len = [8, 100, 4000, 65_536, 300_000][(i % 5) as usize];
                c.send_bytes(0, 7, &sig, len as u64, &message(i, len))
                    .unwrap();
            }
        }
        // Large messages without end, until killed.
        "stream" => {
            let m = message(1, STREAM_LEN);
            loop {
                c.send_bytes(0, 7, &sig, STREAM_LEN as u64, &m).unwrap();
            }
        }
        // A single-copy message whose memory is unmapped before the
        // receiver reads it (a sender advertising memory it does not
        // have), then an ordinary large message: we live on.
        "unmapped" => {
            let len = 1 << 20;
            c.send_bytes(0, 1, &sig, 8, &message(0, 8)).unwrap();
            let mut one = [0u8; 8];
            c.recv_bytes_into_timeout(Source::Rank(0), Tag::Any, None, &mut one, T)
                .unwrap();
            if !e.route_to(parent_id).unwrap().single_copy {
                say("NO-SINGLE-COPY");
                return;
            }
            // SAFETY: a fresh private anonymous mapping of `len` bytes.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            // SAFETY: the mapping above, `len` bytes, ours alone.
            unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) }
                .copy_from_slice(&message(1, len));
            // SAFETY: the memory is valid now; breaking the promise to keep
            // it until the request completes is this test's point (only
            // the receiver's read sees it, and fails).
            let req = unsafe { c.isend_lent(0, 2, &sig, len as u64, p.cast(), len) }.unwrap();
            // SAFETY: unmapping our own mapping; nothing of ours refers to it.
            assert_eq!(unsafe { libc::munmap(p, len) }, 0);
            say("UNMAPPED");
            req.wait_timeout(T).unwrap();
            c.send_bytes(0, 3, &sig, len as u64, &message(3, len))
                .unwrap();
        }
        // A single-copy announcement, then exit while a child of ours keeps
        // our descriptors (the connection, the ring) open, so that the
        // receiver sees no end of the connection: only the pid is gone.
        "exits" => {
            let len = EXITED_LEN;
            c.send_bytes(0, 1, &sig, 8, &message(0, 8)).unwrap();
            let mut one = [0u8; 8];
            c.recv_bytes_into_timeout(Source::Rank(0), Tag::Any, None, &mut one, T)
                .unwrap();
            if !e.route_to(parent_id).unwrap().single_copy {
                say("NO-SINGLE-COPY");
                return;
            }
            // SAFETY: a fresh private anonymous mapping of `len` bytes at an
            // address nothing else uses (checked below).
            let p = unsafe {
                libc::mmap(
                    EXITED_ADDR as *mut libc::c_void,
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                    -1,
                    0,
                )
            };
            assert_eq!(p as usize, EXITED_ADDR);
            // SAFETY: the mapping above, `len` bytes, ours alone.
            unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) }
                .copy_from_slice(&message(2, len));
            // SAFETY: the mapping stays until this process ends.
            let req = unsafe { c.isend_lent(0, 2, &sig, len as u64, p.cast(), len) }.unwrap();
            // It never completes: we exit before the receiver reads it.
            std::mem::forget(req);
            // Written after the announcement: once it is, so is the announcement.
            c.send_bytes(0, 3, &sig, 8, &message(3, 8)).unwrap();
            // SAFETY: fork; the child only reads its stdin and exits
            // (async-signal-safe calls), keeping our descriptors open.
            let keeper = unsafe { libc::fork() };
            if keeper == 0 {
                let mut b = [0u8; 1];
                loop {
                    // SAFETY: reading into our one-byte buffer.
                    if unsafe { libc::read(0, b.as_mut_ptr().cast(), 1) } <= 0 {
                        // SAFETY: ends the child at once.
                        unsafe { libc::_exit(0) };
                    }
                }
            }
            say(format_args!("EXITING {keeper}"));
            // SAFETY: ends the process at once, without a BYE.
            unsafe { libc::_exit(0) };
        }
        // Large messages through the Rust API: received with the typed
        // blocking receive, sent back with the typed blocking send; then
        // how many went by single copy here.
        "scoped" => {
            let mut buf = vec![0u8; SCOPED_LEN];
            // A first exchange opens both connections (and says whether
            // each side may read the other's memory).
            c.recv_timeout(Source::Rank(0), Tag::Value(50), &mut buf[..8], T)
                .unwrap();
            c.send(0, 50, &buf[..8]).unwrap();
            for i in 0..SCOPED_COUNT {
                let st = c
                    .recv_timeout(Source::Rank(0), Tag::Value(i as i32), &mut buf, T)
                    .unwrap();
                assert_eq!(st.bytes as usize, SCOPED_LEN);
                assert!(buf == message(i, SCOPED_LEN), "message {i} corrupted");
            }
            for i in 0..SCOPED_COUNT {
                c.send(0, 100 + i as i32, &message(i, SCOPED_LEN)).unwrap();
            }
            let s = e.single_copy_stats();
            say(format_args!(
                "STATS {} {} {}",
                s.sent, s.received, s.received_bytes
            ));
        }
        // One message, then (told to) scribble over the ring's head and die.
        "corrupt" => {
            c.send_bytes(0, 7, &sig, 8, &message(0, 8)).unwrap();
            say("SENT");
            let mut go = String::new();
            std::io::stdin().read_line(&mut go).unwrap();
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            let rings: Vec<usize> = maps
                .lines()
                .filter(|l| l.contains("memfd:isthmus-ring"))
                .map(|l| usize::from_str_radix(l.split('-').next().unwrap(), 16).unwrap())
                .collect();
            // Only our connection to the parent has a ring: it sent us nothing.
            assert_eq!(rings.len(), 1, "{maps}");
            // SAFETY: the start of our own live shared mapping of the ring
            // segment: its first word is the producer index.
            unsafe {
                let head = rings[0] as *mut u64;
                head.write_volatile(head.read_volatile().wrapping_add(1 << 40));
            }
            // Die without a word (no BYE): the socket closes.
            // SAFETY: ends the process at once; nothing runs after it.
            unsafe { libc::_exit(0) };
        }
        m => panic!("unknown mode {m}"),
    }
    drop(c);
    drop(e);
    say("DONE");
}

/// Where the "exits" peer's single-copy message is, and an impostor's bytes.
const EXITED_ADDR: usize = 0x3f00_0000_0000;
const EXITED_LEN: usize = 1 << 20;
/// What an impostor's memory holds.
const IMPOSTOR_BYTE: u8 = 0xee;
/// Messages of the Rust API's single-copy test.
const SCOPED_COUNT: u64 = 4;
const SCOPED_LEN: usize = 1 << 20;

/// An impostor: maps `SHM_LEN` bytes of [`IMPOSTOR_BYTE`] at `SHM_ADDR`,
/// says READY and lives until its stdin closes.
fn impostor() {
    let addr: usize = std::env::var("SHM_ADDR").unwrap().parse().unwrap();
    let len: usize = std::env::var("SHM_LEN").unwrap().parse().unwrap();
    // SAFETY: a fresh private anonymous mapping where nothing of ours is (NOREPLACE).
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    assert_eq!(p as usize, addr);
    // SAFETY: the mapping above, `len` bytes, ours alone.
    unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) }.fill(IMPOSTOR_BYTE);
    say("READY");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut rest);
}

/// A process holding another's pid (see [`impostor_at`]).
struct Impostor {
    child: Child,
    /// Kept open until it ends (its harness prints to it).
    out: BufReader<ChildStdout>,
    stdin: ChildStdin,
}

/// A process of ours with pid `pid` (which must be free) holding
/// [`IMPOSTOR_BYTE`]s at `addr`: the next pid is set through
/// `/proc/sys/kernel/ns_last_pid` (root only), retried while other
/// processes of the host take it first. None when we may not set it or
/// the pid stays taken.
fn impostor_at(pid: u32, addr: usize, len: usize) -> Option<Impostor> {
    for _ in 0..50 {
        if std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).is_err() {
            return None;
        }
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "shm_child", "--ignored", "--nocapture"])
            .env("SHM_PEER", "")
            .env("SHM_MODE", "impostor")
            .env("SHM_ADDR", addr.to_string())
            .env("SHM_LEN", len.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        if child.id() != pid {
            child.kill().unwrap();
            child.wait().unwrap();
            continue;
        }
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let stdin = child.stdin.take().unwrap();
        line_from(&mut out, "READY");
        return Some(Impostor { child, out, stdin });
    }
    None
}

struct Peer {
    child: Child,
    out: BufReader<ChildStdout>,
    stdin: ChildStdin,
    ep: Endpoint,
}

fn spawn_peer(me: &Engine, mode: &str, rank: u32, size: u32, env: &[(&str, &str)]) -> Peer {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "shm_child", "--ignored", "--nocapture"])
        .env("SHM_PEER", hex(&me.endpoint().encode()))
        .env("SHM_MODE", mode)
        .env("SHM_RANK", rank.to_string())
        .env("SHM_SIZE", size.to_string())
        // Whatever the test process was started with (`env` may override).
        .env("ISTHMUS_TRANSPORT", "shm")
        .env("ISTHMUS_WAIT", "adaptive")
        .env("ISTHMUS_SHM_CMA", "on")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let stdin = child.stdin.take().unwrap();
    let ep = Endpoint::decode(&unhex(&line_from(&mut out, "ENDPOINT "))).unwrap();
    Peer {
        child,
        out,
        stdin,
        ep,
    }
}

fn finish(mut p: Peer) {
    line_from(&mut p.out, "DONE");
    assert!(p.child.wait().unwrap().success());
}

fn engine() -> Arc<Engine> {
    mpi();
    Engine::start(EngineConfig {
        local_transport: LocalTransport::Shm,
        single_copy: Some(DEFAULT_SINGLE_COPY_THRESHOLD),
        ..EngineConfig::new("testhost")
    })
    .unwrap()
}

/// Every size class, test process → peer and back, through the rings (the
/// routes both ways say shared memory); the same over the socket when
/// either end sets `ISTHMUS_TRANSPORT=socket` (both must allow the ring).
fn echo(env: &[(&str, &str)], ours: LocalTransport, expect_shm: bool) {
    echo_waiting(env, ours, expect_shm, WaitMode::DEFAULT);
}

/// [`echo`], the peer waiting in `peer_waits` (what it says it does).
fn echo_waiting(
    env: &[(&str, &str)],
    ours: LocalTransport,
    expect_shm: bool,
    peer_waits: WaitMode,
) -> Vec<String> {
    echo_with(env, ours, true, expect_shm, peer_waits)
}

/// [`echo_waiting`], our engine allowing single copy or not (`ours_cma`).
fn echo_with(
    env: &[(&str, &str)],
    ours: LocalTransport,
    ours_cma: bool,
    expect_shm: bool,
    peer_waits: WaitMode,
) -> Vec<String> {
    mpi();
    let e = Engine::start(EngineConfig {
        local_transport: ours,
        single_copy: ours_cma.then_some(DEFAULT_SINGLE_COPY_THRESHOLD),
        ..EngineConfig::new("testhost")
    })
    .unwrap();
    let mut p = spawn_peer(&e, "echo", 0, 1, env);
    let (waits, before) = lines_until(&mut p.out, "WAIT ");
    assert_eq!(waits, format!("{peer_waits:?}"));
    let c = e.intercomm(CONTEXT, 0, 1, vec![p.ep.clone()]).unwrap();
    let sig = u8::type_sig().unwrap();
    let mut buf = vec![0u8; *SIZES.iter().max().unwrap()];
    for (i, len) in SIZES.iter().enumerate() {
        let m = message(i as u64, *len);
        c.send_bytes(0, i as i32, &sig, *len as u64, &m).unwrap();
        let st = c
            .recv_bytes_into_timeout(Source::Rank(0), Tag::Value(i as i32), None, &mut buf, T)
            .unwrap();
        assert_eq!(st.bytes as usize, *len, "echo of message {i}");
        assert!(
            buf[..*len] == m[..],
            "echo of message {i} ({len} bytes) corrupted"
        );
        if i == 1 {
            let r = e.route_to(p.ep.process).unwrap();
            assert_eq!(r.shared_memory, expect_shm);
            let single = expect_shm && single_copy_expected(ours_cma, env);
            assert_eq!(r.single_copy, single, "single copy to the peer");
            assert_eq!(
                line_from(&mut p.out, "ROUTE "),
                format!("{expect_shm} {single}"),
                "the peer's route (shared memory, single copy)"
            );
        }
    }
    // Every message from the threshold up went by single copy when it is
    // on (the peer's threshold for its sends, ours for ours), none otherwise.
    let single = expect_shm && single_copy_expected(ours_cma, env);
    let from = |t: usize| SIZES.iter().filter(|&&l| l >= t).count() as u64;
    let peer_threshold = env
        .iter()
        .find(|(k, _)| *k == "ISTHMUS_SHM_CMA_THRESHOLD")
        .map_or(DEFAULT_SINGLE_COPY_THRESHOLD, |(_, v)| {
            v.strip_suffix('M').unwrap().parse::<usize>().unwrap() << 20
        });
    let stats = e.single_copy_stats();
    let (sent, received) = if single {
        (from(DEFAULT_SINGLE_COPY_THRESHOLD), from(peer_threshold))
    } else {
        (0, 0)
    };
    assert_eq!(
        (stats.sent, stats.received),
        (sent, received),
        "messages by single copy (sent, received)"
    );
    drop(c);
    finish(p);
    before
}

/// Whether single copy should be on between this engine and a peer
/// started with `env`: both allow it (`ISTHMUS_SHM_CMA`), and the kernel
/// lets a process read a process of its uid (`ISTHMUS_TEST_NO_CMA=1` says
/// it does not, e.g. under a seccomp policy without `process_vm_readv`).
fn single_copy_expected(ours: bool, env: &[(&str, &str)]) -> bool {
    let peer_off = env
        .iter()
        .any(|(k, v)| *k == "ISTHMUS_SHM_CMA" && *v == "off");
    ours && !peer_off && std::env::var_os("ISTHMUS_TEST_NO_CMA").is_none()
}

/// Each way of waiting carries every size class both ways between two
/// processes, over the rings and over the socket: the peer's mode from
/// `ISTHMUS_WAIT`, ours set alike (`wait::set_mode`).
#[test]
fn every_wait_mode_carries_every_size_class_both_ways() {
    for (name, mode) in [
        ("poll", WaitMode::Poll),
        ("block", WaitMode::Block),
        ("adaptive", WaitMode::Adaptive),
    ] {
        wait::set_mode(mode);
        echo_waiting(
            &[("ISTHMUS_TRANSPORT", "shm"), ("ISTHMUS_WAIT", name)],
            LocalTransport::Shm,
            true,
            mode,
        );
        echo_waiting(
            &[("ISTHMUS_TRANSPORT", "socket"), ("ISTHMUS_WAIT", name)],
            LocalTransport::Shm,
            false,
            mode,
        );
    }
    wait::set_mode(WaitMode::DEFAULT);
}

/// A value of `ISTHMUS_WAIT` that is none of the accepted ones is logged
/// (a warning naming the variable, the value and the accepted values) and
/// the process waits adaptively, carrying messages as ever.
#[test]
fn a_bad_isthmus_wait_is_named_and_adaptive_used() {
    let before = echo_waiting(
        &[("ISTHMUS_WAIT", "spin"), ("SHM_LOG", "1")],
        LocalTransport::Shm,
        true,
        WaitMode::Adaptive,
    );
    assert!(
        before.iter().any(|l| l.contains("WARN")
            && l.contains("ISTHMUS_WAIT=\"spin\" is not one of poll, adaptive, block")),
        "no warning before the peer's WAIT line: {before:?}"
    );
}

#[test]
fn every_size_class_both_directions_over_shared_memory() {
    echo(&[("ISTHMUS_TRANSPORT", "shm")], LocalTransport::Shm, true);
}

#[test]
fn either_side_choosing_the_socket_keeps_the_socket() {
    echo(
        &[("ISTHMUS_TRANSPORT", "socket")],
        LocalTransport::Shm,
        false,
    );
    echo(
        &[("ISTHMUS_TRANSPORT", "shm")],
        LocalTransport::Socket,
        false,
    );
}

/// Single copy on or off, on either side: every size class (those around
/// the 64 KiB eager limit, 1 MiB, 4 MiB + 3) arrives the same both ways, and
/// single copy is on only when both ends allow it.
#[test]
fn single_copy_on_and_off_carry_the_same_bytes() {
    let wait = WaitMode::DEFAULT;
    for (peer, ours) in [("on", true), ("off", true), ("on", false)] {
        echo_with(
            &[("ISTHMUS_SHM_CMA", peer)],
            LocalTransport::Shm,
            ours,
            true,
            wait,
        );
    }
    // A threshold above a message keeps it on the ring (1 MiB eager).
    echo_with(
        &[("ISTHMUS_SHM_CMA_THRESHOLD", "2M")],
        LocalTransport::Shm,
        true,
        true,
        wait,
    );
}

/// A peer that advertises, for a single-copy message, memory it does not
/// have (unmapped after the send): the receive fails with an error that
/// says so, the sender's request completes, and both go on — the next
/// large message arrives intact.
#[test]
fn a_single_copy_address_outside_the_sender_fails_that_receive_only() {
    let e = engine();
    let mut p = spawn_peer(&e, "unmapped", 0, 1, &[]);
    let c = e.intercomm(CONTEXT, 0, 1, vec![p.ep.clone()]).unwrap();
    let sig = u8::type_sig().unwrap();
    let mut buf = vec![0u8; 1 << 20];
    c.recv_bytes_into_timeout(Source::Rank(0), Tag::Value(1), None, &mut buf, T)
        .unwrap();
    c.send_bytes(0, 1, &sig, 8, &message(0, 8)).unwrap();
    let said = loop {
        let mut line = String::new();
        assert!(p.out.read_line(&mut line).unwrap() > 0, "peer ended");
        let l = line.trim();
        if l == "UNMAPPED" || l == "NO-SINGLE-COPY" {
            break l.to_owned();
        }
    };
    if said == "NO-SINGLE-COPY" {
        assert!(
            std::env::var_os("ISTHMUS_TEST_NO_CMA").is_some(),
            "single copy is off between two processes of one uid"
        );
        return;
    }
    assert_eq!(said, "UNMAPPED");
    let err = c
        .recv_bytes_into_timeout(Source::Rank(0), Tag::Value(2), None, &mut buf, T)
        .unwrap_err();
    match &err {
        BridgeError::Protocol(m) => assert!(
            m.contains("could not be read from the address") && m.contains("Bad address"),
            "{m}"
        ),
        other => panic!("expected a protocol error, got {other}"),
    }
    let st = c
        .recv_bytes_into_timeout(Source::Rank(0), Tag::Value(3), None, &mut buf, T)
        .unwrap();
    assert_eq!(st.bytes as usize, buf.len());
    assert!(buf == message(3, buf.len()), "the next message corrupted");
    drop(c);
    finish(p);
}

/// Three peer processes send at once, mixed sizes (eager, rendezvous),
/// two through rings and one over the socket (it sets
/// `ISTHMUS_TRANSPORT=socket`), each waiting its own way (`ISTHMUS_WAIT`);
/// ANY_SOURCE receives see each sender's messages in its order, intact.
#[test]
fn ordering_with_many_senders_over_rings_and_a_socket_at_once() {
    let e = engine();
    let n: u64 = 1500;
    let count = n.to_string();
    let peers: Vec<Peer> = (0..3)
        .map(|r| {
            let mode = if r == 2 { "socket" } else { "shm" };
            let waits = ["poll", "block", "adaptive"][r as usize];
            let env = [
                ("SHM_COUNT", count.as_str()),
                ("ISTHMUS_TRANSPORT", mode),
                ("ISTHMUS_WAIT", waits),
            ];
            spawn_peer(&e, "many", r, 3, &env)
        })
        .collect();
    let eps = peers.iter().map(|p| p.ep.clone()).collect();
    let c = e.intercomm(CONTEXT, 0, 1, eps).unwrap();
    let mut next = [0u64; 3];
    let mut buf = vec![0u8; 300_000];
    for _ in 0..3 * n {
        let st = c
            .recv_bytes_into_timeout(Source::Any, Tag::Value(7), None, &mut buf, T)
            .unwrap();
        let s = st.source as usize;
        let i = u64::from_le_bytes(buf[..8].try_into().unwrap());
        assert_eq!(
            i, next[s],
            "rank {s}: message {i} overtook message {}",
            next[s]
        );
        let len = st.bytes as usize;
        assert!(
            buf[..len] == message(i, len)[..],
            "rank {s}: message {i} corrupted"
        );
        next[s] += 1;
    }
    assert_eq!(next, [n; 3]);
    // Our credit returns went out on the path each peer allows.
    let shm: Vec<bool> = peers
        .iter()
        .map(|p| e.route_to(p.ep.process).unwrap().shared_memory)
        .collect();
    assert_eq!(shm, [true, true, false]);
    drop(c);
    for p in peers {
        finish(p);
    }
}

/// A peer streaming 16 MiB messages is killed (SIGKILL) while it writes
/// one into the ring, or (single copy) while we read one from its memory:
/// what arrived whole is intact, then receives fail with PeerFailed
/// within the deadline — no hang, no torn message.
#[test]
fn a_peer_killed_in_the_middle_of_a_message_fails_the_receive() {
    killed_in_the_middle("off");
    killed_in_the_middle("on");
}

fn killed_in_the_middle(single_copy: &str) {
    let e = engine();
    let mut p = spawn_peer(&e, "stream", 0, 1, &[("ISTHMUS_SHM_CMA", single_copy)]);
    let c = e.intercomm(CONTEXT, 0, 1, vec![p.ep.clone()]).unwrap();
    let mut buf = vec![0u8; STREAM_LEN];
    let whole = message(1, STREAM_LEN);
    for _ in 0..3 {
        let st = c
            .recv_bytes_into_timeout(Source::Rank(0), Tag::Any, None, &mut buf, T)
            .unwrap();
        assert_eq!(st.bytes as usize, STREAM_LEN);
        assert!(buf == whole);
    }
    p.child.kill().unwrap();
    let started = Instant::now();
    let err = loop {
        match c.recv_bytes_into_timeout(Source::Rank(0), Tag::Any, None, &mut buf, T) {
            Ok(st) => {
                assert_eq!(st.bytes as usize, STREAM_LEN);
                assert!(buf == whole, "a message completed torn");
            }
            Err(e) => break e,
        }
    };
    assert!(matches!(err, BridgeError::PeerFailed { .. }), "{err}");
    assert!(started.elapsed() < T, "the failure took the whole deadline");
    let _ = p.child.wait();
    drop(p.stdin);
}

/// A sender whose single-copy message waits unmatched exits, its
/// connection kept open by a child (so nothing tells the receiver it
/// died), and — when we may set the next pid — another process of ours
/// gets its pid with other bytes at the message's address: the receive
/// that matches the message fails with PeerFailed, and the buffer holds
/// nothing of that process (the pidfd taken at the handshake says the
/// sender exited; reading by pid alone delivered the impostor's bytes).
#[test]
fn a_single_copy_receive_whose_sender_exited_is_an_error_never_data() {
    let e = engine();
    let mut p = spawn_peer(&e, "exits", 0, 1, &[]);
    let c = e.intercomm(CONTEXT, 0, 1, vec![p.ep.clone()]).unwrap();
    let sig = u8::type_sig().unwrap();
    let mut buf = vec![0u8; EXITED_LEN];
    c.recv_bytes_into_timeout(Source::Rank(0), Tag::Value(1), None, &mut buf, T)
        .unwrap();
    c.send_bytes(0, 1, &sig, 8, &message(0, 8)).unwrap();
    let said = loop {
        let mut line = String::new();
        assert!(p.out.read_line(&mut line).unwrap() > 0, "peer ended");
        let l = line.trim();
        if l.starts_with("EXITING ") || l == "NO-SINGLE-COPY" {
            break l.to_owned();
        }
    };
    if said == "NO-SINGLE-COPY" {
        assert!(
            std::env::var_os("ISTHMUS_TEST_NO_CMA").is_some(),
            "single copy is off between two processes of one uid"
        );
        return;
    }
    let pid = p.child.id();
    assert!(p.child.wait().unwrap().success());
    // The message written after the announcement: the announcement is here.
    let st = c
        .recv_bytes_into_timeout(Source::Rank(0), Tag::Value(3), None, &mut buf, T)
        .unwrap();
    assert_eq!(st.bytes, 8);
    let impostor = impostor_at(pid, EXITED_ADDR, EXITED_LEN);
    eprintln!(
        "the sender's pid {pid} {}",
        if impostor.is_some() {
            "now belongs to an impostor with other bytes at the message's address"
        } else {
            "could not be given to another process (not root?): it stays free"
        }
    );
    buf.fill(1);
    let r = c.recv_bytes_into_timeout(Source::Rank(0), Tag::Value(2), None, &mut buf, T);
    let stolen = buf
        .windows(64)
        .any(|w| w.iter().all(|&b| b == IMPOSTOR_BYTE));
    match r {
        Err(BridgeError::PeerFailed { reason, .. }) => {
            if impostor.is_some() {
                assert!(reason.contains("exited"), "{reason}");
            }
        }
        Err(other) => panic!("expected PeerFailed, got {other}"),
        Ok(st) => panic!(
            "a {}-byte message from an exited sender was delivered{}",
            st.bytes,
            if stolen {
                ", holding the impostor's bytes"
            } else {
                ""
            }
        ),
    }
    assert!(!stolen, "the impostor's bytes are in the receive buffer");
    if let Some(mut i) = impostor {
        drop(i.stdin);
        assert!(i.child.wait().unwrap().success());
        drop(i.out);
    }
    // Our end of the pipe closes: the keeper of the sender's descriptors exits.
    drop(p.stdin);
    drop(c);
}

/// The Rust API's large messages between two processes of one host go by
/// single copy, both ways, intact: nonblocking sends that lend their
/// buffer for a scope (`send_scope`, `isend_scoped`: a window of them, as
/// a bandwidth benchmark posts) and typed blocking sends, received by
/// typed blocking receives; the engines' counters say each went so.
#[test]
fn the_rust_api_sends_large_messages_by_single_copy() {
    let e = engine();
    let mut p = spawn_peer(&e, "scoped", 0, 1, &[]);
    let c = e.intercomm(CONTEXT, 0, 1, vec![p.ep.clone()]).unwrap();
    let mut ping = [7u8; 8];
    c.send(0, 50, &ping).unwrap();
    c.recv_timeout(Source::Rank(0), Tag::Value(50), &mut ping, T)
        .unwrap();
    let before = e.single_copy_stats();
    let msgs: Vec<Vec<u8>> = (0..SCOPED_COUNT).map(|i| message(i, SCOPED_LEN)).collect();
    send_scope(|s| {
        let reqs = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| c.isend_scoped(s, 0, i as i32, m))
            .collect::<Result<Vec<_>>>()
            .unwrap();
        for r in wait_all(reqs) {
            r.unwrap();
        }
    });
    let mut buf = vec![0u8; SCOPED_LEN];
    for i in 0..SCOPED_COUNT {
        let st = c
            .recv_timeout(Source::Rank(0), Tag::Value(100 + i as i32), &mut buf, T)
            .unwrap();
        assert_eq!(st.bytes as usize, SCOPED_LEN);
        assert!(buf == msgs[i as usize], "message {i} back corrupted");
    }
    let after = e.single_copy_stats();
    let peer = line_from(&mut p.out, "STATS ");
    let (n, bytes) = if single_copy_expected(true, &[]) {
        (SCOPED_COUNT, SCOPED_COUNT * SCOPED_LEN as u64)
    } else {
        (0, 0)
    };
    assert_eq!(
        after.sent - before.sent,
        n,
        "our sends read from our memory"
    );
    assert_eq!(after.received - before.received, n, "messages we read");
    assert_eq!(after.received_bytes - before.received_bytes, bytes);
    assert_eq!(peer, format!("{n} {n} {bytes}"), "the peer's counts");
    drop(c);
    finish(p);
}

/// A peer that scribbles over its ring's producer index (as a broken or
/// hostile process could) and dies: the receiver reports the corrupted
/// ring as the connection's end, precisely, and reads nothing out of bounds.
#[test]
fn a_corrupted_ring_is_a_protocol_error() {
    let e = engine();
    let mut p = spawn_peer(&e, "corrupt", 0, 1, &[]);
    let c = e.intercomm(CONTEXT, 0, 1, vec![p.ep.clone()]).unwrap();
    let mut buf = vec![0u8; 64];
    let st = c
        .recv_bytes_into_timeout(Source::Rank(0), Tag::Any, None, &mut buf, T)
        .unwrap();
    assert_eq!(st.bytes, 8);
    line_from(&mut p.out, "SENT");
    writeln!(p.stdin, "GO").unwrap();
    p.stdin.flush().unwrap();
    let err = c
        .recv_bytes_into_timeout(Source::Rank(0), Tag::Any, None, &mut buf, T)
        .unwrap_err();
    match &err {
        BridgeError::PeerFailed { reason, .. } => {
            assert!(reason.contains("corrupted shared-memory ring"), "{reason}")
        }
        other => panic!("expected PeerFailed, got {other}"),
    }
    let _ = p.child.wait();
}

//! In-process benchmark: two bridge engines ping-ponging over Unix sockets,
//! next to a raw Unix-socket ping-pong (the floor).
//! Run: `cargo run --release -p isthmus-bridge --example pingpong_bench`

// A benchmark stops at its first failure, with the reason.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use isthmus_bridge::{Engine, EngineConfig, Source, Tag};

fn iters_for(size: usize) -> usize {
    if size <= 4096 {
        20_000
    } else if size <= (1 << 20) {
        1000
    } else {
        200
    }
}

fn raw(size: usize) -> Duration {
    let (mut a, mut b) = UnixStream::pair().expect("socketpair");
    let n = iters_for(size);
    let h = std::thread::spawn(move || {
        let mut buf = vec![0u8; size];
        for _ in 0..n + 10 {
            b.read_exact(&mut buf).expect("read");
            b.write_all(&buf).expect("write");
        }
    });
    let mut buf = vec![1u8; size];
    let mut t0 = Instant::now();
    for i in 0..n + 10 {
        if i == 10 {
            t0 = Instant::now();
        }
        a.write_all(&buf).expect("write");
        a.read_exact(&mut buf).expect("read");
    }
    let el = t0.elapsed();
    h.join().expect("join");
    el / (2 * n as u32)
}

fn bridge(size: usize) -> Duration {
    let cfg = || EngineConfig::new("h");
    let ea = Engine::start(cfg()).expect("engine");
    let eb = Engine::start(cfg()).expect("engine");
    let a = ea
        .intercomm(1, 0, 1, vec![eb.endpoint()])
        .expect("intercomm");
    let b = eb
        .intercomm(1, 0, 1, vec![ea.endpoint()])
        .expect("intercomm");
    let n = iters_for(size);
    let h = std::thread::spawn(move || {
        let mut buf = vec![0u8; size];
        for _ in 0..n + 10 {
            b.recv(Source::Rank(0), Tag::Value(0), &mut buf)
                .expect("recv");
            b.send(0, 0, &buf).expect("send");
        }
    });
    let mut buf = vec![1u8; size];
    let mut t0 = Instant::now();
    for i in 0..n + 10 {
        if i == 10 {
            t0 = Instant::now();
        }
        a.send(0, 0, &buf).expect("send");
        a.recv(Source::Rank(0), Tag::Value(0), &mut buf)
            .expect("recv");
    }
    let el = t0.elapsed();
    h.join().expect("join");
    el / (2 * n as u32)
}

fn main() {
    // The typed layer asks MPI for datatype extents, so MPI must be up (two
    // threads use the bridge, hence MULTIPLE).
    let _universe =
        mpi::initialize_with_threading(mpi::Threading::Multiple).expect("MPI initialises");
    println!(
        "{:>10} {:>14} {:>12} {:>14} {:>12}",
        "size", "raw one-way", "raw GB/s", "bridge one-way", "bridge GB/s"
    );
    for &size in &[8usize, 1024, 65536, 1 << 20, 4 << 20, 16 << 20] {
        let r = raw(size);
        let b = bridge(size);
        let gbs = |d: Duration| size as f64 / d.as_secs_f64() / 1e9;
        println!(
            "{:>10} {:>12.2}us {:>12.2} {:>12.2}us {:>12.2}",
            size,
            r.as_secs_f64() * 1e6,
            gbs(r),
            b.as_secs_f64() * 1e6,
            gbs(b)
        );
    }
}

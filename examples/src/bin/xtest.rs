//! The cross-implementation test program: one scenario per run, executed by
//! two (or three) separately launched jobs, usually one built with Open MPI
//! and one with MPICH. `examples/tests/cross_impl.rs` launches it and checks
//! what it prints; each rank prints `PASS <scenario> <group> rank <r>` when
//! its checks held, and exits non-zero with the reason otherwise.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use clap::Parser;
use isthmus_bridge::{
    send_scope, wait_all, BcastRole, Bridge, BridgeError, InterComm, Source, Tag,
};
use mpi::collective::CommunicatorCollectives;
use mpi::datatype::{MutView, UserDatatype, View};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Equivalence;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    scenario: String,
    #[arg(long)]
    group: String,
    /// Other jobs (one per intercommunicator).
    #[arg(long, num_args = 1..)]
    peer: Vec<String>,
    /// Side A of the scenario (the other side is B).
    #[arg(long)]
    a: bool,
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
}

/// A struct with padding between its fields, as MPI programs send them.
#[derive(Equivalence, Clone, Copy, Debug, PartialEq, Default)]
struct Particle {
    kind: u8,
    pos: [f64; 3],
    charge: i32,
}

fn main() {
    if let Err(e) = run() {
        // Exit without finalising: MPI_Finalize would wait for ranks that
        // never get there, and the launcher tears the job down on this exit.
        eprintln!("FAIL: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let universe = isthmus_examples::init_mpi()?;
    let result = scenario(&args, &universe);
    if result.is_err() {
        // Keep MPI from finalising (see main).
        std::mem::forget(universe);
    }
    result
}

fn scenario(args: &Args, universe: &mpi::environment::Universe) -> anyhow::Result<()> {
    let world = universe.world();
    let rank = world.rank() as u32;
    let bridge = Bridge::connect().context("connecting to the vmd")?;
    let mut handle = bridge.register(&args.group, &world).context("register")?;
    let timeout = Duration::from_secs(args.timeout_secs);
    if args.scenario == "cycles" {
        // Leave and register again under the same name, as fast as the
        // ranks go: each register must find the name free on every rank.
        for cycle in 1..=CYCLES {
            bridge
                .leave(handle)
                .with_context(|| format!("leave, cycle {cycle}"))?;
            handle = bridge
                .register(&args.group, &world)
                .with_context(|| format!("register, cycle {cycle}"))?;
        }
        return pass(args, rank, bridge, handle);
    }
    let peer = args.peer.first().context("--peer missing")?.clone();

    if args.scenario == "deadline" {
        let t = Instant::now();
        match bridge.intercomm_create_timeout(&handle, &peer, Duration::from_secs(2)) {
            Err(BridgeError::RemoteNotReady { group, .. }) => {
                ensure!(group == peer, "error names {group:?}");
                ensure!(
                    t.elapsed() >= Duration::from_secs(2),
                    "gave up before the deadline"
                );
            }
            other => bail!("expected RemoteNotReady, got {:?}", other.map(|_| ())),
        }
        return pass(args, rank, bridge, handle);
    }
    if args.scenario == "lost" && args.a {
        // The remote job registered, then lost a member: fail early. The
        // test says when B is gone by creating this file.
        if let Some(go) = std::env::var_os("XTEST_GO_FILE") {
            let waiting = Instant::now();
            while !std::path::Path::new(&go).exists() {
                ensure!(waiting.elapsed() < timeout, "never told to go on");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let t = Instant::now();
        match bridge.intercomm_create_timeout(&handle, &peer, Duration::from_secs(60)) {
            Err(BridgeError::RemoteLost { .. }) => {
                ensure!(
                    t.elapsed() < Duration::from_secs(30),
                    "failed only after {:?}",
                    t.elapsed()
                );
            }
            other => bail!("expected RemoteLost, got {:?}", other.map(|_| ())),
        }
        return pass(args, rank, bridge, handle);
    }
    if args.scenario == "lost" {
        // Side B: rank 0 dies once everyone is registered; its launcher
        // then takes the rest of the job down.
        if rank == 0 {
            std::thread::sleep(Duration::from_millis(500));
            kill_self();
        }
        std::thread::sleep(Duration::from_secs(30));
        bail!("side B of 'lost' was not stopped");
    }
    if args.scenario == "mesh" {
        mesh(args, rank, &bridge, &handle, timeout)?;
        return pass(args, rank, bridge, handle);
    }
    if args.scenario == "nonblocking" {
        let mut pending = bridge.intercomm_create_nonblocking(&handle, &peer, timeout)?;
        let mut computed = 0u64;
        let inter = loop {
            if let Some(ic) = pending.test()? {
                break ic;
            }
            computed += (0..10_000u64).sum::<u64>() % 7; // the program's own work
            std::thread::sleep(Duration::from_millis(1));
        };
        std::hint::black_box(computed);
        exchange_rank_ids(&inter, rank)?;
        drop(inter);
        return pass(args, rank, bridge, handle);
    }

    if args.scenario == "laggard" && args.a && rank == 1 {
        // A rank that comes late to a collective creation: the other job
        // must not finish and leave before this rank has its table.
        std::thread::sleep(Duration::from_secs(3));
    }
    let inter = bridge
        .intercomm_create_timeout(&handle, &peer, timeout)
        .context("intercomm_create")?;
    let a = args.a;
    match args.scenario.as_str() {
        "allpairs" => allpairs(&inter, rank, world.size() as u32, a)?,
        "routes" => {
            // allpairs, then how each data connection went (the test checks
            // the transport and the addresses).
            allpairs(&inter, rank, world.size() as u32, a)?;
            for q in 0..inter.remote_size() {
                let r = inter
                    .route(q)?
                    .with_context(|| format!("no data connection to remote rank {q}"))?;
                println!(
                    "ROUTE {} rank {rank} to {q} {} {} {}",
                    args.group, r.transport, r.local, r.remote
                );
            }
        }
        "wildcards" => wildcards(&inter, rank, a)?,
        "ordering" => ordering(&inter, rank, a)?,
        "ssend" => ssend(&inter, rank, a)?,
        "big" => big(&inter, rank, a)?,
        "singlecopy" => singlecopy(&inter, rank, a)?,
        "coll" => coll(&inter, &world, rank, a)?,
        "datatypes" => datatypes(&inter, rank, a)?,
        "mismatch" => mismatch(&inter, rank, a)?,
        "truncate" => truncate(&inter, rank, a)?,
        "multi" => {
            let second = bridge.intercomm_create_timeout(&handle, &peer, timeout)?;
            let others: Vec<InterComm> = args
                .peer
                .iter()
                .skip(1)
                .map(|p| bridge.intercomm_create_timeout(&handle, p, timeout))
                .collect::<Result<_, _>>()?;
            multi(&inter, &second, &others, rank, a, &args.group)?
        }
        "killed" => killed(&inter, &world, rank, a)?,
        "laggard" => {
            // Only the two rank 0s talk; B then leaves and exits at once.
            if rank == 0 {
                let mut v = [0u32; 1];
                if a {
                    inter.send(0, 5, &[42u32])?;
                } else {
                    inter.recv(Source::Rank(0), Tag::Value(5), &mut v)?;
                    ensure!(v[0] == 42, "B got {}", v[0]);
                }
            }
        }
        "finalize" => finalize(&inter, rank, a)?,
        "pause" => pause(&inter, rank, a)?,
        "steady" => steady(&inter, &world, rank, a, timeout)?,
        "answer" => {
            // A third job in "multi": receive one message, answer with our name.
            if rank == 0 {
                let mut v = [0u32; 1];
                inter.recv(Source::Rank(0), Tag::Value(1), &mut v)?;
                ensure!(v[0] == 3, "third job got {}", v[0]);
                inter.send(0, 2, args.group.as_bytes())?;
            }
        }
        s => bail!("unknown scenario {s:?}"),
    }
    drop(inter);
    pass(args, rank, bridge, handle)
}

/// "mesh": this job forms an intercommunicator with every job of `--peer`,
/// in that order. The first `XTEST_BLOCKING` of them (default 0) blocking,
/// one after the other; the rest started at once without blocking and
/// polled with `test()` in turn until all are formed — while the other jobs
/// do the same in their own orders. Then rank ids go both ways on each.
fn mesh(
    args: &Args,
    rank: u32,
    bridge: &Bridge,
    handle: &isthmus_bridge::Handle,
    timeout: Duration,
) -> anyhow::Result<()> {
    let blocking: usize = std::env::var("XTEST_BLOCKING")
        .ok()
        .map(|v| v.parse())
        .transpose()
        .context("XTEST_BLOCKING")?
        .unwrap_or(0);
    let mut formed: Vec<(String, InterComm)> = Vec::new();
    for peer in args.peer.iter().take(blocking) {
        let ic = bridge
            .intercomm_create_timeout(handle, peer, timeout)
            .with_context(|| format!("blocking intercomm_create with {peer}"))?;
        formed.push((peer.clone(), ic));
    }
    let mut pending = Vec::new();
    for peer in args.peer.iter().skip(blocking) {
        let p = bridge
            .intercomm_create_nonblocking(handle, peer, timeout)
            .with_context(|| format!("intercomm_create_nonblocking with {peer}"))?;
        pending.push((peer.clone(), Some(p)));
    }
    let start = Instant::now();
    let mut slowest_test = Duration::ZERO;
    while pending.iter().any(|(_, p)| p.is_some()) {
        for (peer, slot) in pending.iter_mut() {
            let Some(p) = slot.as_mut() else { continue };
            let t = Instant::now();
            let got = p
                .test()
                .with_context(|| format!("test() of the intercomm with {peer}"))?;
            slowest_test = slowest_test.max(t.elapsed());
            if let Some(ic) = got {
                formed.push((peer.clone(), ic));
                *slot = None;
            }
        }
        ensure!(
            start.elapsed() < timeout + Duration::from_secs(10),
            "intercomms still pending after {:?}",
            start.elapsed()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // test() must return at once: it only looks at what progressed.
    ensure!(
        slowest_test < Duration::from_millis(500),
        "a test() call took {slowest_test:?}"
    );
    println!(
        "MESH {} rank {rank} formed {} in {:?}, slowest test() {:?}",
        args.group,
        formed.len(),
        start.elapsed(),
        slowest_test
    );
    // Sends on every intercomm first, then receives: the jobs exchange in
    // different orders, and a receive must not wait for a job that is
    // itself receiving from a third.
    for (peer, ic) in &formed {
        for q in 0..ic.remote_size() {
            ic.send(q, 77, &[rank])
                .with_context(|| format!("send to {peer}"))?;
        }
    }
    for (peer, ic) in &formed {
        for q in 0..ic.remote_size() {
            let mut v = [u32::MAX];
            ic.recv(Source::Rank(q), Tag::Value(77), &mut v)
                .with_context(|| format!("recv from {peer}"))?;
            ensure!(v[0] == q, "rank id {} from rank {q} of {peer}", v[0]);
        }
    }
    Ok(())
}

fn pass(
    args: &Args,
    rank: u32,
    bridge: Bridge,
    handle: isthmus_bridge::Handle,
) -> anyhow::Result<()> {
    bridge.leave(handle)?;
    println!("PASS {} {} rank {rank}", args.scenario, args.group);
    Ok(())
}

/// Leave/register cycles of the "cycles" scenario.
const CYCLES: u32 = 100;

/// How long rank 1 of side B is stopped in the "pause" scenario.
const PAUSE: Duration = Duration::from_secs(30);

/// Every rank exchanges with every remote rank, then rank 1 of side B stops
/// itself (SIGSTOP; a separate process continues it after [`PAUSE`]) while
/// the others already wait on it; then everyone exchanges again, both ways.
fn pause(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    let round = |n: u64| -> anyhow::Result<()> {
        let remote = ic.remote_size();
        let sends = (0..remote)
            .map(|q| ic.isend(q, 30, &[n, u64::from(rank), u64::from(a)]))
            .collect::<Result<Vec<_>, _>>()?;
        for q in 0..remote {
            let mut v = [0u64; 3];
            ic.recv(Source::Rank(q), Tag::Value(30), &mut v)?;
            ensure!(
                v == [n, u64::from(q), u64::from(!a)],
                "round {n}: {v:?} from remote rank {q}"
            );
        }
        for s in sends {
            s.wait()?;
        }
        Ok(())
    };
    round(1)?;
    if !a && rank == 1 {
        let pid = std::process::id().to_string();
        // Taken before the continuing process starts: its `sleep` may begin
        // before `spawn` returns here, so a later reading could see less
        // than PAUSE although the stop lasted PAUSE (a CI run failed so).
        let stopped = Instant::now();
        std::process::Command::new("sh")
            .args([
                "-c",
                &format!("sleep {}; kill -CONT {pid}", PAUSE.as_secs()),
            ])
            .spawn()
            .context("starting the process that continues this one")?;
        let status = std::process::Command::new("kill")
            .args(["-STOP", &pid])
            .status()?;
        ensure!(status.success(), "kill -STOP failed");
        // Only a check that the pause happened, not a measure of speed.
        ensure!(
            stopped.elapsed() >= PAUSE,
            "was not stopped: resumed after {:?}",
            stopped.elapsed()
        );
    }
    round(2)
}

/// Round trips of the "steady" scenario: every rank sends to every remote
/// rank and receives from each, round after round, until told to stop —
/// through the file `XTEST_STOP_FILE` once it exists (else after
/// [`STEADY`]). Rank 0 of A decides for everyone: it broadcasts the
/// decision to its job and sends it with each message to B, so every rank
/// stops after the same round. Rank 0 of A writes the number of rounds
/// done to `XTEST_PROGRESS_FILE` after each (the test watches the pair
/// progress while it disturbs the virtual machine).
fn steady(
    ic: &InterComm,
    world: &SimpleCommunicator,
    rank: u32,
    a: bool,
    timeout: Duration,
) -> anyhow::Result<()> {
    use mpi::collective::Root;
    let stop_file = std::env::var_os("XTEST_STOP_FILE").map(std::path::PathBuf::from);
    let progress_file = std::env::var_os("XTEST_PROGRESS_FILE").map(std::path::PathBuf::from);
    let started = Instant::now();
    let remote = ic.remote_size();
    for n in 1u64.. {
        let mut stop = 0u64;
        if a {
            if rank == 0 {
                let told = match &stop_file {
                    Some(f) => f.exists(),
                    None => started.elapsed() >= STEADY,
                };
                ensure!(
                    started.elapsed() < timeout,
                    "never told to stop within {timeout:?}"
                );
                stop = u64::from(told);
            }
            world.process_at_rank(0).broadcast_into(&mut stop);
        }
        let sends = (0..remote)
            .map(|q| ic.isend(q, 40, &[n, u64::from(rank), stop]))
            .collect::<Result<Vec<_>, _>>()?;
        for q in 0..remote {
            let mut v = [0u64; 3];
            ic.recv(Source::Rank(q), Tag::Value(40), &mut v)?;
            ensure!(
                v[0] == n && v[1] == u64::from(q),
                "round {n}: {v:?} from remote rank {q}"
            );
            if !a {
                stop = v[2];
            }
        }
        for s in sends {
            s.wait()?;
        }
        if a && rank == 0 {
            if let Some(f) = &progress_file {
                // Whole or not at all: the reader never sees half a number.
                let next = f.with_extension("next");
                std::fs::write(&next, n.to_string()).context("writing progress")?;
                std::fs::rename(&next, f).context("writing progress")?;
            }
        }
        if stop != 0 {
            println!(
                "STEADY {} rank {rank} rounds {n}",
                if a { "a" } else { "b" }
            );
            return Ok(());
        }
        std::thread::sleep(STEADY_PAUSE);
    }
    Ok(())
}

/// How long "steady" runs when no stop file is given.
const STEADY: Duration = Duration::from_secs(15);
/// Pause between two rounds of "steady" (the data path is not what it
/// measures).
const STEADY_PAUSE: Duration = Duration::from_millis(20);

fn kill_self() -> ! {
    // SIGKILL: no destructor, no goodbye, as a crash would.
    let _ = std::process::Command::new("kill")
        .args(["-9", &std::process::id().to_string()])
        .status();
    std::thread::sleep(Duration::from_secs(10));
    std::process::exit(99)
}

/// Deterministic payload for the pair (from, to): length and values depend on both.
fn payload(side_a: bool, from: u32, to: u32) -> Vec<u64> {
    let seed = (u64::from(side_a) << 40) ^ (u64::from(from) << 20) ^ u64::from(to);
    let len = 1000 + (from as usize) * 37 + (to as usize) * 11;
    (0..len as u64)
        .map(|i| (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i).rotate_left((i % 63) as u32))
        .collect()
}

fn checksum(v: &[u64]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ x).wrapping_mul(0x100_0000_01b3)
    })
}

fn allpairs(ic: &InterComm, rank: u32, local_size: u32, a: bool) -> anyhow::Result<()> {
    let remote = ic.remote_size();
    let mut sends = Vec::new();
    for q in 0..remote {
        sends.push(ic.isend(q, 5, &payload(a, rank, q))?);
    }
    for q in 0..remote {
        let expected = payload(!a, q, rank);
        let mut buf = vec![0u64; expected.len() + 100];
        let st = ic.recv(Source::Rank(q), Tag::Value(5), &mut buf)?;
        ensure!(
            st.count as usize == expected.len(),
            "count {} from {q}, expected {}",
            st.count,
            expected.len()
        );
        ensure!(
            buf.get(..expected.len()).map(checksum) == Some(checksum(&expected)),
            "checksum mismatch from remote rank {q}"
        );
    }
    for s in sends {
        s.wait()?;
    }
    let _ = local_size;
    Ok(())
}

fn wildcards(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    let remote = ic.remote_size();
    // A sends to every B rank three messages, tags 10+r, 20+r, 30+r, content
    // [rank, tag]; B receives with ANY source and ANY tag.
    if a {
        for q in 0..remote {
            for base in [10, 20, 30] {
                let tag = base + rank as i32;
                ic.send(q, tag, &[rank as i64, tag as i64])?;
            }
        }
        // Then B answers, and A probes before receiving.
        for _ in 0..remote {
            let st = ic.probe(Source::Any, Tag::Any)?;
            ensure!(st.count == 3, "probe count {}", st.count);
            let mut v = [0i32; 3];
            let got = ic.recv(Source::Rank(st.source), Tag::Value(st.tag), &mut v)?;
            ensure!(
                got.source == st.source && v[0] as u32 == st.source && v[1] == st.tag,
                "probe/recv disagree: {v:?}"
            );
        }
        ensure!(
            ic.iprobe(Source::Any, Tag::Any)?.is_none(),
            "a message too many"
        );
    } else {
        let mut seen = Vec::new();
        for _ in 0..3 * remote {
            let mut v = [0i64; 2];
            let st = ic.recv(Source::Any, Tag::Any, &mut v)?;
            ensure!(
                st.source as i64 == v[0] && st.tag as i64 == v[1],
                "status {st:?} does not match content {v:?}"
            );
            ensure!(st.count == 2, "count {}", st.count);
            seen.push((st.source, st.tag));
        }
        seen.sort();
        let mut want: Vec<_> = (0..remote)
            .flat_map(|r| [10, 20, 30].map(|b| (r, b + r as i32)))
            .collect();
        want.sort();
        ensure!(seen == want, "received {seen:?}");
        for q in 0..remote {
            ic.send(q, 40 + rank as i32, &[rank as i32, 40 + rank as i32, 0])?;
        }
    }
    Ok(())
}

fn ordering(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    const N: u64 = 5000;
    if rank != 0 {
        return Ok(());
    }
    if a {
        let mut reqs = Vec::new();
        for i in 0..N {
            let len = 1 + (i % 50) as usize;
            let v = vec![i; len];
            let tag = (i % 2) as i32;
            if i % 3 == 0 {
                reqs.push(ic.isend(0, tag, &v)?);
            } else {
                ic.send(0, tag, &v)?;
            }
        }
        for r in reqs {
            r.wait()?;
        }
        let mut done = [0u8; 1];
        ic.recv(Source::Rank(0), Tag::Value(9), &mut done)?;
    } else {
        // First all of tag 1, then all of tag 0: each tag's messages must
        // come in the order sent, whatever was queued in between.
        let mut buf = vec![0u64; 64];
        for tag in [1i32, 0] {
            let mut last = None;
            for _ in 0..N / 2 {
                let st = ic.recv(Source::Rank(0), Tag::Value(tag), &mut buf)?;
                let i = *buf.first().context("an empty receive buffer")?;
                ensure!(i % 2 == tag as u64, "tag {tag} carried message {i}");
                ensure!(
                    st.count == 1 + i % 50,
                    "message {i} has {} elements",
                    st.count
                );
                if let Some(l) = last {
                    ensure!(i > l, "message {i} overtook {l}");
                }
                last = Some(i);
            }
        }
        ic.send(0, 9, &[1u8])?;
    }
    Ok(())
}

/// The "finalize" scenario's messages: [`FIN_A`] small ones (most past
/// the receiver's 4 MiB of credit), two of 2 MiB (rendezvous) around a
/// synchronous small one, then [`FIN_C`] small ones (more than the 4096
/// announcements a sender may have outstanding).
const FIN_A: usize = 6000;
const FIN_C: usize = 10_000;
const FIN_TOTAL: usize = FIN_A + 3 + FIN_C;

fn fin_message(i: usize, rank: u32) -> Vec<u8> {
    let len = if i == FIN_A || i == FIN_A + 2 {
        2 << 20
    } else {
        1 << 10
    };
    let mut m: Vec<u8> = (0..len)
        .map(|j| (i.wrapping_mul(31) + j + rank as usize) as u8)
        .collect();
    for (b, n) in m.iter_mut().zip((i as u64).to_le_bytes()) {
        *b = n;
    }
    m
}

/// Completed sends survive their sender's end: side A's ranks send to the
/// remote rank of their number (where there is one) and then drop the
/// intercommunicator, leave and end `main` while side B's ranks sleep;
/// these then receive every message, intact and in order.
fn finalize(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    if a {
        if rank >= ic.remote_size() {
            return Ok(());
        }
        for i in 0..FIN_TOTAL {
            let m = fin_message(i, rank);
            if i == FIN_A + 1 {
                ic.ssend(rank, 3, &m[..])?;
            } else {
                ic.send(rank, 3, &m[..])?;
            }
        }
        return Ok(());
    }
    if rank >= ic.remote_size() {
        return Ok(());
    }
    // Asleep while the first small sends complete; the sender then waits
    // in its rendezvous-size and synchronous sends for these receives.
    std::thread::sleep(Duration::from_secs(2));
    let mut buf = vec![0u8; 2 << 20];
    for i in 0..FIN_TOTAL {
        if i == FIN_A + 3 {
            // The sender completes the rest and ends meanwhile.
            std::thread::sleep(Duration::from_secs(3));
        }
        let want = fin_message(i, rank);
        let st = ic
            .recv(Source::Rank(rank), Tag::Value(3), &mut buf)
            .with_context(|| format!("message {i}"))?;
        let got = u64::from_le_bytes(buf.get(..8).context("a short message")?.try_into()?);
        ensure!(got == i as u64, "message {i} arrived as number {got}");
        ensure!(
            st.count as usize == want.len(),
            "message {i}: {} bytes",
            st.count
        );
        ensure!(
            buf.get(..want.len()) == Some(&want[..]),
            "message {i} corrupted"
        );
    }
    Ok(())
}

fn ssend(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    if rank != 0 {
        return Ok(());
    }
    if a {
        ic.ssend(0, 1, &[42u32])?;
        // B sent its marker just before posting the matching receive, on the
        // same connection as the acknowledgement: it must be here already.
        ensure!(
            ic.iprobe(Source::Rank(0), Tag::Value(99))?.is_some(),
            "ssend returned before the receiver matched"
        );
        let mut m = [0u8; 1];
        ic.recv(Source::Rank(0), Tag::Value(99), &mut m)?;
        // An ssend whose receive never comes gives a deadline, not a hang.
        match ic.ssend_timeout(0, 2, &[1u32], Duration::from_millis(300)) {
            Err(BridgeError::Timeout(_)) => {}
            other => bail!("unmatched ssend: expected Timeout, got {other:?}"),
        }
        ic.send(0, 3, &[0u8])?;
    } else {
        std::thread::sleep(Duration::from_millis(300));
        ic.send(0, 99, &[1u8])?;
        let mut v = [0u32; 1];
        ic.recv(Source::Rank(0), Tag::Value(1), &mut v)?;
        ensure!(v[0] == 42);
        let mut end = [0u8; 1];
        ic.recv(Source::Rank(0), Tag::Value(3), &mut end)?;
    }
    Ok(())
}

fn big(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    const LEN: usize = 256 << 20;
    if rank != 0 {
        return Ok(());
    }
    let make = |salt: u8| {
        (0..LEN)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
            .collect::<Vec<u8>>()
    };
    let mut buf = vec![0u8; LEN];
    if a {
        ic.send(0, 1, &make(1))?;
        let st = ic.recv(Source::Rank(0), Tag::Value(2), &mut buf)?;
        ensure!(
            st.count as usize == LEN && buf == make(2),
            "256 MiB from B arrived damaged"
        );
    } else {
        let st = ic.recv(Source::Rank(0), Tag::Value(1), &mut buf)?;
        ensure!(
            st.count as usize == LEN && buf == make(1),
            "256 MiB from A arrived damaged"
        );
        ic.send(0, 2, &make(2))?;
    }
    Ok(())
}

/// "singlecopy": large messages between the rank 0s of two jobs of this
/// host through the Rust API — a window of nonblocking sends lending their
/// buffers (`send_scope`, `isend_scoped`) and a blocking send, each way,
/// received by typed blocking receives — arrive intact, and each engine
/// says it moved every one by single copy (read from the sender's memory;
/// none when the kernel does not allow it, which `ISTHMUS_TEST_NO_CMA`
/// must then say). Prints `SINGLECOPY sent=N received=N`.
fn singlecopy(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    const LEN: usize = 1 << 20;
    const N: u64 = 4;
    if rank != 0 {
        return Ok(());
    }
    let make = |i: u64, from_a: bool| {
        let salt = (i as u8).wrapping_mul(7).wrapping_add(u8::from(from_a));
        (0..LEN)
            .map(|j| (j as u8).wrapping_mul(31).wrapping_add(salt))
            .collect::<Vec<u8>>()
    };
    // A first exchange opens both data connections (and settles whether
    // each side may read the other's memory).
    let mut one = [0u8; 1];
    if a {
        ic.send(0, 9, &[1u8])?;
        ic.recv(Source::Rank(0), Tag::Value(9), &mut one)?;
    } else {
        ic.recv(Source::Rank(0), Tag::Value(9), &mut one)?;
        ic.send(0, 9, &[1u8])?;
    }
    let before = ic.single_copy_stats();
    let mine: Vec<Vec<u8>> = (0..N).map(|i| make(i, a)).collect();
    let send_all = || -> anyhow::Result<()> {
        send_scope(|s| {
            let reqs = mine
                .iter()
                .zip(10..)
                .map(|(m, tag)| ic.isend_scoped(s, 0, tag, m))
                .collect::<Result<Vec<_>, _>>()?;
            wait_all(reqs).into_iter().collect::<Result<Vec<_>, _>>()
        })?;
        ic.send(0, 20, &make(N, a))?;
        Ok(())
    };
    let mut buf = vec![0u8; LEN];
    let mut recv_all = || -> anyhow::Result<()> {
        for (i, tag) in (0..=N).zip((10..).take(N as usize).chain([20])) {
            let st = ic.recv(Source::Rank(0), Tag::Value(tag), &mut buf)?;
            ensure!(
                st.count as usize == LEN && buf == make(i, !a),
                "1 MiB message {i} (tag {tag}) arrived damaged"
            );
        }
        Ok(())
    };
    if a {
        send_all()?;
        recv_all()?;
    } else {
        recv_all()?;
        send_all()?;
    }
    let after = ic.single_copy_stats();
    let route = ic
        .route(0)?
        .context("no data connection to the other rank 0")?;
    let expected = if route.single_copy {
        N + 1
    } else {
        ensure!(
            std::env::var_os("ISTHMUS_TEST_NO_CMA").is_some(),
            "single copy is off between two processes of one host and uid ({route:?})"
        );
        0
    };
    let (sent, received) = (after.sent - before.sent, after.received - before.received);
    println!("SINGLECOPY sent={sent} received={received}");
    ensure!(
        sent == expected && received == expected,
        "{sent} sends and {received} receives went by single copy, not {expected} each"
    );
    Ok(())
}

/// "coll": intercommunicator barrier and broadcasts (native MPI inside
/// each job, the bridge between them), each checked at every rank of the
/// other job; and a user message with the collectives' own tag and type
/// that a broadcast must not take (collective traffic is apart).
fn coll(ic: &InterComm, world: &SimpleCommunicator, rank: u32, a: bool) -> anyhow::Result<()> {
    // A first barrier lines both jobs up; to the second, A's rank 1 comes
    // late: no rank of either job may leave it before that rank entered.
    ic.barrier(world).context("first barrier")?;
    let late = Duration::from_secs(2);
    let sleeper = a && rank == 1;
    if sleeper {
        std::thread::sleep(late);
    }
    let entered = Instant::now();
    ic.barrier(world).context("second barrier")?;
    ensure!(
        sleeper || entered.elapsed() >= late - Duration::from_millis(500),
        "left the barrier after {:?}, before A's late rank 1 entered it",
        entered.elapsed()
    );
    // A's rank 1 broadcasts to B, after sending B's leader a user message of
    // the same type, length and tag (2) as the broadcast's own message.
    let decoy = [7777u64; 4];
    let small: Vec<u64> = (0..4).map(|i| 1_000 + i).collect();
    let mut buf = [0u64; 4];
    if a {
        if rank == 1 {
            ic.send(0, 2, &decoy)?;
            buf.copy_from_slice(&small);
        }
        let role = if rank == 1 {
            BcastRole::Root
        } else {
            BcastRole::Idle
        };
        ic.bcast(world, role, &mut buf).context("bcast from A")?;
    } else {
        ic.bcast(world, BcastRole::From { root: 1 }, &mut buf)
            .context("bcast from A")?;
        ensure!(buf[..] == small[..], "bcast from A: got {buf:?}");
        if rank == 0 {
            let mut user = [0u64; 4];
            let st = ic.recv(Source::Any, Tag::Any, &mut user)?;
            ensure!(
                user == decoy && st.source == 1 && st.tag == 2,
                "user message: {user:?} from {} tag {}",
                st.source,
                st.tag
            );
            ensure!(
                ic.iprobe(Source::Any, Tag::Any)?.is_none(),
                "a collective message showed on the user's context"
            );
        }
    }
    // B's rank 2 broadcasts 2.4 MB (a rendezvous) to A.
    let big: Vec<u64> = (0..300_000u64).map(|i| i * 3 + 1).collect();
    let mut buf = vec![0u64; big.len()];
    if a {
        ic.bcast(world, BcastRole::From { root: 2 }, &mut buf)
            .context("bcast from B")?;
        ensure!(
            checksum(&buf) == checksum(&big),
            "bcast from B: checksum mismatch"
        );
    } else {
        let role = if rank == 2 {
            buf.copy_from_slice(&big);
            BcastRole::Root
        } else {
            BcastRole::Idle
        };
        ic.bcast(world, role, &mut buf).context("bcast from B")?;
    }
    ic.barrier(world).context("last barrier")?;
    Ok(())
}

fn particles(salt: i32) -> Vec<Particle> {
    (0..100)
        .map(|i| Particle {
            kind: (i % 7) as u8,
            pos: [i as f64 * 0.5, -(i as f64), salt as f64 + 0.25],
            charge: salt * 1000 + i,
        })
        .collect()
}

fn datatypes(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    if rank != 0 {
        return Ok(());
    }
    // A strided vector: 4 blocks of 2 i32, stride 5.
    let vector = UserDatatype::vector(4, 2, 5, &i32::equivalent_datatype());
    let full: Vec<i32> = (0..20).collect();
    let picked: Vec<i32> = (0..4).flat_map(|b| [b * 5, b * 5 + 1]).collect();
    let scalars_f32: Vec<f32> = (0..33).map(|i| i as f32 / 3.0).collect();
    let scalars_i16: Vec<i16> = (0..17).map(|i| i * -300).collect();
    let flags: Vec<bool> = (0..9).map(|i| i % 3 == 0).collect();
    if a {
        ic.send(0, 1, &particles(1))?;
        // SAFETY: one vector of 4 blocks, stride 5, spans 17 of the 20 elements.
        let view = unsafe { View::with_count_and_datatype(&full[..], 1, &vector) };
        ic.send_buffer(0, 2, &view)?;
        ic.send(0, 3, &scalars_f32)?;
        ic.send(0, 4, &scalars_i16)?;
        ic.send(0, 5, &flags)?;
        let mut back = vec![Particle::default(); 100];
        ic.recv(Source::Rank(0), Tag::Value(6), &mut back)?;
        ensure!(back == particles(2), "particles from B damaged");
    } else {
        let mut p = vec![Particle::default(); 100];
        let st = ic.recv(Source::Rank(0), Tag::Value(1), &mut p)?;
        ensure!(
            st.count == 100 && p == particles(1),
            "particles from A damaged: {:?}",
            p.get(..2).unwrap_or_default()
        );
        let mut strided = [-1i32; 20];
        {
            // SAFETY: as on the sending side, the vector fits the 20 elements.
            let mut view =
                unsafe { MutView::with_count_and_datatype(&mut strided[..], 1, &vector) };
            ic.recv_buffer(Source::Rank(0), Tag::Value(2), &mut view)?;
        }
        for (i, v) in strided.iter().enumerate() {
            let in_block = (i % 5) < 2 && i < 20;
            ensure!(
                if in_block { *v == i as i32 } else { *v == -1 },
                "strided slot {i} holds {v}"
            );
        }
        ensure!(picked.iter().all(|v| strided.get(*v as usize) == Some(v)));
        let mut f = vec![0f32; 33];
        ic.recv(Source::Rank(0), Tag::Value(3), &mut f)?;
        ensure!(f == scalars_f32, "f32 damaged");
        let mut s = vec![0i16; 17];
        ic.recv(Source::Rank(0), Tag::Value(4), &mut s)?;
        ensure!(s == scalars_i16, "i16 damaged");
        let mut b = vec![false; 9];
        ic.recv(Source::Rank(0), Tag::Value(5), &mut b)?;
        ensure!(b == flags, "bool damaged");
        ic.send(0, 6, &particles(2))?;
    }
    Ok(())
}

fn mismatch(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    if rank != 0 {
        return Ok(());
    }
    if a {
        ic.send(0, 1, &[1.5f64, 2.5])?;
        ic.send(0, 1, &[7i32, 8])?;
    } else {
        let mut ints = [0i32; 4];
        match ic.recv(Source::Rank(0), Tag::Value(1), &mut ints) {
            Err(BridgeError::TypeMismatch { .. }) => {}
            other => bail!("f64 into i32: expected TypeMismatch, got {other:?}"),
        }
        let st = ic.recv(Source::Rank(0), Tag::Value(1), &mut ints)?;
        ensure!(
            st.count == 2 && ints[..2] == [7, 8],
            "the next message was lost: {ints:?}"
        );
    }
    Ok(())
}

fn truncate(ic: &InterComm, rank: u32, a: bool) -> anyhow::Result<()> {
    if rank != 0 {
        return Ok(());
    }
    if a {
        ic.send(0, 1, &[9u32; 100])?;
        ic.send(0, 1, &[1u32, 2, 3, 4, 5])?;
    } else {
        let mut small = [0u32; 10];
        match ic.recv(Source::Rank(0), Tag::Value(1), &mut small) {
            Err(BridgeError::Truncated { .. }) => {}
            other => bail!("100 into 10: expected Truncated, got {other:?}"),
        }
        let st = ic.recv(Source::Rank(0), Tag::Value(1), &mut small)?;
        ensure!(
            st.count == 5 && small[..5] == [1, 2, 3, 4, 5],
            "the next message was lost: {small:?}"
        );
    }
    Ok(())
}

fn multi(
    first: &InterComm,
    second: &InterComm,
    others: &[InterComm],
    rank: u32,
    a: bool,
    group: &str,
) -> anyhow::Result<()> {
    ensure!(
        first.context() != second.context(),
        "two intercomms share a context"
    );
    if rank == 0 {
        if a {
            // Same destination, same tag, two intercomms: never mixed.
            first.send(0, 1, &[1u32])?;
            second.send(0, 1, &[2u32])?;
            for o in others {
                o.send(0, 1, &[3u32])?;
            }
            for o in others {
                let mut v = [0u8; 64];
                let st = o.recv(Source::Rank(0), Tag::Value(2), &mut v)?;
                ensure!(st.count > 0, "empty answer from a third job");
            }
        } else {
            let mut v = [0u32; 1];
            second.recv(Source::Any, Tag::Value(1), &mut v)?;
            ensure!(v[0] == 2, "second intercomm got {}", v[0]);
            first.recv(Source::Any, Tag::Value(1), &mut v)?;
            ensure!(v[0] == 1, "first intercomm got {}", v[0]);
        }
    }
    let _ = group;
    Ok(())
}

/// A third job for "multi": answers on its one intercomm.
fn exchange_rank_ids(ic: &InterComm, rank: u32) -> anyhow::Result<()> {
    for q in 0..ic.remote_size() {
        ic.send(q, 77, &[rank])?;
    }
    for q in 0..ic.remote_size() {
        let mut v = [u32::MAX];
        ic.recv(Source::Rank(q), Tag::Value(77), &mut v)?;
        ensure!(v[0] == q, "rank id {} from {q}", v[0]);
    }
    Ok(())
}

fn killed(ic: &InterComm, world: &SimpleCommunicator, rank: u32, a: bool) -> anyhow::Result<()> {
    // A keeps receiving from every B rank; B's rank 1 dies by SIGKILL after
    // 50 rounds, once every B rank has sent those 50 (native barrier: a
    // lagging rank 0 killed by its launcher would otherwise end early). Every
    // A rank must see an error, not hang, and never before round 50.
    let remote = ic.remote_size();
    if a {
        let mut v = [0u64; 8];
        for round in 0.. {
            for q in 0..remote {
                match ic.recv_timeout(
                    Source::Rank(q),
                    Tag::Value(1),
                    &mut v,
                    Duration::from_secs(60),
                ) {
                    Ok(_) => {}
                    Err(BridgeError::PeerFailed { .. }) => {
                        ensure!(round >= 50, "peer failed too early, round {round}");
                        return Ok(());
                    }
                    Err(e) => bail!("expected PeerFailed, got {e}"),
                }
            }
        }
        unreachable!()
    } else {
        for round in 0u64.. {
            if round == 50 {
                world.barrier();
                if rank == 1 {
                    kill_self();
                }
            }
            for q in 0..remote {
                ic.send(q, 1, &[round; 8])?;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        unreachable!()
    }
}

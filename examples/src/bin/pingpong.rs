//! Ping-pong between rank 0 of two separately started jobs through the
//! bridge: one-way latency (half a round trip) and windowed bandwidth, the
//! same method as `bench/reference/ompi_connect_accept.c` so the numbers sit
//! side by side. Prints `RESULT` lines (see bench/reference/README.md).
//!
//!   mpirun.openmpi -n 1 pingpong --group a --peer b --first
//!   mpiexec.mpich  -n 1 pingpong --group b --peer a

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use isthmus_bridge::{send_scope, wait_all, Bridge, Source, Tag};
use mpi::topology::Communicator;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    group: String,
    #[arg(long)]
    peer: String,
    /// This side measures and prints.
    #[arg(long)]
    first: bool,
    /// Round trips per latency size.
    #[arg(long, default_value_t = 5000)]
    iters: usize,
    /// About this many MiB per bandwidth size.
    #[arg(long, default_value_t = 1024)]
    bw_mib: usize,
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
    /// Only these bandwidth sizes (bytes, comma-separated; default all three).
    #[arg(long, value_delimiter = ',')]
    bw_sizes: Option<Vec<usize>>,
    /// Latency with synchronous sends (`ssend`: each completes on the
    /// receiver's SYNC_ACK) instead of standard ones.
    #[arg(long)]
    ssend: bool,
}

const WINDOW: usize = 16;
const LAT_SIZES: [usize; 3] = [0, 8, 1024];
const BW_SIZES: [usize; 3] = [65536, 1 << 20, 4 << 20];

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(bad) = args
        .bw_sizes
        .iter()
        .flatten()
        .find(|&&n| n == 0 || n > *BW_SIZES.iter().max().unwrap_or(&0))
    {
        anyhow::bail!("--bw-sizes: {bad} is not a size from 1 B to 4 MiB");
    }
    let universe = isthmus_examples::init_mpi()?;
    let world = universe.world();
    let bridge = Bridge::connect().context("connecting to the vmd")?;
    let handle = bridge.register(&args.group, &world)?;
    let inter = bridge.intercomm_create_timeout(
        &handle,
        &args.peer,
        Duration::from_secs(args.timeout_secs),
    )?;
    if world.rank() == 0 {
        let me = isthmus_examples::implementation();
        eprintln!("[{me}] pingpong {} <-> {}", args.group, args.peer);
        // Filled, not zeroed: `vec![0; n]` is calloc's untouched zero pages,
        // which a single-copy read copies from cache (as the C ping-pong's
        // and the references' buffers, filled too).
        let mut buf = vec![0x5au8; 4 << 20];
        let send = |m: &[u8]| {
            if args.ssend {
                inter.ssend(0, 1, m)
            } else {
                inter.send(0, 1, m)
            }
        };
        for &size in &LAT_SIZES {
            let msg = buf
                .get_mut(..size)
                .context("a message size beyond the buffer")?;
            let warm = args.iters / 10 + 10;
            let mut samples = Vec::with_capacity(args.iters);
            for i in 0..args.iters + warm {
                let t = Instant::now();
                if args.first {
                    send(msg)?;
                    inter.recv(Source::Rank(0), Tag::Value(1), msg)?;
                } else {
                    inter.recv(Source::Rank(0), Tag::Value(1), msg)?;
                    send(msg)?;
                }
                if i >= warm {
                    samples.push(t.elapsed() / 2);
                }
            }
            if args.first {
                samples.sort();
                let n = samples.len();
                let us = |q: f64| {
                    let i = ((n as f64 * q) as usize).min(n.saturating_sub(1));
                    samples.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1e6)
                };
                println!(
                    "RESULT bridge_lat_{size} median_us={:.3} p99_us={:.3} n={n}",
                    us(0.5),
                    us(0.99)
                );
            }
        }
        for &size in args.bw_sizes.as_deref().unwrap_or(&BW_SIZES) {
            let reps = ((args.bw_mib << 20) / (size * WINDOW)).max(4);
            let data = vec![1u8; size];
            let mut ack = [0u8; 1];
            let mut elapsed = Duration::ZERO;
            for r in 0..reps + 2 {
                let t = Instant::now();
                if args.first {
                    // The window lends `data` to its sends, as MPI_Isend
                    // does (nothing copied: large messages to a process of
                    // this host are read straight out of it).
                    send_scope(|s| {
                        let reqs = (0..WINDOW)
                            .map(|_| inter.isend_scoped(s, 0, 2, &data))
                            .collect::<Result<Vec<_>, _>>()?;
                        wait_all(reqs).into_iter().collect::<Result<Vec<_>, _>>()
                    })?;
                    inter.recv(Source::Rank(0), Tag::Value(3), &mut ack)?;
                } else {
                    let msg = buf
                        .get_mut(..size)
                        .context("a message size beyond the buffer")?;
                    for _ in 0..WINDOW {
                        inter.recv(Source::Rank(0), Tag::Value(2), msg)?;
                    }
                    inter.send(0, 3, &ack)?;
                }
                if r >= 2 {
                    elapsed += t.elapsed();
                }
            }
            if args.first {
                let n = reps * WINDOW;
                let mbps = (size * n) as f64 / elapsed.as_secs_f64() / 1e6;
                println!("RESULT bridge_bw_{size} bytes={size} mbps={mbps:.1} n={n}");
            }
        }
        if let Some(r) = inter.route(0)? {
            // How the data went (bench/hosts-data.sh shows it).
            println!("ROUTE {} {} {}", r.transport, r.local, r.remote);
        }
        // How many large sends went on returned credit (`engine::push`).
        let p = inter.engine().push_stats();
        println!("PUSHED {} HELD {}", p.pushed, p.held);
    }
    drop(inter);
    bridge.leave(handle)?;
    Ok(())
}

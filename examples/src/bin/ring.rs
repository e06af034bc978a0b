//! A token ring across two separately started jobs: the ranks of job A
//! (`--first`) then the ranks of job B form one ring. Hops inside a job use
//! native MPI; the two hops between the jobs go through the bridge.
//!
//!   mpirun.openmpi -n 2 ring --group ompi --peer mpich --first
//!   mpiexec.mpich  -n 3 ring --group mpich --peer ompi

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use isthmus_bridge::{Bridge, Source, Tag};
use mpi::point_to_point::{Destination, Source as _};
use mpi::topology::Communicator;

#[derive(Parser)]
struct Args {
    /// Name this job registers under.
    #[arg(long)]
    group: String,
    /// Name of the other job.
    #[arg(long)]
    peer: String,
    /// This job holds the ring's first ranks and starts the token.
    #[arg(long)]
    first: bool,
    /// Times the token goes round.
    #[arg(long, default_value_t = 3)]
    laps: u32,
    /// How long to wait for the other job.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
}

const TAG: i32 = 7;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let universe = isthmus_examples::init_mpi()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let me = isthmus_examples::implementation();

    let bridge = Bridge::connect().context("connecting to the vmd")?;
    let handle = bridge.register(&args.group, &world).context("register")?;
    let inter = bridge
        .intercomm_create_timeout(&handle, &args.peer, Duration::from_secs(args.timeout_secs))
        .context("intercomm_create")?;
    let remote_size = inter.remote_size() as i32;
    if rank == 0 {
        println!(
            "[{me}] job {:?}: {size} ranks, connected to {:?} with {remote_size} ranks",
            args.group, args.peer
        );
    }

    let last = rank == size - 1;
    for lap in 0..args.laps {
        let mut token = [0u64; 2]; // [lap, hops]
        let starts = args.first && rank == 0;
        if !starts {
            // From the previous rank: native inside the job, the bridge at the seam.
            if rank == 0 {
                inter.recv(
                    Source::Rank((remote_size - 1) as u32),
                    Tag::Value(TAG),
                    &mut token,
                )?;
            } else {
                world.process_at_rank(rank - 1).receive_into(&mut token);
            }
            println!(
                "[{me}] {} rank {rank}: token lap {} after {} hops",
                args.group, token[0], token[1]
            );
        } else {
            token = [u64::from(lap), 0];
        }
        token[1] += 1;
        if last {
            inter.send(0, TAG, &token)?;
        } else {
            world.process_at_rank(rank + 1).send(&token);
        }
        if starts {
            inter.recv(
                Source::Rank((remote_size - 1) as u32),
                Tag::Value(TAG),
                &mut token,
            )?;
            let total = size as u64 + remote_size as u64;
            println!(
                "[{me}] {} rank 0: lap {} complete, {} hops (ring of {total})",
                args.group, token[0], token[1]
            );
            anyhow::ensure!(
                token[1] == total,
                "token made {} hops, expected {total}",
                token[1]
            );
        }
    }
    drop(inter);
    bridge.leave(handle)?;
    if rank == 0 {
        println!("[{me}] {} done", args.group);
    }
    Ok(())
}

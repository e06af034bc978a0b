//! The resource-manager demo's manager (built with Open MPI, run with one
//! rank): asks the virtual machine's resource manager to spawn the worker
//! job — built with MPICH — subscribes to its exit notifications first, forms
//! an intercommunicator with it through the bridge, farms out work items,
//! collects the results, stops the workers and waits for their exits.
//!
//!   farm-manager --worker PATH/TO/mpich/farm-worker [--workers 3] [--items 24]

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Parser;
use isthmus_bridge::{Bridge, Source, Tag};
use isthmus_client::Console;
use isthmus_types::event::{NotificationKind, WatchEvent, WatchFilter};
use isthmus_types::job::{JobState, Placement, SpawnSpec};
use mpi::topology::Communicator;

#[derive(Parser)]
struct Args {
    /// The worker program (MPICH flavour).
    #[arg(long)]
    worker: String,
    /// Worker ranks to spawn.
    #[arg(long, default_value_t = 3)]
    workers: u32,
    /// Work items to farm out.
    #[arg(long, default_value_t = 24)]
    items: u64,
    /// Implementation of the worker job.
    #[arg(long = "worker-impl", default_value = "mpich")]
    worker_impl: String,
}

const WORK: i32 = 1;
const RESULT: i32 = 2;
const STOP: i32 = 3;

/// What a worker computes for item `n` (checked here).
fn expected(n: u64) -> u64 {
    (1..=n).map(|k| k * k).sum()
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let universe = isthmus_examples::init_mpi()?;
    let world = universe.world();
    if world.size() != 1 {
        bail!("run the manager with one rank");
    }
    let me = isthmus_examples::implementation();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;

    // Subscribe before spawning so that no exit can be missed.
    let addr = isthmus_client::default_addr();
    let (vmd, mut events) = rt.block_on(async {
        let vmd = Console::connect(&addr).await?;
        let events = vmd
            .watch(WatchFilter::kinds([
                NotificationKind::TaskExit,
                NotificationKind::JobExit,
            ]))
            .await?;
        anyhow::Ok((vmd, events))
    })?;
    let spawn = SpawnSpec {
        program: args.worker.clone(),
        args: vec![],
        np: args.workers,
        implementation: args.worker_impl.clone(),
        placement: Placement::MostFree,
        ..Default::default()
    };
    let reply = rt
        .block_on(vmd.spawn(spawn))
        .map_err(|e| anyhow::anyhow!("spawn refused: {}", e.message()))?;
    let job = reply.job;
    println!(
        "[{me}] manager: spawned {} {} workers as job {job} on host {}",
        args.workers, args.worker_impl, reply.host
    );

    let bridge = Bridge::connect().context("connecting to the vmd")?;
    let handle = bridge
        .register("farm-manager", &world)
        .context("register")?;
    let inter = bridge
        .intercomm_create_timeout(&handle, "farm-workers", Duration::from_secs(120))
        .context("intercomm_create with the workers")?;
    let workers = inter.remote_size();
    println!("[{me}] manager: intercommunicator up, {workers} remote ranks");

    // Farm: one item in flight per worker; hand out the next as results come.
    let mut next = 1u64;
    let mut outstanding = 0u32;
    for w in 0..workers {
        if next <= args.items {
            inter.send(w, WORK, &[next])?;
            next += 1;
            outstanding += 1;
        }
    }
    let mut total = 0u64;
    let mut done = 0u64;
    let mut by_worker = vec![0u32; workers as usize];
    while outstanding > 0 {
        let mut result = [0u64; 2]; // [item, value]
        let status = inter.recv(Source::Any, Tag::Value(RESULT), &mut result)?;
        outstanding -= 1;
        if result[1] != expected(result[0]) {
            bail!(
                "worker {} got item {} wrong: {}",
                status.source,
                result[0],
                result[1]
            );
        }
        total += result[1];
        done += 1;
        if let Some(n) = by_worker.get_mut(status.source as usize) {
            *n += 1;
        }
        if next <= args.items {
            inter.send(status.source, WORK, &[next])?;
            next += 1;
            outstanding += 1;
        }
    }
    println!("[{me}] manager: {done} items done, sum {total}, per worker {by_worker:?}");
    for w in 0..workers {
        inter.send(w, STOP, &[0u64])?;
    }

    // The workers' exits, as notifications.
    let mut exited = BTreeSet::new();
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let ev = tokio::time::timeout_at(deadline, events.next())
                .await
                .context("no job exit notification within 60 s")??
                .context("watch ended")?;
            if ev.event.job() != Some(job) {
                continue;
            }
            match ev.event {
                WatchEvent::TaskExit { rank, exit, .. } => {
                    let shown = rank.map_or_else(|| "?".to_string(), |r| r.to_string());
                    println!(
                        "[{me}] manager: notified: worker rank {shown} of job {job} ended ({exit})"
                    );
                    if let Some(r) = rank {
                        exited.insert(r);
                    }
                }
                WatchEvent::JobExit { state, reason, .. } => {
                    println!("[{me}] manager: notified: job {job} ended: {state:?} {reason}");
                    if state != JobState::Exited {
                        bail!("the worker job did not exit cleanly");
                    }
                    return anyhow::Ok(());
                }
                _ => {}
            }
        }
    })?;
    if exited.len() != workers as usize {
        bail!("saw exits of {} of {workers} workers", exited.len());
    }
    drop(inter);
    bridge.leave(handle)?;
    println!("[{me}] manager: done");
    Ok(())
}

//! The resource-manager demo's worker (built with MPICH, spawned by
//! `farm-manager` through the resource manager): registers as
//! `farm-workers`, connects to `farm-manager`, computes items until told to
//! stop. It needs no flags: the tasker hands it ISTHMUS_VMD and ISTHMUS_JOB
//! (nothing secret: its vmd knows it by its uid).

use std::time::Duration;

use anyhow::Context;
use isthmus_bridge::{Bridge, Source, Tag};
use mpi::topology::Communicator;

const WORK: i32 = 1;
const RESULT: i32 = 2;
const STOP: i32 = 3;

fn main() -> anyhow::Result<()> {
    let universe = isthmus_examples::init_mpi()?;
    let world = universe.world();
    let rank = world.rank();
    let me = isthmus_examples::implementation();
    let job = std::env::var(isthmus_types::env::JOB).unwrap_or_else(|_| "?".into());
    let bridge = Bridge::connect().context("connecting to the vmd")?;
    let handle = bridge
        .register("farm-workers", &world)
        .context("register")?;
    let inter = bridge
        .intercomm_create_timeout(&handle, "farm-manager", Duration::from_secs(120))
        .context("intercomm_create with the manager")?;
    let mut items = 0u32;
    loop {
        let mut item = [0u64; 1];
        let status = inter.recv(Source::Rank(0), Tag::Any, &mut item)?;
        if status.tag == STOP {
            break;
        }
        anyhow::ensure!(status.tag == WORK, "unexpected tag {}", status.tag);
        let n = item[0];
        let value: u64 = (1..=n).map(|k| k * k).sum();
        inter.send(0, RESULT, &[n, value])?;
        items += 1;
    }
    println!("[{me}] worker rank {rank} of job {job}: {items} items");
    drop(inter);
    bridge.leave(handle)?;
    Ok(())
}

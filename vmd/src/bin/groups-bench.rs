//! `groups-bench`: latency of the group service, with PVM's group server
//! measured side by side in the same run when PVM is installed.
//!
//! A vmd runs as its own process (as pvmd and pvmgs do); each measured task
//! is a session over loopback. Barrier partners are separate processes: this
//! program started again in member mode. Prints a table of medians and p99s
//! and the ratio ours/PVM.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use isthmus_client::Session;

#[derive(Parser, Debug)]
#[command(about = "Benchmark the Isthmus group service against PVM's")]
struct Args {
    /// Iterations per measurement.
    #[arg(long, default_value_t = 2000)]
    iters: usize,
    /// Use this vmd instead of starting one.
    #[arg(long)]
    vmd: Option<String>,
    /// Skip the PVM reference.
    #[arg(long)]
    no_pvm: bool,
    /// Also measure a vmd keeping its groups in etcd at these client URLs
    /// (comma-separated), in the same run, beside the in-memory store.
    #[arg(long, value_delimiter = ',')]
    etcd: Vec<String>,
    /// Also measure a vmd keeping its groups in its durable redb file (the
    /// vmd's default store), in the same run, beside the in-memory store.
    #[arg(long)]
    redb: bool,
    /// The directory of that redb file (default: the system's temporary
    /// directory; give one on the disk a vmd's runtime directory is on,
    /// since every change waits for its fsync).
    #[arg(long, requires = "redb")]
    redb_dir: Option<PathBuf>,
    /// Internal: run as a barrier member of GROUP until ITERS barriers are done.
    #[arg(long, hide = true)]
    member: Option<String>,
    /// Internal: barrier count for member mode.
    #[arg(long, hide = true, default_value_t = 2)]
    count: u32,
}

#[derive(Clone, Copy)]
struct Stat {
    median_us: f64,
    p99_us: f64,
    n: usize,
}

fn stat(mut samples: Vec<Duration>) -> Stat {
    samples.sort();
    let n = samples.len();
    let at = |q: f64| {
        let i = ((n as f64 * q) as usize).min(n.saturating_sub(1));
        samples.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1e6)
    };
    Stat {
        median_us: at(0.5),
        p99_us: at(0.99),
        n,
    }
}

const WAIT: Duration = Duration::from_secs(30);

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(group) = &args.member {
        let addr = args.vmd.clone().context("member mode needs --vmd")?;
        return member(&addr, group, args.count, args.iters).await;
    }
    let mut vmd_child = None;
    let addr = match &args.vmd {
        Some(a) => a.clone(),
        None => {
            // The in-memory store: the reference the other stores are
            // compared with.
            let (child, addr) = start_vmd(&["--store", "memory"])?;
            vmd_child = Some(child);
            addr
        }
    };
    let result = measure(&addr, &args).await;
    if let Some(mut c) = vmd_child {
        let _ = c.kill();
        let _ = c.wait();
    }
    let ours = result?;
    let etcd = if args.etcd.is_empty() {
        None
    } else {
        // A prefix of its own: nothing of another run is in the way.
        let prefix = format!("/isthmus-bench/{}", uuid::Uuid::new_v4());
        let urls = args.etcd.join(",");
        let (mut child, addr) = start_vmd(&["--etcd", &urls, "--etcd-prefix", &prefix])?;
        let result = measure(&addr, &args).await;
        let _ = child.kill();
        let _ = child.wait();
        let floor = etcd_put_floor(&args.etcd, &prefix, args.iters).await?;
        Some((result?, floor))
    };
    let redb = if args.redb {
        let dir = args.redb_dir.clone().unwrap_or_else(std::env::temp_dir);
        let file = dir.join(format!("isthmus-bench-{}.redb", uuid::Uuid::new_v4()));
        let path = file.to_str().context("the redb directory is not UTF-8")?;
        let (mut child, addr) = start_vmd(&["--store", "redb", "--store-file", path])?;
        let result = measure(&addr, &args).await;
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(&file);
        Some(result?)
    } else {
        None
    };
    let pvm = if args.no_pvm {
        BTreeMap::new()
    } else {
        pvm_reference(args.iters)
    };
    print_table(&ours, &pvm);
    if let Some((etcd, floor)) = etcd {
        print_store_table(&ours, "etcd", &etcd, &pvm);
        print_etcd_floor(&etcd, floor);
    }
    if let Some(redb) = redb {
        print_store_table(&ours, "redb", &redb, &pvm);
        println!("(medians; redb: one file, each change one transaction committed with fsync)");
    }
    Ok(())
}

/// Another store (`label`: etcd, redb) beside the in-memory store and PVM.
fn print_store_table(
    memory: &[(&str, &str, Stat)],
    label: &str,
    etcd: &[(&str, &str, Stat)],
    pvm: &BTreeMap<String, Stat>,
) {
    println!();
    println!(
        "{:<15} {:>12} {:>12} {:>13} | {:>12} {:>10}",
        "operation",
        "memory µs",
        format!("{label} µs"),
        format!("{label}/memory"),
        "PVM µs",
        format!("{label}/PVM")
    );
    println!("{}", "-".repeat(82));
    for ((name, reference, m), (_, _, e)) in memory.iter().zip(etcd) {
        let (p, ratio) = match pvm.get(*reference) {
            Some(p) => (
                format!("{:.2}", p.median_us),
                format!("{:.2}", e.median_us / p.median_us),
            ),
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<15} {:>12.2} {:>12.2} {:>13.2} | {:>12} {:>10}",
            name,
            m.median_us,
            e.median_us,
            e.median_us / m.median_us,
            p,
            ratio
        );
    }
}

/// The etcd put of the same run: the floor under any change of the etcd
/// store.
fn print_etcd_floor(etcd: &[(&str, &str, Stat)], put: Stat) {
    println!(
        "{:<15} {:>12} {:>12.2} {:>13} | {:>12} {:>10}",
        "etcd put", "-", put.median_us, "-", "-", "-"
    );
    println!("(medians; etcd: one member on this machine, data on its disk)");
    // A join and a leave each commit one etcd transaction: their floor is
    // two puts, whatever the store does around them.
    if let Some((_, _, jl)) = etcd.iter().find(|(name, _, _)| *name == "join+leave") {
        println!(
            "join+leave with etcd = {:.2} x two etcd puts of the same run (its floor)",
            jl.median_us / (2.0 * put.median_us)
        );
    }
}

/// Median time of one etcd put (a write committed through raft, as a
/// group change is) from this process, under `prefix`, which is then
/// deleted: the floor under any change the etcd store makes.
async fn etcd_put_floor(urls: &[String], prefix: &str, iters: usize) -> anyhow::Result<Stat> {
    let mut client = etcd_client::Client::connect(urls, None)
        .await
        .context("connecting to etcd for the put reference")?;
    let key = format!("{prefix}/put-floor");
    let warm = iters / 10 + 10;
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters + warm {
        let t = Instant::now();
        tokio::time::timeout(WAIT, client.put(key.as_str(), i.to_string(), None))
            .await
            .context("an etcd put took over 30 s")??;
        if i >= warm {
            samples.push(t.elapsed());
        }
    }
    let all = etcd_client::DeleteOptions::new().with_prefix();
    tokio::time::timeout(WAIT, client.delete(prefix, Some(all)))
        .await
        .context("deleting the benchmark's prefix took over 30 s")??;
    Ok(stat(samples))
}

async fn measure(
    addr: &str,
    args: &Args,
) -> anyhow::Result<Vec<(&'static str, &'static str, Stat)>> {
    let n = args.iters;
    let s = Session::connect(addr, "groups-bench").await?;
    let warm = n / 10 + 10;
    let mut out = Vec::new();

    let mut samples = Vec::with_capacity(n);
    for i in 0..n + warm {
        let t = Instant::now();
        s.join("bench-jl", None, Vec::new()).await?;
        s.leave("bench-jl").await?;
        if i >= warm {
            samples.push(t.elapsed());
        }
    }
    out.push(("join+leave", "pvm_join_leave", stat(samples)));

    // A group of two so that lookups are not served from a frozen cache.
    let other = Session::connect(addr, "groups-bench-peer").await?;
    s.join("bench-g", None, b"endpoint".to_vec()).await?;
    other.join("bench-g", None, Vec::new()).await?;
    out.push((
        "gettid",
        "pvm_gettid",
        time_n(n, warm, || async { s.gettid("bench-g", 1).await.map(drop) }).await?,
    ));
    out.push((
        "getinst",
        "pvm_getinst",
        time_n(n, warm, || async {
            s.getinst("bench-g", None).await.map(drop)
        })
        .await?,
    ));
    out.push((
        "gsize",
        "pvm_gsize",
        time_n(n, warm, || async { s.gsize("bench-g").await.map(drop) }).await?,
    ));
    drop(other);

    for count in [2u32, 4] {
        let group = format!("bench-barrier-{count}");
        let iters = n / 2;
        s.join(&group, None, Vec::new()).await?;
        let mut members: Vec<Child> = Vec::new();
        for _ in 1..count {
            members.push(
                Command::new(std::env::current_exe()?)
                    .args([
                        "--vmd",
                        addr,
                        "--member",
                        &group,
                        "--count",
                        &count.to_string(),
                    ])
                    .args(["--iters", &(iters + warm).to_string()])
                    .stdin(Stdio::null())
                    .spawn()
                    .context("starting a barrier member")?,
            );
        }
        s.freeze(&group, count, WAIT).await?;
        let mut samples = Vec::with_capacity(iters);
        for i in 0..iters + warm {
            let t = Instant::now();
            s.barrier(&group, Some(count), WAIT).await?;
            if i >= warm {
                samples.push(t.elapsed());
            }
        }
        for mut m in members {
            let st = m.wait()?;
            if !st.success() {
                bail!("a barrier member failed: {st}");
            }
        }
        s.leave(&group).await?;
        let name = if count == 2 {
            "barrier(2)"
        } else {
            "barrier(4)"
        };
        let reference = if count == 2 {
            "pvm_barrier_2"
        } else {
            "pvm_barrier_4"
        };
        out.push((name, reference, stat(samples)));
    }

    // Frozen lookup: the table is cached in the task, as PVM's is.
    s.join("bench-frozen", None, b"endpoint".to_vec()).await?;
    s.freeze("bench-frozen", 1, WAIT).await?;
    let batch = 1000;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        for _ in 0..batch {
            std::hint::black_box(s.gettid("bench-frozen", 0).await?);
        }
        samples.push(t.elapsed() / batch);
    }
    out.push(("frozen lookup", "pvm_frozen_lookup", stat(samples)));
    Ok(out)
}

async fn time_n<F, Fut>(n: usize, warm: usize, mut f: F) -> anyhow::Result<Stat>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), isthmus_client::ClientError>>,
{
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + warm {
        let t = Instant::now();
        f().await?;
        if i >= warm {
            samples.push(t.elapsed());
        }
    }
    Ok(stat(samples))
}

async fn member(addr: &str, group: &str, count: u32, iters: usize) -> anyhow::Result<()> {
    let s = Session::connect(addr, "groups-bench-member").await?;
    s.join(group, None, Vec::new()).await?;
    s.freeze(group, count, WAIT).await?;
    for _ in 0..iters {
        s.barrier(group, Some(count), WAIT).await?;
    }
    s.leave(group).await?;
    Ok(())
}

fn start_vmd(extra: &[&str]) -> anyhow::Result<(Child, String)> {
    let exe = std::env::current_exe()?;
    let vmd = exe.with_file_name("vmd");
    let addr_file = std::env::temp_dir().join(format!("isthmus-bench-{}.addr", std::process::id()));
    let _ = std::fs::remove_file(&addr_file);
    let child = Command::new(&vmd)
        // A runtime directory of its own: no clash with a running vmd.
        .arg("--runtime-dir")
        .arg(std::env::temp_dir().join(format!(
            "isthmus-bench-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        )))
        .arg("--addr-file")
        .arg(&addr_file)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", vmd.display()))?;
    let started = Instant::now();
    loop {
        if let Ok(a) = std::fs::read_to_string(&addr_file) {
            if !a.is_empty() {
                let _ = std::fs::remove_file(&addr_file);
                return Ok((child, a));
            }
        }
        if started.elapsed() > Duration::from_secs(20) {
            bail!("vmd did not start within 20 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs the PVM reference driver and parses its `RESULT name median_us=…
/// p99_us=… n=…` lines. An empty map when PVM cannot run (said on stderr).
fn pvm_reference(iters: usize) -> BTreeMap<String, Stat> {
    let script = repo_root().join("bench/reference/pvm_groups.sh");
    let mut map = BTreeMap::new();
    if !script.exists() {
        eprintln!(
            "groups-bench: {} not found; no PVM reference",
            script.display()
        );
        return map;
    }
    let out = Command::new("bash")
        .arg(&script)
        .arg(iters.to_string())
        .stderr(Stdio::inherit())
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!("groups-bench: PVM reference failed ({})", o.status);
            return map;
        }
        Err(e) => {
            eprintln!("groups-bench: cannot run PVM reference: {e}");
            return map;
        }
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some((name, stat)) = parse_result(line) {
            map.insert(name, stat);
        }
    }
    map
}

fn parse_result(line: &str) -> Option<(String, Stat)> {
    let mut words = line.split_whitespace();
    if words.next()? != "RESULT" {
        return None;
    }
    let name = words.next()?.to_string();
    let (mut median, mut p99, mut n) = (None, None, 0usize);
    for w in words {
        match w.split_once('=')? {
            ("median_us", v) => median = v.parse().ok(),
            ("p99_us", v) => p99 = v.parse().ok(),
            ("n", v) => n = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    Some((
        name,
        Stat {
            median_us: median?,
            p99_us: p99?,
            n,
        },
    ))
}

fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

fn print_table(ours: &[(&str, &str, Stat)], pvm: &BTreeMap<String, Stat>) {
    println!();
    println!(
        "{:<15} {:>12} {:>12} {:>7} | {:>12} {:>12} | {:>13}",
        "operation", "median µs", "p99 µs", "n", "PVM med µs", "PVM p99 µs", "ours/PVM med"
    );
    println!("{}", "-".repeat(96));
    for (name, reference, s) in ours {
        let (pm, pp, ratio) = match pvm.get(*reference) {
            Some(p) => (
                format!("{:.2}", p.median_us),
                format!("{:.2}", p.p99_us),
                format!("{:.2}", s.median_us / p.median_us),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "{:<15} {:>12.2} {:>12.2} {:>7} | {:>12} {:>12} | {:>13}",
            name, s.median_us, s.p99_us, s.n, pm, pp, ratio
        );
    }
}

//! `bridge-bench`: Open MPI ↔ MPICH through the bridge, side by side in the
//! same run with (a) two separately started Open MPI jobs joined by
//! `MPI_Comm_connect/accept` and (b) plain TCP and Unix-socket ping-pong —
//! the floor for a socket path. Prints one table with ratios.
//!
//! Needs the MPICH flavour of `pingpong` (ISTHMUS_MPICH_BIN_DIR, default
//! target/mpich/release); bench/bridge.sh builds everything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Parser;
use isthmus_vmd::daemon::{Daemon, DaemonConfig, Security};

#[derive(Parser)]
struct Args {
    /// Round trips per latency size.
    #[arg(long, default_value_t = 5000)]
    iters: usize,
    /// MiB per bandwidth size.
    #[arg(long, default_value_t = 1024)]
    bw_mib: usize,
    /// Skip the references (only the bridge).
    #[arg(long)]
    no_reference: bool,
}

#[derive(Clone, Copy, Debug)]
enum Value {
    Latency { median_us: f64, p99_us: f64 },
    Bandwidth { mbps: f64 },
}

fn parse(stdout: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for line in stdout.lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("RESULT") {
            continue;
        }
        let Some(name) = w.next() else { continue };
        let kv: BTreeMap<&str, f64> = w
            .filter_map(|x| x.split_once('='))
            .filter_map(|(k, v)| v.parse().ok().map(|v| (k, v)))
            .collect();
        let value = match (kv.get("median_us"), kv.get("p99_us"), kv.get("mbps")) {
            (Some(m), Some(p), _) => Value::Latency {
                median_us: *m,
                p99_us: *p,
            },
            (_, _, Some(b)) => Value::Bandwidth { mbps: *b },
            _ => continue,
        };
        out.insert(name.to_string(), value);
    }
    out
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let ours = std::env::current_exe()?.with_file_name("pingpong");
    let mpich_dir = std::env::var_os("ISTHMUS_MPICH_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/mpich/release"));
    let theirs = mpich_dir.join("pingpong");
    for p in [&ours, &theirs] {
        if !p.exists() {
            bail!(
                "{} not found: run bench/bridge.sh, which builds both flavours",
                p.display()
            );
        }
    }

    // An embedded vmd on a free loopback port.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // An embedded vmd on a Unix socket in a runtime directory of its own.
    let daemon = rt.block_on(Daemon::bind(DaemonConfig {
        listen: None,
        host: "localhost".into(),
        security: Security::in_dir(
            std::env::temp_dir().join(format!("isthmus-bridge-bench-{}", std::process::id())),
        ),
    }))?;
    let addr = daemon.client_addr();
    let halt = daemon.halt_handle();
    let server = std::thread::spawn(move || rt.block_on(daemon.serve(std::future::pending())));

    eprintln!("bridge-bench: Open MPI pingpong <-> MPICH pingpong through the bridge (vmd {addr})");
    let iters = args.iters.to_string();
    let bw = args.bw_mib.to_string();
    let mut mpich = Command::new("mpiexec.mpich")
        .args(["-n", "1", "-genv", "ISTHMUS_VMD", &addr])
        .arg(&theirs)
        .args([
            "--group",
            "bench-mpich",
            "--peer",
            "bench-ompi",
            "--iters",
            &iters,
            "--bw-mib",
            &bw,
        ])
        .stdout(Stdio::null())
        .spawn()
        .context("starting the MPICH job")?;
    let ompi = Command::new("mpirun.openmpi")
        .args(["--bind-to", "none", "-n", "1", "-x", "ISTHMUS_VMD"])
        .arg(&ours)
        .args([
            "--group",
            "bench-ompi",
            "--peer",
            "bench-mpich",
            "--first",
            "--iters",
            &iters,
            "--bw-mib",
            &bw,
        ])
        .env("ISTHMUS_VMD", &addr)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stderr(Stdio::inherit())
        .output()
        .context("running the Open MPI job")?;
    let _ = mpich.wait();
    halt.notify_one();
    let _ = server.join();
    if !ompi.status.success() {
        bail!("the bridge ping-pong failed: {}", ompi.status);
    }
    let bridge = parse(&String::from_utf8_lossy(&ompi.stdout));

    let mut reference = BTreeMap::new();
    if !args.no_reference {
        for (script, extra) in [("ompi_connect_accept.sh", &iters), ("sockets.sh", &iters)] {
            let path = repo_root().join("bench/reference").join(script);
            eprintln!("bridge-bench: reference {script}");
            let out = Command::new("bash")
                .arg(&path)
                .arg(extra)
                .arg(&bw)
                .stderr(Stdio::inherit())
                .output()?;
            if !out.status.success() {
                eprintln!(
                    "bridge-bench: {script} failed ({}); its column stays empty",
                    out.status
                );
            }
            reference.extend(parse(&String::from_utf8_lossy(&out.stdout)));
        }
    }
    print_table(&bridge, &reference);
    let _ = Duration::ZERO;
    Ok(())
}

fn print_table(bridge: &BTreeMap<String, Value>, reference: &BTreeMap<String, Value>) {
    let lat = |m: &BTreeMap<String, Value>, k: &str| match m.get(k) {
        Some(Value::Latency { median_us, p99_us }) => Some((*median_us, *p99_us)),
        _ => None,
    };
    let bw = |m: &BTreeMap<String, Value>, k: &str| match m.get(k) {
        Some(Value::Bandwidth { mbps }) => Some(*mbps),
        _ => None,
    };
    let f = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
    println!();
    println!("one-way latency, µs (median / p99)     ratio = bridge / Open MPI connect-accept (target ≤ 1.0)");
    println!(
        "{:<8} {:>20} {:>20} {:>8} {:>14} {:>14}",
        "size", "bridge OMPI↔MPICH", "OMPI connect/accept", "ratio", "TCP loopback", "Unix socket"
    );
    for (size, sock) in [("0", "1"), ("8", "8"), ("1024", "1024")] {
        let b = lat(bridge, &format!("bridge_lat_{size}"));
        let o = lat(reference, &format!("ompi_lat_{size}"));
        let t = lat(reference, &format!("tcp_lat_{sock}"));
        let u = lat(reference, &format!("unix_lat_{sock}"));
        let pair = |x: Option<(f64, f64)>| {
            x.map(|(m, p)| format!("{m:.2} / {p:.2}"))
                .unwrap_or_else(|| "-".into())
        };
        let ratio = b.zip(o).map(|(b, o)| b.0 / o.0);
        println!(
            "{:<8} {:>20} {:>20} {:>8} {:>14} {:>14}",
            format!("{size} B"),
            pair(b),
            pair(o),
            f(ratio),
            pair(t),
            pair(u)
        );
    }
    println!();
    println!("bandwidth, MB/s (16-message window)     ratio = bridge / Open MPI connect-accept (target ≥ 0.9)");
    println!(
        "(bridge: eager up to {} KiB within credit; larger messages are rendezvous: RTS, CTS once matched, then the payload)",
        isthmus_bridge::DEFAULT_EAGER_LIMIT >> 10
    );
    println!(
        "{:<8} {:>20} {:>20} {:>8} {:>14} {:>14}",
        "size", "bridge OMPI↔MPICH", "OMPI connect/accept", "ratio", "TCP loopback", "Unix socket"
    );
    for (size, label) in [
        ("65536", "64 KiB"),
        ("1048576", "1 MiB"),
        ("4194304", "4 MiB"),
    ] {
        let b = bw(bridge, &format!("bridge_bw_{size}"));
        let o = bw(reference, &format!("ompi_bw_{size}"));
        let ratio = b.zip(o).map(|(b, o)| b / o);
        println!(
            "{:<8} {:>20} {:>20} {:>8} {:>14} {:>14}",
            label,
            f(b),
            f(o),
            f(ratio),
            f(bw(reference, &format!("tcp_bw_{size}"))),
            f(bw(reference, &format!("unix_bw_{size}")))
        );
    }
}

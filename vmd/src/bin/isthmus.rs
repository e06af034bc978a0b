//! `isthmus`: the console, in the spirit of PVM's `pvm` console. Run a single
//! command (`isthmus groups`) or, with no command, read commands line by line
//! from standard input. Every command prints JSON with `--json`.

use std::io::{BufRead, Write};
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use isthmus_proto as pb;
use isthmus_vmd::client::{self, Session};
use pb::vmd_client::VmdClient;
use serde_json::json;
use tokio_stream::StreamExt;

#[derive(Parser, Debug)]
#[command(name = "isthmus", about = "Isthmus console: look at and steer a virtual machine")]
struct Cli {
    /// vmd address (default: $ISTHMUS_VMD or 127.0.0.1:7711).
    #[arg(long, global = true)]
    vmd: Option<String>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the groups.
    #[command(alias = "ls")]
    Groups,
    /// Show a group's members (instance, task, host).
    Members { group: String },
    /// Print events as they happen.
    Watch {
        /// Only these groups (default: all).
        groups: Vec<String>,
        /// First print the current state.
        #[arg(long)]
        current: bool,
        /// Stop after this many events.
        #[arg(long)]
        count: Option<usize>,
        /// Stop after this many seconds.
        #[arg(long)]
        seconds: Option<u64>,
    },
    /// Join a group and stay in it until interrupted (or for --seconds).
    Join {
        group: String,
        #[arg(long)]
        instance: Option<u32>,
        #[arg(long)]
        seconds: Option<u64>,
    },
    /// Stop the daemon.
    Halt,
}

/// Exit codes: 0 ok, 1 the vmd refused or failed, 2 bad usage.
#[tokio::main]
async fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            std::process::exit(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let addr = cli.vmd.clone().unwrap_or_else(client::default_addr);
    let result = match cli.command {
        Some(cmd) => run(&addr, cli.json, cmd).await,
        None => interactive(&addr, cli.json).await,
    };
    if let Err(e) = result {
        eprintln!("isthmus: {e:#}");
        std::process::exit(1);
    }
}

async fn interactive(addr: &str, json: bool) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    loop {
        print!("isthmus> ");
        std::io::stdout().flush().ok();
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            return Ok(());
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        if matches!(words[0], "quit" | "exit") {
            return Ok(());
        }
        let parsed = Cli::try_parse_from(std::iter::once("isthmus").chain(words.iter().copied()));
        match parsed {
            Ok(Cli { command: Some(cmd), json: j, .. }) => {
                let halt = matches!(cmd, Command::Halt);
                if let Err(e) = run(addr, json || j, cmd).await {
                    eprintln!("isthmus: {e:#}");
                }
                if halt {
                    return Ok(());
                }
            }
            Ok(_) => {}
            Err(e) => {
                let _ = e.print();
            }
        }
    }
}

async fn run(addr: &str, json: bool, cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::Groups => {
            let mut c = VmdClient::new(client::channel(addr).await?);
            let list = c.list_groups(pb::ListGroupsRequest {}).await.map_err(status)?.into_inner();
            if json {
                let v: Vec<_> = list
                    .groups
                    .iter()
                    .map(|g| json!({"group": g.group, "size": g.size, "frozen": g.frozen, "broken": g.broken}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!("{:<32} {:>6}  STATE", "GROUP", "SIZE");
                for g in &list.groups {
                    let state = match (g.frozen, g.broken) {
                        (_, true) => "broken",
                        (true, false) => "frozen",
                        _ => "open",
                    };
                    println!("{:<32} {:>6}  {}", g.group, g.size, state);
                }
            }
        }
        Command::Members { group } => {
            let mut c = VmdClient::new(client::channel(addr).await?);
            let t = c.get_group(pb::GroupRef { group }).await.map_err(status)?.into_inner();
            if json {
                println!("{}", serde_json::to_string_pretty(&table_json(&t))?);
            } else {
                let state = if t.broken { "broken" } else if t.frozen { "frozen" } else { "open" };
                println!("group {} ({} members, {})", t.group, t.members.len(), state);
                println!("{:>8}  {:<36}  HOST", "INST", "TASK");
                for m in &t.members {
                    println!("{:>8}  {:<36}  {}", m.instance, m.task, m.host);
                }
            }
        }
        Command::Watch { groups, current, count, seconds } => {
            let mut c = VmdClient::new(client::channel(addr).await?);
            let mut stream =
                c.watch(pb::WatchRequest { groups, current_state: current }).await.map_err(status)?.into_inner();
            let deadline = seconds.map(|s| tokio::time::Instant::now() + Duration::from_secs(s));
            let mut seen = 0usize;
            while count.is_none_or(|n| seen < n) {
                let next = match deadline {
                    Some(d) => match tokio::time::timeout_at(d, stream.next()).await {
                        Ok(n) => n,
                        Err(_) => break,
                    },
                    None => stream.next().await,
                };
                let Some(ev) = next else { break };
                print_event(&ev.map_err(status)?, json);
                std::io::stdout().flush().ok();
                seen += 1;
            }
        }
        Command::Join { group, instance, seconds } => {
            let s = Session::connect(addr, "isthmus-console").await?;
            let inst = s.join(&group, instance, Vec::new()).await?;
            if json {
                println!("{}", json!({"group": group, "instance": inst, "task": s.task()}));
            } else {
                println!("joined {group} as instance {inst} (task {})", s.task());
            }
            std::io::stdout().flush().ok();
            match seconds {
                Some(secs) => tokio::time::sleep(Duration::from_secs(secs)).await,
                None => {
                    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
                }
            }
            s.leave(&group).await?;
        }
        Command::Halt => {
            let mut c = VmdClient::new(client::channel(addr).await?);
            c.halt(pb::HaltRequest {}).await.map_err(status)?;
            if json {
                println!("{}", json!({"halted": addr}));
            } else {
                println!("vmd at {addr} halting");
            }
        }
    }
    Ok(())
}

fn status(s: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("{} ({:?})", s.message(), s.code())
}

fn table_json(t: &pb::GroupTable) -> serde_json::Value {
    json!({
        "group": t.group, "generation": t.generation, "frozen": t.frozen, "broken": t.broken,
        "members": t.members.iter().map(|m| json!({"instance": m.instance, "task": m.task, "host": m.host})).collect::<Vec<_>>(),
    })
}

fn print_event(ev: &pb::Event, json: bool) {
    let Some(pb::event::Kind::Group(g)) = &ev.kind else { return };
    let kind = pb::GroupEventKind::try_from(g.kind).map(|k| k.as_str_name()).unwrap_or("UNKNOWN");
    if json {
        println!(
            "{}",
            json!({"seq": ev.seq, "event": kind, "group": g.group, "instance": g.instance,
                   "task": g.task, "size": g.size, "group_broken": g.group_broken})
        );
    } else {
        let broken = if g.group_broken { " (group broken)" } else { "" };
        println!("{:>6} {:<12} {} inst={} task={} size={}{}", ev.seq, kind, g.group, g.instance, g.task, g.size, broken);
    }
}


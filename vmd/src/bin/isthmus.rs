//! `isthmus`: the console, in the spirit of PVM's `pvm` console. Run a single
//! command (`isthmus groups`) or, with no command, read commands line by line
//! from standard input. Every command prints JSON with `--json`.

use std::io::{BufRead, Write};
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use isthmus_client::{ClientError, Console, Session};
use isthmus_types::event::{Notification, NotificationKind, WatchEvent, WatchFilter};
use isthmus_types::group::{GroupEvent, GroupEventKind, GroupTable};
use isthmus_types::host::{HostDecl, HostState, HostView};
use isthmus_types::job::{ExitStatus, Job, JobState, OutputStream, Placement, Rank, SpawnSpec};
use serde_json::json;

#[derive(Parser, Debug)]
#[command(
    name = "isthmus",
    about = "Isthmus console: look at and steer a virtual machine"
)]
struct Cli {
    /// vmd address (default: $ISTHMUS_VMD, else the Unix socket in the
    /// runtime directory: $XDG_RUNTIME_DIR/isthmus or /tmp/isthmus-<uid>).
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
    /// Print events as they happen (groups, hosts, task and job exits).
    Watch {
        /// Only these groups' group events (default: all).
        groups: Vec<String>,
        /// Only these kinds, comma-separated: group, host_added, host_deleted,
        /// host_failed, task_exit, job_exit, task_output (default: all but task_output).
        #[arg(long, value_delimiter = ',')]
        kinds: Vec<String>,
        /// Only this job's task and job events (repeatable).
        #[arg(long = "job")]
        jobs: Vec<u64>,
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
    /// The group is yours if you create it; `user/group` joins another
    /// user's group, if they allowed you.
    Join {
        group: String,
        #[arg(long)]
        instance: Option<u32>,
        #[arg(long)]
        seconds: Option<u64>,
        /// Other users (names or uids) who may join and reach your group as
        /// `you/group` (repeatable, or comma-separated).
        #[arg(long, value_delimiter = ',')]
        allow: Vec<String>,
    },
    /// Stop the daemon.
    Halt,
    /// List the virtual machine's hosts (slots, implementations, state).
    #[command(alias = "hosts")]
    Conf,
    /// Declare a host; it is up once a vmd joins under its name.
    Add {
        name: String,
        #[arg(long, default_value_t = 1)]
        slots: u32,
        /// Implementations it may run, comma-separated (default: any).
        #[arg(long, value_delimiter = ',')]
        offers: Vec<String>,
        /// Its vmd's address, if known.
        #[arg(long, default_value = "")]
        addr: String,
    },
    /// Delete a host: its jobs are killed and its vmd stops.
    Delete { name: String },
    /// Check that a host's vmd responds.
    Check { name: String },
    /// Start a job through the resource manager.
    Spawn {
        /// Number of ranks.
        #[arg(long, short = 'n', default_value_t = 1)]
        np: u32,
        /// Implementation: openmpi, mpich, exec, or any other a tasker registered.
        #[arg(long = "impl", default_value = "exec")]
        implementation: String,
        /// Run on this host.
        #[arg(long, conflicts_with = "most_free")]
        host: Option<String>,
        /// Run on the host with the most free slots.
        #[arg(long)]
        most_free: bool,
        /// Extra environment for every rank, NAME=VALUE (repeatable).
        #[arg(long = "env", short = 'e')]
        env: Vec<String>,
        /// Wait for the job to end, printing its output; exit 1 unless it exited with 0.
        #[arg(long)]
        wait: bool,
        program: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// List jobs (state, implementation, host, ranks).
    Ps {
        /// Also jobs that ended recently.
        #[arg(long, short = 'a')]
        all: bool,
        /// Every user's jobs (administrators only); default: your own.
        #[arg(long)]
        every_user: bool,
    },
    /// Kill every rank of a job.
    Kill { job: u64 },
    /// Certificates of the virtual machine (operator only: reads the CA key
    /// in the state directory; talks to no vmd).
    Cert {
        #[command(subcommand)]
        action: CertAction,
    },
    /// Run a coupling: start every component a TOML file names through the
    /// resource manager (and a vmd with its taskers if none answers), show
    /// their status and output, stop everything on Ctrl-C or the first
    /// failure; exit with the first failing component's status.
    ///
    /// Or `mpirun`'s MPMD form, `isthmus run -n 2 --impl openmpi ./a : -n 2
    /// --impl mpich ./b`: the parts as one MPI_COMM_WORLD (each part's
    /// options before its program: -n, --impl, --host, -x NAME=VALUE,
    /// --wdir).
    Run {
        /// Print the placement (component, implementation, ranks, host)
        /// and start nothing.
        #[arg(long)]
        dry_run: bool,
        /// The coupling file (`[[component]]` tables, `[run]`), or the parts.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        what: Vec<String>,
    },
    /// What `isthmus run` starts on each other node of a Slurm allocation
    /// (a job step): this node's vmd on the run's etcd and its taskers,
    /// until SIGTERM.
    #[command(hide = true)]
    Node {
        /// The etcd the allocation's vmds share.
        #[arg(long)]
        etcd: String,
        /// The run's key prefix in it.
        #[arg(long)]
        etcd_prefix: String,
        /// This node's name in the virtual machine.
        #[arg(long)]
        host_name: String,
        /// An implementation to start a tasker for (repeatable).
        #[arg(long = "impl")]
        impls: Vec<String>,
    },
    /// Send a signal (name or number) to a job's ranks.
    Sig {
        signal: String,
        job: u64,
        /// Only this rank.
        #[arg(long)]
        rank: Option<u32>,
    },
}

#[derive(Subcommand, Debug)]
enum CertAction {
    /// Issue a host certificate for another host's vmd: writes ca.pem,
    /// host.pem and host.key into DIR, to be used as that vmd's --state-dir.
    Issue {
        /// The host's name in the virtual machine (its vmd's --host-name).
        #[arg(long)]
        host: String,
        /// Where to write the files (created 0700; the key 0600).
        #[arg(long)]
        out: std::path::PathBuf,
        /// Extra names or addresses for the certificate (repeatable).
        #[arg(long = "name")]
        names: Vec<String>,
        /// The CA's state directory (default: the vmd's default).
        #[arg(long)]
        state_dir: Option<std::path::PathBuf>,
    },
}

/// Issues a host certificate from the CA in the state directory (created
/// there if it has none yet, as the vmd would on its first TLS start).
fn cert(action: CertAction) -> anyhow::Result<()> {
    use isthmus_vmd::auth::ca;
    match action {
        CertAction::Issue {
            host,
            out,
            names,
            state_dir,
        } => {
            let dir = state_dir.unwrap_or_else(ca::default_state_dir);
            let vm_ca = ca::VmCa::load_or_create(&dir)?;
            vm_ca.issue_into(&host, &names, &out)?;
            println!(
                "host certificate for {host} in {} (use it as that vmd's --state-dir)",
                out.display()
            );
            Ok(())
        }
    }
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
    let addr = cli.vmd.clone().unwrap_or_else(isthmus_client::default_addr);
    let result = match cli.command {
        Some(Command::Run { what, dry_run }) => {
            std::process::exit(run_command(&addr, &what, dry_run).await)
        }
        Some(Command::Node {
            etcd,
            etcd_prefix,
            host_name,
            impls,
        }) => {
            let shared = isthmus_vmd::run::allocation::Shared {
                etcd,
                prefix: etcd_prefix,
            };
            std::process::exit(isthmus_vmd::run::node_main(shared, host_name, impls).await)
        }
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
        let Some(&first) = words.first() else {
            continue;
        };
        if matches!(first, "quit" | "exit") {
            return Ok(());
        }
        let parsed = Cli::try_parse_from(std::iter::once("isthmus").chain(words.iter().copied()));
        match parsed {
            Ok(Cli {
                command: Some(cmd),
                json: j,
                ..
            }) => {
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

/// Runs one command: each is a function over the client crate.
async fn run(addr: &str, json: bool, cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::Groups => groups(&connect(addr).await?, json).await,
        Command::Members { group } => members(&connect(addr).await?, json, &group).await,
        Command::Watch {
            groups,
            kinds,
            jobs,
            current,
            count,
            seconds,
        } => {
            let filter = WatchFilter {
                groups,
                current_state: current,
                kinds: kinds
                    .iter()
                    .map(|k| parse_kind(k))
                    .collect::<anyhow::Result<_>>()?,
                jobs,
            };
            watch(&connect(addr).await?, json, filter, count, seconds).await
        }
        Command::Join {
            group,
            instance,
            seconds,
            allow,
        } => join(addr, json, &group, instance, seconds, &allow).await,
        Command::Conf => conf(&connect(addr).await?, json).await,
        Command::Add {
            name,
            slots,
            offers,
            addr: host_addr,
        } => {
            let decl = HostDecl {
                name,
                slots,
                offers,
                addr: host_addr,
                peer_addr: String::new(),
            };
            add(&connect(addr).await?, json, decl).await
        }
        Command::Delete { name } => delete(&connect(addr).await?, json, &name).await,
        Command::Check { name } => check(&connect(addr).await?, json, &name).await,
        Command::Spawn {
            np,
            implementation,
            host,
            most_free,
            env,
            wait,
            program,
            args,
        } => {
            let placement = match (host, most_free) {
                (Some(h), _) => Placement::Host(h),
                (None, true) => Placement::MostFree,
                (None, false) => Placement::Any,
            };
            let mut vars = std::collections::BTreeMap::new();
            for e in env {
                let (k, v) = e
                    .split_once('=')
                    .with_context(|| format!("--env {e:?} is not NAME=VALUE"))?;
                vars.insert(k.to_string(), v.to_string());
            }
            let cwd = std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            let spec = SpawnSpec {
                program,
                args,
                np,
                implementation,
                placement,
                env: vars,
                cwd,
                // Not sent: the vmd sets it from this caller's identity.
                owner: u32::MAX,
            };
            spawn(&connect(addr).await?, json, spec, wait).await
        }
        Command::Ps { all, every_user } => ps(&connect(addr).await?, json, all, every_user).await,
        Command::Kill { job } => kill(&connect(addr).await?, json, job).await,
        Command::Sig { signal, job, rank } => {
            let signal = parse_signal(&signal)?;
            sig(&connect(addr).await?, json, signal, job, rank).await
        }
        Command::Halt => halt(&connect(addr).await?, json, addr).await,
        Command::Cert { action } => cert(action),
        Command::Node { .. } => {
            anyhow::bail!("`node` is for `isthmus run` to start, not interactive")
        }
        Command::Run { what, dry_run } => {
            let code = run_command(addr, &what, dry_run).await;
            if code != 0 {
                anyhow::bail!("run {} ended with exit code {code}", what.join(" "));
            }
            Ok(())
        }
    }
}

/// `isthmus run FILE` or its MPMD form (more than one word); the exit code.
async fn run_command(addr: &str, what: &[String], dry_run: bool) -> i32 {
    match what {
        [file] if !file.starts_with('-') => {
            isthmus_vmd::run::main(addr, std::path::Path::new(file), dry_run).await
        }
        parts => isthmus_vmd::run::main_mpmd(addr, parts, dry_run).await,
    }
}

async fn connect(addr: &str) -> anyhow::Result<Console> {
    Ok(Console::connect(addr).await?)
}

async fn groups(vmd: &Console, json: bool) -> anyhow::Result<()> {
    let list = vmd.groups().await.map_err(refused)?;
    if json {
        let v: Vec<_> = list
            .iter()
            .map(|g| json!({"group": g.name, "size": g.size, "frozen": g.frozen, "broken": g.broken}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{:<32} {:>6}  STATE", "GROUP", "SIZE");
        for g in &list {
            let state = match (g.frozen, g.broken) {
                (_, true) => "broken",
                (true, false) => "frozen",
                _ => "open",
            };
            println!("{:<32} {:>6}  {}", g.name, g.size, state);
        }
    }
    Ok(())
}

async fn members(vmd: &Console, json: bool, group: &str) -> anyhow::Result<()> {
    let t = vmd.group(group).await.map_err(refused)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&table_json(&t))?);
    } else {
        let state = if t.broken {
            "broken"
        } else if t.frozen {
            "frozen"
        } else {
            "open"
        };
        println!("group {} ({} members, {})", t.name, t.members.len(), state);
        println!("{:>8}  {:<36}  HOST", "INST", "TASK");
        for m in &t.members {
            println!("{:>8}  {:<36}  {}", m.instance, m.task, m.host);
        }
    }
    Ok(())
}

async fn watch(
    vmd: &Console,
    json: bool,
    filter: WatchFilter,
    count: Option<usize>,
    seconds: Option<u64>,
) -> anyhow::Result<()> {
    let mut events = vmd.watch(filter).await.map_err(refused)?;
    let deadline = seconds.map(|s| tokio::time::Instant::now() + Duration::from_secs(s));
    let mut seen = 0usize;
    while count.is_none_or(|n| seen < n) {
        let next = match deadline {
            Some(d) => match tokio::time::timeout_at(d, events.next()).await {
                Ok(n) => n,
                Err(_) => break,
            },
            None => events.next().await,
        };
        let Some(ev) = next.map_err(refused)? else {
            break;
        };
        print_event(&ev, json);
        std::io::stdout().flush().ok();
        seen += 1;
    }
    Ok(())
}

async fn join(
    addr: &str,
    json: bool,
    group: &str,
    instance: Option<u32>,
    seconds: Option<u64>,
    allow: &[String],
) -> anyhow::Result<()> {
    let s = Session::connect(addr, "isthmus-console").await?;
    let inst = s.join_allowing(group, instance, Vec::new(), allow).await?;
    if json {
        println!(
            "{}",
            json!({"group": group, "instance": inst, "task": s.task()})
        );
    } else {
        println!("joined {group} as instance {inst} (task {})", s.task());
    }
    std::io::stdout().flush().ok();
    match seconds {
        Some(secs) => tokio::time::sleep(Duration::from_secs(secs)).await,
        None => {
            tokio::signal::ctrl_c()
                .await
                .context("waiting for Ctrl-C")?;
        }
    }
    s.leave(group).await?;
    Ok(())
}

async fn conf(vmd: &Console, json: bool) -> anyhow::Result<()> {
    let hosts = vmd.hosts().await.map_err(refused)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&hosts.iter().map(host_json).collect::<Vec<_>>())?
        );
    } else {
        println!(
            "{:<16} {:<8} {:>5} {:>5} {:<22} {:<24} OFFERS",
            "HOST", "STATE", "SLOTS", "USED", "ADDR", "TASKERS"
        );
        for h in &hosts {
            let offers = if h.offers.is_empty() {
                "any".to_string()
            } else {
                h.offers.join(",")
            };
            let mark = if h.answering { "*" } else { "" };
            println!(
                "{:<16} {:<8} {:>5} {:>5} {:<22} {:<24} {}",
                format!("{}{mark}", h.name),
                host_state(h.state),
                h.slots,
                h.slots_used,
                h.addr,
                h.taskers.join(","),
                offers
            );
        }
    }
    Ok(())
}

async fn add(vmd: &Console, json: bool, decl: HostDecl) -> anyhow::Result<()> {
    let h = vmd.add_host(decl).await.map_err(refused)?;
    if json {
        println!("{}", host_json(&h));
    } else {
        println!(
            "host {} added ({}, {} slots)",
            h.name,
            host_state(h.state),
            h.slots
        );
    }
    Ok(())
}

async fn delete(vmd: &Console, json: bool, name: &str) -> anyhow::Result<()> {
    let jobs_lost = vmd.delete_host(name).await.map_err(refused)?;
    if json {
        println!("{}", json!({"deleted": name, "jobs_lost": jobs_lost}));
    } else {
        println!("host {name} deleted ({jobs_lost} jobs lost)");
    }
    Ok(())
}

async fn check(vmd: &Console, json: bool, name: &str) -> anyhow::Result<()> {
    let r = vmd.check_host(name).await.map_err(refused)?;
    if json {
        println!(
            "{}",
            json!({"host": r.name, "responding": r.responding, "detail": r.detail, "round_trip_us": r.round_trip.as_micros()})
        );
    } else {
        let how = if r.responding {
            "responding"
        } else {
            "NOT responding"
        };
        println!(
            "{} {how}: {} ({} us)",
            r.name,
            r.detail,
            r.round_trip.as_micros()
        );
    }
    if !r.responding {
        anyhow::bail!("host {} does not respond", r.name);
    }
    Ok(())
}

async fn spawn(vmd: &Console, json: bool, spec: SpawnSpec, wait: bool) -> anyhow::Result<()> {
    // Subscribe before spawning so that not even a fast job's end is missed.
    let events = if wait {
        let filter = WatchFilter::kinds([
            NotificationKind::TaskOutput,
            NotificationKind::TaskExit,
            NotificationKind::JobExit,
        ]);
        Some(vmd.watch(filter).await.map_err(refused)?)
    } else {
        None
    };
    let r = vmd.spawn(spec).await.map_err(refused)?;
    if json {
        println!("{}", json!({"job": r.job, "host": r.host}));
    } else {
        println!("job {} started on {}", r.job, r.host);
    }
    std::io::stdout().flush().ok();
    let Some(mut events) = events else {
        return Ok(());
    };
    while let Some(ev) = events.next().await.map_err(refused)? {
        if !matches!(
            ev.event,
            WatchEvent::Output { .. } | WatchEvent::TaskExit { .. } | WatchEvent::JobExit { .. }
        ) || ev.event.job() != Some(r.job)
        {
            continue;
        }
        print_event(&ev, json);
        std::io::stdout().flush().ok();
        if let WatchEvent::JobExit {
            job, state, reason, ..
        } = &ev.event
        {
            if *state != JobState::Exited {
                anyhow::bail!("job {job} {}: {reason}", job_state(*state));
            }
            return Ok(());
        }
    }
    anyhow::bail!("the vmd closed the event stream before job {} ended", r.job)
}

async fn ps(vmd: &Console, json: bool, all: bool, every_user: bool) -> anyhow::Result<()> {
    let jobs = vmd.jobs_of(all, every_user).await.map_err(refused)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&jobs.iter().map(job_json).collect::<Vec<_>>())?
        );
        return Ok(());
    }
    println!(
        "{:>5} {:<9} {:<9} {:<12} {:>4} {:<22} {:<10} COMMAND",
        "JOB", "STATE", "IMPL", "HOST", "NP", "RANKS(run/exit)", "EXIT"
    );
    for j in &jobs {
        let running = j.ranks.iter().filter(|r| r.is_running()).count();
        let exited = j.ranks.iter().filter(|r| r.exit.is_some()).count();
        let exit = j.exit.map(exit_text).unwrap_or_default();
        println!(
            "{:>5} {:<9} {:<9} {:<12} {:>4} {:<22} {:<10} {} {}",
            j.id,
            job_state(j.state),
            j.implementation,
            j.host,
            j.np,
            format!("{running}/{exited}"),
            exit,
            j.program,
            j.args.join(" ")
        );
    }
    Ok(())
}

async fn kill(vmd: &Console, json: bool, job: u64) -> anyhow::Result<()> {
    vmd.kill(job).await.map_err(refused)?;
    if json {
        println!("{}", json!({"killed": job}));
    } else {
        println!("job {job} killed");
    }
    Ok(())
}

async fn sig(
    vmd: &Console,
    json: bool,
    signal: i32,
    job: u64,
    rank: Option<u32>,
) -> anyhow::Result<()> {
    let delivered_to = vmd.signal(job, signal, rank).await.map_err(refused)?;
    if json {
        println!(
            "{}",
            json!({"job": job, "signal": signal, "delivered_to": delivered_to})
        );
    } else {
        println!("signal {signal} sent to job {job} ({delivered_to} running ranks)");
    }
    Ok(())
}

async fn halt(vmd: &Console, json: bool, addr: &str) -> anyhow::Result<()> {
    vmd.halt().await.map_err(refused)?;
    if json {
        println!("{}", json!({"halted": addr}));
    } else {
        println!("vmd at {addr} halting");
    }
    Ok(())
}

/// The vmd's refusal with its kind, as the console prints it.
fn refused(e: ClientError) -> anyhow::Error {
    anyhow::anyhow!("{} ({:?})", e.message(), e.kind())
}

fn table_json(t: &GroupTable) -> serde_json::Value {
    json!({
        "group": t.name, "generation": t.generation, "frozen": t.frozen, "broken": t.broken,
        "members": t.members.iter().map(|m| json!({"instance": m.instance, "task": m.task, "host": m.host})).collect::<Vec<_>>(),
    })
}

/// Usage errors found after parsing exit with 2, like clap's own.
fn usage(msg: String) -> anyhow::Error {
    eprintln!("isthmus: {msg}");
    std::process::exit(2);
}

fn parse_kind(k: &str) -> anyhow::Result<NotificationKind> {
    k.parse::<NotificationKind>()
        .map_err(|e| usage(e.to_string()))
}

fn parse_signal(s: &str) -> anyhow::Result<i32> {
    if let Ok(n) = s.parse::<i32>() {
        return Ok(n);
    }
    let name = s.trim().to_ascii_uppercase();
    let name = name.strip_prefix("SIG").unwrap_or(&name);
    let n = match name {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "ABRT" => 6,
        "KILL" => 9,
        "USR1" => 10,
        "SEGV" => 11,
        "USR2" => 12,
        "PIPE" => 13,
        "ALRM" => 14,
        "TERM" => 15,
        "CONT" => 18,
        "STOP" => 19,
        "TSTP" => 20,
        _ => {
            return Err(usage(format!(
                "unknown signal {s:?} (a number, or HUP, INT, KILL, TERM, USR1, …)"
            )))
        }
    };
    Ok(n)
}

fn host_state(s: HostState) -> &'static str {
    match s {
        HostState::Up => "up",
        HostState::Waiting => "waiting",
    }
}

fn job_state(s: JobState) -> &'static str {
    match s {
        JobState::Starting => "starting",
        JobState::Running => "running",
        JobState::Exited => "exited",
        JobState::Failed => "failed",
        JobState::Killed => "killed",
        JobState::Lost => "lost",
    }
}

/// A rank's state by the wire's names (the `--json` output shows them).
fn rank_state(r: &Rank) -> &'static str {
    match (r.pid, r.exit) {
        (_, Some(_)) => "RANK_EXITED",
        (Some(_), None) => "RANK_RUNNING",
        (None, None) => "RANK_PENDING",
    }
}

fn exit_text(e: ExitStatus) -> String {
    match e {
        ExitStatus::Code(c) => format!("code {c}"),
        ExitStatus::Signal(s) => format!("signal {s}"),
    }
}

fn exit_json(e: Option<ExitStatus>) -> serde_json::Value {
    match e {
        Some(ExitStatus::Code(c)) => json!({"code": c}),
        Some(ExitStatus::Signal(s)) => json!({"signal": s}),
        None => serde_json::Value::Null,
    }
}

fn host_json(h: &HostView) -> serde_json::Value {
    json!({"name": h.name, "addr": h.addr, "peer_addr": h.peer_addr, "state": host_state(h.state), "slots": h.slots, "slots_used": h.slots_used,
           "offers": h.offers, "taskers": h.taskers, "local": h.answering, "jobs": h.jobs})
}

fn job_json(j: &Job) -> serde_json::Value {
    json!({"job": j.id, "owner_uid": j.owner, "state": job_state(j.state), "implementation": j.implementation, "host": j.host, "np": j.np,
           "program": j.program, "args": j.args, "exit": exit_json(j.exit), "reason": j.reason,
           "ranks": j.ranks.iter().map(|r| json!({"rank": r.rank, "pid": r.pid.unwrap_or(0),
               "state": rank_state(r), "exit": exit_json(r.exit)})).collect::<Vec<_>>()})
}

fn print_host_event(seq: u64, kind: &str, host: &HostView, reason: &str, json: bool) {
    if json {
        println!(
            "{}",
            json!({"seq": seq, "event": kind, "host": host_json(host), "reason": reason})
        );
    } else {
        println!(
            "{:>6} {:<12} {} {} slots={} {}",
            seq, kind, host.name, host.addr, host.slots, reason
        );
    }
}

fn print_event(ev: &Notification, json: bool) {
    let seq = ev.seq;
    match &ev.event {
        WatchEvent::Group(g) => print_group_event(seq, g, json),
        WatchEvent::HostAdded(h) => print_host_event(seq, "HOST_ADDED", h, "", json),
        WatchEvent::HostDeleted { host, reason } => {
            print_host_event(seq, "HOST_DELETED", host, reason, json)
        }
        WatchEvent::HostFailed { host, reason } => {
            print_host_event(seq, "HOST_FAILED", host, reason, json)
        }
        WatchEvent::TaskExit {
            job,
            rank,
            exit,
            host,
        } => {
            if json {
                println!(
                    "{}",
                    json!({"seq": seq, "event": "TASK_EXIT", "job": job, "rank": rank, "exit": exit_json(Some(*exit)), "host": host})
                );
            } else {
                let rank = rank.map(|r| r.to_string()).unwrap_or_else(|| "?".into());
                println!(
                    "{:>6} {:<12} job={} rank={} {}",
                    seq,
                    "TASK_EXIT",
                    job,
                    rank,
                    exit_text(*exit)
                );
            }
        }
        WatchEvent::JobExit {
            job,
            state,
            exit,
            reason,
            host,
        } => {
            if json {
                println!(
                    "{}",
                    json!({"seq": seq, "event": "JOB_EXIT", "job": job, "state": job_state(*state), "exit": exit_json(*exit), "reason": reason, "host": host})
                );
            } else {
                println!(
                    "{:>6} {:<12} job={} {} {} {}",
                    seq,
                    "JOB_EXIT",
                    job,
                    job_state(*state),
                    exit.map(exit_text).unwrap_or_default(),
                    reason
                );
            }
        }
        WatchEvent::Output {
            job,
            rank,
            stream,
            line,
        } => {
            let stream = match stream {
                OutputStream::Stdout => "stdout",
                OutputStream::Stderr => "stderr",
            };
            if json {
                println!(
                    "{}",
                    json!({"seq": seq, "event": "TASK_OUTPUT", "job": job, "rank": rank, "stream": stream, "line": line})
                );
            } else {
                let rank = rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into());
                println!("[{job}:{rank}] {line}");
            }
        }
        WatchEvent::Job(j) => {
            if json {
                let mut v = job_json(j);
                if let Some(o) = v.as_object_mut() {
                    o.insert("event".into(), json!("JOB"));
                    o.insert("seq".into(), json!(seq));
                }
                println!("{v}");
            } else {
                println!(
                    "{:>6} {:<12} job={} {} {} on {} np={}",
                    seq,
                    "JOB",
                    j.id,
                    job_state(j.state),
                    j.program,
                    j.host,
                    j.np
                );
            }
        }
        WatchEvent::Synced => {
            if json {
                println!("{}", json!({"seq": seq, "event": "SYNCED"}));
            } else {
                println!("{seq:>6} SYNCED");
            }
        }
    }
}

/// A group event's kind by the wire's names (the output shows them).
fn group_event_kind(k: GroupEventKind) -> &'static str {
    match k {
        GroupEventKind::Joined => "JOINED",
        GroupEventKind::Left => "LEFT",
        GroupEventKind::Frozen => "FROZEN",
        GroupEventKind::Destroyed => "DESTROYED",
        GroupEventKind::MemberDied => "MEMBER_DIED",
    }
}

fn print_group_event(seq: u64, g: &GroupEvent, json: bool) {
    let kind = group_event_kind(g.kind);
    // Events about the group as a whole name no member: 0 and "" as before.
    let (instance, task) = g
        .member
        .as_ref()
        .map_or((0, ""), |m| (m.instance, m.task.as_str()));
    if json {
        println!(
            "{}",
            json!({"seq": seq, "event": kind, "group": g.group, "instance": instance,
                   "task": task, "size": g.size, "group_broken": g.group_broken})
        );
    } else {
        let broken = if g.group_broken {
            " (group broken)"
        } else {
            ""
        };
        println!(
            "{:>6} {:<12} {} inst={} task={} size={}{}",
            seq, kind, g.group, instance, task, g.size, broken
        );
    }
}

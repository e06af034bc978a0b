//! `isthmus run FILE`: one file, one command for a coupled run. The file
//! ([`spec`]) names the components; the run starts a vmd and its taskers
//! if none answers ([`embedded`]), starts every component through the
//! resource manager and follows them to the end ([`supervise`]).
//! `--dry-run` prints the placement and starts nothing. Inside a Slurm
//! allocation of several nodes the embedded vmd spreads over them
//! ([`allocation`]); `isthmus node` is what each other node runs.
//!
//! Exit codes: the first failing component's (a signal `s`: 128 + s), or
//! 0; 2 for a bad file; 1 when a component could not be started or the
//! vmd failed us; 130 after Ctrl-C; 124 when `[run] timeout` passed.

pub mod allocation;
pub mod detect;
pub mod embedded;
pub mod mpmd;
pub mod spec;
pub mod supervise;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use isthmus_client::Console;

use spec::{Coupling, Impl};
use supervise::{Interrupts, Planned, EXIT_FAILED};

/// Exit code of a bad file (as the console's other usage errors).
pub const EXIT_USAGE: i32 = 2;

/// How long the configured vmd may take to answer before the run starts
/// an embedded one.
const PROBE: Duration = Duration::from_secs(3);

/// Runs the coupling in `file` against the vmd at `addr` (or an embedded
/// one); returns the exit code.
pub async fn main(addr: &str, file: &Path, dry_run: bool) -> i32 {
    let coupling = match spec::load(file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("isthmus: {e}");
            return EXIT_USAGE;
        }
    };
    let plan = match plan(&coupling, file) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("isthmus: {e}");
            return EXIT_USAGE;
        }
    };
    run_plan(addr, &coupling, plan, dry_run).await
}

/// `isthmus run -n N [--impl I] PROGRAM ARGS : -n M ...` (`mpirun`'s MPMD
/// form): the parts as one `MPI_COMM_WORLD` ([`mpmd`]); returns the exit
/// code.
pub async fn main_mpmd(addr: &str, words: &[String], dry_run: bool) -> i32 {
    let coupling = match mpmd::parse(words) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("isthmus run: {e}");
            return EXIT_USAGE;
        }
    };
    let mut plan = match plan(&coupling, Path::new("the command line")) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("isthmus: {e}");
            return EXIT_USAGE;
        }
    };
    mpmd::number_world_ranks(&mut plan);
    run_plan(addr, &coupling, plan, dry_run).await
}

/// Runs a planned coupling (its `[run]` settings from `coupling`).
async fn run_plan(addr: &str, coupling: &Coupling, plan: Vec<Planned>, dry_run: bool) -> i32 {
    if dry_run {
        print_placement(&plan);
        return 0;
    }
    // Before anything starts, so that a Ctrl-C from here on stops it all.
    let mut interrupts = match Interrupts::install() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("isthmus: installing the Ctrl-C handler: {e}");
            return EXIT_FAILED;
        }
    };
    let (console, embedded) = match probe(addr).await {
        Ok(c) => (c, None),
        Err(why) => {
            let impls: BTreeSet<Impl> = plan.iter().map(|p| p.implementation).collect();
            let ranks: u32 = plan.iter().map(|p| p.component.np).sum();
            let cpus = std::thread::available_parallelism()
                .ok()
                .and_then(|n| u32::try_from(n.get()).ok())
                .unwrap_or(1);
            println!("== no vmd at {addr} ({why}): starting an embedded one");
            // Inside a Slurm allocation the vmd takes its hosts and slots
            // from it (and its taskers' launchers use it); else this host
            // gets a slot per rank, at least one per CPU.
            let slots = match std::env::var(isthmus_rm::slurm::JOB_ID) {
                Ok(job) if !job.is_empty() => {
                    println!("== inside Slurm job {job}: hosts and slots from its allocation");
                    None
                }
                _ => Some(ranks.max(cpus)),
            };
            let role = match first_of_allocation() {
                Ok(role) => role,
                Err(e) => {
                    eprintln!("isthmus: {e}");
                    return EXIT_FAILED;
                }
            };
            let e = match embedded::Embedded::start(&impls, slots, role).await {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("isthmus: {e}");
                    return EXIT_FAILED;
                }
            };
            let pids: Vec<String> = e.pids().iter().map(u32::to_string).collect();
            println!("== embedded vmd at {} (pids {})", e.addr, pids.join(" "));
            match Console::connect(&e.addr).await {
                Ok(c) => (c, Some(e)),
                Err(err) => {
                    eprintln!("isthmus: connecting to the embedded vmd: {err}");
                    e.stop().await;
                    return EXIT_FAILED;
                }
            }
        }
    };
    let code = supervise::supervise(
        &console,
        &plan,
        coupling.on_failure,
        coupling.timeout,
        &mut interrupts,
    )
    .await;
    if let Some(e) = embedded {
        e.stop().await;
    }
    code
}

/// This run's role inside an allocation of several nodes (the first: an
/// etcd on this node's address and the others started), else alone.
fn first_of_allocation() -> Result<embedded::Role, allocation::AllocationError> {
    let Some((nodes, this)) = allocation::several_nodes()? else {
        return Ok(embedded::Role::Alone);
    };
    let addr = allocation::node_address(&this)?;
    let job = std::env::var(isthmus_rm::slurm::JOB_ID).unwrap_or_default();
    println!(
        "== {} nodes ({}): an etcd on {this} at {addr}, the others started by srun",
        nodes.len(),
        nodes.join(" ")
    );
    Ok(embedded::Role::First {
        addr,
        prefix: format!("/isthmus/run/{job}-{}", uuid::Uuid::new_v4().simple()),
        nodes,
        this,
    })
}

/// `isthmus node`: what the first node's run starts on each other node of
/// the allocation (a job step): that node's vmd named `host` on the shared
/// etcd and a tasker per implementation of `impls`, until SIGTERM or
/// SIGINT (Slurm ends the step with the allocation, the first vmd's stop
/// with its host) or the vmd's end; returns the exit code.
pub async fn node_main(shared: allocation::Shared, host: String, impls: Vec<String>) -> i32 {
    let mut wanted = BTreeSet::new();
    for name in &impls {
        match Impl::from_name(name) {
            Some(i) => {
                wanted.insert(i);
            }
            None => {
                eprintln!("isthmus node: unknown implementation {name:?}");
                return EXIT_USAGE;
            }
        }
    }
    let mut interrupts = match Interrupts::install() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("isthmus node: installing the signal handlers: {e}");
            return EXIT_FAILED;
        }
    };
    let role = embedded::Role::Started { shared, host };
    let mut node = match embedded::Embedded::start(&wanted, None, role).await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("isthmus node: {e}");
            return EXIT_FAILED;
        }
    };
    println!("== node vmd at {} with its taskers", node.addr);
    loop {
        tokio::select! {
            _ = interrupts.recv() => break,
            _ = tokio::time::sleep(Duration::from_millis(200)) => {
                if let Some(why) = node.vmd_ended() {
                    eprintln!("isthmus node: {why}");
                    break;
                }
            }
        }
    }
    node.stop().await;
    0
}

/// A console on the vmd at `addr`, if one answers within [`PROBE`].
async fn probe(addr: &str) -> Result<Console, String> {
    let console = match tokio::time::timeout(PROBE, Console::connect(addr)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(e.message().to_string()),
        Err(_) => return Err(format!("no answer within {PROBE:?}")),
    };
    match tokio::time::timeout(PROBE, console.hosts()).await {
        Ok(Ok(_)) => Ok(console),
        Ok(Err(e)) => Err(e.message().to_string()),
        Err(_) => Err(format!("no answer within {PROBE:?}")),
    }
}

/// Decides each component's implementation: the file's, else its binary's.
fn plan(coupling: &Coupling, file: &Path) -> Result<Vec<Planned>, String> {
    coupling
        .components
        .iter()
        .map(|c| {
            let (implementation, detected) = match c.implementation {
                Some(i) => (i, false),
                None => {
                    let program = c.program_path().ok_or_else(|| {
                        format!(
                            "{}: component {}: program {} not found (to read its implementation); give `impl`",
                            file.display(), c.name, c.program
                        )
                    })?;
                    let i = detect::implementation_of(&program).map_err(|e| {
                        format!(
                            "{}: component {}: {e}; give `impl`",
                            file.display(),
                            c.name
                        )
                    })?;
                    (i, true)
                }
            };
            Ok(Planned {
                component: c.clone(),
                implementation,
                detected,
                world_offset: None,
            })
        })
        .collect()
}

/// The dry run's table: what would start where.
fn print_placement(plan: &[Planned]) {
    println!(
        "{:<20} {:<9} {:>5}  {:<16} PROGRAM",
        "COMPONENT", "IMPL", "NP", "HOST"
    );
    for p in plan {
        let c = &p.component;
        let implementation = if p.detected {
            format!("{}*", p.implementation)
        } else {
            p.implementation.to_string()
        };
        let mut program = c.program.clone();
        for a in &c.args {
            program.push(' ');
            program.push_str(a);
        }
        println!(
            "{:<20} {:<9} {:>5}  {:<16} {program}",
            c.name,
            implementation,
            c.np,
            c.host.as_deref().unwrap_or("(any)"),
        );
    }
    if plan.iter().any(|p| p.detected) {
        println!("* read from the binary");
    }
}

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
pub mod run_tls;
pub mod spec;
pub mod supervise;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use isthmus_client::Console;
use isthmus_types::host::HostDecl;

use spec::{Coupling, Impl};
use supervise::{Interrupts, Planned, EXIT_FAILED};

/// Exit code of a bad file (as the console's other usage errors).
pub const EXIT_USAGE: i32 = 2;

/// How long the configured vmd may take to answer before the run starts
/// an embedded one.
const PROBE: Duration = Duration::from_secs(3);
/// How often `isthmus node` checks that the run's etcd still accepts
/// connections, and how many checks in a row may fail before it stops.
const ETCD_PROBE: Duration = Duration::from_secs(1);
const ETCD_AWAY: u32 = 3;

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
        // Inside an allocation the hosts are known before anything starts.
        let hosts = match isthmus_rm::slurm::Allocation::from_env() {
            Some(Ok(a)) => a.hosts,
            Some(Err(e)) => {
                eprintln!("isthmus: reading the Slurm allocation: {e}");
                Vec::new()
            }
            None => Vec::new(),
        };
        print_placement(&plan, &hosts);
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
        "== {} nodes ({}): an etcd (TLS) on {this} at {addr}, the others started by srun",
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
/// etcd, its data address the node's, and a tasker per implementation of
/// `impls`, until the vmd ends (the run deletes the host when it ends),
/// the run's etcd is gone (the run ended without deleting it), or SIGTERM
/// or SIGINT (srun forwards them; Slurm ends the step with the
/// allocation); returns the exit code.
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
    let addr = match allocation::node_address(&host) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("isthmus node: {e}");
            return EXIT_FAILED;
        }
    };
    let etcd = allocation::etcd_socket(&shared.etcd);
    let role = embedded::Role::Started { shared, host, addr };
    let mut node = match embedded::Embedded::start(&wanted, None, role).await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("isthmus node: {e}");
            return EXIT_FAILED;
        }
    };
    let pids: Vec<String> = node.pids().iter().map(u32::to_string).collect();
    println!(
        "== node vmd at {} (data address {addr}) with its taskers (pids {})",
        node.addr,
        pids.join(" ")
    );
    let mut etcd_away = 0;
    let mut next_probe = tokio::time::Instant::now();
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
        if tokio::time::Instant::now() < next_probe {
            continue;
        }
        next_probe = tokio::time::Instant::now() + ETCD_PROBE;
        let reached = match etcd {
            Some(a) => tokio::task::spawn_blocking(move || {
                std::net::TcpStream::connect_timeout(&a, ETCD_PROBE).is_ok()
            })
            .await
            .unwrap_or(false),
            None => true,
        };
        etcd_away = if reached { 0 } else { etcd_away + 1 };
        if etcd_away >= ETCD_AWAY {
            eprintln!("isthmus node: the run's etcd is gone: the run ended");
            break;
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

/// Where each component of `plan` goes, as the resource manager places
/// them one after the other on `hosts` (the allocation's nodes and their
/// slots, all with every implementation of the run): a named host, else
/// the one with the most free slots (the first of equals, as placement
/// breaks ties). `None` without hosts (outside an allocation: not known
/// before the vmd answers); `(no room)` for a component that fits
/// nowhere.
fn expected_hosts(plan: &[Planned], hosts: &[HostDecl]) -> Option<Vec<String>> {
    if hosts.is_empty() {
        return None;
    }
    let mut free: Vec<(&str, i64)> = hosts
        .iter()
        .map(|h| (h.name.as_str(), i64::from(h.slots)))
        .collect();
    let placed = plan
        .iter()
        .map(|p| {
            let np = i64::from(p.component.np);
            let chosen = match &p.component.host {
                Some(named) => free.iter_mut().find(|e| e.0 == named.as_str()),
                None => free
                    .iter_mut()
                    .rev()
                    .max_by_key(|(_, f)| *f)
                    .filter(|(_, f)| *f >= np),
            };
            match chosen {
                Some((name, f)) => {
                    *f -= np;
                    let how = if p.component.host.is_some() { "" } else { "+" };
                    format!("{name}{how}")
                }
                None => p
                    .component
                    .host
                    .clone()
                    .unwrap_or_else(|| "(no room)".into()),
            }
        })
        .collect();
    Some(placed)
}

/// The dry run's table: what would start where (`hosts`: the
/// allocation's, if any).
fn print_placement(plan: &[Planned], hosts: &[HostDecl]) {
    let expected = expected_hosts(plan, hosts);
    println!(
        "{:<20} {:<9} {:>5}  {:<16} PROGRAM",
        "COMPONENT", "IMPL", "NP", "HOST"
    );
    for (i, p) in plan.iter().enumerate() {
        let c = &p.component;
        let host = match expected.as_ref().and_then(|e| e.get(i)) {
            Some(h) => h.clone(),
            None => c.host.clone().unwrap_or_else(|| "(most-free)".into()),
        };
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
            c.name, implementation, c.np, host,
        );
    }
    if plan.iter().any(|p| p.detected) {
        println!("* read from the binary");
    }
    if expected.is_some() && plan.iter().any(|p| p.component.host.is_none()) {
        println!("+ the allocation's node with the most free slots then");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(name: &str, np: u32, host: Option<&str>) -> Planned {
        Planned {
            component: spec::Component {
                name: name.into(),
                program: "/bin/true".into(),
                args: Vec::new(),
                np,
                implementation: Some(Impl::Exec),
                host: host.map(str::to_string),
                env: Default::default(),
                cwd: "/".into(),
            },
            implementation: Impl::Exec,
            detected: false,
            world_offset: None,
        }
    }

    fn node(name: &str, slots: u32) -> HostDecl {
        HostDecl {
            name: name.into(),
            slots,
            offers: Vec::new(),
            addr: String::new(),
            peer_addr: String::new(),
        }
    }

    #[test]
    fn a_dry_run_spreads_components_without_a_host_over_the_allocation() {
        let nodes = [node("h1", 3), node("h2", 3)];
        let plan = [
            planned("a", 2, None),
            planned("b", 2, None),
            planned("c", 1, Some("h1")),
            planned("d", 1, None),
            planned("e", 2, None),
        ];
        // a: equals, the first; b: h2 (3 free against 1); c: named, h1
        // full; d: h2's last slot; e: no room left.
        assert_eq!(
            expected_hosts(&plan, &nodes).unwrap(),
            ["h1+", "h2+", "h1", "h2+", "(no room)"]
        );
        assert_eq!(expected_hosts(&plan, &[]), None);
    }
}

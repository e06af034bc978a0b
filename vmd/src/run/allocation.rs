//! `isthmus run` across the nodes of a Slurm allocation: the first node's
//! embedded vmd keeps its tables in an etcd that the run starts on that
//! node's address (the allocation's vmds share nothing else), and starts
//! every other node as a job step (`srun --overlap -w NODE`) running
//! `isthmus node`: that node's vmd, on the same etcd, and its taskers
//! ([`super::embedded`] for one node, again). No gRPC here: names,
//! addresses and commands.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::process::Command;

use isthmus_rm::slurm::Allocation;

use super::spec::Impl;

/// What the nodes of one run share, as the embedded vmds are told it.
#[derive(Clone, Debug)]
pub struct Shared {
    /// The etcd's client URL.
    pub etcd: String,
    /// The run's key prefix in it.
    pub prefix: String,
}

/// Why the run could not be spread over the allocation.
#[derive(Debug, thiserror::Error)]
pub enum AllocationError {
    #[error("reading the Slurm allocation: {0}")]
    Read(String),
    #[error("the Slurm allocation does not name this node (no SLURMD_NODENAME)")]
    NoNode,
    #[error("finding this node's address (scontrol show node {node}): {why}")]
    Address { node: String, why: String },
    #[error("finding this isthmus's own path: {0}")]
    Exe(std::io::Error),
}

/// The allocation of this process's environment when it has more than one
/// node: its nodes' names and this one's; `None` for one node or none.
pub fn several_nodes() -> Result<Option<(Vec<String>, String)>, AllocationError> {
    let Some(read) = Allocation::from_env() else {
        return Ok(None);
    };
    let allocation = read.map_err(|e| AllocationError::Read(e.to_string()))?;
    if allocation.hosts.len() < 2 {
        return Ok(None);
    }
    let this = allocation.this_node.ok_or(AllocationError::NoNode)?;
    Ok(Some((
        allocation.hosts.into_iter().map(|h| h.name).collect(),
        this,
    )))
}

/// The IP address the other nodes reach `node` at: its `NodeAddr` in
/// Slurm's configuration (what slurmctld itself uses), else its name,
/// resolved (etcd listens and a vmd's `--data-addr` is an address, not a
/// name).
pub fn node_address(node: &str) -> Result<IpAddr, AllocationError> {
    let err = |why: String| AllocationError::Address {
        node: node.to_string(),
        why,
    };
    let out = Command::new("scontrol")
        .args(["show", "node", "-o", node])
        .output()
        .map_err(|e| err(e.to_string()))?;
    if !out.status.success() {
        return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let name = node_addr_of(&text).unwrap_or(node);
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok(ip);
    }
    let resolved = (name, 0)
        .to_socket_addrs()
        .map_err(|e| err(format!("resolving {name}: {e}")))?;
    let all: Vec<IpAddr> = resolved.map(|a| a.ip()).collect();
    // IPv4 first: what the MPI launchers' own address selection prefers.
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| err(format!("{name} resolves to no address")))
}

/// `NodeAddr=` of one `scontrol show node -o` line.
fn node_addr_of(line: &str) -> Option<&str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("NodeAddr="))
        .filter(|a| !a.is_empty() && *a != "(null)")
}

/// The first vmd's `--host-start`: a job step on the node (`--overlap`:
/// beside the batch script's) running `isthmus node` with the shared etcd
/// and the run's implementations.
pub fn host_start(shared: &Shared, impls: &[Impl]) -> Result<String, AllocationError> {
    let exe = std::env::current_exe().map_err(AllocationError::Exe)?;
    let mut words = vec![
        "exec srun --overlap --export=ALL --nodes=1 --ntasks=1 -w {host}".to_string(),
        quote(&exe.to_string_lossy()),
        "node --etcd".into(),
        quote(&shared.etcd),
        "--etcd-prefix".into(),
        quote(&shared.prefix),
        "--host-name {host}".into(),
    ];
    for i in impls {
        words.push(format!("--impl {}", i.as_str()));
    }
    Ok(words.join(" "))
}

/// The address and port of an etcd client URL (`https://10.0.0.1:2379`,
/// `http://[::1]:2379/`), if it has an IP address.
pub fn etcd_socket(url: &str) -> Option<SocketAddr> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next()?.parse().ok()
}

/// One word for `sh -c`.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_node_addr_from_scontrol() {
        let line = "NodeName=h2 Arch=x86_64 CoresPerSocket=1 NodeAddr=10.77.3.2 NodeHostName=h2 Version=22.05";
        assert_eq!(node_addr_of(line), Some("10.77.3.2"));
        assert_eq!(node_addr_of("NodeName=h2 NodeAddr=(null)"), None);
        assert_eq!(node_addr_of("NodeName=h2"), None);
    }

    #[test]
    fn the_etcd_socket_is_read_from_its_url() {
        let a: SocketAddr = "10.0.0.1:2379".parse().unwrap();
        assert_eq!(etcd_socket("https://10.0.0.1:2379"), Some(a));
        assert_eq!(etcd_socket("http://10.0.0.1:2379/"), Some(a));
        let v6: SocketAddr = "[::1]:2379".parse().unwrap();
        assert_eq!(etcd_socket("https://[::1]:2379"), Some(v6));
        assert_eq!(etcd_socket("https://etcd.example:2379"), None);
    }

    #[test]
    fn the_host_start_runs_isthmus_node_on_the_shared_etcd() {
        let shared = Shared {
            etcd: "http://10.0.0.1:2379".into(),
            prefix: "/isthmus/run/7".into(),
        };
        let cmd = host_start(&shared, &[Impl::Openmpi, Impl::Mpich]).unwrap();
        assert!(
            cmd.starts_with("exec srun --overlap --export=ALL --nodes=1 --ntasks=1 -w {host} '")
        );
        assert!(cmd.ends_with(
            " node --etcd 'http://10.0.0.1:2379' --etcd-prefix '/isthmus/run/7' --host-name {host} --impl openmpi --impl mpich"
        ));
    }
}

//! Hosts as Linux network namespaces, for tests that need more than one
//! network: [`Hosts::new`]`(n)` creates `n` namespaces
//! (`isthmus-nt<pid>-<seq>-h1` … `-hN`), each with loopback up and one
//! interface `eth0` at `10.77.<k>.<i>/24`, plugged by a veth pair into a
//! Linux bridge that lives in a namespace of its own (`…-sw`). Nothing is
//! added to the root namespace: the hosts reach each other and nothing
//! else, so two harnesses (parallel tests, other users' tests) that happen
//! to pick the same subnet cannot meet. `<k>` still differs between the
//! harnesses of one process, so logs tell them apart.
//!
//! [`Host::command`] runs a program inside a host (`ip netns exec`). On
//! drop — also while a failed test unwinds — every process still inside
//! the harness's namespaces is killed (they can only be the test's own:
//! the namespaces are its own) and the namespaces are deleted, which
//! removes the veth pairs and the bridge with them. Harness namespaces
//! left by a test process that was killed (its pid no longer runs) are
//! deleted by the next [`Hosts::new`].
//!
//! Needs root and `ip` (iproute2); [`Hosts::new`] says so when either is
//! missing. Every `ip` call has a deadline ([`IP_DEADLINE`]).

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long one `ip` command may take before it is killed and the setup fails.
pub const IP_DEADLINE: Duration = Duration::from_secs(20);

/// Every harness namespace's name starts with this, then the pid.
const PREFIX: &str = "isthmus-nt";

static SEQ: AtomicU32 = AtomicU32::new(0);

/// One namespace of a [`Hosts`] harness.
#[derive(Debug, Clone)]
pub struct Host {
    /// The namespace's name (for `ip netns exec`).
    pub netns: String,
    /// Its address on the harness's network.
    pub addr: Ipv4Addr,
}

impl Host {
    /// `program` to be run inside this namespace (`ip netns exec`); add
    /// arguments and environment as to any [`Command`]. `ip` replaces
    /// itself with the program, so the child's pid is the program's.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.netns]).arg(program);
        c
    }
}

/// `n` network namespaces joined by a bridge; removed on drop.
#[derive(Debug)]
pub struct Hosts {
    hosts: Vec<Host>,
    switch: String,
    /// Namespaces created so far (all of them once `new` returned).
    created: Vec<String>,
}

impl Hosts {
    /// `n` hosts for a test, or `None` (the test is skipped, and says so)
    /// when `ISTHMUS_SKIP_NETNS` is set; panics if they cannot be made.
    pub fn for_test(n: usize) -> Option<Hosts> {
        if std::env::var_os("ISTHMUS_SKIP_NETNS").is_some() {
            eprintln!("skipped: ISTHMUS_SKIP_NETNS is set");
            return None;
        }
        match Hosts::new(n) {
            Ok(hosts) => Some(hosts),
            Err(e) => panic!(
                "network namespaces for this test: {e} (run as root, or set ISTHMUS_SKIP_NETNS=1)"
            ),
        }
    }

    /// Creates the namespaces, the bridge, the veth pairs and addresses.
    /// On failure, whatever was created is removed again.
    pub fn new(n: usize) -> Result<Hosts, String> {
        if !(1..=250).contains(&n) {
            return Err(format!("{n} hosts: between 1 and 250"));
        }
        if own_euid() != Some(0) {
            return Err("network namespaces need root".into());
        }
        sweep_stale();
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let base = format!("{PREFIX}{pid}-{seq}");
        // Distinct per harness within a process; across processes the
        // networks are isolated anyway.
        let k = ((pid.wrapping_mul(31).wrapping_add(seq)) % 250 + 1) as u8;
        let mut me = Hosts {
            hosts: (1..=n)
                .map(|i| Host {
                    netns: format!("{base}-h{i}"),
                    addr: Ipv4Addr::new(10, 77, k, i as u8),
                })
                .collect(),
            switch: format!("{base}-sw"),
            created: Vec::new(),
        };
        // On error `me` drops and removes what was created.
        me.build()?;
        Ok(me)
    }

    fn build(&mut self) -> Result<(), String> {
        let sw = self.switch.clone();
        ip(&["netns", "add", &sw])?;
        self.created.push(sw.clone());
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &sw, "link", "set", "br0", "up"])?;
        for (i, h) in self.hosts.clone().iter().enumerate() {
            let port = format!("p{}", i + 1);
            let cidr = format!("{}/24", h.addr);
            ip(&["netns", "add", &h.netns])?;
            self.created.push(h.netns.clone());
            ip(&[
                "-n", &sw, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &h.netns,
            ])?;
            ip(&["-n", &sw, "link", "set", &port, "master", "br0"])?;
            ip(&["-n", &sw, "link", "set", &port, "up"])?;
            ip(&["-n", &h.netns, "link", "set", "lo", "up"])?;
            ip(&["-n", &h.netns, "addr", "add", &cidr, "dev", "eth0"])?;
            ip(&["-n", &h.netns, "link", "set", "eth0", "up"])?;
        }
        Ok(())
    }

    /// Host `i` (0-based).
    pub fn host(&self, i: usize) -> &Host {
        &self.hosts[i]
    }

    /// All hosts, in order.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in self.created.iter().rev() {
            remove(ns);
        }
    }
}

/// Kill every process inside `ns`, then delete it.
fn remove(ns: &str) {
    if let Ok(out) = run(&["netns", "pids", ns]) {
        for pid in out.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            // SAFETY: kill(2) takes plain integers; a pid that already
            // exited makes it fail with ESRCH, nothing else.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    if let Err(e) = run(&["netns", "del", ns]) {
        eprintln!("netns harness: cannot delete {ns}: {e}");
    }
}

/// Delete harness namespaces whose creating process no longer runs.
fn sweep_stale() {
    let Ok(list) = run(&["netns", "list"]) else {
        return;
    };
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !crate::process::alive(pid) {
                remove(name);
            }
        }
    }
}

/// `ip ARGS`, failing with its stderr.
fn ip(args: &[&str]) -> Result<(), String> {
    run(args).map(|_| ())
}

/// `ip ARGS` within [`IP_DEADLINE`]; its stdout on success.
fn run(args: &[&str]) -> Result<String, String> {
    let what = format!("ip {}", args.join(" "));
    let mut child = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{what}: cannot start ip (iproute2 installed?): {e}"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > IP_DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what}: no answer within {IP_DEADLINE:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("{what}: {e}")),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{what}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The effective uid, from /proc (no FFI).
fn own_euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hosts reach each other over their addresses, not the root
    /// namespace's; everything is gone after drop.
    #[test]
    fn hosts_reach_each_other_and_vanish() {
        let Some(hosts) = Hosts::for_test(2) else {
            return;
        };
        let (a, b) = (hosts.host(0).clone(), hosts.host(1).clone());
        assert_ne!(a.addr, b.addr);
        let out = a
            .command("ip")
            .args(["-4", "-o", "addr", "show", "dev", "eth0"])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!("{}/24", a.addr)),
            "{out:?}"
        );
        // A TCP connection from a to b's address carries a line; b's
        // listener is bound to its namespace address only.
        let server = format!(
            "import socket\ns=socket.create_server(('{}',7777))\nprint('ready',flush=True)\n\
             s.settimeout(20)\nc,peer=s.accept()\nprint(peer[0],c.makefile().readline().strip(),flush=True)",
            b.addr
        );
        let mut listener = b
            .command("python3")
            .args(["-c", &server])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(listener.stdout.take().unwrap()));
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        let client = format!(
            "import socket\nc=socket.create_connection(('{}',7777),timeout=20)\nc.sendall(b'hello\\n')",
            b.addr
        );
        let sent = a.command("python3").args(["-c", &client]).status().unwrap();
        assert!(sent.success());
        assert_eq!(lines.next().unwrap().unwrap(), format!("{} hello", a.addr));
        assert!(listener.wait().unwrap().success());
        // A process left inside is killed on drop.
        let mut sleeper = b.command("sleep").arg("120").spawn().unwrap();
        let pid = sleeper.id();
        // `ip netns exec` enters the namespace and then becomes `sleep`;
        // until it has, the namespace does not hold it yet and a drop
        // could not see it. Wait for the exec (bounded).
        let entered = Instant::now();
        while std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| c.trim() != "sleep")
            .unwrap_or(true)
        {
            assert!(
                entered.elapsed() < Duration::from_secs(60),
                "sleep {pid} never started"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let names: Vec<String> = hosts.hosts().iter().map(|h| h.netns.clone()).collect();
        drop(hosts);
        let status = sleeper.wait().unwrap();
        assert!(!status.success(), "sleep {pid} survived the harness");
        let list = run(&["netns", "list"]).unwrap();
        for n in names {
            assert!(!list.contains(&n), "{n} left behind: {list}");
        }
    }
}

//! Real processes for the tests of the vmd, the taskers and the client: a
//! `vmd` started on its own runtime directory and on port 0 (it writes its
//! client address, its Unix socket, to `--addr-file`),
//! taskers registered with it, the `isthmus` console. Every process is
//! stopped by its PID when its handle drops; every wait has a deadline
//! ([`T`]) that only guards against hangs.
//!
//! The binaries come from the target directory the test runs from (or
//! `$ISTHMUS_BIN_DIR`): test the packages that build them together, e.g.
//! `cargo test -p isthmus-vmd -p isthmus-taskers -p isthmus-client`.
//!
//! It sits in `vmd/` because what it starts is the vmd and its companions;
//! the tests of every other folder use it from there.

// Test code, as a library: a harness that cannot start a vmd fails the
// test then and there (the house rules' test exemption, for a whole crate).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod netns;
mod process;
pub mod slurm;
pub mod users;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use isthmus_client::Console;
pub use process::alive;

pub mod etcd;

/// The hang guard of every wait here.
pub const T: Duration = Duration::from_secs(30);

/// The directory holding the workspace's binaries (vmd, isthmus, tasker):
/// `$ISTHMUS_BIN_DIR`, else the profile directory of the running test.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ISTHMUS_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("the test's own path");
    let mut dir = exe.parent().expect("the test's directory").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

/// A workspace binary, which must have been built.
pub fn bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.exists(),
        "{} not built: build it first (cargo build -p isthmus-vmd -p isthmus-taskers, \
         or test those packages together with this one)",
        p.display()
    );
    p
}

/// The log level of the processes started here (`$ISTHMUS_TEST_LOG`, else
/// errors only).
fn log_level() -> String {
    std::env::var("ISTHMUS_TEST_LOG").unwrap_or_else(|_| "error".into())
}

/// A child process killed (by its PID) and reaped on drop.
pub struct Proc(pub Child);

impl Proc {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on a child we started and have not reaped.
        unsafe { libc::kill(self.0.id() as i32, sig) };
    }

    /// Waits (with a deadline) for the process to exit on its own.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + within;
        while Instant::now() < end {
            if let Ok(Some(s)) = self.0.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl std::ops::Deref for Proc {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Proc {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        Self::in_dir(&std::env::temp_dir(), tag)
    }

    /// A fresh directory inside `root`.
    pub fn in_dir(root: &std::path::Path, tag: &str) -> Self {
        let p = root.join(format!(
            "isthmus-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `vmd` process with its own runtime directory (`<dir>/run`: its Unix
/// socket and token) and a TCP listener on a free loopback port (its
/// address in `<dir>/run/listen`).
pub struct Vmd {
    pub proc: Proc,
    /// Its Unix socket (`unix:<dir>/run/vmd.sock`), as clients address it.
    pub addr: String,
    pub dir: TempDir,
    /// How it was started, to start it again ([`Vmd::restart`]).
    launch: Launch,
}

/// A vmd's command line, less its directory.
struct Launch {
    netns: Option<netns::Host>,
    host: String,
    extra: Vec<String>,
}

impl Launch {
    /// Starts the vmd in `dir`; returns it and its address once it listens.
    fn spawn(&self, dir: &TempDir) -> (Proc, String) {
        let addr_file = dir.0.join("addr");
        // A restart writes it again: wait for the new one.
        let _ = std::fs::remove_file(&addr_file);
        let program = bin("vmd");
        let mut command = match &self.netns {
            Some(ns) => ns.command(&program),
            None => Command::new(&program),
        };
        let child = command
            // Its own runtime directory: its socket and token, nobody else's.
            .arg("--runtime-dir")
            .arg(dir.0.join("run"))
            .args([
                "--listen",
                "127.0.0.1:0",
                "--host-name",
                &self.host,
                "--addr-file",
            ])
            .arg(&addr_file)
            .args(&self.extra)
            .env("RUST_LOG", log_level())
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn vmd");
        let mut proc = Proc(child);
        let started = Instant::now();
        let addr = loop {
            if let Ok(a) = std::fs::read_to_string(&addr_file) {
                if !a.is_empty() {
                    break a;
                }
            }
            if let Ok(Some(s)) = proc.0.try_wait() {
                panic!("vmd {} exited early: {s}", self.host);
            }
            assert!(started.elapsed() < T, "vmd did not start");
            std::thread::sleep(Duration::from_millis(10));
        };
        (proc, addr)
    }
}

impl Vmd {
    /// Starts a vmd named `host` with extra arguments; returns once it
    /// listens.
    pub fn start(host: &str, extra: &[&str]) -> Vmd {
        Self::start_in(None, host, extra)
    }

    /// [`Vmd::start`] inside the network namespace `netns` (its Unix socket
    /// is a file, so processes of any namespace reach it; its TCP listener
    /// is on that namespace's loopback).
    pub fn start_in(netns: Option<&netns::Host>, host: &str, extra: &[&str]) -> Vmd {
        let dir = TempDir::new("vmd");
        let launch = Launch {
            netns: netns.cloned(),
            host: host.to_string(),
            extra: extra.iter().map(|a| a.to_string()).collect(),
        };
        let (proc, addr) = launch.spawn(&dir);
        Vmd {
            proc,
            addr,
            dir,
            launch,
        }
    }

    /// Kills the vmd with SIGKILL (no goodbye: its sessions break and its
    /// etcd lease is left to its TTL), reaps it, and starts it again with
    /// the same runtime directory and arguments; returns once it listens.
    /// Its address (the Unix socket) is unchanged.
    pub fn restart(&mut self) {
        self.kill9();
        self.start_again();
    }

    /// The first half of [`Vmd::restart`]: SIGKILL, and reap.
    pub fn kill9(&mut self) {
        self.proc.signal(libc::SIGKILL);
        let _ = self.proc.0.wait();
    }

    /// The second half of [`Vmd::restart`]: the same vmd again, in the
    /// same runtime directory, with the same arguments.
    pub fn start_again(&mut self) {
        let (proc, addr) = self.launch.spawn(&self.dir);
        self.proc = proc;
        self.addr = addr;
    }
    /// A first vmd with a hostfile giving it `slots` and `offers`.
    pub fn with_hostfile(host: &str, slots: u32, offers: &[&str]) -> Vmd {
        let dir = TempDir::new("hostfile");
        let path = dir.0.join("hosts.toml");
        let offers: Vec<String> = offers.iter().map(|o| format!("{o:?}")).collect();
        std::fs::write(
            &path,
            format!(
                "[[host]]\nname = {host:?}\nslots = {slots}\noffers = [{}]\n",
                offers.join(", ")
            ),
        )
        .expect("write hostfile");
        let vmd = Vmd::start(host, &["--hostfile", path.to_str().expect("utf-8 path")]);
        drop(dir); // read at start
        vmd
    }

    /// A console connection to this vmd.
    pub async fn console(&self) -> Console {
        Console::connect(&self.addr).await.expect("connect")
    }

    /// Starts a tasker for `implementation` on this vmd and waits until the
    /// host table shows it.
    pub async fn tasker(&self, implementation: &str) -> Proc {
        tasker_on(self, &self.addr, implementation, None).await
    }
}

/// Starts a tasker registering with `vmd_addr`; waits until the resource
/// manager `rm` lists it on `host` (default: the host of the vmd that
/// answers, rm's own).
pub async fn tasker_on(rm: &Vmd, vmd_addr: &str, implementation: &str, host: Option<&str>) -> Proc {
    let mut command = Command::new(bin("tasker"));
    command
        .env("OMPI_MCA_btl_tcp_if_include", "lo")
        .env("OMPI_MCA_oob_tcp_if_include", "lo");
    start_tasker(command, rm, vmd_addr, implementation, host).await
}

/// A tasker for `implementation` inside network namespace `ns`,
/// registering with `vmd` (whose Unix socket every namespace reaches);
/// waits until `vmd` lists it on its own host.
pub async fn tasker_in(ns: &netns::Host, vmd: &Vmd, implementation: &str) -> Proc {
    start_tasker(
        ns.command(bin("tasker")),
        vmd,
        &vmd.addr,
        implementation,
        None,
    )
    .await
}

async fn start_tasker(
    mut command: Command,
    rm: &Vmd,
    vmd_addr: &str,
    implementation: &str,
    host: Option<&str>,
) -> Proc {
    let child = command
        .args(["--impl", implementation, "--vmd", vmd_addr])
        .env("RUST_LOG", log_level())
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn tasker");
    let proc = Proc(child);
    let console = rm.console().await;
    let end = Instant::now() + T;
    loop {
        let hosts = console.hosts().await.expect("list hosts");
        let found = hosts.iter().any(|h| {
            host.map_or(h.answering, |n| h.name == n)
                && h.taskers.iter().any(|t| t == implementation)
        });
        if found {
            return proc;
        }
        assert!(
            Instant::now() < end,
            "tasker {implementation} did not register"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs the console against `addr`, returning (exit code, stdout, stderr).
pub fn console(addr: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin("isthmus"))
        .arg("--vmd")
        .arg(addr)
        .args(args)
        .output()
        .expect("run console");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Waits for a launched job's launcher and collects its output; kills it
/// (by its PID) and fails the test, with what it printed, at the deadline.
pub fn finish(mut child: Child, deadline: Duration, what: &str) -> std::process::Output {
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > deadline => {
                let _ = child.kill();
                let out = child.wait_with_output().expect("collect output");
                panic!(
                    "{what} did not finish within {deadline:?}\nstdout:\n{}\nstderr:\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    }
    child.wait_with_output().expect("collect output")
}

//! Starts a real `vmd` process on a free loopback port for a test, and stops
//! it (by its PID) when the test ends.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct VmdProcess {
    pub child: Child,
    pub addr: String,
    _dir: TempDir,
}

impl VmdProcess {
    pub fn start() -> Self {
        let dir = TempDir::new("vmd");
        let addr_file = dir.0.join("addr");
        let child = Command::new(env!("CARGO_BIN_EXE_vmd"))
            // Its own runtime directory: its socket and token, nobody else's.
            .arg("--runtime-dir")
            .arg(dir.0.join("run"))
            .args([
                "--listen",
                "127.0.0.1:0",
                "--host-name",
                "testhost",
                "--addr-file",
            ])
            .arg(&addr_file)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn vmd");
        let started = Instant::now();
        let addr = loop {
            if let Ok(a) = std::fs::read_to_string(&addr_file) {
                if !a.is_empty() {
                    break a;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "vmd did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        VmdProcess {
            child,
            addr,
            _dir: dir,
        }
    }
}

impl Drop for VmdProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
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

/// Runs the console against `addr`, returning (exit code, stdout, stderr).
pub fn console(addr: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_isthmus"))
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

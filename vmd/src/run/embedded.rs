//! The embedded default of `isthmus run` when no vmd answers: a `vmd` child
//! process for this one host and one `tasker` per implementation the file
//! needs, as `scripts/demo-rm.sh` starts them by hand, in a private
//! directory (its Unix socket, its logs; memory store: nothing outlives
//! the run), each in a process group of its own so that the terminal's
//! Ctrl-C reaches `isthmus run` alone, which then stops the components
//! first and these last, by PID. Every wait has a deadline.

use std::collections::BTreeSet;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use isthmus_client::Console;
use tokio::time::Instant;

use super::spec::Impl;

/// How long the vmd may take to listen.
const VMD_START: Duration = Duration::from_secs(15);
/// How long the taskers may take to register.
const TASKERS_START: Duration = Duration::from_secs(20);
/// How long a child may take to stop after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Why the embedded vmd could not be started.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("creating the private directory {}: {source}", dir.display())]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("starting {} ({hint}): {source}", program.display())]
    Spawn {
        program: PathBuf,
        hint: &'static str,
        source: std::io::Error,
    },
    #[error("{what} did not come up within {within:?}{}", log_tail(log))]
    NotReady {
        what: String,
        within: Duration,
        log: PathBuf,
    },
    #[error("{what} exited at start ({status}){}", log_tail(log))]
    Exited {
        what: String,
        status: std::process::ExitStatus,
        log: PathBuf,
    },
}

/// The last lines of a child's log, for an error about it.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines.get(lines.len().saturating_sub(8)..).unwrap_or(&[]);
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its log ({}) ends:\n{}", log.display(), tail.join("\n"))
    }
}

/// A started child with its log.
struct Kid {
    what: String,
    child: Child,
    log: PathBuf,
}

/// A vmd and its taskers started for this run; [`Embedded::stop`] (or
/// dropping it) stops them by PID and removes the directory.
pub struct Embedded {
    /// The vmd's address (its Unix socket).
    pub addr: String,
    dir: PathBuf,
    vmd: Option<Kid>,
    taskers: Vec<Kid>,
}

/// A sibling binary of this `isthmus` (an install puts them together),
/// else the name, found on `PATH`.
fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

impl Embedded {
    /// Starts a vmd with `slots` slots (`None`: the vmd's own default, the
    /// Slurm allocation's inside one) and a tasker for each of `impls`;
    /// returns once the vmd lists every tasker.
    pub async fn start(impls: &BTreeSet<Impl>, slots: Option<u32>) -> Result<Self, EmbedError> {
        let dir = std::env::temp_dir().join(format!(
            "isthmus-run-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|source| EmbedError::Dir {
                dir: dir.clone(),
                source,
            })?;
        let mut me = Embedded {
            addr: String::new(),
            dir,
            vmd: None,
            taskers: Vec::new(),
        };
        let addr_file = me.dir.join("addr");
        let mut vmd = Command::new(sibling("vmd"));
        vmd.arg("--runtime-dir")
            .arg(me.dir.join("run"))
            .arg("--state-dir")
            .arg(me.dir.join("state"))
            .arg("--addr-file")
            .arg(&addr_file)
            .args(["--store", "memory"]);
        if let Some(slots) = slots {
            vmd.args(["--slots", &slots.to_string()]);
        }
        let kid = me.launch("the embedded vmd", "vmd", vmd)?;
        let vmd = me.vmd.insert(kid);
        let end = Instant::now() + VMD_START;
        me.addr = loop {
            if let Ok(a) = std::fs::read_to_string(&addr_file) {
                if !a.trim().is_empty() {
                    break a.trim().to_string();
                }
            }
            check_running(vmd)?;
            if Instant::now() > end {
                return Err(not_ready(vmd, VMD_START));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        for i in impls {
            let mut tasker = Command::new(sibling("tasker"));
            tasker.args(["--impl", i.as_str(), "--vmd", &me.addr]);
            let kid = me.launch(&format!("the {i} tasker"), &format!("tasker-{i}"), tasker)?;
            me.taskers.push(kid);
        }
        me.wait_taskers(impls).await?;
        Ok(me)
    }

    /// Starts `command` in a process group of its own, its output in
    /// `<dir>/<log>.log`.
    fn launch(&self, what: &str, log: &str, mut command: Command) -> Result<Kid, EmbedError> {
        let log = self.dir.join(format!("{log}.log"));
        let program = PathBuf::from(command.get_program());
        let spawn_err = |source| EmbedError::Spawn {
            program: program.clone(),
            hint: "install it beside isthmus or on PATH",
            source,
        };
        let out = std::fs::File::create(&log).map_err(spawn_err)?;
        let err = out.try_clone().map_err(spawn_err)?;
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "warn");
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(spawn_err)?;
        Ok(Kid {
            what: what.to_string(),
            child,
            log,
        })
    }

    async fn wait_taskers(&mut self, impls: &BTreeSet<Impl>) -> Result<(), EmbedError> {
        let end = Instant::now() + TASKERS_START;
        let mut console = None;
        loop {
            for kid in &mut self.taskers {
                check_running(kid)?;
            }
            if console.is_none() {
                console = Console::connect(&self.addr).await.ok();
            }
            if let Some(c) = &console {
                if let Ok(Ok(hosts)) = tokio::time::timeout(Duration::from_secs(2), c.hosts()).await
                {
                    let registered = hosts.iter().filter(|h| h.answering).any(|h| {
                        impls
                            .iter()
                            .all(|i| h.taskers.iter().any(|t| t == i.as_str()))
                    });
                    if registered {
                        return Ok(());
                    }
                }
            }
            if Instant::now() > end {
                let late = self.taskers.first().or(self.vmd.as_ref());
                return Err(match late {
                    Some(k) => not_ready(k, TASKERS_START),
                    None => EmbedError::NotReady {
                        what: "the taskers".into(),
                        within: TASKERS_START,
                        log: self.dir.join("vmd.log"),
                    },
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The PIDs of the vmd and its taskers (the tests check they are gone).
    pub fn pids(&self) -> Vec<u32> {
        self.vmd
            .iter()
            .chain(&self.taskers)
            .map(|k| k.child.id())
            .collect()
    }

    /// Stops the taskers, then the vmd: SIGTERM, SIGKILL after a grace,
    /// reaped; removes the private directory.
    pub async fn stop(mut self) {
        for kid in self.taskers.drain(..).chain(self.vmd.take()) {
            stop(kid).await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Embedded {
    /// The last resort (a panic, an early return): SIGKILL, by PID.
    fn drop(&mut self) {
        for kid in self.taskers.iter_mut().chain(self.vmd.as_mut()) {
            let _ = kid.child.kill();
            let _ = kid.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn check_running(kid: &mut Kid) -> Result<(), EmbedError> {
    match kid.child.try_wait() {
        Ok(Some(status)) => Err(EmbedError::Exited {
            what: kid.what.clone(),
            status,
            log: kid.log.clone(),
        }),
        _ => Ok(()),
    }
}

fn not_ready(kid: &Kid, within: Duration) -> EmbedError {
    EmbedError::NotReady {
        what: kid.what.clone(),
        within,
        log: kid.log.clone(),
    }
}

/// SIGTERM, then SIGKILL if it has not exited within [`STOP_GRACE`].
async fn stop(mut kid: Kid) {
    if let Ok(pid) = i32::try_from(kid.child.id()) {
        // SAFETY: kill(2) on our own child, not yet reaped (so the PID is
        // still ours).
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let end = Instant::now() + STOP_GRACE;
    while Instant::now() < end {
        if let Ok(Some(_)) = kid.child.try_wait() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tracing::warn!("{} did not stop within {STOP_GRACE:?}: killed", kid.what);
    let _ = kid.child.kill();
    let _ = kid.child.wait();
}

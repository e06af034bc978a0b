//! The tasker's Unix socket that rank shims report to (see [`crate::shim`]),
//! turned into [`ShimEvent`]s. A connection's end tells the tasker that a
//! shim is gone, so a job's end is reported only after every rank's exit.
//!
//! Who may report: ranks run as their job's owner (see [`crate::run_as`]),
//! so the socket is reachable by every local user, and the kernel's word on
//! the sender (SO_PEERCRED) decides. A connection is accepted only from a
//! uid whose job runs here ([`Reporters`]), a report only about a job whose
//! ranks run as the sender's uid, and a `start` only naming a pid that is
//! the sender's own child (the rank the shim started) or already gone. A
//! refused report is logged (escaped, cut short) and its connection closed;
//! it changes no job.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tracing::warn;

use isthmus_types::job::{ExitStatus, JobId};

/// Longest report line read; a longer one closes its connection.
const MAX_LINE: u64 = 256;
/// Longest excerpt of a refused line put in a log.
const MAX_SHOWN: usize = 80;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShimEvent {
    Started {
        job: JobId,
        rank: Option<u32>,
        pid: u32,
    },
    Exited {
        job: JobId,
        rank: Option<u32>,
        exit: ExitStatus,
    },
    /// A shim's connection closed (`job` if it said which).
    Closed { job: Option<JobId> },
}

/// The jobs whose ranks may report, each with the uid its ranks run as.
/// [`crate::jobs::Jobs`] adds a job before starting its processes and
/// removes it when the job's end is reported.
#[derive(Clone, Debug, Default)]
pub struct Reporters(Arc<Mutex<HashMap<JobId, u32>>>);

impl Reporters {
    /// `job`'s ranks run as `uid`.
    pub fn expect(&self, job: JobId, uid: u32) {
        self.lock().insert(job, uid);
    }

    /// `job` is over: nobody reports for it any more.
    pub fn forget(&self, job: JobId) {
        self.lock().remove(&job);
    }

    /// The uid `job`'s ranks run as, if it runs here.
    pub fn uid_of(&self, job: JobId) -> Option<u32> {
        self.lock().get(&job).copied()
    }

    /// Whether some job here runs as `uid`.
    pub fn has_uid(&self, uid: u32) -> bool {
        self.lock().values().any(|u| *u == uid)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, u32>> {
        // The map is plain data, valid after any panic of a holder.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The socket, removed when dropped.
pub struct RankReports {
    path: PathBuf,
}

impl RankReports {
    /// Binds a fresh socket in the temp directory and starts accepting
    /// reports from the ranks of the jobs in `reporters`.
    pub fn bind(
        events: mpsc::UnboundedSender<ShimEvent>,
        reporters: Reporters,
    ) -> std::io::Result<Self> {
        let path = std::env::temp_dir().join(format!(
            "isthmus-tasker-{}-{}.sock",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let listener = UnixListener::bind(&path)?;
        // Ranks run as their jobs' owners (see `crate::run_as`), not as the
        // tasker: every user must be able to connect; the peer's uid, read
        // by the kernel, decides what it may report.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))?;
        }
        tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        if let Some(peer) = admit(&stream, &reporters) {
                            tokio::spawn(read_shim(
                                stream,
                                peer,
                                reporters.clone(),
                                events.clone(),
                            ));
                        }
                    }
                    Err(e) => {
                        warn!(error = %e, "rank report socket accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                }
            }
        });
        Ok(Self { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RankReports {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Who is at the other end of a report connection, as the kernel says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    pub pid: Option<u32>,
}

/// The peer of a new connection, if its uid runs a job here; `None`
/// (logged; the connection is dropped, hence closed) otherwise.
fn admit(stream: &UnixStream, reporters: &Reporters) -> Option<Peer> {
    let cred = match stream.peer_cred() {
        Ok(c) => c,
        Err(e) => {
            warn!(error = %e, "rank report connection without credentials refused");
            return None;
        }
    };
    let peer = Peer {
        uid: cred.uid(),
        pid: cred.pid().and_then(|p| u32::try_from(p).ok()),
    };
    if !reporters.has_uid(peer.uid) {
        warn!(
            uid = peer.uid,
            pid = ?peer.pid,
            "rank report connection refused: no job here runs as this uid"
        );
        return None;
    }
    Some(peer)
}

/// Why a report was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Malformed,
    /// The job does not run here (or is over).
    UnknownJob(JobId),
    /// The job's ranks run as another uid.
    WrongUid {
        job: JobId,
        runs_as: u32,
    },
    /// A connection reports for one job only.
    OtherJob {
        first: JobId,
    },
    /// The pid of a `start` is a live process that is not the sender's child.
    NotItsChild {
        pid: u32,
        parent: u32,
    },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Malformed => write!(f, "malformed report"),
            Refused::UnknownJob(j) => write!(f, "job {j} does not run here"),
            Refused::WrongUid { job, runs_as } => {
                write!(f, "job {job}'s ranks run as uid {runs_as}")
            }
            Refused::OtherJob { first } => {
                write!(f, "this connection reports for job {first}")
            }
            Refused::NotItsChild { pid, parent } => {
                write!(f, "pid {pid} is a child of {parent}, not of the sender")
            }
        }
    }
}

/// Checks one report line from `peer` (whose connection has so far
/// reported for `first`, if anything) against the jobs that run here.
pub fn check(
    line: &str,
    peer: Peer,
    first: Option<JobId>,
    reporters: &Reporters,
) -> Result<ShimEvent, Refused> {
    let ev = parse(line).ok_or(Refused::Malformed)?;
    let job = match ev {
        ShimEvent::Started { job, .. } | ShimEvent::Exited { job, .. } => job,
        ShimEvent::Closed { .. } => return Err(Refused::Malformed),
    };
    if let Some(first) = first.filter(|f| *f != job) {
        return Err(Refused::OtherJob { first });
    }
    match reporters.uid_of(job) {
        None => return Err(Refused::UnknownJob(job)),
        Some(runs_as) if runs_as != peer.uid => return Err(Refused::WrongUid { job, runs_as }),
        Some(_) => {}
    }
    if let (ShimEvent::Started { pid, .. }, Some(sender)) = (&ev, peer.pid) {
        if let Some(parent) = parent_of(*pid) {
            if parent != sender {
                return Err(Refused::NotItsChild { pid: *pid, parent });
            }
        }
    }
    Ok(ev)
}

/// The parent of process `pid`, if it exists (a zombie does).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold anything but ends at the
    // last ')'.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// A line fit for a log: at most [`MAX_SHOWN`] characters, escaped.
fn shown(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut out: String = text.chars().take(MAX_SHOWN).collect();
    if text.chars().count() > MAX_SHOWN {
        out.push('…');
    }
    out.escape_debug().to_string()
}

async fn read_shim(
    stream: UnixStream,
    peer: Peer,
    reporters: Reporters,
    events: mpsc::UnboundedSender<ShimEvent>,
) {
    // The write half stays open (held by `stream`'s owner, this task): the
    // shim takes its closing as the tasker's death.
    let (read, _write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut job = None;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = match buf.strip_suffix(b"\n") {
            Some(l) => l,
            None if buf.len() as u64 > MAX_LINE => {
                warn!(uid = peer.uid, pid = ?peer.pid, line = %shown(&buf), "rank report too long; connection closed");
                break;
            }
            // The last line, cut by the end of the stream.
            None => &buf[..],
        };
        let checked = std::str::from_utf8(line)
            .map_err(|_| Refused::Malformed)
            .and_then(|l| check(l, peer, job, &reporters));
        match checked {
            Ok(ev) => {
                if let ShimEvent::Started { job: j, .. } | ShimEvent::Exited { job: j, .. } = ev {
                    job = Some(j);
                }
                let _ = events.send(ev);
            }
            Err(why) => {
                warn!(uid = peer.uid, pid = ?peer.pid, line = %shown(line), reason = %why, "rank report refused; connection closed");
                break;
            }
        }
    }
    // Only a connection that reported for a job counts towards its end.
    let _ = events.send(ShimEvent::Closed { job });
}

/// Parses one report line.
pub fn parse(line: &str) -> Option<ShimEvent> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let rank = |w: &str| {
        if w == "-" {
            Some(None)
        } else {
            w.parse::<u32>().ok().map(Some)
        }
    };
    match words.as_slice() {
        ["start", job, r, pid] => Some(ShimEvent::Started {
            job: job.parse().ok()?,
            rank: rank(r)?,
            pid: pid.parse().ok()?,
        }),
        ["exit", job, r, how, n] => {
            let n: i32 = n.parse().ok()?;
            let exit = match *how {
                "code" => ExitStatus::Code(n),
                "signal" => ExitStatus::Signal(n),
                _ => return None,
            };
            Some(ShimEvent::Exited {
                job: job.parse().ok()?,
                rank: rank(r)?,
                exit,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_reports() {
        assert_eq!(
            parse("start 3 1 999"),
            Some(ShimEvent::Started {
                job: 3,
                rank: Some(1),
                pid: 999
            })
        );
        assert_eq!(
            parse("exit 3 - signal 9"),
            Some(ShimEvent::Exited {
                job: 3,
                rank: None,
                exit: ExitStatus::Signal(9)
            })
        );
        assert_eq!(parse("exit 3 x code 1"), None);
        assert_eq!(parse("hello"), None);
    }

    #[test]
    fn reports_only_from_the_uid_a_job_runs_as() {
        let reporters = Reporters::default();
        reporters.expect(3, 1000);
        let me = std::process::id();
        let owner = Peer {
            uid: 1000,
            pid: Some(me),
        };
        let other = Peer {
            uid: 1001,
            pid: Some(me),
        };
        assert!(check("exit 3 0 code 0", owner, None, &reporters).is_ok());
        assert_eq!(
            check("exit 3 0 code 0", other, None, &reporters),
            Err(Refused::WrongUid {
                job: 3,
                runs_as: 1000
            })
        );
        assert_eq!(
            check("exit 4 0 code 0", owner, None, &reporters),
            Err(Refused::UnknownJob(4))
        );
        reporters.expect(4, 1000);
        assert_eq!(
            check("exit 4 0 code 0", owner, Some(3), &reporters),
            Err(Refused::OtherJob { first: 3 })
        );
        // A live process that is not the sender's child: refused.
        assert!(matches!(
            check(&format!("start 3 0 {me}"), owner, None, &reporters),
            Err(Refused::NotItsChild { pid, .. }) if pid == me
        ));
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let line = format!("start 3 0 {}", child.id());
        let got = check(&line, owner, None, &reporters);
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        assert!(got.is_ok(), "{got:?}");
        reporters.forget(3);
        assert!(!reporters.has_uid(1001));
        assert_eq!(
            check("exit 3 0 code 0", owner, None, &reporters),
            Err(Refused::UnknownJob(3))
        );
        assert_eq!(
            check("start 3 x 1", owner, None, &reporters),
            Err(Refused::Malformed)
        );
    }

    #[test]
    fn shown_lines_are_escaped_and_short() {
        assert_eq!(shown(b"a\nb\x1b[2J"), "a\\nb\\u{1b}[2J");
        let long = vec![b'x'; 1000];
        assert!(shown(&long).chars().count() <= MAX_SHOWN + 1);
    }
}

//! The tasker's Unix socket that rank shims report to (see [`crate::shim`]),
//! turned into [`ShimEvent`]s. A connection's end tells the tasker that a
//! shim is gone, so a job's end is reported only after every rank's exit.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tracing::warn;

use isthmus_types::job::{ExitStatus, JobId};

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

/// The socket, removed when dropped.
pub struct RankReports {
    path: PathBuf,
}

impl RankReports {
    /// Binds a fresh socket in the temp directory and starts accepting.
    pub fn bind(events: mpsc::UnboundedSender<ShimEvent>) -> std::io::Result<Self> {
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
        // tasker: every user must be able to connect to report.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))?;
        }
        tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        tokio::spawn(read_shim(stream, events.clone()));
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

async fn read_shim(stream: UnixStream, events: mpsc::UnboundedSender<ShimEvent>) {
    // The write half stays open (held by `stream`'s owner, this task): the
    // shim takes its closing as the tasker's death.
    let (read, _write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut job = None;
    while let Ok(Some(line)) = lines.next_line().await {
        match parse(&line) {
            Some(ev) => {
                if let ShimEvent::Started { job: j, .. } | ShimEvent::Exited { job: j, .. } = ev {
                    job = Some(j);
                }
                let _ = events.send(ev);
            }
            None => warn!(line, "malformed rank report dropped"),
        }
    }
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
}

//! The job protocol: jobs and ranks as the resource manager tracks them, the
//! spawn request it takes, and the orders and reports exchanged with taskers
//! (the same on a local tasker stream and on a joined host's link).

use std::collections::BTreeMap;

use crate::refusal::Refusal;

/// Jobs are numbered by the resource manager from 1.
pub type JobId = u64;

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

impl ExitStatus {
    pub fn success(self) -> bool {
        self == ExitStatus::Code(0)
    }
}

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitStatus::Code(c) => write!(f, "exit {c}"),
            ExitStatus::Signal(s) => write!(f, "signal {s}"),
        }
    }
}

#[cfg(unix)]
impl From<std::process::ExitStatus> for ExitStatus {
    /// A process's end as the OS reports it; neither code nor signal (a
    /// stopped process, which a wait never returns here) counts as code 1.
    fn from(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(c), _) => ExitStatus::Code(c),
            (None, Some(s)) => ExitStatus::Signal(s),
            (None, None) => ExitStatus::Code(1),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum JobState {
    /// Accepted by a tasker; not every rank has started yet.
    Starting,
    Running,
    /// Every rank (and the launcher) exited with 0.
    Exited,
    /// A rank or the launcher exited non-zero or on a signal.
    Failed,
    /// Ended after a kill order.
    Killed,
    /// Its tasker or host died: its fate is unknown.
    Lost,
}

impl JobState {
    /// Whether the job has ended (its slots are free).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Exited | JobState::Failed | JobState::Killed | JobState::Lost
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Rank {
    pub rank: u32,
    pub pid: Option<u32>,
    pub exit: Option<ExitStatus>,
}

impl Rank {
    pub fn is_running(&self) -> bool {
        self.pid.is_some() && self.exit.is_none()
    }
}

/// A job as the resource manager shows it (its own table's rows, and what
/// clients get from listing jobs or from a watch's job snapshots).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Job {
    pub id: JobId,
    pub program: String,
    pub args: Vec<String>,
    pub np: u32,
    pub implementation: String,
    pub host: String,
    pub state: JobState,
    pub ranks: Vec<Rank>,
    /// The uid that spawned the job: it runs as this uid, and only it (or
    /// the operator) may kill or signal the job.
    pub owner: u32,
    /// The launcher's exit, once the job ended.
    pub exit: Option<ExitStatus>,
    pub reason: String,
}

/// Where a job may go.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Placement {
    /// The first host in table order that can run the job.
    #[default]
    Any,
    Host(String),
    MostFree,
}

/// A request to start a job, as the resource manager takes it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SpawnSpec {
    pub program: String,
    pub args: Vec<String>,
    pub np: u32,
    pub implementation: String,
    pub placement: Placement,
    pub env: BTreeMap<String, String>,
    pub cwd: String,
    /// The caller's uid, set by the vmd from its authenticated identity
    /// (never taken from the request).
    pub owner: u32,
}

/// A job the resource manager started: its id and the host it went to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spawned {
    pub job: JobId,
    pub host: String,
}

/// What a tasker needs to start a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchSpec {
    pub job: JobId,
    pub implementation: String,
    pub program: String,
    pub args: Vec<String>,
    pub np: u32,
    pub env: BTreeMap<String, String>,
    pub cwd: String,
    /// The uid the job runs as (its owner's).
    pub owner: u32,
}

/// Orders travelling down to a tasker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobOrder {
    Launch(LaunchSpec),
    Signal {
        job: JobId,
        signal: i32,
        rank: Option<u32>,
    },
    Kill {
        job: JobId,
    },
}

impl JobOrder {
    pub fn job(&self) -> JobId {
        match self {
            JobOrder::Launch(l) => l.job,
            JobOrder::Signal { job, .. } | JobOrder::Kill { job } => *job,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// Reports travelling up from a tasker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobReport {
    /// The tasker found the program and is starting the launcher.
    Accepted {
        job: JobId,
    },
    /// The tasker will not run the job (program not found, …); nothing runs.
    Refused {
        job: JobId,
        error: Refusal,
    },
    RankStarted {
        job: JobId,
        rank: u32,
        pid: u32,
    },
    Output {
        job: JobId,
        rank: Option<u32>,
        stream: OutputStream,
        line: String,
    },
    RankExit {
        job: JobId,
        rank: Option<u32>,
        exit: ExitStatus,
    },
    /// The launcher ended (after its ranks); `exit` is absent if it could not start.
    LauncherExit {
        job: JobId,
        exit: Option<ExitStatus>,
        reason: String,
    },
    /// The tasker (or host) that ran the job is gone.
    Lost {
        job: JobId,
        reason: String,
    },
}

impl JobReport {
    pub fn job(&self) -> JobId {
        match self {
            JobReport::Accepted { job }
            | JobReport::Refused { job, .. }
            | JobReport::RankStarted { job, .. }
            | JobReport::Output { job, .. }
            | JobReport::RankExit { job, .. }
            | JobReport::LauncherExit { job, .. }
            | JobReport::Lost { job, .. } => *job,
        }
    }

    /// Whether the report ends the job on the tasker's side.
    pub fn ends_job(&self) -> bool {
        matches!(
            self,
            JobReport::Refused { .. } | JobReport::LauncherExit { .. } | JobReport::Lost { .. }
        )
    }
}

/// The command one range of ranks of a job runs, when its ranks run
/// different commands (`MPI_Comm_spawn_multiple`): the job's launcher
/// starts `np` copies of its first program, and the rank shim of each rank
/// starts instead the command its rank falls in (see [`RankCommands`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankCommand {
    pub np: u32,
    pub program: String,
    pub args: Vec<String>,
    /// Its working directory (empty: the job's).
    pub cwd: String,
    /// Variables it gets in addition to the job's.
    pub env: BTreeMap<String, String>,
}

/// The commands of a job's ranks, in rank order, as they travel in
/// [`crate::env::SPAWN_APPS`]: every string as `<bytes>:<text>`, a command
/// as its count, program, working directory, arguments and variables.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RankCommands(pub Vec<RankCommand>);

impl RankCommands {
    /// The command of `rank`, if the commands cover it.
    pub fn for_rank(&self, rank: u32) -> Option<&RankCommand> {
        self.index_of_rank(rank).and_then(|i| self.0.get(i))
    }

    /// The index of `rank`'s command (its `MPI_APPNUM`), if the commands
    /// cover it.
    pub fn index_of_rank(&self, rank: u32) -> Option<usize> {
        let mut first = 0u32;
        self.0.iter().position(|c| {
            let end = first.saturating_add(c.np);
            let hit = rank >= first && rank < end;
            first = end;
            hit
        })
    }

    /// Ranks in all.
    pub fn np(&self) -> u32 {
        self.0.iter().fold(0, |n, c| n.saturating_add(c.np))
    }

    pub fn encode(&self) -> String {
        fn put(out: &mut String, s: &str) {
            out.push_str(&format!("{}:{s}", s.len()));
        }
        let mut out = String::new();
        put(&mut out, &self.0.len().to_string());
        for c in &self.0 {
            put(&mut out, &c.np.to_string());
            put(&mut out, &c.program);
            put(&mut out, &c.cwd);
            put(&mut out, &c.args.len().to_string());
            for a in &c.args {
                put(&mut out, a);
            }
            put(&mut out, &c.env.len().to_string());
            for (k, v) in &c.env {
                put(&mut out, k);
                put(&mut out, v);
            }
        }
        out
    }

    /// Reads what [`RankCommands::encode`] wrote; the error says where it broke.
    pub fn decode(text: &str) -> Result<Self, String> {
        struct Reader<'a>(&'a str);
        impl Reader<'_> {
            fn string(&mut self) -> Result<String, String> {
                let (len, rest) = self
                    .0
                    .split_once(':')
                    .ok_or_else(|| format!("no length before {:?}", self.0))?;
                let len: usize = len.parse().map_err(|_| format!("bad length {len:?}"))?;
                let s = rest
                    .get(..len)
                    .ok_or_else(|| format!("{len} bytes announced, {} left", rest.len()))?;
                self.0 = rest.get(len..).unwrap_or_default();
                Ok(s.to_string())
            }
            fn number<T: std::str::FromStr>(&mut self) -> Result<T, String> {
                let s = self.string()?;
                s.parse().map_err(|_| format!("{s:?} is not a count"))
            }
        }
        let mut r = Reader(text);
        let n: usize = r.number()?;
        let mut commands = Vec::new();
        for _ in 0..n.min(4096) {
            let np = r.number()?;
            let program = r.string()?;
            let cwd = r.string()?;
            let nargs: usize = r.number()?;
            let args = (0..nargs.min(1 << 16))
                .map(|_| r.string())
                .collect::<Result<_, _>>()?;
            let nenv: usize = r.number()?;
            let mut env = BTreeMap::new();
            for _ in 0..nenv.min(1 << 16) {
                let k = r.string()?;
                env.insert(k, r.string()?);
            }
            commands.push(RankCommand {
                np,
                program,
                args,
                cwd,
                env,
            });
        }
        if !r.0.is_empty() {
            return Err(format!("{} bytes left over", r.0.len()));
        }
        Ok(RankCommands(commands))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_from_the_os() {
        use std::os::unix::process::ExitStatusExt;
        let code = std::process::ExitStatus::from_raw(3 << 8);
        let signal = std::process::ExitStatus::from_raw(9);
        assert_eq!(ExitStatus::from(code), ExitStatus::Code(3));
        assert_eq!(ExitStatus::from(signal), ExitStatus::Signal(9));
        assert_eq!(ExitStatus::Signal(9).to_string(), "signal 9");
        assert!(ExitStatus::Code(0).success() && !ExitStatus::Code(1).success());
    }

    #[test]
    fn rank_commands_travel_and_cover_their_ranks() {
        let cmds = RankCommands(vec![
            RankCommand {
                np: 2,
                program: "/bin/a".into(),
                args: vec!["x:y".into(), String::new(), "12:ab".into()],
                cwd: "/tmp".into(),
                env: BTreeMap::from([("K".into(), "v;w".into())]),
            },
            RankCommand {
                np: 1,
                program: "/bin/b".into(),
                args: vec![],
                cwd: String::new(),
                env: BTreeMap::new(),
            },
        ]);
        let back = RankCommands::decode(&cmds.encode()).unwrap();
        assert_eq!(back, cmds);
        assert_eq!(back.np(), 3);
        assert_eq!(back.for_rank(1).unwrap().program, "/bin/a");
        assert_eq!(back.for_rank(2).unwrap().program, "/bin/b");
        assert!(back.for_rank(3).is_none());
        assert_eq!(back.index_of_rank(0), Some(0));
        assert_eq!(back.index_of_rank(2), Some(1));
        assert_eq!(back.index_of_rank(3), None);
        assert!(RankCommands::decode("1:1").is_err());
        assert!(RankCommands::decode("3:1").is_err());
    }
}

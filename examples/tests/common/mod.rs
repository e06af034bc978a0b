//! What the cross-implementation tests share: the two MPI flavours of
//! `xtest`, a job description, starting a job with its own launcher, and
//! checking its ranks' PASS lines.

#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use isthmus_testkit::netns::Host;
use isthmus_testkit::TempDir;

/// The files through which the `steady` scenario reports its rounds and is
/// told to stop, and the environment that tells its ranks where they are.
pub struct SteadyFiles {
    pub progress: PathBuf,
    pub stop: PathBuf,
    pub env: Vec<(String, String)>,
    _dir: TempDir,
}

impl SteadyFiles {
    pub fn new(tag: &str) -> SteadyFiles {
        let dir = TempDir::new(tag);
        let progress = dir.0.join("progress");
        let stop = dir.0.join("stop");
        let env = vec![
            (
                "XTEST_PROGRESS_FILE".to_string(),
                progress.display().to_string(),
            ),
            ("XTEST_STOP_FILE".to_string(), stop.display().to_string()),
        ];
        SteadyFiles {
            progress,
            stop,
            env,
            _dir: dir,
        }
    }

    /// The rounds the pair has done so far.
    pub fn rounds(&self) -> u64 {
        std::fs::read_to_string(&self.progress)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0)
    }

    /// Tells the pair to stop after its current round.
    pub fn stop(&self) {
        std::fs::write(&self.stop, b"stop").expect("stop file");
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mpi {
    OpenMpi,
    Mpich,
}

pub struct Job {
    pub mpi: Mpi,
    pub np: usize,
    pub group: String,
    pub peers: Vec<String>,
    pub a: bool,
    pub timeout_secs: u64,
    /// Extra environment for every rank.
    pub env: Vec<(String, String)>,
    /// The network namespace the launcher (and so every rank) runs in.
    pub netns: Option<Host>,
}

pub fn job(mpi: Mpi, np: usize, group: &str, peers: &[&str], a: bool) -> Job {
    Job {
        mpi,
        np,
        group: group.into(),
        peers: peers.iter().map(|p| p.to_string()).collect(),
        a,
        timeout_secs: 120,
        env: Vec::new(),
        netns: None,
    }
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

pub fn xtest(mpi: Mpi) -> PathBuf {
    match mpi {
        Mpi::OpenMpi => PathBuf::from(env!("CARGO_BIN_EXE_xtest")),
        Mpi::Mpich => {
            let dir = std::env::var_os("ISTHMUS_MPICH_BIN_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| repo_root().join("target/mpich/release"));
            let p = dir.join("xtest");
            assert!(
                p.exists(),
                "MPICH flavour of xtest not found at {} — build it with scripts/test.sh (MPICC=mpicc.mpich, its own target dir)",
                p.display()
            );
            p
        }
    }
}

/// Starts job `j` of `scenario` with its launcher; its ranks reach the vmd
/// at `vmd_addr`.
pub fn launch(vmd_addr: &str, scenario: &str, j: &Job) -> Child {
    let command = |program: &str| match &j.netns {
        Some(host) => host.command(program),
        None => Command::new(program),
    };
    let mut cmd = match j.mpi {
        Mpi::OpenMpi => {
            let mut c = command("mpirun.openmpi");
            c.args([
                "--oversubscribe",
                "--bind-to",
                "none",
                "-n",
                &j.np.to_string(),
                "-x",
                "ISTHMUS_VMD",
            ]);
            c
        }
        Mpi::Mpich => {
            let mut c = command("mpiexec.mpich");
            c.args(["-n", &j.np.to_string(), "-genv", "ISTHMUS_VMD", vmd_addr]);
            c
        }
    };
    for (name, value) in &j.env {
        match j.mpi {
            Mpi::OpenMpi => cmd.args(["-x", name]),
            Mpi::Mpich => cmd.args(["-genv", name, value]),
        };
        cmd.env(name, value);
    }
    cmd.arg(xtest(j.mpi))
        .args([
            "--scenario",
            scenario,
            "--group",
            &j.group,
            "--timeout-secs",
            &j.timeout_secs.to_string(),
        ])
        .arg("--peer")
        .args(&j.peers)
        .env("ISTHMUS_VMD", vmd_addr)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_tcp_if_include", "lo")
        .env("OMPI_MCA_oob_tcp_if_include", "lo")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if j.a {
        cmd.arg("--a");
    }
    cmd.spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?} launcher: {e}", j.mpi))
}

/// Checks that every rank of `j` printed its PASS line.
pub fn assert_passed(out: &Output, scenario: &str, j: &Job) {
    if let Err(report) = check_passed(out, scenario, j) {
        panic!("{report}");
    }
}

/// Asserts that every job of a scenario passed; on failure the report holds
/// the output of every job that failed, so the side that failed first is
/// seen too, not only the first job of the list.
pub fn assert_all_passed(outputs: &[Output], scenario: &str, jobs: &[Job]) {
    let failed: Vec<String> = outputs
        .iter()
        .zip(jobs)
        .filter_map(|(out, j)| check_passed(out, scenario, j).err())
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// Whether every rank of `j` printed its PASS line; Err holds the report.
pub fn check_passed(out: &Output, scenario: &str, j: &Job) -> Result<(), String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = || {
        format!(
            "{:?} job {:?}\nstdout:\n{stdout}\nstderr:\n{}",
            j.mpi,
            j.group,
            String::from_utf8_lossy(&out.stderr)
        )
    };
    if !out.status.success() {
        return Err(format!(
            "{} exited with {}\n{}",
            j.group,
            out.status,
            report()
        ));
    }
    for r in 0..j.np {
        let line = format!("PASS {scenario} {} rank {r}", j.group);
        if !stdout.lines().any(|l| l.trim_end() == line) {
            return Err(format!("missing {line:?}\n{}", report()));
        }
    }
    Ok(())
}

/// Checks the `routes` scenario's report of job `j`: one ROUTE line per
/// pair of its ranks and the `remote_np` remote ranks, each a TCP
/// connection from `me` to `other`.
pub fn assert_routes(
    out: &Output,
    j: &Job,
    me: std::net::Ipv4Addr,
    other: std::net::Ipv4Addr,
    remote_np: usize,
) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let routes: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("ROUTE "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(routes.len(), j.np * remote_np, "{}: {stdout}", j.group);
    for r in routes {
        // ROUTE <group> rank <r> to <q> <transport> <local> <remote>
        let ip = |a: Option<&&str>| {
            a.and_then(|a| a.parse::<std::net::SocketAddr>().ok())
                .map(|s| s.ip())
        };
        assert_eq!(r.get(6).copied(), Some("tcp"), "{r:?}");
        assert_eq!(
            ip(r.get(7)),
            Some(me.into()),
            "{}: local end {r:?}",
            j.group
        );
        assert_eq!(
            ip(r.get(8)),
            Some(other.into()),
            "{}: remote end {r:?}",
            j.group
        );
    }
}

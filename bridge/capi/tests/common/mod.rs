//! What the C and Fortran tests share: building a program against each
//! MPI implementation's `libisthmus.so`, a real vmd, and two jobs started
//! separately by their own launchers.
//!
//! The Open MPI library is the one this test suite was built with (target
//! dir of the running test); the MPICH one comes from its own target dir
//! (`ISTHMUS_MPICH_BIN_DIR`, default target/mpich/release), built by
//! scripts/test.sh.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub use isthmus_testkit::{finish, TempDir, Vmd};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mpi {
    OpenMpi,
    Mpich,
}

impl Mpi {
    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi",
            Mpi::Mpich => "mpich",
        }
    }
    pub fn other(self) -> Mpi {
        match self {
            Mpi::OpenMpi => Mpi::Mpich,
            Mpi::Mpich => Mpi::OpenMpi,
        }
    }
}

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn repo_root() -> PathBuf {
    crate_dir().join("../..")
}

/// The directory holding `libisthmus.so` for `mpi`.
pub fn lib_dir(mpi: Mpi) -> PathBuf {
    let dir = match mpi {
        Mpi::OpenMpi => std::env::var_os("ISTHMUS_OPENMPI_BIN_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(isthmus_testkit::bin_dir),
        Mpi::Mpich => std::env::var_os("ISTHMUS_MPICH_BIN_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("target/mpich/release")),
    };
    assert!(
        dir.join("libisthmus.so").exists(),
        "libisthmus.so for {} not found in {} — build it with scripts/test.sh \
         (MPICC=mpicc.{}, its own target dir)",
        mpi.name(),
        dir.display(),
        mpi.name()
    );
    dir
}

/// How a program gets the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linking {
    /// `-listhmus` at build time.
    Linked,
    /// Linked after the MPI library (so MPI's own symbols win at link
    /// order), run with `LD_PRELOAD`.
    Preloaded,
    /// Built with plain `mpicc`, no Isthmus at all (a program that calls
    /// only MPI), run with `LD_PRELOAD`.
    Unmodified,
}

/// Compiles C `sources` with `mpicc.<mpi>` into `out`.
pub fn build_c(mpi: Mpi, sources: &[PathBuf], out: &Path, linking: Linking) {
    build_c_including(mpi, sources, &[], out, linking);
}

/// [`build_c`] with more folders of headers (`-I`), searched after ours.
pub fn build_c_including(
    mpi: Mpi,
    sources: &[PathBuf],
    include: &[PathBuf],
    out: &Path,
    linking: Linking,
) {
    let lib = lib_dir(mpi);
    let mut cmd = Command::new(format!("mpicc.{}", mpi.name()));
    cmd.args(["-O2", "-Wall", "-pthread", "-o"])
        .arg(out)
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg("-I")
        .arg(crate_dir().join("tests/mtest"))
        .args(
            include
                .iter()
                .flat_map(|d| [PathBuf::from("-I"), d.clone()]),
        )
        .args(sources);
    if linking == Linking::Preloaded {
        // The MPI library first, Isthmus after it: the program's MPI_Send
        // binds to MPI's own unless LD_PRELOAD puts Isthmus in front.
        cmd.arg(match mpi {
            Mpi::OpenMpi => "-lmpi",
            Mpi::Mpich => "-lmpich",
        });
    }
    if linking != Linking::Unmodified {
        cmd.arg(format!("-L{}", lib.display()))
            .arg("-listhmus")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            // RPATH, not RUNPATH: cargo's LD_LIBRARY_PATH names the test
            // flavour's target dir, which must not win over ours.
            .arg("-Wl,--disable-new-dtags");
    }
    let o = cmd.output().expect("run mpicc");
    assert!(
        o.status.success(),
        "mpicc.{} failed:\n{}",
        mpi.name(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// One job: a program run by its implementation's launcher.
pub struct Job {
    pub mpi: Mpi,
    pub np: usize,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub linking: Linking,
}

/// Starts `job` with its own launcher, talking to `vmd`.
pub fn launch(vmd: &Vmd, job: &Job) -> Child {
    let mut env = job.env.clone();
    env.push(("ISTHMUS_VMD".into(), vmd.addr.clone()));
    // ISTHMUS_TEST_JOB_LOG (e.g. `isthmus_bridge=debug`) lets a hunt for a
    // rare failure see what the jobs did; the tests themselves want warnings.
    let log = std::env::var("ISTHMUS_TEST_JOB_LOG").unwrap_or_else(|_| "warn".into());
    env.push(("RUST_LOG".into(), log));
    if matches!(job.linking, Linking::Preloaded | Linking::Unmodified) {
        env.push((
            "LD_PRELOAD".into(),
            lib_dir(job.mpi).join("libisthmus.so").display().to_string(),
        ));
    }
    let np = job.np.to_string();
    let mut cmd = match job.mpi {
        Mpi::OpenMpi => {
            let mut c = Command::new("mpirun.openmpi");
            c.args(["--oversubscribe", "-n", &np]);
            for (k, _) in &env {
                c.args(["-x", k]);
            }
            c
        }
        Mpi::Mpich => {
            let mut c = Command::new("mpiexec.mpich");
            c.args(["-n", &np]);
            for (k, v) in &env {
                c.args(["-genv", k, v]);
            }
            c
        }
    };
    cmd.arg(&job.program)
        .args(&job.args)
        // Cargo points LD_LIBRARY_PATH at the test's own target dir (the
        // Open MPI flavour): a job must load its own flavour only.
        .env_remove("LD_LIBRARY_PATH")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_tcp_if_include", "lo")
        .env("OMPI_MCA_oob_tcp_if_include", "lo")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Two Open MPI launchers started in the same instant race on their
    // session directories: tests running in parallel take turns, a moment
    // apart.
    static LAUNCHING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = LAUNCHING.lock().unwrap_or_else(|p| p.into_inner());
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the {} launcher: {e}", job.mpi.name()));
    std::thread::sleep(Duration::from_millis(300));
    child
}

/// Runs two jobs at once (started a moment apart, see `launch`) and
/// returns their outputs.
pub fn run_pair(vmd: &Vmd, a: &Job, b: &Job, deadline: Duration) -> (Output, Output) {
    let ca = launch(vmd, a);
    let cb = launch(vmd, b);
    let oa = finish(ca, deadline, "job A");
    let ob = finish(cb, deadline, "job B");
    (oa, ob)
}

pub fn text(o: &Output) -> String {
    format!(
        "exit: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

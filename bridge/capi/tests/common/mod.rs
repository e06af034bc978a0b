//! What the C and Fortran tests share: building a program against each
//! MPI implementation's `libisthmus.so`, a real vmd, and two jobs started
//! separately by their own launchers.
//!
//! The Open MPI library is the one this test suite was built with (target
//! dir of the running test); the MPICH one comes from its own target dir
//! (`ISTHMUS_MPICH_BIN_DIR`, default target/mpich/release), built by
//! scripts/test.sh.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub use isthmus_testkit::{finish, TempDir, Vmd};

/// An MPI implementation (scripts/mpi/): Debian's two, which every test
/// uses, and the ones from the Python registry, which the matrix's smoke
/// set (tests/matrix.rs) pairs with every other.
// The implementations' own names, "Open MPI" among them.
#[allow(clippy::enum_variant_names)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mpi {
    OpenMpi,
    Mpich,
    OpenMpi5,
    Mpich5,
    Impi,
    /// The MPI 5.0 standard ABI: a program built with MPICH 5's
    /// `mpicc_abi` against the `abi` flavour of libisthmus, run on MPICH 5.
    Abi,
    /// The same binaries as [`Mpi::Abi`], run on Intel MPI's
    /// `libmpi_abi.so.1` (its launcher, its library first on the path).
    AbiImpi,
}

/// Which ABI family an implementation belongs to: its launcher's options,
/// its library's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    OpenMpi,
    Mpich,
}

impl Mpi {
    /// Every implementation, Debian's two first.
    pub const ALL: [Mpi; 7] = [
        Mpi::OpenMpi,
        Mpi::Mpich,
        Mpi::OpenMpi5,
        Mpi::Mpich5,
        Mpi::Impi,
        Mpi::Abi,
        Mpi::AbiImpi,
    ];

    /// Its name in scripts/mpi/ and target/.
    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi",
            Mpi::Mpich => "mpich",
            Mpi::OpenMpi5 => "openmpi5",
            Mpi::Mpich5 => "mpich5",
            Mpi::Impi => "impi",
            Mpi::Abi => "abi",
            Mpi::AbiImpi => "abi-impi",
        }
    }

    /// The flavour of libisthmus its programs load (target/<flavour>):
    /// both standard-ABI runs share the `abi` one.
    pub fn flavour(self) -> &'static str {
        match self {
            Mpi::AbiImpi => "abi",
            m => m.name(),
        }
    }

    /// The tasker that starts its jobs (`tasker --impl`): both standard-ABI
    /// runs have the `abi` one, whose runtime a job may choose.
    pub fn tasker(self) -> &'static str {
        self.flavour()
    }

    /// A run of the MPI 5.0 standard ABI.
    pub fn is_abi(self) -> bool {
        matches!(self, Mpi::Abi | Mpi::AbiImpi)
    }

    pub fn from_name(name: &str) -> Option<Mpi> {
        Mpi::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn family(self) -> Family {
        match self {
            Mpi::OpenMpi | Mpi::OpenMpi5 => Family::OpenMpi,
            Mpi::Mpich | Mpi::Mpich5 | Mpi::Impi | Mpi::Abi | Mpi::AbiImpi => Family::Mpich,
        }
    }

    /// The other of Debian's two (the tests that run both ways round).
    pub fn other(self) -> Mpi {
        match self.family() {
            Family::OpenMpi => Mpi::Mpich,
            Family::Mpich => Mpi::OpenMpi,
        }
    }

    /// `ISTHMUS_MPI_<NAME>` if set, else $ISTHMUS_MPI_HOME/<name> (as
    /// scripts/mpi/impls.sh); None for Debian's two (wrappers on PATH).
    /// The standard-ABI runs build with MPICH 5's `mpicc_abi`
    /// (scripts/mpi/abi.sh).
    fn prefix(self) -> Option<PathBuf> {
        match self {
            Mpi::OpenMpi | Mpi::Mpich => None,
            Mpi::Abi | Mpi::AbiImpi => Some(
                std::env::var_os("ISTHMUS_MPI_ABI")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| installation("mpich5")),
            ),
            m => Some(installation(m.name())),
        }
    }

    /// Its C compiler wrapper.
    pub fn mpicc(self) -> PathBuf {
        match self.prefix() {
            None => PathBuf::from(format!("mpicc.{}", self.name())),
            Some(p) if self.is_abi() => p.join("bin/mpicc_abi"),
            Some(p) => p.join("bin/mpicc"),
        }
    }

    /// Its launcher.
    pub fn mpiexec(self) -> PathBuf {
        match (self, self.prefix()) {
            (Mpi::OpenMpi, _) => "mpirun.openmpi".into(),
            (Mpi::Mpich, _) => "mpiexec.mpich".into(),
            (Mpi::OpenMpi5, Some(p)) => p.join("bin/mpirun"),
            (Mpi::AbiImpi, _) => installation("impi").join("bin/mpiexec.hydra"),
            (_, Some(p)) => p.join("bin/mpiexec.hydra"),
            (_, None) => unreachable!("only Debian's two have no prefix"),
        }
    }

    /// What its wrappers and jobs need in their environment.
    pub fn env(self) -> Vec<(String, String)> {
        match (self, self.prefix()) {
            (Mpi::Impi, Some(p)) => vec![("I_MPI_ROOT".into(), p.display().to_string())],
            // Intel's libmpi_abi.so.1 ahead of the program's RUNPATH (MPICH 5's).
            (Mpi::AbiImpi, _) => {
                let impi = installation("impi");
                vec![
                    ("I_MPI_ROOT".into(), impi.display().to_string()),
                    (
                        "LD_LIBRARY_PATH".into(),
                        impi.join("lib").display().to_string(),
                    ),
                ]
            }
            _ => vec![],
        }
    }

    /// Whether `library` (the first line of `MPI_Get_library_version`, as
    /// the test programs print it after `LIBRARY `) is this
    /// implementation's: the standard ABI's runs must load the runtime
    /// they name (MPICH 5's or Intel's `libmpi_abi.so.1`), not whichever a
    /// run path points to.
    pub fn is_library(self, library: &str) -> bool {
        let mpich = |major: &str| {
            library
                .strip_prefix("MPICH Version:")
                .is_some_and(|v| v.trim_start().starts_with(major))
        };
        match self {
            Mpi::OpenMpi => library.starts_with("Open MPI v4."),
            Mpi::OpenMpi5 => library.starts_with("Open MPI v5."),
            Mpi::Mpich => mpich("4."),
            Mpi::Mpich5 | Mpi::Abi => mpich("5."),
            Mpi::Impi | Mpi::AbiImpi => library.starts_with("Intel(R) MPI Library"),
        }
    }

    /// Its Fortran compiler wrapper, where it has one that gfortran can use:
    /// Debian's two, and Intel MPI's `mpif90` for `mpif.h` only (its
    /// `mpi.mod` and `mpi_f08.mod` are Intel ifx 2024's, which gfortran
    /// cannot read). The registry's Open MPI 5 and MPICH 5 have no Fortran
    /// wrapper nor library; the standard ABI's first version has no Fortran.
    pub fn mpifort(self) -> Option<PathBuf> {
        match (self, self.prefix()) {
            (Mpi::OpenMpi | Mpi::Mpich, _) => Some(format!("mpifort.{}", self.name()).into()),
            (Mpi::Impi, Some(p)) => Some(p.join("bin/mpif90")),
            _ => None,
        }
    }

    /// The name of its MPI library for `-l` (Debian's MPICH: libmpich).
    fn lib_name(self) -> &'static str {
        match self {
            Mpi::Mpich => "-lmpich",
            Mpi::Abi | Mpi::AbiImpi => "-lmpi_abi",
            _ => "-lmpi",
        }
    }

    /// The implementations the matrix pairs (`ISTHMUS_MATRIX`, as
    /// scripts/test.sh sets it to the installed ones), else Debian's two.
    pub fn matrix() -> Vec<Mpi> {
        match std::env::var("ISTHMUS_MATRIX") {
            Ok(list) => list
                .split_whitespace()
                .map(|n| Mpi::from_name(n).unwrap_or_else(|| panic!("ISTHMUS_MATRIX: unknown {n}")))
                .collect(),
            Err(_) => vec![Mpi::OpenMpi, Mpi::Mpich],
        }
    }
}

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn repo_root() -> PathBuf {
    crate_dir().join("../..")
}

/// The directory holding `libisthmus.so` for `mpi`:
/// `ISTHMUS_<NAME>_BIN_DIR`, else its target dir (the Open MPI one: this
/// test's own).
pub fn lib_dir(mpi: Mpi) -> PathBuf {
    let var = format!("ISTHMUS_{}_BIN_DIR", mpi.flavour().to_uppercase());
    let dir = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| match mpi {
            Mpi::OpenMpi => isthmus_testkit::bin_dir(),
            _ => repo_root().join(format!("target/{}/release", mpi.flavour())),
        });
    assert!(
        dir.join("libisthmus.so").exists(),
        "libisthmus.so for {} not found in {} — build it with scripts/test.sh \
         (build_with {}: its MPICC, its own target dir)",
        mpi.name(),
        dir.display(),
        mpi.flavour()
    );
    dir
}

/// Where the registry's implementation `name` is installed:
/// `ISTHMUS_MPI_<NAME>`, else `$ISTHMUS_MPI_HOME/<name>` (as
/// scripts/mpi/impls.sh).
fn installation(name: &str) -> PathBuf {
    let over = format!("ISTHMUS_MPI_{}", name.to_uppercase());
    std::env::var_os(over)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("ISTHMUS_MPI_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/opt/isthmus/mpi"))
                .join(name)
        })
}

/// `$ISTHMUS_CONFORMANCE_DIR`, else `shared/conformance/mpich` in the
/// nearest folder above the repository that has it (CI puts `shared/`
/// beside the clone): MPICH's own tests.
pub fn suite_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("ISTHMUS_CONFORMANCE_DIR") {
        return PathBuf::from(d);
    }
    let repo = repo_root();
    let repo = repo.canonicalize().unwrap_or(repo);
    repo.ancestors()
        .map(|a| a.join("shared/conformance/mpich"))
        .find(|d| d.join("tests").is_dir())
        .unwrap_or_else(|| repo.join("../shared/conformance/mpich"))
}

/// Builds MPICH's `test` (a path under the suite's tests/) for `mpi`, with
/// Isthmus's MTest harness; or (`c/...`) one of Isthmus's own tests
/// written for the same harness; or (`mpich/...`) one of MPICH's tests kept
/// in this crate's tests/mpich.
pub fn build_conformance(test: &str, mpi: Mpi, dir: &TempDir) -> PathBuf {
    let src = if let Some(ours) = test.strip_prefix("c/") {
        crate_dir().join("tests/c").join(ours)
    } else if test.starts_with("mpich/") {
        // MPICH's tests kept here (tests/mpich, under MPICH's COPYRIGHT).
        crate_dir().join("tests").join(test)
    } else {
        suite_dir().join("tests").join(test)
    };
    assert!(src.exists(), "conformance test {} not found", src.display());
    let name = test.replace('/', "_").trim_end_matches(".c").to_string();
    let out = dir.0.join(format!("{name}-{}", mpi.name()));
    // The collective tests include MPICH's `mpicolltest.h` as it is; those
    // written as `run(const char *)` functions are given a main.
    let has_run =
        std::fs::read_to_string(&src).is_ok_and(|t| t.contains("int run(const char *arg)"));
    let mut sources = vec![src, crate_dir().join("tests/mtest/mtest.c")];
    if has_run {
        sources.push(crate_dir().join("tests/mtest/run_main.c"));
    }
    build_c_including(
        mpi,
        &sources,
        &[suite_dir().join("reference")],
        &out,
        Linking::Linked,
    );
    out
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
    let ours = [crate_dir().join("include"), crate_dir().join("tests/mtest")];
    let all: Vec<PathBuf> = ours.into_iter().chain(include.iter().cloned()).collect();
    build_c_searching(mpi, sources, &all, out, linking);
}

/// `mpi`'s C compiler wrapper writing `out`, with the tests' flags and
/// exactly the folders `include` searched for headers.
fn mpicc(mpi: Mpi, include: &[PathBuf], out: &Path) -> Command {
    let mut cmd = Command::new(mpi.mpicc());
    cmd.envs(mpi.env())
        .args(["-O2", "-Wall", "-pthread", "-o"])
        .arg(out)
        .args(
            include
                .iter()
                .flat_map(|d| [PathBuf::from("-I"), d.clone()]),
        );
    cmd
}

/// [`build_c`] searching exactly the folders `include` for headers (no
/// Isthmus harness: MPICH's own `mpitest.h` must not be shadowed).
pub fn build_c_searching(
    mpi: Mpi,
    sources: &[PathBuf],
    include: &[PathBuf],
    out: &Path,
    linking: Linking,
) {
    let lib = lib_dir(mpi);
    let mut cmd = mpicc(mpi, include, out);
    cmd.args(sources);
    if let (true, Some(prefix)) = (mpi.is_abi(), mpi.prefix()) {
        // The registry's MPICH 5 links libmpi_abi.so.1 against the libfabric
        // in lib/mpich (its RUNPATH says $ORIGIN/mpich, which ld does not
        // search for a program's link): without this, Debian's older
        // libfabric is found and the link fails (fi_getinfo@FABRIC_1.9).
        cmd.arg(format!(
            "-Wl,-rpath-link,{}",
            prefix.join("lib/mpich").display()
        ));
    }
    if linking == Linking::Preloaded {
        // The MPI library first, Isthmus after it: the program's MPI_Send
        // binds to MPI's own unless LD_PRELOAD puts Isthmus in front.
        cmd.arg(mpi.lib_name());
    }
    if linking != Linking::Unmodified {
        cmd.arg(format!("-L{}", lib.display()))
            .arg("-listhmus")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            // RPATH, not RUNPATH: cargo's LD_LIBRARY_PATH names the test
            // flavour's target dir, which must not win over ours.
            .arg("-Wl,--disable-new-dtags");
    }
    // The math library after everything, as MPICH's test suite links it
    // (coll/allgatherv4.c calls exp()).
    cmd.arg("-lm");
    let o = cmd.output().expect("run mpicc");
    assert!(
        o.status.success(),
        "{} failed:\n{}",
        mpi.mpicc().display(),
        String::from_utf8_lossy(&o.stderr)
    );
    if let Some(prefix) = mpi.prefix() {
        loads_mpi_from(out, &prefix);
    }
}

/// Compiles C `source` for `mpi` into object `out` (`-c`), with `include`
/// directories: what many programs share (MPICH's test harness) is
/// compiled once and linked into each (`build_c_searching` takes objects
/// among its sources).
pub fn compile_c_object(mpi: Mpi, source: &Path, include: &[PathBuf], out: &Path) {
    let o = mpicc(mpi, include, out)
        .arg("-c")
        .arg(source)
        .output()
        .expect("run mpicc");
    assert!(
        o.status.success(),
        "{} -c {} failed:\n{}",
        mpi.mpicc().display(),
        source.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// An implementation from a prefix shares its library's name with one of
/// Debian's (`libmpi.so.40`, `libmpi.so.12`): the program and the
/// libisthmus it loads must both resolve it inside `prefix`, never to
/// Debian's.
fn loads_mpi_from(program: &Path, prefix: &Path) {
    let o = Command::new("ldd")
        .arg(program)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run ldd");
    let deps = String::from_utf8_lossy(&o.stdout);
    let wrong: Vec<&str> = deps
        .lines()
        .filter(|l| l.contains("libmpi") && !l.contains(&*prefix.to_string_lossy()))
        .collect();
    assert!(
        o.status.success() && deps.contains("libmpi") && wrong.is_empty(),
        "{} does not load its MPI from {}:\n{deps}",
        program.display(),
        prefix.display()
    );
}

/// The Python interpreter whose mpi4py runs on `mpi`: Debian's (its
/// python3-mpi4py is Open MPI's; MPICH's is on [`python_path`]), or, for an
/// implementation from the Python registry, its environment's, with
/// mpi4py's binary wheel (scripts/install-mpis.sh).
pub fn python(mpi: Mpi) -> PathBuf {
    match (mpi, mpi.prefix()) {
        (Mpi::Abi | Mpi::AbiImpi, _) => panic!("no mpi4py for {} here", mpi.name()),
        (_, Some(prefix)) => prefix.join("bin/python3"),
        (_, None) => PathBuf::from("/usr/bin/python3"),
    }
}

/// `PYTHONPATH` for a Python job of `mpi`: the isthmus package, and for
/// Debian's MPICH the mpi4py built with it (the others' is on their
/// interpreter's own path).
pub fn python_path(mpi: Mpi) -> String {
    let package = crate_dir().join("python").display().to_string();
    if mpi != Mpi::Mpich {
        return package;
    }
    let dir = std::env::var_os("ISTHMUS_MPI4PY_MPICH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/isthmus/mpi4py-mpich"));
    assert!(
        dir.join("mpi4py").is_dir(),
        "no mpi4py built with MPICH in {} — scripts/install-deps.sh builds it",
        dir.display()
    );
    format!("{}:{package}", dir.display())
}

/// A Python job of `mpi` running `script` (in tests/python) with `args`,
/// under that implementation's library, preloaded.
pub fn python_script(mpi: Mpi, np: usize, script: &str, args: &[&str]) -> Job {
    let mut all = vec![crate_dir()
        .join("tests/python")
        .join(script)
        .display()
        .to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    Job {
        mpi,
        np,
        program: python(mpi),
        args: all,
        env: vec![("PYTHONPATH".into(), python_path(mpi))],
        linking: Linking::Unmodified,
    }
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
    // A job may name another vmd (or none that answers) itself.
    if !env.iter().any(|(k, _)| k == "ISTHMUS_VMD") {
        env.push(("ISTHMUS_VMD".into(), vmd.addr.clone()));
    }
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
    env.extend(job.mpi.env());
    let mut cmd = match job.mpi.family() {
        Family::OpenMpi => {
            let mut c = Command::new(job.mpi.mpiexec());
            c.args(["--oversubscribe", "-n", &np]);
            for (k, _) in &env {
                c.args(["-x", k]);
            }
            c
        }
        Family::Mpich => {
            let mut c = Command::new(job.mpi.mpiexec());
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

/// The lines of `o`'s standard output that start with `prefix`, without it.
pub fn lines(o: &Output, prefix: &str) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(str::to_string)
        .collect()
}

pub fn text(o: &Output) -> String {
    format!(
        "exit: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs tests/c/datatypes.c (issue 17, item 1: every predefined type at
/// extreme values, both directions) between a one-rank job of `a` and one
/// of `b`; returns both outputs.
pub fn datatypes_exchange(a: Mpi, b: Mpi) -> (Output, Output) {
    let dir = TempDir::new("datatypes");
    let vmd = Vmd::start("localhost", &[]);
    let job = |mpi: Mpi, me: &str, other: &str| {
        let program = dir.0.join(format!("datatypes-{}", mpi.name()));
        if !program.exists() {
            build_c(
                mpi,
                &[crate_dir().join("tests/c/datatypes.c")],
                &program,
                Linking::Linked,
            );
        }
        Job {
            mpi,
            np: 1,
            program,
            args: vec![me.into(), other.into()],
            env: vec![],
            linking: Linking::Linked,
        }
    };
    let tag = format!("{}-{}", a.name(), b.name());
    let (ga, gb) = (format!("dta-{tag}"), format!("dtb-{tag}"));
    run_pair(
        &vmd,
        &job(a, &ga, &gb),
        &job(b, &gb, &ga),
        Duration::from_secs(180),
    )
}

/// The `RESULT sender receiver case verdict what` lines of one job (the
/// receiver, `job`), by (direction, case).
fn datatype_results(o: &Output, job: &str) -> BTreeMap<(String, String), String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .filter_map(|l| {
            let mut w = l.splitn(4, ' ');
            let (from, to, case, rest) = (w.next()?, w.next()?, w.next()?, w.next()?);
            Some((
                (format!("{from}->{to} ({job})"), case.to_string()),
                rest.to_string(),
            ))
        })
        .collect()
}

/// What [`datatypes_exchange`] says: every case reported by its receiver
/// and OK, both jobs exited 0, the refusal naming call and types — the
/// table of results, or why not (with the table).
pub fn datatypes_verdict(oa: &Output, ob: &Output) -> Result<String, String> {
    let mut all = datatype_results(oa, "A");
    all.extend(datatype_results(ob, "B"));
    let table: String = all
        .iter()
        .map(|((dir, case), v)| format!("{dir:20} {case:32} {v}\n"))
        .collect();
    let cases = String::from_utf8_lossy(&oa.stdout)
        .lines()
        .find_map(|l| {
            l.strip_prefix("CASES ")?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .unwrap_or(0);
    let mut bad: Vec<&String> = all.values().filter(|v| !v.starts_with("OK")).collect();
    // A refusal names the call and both types.
    bad.extend(
        all.iter()
            .filter(|((_, case), v)| {
                case == "must-refuse:long-as-int"
                    && !(v.contains("MPI_Recv")
                        && v.contains("[MPI_LONG]")
                        && v.contains("[MPI_INT]"))
            })
            .map(|(_, v)| v),
    );
    if cases > 60
        && all.len() == 2 * cases
        && bad.is_empty()
        && oa.status.success()
        && ob.status.success()
    {
        Ok(table)
    } else {
        Err(format!(
            "{} of {} results not OK ({cases} cases per direction)\n{table}",
            bad.len(),
            all.len()
        ))
    }
}

/// Runs MPICH's `test` between a job of `left` and one of `right`, with
/// `np` = (left, right) ranks and extra arguments: Ok when both jobs exit 0
/// and print " No Errors", else why, with both outputs.
pub fn run_conformance(
    test: &str,
    np: (usize, usize),
    impls: (Mpi, Mpi),
    args: &[&str],
) -> Result<(), String> {
    run_conformance_with(test, np, impls, args, &[])
}

/// [`run_conformance`], both jobs with `env` added to their environment.
pub fn run_conformance_with(
    test: &str,
    np: (usize, usize),
    (left, right): (Mpi, Mpi),
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<(), String> {
    let dir = TempDir::new("conformance");
    let vmd = Vmd::start("localhost", &[]);
    let tag = test.replace(['/', '.'], "-");
    // The left group is the one whose name sorts first.
    let (gl, gr) = (format!("a-{tag}-left"), format!("b-{tag}-right"));
    let job = |mpi: Mpi, np: usize, me: &str, other: &str| Job {
        mpi,
        np,
        program: build_conformance(test, mpi, &dir),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: vec![
            ("ISTHMUS_MTEST_GROUP".into(), me.into()),
            ("ISTHMUS_MTEST_PEER".into(), other.into()),
            // MPICH's tests/merged (and ours in tests/mpich/merged) run on
            // the merge of an Isthmus intercommunicator.
            (
                "ISTHMUS_MTEST_MERGE".into(),
                if test.starts_with("merged/") || test.starts_with("mpich/merged/") {
                    "1"
                } else {
                    "0"
                }
                .into(),
            ),
        ]
        .into_iter()
        .chain(env.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .collect(),
        linking: Linking::Linked,
    };
    let a = job(left, np.0, &gl, &gr);
    let b = job(right, np.1, &gr, &gl);
    let (oa, ob) = run_pair(&vmd, &a, &b, Duration::from_secs(180));
    for (o, side) in [(&oa, "left"), (&ob, "right")] {
        let why = if !o.status.success() {
            "failed"
        } else if !String::from_utf8_lossy(&o.stdout).contains(" No Errors") {
            "did not print \" No Errors\""
        } else {
            continue;
        };
        return Err(format!(
            "{test}: the {side} job {why}\nleft ({}):\n{}\nright ({}):\n{}",
            left.name(),
            text(&oa),
            right.name(),
            text(&ob)
        ));
    }
    Ok(())
}

/// tests/c/spawn.c built for `mpi` into `dir`, plain (no libisthmus
/// linked): the managers and workers of the spawn tests.
pub fn spawn_program(mpi: Mpi, dir: &TempDir) -> PathBuf {
    let out = dir.0.join(format!("spawn-{}", mpi.name()));
    build_c(
        mpi,
        &[crate_dir().join("tests/c/spawn.c")],
        &out,
        Linking::Unmodified,
    );
    out
}

/// The `CHILD-LIBRARY q line` lines of a spawning manager, by q. Found
/// anywhere in a line: the launcher forwards every rank's output, and
/// another rank's text without its newline yet (`PASS cross rank 1`) can
/// come first on the same line.
pub fn child_libraries(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.find("CHILD-LIBRARY ").map(|at| &l[at..]))
        .filter_map(|l| l.strip_prefix("CHILD-LIBRARY "))
        .filter_map(|l| l.split_once(' ').map(|(_, line)| line.to_string()))
        .collect()
}

/// After an `MPI_Comm_spawn_multiple` of one rank of `a`'s program `wa`
/// and two of `b`'s `wb` whose manager printed each child's MPI library
/// (`CHILD-LIBRARY q line`): the children ran on `a`'s, `b`'s and `b`'s
/// libraries, and were two jobs of the virtual machine, one of each
/// implementation, which exited (awaited up to 30 s: they may still be
/// finishing after the disconnect). `all` says what ran, on failure.
pub fn children_were_one_world(
    m: &Machine,
    o: &Output,
    (a, wa): (Mpi, &str),
    (b, wb): (Mpi, &str),
    all: &str,
) {
    use std::time::Instant;
    let libraries = child_libraries(o);
    assert!(
        libraries.len() == 3
            && a.is_library(&libraries[0])
            && b.is_library(&libraries[1])
            && b.is_library(&libraries[2]),
        "the children's libraries are not {a:?}, {b:?}, {b:?}: {libraries:?}\n{all}"
    );
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = m.jobs();
        let exited = |w: &str, mpi: Mpi| {
            let lines: Vec<&str> = jobs.lines().filter(|l| l.contains(w)).collect();
            lines.len() == 1
                && lines
                    .iter()
                    .all(|l| l.contains("exited") && l.contains(mpi.name()))
        };
        if exited(wa, a) && exited(wb, b) {
            break;
        }
        assert!(
            Instant::now() < end,
            "the children are not an exited {a:?} job and an exited {b:?} job:\n{jobs}\n{all}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A vmd with room for the tests' jobs and a tasker for each implementation
/// named (`openmpi`, `mpich`: each preloading its own libisthmus into the
/// jobs that ask; `exec`: programs without MPI).
pub struct Machine {
    pub vmd: Vmd,
    /// Killed on drop.
    _taskers: Vec<isthmus_testkit::Proc>,
}

impl Machine {
    pub fn start(implementations: &[&str]) -> Machine {
        use std::time::Instant;
        let vmd = Vmd::start("localhost", &["--slots", "16", "--store", "memory"]);
        let taskers = implementations
            .iter()
            .map(|name| {
                let mut cmd = Command::new(isthmus_testkit::bin("tasker"));
                cmd.args(["--impl", name, "--vmd", &vmd.addr]);
                if let Some(mpi) = Mpi::from_name(name) {
                    cmd.arg("--libisthmus")
                        .arg(lib_dir(mpi).join("libisthmus.so"));
                }
                let child = cmd
                    // Cargo's points at this test's target dir (one flavour).
                    .env_remove("LD_LIBRARY_PATH")
                    .env("OMPI_MCA_btl_tcp_if_include", "lo")
                    .env("OMPI_MCA_oob_tcp_if_include", "lo")
                    .env("RUST_LOG", "warn")
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("start a tasker");
                isthmus_testkit::Proc(child)
            })
            .collect();
        let mut sorted = implementations.to_vec();
        sorted.sort();
        let want = sorted.join(",");
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, hosts, _) = isthmus_testkit::console(&vmd.addr, &["conf"]);
            if hosts.contains(&want) {
                break;
            }
            assert!(
                Instant::now() < end,
                "the taskers did not register:\n{hosts}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Machine {
            vmd,
            _taskers: taskers,
        }
    }

    /// `isthmus ps --all`.
    pub fn jobs(&self) -> String {
        isthmus_testkit::console(&self.vmd.addr, &["ps", "--all"]).1
    }
}

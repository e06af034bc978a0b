//! `isthmus run FILE` with real processes: the console starting an
//! embedded vmd and its taskers (or using a vmd that answers), the
//! components started through the resource manager, their output tagged,
//! failures, Ctrl-C, bad files and dry runs. The ocean/atmosphere test
//! compiles the demo with mpifort.openmpi and mpicc.mpich against both
//! flavours of libisthmus (`$ISTHMUS_OPENMPI_BIN_DIR`, else this test's
//! target dir; `$ISTHMUS_MPICH_BIN_DIR`, else target/mpich/release), as
//! scripts/test.sh builds them.

#![cfg(test)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use isthmus_testkit::{alive, bin, bin_dir, finish, Proc, TempDir, Vmd};
use isthmus_types::job::JobState;

/// Hang guard for anything that must end; never a measure of speed.
const GUARD: Duration = Duration::from_secs(120);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `isthmus --vmd ADDR run ARGS…`, not yet waited for.
fn run_cmd(addr: &str, args: &[&Path]) -> Command {
    let mut c = Command::new(bin("isthmus"));
    c.arg("--vmd")
        .arg(addr)
        .arg("run")
        .args(args)
        .env("OMPI_MCA_btl_tcp_if_include", "lo")
        .env("OMPI_MCA_oob_tcp_if_include", "lo")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// An address where no vmd answers: `isthmus run` then embeds one.
fn nowhere(dir: &TempDir) -> String {
    format!("unix:{}", dir.0.join("no-vmd.sock").display())
}

fn run(addr: &str, args: &[&Path]) -> Output {
    let child = run_cmd(addr, args).spawn().expect("start isthmus run");
    finish(child, GUARD, "isthmus run")
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The PIDs of the embedded vmd and taskers, from the run's status line.
fn embedded_pids(stdout: &str) -> Vec<u32> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("== embedded vmd at "))
        .unwrap_or_else(|| panic!("no embedded vmd line in:\n{stdout}"));
    let pids = line
        .rsplit_once("(pids ")
        .and_then(|(_, p)| p.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no pids in {line:?}"));
    pids.split(' ').map(|p| p.parse().expect("a pid")).collect()
}

/// Waits (with a deadline) until none of `pids` runs.
fn assert_gone(pids: &[u32], what: &str) {
    let end = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            Instant::now() < end,
            "{what} still running: {:?}",
            pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The PIDs the ranks of a `pidfile` component wrote into `dir`.
fn rank_pids(dir: &Path, component: &str, np: u32) -> Vec<u32> {
    (0..np)
        .map(|r| {
            let f = dir.join(format!("{component}.pid.{r}"));
            std::fs::read_to_string(&f)
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
                .trim()
                .parse()
                .expect("a pid")
        })
        .collect()
}

/// Waits until every rank of a `pidfile` component wrote its PID: the
/// whole line, not just the file (the shell creates it before it writes,
/// and a read in between found it empty).
fn wait_pid_files(dir: &Path, component: &str, np: u32) {
    let end = Instant::now() + Duration::from_secs(30);
    let written = |r: u32| {
        std::fs::read_to_string(dir.join(format!("{component}.pid.{r}")))
            .is_ok_and(|s| s.ends_with('\n'))
    };
    while !(0..np).all(written) {
        assert!(Instant::now() < end, "{component}'s ranks did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A component whose ranks write their PID to `NAME.pid.RANK` (in the
/// file's directory) and sleep.
fn sleeper(name: &str, np: u32) -> String {
    format!(
        "[[component]]\nname = \"{name}\"\nprogram = \"/bin/sh\"\n\
         args = [\"-c\", \"echo $$ > {name}.pid.$ISTHMUS_RANK; echo up; exec sleep 90\"]\n\
         np = {np}\nimpl = \"exec\"\n"
    )
}

fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.0.join(name);
    std::fs::write(&p, text).expect("write file");
    p
}

fn lib_dir(var: &str, default: PathBuf) -> PathBuf {
    let dir = std::env::var_os(var).map(PathBuf::from).unwrap_or(default);
    assert!(
        dir.join("libisthmus.so").exists(),
        "libisthmus.so not found in {} — build both flavours of isthmus-capi as scripts/test.sh does",
        dir.display()
    );
    dir
}

fn compile(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The demo's file, as checked in, beside the two programs it names
/// (`build/ocean`, `build/atmosphere`), compiled here. Their rpath is
/// DT_RPATH (`--disable-new-dtags`), which `LD_LIBRARY_PATH` does not
/// override: `cargo test` puts this target dir (the Open MPI flavour of
/// libisthmus.so) on it, and the MPICH atmosphere would load that one.
fn coupling_demo(dir: &TempDir) -> PathBuf {
    let examples = repo_root().join("examples/coupling");
    let ompi = lib_dir("ISTHMUS_OPENMPI_BIN_DIR", bin_dir());
    let mpich = lib_dir(
        "ISTHMUS_MPICH_BIN_DIR",
        repo_root().join("target/mpich/release"),
    );
    let build = dir.0.join("build");
    std::fs::create_dir_all(&build).expect("build dir");
    compile(
        Command::new("mpifort.openmpi")
            .args(["-O2", "-o"])
            .arg(build.join("ocean"))
            .arg(examples.join("ocean.f90"))
            .arg(format!("-L{}", ompi.display()))
            .arg("-listhmus")
            .arg(format!("-Wl,-rpath,{}", ompi.display()))
            .arg("-Wl,--disable-new-dtags"),
        "mpifort.openmpi ocean.f90",
    );
    compile(
        Command::new("mpicc.mpich")
            .args(["-O2", "-o"])
            .arg(build.join("atmosphere"))
            .arg(examples.join("atmosphere.c"))
            .arg("-I")
            .arg(repo_root().join("bridge/capi/include"))
            .arg(format!("-L{}", mpich.display()))
            .arg("-listhmus")
            .arg(format!("-Wl,-rpath,{}", mpich.display()))
            .arg("-Wl,--disable-new-dtags")
            .arg("-lm"),
        "mpicc.mpich atmosphere.c",
    );
    let file = dir.0.join("coupling.toml");
    std::fs::copy(examples.join("coupling.toml"), &file).expect("copy coupling.toml");
    file
}

#[test]
fn the_coupling_demo_runs_from_its_file_with_an_embedded_vmd() {
    let dir = TempDir::new("run-demo");
    let file = coupling_demo(&dir);
    let out = run(&nowhere(&dir), &[&file]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_coupled(&stdout, &all);
    assert_gone(&embedded_pids(&stdout), "the embedded vmd or a tasker");
}

/// The demo's coupled result in a run's output: every rank's tagged
/// output, what the atmosphere received, both done and exited with 0.
fn assert_coupled(stdout: &str, all: &str) {
    for tag in [
        "[ocean:0] ",
        "[ocean:1] ",
        "[atmosphere:0] ",
        "[atmosphere:1] ",
    ] {
        assert!(stdout.contains(tag), "no {tag:?} output:\n{all}");
    }
    // What each side received, tagged with its component and rank: rank 1
    // of the atmosphere owns cells 5..8 (SST = 15 + 0.5 g + 0.1 s).
    assert!(
        stdout.contains(
            "[atmosphere:1] atmosphere rank 1 step 3 received SST  17.80  18.30  18.80  19.30"
        ),
        "{all}"
    );
    assert!(stdout.contains("[ocean:0] ocean: done"), "{all}");
    assert!(stdout.contains("[atmosphere:0] atmosphere: done"), "{all}");
    for c in ["atmosphere", "ocean"] {
        for s in ["starting", "running", "exited with code 0"] {
            assert!(
                stdout.contains(&format!("== {c}: {s}")),
                "no {c} {s}:\n{all}"
            );
        }
    }
}

#[test]
fn a_failing_component_gives_its_code_and_the_other_is_stopped() {
    let dir = TempDir::new("run-fail");
    let file = write(
        &dir,
        "fail.toml",
        &format!(
            "{}[[component]]\nname = \"crasher\"\nprogram = \"/bin/sh\"\n\
             args = [\"-c\", \"while [ ! -e sleeper.pid.1 ]; do sleep 0.05; done; echo bye >&2; exit 3\"]\n\
             np = 1\n",
            sleeper("sleeper", 2)
        ),
    );
    let out = run(&nowhere(&dir), &[&file]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("== crasher: exited with code 3"), "{all}");
    assert!(stdout.contains("== sleeper: stopped"), "{all}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[crasher:0] bye"),
        "{all}"
    );
    assert_gone(&rank_pids(&dir.0, "sleeper", 2), "the sleeper's ranks");
    assert_gone(&embedded_pids(&stdout), "the embedded vmd or a tasker");
}

#[test]
fn with_continue_a_failure_lets_the_others_finish() {
    let dir = TempDir::new("run-continue");
    let file = write(
        &dir,
        "continue.toml",
        "[run]\non_failure = \"continue\"\n\
         [[component]]\nname = \"slow\"\nprogram = \"/bin/sh\"\nargs = [\"-c\", \"sleep 1; echo finished\"]\nnp = 1\n\
         [[component]]\nname = \"bad\"\nprogram = \"/bin/sh\"\nargs = [\"-c\", \"exit 5\"]\nnp = 1\n",
    );
    let out = run(&nowhere(&dir), &[&file]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(5), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[slow:0] finished"), "{all}");
    assert!(stdout.contains("== slow: exited with code 0"), "{all}");
}

#[tokio::test]
async fn ctrl_c_stops_every_job_of_a_vmd_that_was_running() {
    // Against a vmd that answers (not embedded): its jobs must end, it stays.
    let vmd = Vmd::with_hostfile("runhost", 8, &["exec"]);
    let _tasker = vmd.tasker("exec").await;
    let dir = TempDir::new("run-int");
    let file = write(
        &dir,
        "int.toml",
        &format!("{}{}", sleeper("left", 2), sleeper("right", 1)),
    );
    let mut child = Proc(
        run_cmd(&vmd.addr, &[&file])
            .spawn()
            .expect("start isthmus run"),
    );
    wait_pid_files(&dir.0, "left", 2);
    wait_pid_files(&dir.0, "right", 1);
    let mut pids = rank_pids(&dir.0, "left", 2);
    pids.extend(rank_pids(&dir.0, "right", 1));
    assert!(pids.iter().all(|&p| alive(p)));
    child.signal(libc::SIGINT);
    let status = child
        .wait_exit(GUARD)
        .expect("isthmus run ended after SIGINT");
    assert_eq!(status.code(), Some(130));
    assert_gone(&pids, "the components' ranks");
    let jobs = vmd.console().await.jobs(true).await.expect("list jobs");
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert!(jobs.iter().all(|j| j.state == JobState::Killed), "{jobs:?}");
    assert!(alive(vmd.proc.pid()), "the vmd was not ours to stop");
}

#[test]
fn ctrl_c_stops_the_jobs_and_the_embedded_vmd() {
    let dir = TempDir::new("run-int-embedded");
    let file = write(&dir, "int.toml", &sleeper("only", 2));
    let child = run_cmd(&nowhere(&dir), &[&file])
        .spawn()
        .expect("start isthmus run");
    wait_pid_files(&dir.0, "only", 2);
    let pids = rank_pids(&dir.0, "only", 2);
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = finish(child, GUARD, "isthmus run after SIGINT");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(130), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("== interrupted: stopping every component"),
        "{all}"
    );
    assert!(stdout.contains("== only: stopped"), "{all}");
    assert_gone(&pids, "the component's ranks");
    assert_gone(&embedded_pids(&stdout), "the embedded vmd or a tasker");
}

#[test]
fn a_bad_file_is_refused_naming_file_line_and_key() {
    let dir = TempDir::new("run-bad");
    let file = write(
        &dir,
        "bad.toml",
        "[run]\non_failure = \"abort\"\n\n[[component]]\nname = \"a\"\nprogram = \"/bin/true\"\nnp = 1\nranks = 2\n",
    );
    let out = run(&nowhere(&dir), &[&file]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:8:1: key `ranks`: unknown field",
            file.display()
        )),
        "{all}"
    );
    assert!(out.stdout.is_empty(), "started something:\n{all}");
    let file = write(
        &dir,
        "np.toml",
        "[[component]]\nname = \"a\"\nprogram = \"/bin/true\"\nnp = 0\n",
    );
    let out = run(&nowhere(&dir), &[&file]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("np.toml:4:6: key `np`: 0 ranks"),
        "{all}"
    );
}

#[tokio::test]
async fn a_dry_run_prints_the_placement_and_starts_nothing() {
    let vmd = Vmd::with_hostfile("dryhost", 8, &["exec"]);
    let _tasker = vmd.tasker("exec").await;
    let dir = TempDir::new("run-dry");
    let file = write(
        &dir,
        "dry.toml",
        "[[component]]\nname = \"marker\"\nprogram = \"/bin/sh\"\nargs = [\"-c\", \"touch started\"]\nnp = 3\nhost = \"dryhost\"\n\
         [[component]]\nname = \"other\"\nprogram = \"/bin/true\"\nnp = 1\nimpl = \"openmpi\"\n",
    );
    let out = run(&vmd.addr, &[Path::new("--dry-run"), &file]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().take(4).collect())
        .collect();
    assert_eq!(
        rows.first().map(Vec::as_slice),
        Some(&["COMPONENT", "IMPL", "NP", "HOST"][..]),
        "{all}"
    );
    assert!(
        rows.contains(&vec!["marker", "exec*", "3", "dryhost"]),
        "{all}"
    );
    assert!(
        rows.contains(&vec!["other", "openmpi", "1", "(most-free)"]),
        "{all}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !dir.0.join("started").exists(),
        "the dry run started a component"
    );
    let jobs = vmd.console().await.jobs(true).await.expect("list jobs");
    assert!(jobs.is_empty(), "the dry run spawned {jobs:?}");
}

#[test]
fn the_run_timeout_stops_everything() {
    let dir = TempDir::new("run-timeout");
    let file = write(
        &dir,
        "timeout.toml",
        &format!("[run]\ntimeout = 5\n{}", sleeper("late", 2)),
    );
    let started = Instant::now();
    let out = run(&nowhere(&dir), &[&file]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(124), "{all}");
    assert!(started.elapsed() < Duration::from_secs(60), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("timeout (5s) passed"), "{all}");
    assert!(stdout.contains("== late: stopped"), "{all}");
    assert_gone(&rank_pids(&dir.0, "late", 2), "the component's ranks");
    assert_gone(&embedded_pids(&stdout), "the embedded vmd or a tasker");
}

/// Inside a Slurm allocation (a real slurmctld, slurmd and munged on
/// loopback, one node of 4 CPUs): an `sbatch` script runs `isthmus run`
/// on the demo's file; the embedded vmd takes its host and slots from the
/// allocation, the taskers' mpirun and mpiexec run inside it, and the
/// coupled result comes out of the job. A coupling that needs more ranks
/// than the allocation holds is refused, naming the allocation's node.
#[test]
fn under_slurm_an_sbatch_script_runs_the_coupling_on_one_node() {
    let Some(slurm) = isthmus_testkit::slurm::Slurm::for_test(4) else {
        return;
    };
    let dir = TempDir::new("run-slurm");
    let file = coupling_demo(&dir);
    let too_big = write(&dir, "too-big.toml", &sleeper("wide", 5));
    let node = &slurm.nodes[0];
    let script = write(
        &dir,
        "job.sh",
        &format!(
            "#!/bin/sh\n\
             export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n\
             export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo\n\
             echo \"job $SLURM_JOB_ID on $SLURMD_NODENAME, cpus $SLURM_JOB_CPUS_PER_NODE\"\n\
             {isthmus} --vmd {nowhere} run {too_big}\n\
             echo \"too-big exit $?\"\n\
             exec {isthmus} --vmd {nowhere} run {file}\n",
            isthmus = bin("isthmus").display(),
            nowhere = nowhere(&dir),
            too_big = too_big.display(),
            file = file.display(),
        ),
    );
    let output = dir.0.join("job.out");
    let workdir = dir.0.display().to_string();
    let code = slurm.sbatch_wait(
        &[
            "-N",
            "1",
            "-n",
            "4",
            "-J",
            "isthmus-coupling",
            "-D",
            &workdir,
        ],
        &script,
        &output,
        GUARD * 2,
    );
    let out = std::fs::read_to_string(&output).unwrap_or_default();
    // The job's own output, as `sbatch -o` wrote it (shown with --nocapture).
    println!("{out}");
    let all = format!("exit {code}\n{out}\n{}", slurm.logs());
    assert_eq!(code, 0, "{all}");
    assert!(out.contains(&format!("on {node}, cpus 4")), "{all}");
    assert!(out.contains("== inside Slurm job "), "{all}");
    // Five ranks do not fit the allocation's four CPUs on its one node.
    assert!(out.contains("too-big exit 1"), "{all}");
    assert!(
        out.contains(&format!("host {node} has 4 free of 4 slots")),
        "{all}"
    );
    assert_coupled(&out, &all);
    let runs: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("== embedded vmd at "))
        .collect();
    assert_eq!(runs.len(), 2, "{all}");
    assert_gone(&embedded_pids(runs[1]), "the embedded vmd or a tasker");
}

/// Inside a Slurm allocation of two nodes (network namespaces, a slurmd in
/// each): `isthmus run` on the first node starts an etcd over TLS on its
/// address and its vmd, which starts the second node's vmd and taskers as
/// a job step (`isthmus node`); each vmd gets its node's address as its
/// data address, so the Open MPI ocean on h1 and the MPICH atmosphere on
/// h2 (each launcher on its own node) couple over TCP between the
/// namespaces with nothing in their `env`. A component without a host
/// goes to the node with the most free slots (h2, after the ocean took
/// two of h1's), as the dry run said. An `exec` component on h2 shows the
/// network it ran in and the Isthmus processes there; once the run has
/// ended, a step on h2 finds none of them left (the run deleted the host:
/// its vmd stopped, then its `isthmus node` and taskers).
#[test]
fn under_slurm_a_coupling_spreads_over_two_nodes() {
    let Some(hosts) = isthmus_testkit::netns::Hosts::for_test(2) else {
        return;
    };
    if isthmus_testkit::slurm::Slurm::skipped() {
        return;
    }
    let slurm = isthmus_testkit::slurm::Slurm::in_namespaces(&hosts, 4);
    let dir = TempDir::new("run-slurm2");
    coupling_demo(&dir);
    // The Isthmus processes in the network namespace of the caller (the
    // nodes share the PID namespace): `isthmus <name> <pid>` lines.
    write(
        &dir,
        "here.sh",
        "me=$(readlink /proc/self/ns/net)\n\
         for p in /proc/[0-9]*; do\n\
         \x20 [ \"$(readlink $p/ns/net 2>/dev/null)\" = \"$me\" ] || continue\n\
         \x20 c=$(cat $p/comm 2>/dev/null)\n\
         \x20 case $c in vmd|tasker|isthmus|etcd) echo \"isthmus $c ${p#/proc/}\";; esac\n\
         done\n",
    );
    // After the run: waits (20 s at most) until none is left on this node.
    write(
        &dir,
        "left.sh",
        "for i in $(seq 100); do\n\
         \x20 left=$(sh here.sh)\n\
         \x20 [ -z \"$left\" ] && break\n\
         \x20 sleep 0.2\n\
         done\n\
         echo \"left on $SLURMD_NODENAME: ${left:-none}\"\n",
    );
    let file = write(
        &dir,
        "two-nodes.toml",
        "[run]\n\
         timeout = 240\n\
         [[component]]\n\
         name = \"ocean\"\n\
         program = \"build/ocean\"\n\
         args = [\"3\"]\n\
         np = 2\n\
         impl = \"openmpi\"\n\
         host = \"h1\"\n\
         [[component]]\n\
         name = \"spread\"\n\
         program = \"/bin/true\"\n\
         np = 1\n\
         impl = \"exec\"\n\
         [[component]]\n\
         name = \"atmosphere\"\n\
         program = \"build/atmosphere\"\n\
         args = [\"3\"]\n\
         np = 2\n\
         impl = \"mpich\"\n\
         host = \"h2\"\n\
         [[component]]\n\
         name = \"where\"\n\
         program = \"/bin/sh\"\n\
         args = [\"-c\", \"ip -4 -o addr show | grep -v ' lo '; sh here.sh\"]\n\
         np = 1\n\
         impl = \"exec\"\n\
         host = \"h2\"\n",
    );
    let script = write(
        &dir,
        "job.sh",
        &format!(
            "#!/bin/sh\n\
             export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n\
             export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo\n\
             echo \"job $SLURM_JOB_ID on $SLURMD_NODENAME, nodes $SLURM_JOB_NODELIST\"\n\
             {isthmus} --vmd {nowhere} run --dry-run {file}\n\
             {isthmus} --vmd {nowhere} run {file}\n\
             code=$?\n\
             squeue -s -h -o 'step %i %j %N'\n\
             srun --overlap -N1 -n1 -w h2 sh left.sh\n\
             sh left.sh\n\
             exit $code\n",
            isthmus = bin("isthmus").display(),
            nowhere = nowhere(&dir),
            file = file.display(),
        ),
    );
    let output = dir.0.join("job.out");
    let workdir = dir.0.display().to_string();
    let code = slurm.sbatch_wait(
        &["-N", "2", "-n", "8", "-J", "isthmus-two", "-D", &workdir],
        &script,
        &output,
        GUARD * 2,
    );
    let out = std::fs::read_to_string(&output).unwrap_or_default();
    println!("{out}");
    let all = format!("exit {code}\n{out}\n{}", slurm.logs());
    assert_eq!(code, 0, "{all}");
    assert!(out.contains("on h1, nodes h[1-2]"), "{all}");
    // The dry run read the allocation: the hostless component on h2.
    let dry: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().take(4).collect())
        .collect();
    assert!(
        dry.contains(&vec!["spread", "exec", "1", "h2+"]),
        "the dry run did not place the hostless component on h2:\n{all}"
    );
    assert!(
        out.contains("== 2 nodes (h1 h2): an etcd (TLS) on h1 at "),
        "{all}"
    );
    assert_coupled(&out, &all);
    for (c, h) in [
        ("atmosphere", "h2"),
        ("ocean", "h1"),
        ("spread", "h2"),
        ("where", "h2"),
    ] {
        let running = format!("== {c}: running (job ");
        let line = out
            .lines()
            .find(|l| l.starts_with(&running))
            .unwrap_or_else(|| panic!("no running line of {c}:\n{all}"));
        assert!(
            line.ends_with(&format!(" on {h})")),
            "{c} not on {h}:\n{all}"
        );
    }
    let h2 = hosts.host(1).addr.to_string();
    assert!(
        out.lines()
            .any(|l| l.starts_with("[where:0] ") && l.contains(&format!("inet {h2}/"))),
        "the exec component did not run in h2's network:\n{all}"
    );
    // While the run ran, h2 had its vmd and taskers (what left.sh looks
    // for); after it, nothing of them on either node.
    for p in ["vmd", "tasker", "isthmus"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("[where:0] isthmus {p} "))),
            "no {p} seen on h2 during the run:\n{all}"
        );
    }
    assert!(out.contains("left on h2: none"), "{all}");
    assert!(out.contains("left on h1: none"), "{all}");
    drop(slurm);
    drop(hosts);
}

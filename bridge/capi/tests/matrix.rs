//! Issue 25: every MPI a cluster has. The smoke set — point-to-point with
//! mixed native and bridge requests (tests/c/exchange.c), every predefined
//! datatype at extreme values (tests/c/datatypes.c), MPICH's own `icsend`,
//! `icallreduce` (blocking, and with `-nonblocking=1`; Bcast is in the world's test), its `gather` on the merged communicator,
//! one `MPI_COMM_WORLD` of a part of each (tests/c/world.c), and a manager
//! of one spawning workers of the other (tests/c/spawn.c; not for the
//! standard ABI, "n/a")
//! — between every two implementations of `ISTHMUS_MATRIX` (scripts/test.sh sets it to the installed ones: Debian's
//! Open MPI 4.1 and MPICH 4.0, and Open MPI 5, MPICH 5 and Intel MPI from
//! the Python registry), and between two jobs of each implementation that
//! is not Debian's (Debian's pair has the full suite). It prints the matrix
//! (pairing × feature, ✔ or ✘ with the reason) and fails if a cell is ✘.

#![cfg(test)]

mod common;

use std::time::Duration;

use common::*;

/// One feature of the smoke set, run between `a` and `b`.
type Smoke = fn(Mpi, Mpi) -> Result<(), String>;

/// The `mixed` scenario of tests/c/exchange.c, two ranks a job: blocking and
/// nonblocking sends and receives, bridge requests waited beside native
/// ones, probes, both directions.
fn point_to_point(a: Mpi, b: Mpi) -> Result<(), String> {
    let dir = TempDir::new("matrix");
    let vmd = Vmd::start("localhost", &[]);
    let tag = format!("{}-{}", a.name(), b.name());
    let (ga, gb) = (format!("mxa-{tag}"), format!("mxb-{tag}"));
    let job = |mpi: Mpi, me: &str, other: &str| {
        let program = dir.0.join(format!("exchange-{}", mpi.name()));
        if !program.exists() {
            build_c(
                mpi,
                &[crate_dir().join("tests/c/exchange.c")],
                &program,
                Linking::Linked,
            );
        }
        Job {
            mpi,
            np: 2,
            program,
            args: vec!["mixed".into(), me.into(), other.into()],
            env: vec![],
            linking: Linking::Linked,
        }
    };
    let (oa, ob) = run_pair(
        &vmd,
        &job(a, &ga, &gb),
        &job(b, &gb, &ga),
        Duration::from_secs(180),
    );
    let passed = |o: &std::process::Output| {
        let out = String::from_utf8_lossy(&o.stdout);
        o.status.success() && (0..2).all(|r| out.contains(&format!("PASS mixed rank {r}")))
    };
    if passed(&oa) && passed(&ob) {
        Ok(())
    } else {
        Err(format!("A:\n{}\nB:\n{}", text(&oa), text(&ob)))
    }
}

fn datatypes(a: Mpi, b: Mpi) -> Result<(), String> {
    let (oa, ob) = datatypes_exchange(a, b);
    datatypes_verdict(&oa, &ob)
        .map(|_| ())
        .map_err(|why| format!("{why}\nA:\n{}\nB:\n{}", text(&oa), text(&ob)))
}

fn icsend(a: Mpi, b: Mpi) -> Result<(), String> {
    run_conformance("pt2pt/icsend.c", (2, 2), (a, b), &[])
}

fn icallreduce(a: Mpi, b: Mpi) -> Result<(), String> {
    run_conformance("coll/icallreduce.c", (2, 2), (a, b), &[])
}

/// MPICH's `gather.c` on the merge of the two jobs (MPI_Intercomm_merge):
/// one intracommunicator across both implementations.
fn merged_gather(a: Mpi, b: Mpi) -> Result<(), String> {
    run_conformance("merged/gather.c", (2, 2), (a, b), &[])
}

/// MPICH's `icallreduce` with `-nonblocking=1` (`MPI_Iallreduce` and
/// `MPI_Wait`): a nonblocking collective's schedule, advanced by the
/// interposed wait, in each implementation.
fn icallreduce_nonblocking(a: Mpi, b: Mpi) -> Result<(), String> {
    run_conformance("coll/icallreduce.c", (2, 2), (a, b), &["-nonblocking=1"])
}

/// tests/c/world.c as one `MPI_COMM_WORLD` of a part of `a` (part 0, 2
/// ranks) and a part of `b` (2 ranks), each started by its own launcher
/// (`ISTHMUS_WORLD`, issue 19): point-to-point, collectives, splits, the
/// world's group and an intercommunicator between the parts over it.
fn one_world(a: Mpi, b: Mpi) -> Result<(), String> {
    let dir = TempDir::new("matrix-world");
    let vmd = Vmd::start("localhost", &[]);
    let name = format!("mxw-{}-{}", a.name(), b.name());
    let part = |mpi: Mpi, index: u32| {
        let program = dir.0.join(format!("world-{}", mpi.name()));
        if !program.exists() {
            build_c(
                mpi,
                &[crate_dir().join("tests/c/world.c")],
                &program,
                Linking::Linked,
            );
        }
        Job {
            mpi,
            np: 2,
            program,
            args: vec!["2".into(), "2".into()],
            env: vec![
                ("ISTHMUS_WORLD".into(), format!("{name}:{index}/2")),
                ("ISTHMUS_WORLD_TIMEOUT".into(), "60".into()),
            ],
            linking: Linking::Linked,
        }
    };
    let (oa, ob) = run_pair(&vmd, &part(a, 0), &part(b, 1), Duration::from_secs(120));
    let passed = |o: &std::process::Output, ranks: [usize; 2], appnum: usize| {
        let out = String::from_utf8_lossy(&o.stdout);
        o.status.success()
            && ranks
                .iter()
                .all(|r| out.contains(&format!("PASS world rank {r} of 4 (appnum {appnum})")))
    };
    if passed(&oa, [0, 1], 0) && passed(&ob, [2, 3], 1) {
        Ok(())
    } else {
        Err(format!(
            "world.c failed\npart 0 ({}):\n{}\npart 1 ({}):\n{}",
            a.name(),
            text(&oa),
            b.name(),
            text(&ob)
        ))
    }
}

/// `MPI_Comm_spawn` across the pairing (tests/c/spawn.c): a one-rank
/// manager of `a` (libisthmus preloaded) spawns two workers of `b` through
/// the virtual machine (a tasker of each, giving the workers their own
/// libisthmus); they exchange, merge and disconnect.
fn spawn(a: Mpi, b: Mpi) -> Result<(), String> {
    let dir = TempDir::new("matrix-spawn");
    let mut impls = vec![a.name(), b.name()];
    impls.dedup();
    let m = Machine::start(&impls);
    let program = |mpi: Mpi| {
        let out = dir.0.join(format!("spawn-{}", mpi.name()));
        if !out.exists() {
            build_c(
                mpi,
                &[crate_dir().join("tests/c/spawn.c")],
                &out,
                Linking::Unmodified,
            );
        }
        out
    };
    let (manager, worker) = (program(a), program(b));
    let job = Job {
        mpi: a,
        np: 1,
        program: manager,
        args: vec![
            "manager".into(),
            worker.display().to_string(),
            "2".into(),
            "self".into(),
            b.name().into(),
        ],
        env: vec![],
        linking: Linking::Unmodified,
    };
    let o = finish(
        launch(&m.vmd, &job),
        Duration::from_secs(180),
        "spawn manager",
    );
    if o.status.success() && String::from_utf8_lossy(&o.stdout).contains("PASS manager rank 0") {
        Ok(())
    } else {
        Err(format!(
            "the {} manager spawning {} workers failed\n{}\njobs:\n{}",
            a.name(),
            b.name(),
            text(&o),
            m.jobs()
        ))
    }
}

const SMOKE: [(&str, Smoke); 8] = [
    ("p2p", point_to_point),
    ("datatypes", datatypes),
    ("icsend", icsend),
    ("icallreduce", icallreduce),
    ("iallreduce", icallreduce_nonblocking),
    ("merge", merged_gather),
    ("world", one_world),
    ("spawn", spawn),
];

/// Every pairing of the matrix that Debian's pair's full suite does not
/// already cover: each two implementations once (left as listed) and each
/// implementation other than Debian's with itself. The standard-ABI runs
/// pair with Debian's two and with each other only (one binary on MPICH 5
/// and on Intel MPI at once): their MPI is MPICH 5's or Intel's, which the
/// other pairings already meet.
fn pairings(impls: &[Mpi]) -> Vec<(Mpi, Mpi)> {
    let debian = |m: Mpi| matches!(m, Mpi::OpenMpi | Mpi::Mpich);
    let wanted = |a: Mpi, b: Mpi| match (a.is_abi(), b.is_abi()) {
        (false, false) => !(debian(a) && debian(b)),
        (true, true) => a != b,
        (true, false) => debian(b),
        (false, true) => debian(a),
    };
    let mut out = Vec::new();
    for (i, &a) in impls.iter().enumerate() {
        for &b in &impls[i..] {
            if wanted(a, b) {
                out.push((a, b));
            }
        }
    }
    // Without another implementation, the pairing that always exists, so
    // that the test never passes without running.
    if out.is_empty() {
        out.push((Mpi::OpenMpi, Mpi::Mpich));
    }
    out
}

/// One row of the matrix: the pairing's cells, and the failures' reasons.
fn row(a: Mpi, b: Mpi) -> (String, Vec<String>) {
    let mut line = format!("{:<20}", format!("{} ⇄ {}", a.name(), b.name()));
    let mut failures = Vec::new();
    for (feature, smoke) in SMOKE {
        // The standard ABI's programs have no tasker of their own
        // libisthmus here (the abi launcher picks a runtime): no spawn.
        if feature == "spawn" && (a.is_abi() || b.is_abi()) {
            line.push_str(&format!(" {:<12}", "n/a"));
            continue;
        }
        let cell = match smoke(a, b) {
            Ok(()) => "✔".to_string(),
            Err(why) => {
                let first = why.lines().next().unwrap_or("").to_string();
                failures.push(format!("{} ⇄ {} {feature}: {why}", a.name(), b.name()));
                format!("✘ {first}")
            }
        };
        line.push_str(&format!(" {cell:<12}"));
    }
    line.push('\n');
    (line, failures)
}

/// Rows run two at a time (`ISTHMUS_MATRIX_JOBS` to change): each cell
/// has its own vmd, directory and group names, and a cell mostly waits on
/// launchers, so two rows share the machine's cores well; the table keeps
/// the pairings' order.
#[test]
fn every_pairing_passes_the_smoke_set() {
    let impls = Mpi::matrix();
    let pairs = pairings(&impls);
    let workers = std::env::var("ISTHMUS_MATRIX_JOBS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(2)
        .clamp(1, pairs.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let rows = std::sync::Mutex::new(vec![None; pairs.len()]);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(a, b)) = pairs.get(i) else { break };
                let done = row(a, b);
                rows.lock().expect("the rows' lock")[i] = Some(done);
            });
        }
    });
    let mut table = format!("{:<20}", "pairing");
    for (feature, _) in SMOKE {
        table.push_str(&format!(" {feature:<12}"));
    }
    table.push('\n');
    let mut failures = Vec::new();
    for (line, why) in rows
        .into_inner()
        .expect("the rows' lock")
        .into_iter()
        .flatten()
    {
        table.push_str(&line);
        failures.extend(why);
    }
    println!(
        "MPI matrix ({} implementations: {}):\n{table}",
        impls.len(),
        impls.iter().map(|m| m.name()).collect::<Vec<_>>().join(" ")
    );
    assert!(
        failures.is_empty(),
        "{} of {} cells failed:\n{table}\n{}",
        failures.len(),
        pairs.len() * SMOKE.len(),
        failures.join("\n\n")
    );
}

/// The matrix's two standard-ABI columns are one binary on two MPIs: a
/// program built once with MPICH 5's `mpicc_abi` reports MPICH 5 under the
/// `abi` launcher and Intel MPI under the `abi-impi` one.
#[test]
fn one_standard_abi_binary_runs_on_mpich_5_and_on_intel_mpi() {
    let dir = TempDir::new("abi-binary");
    let program = dir.0.join("library_version");
    build_c(
        Mpi::Abi,
        &[crate_dir().join("tests/c/library_version.c")],
        &program,
        Linking::Unmodified,
    );
    for (mpi, want) in [
        (Mpi::Abi, "LIBRARY MPICH Version:"),
        (Mpi::AbiImpi, "LIBRARY Intel(R) MPI Library"),
    ] {
        let mut cmd = std::process::Command::new(mpi.mpiexec());
        cmd.args(["-n", "1"])
            .arg(&program)
            .env_remove("LD_LIBRARY_PATH")
            .envs(mpi.env());
        let o = finish(
            cmd.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start the launcher"),
            Duration::from_secs(60),
            mpi.name(),
        );
        assert!(
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains(want),
            "{} did not run on the MPI it names:\n{}",
            mpi.name(),
            text(&o)
        );
    }
}

/// The standard ABI through the resource manager (`isthmus run`, no vmd
/// beforehand: it embeds one with a tasker per implementation): a program
/// built with `mpicc_abi` is read from its binary as `abi`, started by the
/// `abi` tasker on MPICH 5's runtime (its default), and exchanges with a
/// Debian Open MPI job (tests/c/exchange.c's `mixed` scenario, two ranks
/// each).
#[test]
fn isthmus_run_couples_a_standard_abi_program_with_open_mpi() {
    let dir = TempDir::new("abi-run");
    let program = |mpi: Mpi| {
        let out = dir.0.join(format!("exchange-{}", mpi.name()));
        build_c(
            mpi,
            &[crate_dir().join("tests/c/exchange.c")],
            &out,
            Linking::Linked,
        );
        out
    };
    let (abi, ompi) = (program(Mpi::Abi), program(Mpi::OpenMpi));
    let file = dir.0.join("coupling.toml");
    let component = |name: &str, program: &std::path::Path, me: &str, other: &str| {
        format!(
            "[[component]]\nname = \"{name}\"\nprogram = \"{}\"\nargs = [\"mixed\", \"{me}\", \"{other}\"]\nnp = 2\n",
            program.display()
        )
    };
    std::fs::write(
        &file,
        format!(
            "[run]\ntimeout = 120\n{}{}",
            component("abi", &abi, "abirun-a", "abirun-b"),
            component("ompi", &ompi, "abirun-b", "abirun-a")
        ),
    )
    .expect("write coupling.toml");
    let isthmus = || {
        let mut c = std::process::Command::new(isthmus_testkit::bin("isthmus"));
        c.arg("--vmd")
            .arg(format!("unix:{}", dir.0.join("no-vmd.sock").display()))
            .arg("run")
            // Cargo's names this test's flavour (Open MPI's): the jobs
            // load their own.
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("ISTHMUS_ABI_RUNTIME")
            .env("OMPI_MCA_btl_tcp_if_include", "lo")
            .env("OMPI_MCA_oob_tcp_if_include", "lo")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c
    };
    let plan = isthmus()
        .arg("--dry-run")
        .arg(&file)
        .output()
        .expect("isthmus run --dry-run");
    let table = String::from_utf8_lossy(&plan.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("abi ") && l.contains("abi*"))
            && table
                .lines()
                .any(|l| l.starts_with("ompi ") && l.contains("openmpi*")),
        "the implementations read from the binaries:\n{}",
        text(&plan)
    );
    let child = isthmus().arg(&file).spawn().expect("start isthmus run");
    let o = finish(child, Duration::from_secs(150), "isthmus run");
    let out = String::from_utf8_lossy(&o.stdout);
    let passed = ["abi", "ompi"]
        .iter()
        .all(|c| (0..2).all(|r| out.contains(&format!("[{c}:{r}] PASS mixed rank {r}"))));
    assert!(o.status.success() && passed, "isthmus run:\n{}", text(&o));
}

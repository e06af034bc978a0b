//! Issue 25: every MPI a cluster has. The smoke set — point-to-point with
//! mixed native and bridge requests (tests/c/exchange.c), every predefined
//! datatype at extreme values (tests/c/datatypes.c), MPICH's own `icsend`,
//! `icallreduce` (blocking, and with `-nonblocking=1`; Bcast is in the world's test), its `gather` on the merged communicator,
//! one `MPI_COMM_WORLD` of a part of each (tests/c/world.c), and a manager
//! of one spawning workers of the other (tests/c/spawn.c; standard-ABI
//! workers through the `abi` tasker, on the runtime asked for). The
//! point-to-point and spawn cells also check that every job ran on its own
//! MPI library (`MPI_Get_library_version`): the standard ABI's binaries on
//! the runtime of their column. On chosen rows only (`runs`, for CI's
//! time): mpi4py (tests/python/exchange.py, the registry environments'
//! binary wheel) and Fortran (`mpif.h`, Intel MPI's `mpif90`: the only
//! registry Fortran gfortran can use) against Debian's other family
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
    if !(passed(&oa) && passed(&ob)) {
        return Err(format!("A:\n{}\nB:\n{}", text(&oa), text(&ob)));
    }
    ran_on(&oa, a, "LIBRARY ")?;
    ran_on(&ob, b, "LIBRARY ")
}

/// The library line (after `prefix`) that `o`'s program printed is
/// `mpi`'s, or why not.
fn ran_on(o: &std::process::Output, mpi: Mpi, prefix: &str) -> Result<(), String> {
    let found = lines(o, prefix);
    if !found.is_empty() && found.iter().all(|l| mpi.is_library(l)) {
        Ok(())
    } else {
        Err(format!(
            "not {}'s MPI library: {prefix}{found:?}\n{}",
            mpi.name(),
            text(o)
        ))
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
/// libisthmus, the info key `isthmus_impl` naming `b`); they exchange,
/// merge and disconnect, and each side must have run on its own MPI
/// library. Standard-ABI workers go to the `abi` tasker, on the runtime
/// the key names (`abi`: the tasker's, MPICH 5's; `abi-impi`: Intel's);
/// between the two standard-ABI runs the manager is the Intel one and names
/// none: its children run on the parent's runtime.
fn spawn(a: Mpi, b: Mpi) -> Result<(), String> {
    let dir = TempDir::new("matrix-spawn");
    let (manager_mpi, worker_mpi, key) = match (a.is_abi(), b.is_abi()) {
        (true, true) => (Mpi::AbiImpi, Mpi::AbiImpi, None),
        _ => (a, b, Some(b.name())),
    };
    let mut impls = vec![manager_mpi.tasker(), worker_mpi.tasker()];
    impls.dedup();
    let m = Machine::start(&impls);
    let program = |mpi: Mpi| {
        let out = dir.0.join(format!("spawn-{}", mpi.flavour()));
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
    let (manager, worker) = (program(manager_mpi), program(worker_mpi));
    let mut args = vec![
        "manager".to_string(),
        worker.display().to_string(),
        "2".into(),
        "self".into(),
    ];
    args.extend(key.map(str::to_string));
    let job = Job {
        mpi: manager_mpi,
        np: 1,
        program: manager,
        args,
        env: vec![],
        linking: Linking::Unmodified,
    };
    let o = finish(
        launch(&m.vmd, &job),
        Duration::from_secs(180),
        "spawn manager",
    );
    if !(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("PASS manager rank 0")) {
        return Err(format!(
            "the {} manager spawning {} workers failed\n{}\njobs:\n{}",
            manager_mpi.name(),
            worker_mpi.name(),
            text(&o),
            m.jobs()
        ));
    }
    ran_on(&o, manager_mpi, "LIBRARY ")?;
    ran_on(&o, worker_mpi, "CHILD-LIBRARY ")
}

/// mpi4py on both sides (tests/python/exchange.py's `buffers`, two ranks a
/// job, the isthmus package over the preloaded libisthmus): the registry's
/// implementations' mpi4py is the binary wheel in their environment, which
/// loads that environment's MPI library.
fn python(a: Mpi, b: Mpi) -> Result<(), String> {
    let vmd = Vmd::start("localhost", &[]);
    let (ga, gb) = (
        format!("mxpa-{}-{}", a.name(), b.name()),
        format!("mxpb-{}-{}", a.name(), b.name()),
    );
    let job = |mpi: Mpi, me: &str, other: &str| {
        python_script(mpi, 2, "exchange.py", &[me, other, "buffers"])
    };
    let (oa, ob) = run_pair(
        &vmd,
        &job(a, &ga, &gb),
        &job(b, &gb, &ga),
        Duration::from_secs(120),
    );
    let passed = |o: &std::process::Output| {
        let out = String::from_utf8_lossy(&o.stdout);
        o.status.success() && (0..2).all(|r| out.contains(&format!("PASS buffers rank {r}")))
    };
    if !(passed(&oa) && passed(&ob)) {
        return Err(format!("A:\n{}\nB:\n{}", text(&oa), text(&ob)));
    }
    ran_on(&oa, a, "LIBRARY ")?;
    ran_on(&ob, b, "LIBRARY ")
}

/// A Fortran program of `b` (tests/fortran/exchange.F90 with `mpif.h`, the
/// only binding a registry implementation offers gfortran: Intel MPI's)
/// exchanging with the C program of `a` (tests/fortran/exchange.c), two
/// ranks each.
fn fortran(a: Mpi, b: Mpi) -> Result<(), String> {
    let dir = TempDir::new("matrix-fortran");
    let sources = crate_dir().join("tests/fortran");
    let mpifort = b
        .mpifort()
        .ok_or_else(|| format!("{} has no Fortran wrapper", b.name()))?;
    let program = dir.0.join(format!("fortran-{}", b.name()));
    let lib = lib_dir(b);
    let o = std::process::Command::new(&mpifort)
        .envs(b.env())
        .args([
            "-O2",
            "-DUSE_MPIF_H",
            "-fallow-argument-mismatch",
            "-w",
            "-o",
        ])
        .arg(&program)
        .arg(sources.join("exchange.F90"))
        .arg(format!("-L{}", lib.display()))
        .arg("-listhmus")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", mpifort.display()))?;
    if !o.status.success() {
        return Err(format!("{} failed:\n{}", mpifort.display(), text(&o)));
    }
    let peer = dir.0.join(format!("c-{}", a.name()));
    build_c(a, &[sources.join("exchange.c")], &peer, Linking::Linked);
    let vmd = Vmd::start("localhost", &[]);
    let tag = format!("mxf-{}-{}", a.name(), b.name());
    let (gc, gf) = (format!("{tag}-c"), format!("{tag}-f"));
    let job = |mpi: Mpi, program: &std::path::Path, me: &str, other: &str| Job {
        mpi,
        np: 2,
        program: program.to_path_buf(),
        args: vec![me.into(), other.into()],
        env: vec![],
        linking: Linking::Linked,
    };
    let (oc, of) = run_pair(
        &vmd,
        &job(a, &peer, &gc, &gf),
        &job(b, &program, &gf, &gc),
        Duration::from_secs(120),
    );
    let passed = |o: &std::process::Output, says: &str| {
        let out = String::from_utf8_lossy(&o.stdout);
        o.status.success()
            && (0..2).all(|r| out.contains(&format!("{says} rank {r}: all checks passed")))
    };
    if passed(&oc, "c") && passed(&of, "fortran") {
        Ok(())
    } else {
        Err(format!(
            "C ({}):\n{}\nFortran ({}):\n{}",
            a.name(),
            text(&oc),
            b.name(),
            text(&of)
        ))
    }
}

/// Whether the matrix runs `feature` between `a` and `b`; the others are
/// "–" in the table. The costly cells run where they say something the
/// full suite and the other rows do not (CI's time is bounded): mpi4py and
/// Fortran between each registry implementation that has them and the
/// Debian one of the other family; a standard-ABI spawn with Debian's MPICH
/// asking for Intel's runtime, and between the two runtimes (the parent's
/// runtime for its children; the `abi` tasker's default runtime is
/// `isthmus_run_couples_a_standard_abi_program_with_open_mpi`'s).
fn runs(feature: &str, a: Mpi, b: Mpi) -> bool {
    let debian = |m: Mpi| matches!(m, Mpi::OpenMpi | Mpi::Mpich);
    let other_family = debian(a) && !debian(b) && !b.is_abi() && a.family() != b.family();
    let wanted = std::env::var("ISTHMUS_MATRIX_FEATURES")
        .map(|list| list.split_whitespace().any(|f| f == feature))
        .unwrap_or(true);
    wanted
        && match feature {
            "python" => other_family,
            "fortran" => other_family && b.mpifort().is_some(),
            "spawn" if a.is_abi() || b.is_abi() => matches!(
                (a, b),
                (Mpi::Mpich, Mpi::AbiImpi) | (Mpi::Abi, Mpi::AbiImpi)
            ),
            _ => true,
        }
}

const SMOKE: [(&str, Smoke); 10] = [
    ("p2p", point_to_point),
    ("datatypes", datatypes),
    ("icsend", icsend),
    ("icallreduce", icallreduce),
    ("iallreduce", icallreduce_nonblocking),
    ("merge", merged_gather),
    ("world", one_world),
    ("spawn", spawn),
    ("python", python),
    ("fortran", fortran),
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
        if !runs(feature, a, b) {
            line.push_str(&format!(" {:<12}", "–"));
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
    // ISTHMUS_MATRIX_FEATURES="p2p spawn" runs those cells only: each must be one.
    if let Ok(list) = std::env::var("ISTHMUS_MATRIX_FEATURES") {
        for f in list.split_whitespace() {
            assert!(
                SMOKE.iter().any(|(name, _)| *name == f),
                "ISTHMUS_MATRIX_FEATURES: unknown feature {f}"
            );
        }
    }
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

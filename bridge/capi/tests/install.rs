//! `scripts/install.sh` into a temporary prefix (twice: it must be
//! idempotent), then programs built only with the installed files through
//! pkg-config — C, Fortran (`use mpi`) and Fortran (`use mpi_f08` with the
//! installed `isthmus_f08` module) for each implementation — and two of
//! them run against each other from the installed libraries.
//!
//! The script runs with `--no-build`: the libraries and binaries this test
//! suite was built with (scripts/test.sh builds both flavours) are what it
//! installs; a nested cargo would wait on this build's lock.

#![cfg(test)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

fn install(prefix: &Path) {
    let o = Command::new("bash")
        .arg(crate_dir().join("../../scripts/install.sh"))
        .arg("--no-build")
        .arg(prefix)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run scripts/install.sh");
    assert!(
        o.status.success(),
        "install.sh failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn pkg_config(prefix: &Path, mpi: Mpi) -> Vec<String> {
    let o = Command::new("pkg-config")
        .args(["--cflags", "--libs", &format!("isthmus-{}", mpi.name())])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .expect("run pkg-config");
    assert!(
        o.status.success(),
        "pkg-config isthmus-{} failed:\n{}",
        mpi.name(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// `compiler source $(pkg-config ...) -o out` — the README's line.
fn build(compiler: &str, source: &Path, flags: &[String], out: &Path) {
    // In the output's directory: a Fortran source's modules (`.mod`) are
    // written where the compiler runs, not into the source tree.
    let mut cmd = Command::new(compiler);
    if let Some(dir) = out.parent() {
        cmd.current_dir(dir);
    }
    let o = cmd
        .arg(source)
        .args(flags)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        o.status.success(),
        "{compiler} {} $(pkg-config ...) failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn source(name: &str) -> PathBuf {
    crate_dir().join("tests/fortran").join(name)
}

#[test]
fn install_then_build_with_pkg_config() {
    let dir = TempDir::new("install");
    let prefix = dir.0.join("prefix");
    install(&prefix);
    install(&prefix);
    for f in [
        "bin/vmd",
        "bin/isthmus",
        "include/isthmus.h",
        "lib/isthmus/openmpi/libisthmus.so",
        "lib/isthmus/mpich/libisthmus.so",
        "include/isthmus/openmpi/isthmus_f08.mod",
        "include/isthmus/mpich/isthmus_f08.mod",
        "include/isthmus/openmpi/isthmus_vm.mod",
        "include/isthmus/mpich/isthmus_vm.mod",
        "lib/isthmus/openmpi/libisthmus_vm.a",
        "lib/isthmus/mpich/libisthmus_vm.a",
        "lib/pkgconfig/isthmus-openmpi.pc",
        "lib/pkgconfig/isthmus-mpich.pc",
    ] {
        assert!(prefix.join(f).exists(), "{f} was not installed");
    }

    let mut built = Vec::new();
    for mpi in [Mpi::OpenMpi, Mpi::Mpich] {
        let flags = pkg_config(&prefix, mpi);
        let n = mpi.name();
        let c = dir.0.join(format!("c-{n}"));
        build(&format!("mpicc.{n}"), &source("exchange.c"), &flags, &c);
        let f = dir.0.join(format!("fortran-{n}"));
        build(&format!("mpifort.{n}"), &source("exchange.F90"), &flags, &f);
        let f08 = dir.0.join(format!("f08-{n}"));
        build(
            &format!("mpifort.{n}"),
            &source("exchange_f08.f90"),
            &flags,
            &f08,
        );
        // The virtual machine's calls from Fortran: the installed
        // isthmus_vm module and its archive, through pkg-config alone.
        let vm = dir.0.join(format!("vmcalls-{n}"));
        build(&format!("mpifort.{n}"), &source("vmcalls.f90"), &flags, &vm);
        built.push((mpi, c, f, f08));
    }

    // Two of them against each other, each loading the installed library
    // of its implementation (the rpath from pkg-config).
    let vmd = Vmd::start("localhost", &[]);
    let (ompi_f08, mpich_c) = (built[0].3.clone(), built[1].1.clone());
    let job = |mpi: Mpi, program: PathBuf, me: &str, other: &str| Job {
        mpi,
        np: 2,
        program,
        args: vec![me.into(), other.into()],
        env: vec![],
        linking: Linking::Linked,
    };
    let (oa, ob) = run_pair(
        &vmd,
        &job(Mpi::OpenMpi, ompi_f08, "installed-a", "installed-b"),
        &job(Mpi::Mpich, mpich_c, "installed-b", "installed-a"),
        Duration::from_secs(120),
    );
    let both = format!("f08 (Open MPI):\n{}\nC (MPICH):\n{}", text(&oa), text(&ob));
    assert!(oa.status.success() && ob.status.success(), "{both}");
    for r in 0..2 {
        assert!(
            String::from_utf8_lossy(&oa.stdout)
                .contains(&format!("f08 rank {r}: all checks passed")),
            "{both}"
        );
        assert!(
            String::from_utf8_lossy(&ob.stdout).contains(&format!("c rank {r}: all checks passed")),
            "{both}"
        );
    }
}

/// The `ExecStart=` command of a unit file the install wrote, its
/// specifiers (`%t` runtime directory, `%i` instance) filled in as systemd
/// would: the test starts exactly what the unit starts.
fn exec_start(unit: &Path, runtime: &Path, instance: &str) -> Vec<String> {
    let text = std::fs::read_to_string(unit).expect("read the unit");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap_or_else(|| panic!("no ExecStart in {}:\n{text}", unit.display()));
    line.split_whitespace()
        .map(|w| {
            w.replace("%t", &runtime.display().to_string())
                .replace("%i", instance)
        })
        .collect()
}

/// The environment `module load isthmus` gives (environment-modules, from
/// the installed modulefile), as NAME → value.
fn module_env(prefix: &Path) -> Vec<(String, String)> {
    let script = format!(
        ". /usr/share/modules/init/bash && module use {}/share/modulefiles && module load isthmus && env -0",
        prefix.display()
    );
    let o = Command::new("bash")
        .args(["-c", &script])
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .output()
        .expect("run bash with environment-modules");
    assert!(
        o.status.success(),
        "module load isthmus failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .split('\0')
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| ["PATH", "PKG_CONFIG_PATH", "PYTHONPATH", "ISTHMUS_PREFIX"].contains(k))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// A command from the installed prefix only: the module's environment, no
/// cargo paths, the test's runtime and state directories.
fn installed(program: &str, env: &[(String, String)], runtime: &Path, state: &Path) -> Command {
    let mut c = Command::new(program);
    c.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("HOME", state)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("XDG_STATE_HOME", state)
        .env("RUST_LOG", "warn")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_tcp_if_include", "lo")
        .env("OMPI_MCA_oob_tcp_if_include", "lo")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The README's "installed Isthmus from scratch": install; the module
/// gives the paths; a vmd and a tasker per implementation started by the
/// installed systemd units' own command lines; `isthmus spawn` a job;
/// `isthmus run` a coupling of programs built only with the installed
/// files (Fortran on Open MPI and C on MPICH, ocean and atmosphere) beside
/// a Python job on Open MPI using the installed `isthmus` package and a C
/// peer on MPICH; `isthmus halt` stops it all.
#[test]
fn an_installed_prefix_starts_spawns_couples_and_stops_from_scratch() {
    let dir = TempDir::new("installed");
    let prefix = dir.0.join("prefix");
    install(&prefix);
    for f in [
        "bin/tasker",
        "lib/python/isthmus/__init__.py",
        "lib/systemd/user/isthmus-vmd.service",
        "lib/systemd/user/isthmus-tasker@.service",
        "share/modulefiles/isthmus/0.1.0",
    ] {
        assert!(prefix.join(f).exists(), "{f} was not installed");
    }
    let runtime = dir.0.join("run");
    let state = dir.0.join("state");
    for d in [&runtime, &state] {
        std::fs::create_dir_all(d).expect("mkdir");
        std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .expect("chmod");
    }

    // The units pass systemd's own check (user manager, our runtime dir).
    let units = prefix.join("lib/systemd/user");
    let o = Command::new("systemd-analyze")
        .args(["verify", "--user"])
        .arg(units.join("isthmus-vmd.service"))
        .arg(units.join("isthmus-tasker@openmpi.service"))
        .current_dir(&units)
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .expect("run systemd-analyze");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "systemd-analyze verify:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let env = module_env(&prefix);
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    assert!(
        path.starts_with(&format!("{}/bin:", prefix.display())),
        "module PATH: {path}"
    );

    // Start as the units do (this two-core machine gets 8 slots: the
    // coupling runs 8 ranks).
    let mut vmd_cmd = exec_start(&units.join("isthmus-vmd.service"), &runtime, "");
    vmd_cmd.extend(["--slots".into(), "8".into()]);
    let mut vmd = isthmus_testkit::Proc(
        installed(&vmd_cmd[0], &env, &runtime, &state)
            .args(&vmd_cmd[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the installed vmd"),
    );
    let socket = runtime.join("isthmus/vmd.sock");
    let console = |args: &[&str]| {
        let o = installed("isthmus", &env, &runtime, &state)
            .args(args)
            .output()
            .expect("run the installed console");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let start = std::time::Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the installed vmd did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut taskers = Vec::new();
    for i in ["openmpi", "mpich", "exec"] {
        let cmd = exec_start(&units.join("isthmus-tasker@.service"), &runtime, i);
        taskers.push(isthmus_testkit::Proc(
            installed(&cmd[0], &env, &runtime, &state)
                .args(&cmd[1..])
                .env("ISTHMUS_VMD", format!("unix:{}", socket.display()))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start an installed tasker"),
        ));
    }
    loop {
        let (_, out, _) = console(&["conf"]);
        if ["openmpi", "mpich", "exec"].iter().all(|i| out.contains(i)) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the taskers did not register:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Spawn.
    let (code, out, err) = console(&["spawn", "--wait", "-n", "2", "/bin/echo", "spawned"]);
    assert_eq!(code, Some(0), "isthmus spawn:\n{out}\n{err}");
    assert_eq!(
        out.matches("spawned").count(),
        2,
        "isthmus spawn:\n{out}\n{err}"
    );

    // Couple: programs built with the installed files only.
    let pkg = |mpi: Mpi| pkg_config(&prefix, mpi);
    let examples = crate_dir().join("../../examples/coupling");
    let (ocean, atmosphere, peer) = (
        dir.0.join("ocean"),
        dir.0.join("atmosphere"),
        dir.0.join("peer"),
    );
    build(
        "mpifort.openmpi",
        &examples.join("ocean.f90"),
        &pkg(Mpi::OpenMpi),
        &ocean,
    );
    let mut atm_flags = pkg(Mpi::Mpich);
    atm_flags.push("-lm".into());
    build(
        "mpicc.mpich",
        &examples.join("atmosphere.c"),
        &atm_flags,
        &atmosphere,
    );
    build(
        "mpicc.mpich",
        &crate_dir().join("tests/python/peer.c"),
        &pkg(Mpi::Mpich),
        &peer,
    );
    let python_path = env
        .iter()
        .find(|(k, _)| k == "PYTHONPATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let toml = format!(
        "[run]\ntimeout = 300\n\
         [[component]]\nname = \"atmosphere\"\nprogram = \"{atm}\"\nargs = [\"3\"]\nnp = 2\n\
         [[component]]\nname = \"ocean\"\nprogram = \"{oce}\"\nargs = [\"3\"]\nnp = 2\n\
         [[component]]\nname = \"peer\"\nprogram = \"{peer}\"\nargs = [\"c-b\", \"py-a\"]\nnp = 2\n\
         [[component]]\nname = \"python\"\nprogram = \"/usr/bin/python3\"\n\
         args = [\"{script}\", \"py-a\", \"c-b\", \"buffer\"]\nnp = 2\nimpl = \"openmpi\"\n\
         env = {{ PYTHONPATH = \"{python_path}\", LD_PRELOAD = \"{preload}\" }}\n",
        atm = atmosphere.display(),
        oce = ocean.display(),
        peer = peer.display(),
        script = crate_dir().join("tests/python/exchange.py").display(),
        preload = prefix.join("lib/isthmus/openmpi/libisthmus.so").display(),
    );
    let file = dir.0.join("coupling.toml");
    std::fs::write(&file, toml).expect("write coupling.toml");
    let child = installed("isthmus", &env, &runtime, &state)
        .arg("run")
        .arg(&file)
        .spawn()
        .expect("start isthmus run");
    let o = finish(child, Duration::from_secs(240), "isthmus run");
    let all = text(&o);
    assert!(o.status.success(), "isthmus run:\n{all}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    for want in [
        "[atmosphere:1] atmosphere rank 1 step 3 received SST  17.80  18.30  18.80  19.30",
        "[ocean:0] ocean: done",
        "[atmosphere:0] atmosphere: done",
        "[python:0] PASS buffer rank 0",
        "[python:1] PASS buffer rank 1",
        "[peer:0] PASS buffer rank 0",
        "[peer:1] PASS buffer rank 1",
    ] {
        assert!(stdout.contains(want), "no {want:?}:\n{all}");
    }

    // Stop: the vmd halts; its taskers follow it.
    let (code, out, err) = console(&["halt"]);
    assert_eq!(code, Some(0), "isthmus halt:\n{out}\n{err}");
    assert!(
        vmd.wait_exit(Duration::from_secs(30)).is_some(),
        "the vmd did not stop on halt"
    );
    for t in &mut taskers {
        assert!(
            t.wait_exit(Duration::from_secs(30)).is_some(),
            "a tasker outlived its vmd"
        );
    }
}

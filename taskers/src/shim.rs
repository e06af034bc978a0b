//! The rank shim: `tasker rank-shim -- program args…`, run by the launcher in
//! place of each rank. It starts the program as its child and tells the
//! tasker, over the Unix socket named in `ISTHMUS_TASKER_SOCKET`:
//!
//! ```text
//! start JOB RANK PID
//! exit JOB RANK code N | exit JOB RANK signal N
//! ```
//!
//! (RANK is `-` when the launcher gave none). In a job whose ranks run
//! different commands (`MPI_Comm_spawn_multiple`), each shim starts its
//! rank's command instead of the job's program. Why a shim: launchers report
//! a job's exit, not each rank's, and not a rank's pid; the shim gives exact
//! per-rank exits (code or signal) within milliseconds and pids to signal.
//! It forwards catchable signals to the program, ends the same way the
//! program did (so the launcher sees what it would have seen), and kills the
//! program if the tasker dies (its socket closes), so no rank outlives it.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use isthmus_types::env::{SPAWN_APPNUM, SPAWN_APPS, SPAWN_PORT};
use isthmus_types::job::RankCommands;

/// Signals the shim passes on to the program.
const FORWARDED: &[libc::c_int] = &[
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED {
            libc::sigaddset(&mut set, *s);
        }
        set
    }
}

/// The command this rank runs: `program args`, or, in a job whose ranks
/// run different commands (`MPI_Comm_spawn_multiple`'s children,
/// [`SPAWN_APPS`]), the one its rank falls in, with its working directory
/// and variables. A rank the commands do not cover runs `program`. A
/// spawned job's rank is told its command's index ([`SPAWN_APPNUM`]).
fn command_of_rank(program: &OsString, args: &[OsString], rank: &str) -> Command {
    let commands = std::env::var(SPAWN_APPS)
        .ok()
        .map(|text| RankCommands::decode(&text));
    let (chosen, appnum) = match (commands, rank.parse::<u32>()) {
        (Some(Ok(commands)), Ok(r)) => match commands.index_of_rank(r) {
            Some(i) => (commands.0.get(i).cloned(), i),
            None => (None, 0),
        },
        (Some(Err(e)), _) => {
            eprintln!("isthmus rank shim: {SPAWN_APPS} unreadable ({e}); running {program:?}");
            (None, 0)
        }
        _ => (None, 0),
    };
    let mut cmd = match chosen {
        Some(c) => {
            let mut cmd = Command::new(&c.program);
            cmd.args(&c.args).envs(&c.env);
            if !c.cwd.is_empty() {
                cmd.current_dir(&c.cwd);
            }
            cmd
        }
        None => {
            let mut cmd = Command::new(program);
            cmd.args(args);
            cmd
        }
    };
    cmd.env_remove(SPAWN_APPS);
    // A spawn's child learns its command's index (its MPI_APPNUM): the
    // launcher started one application, so its own MPI says 0 for all.
    if std::env::var_os(SPAWN_PORT).is_some() {
        cmd.env(SPAWN_APPNUM, appnum.to_string());
    }
    cmd
}

/// Runs `program` as a rank; returns only with an exit code for the shim.
pub fn run(program: &OsString, args: &[OsString]) -> i32 {
    let job = std::env::var(crate::ENV_JOB).unwrap_or_else(|_| "0".into());
    let rank = std::env::var(crate::ENV_RANK_VAR)
        .ok()
        .and_then(|var| std::env::var(var).ok())
        .filter(|r| r.parse::<u32>().is_ok())
        .unwrap_or_else(|| "-".into());
    let socket = std::env::var_os(crate::ENV_TASKER_SOCKET);

    // Block the forwarded signals before any thread exists, so they all
    // reach the sigwait thread below; the child unblocks them again.
    let set = signal_set();
    // SAFETY: set is initialised; a null old-set pointer is allowed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };

    let mut cmd = command_of_rank(program, args, &rank);
    cmd.env_remove(crate::ENV_TASKER_SOCKET)
        .env_remove(crate::ENV_RANK_VAR);
    crate::preload::into_program(&mut cmd);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            // The rank dies with its shim (e.g. when the launcher kills it).
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut report = socket.and_then(|path| UnixStream::connect(path).ok());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "isthmus rank shim: cannot start {}: {e}",
                program.to_string_lossy()
            );
            if let Some(s) = report.as_mut() {
                let _ = writeln!(s, "exit {job} {rank} code 127");
            }
            return 127;
        }
    };
    let pid = child.id();
    if let Some(s) = report.as_mut() {
        let _ = writeln!(s, "start {job} {rank} {pid}");
    }

    std::thread::spawn(move || loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: set is initialised and sig is a valid out-pointer.
        if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
            // SAFETY: plain kill(2) on our own child.
            unsafe { libc::kill(pid as libc::pid_t, sig) };
        }
    });
    let done = Arc::new(AtomicBool::new(false));
    if let Some(mut watch) = report.as_ref().and_then(|s| s.try_clone().ok()) {
        let done = done.clone();
        std::thread::spawn(move || {
            // The tasker never writes: end of stream means it is gone.
            let mut buf = [0u8; 64];
            while matches!(watch.read(&mut buf), Ok(n) if n > 0) {}
            if !done.load(Ordering::SeqCst) {
                // SAFETY: plain kill(2) on our own child.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
        });
    }

    let status = loop {
        match child.wait() {
            Ok(s) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("isthmus rank shim: waiting for rank: {e}");
                return 1;
            }
        }
    };
    done.store(true, Ordering::SeqCst);
    let how = match (status.code(), status.signal()) {
        (Some(c), _) => format!("code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        (None, None) => "code 1".to_string(),
    };
    if let Some(s) = report.as_mut() {
        let _ = writeln!(s, "exit {job} {rank} {how}");
        let _ = s.flush();
    }
    if let Some(sig) = status.signal() {
        // End as the rank did, so the launcher reports what it would have.
        // SAFETY: resetting a disposition, unblocking and raising a signal.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            let mut one: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut one);
            libc::sigaddset(&mut one, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
            libc::raise(sig);
        }
        return 128 + sig;
    }
    status.code().unwrap_or(1)
}

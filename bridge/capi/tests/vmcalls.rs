//! The virtual machine's calls from C (`isthmus.h`; tests/c/vmcalls.c)
//! against a real vmd with taskers for Open MPI, MPICH and plain programs:
//! a program of each implementation spawns a job of the other, sees its
//! ranks run, signals and kills it and is notified of each rank's end and
//! the job's (by `Isthmus_Event_next` and by a callback on the library's
//! thread); spawns a program without MPI with variables of its own and
//! reads its exit code; adds and deletes a host and is notified of both;
//! and gets a precise error for every bad call.

#![cfg(test)]

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use common::*;

const GUARD: Duration = Duration::from_secs(180);

fn build(mpi: Mpi, source: &str, name: &str, dir: &TempDir, linking: Linking) -> PathBuf {
    let out = dir.0.join(format!("{name}-{}", mpi.name()));
    build_c(
        mpi,
        &[crate_dir().join("tests/c").join(source)],
        &out,
        linking,
    );
    out
}

fn calls_from(mpi: Mpi) {
    let dir = TempDir::new("vmcalls");
    let m = Machine::start(&["exec", "mpich", "openmpi"]);
    let program = build(mpi, "vmcalls.c", "vmcalls", &dir, Linking::Linked);
    let sleeper = build(mpi.other(), "spawn.c", "sleeper", &dir, Linking::Unmodified);
    let sleeper = sleeper.display().to_string();
    let ghost = format!("ghost-{}", mpi.name());
    let job = Job {
        mpi,
        np: 1,
        program,
        args: vec!["run".into(), sleeper.clone(), ghost.clone()],
        env: vec![],
        linking: Linking::Linked,
    };
    let o = finish(launch(&m.vmd, &job), GUARD, "vmcalls");
    let all = format!("{}\njobs:\n{}", text(&o), m.jobs());
    assert!(
        o.status.success() && lines(&o, "PASS vmcalls").len() == 1,
        "{all}"
    );
    let spawned: String = lines(&o, "SPAWNED job=").concat();
    let events = lines(&o, "EVENT ");
    // The killed job's ranks ended by a signal (the rm reports a rank's end
    // when its shim could tell it before the kill reached the launcher's
    // process group: at least one), then the job, killed.
    let by_signal = |r: u32| {
        ["2/9", "2/15"]
            .iter()
            .any(|how| events.contains(&format!("task_exit job={spawned} rank={r} exit={how}")))
    };
    assert!(by_signal(0) || by_signal(1), "{all}");
    let job_exit = events
        .iter()
        .position(|e| e.starts_with(&format!("job_exit job={spawned} state=4 ")));
    let last_task_exit = events
        .iter()
        .rposition(|e| e.starts_with(&format!("task_exit job={spawned} ")));
    assert!(
        matches!((last_task_exit, job_exit), (Some(t), Some(j)) if t < j),
        "{all}"
    );
    // The listing showed it running, of the other implementation.
    let listed = lines(&o, "JOB ").concat();
    assert!(
        listed.contains("ranks=2 running=2 state=1")
            && listed.contains(&format!("impl={}", mpi.other().name()))
            && listed.contains(&sleeper),
        "{all}"
    );
    // The callback saw the same, on its own thread.
    let tasks = events
        .iter()
        .filter(|e| e.starts_with(&format!("task_exit job={spawned} ")))
        .count();
    let cb = lines(&o, "CALLBACK ").concat();
    assert!(
        cb.contains(&format!(
            "task_exits={tasks} job_exits=1 calls={} on_main=0",
            tasks + 1
        )),
        "{all}"
    );
    // sh got its variables (exit 3, not 1; a non-zero exit is a failed job).
    assert_eq!(lines(&o, "SH "), ["state=3 exit=1/3"], "{all}");
    // The host's addition and deletion.
    assert!(
        events.contains(&format!("host_added host={ghost}"))
            && events
                .iter()
                .any(|e| e.starts_with(&format!("host_deleted host={ghost} reason="))),
        "{all}"
    );
    assert_eq!(lines(&o, "TIMEOUT ").len(), 1, "{all}");
    errors_are_precise(&o, &sleeper, &all);
    // The host is gone, the job is listed as killed.
    let (_, hosts, _) = isthmus_testkit::console(&m.vmd.addr, &["conf"]);
    assert!(!hosts.contains(&ghost), "{hosts}");
}

/// Every `ERROR case class=c message` line says what it should.
fn errors_are_precise(o: &Output, sleeper: &str, all: &str) {
    let errors = lines(o, "ERROR ");
    let said = |case: &str, words: &[&str]| {
        let line = errors
            .iter()
            .find(|l| l.starts_with(&format!("{case} ")))
            .unwrap_or_else(|| panic!("no error for {case}\n{all}"));
        assert!(
            words.iter().all(|w| line.contains(w)),
            "{case} does not say {words:?}: {line}\n{all}"
        );
    };
    said("kill-unknown", &["Isthmus_Kill", "987654"]);
    said("kill-invalid", &["Isthmus_Kill", "-1 is not a job id"]);
    said("signal-unknown", &["Isthmus_Signal", "987654"]);
    said(
        "signal-number",
        &["Isthmus_Signal", "signal 0 is not a signal number"],
    );
    said(
        "spawn-missing",
        &["Isthmus_Spawn", "/no/such/program", "No such file"],
    );
    said("spawn-ranks", &["Isthmus_Spawn", sleeper, "ranks is 0"]);
    said(
        "spawn-impl",
        &["Isthmus_Spawn", "\"nosuchmpi\" is not one Isthmus knows"],
    );
    said(
        "spawn-no-tasker",
        &["Isthmus_Spawn", sleeper, "impi", "refused"],
    );
    said("spawn-slots", &["Isthmus_Spawn", sleeper, "refused"]);
    said("spawn-host", &["Isthmus_Spawn", sleeper, "no-such-host"]);
    said(
        "spawn-env",
        &["Isthmus_Spawn", "env", "\"FOO\" is not NAME=VALUE"],
    );
    said(
        "spawn-env-reserved",
        &["Isthmus_Spawn", "ISTHMUS_VMD is set by Isthmus"],
    );
    said("spawn-null", &["Isthmus_Spawn", "program is NULL"]);
    said("jobs-count", &["Isthmus_Jobs", "count", "NULL"]);
    said(
        "hosts-room",
        &["Isthmus_Hosts", "room for 4 entries in a NULL array"],
    );
    said("add-host-slots", &["Isthmus_Add_host", "slots is 0"]);
    said(
        "delete-host-unknown",
        &["Isthmus_Delete_host", "no-such-host"],
    );
    said("subscribe-kinds", &["Isthmus_Subscribe", "kinds 0x0"]);
    said("subscribe-mask", &["Isthmus_Subscribe", "kinds 0x400"]);
    said(
        "subscribe-jobs",
        &["Isthmus_Subscribe", "jobs is NULL and njobs is 2"],
    );
    said(
        "next-unknown",
        &["Isthmus_Event_next", "no subscription 12345"],
    );
    said("next-timeout", &["Isthmus_Event_next", "timeout -1"]);
    said(
        "next-callback",
        &["Isthmus_Event_next", "delivers to its callback"],
    );
    said(
        "unsubscribe-twice",
        &["Isthmus_Unsubscribe", "no subscription"],
    );
    // A refusal of the virtual machine has its own class, apart from bad
    // arguments and from commands that cannot start.
    let class = |case: &str| {
        errors
            .iter()
            .find(|l| l.starts_with(&format!("{case} ")))
            .and_then(|l| l.split_whitespace().nth(1))
            .map(str::to_string)
    };
    assert_ne!(class("kill-unknown"), class("kill-invalid"), "{all}");
    assert_ne!(class("spawn-missing"), class("spawn-ranks"), "{all}");
    assert_eq!(class("spawn-missing"), class("spawn-no-tasker"), "{all}");
}

#[test]
fn an_open_mpi_program_runs_the_virtual_machine() {
    calls_from(Mpi::OpenMpi);
}

#[test]
fn an_mpich_program_runs_the_virtual_machine() {
    calls_from(Mpi::Mpich);
}

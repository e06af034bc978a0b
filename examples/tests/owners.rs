//! Who owns a name (issue 23), with real MPI jobs of two local users: a
//! vmd as root letting `isthmus-u1` in (created here with `useradd` if
//! missing), `pingpong` run by Open MPI's launcher as root and, through
//! `setpriv`, as that user. A job reaches another user's group only by its
//! qualified name `owner/group`, and only if the owner allowed it
//! (`ISTHMUS_ALLOW`); a stranger's job that took a name first is never a
//! job's peer: the job fails naming the owner.

#![cfg(test)]

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use isthmus_testkit::{finish, Vmd};

const USER: &str = "isthmus-u1";

struct User {
    uid: u32,
    gid: u32,
}

/// The test user, created if missing (another test may create it too).
fn user() -> User {
    isthmus_testkit::users::create(USER);
    User {
        uid: id("-u").expect("uid"),
        gid: id("-g").expect("gid"),
    }
}

fn id(flag: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, USER]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// `pingpong` as `who` (None: root) in group `group`, peer `peer`.
fn pingpong(
    vmd: &Vmd,
    who: Option<&User>,
    group: &str,
    peer: &str,
    first: bool,
    allow: &str,
) -> std::process::Child {
    let mut c = match who {
        Some(u) => {
            let mut c = Command::new("setpriv");
            // A temporary directory of the job's own: two of the user's
            // mpiruns starting in the same instant raced on their session
            // directory under /tmp/ompi.<host>.<uid> (one failed in
            // orte_init: "mkdir ... No such file or directory").
            let tmp = job_tmpdir(u);
            c.arg(format!("--reuid={}", u.uid))
                .arg(format!("--regid={}", u.gid))
                .args(["--clear-groups", "--", "mpirun.openmpi"])
                .env("HOME", "/tmp")
                .env("TMPDIR", &tmp)
                .current_dir("/");
            c
        }
        None => Command::new("mpirun.openmpi"),
    };
    c.args(["--oversubscribe", "--bind-to", "none", "-n", "1"])
        .args(["-x", "ISTHMUS_VMD", "-x", "ISTHMUS_ALLOW"])
        .arg(env!("CARGO_BIN_EXE_pingpong"))
        .args(["--group", group, "--peer", peer])
        .args(["--iters", "200", "--bw-mib", "4", "--timeout-secs", "15"])
        .env("ISTHMUS_VMD", &vmd.addr)
        .env("ISTHMUS_ALLOW", allow)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_tcp_if_include", "lo")
        .env("OMPI_MCA_oob_tcp_if_include", "lo")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if first {
        c.arg("--first");
    }
    c.spawn().expect("start mpirun")
}

/// A fresh directory under /tmp owned by `u` (left for the system's
/// cleaning of /tmp: the job's own files in it are gone when its mpirun
/// ends).
fn job_tmpdir(u: &User) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::path::PathBuf::from(format!("/tmp/isthmus-owners-{}-{}", std::process::id(), n));
    std::fs::create_dir_all(&dir).expect("create the job's TMPDIR");
    std::os::unix::fs::chown(&dir, Some(u.uid), Some(u.gid)).expect("give it to the test user");
    dir
}

fn text(out: &Output) -> String {
    format!(
        "rc {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const DEADLINE: Duration = Duration::from_secs(90);

#[test]
fn qualified_names_join_two_users_jobs_only_when_both_allow() {
    let u1 = user();
    let vmd = Vmd::start("owners", &["--allow-uid", &u1.uid.to_string()]);
    // Each lets the other in: root's `atm` and u1's `ocean` meet.
    let root = pingpong(&vmd, None, "atm", &format!("{USER}/ocean"), true, USER);
    let theirs = pingpong(&vmd, Some(&u1), "ocean", "root/atm", false, "root");
    let theirs = finish(theirs, DEADLINE, "u1's pingpong");
    let root = finish(root, DEADLINE, "root's pingpong");
    assert!(theirs.status.success(), "{}", text(&theirs));
    assert!(root.status.success(), "{}", text(&root));
    let results = String::from_utf8_lossy(&root.stdout);
    assert!(results.contains("RESULT bridge_lat_8"), "{}", text(&root));
    for line in results.lines().filter(|l| l.starts_with("RESULT")) {
        println!("{line}");
    }

    // u1 does not let root's job in... (root, the administrator, needs no
    // allowing: it is u1's job that must be refused root's `atm`).
    let root = pingpong(&vmd, None, "atm", &format!("{USER}/sea"), true, "");
    let theirs = pingpong(&vmd, Some(&u1), "sea", "root/atm", false, "");
    let theirs = finish(theirs, DEADLINE, "u1's pingpong");
    let _ = finish(root, DEADLINE, "root's pingpong");
    assert!(!theirs.status.success(), "{}", text(&theirs));
    let err = String::from_utf8_lossy(&theirs.stderr);
    assert!(
        err.contains(&format!(
            "uid 0 (root) has not allowed uid {} to reach its group \"atm\"",
            u1.uid
        )),
        "{}",
        text(&theirs)
    );
}

#[test]
fn a_strangers_job_that_took_the_name_first_is_never_the_peer() {
    let u1 = user();
    let vmd = Vmd::start("squat", &["--allow-uid", &u1.uid.to_string()]);
    // u1's job registers `b2` first, and waits for a peer that never comes.
    let squatter = pingpong(&vmd, Some(&u1), "b2", "nobody", false, "");
    let end = std::time::Instant::now() + DEADLINE;
    while !isthmus_testkit::console(&vmd.addr, &["groups"])
        .1
        .contains("b2")
    {
        assert!(
            std::time::Instant::now() < end,
            "u1's job never registered b2"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Root's `a2` asks for `b2`: it fails, naming whose `b2` it found.
    let root = finish(
        pingpong(&vmd, None, "a2", "b2", true, ""),
        DEADLINE,
        "root's pingpong",
    );
    assert!(!root.status.success(), "{}", text(&root));
    let err = String::from_utf8_lossy(&root.stderr);
    assert!(
        err.contains(&format!("group \"b2\" belongs to uid {} ({USER})", u1.uid))
            && err.contains(&format!("{USER}/b2")),
        "{}",
        text(&root)
    );
    assert!(
        !String::from_utf8_lossy(&root.stdout).contains("RESULT"),
        "{}",
        text(&root)
    );
    let _ = finish(squatter, DEADLINE, "u1's pingpong");
}

//! Security of the control path (issue 9), with real processes: a vmd as
//! root, clients run as other local users (created here if missing, with
//! `useradd`; run with `setpriv`), taskers, jobs, and two vmds in network
//! namespaces made here joining over mutual TLS.
//!
//! The binary is its own probe: `security probe ADDR` (run as another user,
//! or inside a namespace) tries one call of every RPC family and prints the
//! gRPC code each got, one `family code` line each.

#![cfg(test)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, Proc, TempDir, Vmd, WireClient, T};
use isthmus_client::auth::Credentials;
use isthmus_client::VmdChannel;
use isthmus_proto as pb;
use tonic::service::interceptor::InterceptedService;
use tonic::Code;

const USERS: [&str; 3] = ["isthmus-u1", "isthmus-u2", "isthmus-u3"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("probe") {
        let addr = args.get(2).cloned().unwrap_or_default();
        let rt = runtime();
        for (family, code) in rt.block_on(probe_addr(&addr)) {
            println!("{family} {code:?}");
        }
        return;
    }
    if args.get(1).map(String::as_str) == Some("ops") {
        // `security ops ADDR OP…`: one session doing each OP in turn.
        let addr = args.get(2).cloned().unwrap_or_default();
        let rt = runtime();
        rt.block_on(session_ops(&addr, &args[3..]));
        return;
    }
    if args.get(1).map(String::as_str) == Some("report") {
        // `security report SOCKET LINE…`: a forger on the rank-report socket.
        println!("{}", forge_reports(&args[2], &args[3..]));
        return;
    }
    // `cargo test` passes harness flags (--test-threads=2, a filter): a
    // filter selects tests by substring as the usual harness would.
    let filter: Vec<&String> = args
        .iter()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let tests: &[(&str, fn())] = &[
        (
            "unauthenticated_clients_are_refused_for_every_family",
            unauthenticated_clients_are_refused_for_every_family,
        ),
        (
            "users_control_only_their_own_jobs_and_jobs_run_as_their_owner",
            users_control_only_their_own_jobs_and_jobs_run_as_their_owner,
        ),
        (
            "fake_tasker_and_fake_host_are_refused",
            fake_tasker_and_fake_host_are_refused,
        ),
        (
            "rank_reports_come_only_from_the_jobs_own_ranks",
            rank_reports_come_only_from_the_jobs_own_ranks,
        ),
        (
            "vmds_in_two_namespaces_join_over_mutual_tls",
            vmds_in_two_namespaces_join_over_mutual_tls,
        ),
        (
            "strangers_cannot_freeze_or_reach_a_users_group",
            strangers_cannot_freeze_or_reach_a_users_group,
        ),
        (
            "a_name_taken_first_by_a_stranger_never_becomes_the_peer",
            a_name_taken_first_by_a_stranger_never_becomes_the_peer,
        ),
        (
            "qualified_names_reach_another_users_group_only_when_allowed",
            qualified_names_reach_another_users_group_only_when_allowed,
        ),
        (
            "jobs_output_and_listings_are_their_owners",
            jobs_output_and_listings_are_their_owners,
        ),
        (
            "owners_are_known_to_every_vmd_on_one_etcd",
            owners_are_known_to_every_vmd_on_one_etcd,
        ),
        ("owners_survive_a_vmd_restart", owners_survive_a_vmd_restart),
    ];
    let mut failed = Vec::new();
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        println!("test {name} ...");
        match std::panic::catch_unwind(test) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    if !failed.is_empty() {
        println!("failed: {failed:?}");
        std::process::exit(1);
    }
    println!("test result: ok");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

// ---- the probe: one call per RPC family ----

async fn probe_addr(addr: &str) -> Vec<(&'static str, Code)> {
    match isthmus_client::channel(addr).await {
        Ok(ch) => probe(ch).await,
        Err(e) => vec![("connect", Code::Unavailable)]
            .into_iter()
            .inspect(|_| eprintln!("probe: {e}"))
            .collect(),
    }
}

/// The code each family's first call got (Ok when admitted).
async fn probe(ch: VmdChannel) -> Vec<(&'static str, Code)> {
    let code = |r: Result<(), tonic::Status>| r.err().map_or(Code::Ok, |s| s.code());
    let tasks = {
        let mut c = pb::tasks_client::TasksClient::new(ch.clone());
        let hello = pb::SessionRequest {
            id: 1,
            op: Some(pb::session_request::Op::Hello(pb::Hello {
                name: "probe".into(),
                pid: std::process::id(),
                resume_task: String::new(),
            })),
        };
        let r = c.session(tokio_stream::iter(vec![hello])).await;
        match r {
            Ok(mut s) => code(s.get_mut().message().await.map(|_| ())),
            Err(s) => s.code(),
        }
    };
    let console = {
        let mut c = pb::console_client::ConsoleClient::new(ch.clone());
        code(
            c.list_groups(pb::ListGroupsRequest::default())
                .await
                .map(|_| ()),
        )
    };
    let taskers = {
        let mut c = pb::taskers_client::TaskersClient::new(ch.clone());
        let hello = pb::TaskerReport {
            kind: Some(pb::tasker_report::Kind::Hello(pb::TaskerHello {
                implementation: "exec".into(),
                pid: std::process::id(),
                launcher: "fake".into(),
            })),
        };
        match c.tasker(tokio_stream::iter(vec![hello])).await {
            Ok(mut s) => code(s.get_mut().message().await.map(|_| ())),
            Err(s) => s.code(),
        }
    };
    let peers = {
        let mut c = pb::peers_client::PeersClient::new(ch);
        let hello = pb::HostUp {
            kind: Some(pb::host_up::Kind::Hello(pb::HostHello {
                name: "fakehost".into(),
                addr: "unix:/nowhere".into(),
                slots: 64,
                offers: vec![],
                peer_addr: String::new(),
            })),
        };
        match c.host_link(tokio_stream::iter(vec![hello])).await {
            Ok(mut s) => code(s.get_mut().message().await.map(|_| ())),
            Err(s) => s.code(),
        }
    };
    vec![
        ("tasks", tasks),
        ("console", console),
        ("taskers", taskers),
        ("peers", peers),
    ]
}

/// Runs the probe as `user` (uid/gid) against `addr`.
fn probe_as(user: &User, addr: &str) -> BTreeMap<String, String> {
    let out = as_user(user, std::env::current_exe().expect("own exe"))
        .args(["probe", addr])
        .output()
        .expect("run probe");
    parse_probe(&out)
}

fn parse_probe(out: &std::process::Output) -> BTreeMap<String, String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(f, c)| (f.to_string(), c.to_string()))
        .collect()
}

// ---- group operations as a user: `security ops ADDR OP…` ----

/// Runs each OP on one session, printing `OP ok [detail]` or `OP CODE
/// message` per line: `join:G[:ALLOW,…]`, `freeze:G:SIZE`, `wait:G`,
/// `gettid:G:I`, `leave:G`, `hold:SECONDS`, `ready` (prints a line and
/// flushes, for a parent waiting for the joins).
async fn session_ops(addr: &str, ops: &[String]) {
    use std::io::Write;
    let short = Duration::from_secs(3);
    let long = Duration::from_secs(10);
    let s = match isthmus_client::Session::connect(addr, "security-ops").await {
        Ok(s) => s,
        Err(e) => {
            println!("connect {:?} {}", e.kind(), e.message());
            return;
        }
    };
    for op in ops {
        let parts: Vec<&str> = op.split(':').collect();
        let outcome: Result<String, isthmus_client::ClientError> = match parts.as_slice() {
            ["join", g] => s.join(g, None, Vec::new()).await.map(|i| i.to_string()),
            ["join", g, allow] => {
                let allow: Vec<String> = allow.split(',').map(String::from).collect();
                s.join_allowing(g, None, Vec::new(), &allow)
                    .await
                    .map(|i| i.to_string())
            }
            ["freeze", g, n] => s
                .freeze(g, n.parse().unwrap_or(1), short)
                .await
                .map(|t| format!("{} members", t.members.len())),
            ["wait", g] => s
                .wait_frozen(g, long)
                .await
                .map(|t| format!("{} {} members", t.name, t.members.len())),
            ["gettid", g, i] => s
                .gettid(g, i.parse().unwrap_or(0))
                .await
                .map(|m| m.task.clone()),
            ["leave", g] => s.leave(g).await.map(|()| String::new()),
            ["hold", secs] => {
                tokio::time::sleep(Duration::from_secs(secs.parse().unwrap_or(1))).await;
                Ok(String::new())
            }
            ["ready"] => Ok(String::new()),
            _ => {
                println!("{op} bad-op");
                continue;
            }
        };
        match outcome {
            Ok(detail) => println!("{op} ok {detail}"),
            Err(e) => println!("{op} {:?} {}", e.kind(), e.message()),
        }
        let _ = std::io::stdout().flush();
    }
}

/// `ops` as `user` (None: as root, the operator), to its end: one line per op.
fn ops_as(user: Option<&User>, addr: &str, ops: &[&str]) -> Vec<String> {
    let mut c = match user {
        Some(u) => as_user(u, std::env::current_exe().expect("own exe")),
        None => {
            let mut c = Command::new(std::env::current_exe().expect("own exe"));
            c.stdin(Stdio::null());
            c
        }
    };
    let out = c.arg("ops").arg(addr).args(ops).output().expect("run ops");
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(
        lines.len(),
        ops.len(),
        "{lines:?} {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    lines
}

/// `ops` as `user` in the background, once every op up to `ready` is done
/// (their lines are returned); the process holds its session until dropped.
fn hold_as(user: Option<&User>, addr: &str, ops: &[&str]) -> (Proc, Vec<String>) {
    use std::io::BufRead;
    let mut c = match user {
        Some(u) => as_user(u, std::env::current_exe().expect("own exe")),
        None => Command::new(std::env::current_exe().expect("own exe")),
    };
    let mut child = Proc(
        c.arg("ops")
            .arg(addr)
            .args(ops)
            .args(["ready", "hold:60"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn ops"),
    );
    let stdout = child.0.stdout.take().expect("stdout");
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.expect("read ops");
        if line.starts_with("ready ") {
            return (child, lines);
        }
        lines.push(line);
    }
    panic!("the holder ended before it was ready: {lines:?}");
}

// ---- users ----

#[derive(Clone, Debug)]
struct User {
    uid: u32,
    gid: u32,
}

/// The test users, created if missing (idempotent).
fn users() -> Vec<User> {
    USERS
        .iter()
        .map(|name| {
            isthmus_testkit::users::create(name);
            User {
                uid: id(name, "-u").expect("uid"),
                gid: id(name, "-g").expect("gid"),
            }
        })
        .collect()
}

fn id(name: &str, flag: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, name]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn as_user(user: &User, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={}", user.uid))
        .arg(format!("--regid={}", user.gid))
        .arg("--clear-groups")
        .arg("--")
        .arg(program)
        .current_dir("/")
        .env_remove("ISTHMUS_TOKEN_FILE")
        .stdin(Stdio::null());
    c
}

/// The console as `user`: (exit code, stdout, stderr).
fn console_as(user: &User, addr: &str, args: &[&str]) -> (i32, String, String) {
    let out = as_user(user, bin("isthmus"))
        .arg("--vmd")
        .arg(addr)
        .args(args)
        .output()
        .expect("console");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A vmd letting u1 and u2 in (not u3), on its socket and loopback TCP.
fn vmd_for(users: &[User]) -> Vmd {
    let (u1, u2) = (users[0].uid.to_string(), users[1].uid.to_string());
    let vmd = Vmd::start(
        "sec",
        &["--allow-uid", &u1, "--allow-uid", &u2, "--slots", "8"],
    );
    // The runtime directory lets allowed users reach the socket: 0711.
    vmd
}

fn tcp_addr(vmd: &Vmd) -> String {
    std::fs::read_to_string(vmd.dir.0.join("run/listen")).expect("listen file")
}

// ---- the tests ----

fn unauthenticated_clients_are_refused_for_every_family() {
    let users = users();
    let vmd = vmd_for(&users);
    let u3 = &users[2];
    // A uid the vmd does not allow, on its Unix socket.
    let got = probe_as(u3, &vmd.addr);
    for family in ["tasks", "console", "taskers", "peers"] {
        assert_eq!(
            got.get(family).map(String::as_str),
            Some("Unauthenticated"),
            "uid {} not allowed, family {family}: {got:?}",
            u3.uid
        );
    }
    // The console says why, and exits 1.
    let (rc, _, err) = console_as(u3, &vmd.addr, &["groups"]);
    assert_eq!(rc, 1);
    assert!(err.contains("is not allowed on this vmd"), "{err}");

    // Over loopback TCP: no token, a wrong token.
    let tcp = format!("http://{}", tcp_addr(&vmd));
    let rt = runtime();
    for (what, creds) in [
        ("no token", Credentials::none()),
        ("wrong token", Credentials::token("00ff").expect("token")),
    ] {
        let got = rt.block_on(async {
            let raw = tonic::transport::Endpoint::from_shared(tcp.clone())
                .expect("uri")
                .connect()
                .await
                .expect("tcp connect");
            probe(InterceptedService::new(raw, creds)).await
        });
        for (family, code) in got {
            assert_eq!(code, Code::Unauthenticated, "{what}, family {family}");
        }
    }
    // With the token file the operator gets in over TCP.
    let token_file = vmd.dir.0.join("run/token");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&token_file).expect("token").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "the token file is private");
    let got = rt.block_on(async {
        let raw = tonic::transport::Endpoint::from_shared(tcp.clone())
            .expect("uri")
            .connect()
            .await
            .expect("tcp connect");
        let creds = Credentials::from_token_file(&token_file).expect("read token");
        probe(InterceptedService::new(raw, creds)).await
    });
    assert_eq!(got[1], ("console", Code::Ok), "{got:?}");
}

fn users_control_only_their_own_jobs_and_jobs_run_as_their_owner() {
    let users = users();
    let (u1, u2) = (&users[0], &users[1]);
    let vmd = vmd_for(&users);
    let rt = runtime();
    let _tasker = rt.block_on(vmd.tasker("exec"));

    // u1's job runs as u1, not as the root tasker.
    let out_dir = TempDir::new("sec-out");
    std::fs::set_permissions(
        &out_dir.0,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod");
    let file = out_dir.0.join("uid");
    let script = format!("id -u > {}", file.display());
    let (rc, _, err) = console_as(
        u1,
        &vmd.addr,
        &["spawn", "--wait", "/bin/sh", "-c", &script],
    );
    assert_eq!(rc, 0, "{err}");
    let written = std::fs::read_to_string(&file).expect("the job wrote its uid");
    assert_eq!(
        written.trim(),
        u1.uid.to_string(),
        "the job ran as its owner"
    );

    // u2's long job: u1 may neither kill nor signal it; the operator may.
    let (rc, out, err) = console_as(u2, &vmd.addr, &["--json", "spawn", "/bin/sleep", "60"]);
    assert_eq!(rc, 0, "{err}");
    let job = serde_json::from_str::<serde_json::Value>(&out).expect("json")["job"]
        .as_u64()
        .expect("job id");
    let pids = wait_pids(&rt, &vmd, job);
    // Nothing secret in the rank's environment; its vmd's address is there.
    let environ = std::fs::read(format!("/proc/{}/environ", pids[0])).expect("environ");
    let environ = String::from_utf8_lossy(&environ);
    assert!(environ.contains("ISTHMUS_VMD=unix:"), "{environ}");
    assert!(
        !environ.contains("SECRET"),
        "a secret in a job's environment: {environ}"
    );
    let token = std::fs::read_to_string(vmd.dir.0.join("run/token")).expect("token");
    assert!(
        !environ.contains(token.trim()),
        "the token in a job's environment"
    );
    let owner = std::fs::metadata(format!("/proc/{}", pids[0])).expect("proc");
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&owner),
        u2.uid,
        "runs as u2"
    );

    let j = job.to_string();
    for args in [vec!["kill", j.as_str()], vec!["sig", "TERM", j.as_str()]] {
        let (rc, _, err) = console_as(u1, &vmd.addr, &args);
        assert_eq!(rc, 1, "u1 {args:?} on u2's job");
        assert!(
            err.contains("rule job-control") && err.contains(&format!("owned by uid {}", u2.uid)),
            "{err}"
        );
    }
    // u1 may not halt the vmd or add hosts either.
    let (rc, _, err) = console_as(u1, &vmd.addr, &["halt"]);
    assert_eq!(rc, 1);
    assert!(err.contains("rule operator"), "{err}");
    let (rc, _, err) = console_as(u1, &vmd.addr, &["add", "evil", "--slots", "64"]);
    assert_eq!(rc, 1);
    assert!(err.contains("rule operator"), "{err}");
    // The job is still running; the operator kills it.
    assert!(Path::new(&format!("/proc/{}", pids[0])).exists());
    let (rc, _, err) = common::console(&vmd.addr, &["kill", &j]);
    assert_eq!(rc, 0, "{err}");
    let end = Instant::now() + T;
    while Path::new(&format!("/proc/{}", pids[0])).exists() {
        assert!(
            Instant::now() < end,
            "the operator's kill did not end the job"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_pids(rt: &tokio::runtime::Runtime, vmd: &Vmd, job: u64) -> Vec<u32> {
    rt.block_on(async {
        let mut c = vmd.client().await;
        common::rank_pids(&mut c, job).await
    })
}

fn fake_tasker_and_fake_host_are_refused() {
    let users = users();
    let u1 = &users[0];
    let vmd = vmd_for(&users);
    // An allowed user is a user, not a tasker nor a host.
    let got = probe_as(u1, &vmd.addr);
    assert_eq!(got.get("tasks").map(String::as_str), Some("Ok"), "{got:?}");
    assert_eq!(
        got.get("console").map(String::as_str),
        Some("Ok"),
        "{got:?}"
    );
    assert_eq!(
        got.get("taskers").map(String::as_str),
        Some("PermissionDenied"),
        "{got:?}"
    );
    assert_eq!(
        got.get("peers").map(String::as_str),
        Some("PermissionDenied"),
        "{got:?}"
    );
    // The fake host was not added.
    let (_, out, _) = common::console(&vmd.addr, &["--json", "conf"]);
    assert!(!out.contains("fakehost"), "{out}");
    // A group created by u1 cannot be joined by u2.
    let (u1_join, u2) = (users[0].clone(), users[1].clone());
    let mut holder = Proc(
        as_user(&u1_join, bin("isthmus"))
            .args(["--vmd", &vmd.addr, "join", "u1-group", "--seconds", "60"])
            .stdout(Stdio::null())
            .spawn()
            .expect("join as u1"),
    );
    let end = Instant::now() + T;
    loop {
        let (_, out, _) = common::console(&vmd.addr, &["--json", "groups"]);
        if out.contains("u1-group") {
            break;
        }
        assert!(Instant::now() < end, "u1 did not join");
        assert!(
            holder.0.try_wait().ok().flatten().is_none(),
            "u1's join ended"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (rc, _, err) = console_as(&u2, &vmd.addr, &["join", "u1-group", "--seconds", "1"]);
    assert_eq!(rc, 1, "u2 joined u1's group");
    assert!(
        err.contains("rule names") && err.contains("belongs to uid"),
        "{err}"
    );
    // Once u1's last member is gone, so is its claim: u2 may make the
    // group anew, and then it is u2's.
    drop(holder);
    let end = Instant::now() + T;
    while common::console(&vmd.addr, &["--json", "groups"])
        .1
        .contains("u1-group")
    {
        assert!(Instant::now() < end, "u1's group outlived its member");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut u2_holder = Proc(
        as_user(&u2, bin("isthmus"))
            .args(["--vmd", &vmd.addr, "join", "u1-group", "--seconds", "60"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("join as u2"),
    );
    let end = Instant::now() + T;
    while !common::console(&vmd.addr, &["--json", "groups"])
        .1
        .contains("u1-group")
    {
        assert!(Instant::now() < end, "u2 did not make the group anew");
        if let Ok(Some(st)) = u2_holder.0.try_wait() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(
                u2_holder.0.stderr.as_mut().expect("stderr"),
                &mut err,
            );
            panic!("u2's join ended ({st}): {err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (rc, _, err) = console_as(&u1_join, &vmd.addr, &["join", "u1-group", "--seconds", "1"]);
    assert_eq!(rc, 1, "u1 joined the group u2 made anew");
    assert!(err.contains(&format!("belongs to uid {}", u2.uid)), "{err}");
    // A failed join, a session's end and a leave each give their claim
    // back: afterwards u1 may make the group again.
    let join = |user: &User, extra: &[&str]| {
        let mut args = vec!["join", "u1-group", "--seconds", "0"];
        args.extend_from_slice(extra);
        console_as(user, &vmd.addr, &args)
    };
    let (rc, _, err) = join(&u2, &["--instance", "0"]);
    assert_eq!(rc, 1, "instance 0 is taken");
    assert!(err.contains("taken"), "{err}");
    drop(u2_holder);
    let end = Instant::now() + T;
    while common::console(&vmd.addr, &["--json", "groups"])
        .1
        .contains("u1-group")
    {
        assert!(Instant::now() < end, "u2's group outlived its member");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (rc, _, err) = join(&u2, &[]);
    assert_eq!(rc, 0, "u2 join and leave: {err}");
    let (rc, _, err) = join(&u1_join, &[]);
    assert_eq!(rc, 0, "u1 may make the group again: {err}");
}

// ---- rank reports ----

/// Connects to a tasker's rank-report socket, writes `lines`, and says what
/// the tasker did: `refused` (no connection), `closed` (it hung up) or
/// `open` (still listening when the hang guard ran out).
fn forge_reports(socket: &str, lines: &[String]) -> &'static str {
    use std::io::{Read, Write};
    let Ok(mut s) = std::os::unix::net::UnixStream::connect(socket) else {
        return "refused";
    };
    for l in lines {
        if writeln!(s, "{l}").is_err() {
            return "closed";
        }
    }
    let _ = s.set_read_timeout(Some(T));
    let mut buf = [0u8; 16];
    match s.read(&mut buf) {
        Ok(0) => "closed",
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => "closed",
        _ => "open",
    }
}

fn forge_as(user: &User, socket: &str, lines: &[String]) -> String {
    let out = as_user(user, std::env::current_exe().expect("own exe"))
        .arg("report")
        .arg(socket)
        .args(lines)
        .output()
        .expect("run forger");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The rank-report socket a rank's shim (its parent) reports to.
fn report_socket(rank_pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{rank_pid}/stat")).expect("stat");
    let shim: u32 = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .expect("ppid");
    let environ = std::fs::read(format!("/proc/{shim}/environ")).expect("shim environ");
    let prefix = format!("{}=", isthmus_taskers::ENV_TASKER_SOCKET);
    environ
        .split(|b| *b == 0)
        .map(String::from_utf8_lossy)
        .find_map(|v| v.strip_prefix(&prefix).map(str::to_string))
        .expect("the shim's report socket")
}

fn spawn_as(user: &User, vmd: &Vmd, args: &[&str]) -> u64 {
    let mut all = vec!["--json", "spawn"];
    all.extend_from_slice(args);
    let (rc, out, err) = console_as(user, &vmd.addr, &all);
    assert_eq!(rc, 0, "{err}");
    serde_json::from_str::<serde_json::Value>(&out).expect("json")["job"]
        .as_u64()
        .expect("job id")
}

fn rank_reports_come_only_from_the_jobs_own_ranks() {
    let users = users();
    let (u1, u2, u3) = (&users[0], &users[1], &users[2]);
    let vmd = vmd_for(&users);
    let rt = runtime();
    let _tasker = rt.block_on(vmd.tasker("exec"));
    let mut events = rt.block_on(common::watch(
        &vmd,
        &[pb::EventKind::TaskExit, pb::EventKind::JobExit],
        false,
    ));
    // u2's job (the victim) and u1's own job (so that u1 may connect).
    let victim = spawn_as(u2, &vmd, &["/bin/sleep", "60"]);
    let own = spawn_as(u1, &vmd, &["/bin/sleep", "60"]);
    let pid = wait_pids(&rt, &vmd, victim)[0];
    let _ = wait_pids(&rt, &vmd, own);
    let socket = report_socket(pid);
    // A root process the owner would like the root tasker to kill.
    let bystander = Proc(Command::new("sleep").arg("600").spawn().expect("bystander"));

    let forged = |job: u64, pid: u32| {
        vec![
            format!("start {job} 0 {pid}"),
            format!("exit {job} 0 code 0"),
        ]
    };
    // A user with no job here (not even let into the vmd), a user with a
    // job of their own, and the owner naming a process that is not a rank:
    // each is cut off, and the job is what it was.
    for (who, user, lines) in [
        ("u3", u3, forged(victim, bystander.pid())),
        ("u1", u1, forged(victim, bystander.pid())),
        (
            "u2 (a foreign pid)",
            u2,
            vec![format!("start {victim} 0 {}", bystander.pid())],
        ),
    ] {
        let got = forge_as(user, &socket, &lines);
        assert_eq!(got, "closed", "{who}'s forged reports were not refused");
        let jobs = rt.block_on(async {
            let mut c = vmd.client().await;
            c.list_jobs(pb::ListJobsRequest {
                all: true,
                every_user: true,
            })
            .await
            .expect("ps")
            .into_inner()
            .jobs
        });
        let j = jobs.iter().find(|j| j.job == victim).expect("the job");
        assert_eq!(
            j.state,
            pb::JobState::JobRunning as i32,
            "after {who}: {j:?}"
        );
        assert_eq!(j.ranks[0].pid, pid, "after {who}: {j:?}");
        assert!(j.ranks[0].exit.is_none(), "after {who}: {j:?}");
    }
    // The operator kills the job: one exit for its rank, the real one (by
    // signal), and the bystander lives.
    let (rc, _, err) = common::console(&vmd.addr, &["kill", &victim.to_string()]);
    assert_eq!(rc, 0, "{err}");
    let evs = rt.block_on(common::job_events(&mut events, victim));
    let exits: Vec<_> = evs
        .iter()
        .filter_map(|e| match &e.kind {
            Some(pb::event::Kind::TaskExit(t)) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(exits.len(), 1, "{exits:?}");
    assert!(
        matches!(
            exits[0].exit.as_ref().and_then(|e| e.how),
            Some(pb::exit_status::How::Signal(9))
        ),
        "{exits:?}"
    );
    assert_eq!(
        common::job_exit(&evs).state,
        pb::JobState::JobKilled as i32,
        "{evs:?}"
    );
    assert!(
        common::alive(bystander.pid()),
        "the tasker killed a bystander"
    );
    let (rc, _, err) = common::console(&vmd.addr, &["kill", &own.to_string()]);
    assert_eq!(rc, 0, "{err}");
}

// ---- two hosts in network namespaces ----

struct Netns(Vec<String>);

impl Netns {
    fn pair(a: &str, b: &str, addr_a: &str, addr_b: &str) -> Netns {
        let ns = Netns(vec![a.to_string(), b.to_string()]);
        for n in &ns.0 {
            let _ = Command::new("ip")
                .args(["netns", "del", n])
                .stderr(Stdio::null())
                .status();
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        let (va, vb) = (format!("{a}-v"), format!("{b}-v"));
        ip(&[
            "-n", a, "link", "add", &va, "type", "veth", "peer", "name", &vb, "netns", b,
        ]);
        ip(&["-n", a, "addr", "add", &format!("{addr_a}/24"), "dev", &va]);
        ip(&["-n", b, "addr", "add", &format!("{addr_b}/24"), "dev", &vb]);
        ip(&["-n", a, "link", "set", &va, "up"]);
        ip(&["-n", b, "link", "set", &vb, "up"]);
        ns
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().expect("ip");
    assert!(st.success(), "ip {args:?}");
}

/// A vmd inside namespace `ns`, with its own runtime and state dirs.
fn vmd_in(ns: &str, dir: &Path, host: &str, extra: &[&str]) -> Proc {
    Proc(
        Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(bin("vmd"))
            .arg("--runtime-dir")
            .arg(dir.join("run"))
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(["--host-name", host])
            .args(extra)
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .spawn()
            .expect("vmd in netns"),
    )
}

fn wait_socket(dir: &Path) -> String {
    let sock = dir.join("run/vmd.sock");
    let end = Instant::now() + T;
    while !sock.exists() {
        assert!(Instant::now() < end, "vmd did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    format!("unix:{}", sock.display())
}

fn hosts(addr: &str) -> String {
    common::console(addr, &["--json", "conf"]).1
}

fn vmds_in_two_namespaces_join_over_mutual_tls() {
    let tag = std::process::id() % 10000;
    let (a, b) = (format!("isa{tag}"), format!("isb{tag}"));
    let _ns = Netns::pair(&a, &b, "10.77.0.1", "10.77.0.2");
    let (da, db, dc) = (
        TempDir::new("tls-a"),
        TempDir::new("tls-b"),
        TempDir::new("tls-c"),
    );
    let other_ca = TempDir::new("tls-other");
    // The operator issues beta's certificate from the VM's CA (made here,
    // as the first vmd would), and a stranger's from another CA.
    let issue = |state: &Path, host: &str, out: &Path| {
        let st = Command::new(bin("isthmus"))
            .args(["cert", "issue", "--host", host, "--state-dir"])
            .arg(state)
            .arg("--out")
            .arg(out)
            .stdout(Stdio::null())
            .status()
            .expect("cert issue");
        assert!(st.success(), "cert issue {host}");
    };
    issue(&da.0.join("state"), "beta", &db.0.join("state"));
    issue(&other_ca.0.join("state"), "gamma", &dc.0.join("state"));
    // gamma trusts the VM's CA (so the refusal is alpha's, not gamma's),
    // but its own certificate is signed by another CA.
    std::fs::copy(db.0.join("state/ca.pem"), dc.0.join("state/ca.pem")).expect("copy ca");

    let _alpha = vmd_in(&a, &da.0, "alpha", &["--listen", "10.77.0.1:7711"]);
    let alpha = wait_socket(&da.0);
    // beta listens too (mutual TLS, with the certificate the operator
    // issued) and advertises that listener for other vmds.
    let _beta = vmd_in(
        &b,
        &db.0,
        "beta",
        &[
            "--listen",
            "10.77.0.2:7711",
            "--join",
            "https://10.77.0.1:7711",
        ],
    );
    let end = Instant::now() + T;
    while !hosts(&alpha).contains("\"beta\"") {
        assert!(
            Instant::now() < end,
            "beta did not join over TLS: {}",
            hosts(&alpha)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // alpha checks beta across the network: beta's Unix socket is not in
    // alpha's reach on another machine (here: it is gone from the file
    // system; beta keeps serving its listeners).
    std::fs::remove_file(db.0.join("run/vmd.sock")).expect("hide beta's socket");
    let (rc, out, err) = common::console(&alpha, &["--json", "check", "beta"]);
    assert_eq!(rc, 0, "alpha could not check beta: {out} {err}");
    assert!(
        out.contains("\"responding\":true") && out.contains("https://10.77.0.2:7711"),
        "{out}"
    );
    assert!(
        hosts(&alpha).contains("\"peer_addr\": \"https://10.77.0.2:7711\""),
        "{}",
        hosts(&alpha)
    );
    // A vmd whose certificate is from another CA cannot join.
    let mut gamma = vmd_in(&b, &dc.0, "gamma", &["--join", "https://10.77.0.1:7711"]);
    let st = gamma.wait_exit(T).expect("gamma gave up");
    assert!(!st.success(), "gamma joined with a foreign certificate");
    assert!(!hosts(&alpha).contains("gamma"));
    // A client with no certificate at all is refused before any RPC.
    let out = Command::new("ip")
        .args(["netns", "exec", &b])
        .arg(std::env::current_exe().expect("own exe"))
        .args(["probe", "http://10.77.0.1:7711"])
        .env("ISTHMUS_TOKEN_FILE", da.0.join("run/token"))
        .output()
        .expect("probe");
    let got = parse_probe(&out);
    assert!(
        !got.values().any(|c| c == "Ok"),
        "a plain client reached a TLS vmd: {got:?}"
    );
}

// ---- who owns what (issue 23: groups, names, jobs) ----

fn user_name(i: usize) -> &'static str {
    USERS[i]
}

fn strangers_cannot_freeze_or_reach_a_users_group() {
    let users = users();
    let u1 = &users[0];
    let vmd = vmd_for(&users);
    // Root's live group, one member so far.
    let (_root, lines) = hold_as(None, &vmd.addr, &["join:rootg"]);
    assert_eq!(lines, ["join:rootg ok 0"]);

    // u1, admitted but not a member: may not freeze it, look it up or join.
    let got = ops_as(
        Some(u1),
        &vmd.addr,
        &[
            "freeze:rootg:1",
            "wait:rootg",
            "gettid:rootg:0",
            "join:rootg",
        ],
    );
    assert!(
        got[0].starts_with("freeze:rootg:1 PermissionDenied")
            && got[0].contains("rule group-change")
            && got[0].contains("belongs to uid 0 (root)"),
        "{got:?}"
    );
    for line in &got[1..] {
        assert!(
            line.contains("PermissionDenied")
                && line.contains("rule names")
                && line.contains("belongs to uid 0 (root)"),
            "{got:?}"
        );
    }
    // Nor a group with no members yet (a freeze that would wait for root's
    // members to come and freeze their group under them).
    let got = ops_as(Some(u1), &vmd.addr, &["freeze:later:1"]);
    assert!(
        got[0].contains("PermissionDenied") && got[0].contains("no members"),
        "{got:?}"
    );

    // The group was not frozen: root's next member gets in, and a member
    // freezes it.
    let got = ops_as(
        None,
        &vmd.addr,
        &["join:rootg", "freeze:rootg:2", "wait:rootg"],
    );
    assert_eq!(
        got,
        [
            "join:rootg ok 1",
            "freeze:rootg:2 ok 2 members",
            "wait:rootg ok rootg 2 members"
        ]
    );
}

fn a_name_taken_first_by_a_stranger_never_becomes_the_peer() {
    let users = users();
    let u1 = &users[0];
    let vmd = vmd_for(&users);
    // u1's job registers `b2` first (joins and freezes it).
    let (_squatter, lines) = hold_as(Some(u1), &vmd.addr, &["join:b2", "freeze:b2:1"]);
    assert_eq!(lines, ["join:b2 ok 0", "freeze:b2:1 ok 1 members"]);
    let owner = format!("belongs to uid {} ({})", u1.uid, user_name(0));

    // Root's job `a2` looks for its peer `b2`: it is told whose `b2` that
    // is instead of getting its table; root's own `b2` cannot take the name.
    let got = ops_as(
        None,
        &vmd.addr,
        &["join:a2", "wait:b2", "gettid:b2:0", "join:b2"],
    );
    assert_eq!(got[0], "join:a2 ok 0");
    for line in &got[1..] {
        assert!(
            line.contains("PermissionDenied") && line.contains(&owner),
            "{got:?}"
        );
    }
    assert!(got[1].contains(&format!("{}/b2", user_name(0))), "{got:?}");

    // A wait that began before the stranger's group existed ends in the
    // same refusal when that group freezes, not with its table.
    let mut waiter = Proc(
        Command::new(std::env::current_exe().expect("own exe"))
            .args(["ops", &vmd.addr, "wait:c2"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("waiter"),
    );
    std::thread::sleep(Duration::from_millis(500));
    let got = ops_as(Some(u1), &vmd.addr, &["join:c2", "freeze:c2:1"]);
    assert_eq!(got, ["join:c2 ok 0", "freeze:c2:1 ok 1 members"]);
    assert!(waiter.wait_exit(T).is_some(), "the waiter did not end");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut waiter.0.stdout.take().expect("stdout"), &mut out)
        .expect("read waiter");
    assert!(
        out.starts_with("wait:c2 PermissionDenied")
            && out.contains(&format!("group \"c2\" belongs to uid {}", u1.uid)),
        "{out}"
    );
}

fn qualified_names_reach_another_users_group_only_when_allowed() {
    let users = users();
    let (u1, u2) = (&users[0], &users[1]);
    let vmd = vmd_for(&users);
    let (n1, n2) = (user_name(0), user_name(1));
    // u1 registers `ocean`, letting u2 in, and `sea`, letting nobody in.
    let join_ocean = format!("join:ocean:{n2}");
    let (_owner, lines) = hold_as(
        Some(u1),
        &vmd.addr,
        &[&join_ocean, "freeze:ocean:1", "join:sea", "freeze:sea:1"],
    );
    assert!(lines.iter().all(|l| l.contains(" ok ")), "{lines:?}");

    let (ocean, sea) = (format!("wait:{n1}/ocean"), format!("wait:{n1}/sea"));
    let wrong_owner = format!("wait:{n2}/ocean");
    let got = ops_as(
        Some(u2),
        &vmd.addr,
        &[&ocean, &sea, "wait:ocean", &wrong_owner],
    );
    // Allowed: the qualified name reaches u1's group (its own name back).
    assert_eq!(got[0], format!("{ocean} ok ocean 1 members"), "{got:?}");
    // Not allowed: refused, naming the owner.
    assert!(
        got[1].contains("PermissionDenied")
            && got[1].contains(&format!(
                "uid {} ({n1}) has not allowed uid {}",
                u1.uid, u2.uid
            )),
        "{got:?}"
    );
    // The plain name never reaches another user's group.
    assert!(
        got[2].contains("PermissionDenied") && got[2].contains(&format!("{n1}/ocean")),
        "{got:?}"
    );
    // A qualifier naming someone else is refused too.
    assert!(
        got[3].contains("PermissionDenied") && got[3].contains("not to uid"),
        "{got:?}"
    );
    // The administrator needs no allowing, but must qualify too.
    let got = ops_as(None, &vmd.addr, &[&sea, "wait:sea"]);
    assert_eq!(got[0], format!("{sea} ok sea 1 members"), "{got:?}");
    assert!(got[1].contains("PermissionDenied"), "{got:?}");
}

/// A vmd like [`vmd_for`] keeping its groups in etcd at `etcd` under
/// `prefix`.
fn etcd_vmd_for(users: &[User], host: &str, etcd: &str, prefix: &str) -> Vmd {
    let (u1, u2) = (users[0].uid.to_string(), users[1].uid.to_string());
    Vmd::start(
        host,
        &[
            "--etcd",
            etcd,
            "--etcd-prefix",
            prefix,
            "--etcd-lease-ttl",
            "5",
            "--allow-uid",
            &u1,
            "--allow-uid",
            &u2,
            "--slots",
            "8",
        ],
    )
}

/// The ops a stranger (not a member, not the owner) tries on root's
/// `rootg`, and the check that each was refused, naming root as the owner:
/// freeze by rule `group-change`, the plain-name lookups and the join by
/// rule `names`.
const STRANGER_OPS: [&str; 4] = [
    "freeze:rootg:1",
    "wait:rootg",
    "gettid:rootg:0",
    "join:rootg",
];
fn assert_strangers_refused(got: &[String]) {
    assert!(
        got[0].starts_with("freeze:rootg:1 PermissionDenied")
            && got[0].contains("rule group-change")
            && got[0].contains("belongs to uid 0 (root)"),
        "{got:?}"
    );
    for line in &got[1..] {
        assert!(
            line.contains("PermissionDenied")
                && line.contains("rule names")
                && line.contains("belongs to uid 0 (root)"),
            "{got:?}"
        );
    }
}

fn owners_are_known_to_every_vmd_on_one_etcd() {
    let users = users();
    let (u1, u2) = (&users[0], &users[1]);
    let (n1, n2) = (user_name(0), user_name(1));
    let etcd = isthmus_testkit::etcd::shared();
    let prefix = format!("/isthmus-test/{}", uuid::Uuid::new_v4());
    let a = etcd_vmd_for(&users, "sec-a", etcd, &prefix);
    let b = etcd_vmd_for(&users, "sec-b", etcd, &prefix);
    // Root's group, its one member on vmd A; u1's `ocean` on A, letting
    // u2 in.
    let (_root, lines) = hold_as(None, &a.addr, &["join:rootg"]);
    assert_eq!(lines, ["join:rootg ok 0"]);
    let join_ocean = format!("join:ocean:{n2}");
    let (_owner, lines) = hold_as(Some(u1), &a.addr, &[&join_ocean]);
    assert_eq!(lines, [format!("{join_ocean} ok 0")]);

    // On vmd B, none of whose tasks is a member: root reaches its group by
    // its plain name (B knows the group and whose it is)...
    let got = ops_as(None, &b.addr, &["gettid:rootg:0"]);
    assert!(got[0].starts_with("gettid:rootg:0 ok "), "{got:?}");
    // ...and u1 may not freeze it, look it up, wait for it or join it.
    assert_strangers_refused(&ops_as(Some(u1), &b.addr, &STRANGER_OPS));
    // u2, allowed, reaches u1's `ocean` through B by its qualified name
    // only.
    let qualified = format!("gettid:{n1}/ocean:0");
    let got = ops_as(Some(u2), &b.addr, &[&qualified, "gettid:ocean:0"]);
    assert!(got[0].starts_with(&format!("{qualified} ok ")), "{got:?}");
    assert!(
        got[1].contains("PermissionDenied") && got[1].contains(&format!("{n1}/ocean")),
        "{got:?}"
    );

    // The group was not frozen: root's next member, on B, joins it and
    // freezes it.
    let got = ops_as(None, &b.addr, &["join:rootg", "freeze:rootg:2"]);
    assert_eq!(got, ["join:rootg ok 1", "freeze:rootg:2 ok 2 members"]);
}

fn owners_survive_a_vmd_restart() {
    let users = users();
    let u1 = &users[0];
    // The default store: redb, in the vmd's runtime directory.
    let mut vmd = vmd_for(&users);
    let (_root, lines) = hold_as(None, &vmd.addr, &["join:rootg"]);
    assert_eq!(lines, ["join:rootg ok 0"]);
    assert_strangers_refused(&ops_as(Some(u1), &vmd.addr, &STRANGER_OPS));

    // No goodbye: the group is in the store's file, its member may resume.
    vmd.restart();
    assert_strangers_refused(&ops_as(Some(u1), &vmd.addr, &STRANGER_OPS));
    // Root still reaches its own group by its plain name, and joins it.
    let got = ops_as(None, &vmd.addr, &["gettid:rootg:0", "join:rootg"]);
    assert!(got[0].starts_with("gettid:rootg:0 ok "), "{got:?}");
    assert_eq!(got[1], "join:rootg ok 1", "{got:?}");
}

fn jobs_output_and_listings_are_their_owners() {
    let users = users();
    let (u1, u2) = (&users[0], &users[1]);
    let vmd = vmd_for(&users);
    let rt = runtime();
    let _tasker = rt.block_on(vmd.tasker("exec"));
    let script = "i=0; while [ $i -lt 60 ]; do echo secret-line-$i; i=$((i+1)); sleep 0.1; done";
    let job = spawn_as(u1, &vmd, &["/bin/sh", "-c", script, "secret-arg"]);
    let j = job.to_string();

    // While it prints: u1 follows its output, u2 sees none of it.
    let watch = ["watch", "--kinds", "task_output,job_exit", "--seconds", "3"];
    let watch_job = [
        "watch",
        "--job",
        j.as_str(),
        "--kinds",
        "task_output",
        "--seconds",
        "3",
    ];
    let (own, stranger, stranger_job, admin) = std::thread::scope(|sc| {
        let own = sc.spawn(|| console_as(u1, &vmd.addr, &watch_job));
        let stranger = sc.spawn(|| console_as(u2, &vmd.addr, &watch));
        let stranger_job = sc.spawn(|| console_as(u2, &vmd.addr, &watch_job));
        let admin = sc.spawn(|| common::console(&vmd.addr, &watch_job));
        (
            own.join().expect("u1 watch"),
            stranger.join().expect("u2 watch"),
            stranger_job.join().expect("u2 watch --job"),
            admin.join().expect("root watch"),
        )
    });
    let own_lines = own.1.matches("secret-line-").count();
    println!("owner's watch: {own_lines} lines in 3 s");
    assert!(own_lines >= 5, "the owner saw its output: {own:?}");
    for (what, got) in [("all", &stranger), ("--job", &stranger_job)] {
        assert_eq!(got.0, 0, "{what}: {got:?}");
        assert!(
            !got.1.contains("secret"),
            "u2 saw u1's output ({what}): {got:?}"
        );
    }

    // Listings: u1 sees its job and its arguments; u2 and root (without
    // asking for every user) do not; root asking does; u2 may not ask.
    let listed = |who: Option<&User>, extra: &[&str]| -> Vec<u64> {
        let mut args = vec!["--json", "ps", "-a"];
        args.extend_from_slice(extra);
        let (rc, out, err) = match who {
            Some(u) => console_as(u, &vmd.addr, &args),
            None => common::console(&vmd.addr, &args),
        };
        assert_eq!(rc, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        v.as_array()
            .expect("list")
            .iter()
            .filter_map(|j| j["job"].as_u64())
            .collect()
    };
    assert!(listed(Some(u1), &[]).contains(&job));
    assert!(!listed(Some(u2), &[]).contains(&job));
    assert!(!listed(None, &[]).contains(&job));
    assert!(listed(None, &["--every-user"]).contains(&job));
    let (rc, out, _) = console_as(u1, &vmd.addr, &["--json", "ps", "-a"]);
    assert_eq!(rc, 0);
    assert!(
        out.contains("secret-arg"),
        "the owner sees its arguments: {out}"
    );
    let (rc, out, err) = console_as(u2, &vmd.addr, &["ps", "-a", "--every-user"]);
    assert_eq!(rc, 1, "{out}");
    assert!(err.contains("rule operator"), "{err}");
    let (rc, out, _) = console_as(u2, &vmd.addr, &["--json", "ps", "-a"]);
    assert_eq!(rc, 0);
    assert!(!out.contains("secret-arg"), "u2 saw u1's arguments: {out}");
    // The administrator's watch sees every job's output.
    assert!(
        admin.1.contains("secret-line-"),
        "the administrator saw no output: {admin:?}"
    );
}

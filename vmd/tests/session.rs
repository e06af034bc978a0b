//! The group service through a real vmd process and real sessions: semantics,
//! concurrency, bad input, liveness.

#![cfg(test)]

mod common;

use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{console, VmdProcess};
use isthmus_client::{ClientError, ErrorKind, Session};
use isthmus_proto as pb;
use isthmus_types::group::{GroupEventKind, SessionEvent};

const T: Duration = Duration::from_secs(20);

async fn session(vmd: &VmdProcess) -> Session {
    Session::connect(&vmd.addr, "test").await.expect("connect")
}

fn code(r: Result<impl std::fmt::Debug, ClientError>) -> (ErrorKind, String) {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => (e.kind(), e.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowest_free_instance_and_gaps() {
    let vmd = VmdProcess::start();
    let s: Vec<Session> = futures_join(4, &vmd).await;
    for (i, c) in s.iter().take(3).enumerate() {
        assert_eq!(c.join("g", None, vec![]).await.unwrap(), i as u32);
    }
    s[1].leave("g").await.unwrap();
    assert_eq!(
        s[3].join("g", None, vec![]).await.unwrap(),
        1,
        "the next joiner takes the gap"
    );
    assert_eq!(s[0].gsize("g").await.unwrap(), 3);
    let m = s[0].gettid("g", 1).await.unwrap();
    assert_eq!(m.task, s[3].task());
    assert_eq!(m.host, "testhost");
    assert_eq!(s[0].getinst("g", Some(s[2].task())).await.unwrap(), 2);
    // A task in several groups.
    assert_eq!(
        s[0].join("other", Some(5), b"ep".to_vec()).await.unwrap(),
        5
    );
    assert_eq!(
        s[0].gettid("other", 5).await.unwrap().endpoint,
        b"ep".to_vec()
    );
    // Last leave destroys the group.
    s[0].leave("other").await.unwrap();
    assert_eq!(code(s[0].gsize("other").await).0, ErrorKind::NotFound);
}

async fn futures_join(n: usize, vmd: &VmdProcess) -> Vec<Session> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(session(vmd).await);
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_clients_get_each_instance_once() {
    let vmd = VmdProcess::start();
    let mut handles = Vec::new();
    for _ in 0..64 {
        let addr = vmd.addr.clone();
        handles.push(tokio::spawn(async move {
            let s = Session::connect(&addr, "joiner").await.expect("connect");
            let inst = s.join("crowd", None, vec![]).await.expect("join");
            (s, inst)
        }));
    }
    let mut sessions = Vec::new();
    let mut seen = HashSet::new();
    for h in handles {
        let (s, inst) = h.await.unwrap();
        assert!(seen.insert(inst), "instance {inst} given twice");
        sessions.push(s);
    }
    assert_eq!(seen, (0..64).collect::<HashSet<u32>>());
    assert_eq!(sessions[0].gsize("crowd").await.unwrap(), 64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_precise_errors_and_state_stays() {
    let vmd = VmdProcess::start();
    let s = session(&vmd).await;
    let other = session(&vmd).await;
    s.join("good", None, vec![]).await.unwrap();
    other.join("good", None, vec![]).await.unwrap();

    let cases: Vec<(ErrorKind, &str, (ErrorKind, String))> = vec![
        (
            ErrorKind::InvalidArgument,
            "empty",
            code(s.join("", None, vec![]).await),
        ),
        (
            ErrorKind::InvalidArgument,
            "255",
            code(s.join(&"x".repeat(256), None, vec![]).await),
        ),
        (
            ErrorKind::InvalidArgument,
            "control",
            code(s.join("bad\nname", None, vec![]).await),
        ),
        (
            ErrorKind::InvalidArgument,
            "instance",
            code(s.join("new", Some(u32::MAX), vec![]).await),
        ),
        (
            ErrorKind::AlreadyExists,
            "taken",
            code(
                s.join("other-group", Some(0), vec![])
                    .await
                    .and(other.join("other-group", Some(0), vec![]).await),
            ),
        ),
        (
            ErrorKind::AlreadyExists,
            "already",
            code(s.join("good", None, vec![]).await),
        ),
        (
            ErrorKind::NotFound,
            "nosuch",
            code(s.gettid("nosuch", 0).await),
        ),
        (
            ErrorKind::NotFound,
            "instance 7",
            code(s.gettid("good", 7).await),
        ),
        (
            ErrorKind::InvalidArgument,
            "not a uuid",
            code(s.getinst("good", Some("not-a-uuid")).await),
        ),
        (
            ErrorKind::NotFound,
            "",
            code(
                s.getinst("good", Some(&uuid::Uuid::new_v4().to_string()))
                    .await,
            ),
        ),
        (ErrorKind::NotFound, "nosuch", code(s.leave("nosuch").await)),
        (
            ErrorKind::FailedPrecondition,
            "good",
            code(s.freeze("good", 1, Duration::from_secs(1)).await),
        ),
        (
            ErrorKind::InvalidArgument,
            "",
            code(s.freeze("good", 0, Duration::from_secs(1)).await),
        ),
    ];
    for (want, needle, (got, msg)) in cases {
        assert_eq!(got, want, "wrong code for {needle:?}: {msg}");
        assert!(
            msg.to_lowercase().contains(&needle.to_lowercase()),
            "message {msg:?} does not name {needle:?}"
        );
    }
    // State unchanged: "good" still has exactly the two members, not frozen.
    let t = s.members("good").await.unwrap();
    assert_eq!(t.members.len(), 2);
    assert!(!t.frozen);
    assert_eq!(
        code(s.gsize("new").await).0,
        ErrorKind::NotFound,
        "a refused join created no group"
    );
    let (c, msg) = code(s.members("").await);
    assert_eq!(c, ErrorKind::InvalidArgument, "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freeze_waits_then_caches_and_refuses_joins() {
    let vmd = VmdProcess::start();
    let a = session(&vmd).await;
    let b = session(&vmd).await;
    let late = session(&vmd).await;
    a.join("f", None, vec![]).await.unwrap();
    let (code_to, _) = code(a.freeze("f", 2, Duration::from_millis(200)).await);
    assert_eq!(code_to, ErrorKind::DeadlineExceeded);
    let a2 = a.clone();
    let waiter = tokio::spawn(async move { a2.freeze("f", 2, T).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    b.join("f", None, b"b-endpoint".to_vec()).await.unwrap();
    let table = waiter.await.unwrap().unwrap();
    assert!(table.frozen);
    assert_eq!(table.members.len(), 2);
    assert!(a.cached("f").is_some(), "frozen table cached locally");
    assert_eq!(
        a.gettid("f", 1).await.unwrap().endpoint,
        b"b-endpoint".to_vec()
    );
    let (c, msg) = code(late.join("f", None, vec![]).await);
    assert_eq!(c, ErrorKind::FailedPrecondition, "{msg}");
    // Another task waits for the frozen group and gets the same table.
    let seen = late.wait_frozen("f", T).await.unwrap();
    assert_eq!(seen.members, table.members);
    // wait_frozen on a group that never appears gives a deadline error.
    assert_eq!(
        code(late.wait_frozen("never", Duration::from_millis(200)).await).0,
        ErrorKind::DeadlineExceeded
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barrier_releases_all_and_has_deadlines() {
    let vmd = VmdProcess::start();
    let s = futures_join(3, &vmd).await;
    for c in &s {
        c.join("b", None, vec![]).await.unwrap();
    }
    let started = Instant::now();
    let mut hs = Vec::new();
    for c in s.clone() {
        hs.push(tokio::spawn(async move { c.barrier("b", None, T).await }));
    }
    for h in hs {
        h.await.unwrap().unwrap();
    }
    assert!(started.elapsed() < T);
    // Only one of three enters: the deadline releases it with an error.
    let (c, _) = code(s[0].barrier("b", None, Duration::from_millis(200)).await);
    assert_eq!(c, ErrorKind::DeadlineExceeded);
    // A member that dies while others wait releases them with an error.
    let waiter = {
        let c = s[0].clone();
        tokio::spawn(async move { c.barrier("b", Some(3), T).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut s = s;
    drop(s.pop());
    let r = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("released")
        .unwrap();
    assert_eq!(code(r).0, ErrorKind::Aborted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_client_leaves_within_a_second_and_watchers_hear() {
    let vmd = VmdProcess::start();
    let watcher = session(&vmd).await;
    let member = session(&vmd).await;
    member.join("k", None, vec![]).await.unwrap();
    let mut events = watcher.subscribe(&["k"]).await.unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_isthmus"))
        .args(["--vmd", &vmd.addr, "join", "k", "--seconds", "60"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the child's join.
    let deadline = Instant::now() + T;
    while member.gsize("k").await.unwrap() < 2 {
        assert!(Instant::now() < deadline, "child never joined");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed_at = Instant::now();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let died = loop {
        let ev = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("event")
            .unwrap();
        if let SessionEvent::Group(ev) = ev {
            if ev.kind == GroupEventKind::MemberDied {
                break ev;
            }
        }
    };
    let elapsed = killed_at.elapsed();
    assert_eq!(died.group, "k");
    assert_eq!(died.member.map(|m| m.instance), Some(1));
    assert!(
        elapsed < Duration::from_secs(1),
        "death noticed after {elapsed:?}"
    );
    assert_eq!(member.gsize("k").await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_lists_members_and_prints_json() {
    let vmd = VmdProcess::start();
    let s = session(&vmd).await;
    s.join("console-g", Some(3), vec![]).await.unwrap();
    let (rc, out, _) = console(&vmd.addr, &["--json", "groups"]);
    assert_eq!(rc, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["group"], "console-g");
    assert_eq!(v[0]["size"], 1);
    let (rc, out, _) = console(&vmd.addr, &["--json", "members", "console-g"]);
    assert_eq!(rc, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["members"][0]["instance"], 3);
    assert_eq!(v["members"][0]["task"], s.task());
    let (rc, _, err) = console(&vmd.addr, &["members", "nosuch"]);
    assert_eq!(rc, 1);
    assert!(err.contains("nosuch"), "{err}");
    let (rc, _, _) = console(&vmd.addr, &["frobnicate"]);
    assert_eq!(rc, 2);
    let (rc, out, _) = console(&vmd.addr, &["--json", "watch", "--current", "--count", "1"]);
    assert_eq!(rc, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["event"], "JOINED");
    assert_eq!(v["instance"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn halt_stops_the_daemon() {
    let mut vmd = VmdProcess::start();
    let (rc, _, _) = console(&vmd.addr, &["halt"]);
    assert_eq!(rc, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = vmd.child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(Instant::now() < deadline, "vmd still running after halt");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_shuts_down_cleanly_with_sessions_open() {
    let mut vmd = VmdProcess::start();
    let s = session(&vmd).await;
    s.join("t", None, vec![]).await.unwrap();
    let pid = vmd.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = vmd.child.try_wait().unwrap() {
            assert!(status.success(), "vmd exited with {status}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "vmd still running 10 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The session notices: the next call fails instead of hanging.
    let r = tokio::time::timeout(Duration::from_secs(10), s.gsize("t"))
        .await
        .expect("no hang");
    assert!(r.is_err());
}

/// The old wire shape of `Welcome` and `HostWelcome`, with the secret
/// fields, decoded from what a real vmd sends: nothing may be in them.
mod old_wire {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Welcome {
        #[prost(string, tag = "1")]
        pub task: String,
        #[prost(string, tag = "2")]
        pub host: String,
        #[prost(bytes = "vec", tag = "3")]
        pub secret: Vec<u8>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SessionReply {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(message, optional, tag = "2")]
        pub welcome: Option<Welcome>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HostWelcome {
        #[prost(bytes = "vec", tag = "1")]
        pub secret: Vec<u8>,
        #[prost(string, tag = "2")]
        pub master: String,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HostDown {
        #[prost(message, optional, tag = "1")]
        pub welcome: Option<HostWelcome>,
    }
}

/// The first message of a stream at `path`, decoded as `R`.
async fn first_reply<Q, R>(addr: &str, path: &'static str, first: Q) -> R
where
    Q: prost::Message + Send + Sync + 'static,
    R: prost::Message + Default + Send + 'static,
{
    let channel = isthmus_client::channel(addr).await.expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    use tokio_stream::StreamExt;
    // The request stream stays open (pending) while the reply is read.
    let requests = tokio_stream::iter(vec![first]).chain(tokio_stream::pending());
    let codec = isthmus_proto::codec::StrictCodec::<Q, R>::default();
    let mut replies = grpc
        .streaming(
            tonic::Request::new(requests),
            tonic::codegen::http::uri::PathAndQuery::from_static(path),
            codec,
        )
        .await
        .expect("stream")
        .into_inner();
    tokio::time::timeout(T, replies.message())
        .await
        .expect("a first reply")
        .expect("no error")
        .expect("a message")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_in_a_welcome() {
    let vmd = VmdProcess::start();
    let hello = pb::SessionRequest {
        id: 1,
        op: Some(pb::session_request::Op::Hello(pb::Hello {
            name: "raw".into(),
            pid: std::process::id(),
            resume_task: String::new(),
        })),
    };
    let reply: old_wire::SessionReply =
        first_reply(&vmd.addr, "/isthmus.v1.Tasks/Session", hello).await;
    let welcome = reply.welcome.expect("a Welcome");
    assert!(!welcome.task.is_empty() && welcome.host == "testhost");
    assert!(
        welcome.secret.is_empty(),
        "a session's Welcome has a secret"
    );

    // A joining host (the local operator may join) is welcomed without one.
    let hello = pb::HostUp {
        kind: Some(pb::host_up::Kind::Hello(pb::HostHello {
            name: "rawhost".into(),
            addr: "unix:/nowhere".into(),
            slots: 1,
            offers: vec![],
            peer_addr: String::new(),
        })),
    };
    let down: old_wire::HostDown =
        first_reply(&vmd.addr, "/isthmus.v1.Peers/HostLink", hello).await;
    let welcome = down.welcome.expect("a HostWelcome");
    assert_eq!(welcome.master, "testhost");
    assert!(welcome.secret.is_empty(), "a host's Welcome has a secret");
}

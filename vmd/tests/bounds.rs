//! What one client can make a real vmd process hold, and how it answers
//! requests it cannot take: Hello deadline, waits cancelled with their
//! session, per-session limits, paged listings, oversized and malformed
//! requests.

#![cfg(test)]

mod common;

use std::time::Duration;

use common::{console, VmdProcess};
use isthmus_client::{channel, ClientError, ErrorKind, Session};
use isthmus_proto as pb;
use isthmus_types::group::{GroupEventKind, SessionEvent};
use pb::session_reply::Result as Reply;
use pb::session_request::Op;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

/// Hang guard for anything that must end; never a measure of speed.
const GUARD: Duration = Duration::from_secs(30);

async fn session(vmd: &VmdProcess) -> Session {
    Session::connect(&vmd.addr, "test").await.expect("connect")
}

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(GUARD, f).await.expect("hang guard")
}

fn refusal<T: std::fmt::Debug>(r: Result<T, ClientError>) -> (ErrorKind, String) {
    match r {
        Ok(v) => panic!("expected a refusal, got {v:?}"),
        Err(e) => (e.kind(), e.to_string()),
    }
}

/// A raw session stream: requests go in through the sender, replies come
/// out of the stream as tonic reads them (statuses included).
async fn raw_session(
    vmd: &VmdProcess,
) -> (
    mpsc::Sender<pb::SessionRequest>,
    tonic::Streaming<pb::SessionReply>,
) {
    let mut client = pb::tasks_client::TasksClient::new(channel(&vmd.addr).await.unwrap());
    let (tx, rx) = mpsc::channel(16);
    let replies = client
        .session(ReceiverStream::new(rx))
        .await
        .expect("session call")
        .into_inner();
    (tx, replies)
}

fn hello() -> pb::SessionRequest {
    pb::SessionRequest {
        id: 1,
        op: Some(Op::Hello(pb::Hello {
            name: "raw".into(),
            pid: 1,
            resume_task: String::new(),
        })),
    }
}

/// The status that ended a stream, after any replies before it.
async fn end_status(replies: &mut tonic::Streaming<pb::SessionReply>) -> tonic::Status {
    loop {
        match within(replies.message()).await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("stream ended with OK, not with a status saying why"),
            Err(status) => return status,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_never_says_hello_is_closed_at_the_deadline() {
    let vmd = VmdProcess::start_with(&["--hello-deadline", "1"]);
    let (tx, mut replies) = raw_session(&vmd).await;
    let status = end_status(&mut replies).await;
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(
        status.message().contains("no Hello within 1s"),
        "{status:?}"
    );
    drop(tx);
    // A stream that does say Hello in time is served as ever.
    let s = session(&vmd).await;
    assert_eq!(s.join("after", None, vec![]).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_end_with_the_session_that_started_them() {
    let vmd = VmdProcess::start();
    let watcher = session(&vmd).await;
    let first = session(&vmd).await;
    first.join("g", None, vec![]).await.unwrap();

    // The orphan-to-be asks to freeze "g" at 2 members, then goes away while
    // the freeze waits. Its membership of "marker" makes its end visible.
    let orphan = session(&vmd).await;
    orphan.join("marker", None, vec![]).await.unwrap();
    let mut events = watcher.subscribe(&["marker"]).await.unwrap();
    let waiting = {
        let orphan = orphan.clone();
        tokio::spawn(async move { orphan.freeze("g", 2, Duration::from_secs(60)).await })
    };
    // Requests of one session are handled in order: once this answers, the
    // freeze is waiting in the vmd.
    orphan.gsize("g").await.unwrap();
    waiting.abort();
    let _ = waiting.await;
    drop(orphan);
    loop {
        let ev = within(events.recv()).await.unwrap();
        if matches!(&ev, SessionEvent::Group(e) if e.kind == GroupEventKind::MemberDied) {
            break;
        }
    }

    // Had the orphan's freeze lived on, this second join would let it freeze
    // the group at 2, and the third join would be refused.
    let second = session(&vmd).await;
    second.join("g", None, vec![]).await.unwrap();
    let third = session(&vmd).await;
    assert_eq!(
        third.join("g", None, vec![]).await.unwrap(),
        2,
        "a wait outlived its session and froze the group"
    );
    let table = first.members("g").await.unwrap();
    assert!(!table.frozen);
    assert_eq!(table.members.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_session_limits_are_refused_naming_the_limit() {
    let vmd = VmdProcess::start_with(&[
        "--max-memberships",
        "3",
        "--max-pending-waits",
        "2",
        "--max-endpoint-bytes",
        "100",
        "--max-followed-groups",
        "4",
    ]);
    let s = session(&vmd).await;

    for g in ["m1", "m2", "m3"] {
        s.join(g, None, vec![]).await.unwrap();
    }
    let (kind, msg) = refusal(s.join("m4", None, vec![]).await);
    assert_eq!(kind, ErrorKind::ResourceExhausted, "{msg}");
    assert!(msg.contains("max-memberships = 3"), "{msg}");
    // Leaving makes room; nothing else changed.
    s.leave("m1").await.unwrap();
    s.join("m4", None, vec![]).await.unwrap();
    assert_eq!(s.gsize("m2").await.unwrap(), 1);
    let other = session(&vmd).await;
    other.join("m2", None, vec![]).await.unwrap();

    let (kind, msg) = refusal(other.join("e", None, vec![0; 101]).await);
    assert_eq!(kind, ErrorKind::ResourceExhausted, "{msg}");
    assert!(msg.contains("max-endpoint-bytes = 100"), "{msg}");
    other.join("e", None, vec![0; 100]).await.unwrap();

    // Two waits pending, a third refused; once one ends there is room. A
    // raw stream, so that the order of the requests is known.
    let (tx, mut replies) = raw_session(&vmd).await;
    tx.send(hello()).await.unwrap();
    within(replies.message()).await.unwrap().unwrap();
    let wait = |id: u64, group: &str| pb::SessionRequest {
        id,
        op: Some(Op::WaitFrozen(pb::WaitFrozenRequest {
            group: group.into(),
            timeout_ms: 60_000,
        })),
    };
    for (id, g) in [(2, "w1"), (3, "w2"), (4, "w3")] {
        tx.send(wait(id, g)).await.unwrap();
    }
    let refused = within(replies.message()).await.unwrap().unwrap();
    assert_eq!(refused.id, 4);
    let Some(Reply::Error(e)) = refused.result else {
        panic!("third wait not refused: {refused:?}")
    };
    assert_eq!(e.code, Code::ResourceExhausted as i32, "{e:?}");
    assert!(e.message.contains("max-pending-waits = 2"), "{e:?}");
    // Release the first wait: another session freezes "w1".
    let a = session(&vmd).await;
    a.join("w1", None, vec![]).await.unwrap();
    a.freeze("w1", 1, Duration::from_secs(10)).await.unwrap();
    let released = within(replies.message()).await.unwrap().unwrap();
    assert_eq!(released.id, 2);
    assert!(matches!(released.result, Some(Reply::Table(t)) if t.frozen));
    tx.send(wait(5, "w3")).await.unwrap();
    tx.send(pb::SessionRequest {
        id: 6,
        op: Some(Op::Gsize(pb::GroupRef { group: "w1".into() })),
    })
    .await
    .unwrap();
    let answer = within(replies.message()).await.unwrap().unwrap();
    assert_eq!(
        answer.id, 6,
        "the wait in the freed room is pending, not refused"
    );
    assert!(matches!(answer.result, Some(Reply::Size(1))), "{answer:?}");

    let f = session(&vmd).await;
    f.subscribe(&["a", "b", "c", "d"]).await.unwrap();
    let (kind, msg) = refusal(f.subscribe(&["e"]).await);
    assert_eq!(kind, ErrorKind::ResourceExhausted, "{msg}");
    assert!(msg.contains("max-followed-groups = 4"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_groups_list_through_the_console() {
    const N: usize = 100_000;
    let vmd = VmdProcess::start_with(&["--max-memberships", "100000"]);
    let s = session(&vmd).await;
    let name = |i: usize| format!("group-{i:06}");
    for chunk in (0..N).collect::<Vec<_>>().chunks(2000) {
        let mut joins = tokio::task::JoinSet::new();
        for &i in chunk {
            let s = s.clone();
            let g = name(i);
            joins.spawn(async move { s.join(&g, None, vec![]).await });
        }
        while let Some(r) = joins.join_next().await {
            r.unwrap().unwrap();
        }
    }
    let (rc, out, err) = tokio::task::spawn_blocking({
        let addr = vmd.addr.clone();
        move || console(&addr, &["groups"])
    })
    .await
    .unwrap();
    assert_eq!(rc, 0, "{err}");
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(lines.len(), N);
    for (i, line) in lines.iter().enumerate() {
        let got = line.split_whitespace().next().unwrap_or("");
        assert_eq!(got, name(i), "line {i}: sorted, each group once");
    }
    // The session's listing pages too.
    let listed = s.list_groups().await.unwrap();
    assert_eq!(listed.len(), N);
    assert_eq!(listed[N - 1].name, name(N - 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_pages_follow_their_tokens() {
    let vmd = VmdProcess::start();
    let s = session(&vmd).await;
    for g in ["c", "a", "e", "b", "d"] {
        s.join(g, None, vec![]).await.unwrap();
    }
    let mut console = pb::console_client::ConsoleClient::new(channel(&vmd.addr).await.unwrap());
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = console
            .list_groups(pb::ListGroupsRequest {
                page_size: 2,
                page_token: token,
            })
            .await
            .unwrap()
            .into_inner();
        assert!(page.groups.len() <= 2);
        seen.push(
            page.groups
                .iter()
                .map(|g| g.group.clone())
                .collect::<Vec<_>>(),
        );
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(seen, vec![vec!["a", "b"], vec!["c", "d"], vec!["e"]]);
    let bad = console
        .list_groups(pb::ListGroupsRequest {
            page_size: 0,
            page_token: "x".repeat(300),
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument, "{bad:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_request_ends_the_session_with_resource_exhausted() {
    let vmd = VmdProcess::start();
    let (tx, mut replies) = raw_session(&vmd).await;
    tx.send(hello()).await.unwrap();
    let welcome = within(replies.message()).await.unwrap().unwrap();
    assert!(matches!(welcome.result, Some(Reply::Welcome(_))));
    tx.send(pb::SessionRequest {
        id: 2,
        op: Some(Op::Join(pb::JoinRequest {
            group: "big".into(),
            instance: None,
            endpoint: vec![7; 5 << 20],
            allow: vec![],
        })),
    })
    .await
    .unwrap();
    let status = end_status(&mut replies).await;
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("too large"), "{status:?}");
    // The vmd serves on.
    let s = session(&vmd).await;
    assert_eq!(s.join("big", None, vec![]).await.unwrap(), 0);
}

/// `GroupRef` with its string field as raw bytes, to send invalid UTF-8.
#[derive(Clone, PartialEq, prost::Message)]
struct RawGroupRef {
    #[prost(bytes = "vec", tag = "1")]
    group: Vec<u8>,
}

/// `SessionRequest { id, hello: Hello { name } }` with the name as raw bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct RawSessionRequest {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(message, optional, tag = "2")]
    hello: Option<RawHello>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct RawHello {
    #[prost(bytes = "vec", tag = "1")]
    name: Vec<u8>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_is_invalid_argument_not_internal() {
    let vmd = VmdProcess::start();
    let mut grpc = tonic::client::Grpc::new(channel(&vmd.addr).await.unwrap());
    grpc.ready().await.unwrap();
    let status = grpc
        .unary::<_, pb::GroupTable, _>(
            tonic::Request::new(RawGroupRef {
                group: vec![b'g', 0xff, 0xfe],
            }),
            "/isthmus.v1.Console/GetGroup".parse().unwrap(),
            isthmus_proto::codec::StrictCodec::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("malformed"), "{status:?}");

    // On the session stream: the stream ends with the same status.
    grpc.ready().await.unwrap();
    let first = RawSessionRequest {
        id: 1,
        hello: Some(RawHello {
            name: vec![0xc3, 0x28],
        }),
    };
    let mut replies = grpc
        .streaming::<_, _, pb::SessionReply, _>(
            tonic::Request::new(tokio_stream::iter([first])),
            "/isthmus.v1.Tasks/Session".parse().unwrap(),
            isthmus_proto::codec::StrictCodec::default(),
        )
        .await
        .unwrap()
        .into_inner();
    let status = end_status(&mut replies).await;
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
}

/// Resident memory of process `pid` (VmRSS), in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("vmd status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// Opens `streams` session streams over `connections` connections and says
/// nothing on any of them. Returns the streams the vmd took (with their
/// silent senders) and the statuses of those it refused at once.
async fn silent_streams(
    vmd: &VmdProcess,
    streams: usize,
    connections: usize,
) -> (
    Vec<(
        mpsc::Sender<pb::SessionRequest>,
        tonic::Streaming<pb::SessionReply>,
    )>,
    Vec<tonic::Status>,
) {
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let ch = channel(&vmd.addr).await.unwrap();
        for _ in 0..streams / connections {
            let mut client = pb::tasks_client::TasksClient::new(ch.clone());
            opening.spawn(async move {
                let (tx, rx) = mpsc::channel(1);
                client
                    .session(ReceiverStream::new(rx))
                    .await
                    .map(|r| (tx, r.into_inner()))
            });
        }
    }
    let (mut held, mut refused) = (Vec::new(), Vec::new());
    while let Some(r) = within(opening.join_next()).await {
        match r.expect("opening task") {
            Ok(s) => held.push(s),
            Err(status) => refused.push(status),
        }
    }
    (held, refused)
}

/// The memory a silent stream holds is bounded while it is held (their
/// number per uid has a limit, each a small window) and comes back when it
/// closes at the Hello deadline, round after round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_streams_are_bounded_and_their_memory_comes_back() {
    const STREAMS: usize = 5000;
    const PER_UID: usize = 1000;
    let per_uid = PER_UID.to_string();
    let vmd = VmdProcess::start_with(&[
        "--hello-deadline",
        "2",
        "--max-pending-hellos-per-uid",
        &per_uid,
        "--heap-trim-secs",
        "1",
    ]);
    let pid = vmd.child.id();
    // One ordinary session first, so that what every vmd allocates once is in the baseline.
    let warm = session(&vmd).await;
    warm.join("warm", None, vec![]).await.unwrap();
    drop(warm);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = rss_kib(pid);
    let mut rounds = Vec::new();
    for round in 0..2 {
        let (mut held, refused) = silent_streams(&vmd, STREAMS, 50).await;
        let during = rss_kib(pid);
        assert_eq!(
            held.len(),
            PER_UID,
            "round {round}: the per-uid bound holds"
        );
        assert_eq!(refused.len(), STREAMS - PER_UID);
        for status in &refused {
            assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
            assert!(
                status.message().contains("limit 1000 per user"),
                "{status:?}"
            );
        }
        // Every held stream is closed at the deadline, saying why.
        for (_tx, replies) in held.iter_mut() {
            let status = end_status(replies).await;
            assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        }
        drop(held);
        // A stream that says Hello is served meanwhile and after.
        let s = session(&vmd).await;
        assert_eq!(
            s.join(&format!("after{round}"), None, vec![])
                .await
                .unwrap(),
            0
        );
        drop(s);
        // The trimmer runs every second: give the closes and a trim time.
        let mut after = rss_kib(pid);
        for _ in 0..20 {
            if after <= before + 8 * 1024 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            after = rss_kib(pid);
        }
        eprintln!(
            "round {round}: vmd RSS before {before} KiB, with {PER_UID} silent streams held {during} KiB, after they closed {after} KiB"
        );
        rounds.push((during, after));
    }
    for (round, (during, after)) in rounds.into_iter().enumerate() {
        assert!(
            during <= before + 64 * 1024,
            "round {round}: {PER_UID} silent streams took the vmd from {before} to {during} KiB"
        );
        assert!(
            after <= before + 8 * 1024,
            "round {round}: the vmd's RSS stayed at {after} KiB after the streams closed (before: {before} KiB)"
        );
    }
}

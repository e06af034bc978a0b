//! The console client against a real `vmd` process and a real exec tasker:
//! refusals keep their kind and the vmd's words, a job's life in domain
//! types, notifications in order. Answers a client cannot read come from a
//! misbehaving server (the real vmd never sends them) and must be
//! protocol errors, not panics.

#![cfg(test)]

use std::time::Duration;

use isthmus_client::{ClientError, Console, ErrorKind, Events, Session};
use isthmus_testkit::{Vmd, T};
use isthmus_types::event::{Notification, NotificationKind, WatchEvent, WatchFilter};
use isthmus_types::group::{GroupEventKind, GroupEventMember};
use isthmus_types::host::{HostDecl, HostState};
use isthmus_types::job::{ExitStatus, Job, JobId, JobState, OutputStream, SpawnSpec};

/// A signal the ranks survive.
const SIGCONT: i32 = 18;

fn refusal<T: std::fmt::Debug>(r: Result<T, ClientError>) -> (ErrorKind, String) {
    let e = r.expect_err("a refusal");
    (e.kind(), e.message())
}

fn exec(np: u32, program: &str, args: &[&str]) -> SpawnSpec {
    SpawnSpec {
        program: program.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        np,
        implementation: "exec".into(),
        ..Default::default()
    }
}

/// The next notification, with a deadline that only guards against hangs.
async fn next(events: &mut Events, what: &str) -> Notification {
    match tokio::time::timeout(T, events.next()).await {
        Ok(Ok(Some(n))) => n,
        Ok(Ok(None)) => panic!("watch ended while waiting for {what}"),
        Ok(Err(e)) => panic!("watch failed while waiting for {what}: {e}"),
        Err(_) => panic!("no {what} within {T:?}"),
    }
}

/// Notifications of `job` up to and including its job exit.
async fn job_events(events: &mut Events, job: JobId) -> Vec<Notification> {
    let mut out = Vec::new();
    loop {
        let n = next(events, &format!("events of job {job}")).await;
        if n.event.job() != Some(job) {
            continue;
        }
        let end = matches!(n.event, WatchEvent::JobExit { .. });
        out.push(n);
        if end {
            return out;
        }
    }
}

/// Waits until every rank of `job` has a pid.
async fn started(c: &Console, job: JobId) -> Job {
    let end = tokio::time::Instant::now() + T;
    loop {
        let jobs = c.jobs(false).await.expect("jobs");
        if let Some(j) = jobs.into_iter().find(|j| j.id == job) {
            if j.ranks.iter().all(|r| r.pid.is_some()) {
                return j;
            }
        }
        assert!(
            tokio::time::Instant::now() < end,
            "ranks of job {job} did not all start"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_keep_their_kind_and_the_vmds_words() {
    let vmd = Vmd::start("h1", &["--slots", "2"]);
    let _tasker = vmd.tasker("exec").await;
    let c = vmd.console().await;

    assert_eq!(
        refusal(c.kill(999).await),
        (ErrorKind::NotFound, "no job 999".to_string())
    );
    assert_eq!(
        refusal(c.signal(999, 15, None).await).0,
        ErrorKind::NotFound
    );
    assert_eq!(
        refusal(c.spawn(exec(0, "true", &[])).await),
        (ErrorKind::InvalidArgument, "np must be at least 1".into())
    );
    let (kind, message) = refusal(c.spawn(exec(3, "true", &[])).await);
    assert_eq!(kind, ErrorKind::ResourceExhausted);
    assert!(message.starts_with("not enough slots"), "{message}");
    let (kind, message) = refusal(c.spawn(exec(1, "/nonexistent/program", &[])).await);
    assert_eq!(kind, ErrorKind::NotFound);
    assert!(message.contains("/nonexistent/program"), "{message}");
    let (kind, message) = refusal(c.delete_host("h1").await);
    assert_eq!(kind, ErrorKind::FailedPrecondition);
    assert!(message.contains("runs the resource manager"), "{message}");
    assert_eq!(
        refusal(c.delete_host("nope").await),
        (ErrorKind::NotFound, "no host named \"nope\"".into())
    );
    let again = HostDecl {
        name: "h1".into(),
        slots: 1,
        offers: vec![],
        addr: String::new(),
        peer_addr: String::new(),
    };
    assert_eq!(refusal(c.add_host(again).await).0, ErrorKind::AlreadyExists);
    assert_eq!(refusal(c.group("nope").await).0, ErrorKind::NotFound);

    // A job that ended can no longer be killed or signalled.
    let mut events = c
        .watch(WatchFilter::kinds([NotificationKind::JobExit]))
        .await
        .expect("watch");
    let job = c.spawn(exec(1, "true", &[])).await.expect("spawn").job;
    job_events(&mut events, job).await;
    let (kind, message) = refusal(c.kill(job).await);
    assert_eq!(kind, ErrorKind::FailedPrecondition);
    assert!(message.contains("already ended"), "{message}");
    let (kind, _) = refusal(c.signal(job, 0, None).await);
    assert_eq!(kind, ErrorKind::InvalidArgument, "signal 0 is no signal");

    // A vmd that joined another refuses resource-manager calls and names
    // the one to ask.
    let h2 = Vmd::start("h2", &["--join", &vmd.addr]);
    let member = h2.console().await;
    let (kind, message) = refusal(member.jobs(false).await);
    assert_eq!(kind, ErrorKind::FailedPrecondition);
    assert!(message.contains(&vmd.addr), "{message}");

    // Nobody listens here (the vmd we stopped did).
    let addr = h2.addr.clone();
    drop(member);
    drop(h2);
    let e = Console::connect(&addr)
        .await
        .err()
        .expect("no vmd to connect to");
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    let e = Console::connect("not an address")
        .await
        .err()
        .expect("a bad address");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_from_spawn_to_kill_in_domain_types() {
    let vmd = Vmd::start("h1", &["--slots", "4"]);
    let _tasker = vmd.tasker("exec").await;
    let c = vmd.console().await;
    let mut events = c
        .watch(WatchFilter::kinds([
            NotificationKind::TaskExit,
            NotificationKind::JobExit,
        ]))
        .await
        .expect("watch");

    let spawned = c.spawn(exec(2, "sleep", &["30"])).await.expect("spawn");
    assert_eq!(spawned.host, "h1");
    let job = started(&c, spawned.job).await;
    assert_eq!(
        (
            job.program.as_str(),
            job.args.as_slice(),
            job.np,
            job.implementation.as_str(),
            job.host.as_str(),
            job.state,
        ),
        (
            "sleep",
            &["30".to_string()][..],
            2,
            "exec",
            "h1",
            JobState::Running
        )
    );
    assert_eq!(
        job.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert!(job.ranks.iter().all(|r| r.is_running()));
    assert_eq!(job.exit, None);

    let hosts = c.hosts().await.expect("hosts");
    assert_eq!(hosts.len(), 1);
    let h1 = &hosts[0];
    assert_eq!(
        (h1.name.as_str(), h1.state, h1.slots, h1.slots_used, h1.jobs),
        ("h1", HostState::Up, 4, 2, 1)
    );
    assert!(h1.answering, "the vmd that answered runs on h1");
    assert_eq!(h1.taskers, vec!["exec".to_string()]);
    let check = c.check_host("h1").await.expect("check");
    assert!(check.responding && check.name == "h1", "{check:?}");

    assert_eq!(c.signal(job.id, SIGCONT, Some(1)).await.expect("signal"), 1);
    c.kill(job.id).await.expect("kill");
    let seen = job_events(&mut events, job.id).await;
    let mut ranks_killed: Vec<_> = seen
        .iter()
        .filter_map(|n| match &n.event {
            WatchEvent::TaskExit {
                rank: Some(r),
                exit: ExitStatus::Signal(_),
                host,
                ..
            } if host == "h1" => Some(*r),
            _ => None,
        })
        .collect();
    ranks_killed.sort();
    assert_eq!(ranks_killed, vec![0, 1], "{seen:?}");
    assert!(
        matches!(
            seen.last().map(|n| &n.event),
            Some(WatchEvent::JobExit { state: JobState::Killed, host, .. }) if host == "h1"
        ),
        "{seen:?}"
    );

    assert!(c.jobs(false).await.expect("jobs").is_empty());
    let all = c.jobs(true).await.expect("jobs --all");
    let ended = all.iter().find(|j| j.id == job.id).expect("the ended job");
    assert_eq!(ended.state, JobState::Killed);
    assert!(ended.ranks.iter().all(|r| r.exit.is_some()), "{ended:?}");
    assert_eq!(c.hosts().await.expect("hosts")[0].slots_used, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_yields_notifications_in_order() {
    let vmd = Vmd::start("h1", &["--slots", "2"]);
    let _tasker = vmd.tasker("exec").await;
    let c = vmd.console().await;
    let mut events = c
        .watch(WatchFilter {
            kinds: NotificationKind::ALL.to_vec(),
            current_state: true,
            ..Default::default()
        })
        .await
        .expect("watch");

    // The current state first: the host, then the end of the snapshot.
    let first = next(&mut events, "the host snapshot").await;
    match &first.event {
        WatchEvent::HostAdded(h) => {
            assert_eq!((first.seq, h.name.as_str(), h.answering), (0, "h1", true))
        }
        other => panic!("expected the host snapshot, got {other:?}"),
    }
    let synced = next(&mut events, "the end of the snapshot").await;
    assert_eq!(synced.event, WatchEvent::Synced);

    // Group events, numbered in their own series.
    let s = Session::connect(&vmd.addr, "watcher-test")
        .await
        .expect("session");
    s.join("g", Some(3), vec![]).await.expect("join");
    s.leave("g").await.expect("leave");
    let mut group_events = Vec::new();
    while group_events.len() < 2 {
        let n = next(&mut events, "group events").await;
        if let WatchEvent::Group(g) = n.event {
            group_events.push((n.seq, g));
        }
    }
    let (seq_joined, joined) = &group_events[0];
    let (seq_left, left) = &group_events[1];
    assert_eq!(
        (joined.kind, joined.group.as_str()),
        (GroupEventKind::Joined, "g")
    );
    let me = Some(GroupEventMember {
        instance: 3,
        task: s.task().to_string(),
    });
    assert_eq!(joined.member, me);
    assert_eq!(left.kind, GroupEventKind::Left);
    assert_eq!(left.member, me);
    assert!(seq_joined < seq_left);

    // A job's output in order, its task exit, then its job exit.
    let script = "echo one; echo two >&2; echo three; exit 3";
    let job = c
        .spawn(exec(1, "sh", &["-c", script]))
        .await
        .expect("spawn")
        .job;
    let seen = job_events(&mut events, job).await;
    let stdout: Vec<_> = seen
        .iter()
        .filter_map(|n| match &n.event {
            WatchEvent::Output {
                rank: Some(0),
                stream: OutputStream::Stdout,
                line,
                ..
            } => Some(line.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(stdout, ["one", "three"], "{seen:?}");
    assert!(seen.iter().any(|n| matches!(&n.event,
        WatchEvent::Output { stream: OutputStream::Stderr, line, .. } if line == "two")));
    let task_exit = seen
        .iter()
        .position(|n| {
            matches!(
                n.event,
                WatchEvent::TaskExit {
                    rank: Some(0),
                    exit: ExitStatus::Code(3),
                    ..
                }
            )
        })
        .expect("the rank's exit");
    assert_eq!(
        task_exit,
        seen.len() - 2,
        "the job exit comes last: {seen:?}"
    );
    assert!(
        matches!(
            seen.last().map(|n| &n.event),
            Some(WatchEvent::JobExit {
                state: JobState::Failed,
                ..
            })
        ),
        "{seen:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[0].seq < w[1].seq),
        "resource-manager events are numbered in order: {seen:?}"
    );
}

/// A vmd that answers with values no client can read.
mod misbehaving {
    use std::pin::Pin;

    use isthmus_proto as pb;
    use pb::console_server::{Console, ConsoleServer};
    use tokio_stream::Stream;
    use tonic::{Request, Response, Status};

    pub struct Liar;

    type Answer<T> = Result<Response<T>, Status>;

    fn nothing<T>() -> Answer<T> {
        Err(Status::unimplemented("not in this test"))
    }

    #[tonic::async_trait]
    impl Console for Liar {
        type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send>>;

        async fn list_groups(&self, _: Request<pb::ListGroupsRequest>) -> Answer<pb::GroupList> {
            nothing()
        }
        async fn get_group(&self, _: Request<pb::GroupRef>) -> Answer<pb::GroupTable> {
            nothing()
        }
        async fn watch(&self, _: Request<pb::WatchRequest>) -> Answer<Self::WatchStream> {
            let events = vec![
                Ok(pb::Event {
                    seq: 0,
                    kind: Some(pb::event::Kind::Synced(pb::Synced {})),
                }),
                // A job exit whose state this client does not know.
                Ok(pb::Event {
                    seq: 1,
                    kind: Some(pb::event::Kind::JobExit(pb::JobExit {
                        job: 1,
                        state: 77,
                        ..Default::default()
                    })),
                }),
                Ok(pb::Event { seq: 2, kind: None }),
            ];
            Ok(Response::new(Box::pin(tokio_stream::iter(events))))
        }
        async fn halt(&self, _: Request<pb::HaltRequest>) -> Answer<pb::HaltReply> {
            nothing()
        }
        async fn list_hosts(&self, _: Request<pb::ListHostsRequest>) -> Answer<pb::HostList> {
            Ok(Response::new(pb::HostList {
                hosts: vec![pb::HostInfo {
                    name: "h".into(),
                    state: 9,
                    ..Default::default()
                }],
            }))
        }
        async fn add_host(&self, _: Request<pb::AddHostRequest>) -> Answer<pb::HostInfo> {
            nothing()
        }
        async fn delete_host(&self, _: Request<pb::HostRef>) -> Answer<pb::DeleteHostReply> {
            nothing()
        }
        async fn check_host(&self, _: Request<pb::HostRef>) -> Answer<pb::HostCheck> {
            nothing()
        }
        async fn spawn(&self, _: Request<pb::SpawnRequest>) -> Answer<pb::SpawnReply> {
            nothing()
        }
        async fn list_jobs(&self, _: Request<pb::ListJobsRequest>) -> Answer<pb::JobList> {
            // An exited rank that does not say how it ended.
            Ok(Response::new(pb::JobList {
                jobs: vec![pb::JobInfo {
                    job: 1,
                    state: pb::JobState::JobRunning as i32,
                    ranks: vec![pb::RankInfo {
                        rank: 0,
                        state: pb::RankState::RankExited as i32,
                        pid: 5,
                        exit: None,
                    }],
                    ..Default::default()
                }],
            }))
        }
        async fn kill_job(&self, _: Request<pb::KillRequest>) -> Answer<pb::KillReply> {
            nothing()
        }
        async fn signal_job(&self, _: Request<pb::SignalRequest>) -> Answer<pb::SignalReply> {
            nothing()
        }
    }

    /// Serves a [`Liar`] on a Unix socket in a fresh directory (no token
    /// to arrange); returns its address and the directory.
    pub async fn serve() -> (String, isthmus_testkit::TempDir) {
        let dir = isthmus_testkit::TempDir::new("liar");
        let path = dir.0.join("liar.sock");
        let listener = tokio::net::UnixListener::bind(&path).expect("bind");
        let addr = format!("unix:{}", path.display());
        let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(ConsoleServer::new(Liar))
                .serve_with_incoming(incoming),
        );
        (addr, dir)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_the_client_cannot_read_are_protocol_errors() {
    let (addr, _dir) = misbehaving::serve().await;
    let c = Console::connect(&addr).await.expect("connect");

    let (kind, message) = refusal(c.hosts().await);
    assert_eq!(kind, ErrorKind::Protocol);
    assert!(message.contains("unknown host state"), "{message}");
    let (kind, message) = refusal(c.jobs(true).await);
    assert_eq!(kind, ErrorKind::Protocol);
    assert!(
        message.contains("exited rank without exit status"),
        "{message}"
    );

    let mut events = c.watch(WatchFilter::default()).await.expect("watch");
    assert_eq!(
        next(&mut events, "the first event").await.event,
        WatchEvent::Synced
    );
    let e = events.next().await.expect_err("an unknown job state");
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    let e = events.next().await.expect_err("an event without kind");
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(matches!(events.next().await, Ok(None)), "the stream ended");

    // What the server does not implement is not mistaken for a refusal.
    assert_eq!(
        c.halt().await.expect_err("unimplemented").kind(),
        ErrorKind::Protocol
    );
}

//! A task's session with its vmd, as the bridge, the console's `join` and
//! the benchmark hold it.
//!
//! One HTTP/2 stream carries every call: a request goes out tagged with an
//! id, a reader task hands each reply to the caller waiting on that id, and
//! pushed events go to subscribers. This avoids the cost of a new gRPC call
//! per operation (100+ µs here). Tables of frozen groups are cached locally,
//! as PVM's tasks did, so lookups in them never leave the process; the
//! session subscribes to each cached group's events and drops a table when
//! the group is destroyed or loses a member.
//!
//! **Resume.** When the stream breaks (the vmd was killed or restarted),
//! the session reconnects to the same address, retrying with backoff for
//! the resume window ([`SessionOptions::resume_window`],
//! `ISTHMUS_RESUME_WINDOW`, default 60 s), and asks to resume as the same
//! task (`Hello.resume_task`). The vmd agrees only if its store still has
//! the task on its host and the connection comes from the process that
//! opened it (checked by the kernel's peer credentials: no secret). Then
//! the cached frozen tables are dropped (events may have been missed),
//! subscribers get an event without a group (the "events were lost"
//! signal) and the followed groups are subscribed again.
//!
//! While the session is down, a new call waits for the resume within its
//! own deadline (then `Timeout`); a call whose request was already sent
//! when the stream broke fails with [`ClientError::Interrupted`] (it may
//! or may not have taken effect). Once the vmd refuses the resume, or the
//! window passes, the session is over: every call fails with `Closed`. A
//! vmd that stops cleanly closes its tasks and says so as the stream ends
//! ([`pb::SESSION_END_KEY`]): the session is then over at once.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use isthmus_proto as pb;
use isthmus_types::group::{GroupEvent, GroupSummary, GroupTable, Member, SessionEvent};
use pb::session_reply::Result as Reply;
use pb::session_request::Op;
use pb::tasks_client::TasksClient;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::Streaming;
use tracing::{debug, info, warn};

use crate::channel::{channel, default_addr};
use crate::error::{ClientError, ErrorKind, Result};
use crate::frozen::FrozenTables;
use crate::stream;

/// How long a call that does not wait on other tasks may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Extra time a waiting call (freeze, barrier) allows beyond its own timeout
/// before the client gives up on the vmd.
const WAIT_MARGIN: Duration = Duration::from_secs(5);
/// How long a session tries to resume after its vmd went away, by default.
pub const DEFAULT_RESUME_WINDOW: Duration = Duration::from_secs(60);
/// First and longest pause between two resume attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// How a session behaves when its vmd goes away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionOptions {
    /// How long to keep trying to resume (zero: never; the session ends
    /// with the stream).
    pub resume_window: Duration,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            resume_window: DEFAULT_RESUME_WINDOW,
        }
    }
}

impl SessionOptions {
    /// The defaults, with `ISTHMUS_RESUME_WINDOW` (seconds) if set.
    pub fn from_env() -> Result<Self> {
        let name = isthmus_types::env::RESUME_WINDOW;
        let mut options = SessionOptions::default();
        if let Ok(value) = std::env::var(name) {
            let secs: f64 = value.trim().parse().map_err(|_| ClientError::BadSetting {
                name,
                value: value.clone(),
                reason: "not a number of seconds".into(),
            })?;
            if !(0.0..=86_400.0).contains(&secs) {
                return Err(ClientError::BadSetting {
                    name,
                    value,
                    reason: "must be between 0 and 86400 seconds".into(),
                });
            }
            options.resume_window = Duration::from_secs_f64(secs);
        }
        Ok(options)
    }
}

/// A task's session with its vmd. Cheap to clone; the session ends when the
/// last clone is dropped (or the process dies).
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

/// The state of the stream to the vmd.
#[derive(Clone)]
enum Link {
    /// Open: requests go to this sender. The number tells streams apart.
    Up(u64, mpsc::UnboundedSender<pb::SessionRequest>),
    /// Broken; trying to resume.
    Resuming,
    /// Over for good.
    Gone,
}

/// The groups whose events the session asked for, to ask again on resume.
#[derive(Default)]
struct Followed {
    all: bool,
    groups: BTreeSet<String>,
}

struct Inner {
    addr: String,
    name: String,
    options: SessionOptions,
    link: watch::Sender<Link>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    next_id: AtomicU64,
    welcome: pb::Welcome,
    events: broadcast::Sender<SessionEvent>,
    frozen: FrozenTables,
    followed: Mutex<Followed>,
    reader: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.get_mut().ok().and_then(|r| r.take()) {
            reader.abort();
        }
    }
}

/// An open stream: where requests go, where replies come from, and the
/// vmd's welcome.
type Opened = (
    mpsc::UnboundedSender<pb::SessionRequest>,
    Streaming<pb::SessionReply>,
    pb::Welcome,
);

/// Opens a session stream to `addr`: a new task, or `resume` an old one.
async fn open_stream(addr: &str, name: &str, resume: &str, timeout: Duration) -> Result<Opened> {
    let channel = tokio::time::timeout(timeout, channel(addr))
        .await
        .map_err(|_| ClientError::Timeout(timeout))??;
    let mut client = TasksClient::new(channel);
    let (tx, rx) = mpsc::unbounded_channel();
    let hello = pb::Hello {
        name: name.to_string(),
        pid: std::process::id(),
        resume_task: resume.to_string(),
    };
    tx.send(pb::SessionRequest {
        id: 1,
        op: Some(Op::Hello(hello)),
    })
    .map_err(|_| ClientError::Closed)?;
    let (replies, first) =
        stream::open(client.session(UnboundedReceiverStream::new(rx)), timeout).await?;
    match first.result {
        Some(Reply::Welcome(w)) => Ok((tx, replies, w)),
        Some(Reply::Error(e)) => Err(ClientError::from_reply(e)),
        other => Err(ClientError::Protocol(format!(
            "expected Welcome, got {other:?}"
        ))),
    }
}

/// Whether a failed resume attempt is the vmd's final word (rather than
/// a vmd not up yet).
fn refused_for_good(e: &ClientError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::NotFound
            | ErrorKind::PermissionDenied
            | ErrorKind::FailedPrecondition
            | ErrorKind::InvalidArgument
            | ErrorKind::Unauthenticated
            | ErrorKind::Protocol
    )
}

/// Whether the vmd ended the session for good (see
/// [`pb::SESSION_END_KEY`]).
fn is_final(status: &tonic::Status) -> bool {
    status
        .metadata()
        .get(pb::SESSION_END_KEY)
        .is_some_and(|v| v.as_bytes() == pb::SESSION_END_FINAL.as_bytes())
}

/// Reads replies until the stream breaks, then resumes; ends when the
/// session is over (or dropped).
async fn read_replies(weak: Weak<Inner>, mut replies: Streaming<pb::SessionReply>) {
    loop {
        loop {
            let msg = replies.message().await;
            let Some(inner) = weak.upgrade() else { return };
            match msg {
                Ok(Some(reply)) => inner.dispatch(reply),
                Err(status) if is_final(&status) => {
                    debug!("the vmd ended the session for good");
                    inner.link.send_replace(Link::Gone);
                    inner.fail_pending();
                    return;
                }
                Ok(None) | Err(_) => break,
            }
        }
        let Some(inner) = weak.upgrade() else { return };
        // Resuming first, then the pending calls fail: a call that saw the
        // link up registered before this and is woken (see `call`).
        inner.link.send_replace(Link::Resuming);
        inner.fail_pending();
        inner.frozen.clear();
        let window = inner.options.resume_window;
        drop(inner);
        if window.is_zero() {
            debug!("vmd session stream ended");
        } else {
            warn!(window = ?window, "vmd session stream broke; resuming");
        }
        match resume(&weak, window).await {
            Some(next) => replies = next,
            None => {
                if let Some(inner) = weak.upgrade() {
                    inner.link.send_replace(Link::Gone);
                    inner.fail_pending();
                }
                return;
            }
        }
    }
}

/// Tries to resume the session within `window`; the new reply stream on
/// success.
async fn resume(weak: &Weak<Inner>, window: Duration) -> Option<Streaming<pb::SessionReply>> {
    if window.is_zero() {
        return None;
    }
    let end = Instant::now() + window;
    let mut backoff = BACKOFF_MIN;
    let mut generation = 0u64;
    loop {
        let inner = weak.upgrade()?;
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            warn!(task = %inner.welcome.task, ?window, "vmd did not come back within the resume window: session over");
            return None;
        }
        generation += 1;
        let task = inner.welcome.task.clone();
        match open_stream(&inner.addr, &inner.name, &task, left.min(CALL_TIMEOUT)).await {
            Ok((tx, replies, welcome)) => {
                if welcome.task != task {
                    warn!(%task, resumed = %welcome.task, "vmd resumed another task: session over");
                    return None;
                }
                // Events were missed while down: nothing cached is trusted,
                // subscribers hear so, and the followed groups are followed
                // again before any other request goes out.
                inner.frozen.clear();
                if let Some(op) = inner.follow_again() {
                    let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
                    let _ = tx.send(pb::SessionRequest { id, op: Some(op) });
                }
                let _ = inner.events.send(SessionEvent::Lost);
                inner.link.send_replace(Link::Up(generation, tx));
                info!(%task, "vmd session resumed");
                return Some(replies);
            }
            Err(e) if refused_for_good(&e) => {
                warn!(%task, error = %e, "the vmd refused to resume this task: session over");
                return None;
            }
            Err(e) => debug!(%task, error = %e, "vmd not back yet"),
        }
        drop(inner);
        let left = end.saturating_duration_since(Instant::now());
        tokio::time::sleep(backoff.min(left)).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

impl Session {
    /// Connects to the vmd at `addr` and opens a session under `name`,
    /// resuming as [`SessionOptions::from_env`] says.
    pub async fn connect(addr: &str, name: &str) -> Result<Self> {
        Self::connect_with(addr, name, SessionOptions::from_env()?).await
    }

    /// [`connect`](Self::connect) with explicit options.
    pub async fn connect_with(addr: &str, name: &str, options: SessionOptions) -> Result<Self> {
        let (tx, replies, welcome) = open_stream(addr, name, "", CALL_TIMEOUT).await?;
        let (events, _) = broadcast::channel(4096);
        let (link, _) = watch::channel(Link::Up(0, tx));
        let inner = Arc::new(Inner {
            addr: addr.to_string(),
            name: name.to_string(),
            options,
            link,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(2),
            welcome,
            events,
            frozen: FrozenTables::default(),
            followed: Mutex::new(Followed::default()),
            reader: Mutex::new(None),
        });
        let reader = tokio::spawn(read_replies(Arc::downgrade(&inner), replies));
        if let Ok(mut slot) = inner.reader.lock() {
            *slot = Some(reader);
        }
        Ok(Self { inner })
    }

    /// Connects to the vmd named by `ISTHMUS_VMD` or the default address.
    pub async fn connect_default(name: &str) -> Result<Self> {
        Self::connect(&default_addr(), name).await
    }

    /// This task's id.
    pub fn task(&self) -> &str {
        &self.inner.welcome.task
    }

    /// The host the vmd runs on.
    pub fn host(&self) -> &str {
        &self.inner.welcome.host
    }

    /// The host's address for data connections, as its vmd was told
    /// (`vmd --data-addr`); empty if none.
    pub fn data_addr(&self) -> &str {
        &self.inner.welcome.data_addr
    }

    /// Whether the stream to the vmd is open now (false while resuming
    /// and once the session is over).
    pub fn is_connected(&self) -> bool {
        matches!(*self.inner.link.borrow(), Link::Up(..))
    }

    /// Waits until the stream is up (or `deadline`): its number and sender.
    async fn link_up(
        &self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(u64, mpsc::UnboundedSender<pb::SessionRequest>)> {
        let mut link = self.inner.link.subscribe();
        loop {
            let now = link.borrow_and_update().clone();
            match now {
                Link::Up(generation, tx) => return Ok((generation, tx)),
                Link::Gone => return Err(ClientError::Closed),
                Link::Resuming => {}
            }
            match tokio::time::timeout_at(deadline, link.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(ClientError::Closed),
                Err(_) => return Err(ClientError::Timeout(timeout)),
            }
        }
    }

    async fn call(&self, op: Op, timeout: Duration) -> Result<Reply> {
        let deadline = Instant::now() + timeout;
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, rx) = loop {
            let (generation, requests) = self.link_up(deadline, timeout).await?;
            let (tx, rx) = oneshot::channel();
            self.inner
                .pending
                .lock()
                .map_err(|_| ClientError::Closed)?
                .insert(id, tx);
            // Registered before this check: if the stream breaks after it,
            // the reader's `fail_pending` wakes this call.
            if matches!(*self.inner.link.borrow(), Link::Up(g, _) if g == generation) {
                break (requests, rx);
            }
            // Broke in between; nothing was sent: wait for the resume.
            self.forget(id);
        };
        if reply.send(pb::SessionRequest { id, op: Some(op) }).is_err() {
            self.forget(id);
            return Err(ClientError::Interrupted);
        }
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(Reply::Error(e))) => Err(ClientError::from_reply(e)),
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(match *self.inner.link.borrow() {
                Link::Gone => ClientError::Closed,
                _ => ClientError::Interrupted,
            }),
            Err(_) => {
                self.forget(id);
                Err(ClientError::Timeout(timeout))
            }
        }
    }

    fn forget(&self, id: u64) {
        if let Ok(mut p) = self.inner.pending.lock() {
            p.remove(&id);
        }
    }

    /// Sends a request whose reply nobody waits for (dropped while the
    /// session is down: what it asked is asked again on resume).
    fn post(&self, op: Op) {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        if let Link::Up(_, tx) = &*self.inner.link.borrow() {
            let _ = tx.send(pb::SessionRequest { id, op: Some(op) });
        }
    }

    /// Follows the events of `group` from now on (and after a resume).
    fn follow(&self, group: &str) {
        if let Ok(mut f) = self.inner.followed.lock() {
            f.groups.insert(group.to_string());
        }
        self.post(Op::Subscribe(pb::SubscribeRequest {
            groups: vec![group.to_string()],
        }));
    }

    /// Joins `group`, at the lowest free instance or exactly at `instance`,
    /// publishing `endpoint`. Returns the instance.
    pub async fn join(&self, group: &str, instance: Option<u32>, endpoint: Vec<u8>) -> Result<u32> {
        self.join_allowing(group, instance, endpoint, &[]).await
    }

    /// Like [`Session::join`]; the group's owner also lets the users in
    /// `allow` (names or decimal uids) join and reach the group by its
    /// qualified name `owner/group`. Only the owner's joins add to the list.
    pub async fn join_allowing(
        &self,
        group: &str,
        instance: Option<u32>,
        endpoint: Vec<u8>,
        allow: &[String],
    ) -> Result<u32> {
        let op = Op::Join(pb::JoinRequest {
            group: group.to_string(),
            instance,
            endpoint,
            allow: allow.to_vec(),
        });
        match self.call(op, CALL_TIMEOUT).await? {
            Reply::Instance(i) => Ok(i),
            other => Err(unexpected("join", other)),
        }
    }

    /// Leaves `group`, and forgets its cached table at once rather than on
    /// the event that follows.
    pub async fn leave(&self, group: &str) -> Result<()> {
        match self
            .call(
                Op::Leave(pb::LeaveRequest {
                    group: group.to_string(),
                }),
                CALL_TIMEOUT,
            )
            .await?
        {
            Reply::Done(_) => {
                self.inner.frozen.forget(group);
                Ok(())
            }
            other => Err(unexpected("leave", other)),
        }
    }

    /// The member at `instance`: from the local table when the group is
    /// frozen and cached, else from the vmd.
    pub async fn gettid(&self, group: &str, instance: u32) -> Result<Arc<Member>> {
        if let Some(m) = self.cached_member(group, instance) {
            return Ok(m);
        }
        let op = Op::Gettid(pb::GetTidRequest {
            group: group.to_string(),
            instance,
        });
        match self.call(op, CALL_TIMEOUT).await? {
            Reply::Member(m) => Ok(Arc::new(m.into())),
            other => Err(unexpected("gettid", other)),
        }
    }

    /// The instance of `task` (None: this task) in `group`.
    pub async fn getinst(&self, group: &str, task: Option<&str>) -> Result<u32> {
        let task = task.unwrap_or_else(|| self.task()).to_string();
        if let Some(table) = self.cached(group) {
            if let Some(m) = table.members.iter().find(|m| m.task == task) {
                return Ok(m.instance);
            }
        }
        let op = Op::Getinst(pb::GetInstRequest {
            group: group.to_string(),
            task,
        });
        match self.call(op, CALL_TIMEOUT).await? {
            Reply::Instance(i) => Ok(i),
            other => Err(unexpected("getinst", other)),
        }
    }

    pub async fn gsize(&self, group: &str) -> Result<u32> {
        if let Some(table) = self.cached(group) {
            return Ok(table.members.len() as u32);
        }
        match self
            .call(
                Op::Gsize(pb::GroupRef {
                    group: group.to_string(),
                }),
                CALL_TIMEOUT,
            )
            .await?
        {
            Reply::Size(s) => Ok(s),
            other => Err(unexpected("gsize", other)),
        }
    }

    pub async fn members(&self, group: &str) -> Result<GroupTable> {
        match self
            .call(
                Op::Members(pb::GroupRef {
                    group: group.to_string(),
                }),
                CALL_TIMEOUT,
            )
            .await?
        {
            Reply::Table(t) => Ok(t.into()),
            other => Err(unexpected("members", other)),
        }
    }

    /// Every group, sorted by name, fetched a page at a time.
    pub async fn list_groups(&self) -> Result<Vec<GroupSummary>> {
        let mut groups = Vec::new();
        let mut page_token = String::new();
        loop {
            let req = pb::ListGroupsRequest {
                page_size: 0,
                page_token,
            };
            match self.call(Op::ListGroups(req), CALL_TIMEOUT).await? {
                Reply::Groups(page) => {
                    groups.extend(page.groups.into_iter().map(GroupSummary::from));
                    if page.next_page_token.is_empty() {
                        return Ok(groups);
                    }
                    page_token = page.next_page_token;
                }
                other => return Err(unexpected("list_groups", other)),
            }
        }
    }

    /// Waits until `group` has `size` members, freezes it and caches its table.
    pub async fn freeze(
        &self,
        group: &str,
        size: u32,
        timeout: Duration,
    ) -> Result<Arc<GroupTable>> {
        self.follow(group);
        let epoch = self.inner.frozen.epoch();
        let op = Op::Freeze(pb::FreezeRequest {
            group: group.to_string(),
            size,
            timeout_ms: millis(timeout),
        });
        match self.call(op, timeout + WAIT_MARGIN).await? {
            Reply::Table(t) => Ok(self.inner.frozen.insert(t.into(), epoch)),
            other => Err(unexpected("freeze", other)),
        }
    }

    /// Waits until `group` exists and is frozen, and caches its table.
    pub async fn wait_frozen(&self, group: &str, timeout: Duration) -> Result<Arc<GroupTable>> {
        if let Some(t) = self.cached(group) {
            return Ok(t);
        }
        self.follow(group);
        let epoch = self.inner.frozen.epoch();
        let op = Op::WaitFrozen(pb::WaitFrozenRequest {
            group: group.to_string(),
            timeout_ms: millis(timeout),
        });
        match self.call(op, timeout + WAIT_MARGIN).await? {
            // A qualified name (`owner/group`) comes back as the group's own
            // name: not cached, so that a plain lookup of that name never
            // finds another user's table here.
            Reply::Table(t) if t.group != group => Ok(Arc::new(t.into())),
            Reply::Table(t) => Ok(self.inner.frozen.insert(t.into(), epoch)),
            other => Err(unexpected("wait_frozen", other)),
        }
    }

    /// Waits until `count` members (None: all) of `group` have entered.
    pub async fn barrier(&self, group: &str, count: Option<u32>, timeout: Duration) -> Result<()> {
        let op = Op::Barrier(pb::BarrierRequest {
            group: group.to_string(),
            count,
            timeout_ms: millis(timeout),
        });
        match self.call(op, timeout + WAIT_MARGIN).await? {
            Reply::Done(_) => Ok(()),
            other => Err(unexpected("barrier", other)),
        }
    }

    /// Receives the events of `groups` (none named: all groups) from now on.
    pub async fn subscribe(&self, groups: &[&str]) -> Result<broadcast::Receiver<SessionEvent>> {
        let rx = self.inner.events.subscribe();
        if let Ok(mut f) = self.inner.followed.lock() {
            if groups.is_empty() {
                f.all = true;
            }
            f.groups.extend(groups.iter().map(|g| g.to_string()));
        }
        let op = Op::Subscribe(pb::SubscribeRequest {
            groups: groups.iter().map(|g| g.to_string()).collect(),
        });
        match self.call(op, CALL_TIMEOUT).await? {
            Reply::Done(_) => Ok(rx),
            other => Err(unexpected("subscribe", other)),
        }
    }

    /// Events of the groups this session already follows (every group whose
    /// table it cached by `freeze` or `wait_frozen`), without subscribing to more.
    pub fn events(&self) -> broadcast::Receiver<SessionEvent> {
        self.inner.events.subscribe()
    }

    /// The locally cached table of a frozen group, if any.
    pub fn cached(&self, group: &str) -> Option<Arc<GroupTable>> {
        self.inner.frozen.table(group)
    }

    /// The member at `instance` of a cached frozen group, without a call.
    fn cached_member(&self, group: &str, instance: u32) -> Option<Arc<Member>> {
        self.inner.frozen.member(group, instance)
    }
}

impl Inner {
    /// Wakes every call waiting for a reply: they were sent on a stream
    /// that is gone.
    fn fail_pending(&self) {
        // Dropping the senders wakes every waiter.
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
    }

    /// The subscription that follows again what this session followed.
    fn follow_again(&self) -> Option<Op> {
        let f = self.followed.lock().ok()?;
        if f.all {
            return Some(Op::Subscribe(pb::SubscribeRequest { groups: vec![] }));
        }
        if f.groups.is_empty() {
            return None;
        }
        Some(Op::Subscribe(pb::SubscribeRequest {
            groups: f.groups.iter().cloned().collect(),
        }))
    }

    fn dispatch(&self, reply: pb::SessionReply) {
        let Some(result) = reply.result else { return };
        if let Reply::Event(pb::Event {
            kind: Some(pb::event::Kind::Group(ev)),
            ..
        }) = result
        {
            self.on_event(ev);
            return;
        }
        let waiter = self
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.remove(&reply.id));
        if let Some(w) = waiter {
            let _ = w.send(result);
        }
    }

    fn on_event(&self, ev: pb::GroupEvent) {
        // An event without a group says the vmd dropped events for this
        // session.
        let ev = if ev.group.is_empty() {
            SessionEvent::Lost
        } else {
            match GroupEvent::try_from(ev) {
                Ok(ev) => SessionEvent::Group(ev),
                Err(e) => {
                    warn!(error = %e, "malformed group event from the vmd: dropped");
                    return;
                }
            }
        };
        self.frozen.on_event(&ev);
        let _ = self.events.send(ev);
    }
}

fn millis(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX).max(1)
}

fn unexpected(call: &str, reply: Reply) -> ClientError {
    ClientError::Protocol(format!("unexpected reply to {call}: {reply:?}"))
}

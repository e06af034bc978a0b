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

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use isthmus_proto as pb;
use pb::session_reply::Result as Reply;
use pb::session_request::Op;
use pb::tasks_client::TasksClient;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tracing::debug;

use crate::channel::{channel, default_addr};
use crate::error::{ClientError, Result};
use crate::frozen::FrozenTables;
use crate::stream;

/// How long a call that does not wait on other tasks may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Extra time a waiting call (freeze, barrier) allows beyond its own timeout
/// before the client gives up on the vmd.
const WAIT_MARGIN: Duration = Duration::from_secs(5);

/// A task's session with its vmd. Cheap to clone; the session ends when the
/// last clone is dropped (or the process dies).
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

struct Inner {
    requests: mpsc::UnboundedSender<pb::SessionRequest>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    next_id: AtomicU64,
    welcome: pb::Welcome,
    events: broadcast::Sender<pb::GroupEvent>,
    frozen: FrozenTables,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Session {
    /// Connects to the vmd at `addr` and opens a session under `name`.
    pub async fn connect(addr: &str, name: &str) -> Result<Self> {
        let mut client = TasksClient::new(channel(addr).await?);
        let (tx, rx) = mpsc::unbounded_channel();
        let hello = pb::Hello {
            name: name.to_string(),
            pid: std::process::id(),
        };
        tx.send(pb::SessionRequest {
            id: 1,
            op: Some(Op::Hello(hello)),
        })
        .map_err(|_| ClientError::Closed)?;
        let (mut replies, first) = stream::open(
            client.session(UnboundedReceiverStream::new(rx)),
            CALL_TIMEOUT,
        )
        .await?;
        let welcome = match first.result {
            Some(Reply::Welcome(w)) => w,
            Some(Reply::Error(e)) => return Err(ClientError::from_reply(e)),
            other => {
                return Err(ClientError::Protocol(format!(
                    "expected Welcome, got {other:?}"
                )))
            }
        };
        let (events, _) = broadcast::channel(4096);
        let inner = Arc::new_cyclic(|weak: &std::sync::Weak<Inner>| {
            let weak = weak.clone();
            let reader = tokio::spawn(async move {
                loop {
                    let msg = replies.message().await;
                    let Some(inner) = weak.upgrade() else { return };
                    match msg {
                        Ok(Some(reply)) => inner.dispatch(reply),
                        Ok(None) | Err(_) => {
                            debug!("vmd session stream ended");
                            // Dropping the senders wakes every waiter with Closed.
                            if let Ok(mut p) = inner.pending.lock() {
                                p.clear();
                            }
                            return;
                        }
                    }
                }
            });
            Inner {
                requests: tx,
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(2),
                welcome,
                events,
                frozen: FrozenTables::default(),
                reader,
            }
        });
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

    async fn call(&self, op: Op, timeout: Duration) -> Result<Reply> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.inner
            .pending
            .lock()
            .map_err(|_| ClientError::Closed)?
            .insert(id, tx);
        if self
            .inner
            .requests
            .send(pb::SessionRequest { id, op: Some(op) })
            .is_err()
        {
            self.forget(id);
            return Err(ClientError::Closed);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Reply::Error(e))) => Err(ClientError::from_reply(e)),
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(ClientError::Closed),
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

    /// Sends a request whose reply nobody waits for.
    fn post(&self, op: Op) {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .inner
            .requests
            .send(pb::SessionRequest { id, op: Some(op) });
    }

    /// Joins `group`, at the lowest free instance or exactly at `instance`,
    /// publishing `endpoint`. Returns the instance.
    pub async fn join(&self, group: &str, instance: Option<u32>, endpoint: Vec<u8>) -> Result<u32> {
        let op = Op::Join(pb::JoinRequest {
            group: group.to_string(),
            instance,
            endpoint,
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
    pub async fn gettid(&self, group: &str, instance: u32) -> Result<Arc<pb::Member>> {
        if let Some(m) = self.cached_member(group, instance) {
            return Ok(m);
        }
        let op = Op::Gettid(pb::GetTidRequest {
            group: group.to_string(),
            instance,
        });
        match self.call(op, CALL_TIMEOUT).await? {
            Reply::Member(m) => Ok(Arc::new(m)),
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

    pub async fn members(&self, group: &str) -> Result<pb::GroupTable> {
        match self
            .call(
                Op::Members(pb::GroupRef {
                    group: group.to_string(),
                }),
                CALL_TIMEOUT,
            )
            .await?
        {
            Reply::Table(t) => Ok(t),
            other => Err(unexpected("members", other)),
        }
    }

    /// Every group, sorted by name, fetched a page at a time.
    pub async fn list_groups(&self) -> Result<Vec<pb::GroupSummary>> {
        let mut groups = Vec::new();
        let mut page_token = String::new();
        loop {
            let req = pb::ListGroupsRequest {
                page_size: 0,
                page_token,
            };
            match self.call(Op::ListGroups(req), CALL_TIMEOUT).await? {
                Reply::Groups(page) => {
                    groups.extend(page.groups);
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
    ) -> Result<Arc<pb::GroupTable>> {
        self.post(Op::Subscribe(pb::SubscribeRequest {
            groups: vec![group.to_string()],
        }));
        let epoch = self.inner.frozen.epoch();
        let op = Op::Freeze(pb::FreezeRequest {
            group: group.to_string(),
            size,
            timeout_ms: millis(timeout),
        });
        match self.call(op, timeout + WAIT_MARGIN).await? {
            Reply::Table(t) => Ok(self.inner.frozen.insert(t, epoch)),
            other => Err(unexpected("freeze", other)),
        }
    }

    /// Waits until `group` exists and is frozen, and caches its table.
    pub async fn wait_frozen(&self, group: &str, timeout: Duration) -> Result<Arc<pb::GroupTable>> {
        if let Some(t) = self.cached(group) {
            return Ok(t);
        }
        self.post(Op::Subscribe(pb::SubscribeRequest {
            groups: vec![group.to_string()],
        }));
        let epoch = self.inner.frozen.epoch();
        let op = Op::WaitFrozen(pb::WaitFrozenRequest {
            group: group.to_string(),
            timeout_ms: millis(timeout),
        });
        match self.call(op, timeout + WAIT_MARGIN).await? {
            Reply::Table(t) => Ok(self.inner.frozen.insert(t, epoch)),
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
    pub async fn subscribe(&self, groups: &[&str]) -> Result<broadcast::Receiver<pb::GroupEvent>> {
        let rx = self.inner.events.subscribe();
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
    pub fn events(&self) -> broadcast::Receiver<pb::GroupEvent> {
        self.inner.events.subscribe()
    }

    /// The locally cached table of a frozen group, if any.
    pub fn cached(&self, group: &str) -> Option<Arc<pb::GroupTable>> {
        self.inner.frozen.table(group)
    }

    /// The member at `instance` of a cached frozen group, without a call.
    fn cached_member(&self, group: &str, instance: u32) -> Option<Arc<pb::Member>> {
        self.inner.frozen.member(group, instance)
    }
}

impl Inner {
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

//! One client task's session: the long-lived bidirectional stream that carries
//! its group operations and pushed events, and whose end is the task's death.
//!
//! Flow: the first message must be `Hello`; the task then gets its id and its
//! host's name (no secret: the vmd knows the task by its authenticated
//! session, and data connections are signed with each process's own key).
//! Quick operations (join, gettid, …) are answered
//! in order on the session's own tokio task, so a client sees its own
//! operations in the order it sent them. Operations that wait (freeze,
//! barrier, wait_frozen) run on tasks of their own so that they block
//! nothing else. When the inbound stream ends — clean close, crash or
//! kill -9, the kernel closes the socket either way — the task is closed and
//! every membership it still held is removed (reported as `MEMBER_DIED`),
//! and every wait it started is cancelled.
//!
//! Bounds ([`SessionLimits`]): a stream must say Hello within a deadline; a
//! session holds at most so many memberships, pending waits and followed
//! groups, and publishes endpoints of at most so many bytes; past a limit a
//! request is refused with `RESOURCE_EXHAUSTED` naming it. A request the
//! stream cannot decode or that is too large ends the stream with a status
//! saying so.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use isthmus_groups::{escape_for_display, GroupAccess, GroupError, Groups, TaskId, TaskProcess};
use isthmus_proto as pb;
use pb::session_reply::Result as Reply;
use pb::session_request::Op;
use tokio::sync::broadcast;
use tokio::task::{JoinHandle, JoinSet};
use tonic::{Code, Streaming};
use tracing::{debug, info, warn};

use crate::auth::rules::MAX_ALLOWED;
use crate::auth::{rules, users, Identity, Target};
use crate::convert;
use crate::hello_gate::{HelloGate, HelloTicket};
use crate::resume::Resumes;
use crate::status;
use crate::stream::{self, Outgoing};

/// How long a wait lasts when the client gives no timeout (`timeout_ms = 0`).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);
/// The longest wait a client may ask for.
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// What one session may hold. Each bound keeps a single client from taking
/// the vmd's memory (or its other clients' time) for itself.
#[derive(Clone, Copy, Debug)]
pub struct SessionLimits {
    /// How long a new stream may take to say Hello.
    pub hello_deadline: Duration,
    /// Groups one session may be a member of at once.
    pub max_memberships: usize,
    /// Freeze, barrier and wait_frozen calls one session may have pending.
    pub max_pending_waits: usize,
    /// Largest endpoint record a session may publish, in bytes.
    pub max_endpoint_bytes: usize,
    /// Groups whose events one session may follow (besides "all").
    pub max_followed_groups: usize,
}

impl Default for SessionLimits {
    /// Far above what a rank uses (a few groups, one or two waits at a
    /// time, an endpoint of ~100 bytes), small enough that 1000 sessions at
    /// their limits fit in memory.
    fn default() -> Self {
        Self {
            hello_deadline: crate::stream::HELLO_DEADLINE,
            max_memberships: 1024,
            max_pending_waits: 1024,
            max_endpoint_bytes: 8 * 1024,
            max_followed_groups: 4096,
        }
    }
}

/// What every session of one vmd shares.
#[derive(Clone)]
pub struct SessionContext {
    pub groups: Groups,
    /// Streams that have not said Hello yet, bounded per uid and in all.
    pub hellos: HelloGate,
    pub host: String,
    /// This host's address for data connections, told to every task
    /// (`vmd --data-addr`); empty: none.
    pub data_addr: String,
    pub limits: SessionLimits,
    /// Live sessions' tasks, and the previous run's tasks that may resume.
    pub resumes: Resumes,
    /// Becomes `true` when the vmd stops cleanly: every session then ends
    /// telling its client not to resume (its task is closed).
    pub stopping: Arc<tokio::sync::watch::Sender<bool>>,
}

pub type ReplySender = Outgoing<pb::SessionReply>;

/// Who opened a session (from [`crate::auth`]). The owners of groups,
/// for the rules of names and changes, are in the groups' store records.
#[derive(Clone)]
pub struct Caller {
    pub identity: Identity,
}

/// Runs a session to its end. Replies go to `out`.
/// `waiting`: the stream's place among those yet to say Hello, given up
/// once it has.
pub async fn run(
    ctx: SessionContext,
    caller: Caller,
    waiting: HelloTicket,
    mut inbound: Streaming<pb::SessionRequest>,
    out: ReplySender,
) {
    let Some(hello) = stream::hello_within(
        &mut inbound,
        &out,
        "a session must start with Hello",
        ctx.limits.hello_deadline,
        |first| match first {
            pb::SessionRequest {
                id,
                op: Some(Op::Hello(hello)),
            } => Some((id, hello)),
            _ => None,
        },
    )
    .await
    else {
        return;
    };
    drop(waiting);
    // The name is the client's to choose: escaped and cut short, it
    // cannot forge or flood log lines.
    let name = escape_for_display(&hello.1.name);
    let task = if hello.1.resume_task.is_empty() {
        let task = TaskId(uuid::Uuid::new_v4());
        // The process behind the task, as the kernel tells it: what a
        // resume after a restart of this vmd must match.
        let process = caller
            .identity
            .pid
            .zip(caller.identity.uid)
            .map(|(pid, uid)| TaskProcess { pid, uid });
        if let Err(e) = ctx.groups.open_task_as(task, &ctx.host, process).await {
            let _ = out.send(Err(status::group(&e))).await;
            return;
        }
        ctx.resumes.opened(task);
        info!(%task, %name, pid = hello.1.pid, caller = %caller.identity, "session opened");
        task
    } else {
        match ctx
            .resumes
            .resume(
                &ctx.groups,
                &ctx.host,
                &caller.identity,
                &hello.1.resume_task,
            )
            .await
        {
            Ok(task) => {
                info!(%task, %name, pid = hello.1.pid, caller = %caller.identity, "session resumed after a vmd restart");
                task
            }
            Err(status) => {
                info!(%name, pid = hello.1.pid, caller = %caller.identity, status = %status.message(), "resume refused");
                let _ = out.send(Err(status)).await;
                return;
            }
        }
    };
    let welcome = Reply::Welcome(pb::Welcome {
        task: task.to_string(),
        host: ctx.host.clone(),
        data_addr: ctx.data_addr.clone(),
    });
    if out.send(Ok(reply(hello.0, welcome))).await.is_err() {
        close(&ctx, task).await;
        return;
    }

    let mut session = Session {
        ctx: ctx.clone(),
        caller,
        task,
        out,
        subscription: None,
        waits: JoinSet::new(),
        memberships: HashSet::new(),
    };
    let mut stopping = ctx.stopping.subscribe();
    loop {
        let next = tokio::select! {
            msg = inbound.message() => msg,
            // Reaps finished waits; an empty set disables this branch.
            Some(_) = session.waits.join_next() => continue,
            () = until_stopping(&mut stopping) => {
                debug!(%task, "vmd stopping: session over");
                let _ = session.out.send(Err(session_over())).await;
                break;
            }
        };
        match next {
            Ok(Some(req)) => session.handle(req).await,
            Ok(None) => {
                debug!(%task, "session closed by client");
                break;
            }
            Err(status) => {
                // Undecodable or oversized: say so before the stream ends.
                let status = stream::broken(status);
                debug!(%task, %status, "session stream broke");
                let _ = session.out.send(Err(status)).await;
                break;
            }
        }
    }
    if let Some(sub) = session.subscription.take() {
        sub.forwarder.abort();
    }
    // Waits end with the session that started them: nobody is left to
    // hear their outcome, and an orphaned freeze would still act.
    session.waits.shutdown().await;
    close(&ctx, task).await;
}

/// Completes when the vmd starts to stop (never, if nobody can stop it).
async fn until_stopping(stopping: &mut tokio::sync::watch::Receiver<bool>) {
    if stopping.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The status a session ends with when its vmd stops cleanly: its task is
/// closed, so the client must not try to resume it.
fn session_over() -> tonic::Status {
    let mut status = tonic::Status::unavailable("the vmd is stopping: this session is over");
    status.metadata_mut().insert(
        pb::SESSION_END_KEY,
        tonic::metadata::MetadataValue::from_static(pb::SESSION_END_FINAL),
    );
    status
}

async fn close(ctx: &SessionContext, task: TaskId) {
    // A task that ends while still in groups did not leave them: to the other
    // members that is a death, whatever the reason the stream ended.
    match ctx.groups.close_task(task, true).await {
        Ok(()) => info!(%task, "session ended"),
        Err(e) => warn!(%task, error = %e, "closing session"),
    }
    ctx.resumes.ended(task);
}

fn reply(id: u64, result: Reply) -> pb::SessionReply {
    pb::SessionReply {
        id,
        result: Some(result),
    }
}

fn error_reply(id: u64, err: &GroupError) -> pb::SessionReply {
    reply(id, Reply::Error(status::group_reply(err)))
}

fn invalid(id: u64, message: String) -> pb::SessionReply {
    reply(
        id,
        Reply::Error(pb::Error {
            code: Code::InvalidArgument as i32,
            message,
        }),
    )
}

/// Turns a client's `timeout_ms` into a wait, bounded by [`MAX_WAIT`].
pub fn wait_of(timeout_ms: u32) -> Duration {
    if timeout_ms == 0 {
        DEFAULT_WAIT
    } else {
        Duration::from_millis(u64::from(timeout_ms)).min(MAX_WAIT)
    }
}

/// Groups whose events this session forwards, and the task forwarding them.
struct Subscription {
    /// Empty: all groups.
    filter: Arc<Mutex<Vec<String>>>,
    forwarder: JoinHandle<()>,
}

struct Session {
    ctx: SessionContext,
    caller: Caller,
    task: TaskId,
    out: ReplySender,
    subscription: Option<Subscription>,
    /// Pending freeze, barrier and wait_frozen calls.
    waits: JoinSet<()>,
    /// Groups this task joined and has not left.
    memberships: HashSet<String>,
}

/// The refusal of a request past one of the session's limits.
fn exhausted(id: u64, limit: &str, value: usize, what: String) -> pb::SessionReply {
    reply(
        id,
        Reply::Error(pb::Error {
            code: Code::ResourceExhausted as i32,
            message: format!("{what}: per-session limit {limit} = {value} reached"),
        }),
    )
}

impl Session {
    /// The uids a join allows in (`allow`: user names or uids), bounded,
    /// or the refusal naming what is wrong.
    fn allowed(
        &self,
        target: &Target,
        allow: &[String],
    ) -> Result<std::collections::BTreeSet<u32>, tonic::Status> {
        if allow.len() > MAX_ALLOWED {
            return Err(tonic::Status::resource_exhausted(format!(
                "join {:?}: {} users allowed, at most {MAX_ALLOWED}",
                target.group,
                allow.len()
            )));
        }
        let mut uids = std::collections::BTreeSet::new();
        for user in allow {
            let uid = users::parse_user(user).ok_or_else(|| {
                tonic::Status::invalid_argument(format!(
                    "join {:?}: allow names {:?}, which is no user on this host",
                    target.group,
                    escape_for_display(user)
                ))
            })?;
            uids.insert(uid);
        }
        Ok(uids)
    }

    /// The group `name` reaches for this caller (the rule of names: its
    /// own groups by plain name, another user's by `user/name` if allowed,
    /// as the group's store record says who owns it), or the refusal
    /// naming the owner found.
    async fn reach(&self, name: &str) -> Result<String, Refused> {
        let target = Target::parse(name);
        let access = self
            .ctx
            .groups
            .access(&target.group)
            .await
            .map_err(Refused::Group)?;
        rules::admit_reach(&target, &self.caller.identity, access.as_ref())
            .map_err(Refused::Status)?;
        Ok(target.group)
    }

    async fn send(&self, r: pb::SessionReply) {
        // The receiver is gone only when the client is: the inbound side will
        // notice and end the session.
        let _ = self.out.send(Ok(r)).await;
    }

    async fn handle(&mut self, req: pb::SessionRequest) {
        let id = req.id;
        let groups = &self.ctx.groups;
        let task = self.task;
        let Some(op) = req.op else {
            self.send(invalid(id, format!("request {id} carries no operation")))
                .await;
            return;
        };
        let result = match op {
            Op::Hello(_) => Err(reply(
                id,
                Reply::Error(pb::Error {
                    code: Code::FailedPrecondition as i32,
                    message: format!("session already open as task {task}"),
                }),
            )),
            Op::Join(j) => {
                let limits = &self.ctx.limits;
                if j.endpoint.len() > limits.max_endpoint_bytes {
                    Err(exhausted(
                        id,
                        "max-endpoint-bytes",
                        limits.max_endpoint_bytes,
                        format!("endpoint of {} bytes refused", j.endpoint.len()),
                    ))
                } else if self.memberships.len() >= limits.max_memberships
                    && !self.memberships.contains(&j.group)
                {
                    Err(exhausted(
                        id,
                        "max-memberships",
                        limits.max_memberships,
                        format!("join refused: member of {} groups", self.memberships.len()),
                    ))
                } else {
                    let target = Target::parse(&j.group);
                    match self.allowed(&target, &j.allow) {
                        Err(refusal) => Err(refused(id, &refusal)),
                        Ok(allow) => {
                            let identity = &self.caller.identity;
                            // The group this join creates is the caller's,
                            // in the store: every vmd sees its owner.
                            let joiner = identity.uid.map(|uid| GroupAccess::new(uid, allow));
                            let joined = groups
                                .join_as(
                                    &target.group,
                                    task,
                                    j.instance,
                                    j.endpoint,
                                    joiner,
                                    |found| {
                                        rules::admit_join(&target, identity, found)
                                            .map_err(Refused::Status)
                                    },
                                )
                                .await;
                            if joined.is_ok() {
                                self.memberships.insert(target.group);
                            }
                            joined.map(Reply::Instance).map_err(|r| r.reply(id))
                        }
                    }
                }
            }
            Op::Leave(l) => {
                // A task leaves only its own memberships: no name of
                // another's group makes anyone else leave.
                let group = Target::parse(&l.group).group;
                let left = groups.leave(&group, task).await;
                if left.is_ok() {
                    self.memberships.remove(&group);
                }
                left.map(|()| Reply::Done(pb::Done {}))
                    .map_err(|e| error_reply(id, &e))
            }
            Op::Gettid(g) => match self.reach(&g.group).await {
                Ok(group) => groups
                    .gettid(&group, g.instance)
                    .await
                    .map(|m| Reply::Member(convert::member(&m)))
                    .map_err(|e| error_reply(id, &e)),
                Err(refusal) => Err(refusal.reply(id)),
            },
            Op::Getinst(g) => match (parse_task(&g.task, task), self.reach(&g.group).await) {
                (Ok(who), Ok(group)) => groups
                    .getinst(&group, who)
                    .await
                    .map(Reply::Instance)
                    .map_err(|e| error_reply(id, &e)),
                (Err(msg), _) => Err(invalid(id, msg)),
                (_, Err(refusal)) => Err(refusal.reply(id)),
            },
            Op::Gsize(g) => match self.reach(&g.group).await {
                Ok(group) => groups
                    .gsize(&group)
                    .await
                    .map(Reply::Size)
                    .map_err(|e| error_reply(id, &e)),
                Err(refusal) => Err(refusal.reply(id)),
            },
            Op::Members(g) => match self.reach(&g.group).await {
                Ok(group) => groups
                    .table(&group)
                    .await
                    .map(|t| Reply::Table(convert::table(&t)))
                    .map_err(|e| error_reply(id, &e)),
                Err(refusal) => Err(refusal.reply(id)),
            },
            Op::ListGroups(req) => convert::group_page(groups, &req)
                .await
                .map(Reply::Groups)
                .map_err(|e| error_reply(id, &e)),
            Op::Subscribe(s) => self
                .subscribe(s.groups.iter().map(|g| Target::parse(g).group).collect())
                .map(|()| Reply::Done(pb::Done {}))
                .map_err(|refusal| refusal(id)),
            Op::Freeze(f) => {
                let group = Target::parse(&f.group).group;
                // A session resumed after a vmd restart holds memberships
                // this session did not record: the store knows them.
                let member = self.memberships.contains(&group)
                    || (!self.caller.identity.is_operator()
                        && groups.getinst(&group, task).await.is_ok());
                let access = match groups.access(&group).await {
                    Ok(access) => access,
                    Err(e) => {
                        self.send(error_reply(id, &e)).await;
                        return;
                    }
                };
                if let Err(refusal) =
                    rules::admit_change(&group, &self.caller.identity, member, access.as_ref())
                {
                    self.send(refused(id, &refusal)).await;
                    return;
                }
                let groups = groups.clone();
                self.reply_later(id, async move {
                    let t = groups.freeze(&group, f.size, wait_of(f.timeout_ms)).await?;
                    Ok(Reply::Table(convert::table(&t)))
                });
                return;
            }
            Op::Barrier(b) => {
                // Only members enter a barrier (the group service checks).
                let group = Target::parse(&b.group).group;
                let groups = groups.clone();
                self.reply_later(id, async move {
                    groups
                        .barrier(&group, task, b.count, wait_of(b.timeout_ms))
                        .await?;
                    Ok(Reply::Done(pb::Done {}))
                });
                return;
            }
            Op::WaitFrozen(w) => {
                let target = Target::parse(&w.group);
                if let Err(refusal) = self.reach(&w.group).await {
                    self.send(refusal.reply(id)).await;
                    return;
                }
                let identity = self.caller.identity.clone();
                let groups = groups.clone();
                self.reply_later_or_refuse(id, async move {
                    // A group that broke before this task lived is an
                    // earlier run's wreck: wait for the re-run instead.
                    let t = groups
                        .wait_frozen_as(task, &target.group, wait_of(w.timeout_ms))
                        .await
                        .map_err(Refused::Group)?;
                    // Another user may have made the group meanwhile: it
                    // never becomes this caller's peer by its name alone.
                    let access = groups.access(&target.group).await?;
                    rules::admit_reach(&target, &identity, access.as_ref())
                        .map_err(Refused::Status)?;
                    Ok(Reply::Table(convert::table(&t)))
                });
                return;
            }
        };
        match result {
            Ok(r) => self.send(reply(id, r)).await,
            Err(r) => self.send(r).await,
        }
    }

    /// Runs an operation that waits (freeze, barrier, wait_frozen) on a task
    /// of its own, so it blocks nothing else, and replies when it ends. The
    /// task belongs to the session: it is cancelled when the session ends.
    fn reply_later(
        &mut self,
        id: u64,
        op: impl std::future::Future<Output = Result<Reply, GroupError>> + Send + 'static,
    ) {
        self.reply_later_or_refuse(id, async move { op.await.map_err(Refused::Group) });
    }

    /// [`Session::reply_later`] for an operation that may also end in a
    /// refusal of the ownership rules.
    fn reply_later_or_refuse(
        &mut self,
        id: u64,
        op: impl std::future::Future<Output = Result<Reply, Refused>> + Send + 'static,
    ) {
        while self.waits.try_join_next().is_some() {}
        let max = self.ctx.limits.max_pending_waits;
        if self.waits.len() >= max {
            let refusal = exhausted(
                id,
                "max-pending-waits",
                max,
                format!("wait refused: {} waits pending", self.waits.len()),
            );
            let out = self.out.clone();
            // Not inline: a full reply queue must not stall the session.
            tokio::spawn(async move {
                let _ = out.send(Ok(refusal)).await;
            });
            return;
        }
        let out = self.out.clone();
        self.waits.spawn(async move {
            let r = match op.await {
                Ok(result) => reply(id, result),
                Err(refusal) => refusal.reply(id),
            };
            let _ = out.send(Ok(r)).await;
        });
    }

    /// Adds `groups` to the groups whose events this session receives (none
    /// named: all groups), starting the forwarder on first use. Refused
    /// (the error reply, given the request id) past the session's limit.
    fn subscribe(
        &mut self,
        groups: Vec<String>,
    ) -> Result<(), impl FnOnce(u64) -> pb::SessionReply> {
        let max = self.ctx.limits.max_followed_groups;
        let refuse = |followed: usize| {
            move |id| {
                exhausted(
                    id,
                    "max-followed-groups",
                    max,
                    format!("subscribe refused: following {followed} groups"),
                )
            }
        };
        if let Some(sub) = &self.subscription {
            if let Ok(mut filter) = sub.filter.lock() {
                if groups.is_empty() || filter.is_empty() {
                    filter.clear();
                } else {
                    for g in groups {
                        if !filter.contains(&g) {
                            if filter.len() >= max {
                                return Err(refuse(filter.len()));
                            }
                            filter.push(g);
                        }
                    }
                }
            }
            return Ok(());
        }
        if groups.len() > max {
            return Err(refuse(0));
        }
        let filter = Arc::new(Mutex::new(groups));
        let mut events = self.ctx.groups.subscribe();
        let out = self.out.clone();
        let task = self.task;
        let shared = filter.clone();
        let forwarder = tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(ev) => {
                        let wanted = shared
                            .lock()
                            .map(|f| convert::event_matches(&f, &ev))
                            .unwrap_or(false);
                        if wanted
                            && out
                                .send(Ok(reply(0, Reply::Event(convert::group_event(&ev)))))
                                .await
                                .is_err()
                        {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        warn!(%task, missed = n, "session subscriber lagged; events lost");
                        // Tell the client, so that it drops what it cached
                        // on the strength of events it will never see.
                        let lost = pb::Event {
                            seq: 0,
                            kind: Some(pb::event::Kind::Group(pb::GroupEvent::default())),
                        };
                        if out.send(Ok(reply(0, Reply::Event(lost)))).await.is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        self.subscription = Some(Subscription { filter, forwarder });
        Ok(())
    }
}

/// How a waiting operation failed: the group service's error, or a
/// refusal of the ownership rules.
enum Refused {
    Group(GroupError),
    Status(tonic::Status),
}

impl From<GroupError> for Refused {
    fn from(e: GroupError) -> Self {
        Refused::Group(e)
    }
}

impl Refused {
    /// The reply to request `id` saying why.
    fn reply(&self, id: u64) -> pb::SessionReply {
        match self {
            Refused::Group(e) => error_reply(id, e),
            Refused::Status(s) => refused(id, s),
        }
    }
}

/// A refusal (ownership rules, bad allow list) as the reply to request `id`.
fn refused(id: u64, status: &tonic::Status) -> pb::SessionReply {
    reply(
        id,
        Reply::Error(pb::Error {
            code: status.code() as i32,
            message: status.message().to_string(),
        }),
    )
}

fn parse_task(text: &str, caller: TaskId) -> Result<TaskId, String> {
    if text.is_empty() {
        return Ok(caller);
    }
    text.parse::<TaskId>()
        .map_err(|_| format!("task id {text:?} is not a uuid"))
}

//! A process's place in the virtual machine: its vmd session and its data
//! engine, and PVMPI's three calls on top of them — [`Bridge::register`],
//! [`Bridge::leave`] and [`Bridge::intercomm_create`].
//!
//! Control path: every rank of a job is a task with its own session. To
//! register, each rank joins the group with instance = its rank, publishing
//! its engine's [`Endpoint`]; the ranks agree over native MPI on the outcome,
//! so a name held by another job fails on every rank; then the group is
//! frozen at the communicator's size and its table cached in each rank. To
//! form an intercommunicator, each rank waits until the remote group is
//! frozen, reads the remote endpoints from its table and derives the
//! context id from both groups' identities and a per-pair count — both sides
//! compute the same id without talking, as long as they create their
//! intercommunicators in the same order (MPI's rule for collectives). Like
//! `MPI_Intercomm_create`, the call is collective over both groups: once
//! all local ranks have the remote table (a vmd barrier of the local
//! group), the local leader sends "ready" to every remote rank, and a rank
//! returns only when it has the remote leader's "ready". So no job can
//! finish and leave while a rank of the other still needs its table.
//! Everything but that last check runs on the session's runtime, without
//! the program: fetching the table, admitting the remote processes' data
//! connections (at once, so that their "ready" never waits for our
//! program), the barrier, and posting the "ready" send and receive as
//! requests. [`PendingInterComm::test`] only looks at those requests.
//!
//! Failure: the session follows the remote groups' events; a remote member's
//! death is passed to the engine, which fails every operation that waits on
//! that peer. Only `MEMBER_DIED` does: the session's stream ending (its vmd
//! killed or restarted) fails no peer, since the data path does not go
//! through the vmd; the session resumes on its own, and calls made
//! meanwhile (a leave at `MPI_Finalize`) wait for it within their deadline.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use isthmus_client::{ClientError, Console, ErrorKind, Session};
use isthmus_types::group::{GroupEventKind, GroupTable, SessionEvent};
use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use tokio::runtime::Runtime;
use tracing::{debug, warn};

use crate::endpoint::Endpoint;
use crate::engine::{Engine, EngineConfig};
use crate::error::{BridgeError, Result};
use crate::hash::{fnv1a64, FNV_OFFSET};
use crate::intercomm::InterComm;
use crate::matching::{Source, Tag};
use crate::request::{RecvRequest, SendRequest};

/// How long `register` waits for all ranks of the job to have joined.
pub const REGISTER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `intercomm_create` waits for the remote group by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(300);

/// A process's connection to the virtual machine. Create one per process,
/// after MPI is initialised; dropping it ends the session (any group still
/// held is then reported as a death to the other members).
pub struct Bridge {
    engine: Arc<Engine>,
    session: Session,
    /// Remote members we hold intercommunicators with: (group, instance) → process.
    peers: Arc<Mutex<HashMap<(String, u32), uuid::Uuid>>>,
    /// The vmd's address, for the resource manager's calls (`machine`).
    pub(crate) vmd_addr: String,
    /// A console connection to it, opened at the first such call.
    pub(crate) console: Mutex<Option<Console>>,
    // Declared last: dropped after the session and its tasks.
    pub(crate) rt: Runtime,
}

/// A communicator registered under a group name (PVMPI's handle).
pub struct Handle {
    group: String,
    generation: u64,
    rank: u32,
    size: u32,
    comm: SimpleCommunicator,
    /// How many intercommunicators this handle formed with each remote group.
    formed: Mutex<HashMap<String, u64>>,
    /// Ends when the last creation started on this handle has passed its
    /// local barrier.
    last_creation: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

impl Handle {
    pub fn group(&self) -> &str {
        &self.group
    }
    pub fn rank(&self) -> u32 {
        self.rank
    }
    pub fn size(&self) -> u32 {
        self.size
    }
}

impl Bridge {
    /// Connects to the vmd named by `ISTHMUS_VMD` (or the default loopback
    /// address) and starts this process's data engine.
    pub fn connect() -> Result<Self> {
        Self::connect_to(&isthmus_client::default_addr())
    }

    /// Connects to the vmd at `addr` (`host:port`).
    pub fn connect_to(addr: &str) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("isthmus-vmd-session")
            .enable_all()
            .build()
            .map_err(|e| BridgeError::io("starting the vmd session runtime", e))?;
        let name = std::env::args().next().unwrap_or_else(|| "bridge".into());
        let session = rt
            .block_on(Session::connect(addr, &name))
            .map_err(|e| vm_error("connect", e))?;
        // Each data connection is signed with this engine's own key (see
        // `handshake`); the vmd hands out no shared secret.
        // The data path listens where ISTHMUS_DATA_ADDR says, or where the
        // route to the vmd leaves this host (see `address::default_listen`).
        let engine = Engine::start(EngineConfig::from_env(
            session.host(),
            addr,
            session.data_addr(),
        )?)?;
        let peers: Arc<Mutex<HashMap<(String, u32), uuid::Uuid>>> = Arc::default();
        rt.spawn(forward_deaths(
            session.events(),
            Arc::downgrade(&engine),
            peers.clone(),
        ));
        Ok(Bridge {
            engine,
            session,
            peers,
            vmd_addr: addr.to_string(),
            console: Mutex::new(None),
            rt,
        })
    }

    /// This process's task id in the virtual machine.
    pub fn task(&self) -> &str {
        self.session.task()
    }

    /// The data engine (for tests and tools).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Registers `comm` under `group`: collective over `comm`. Every rank
    /// joins with instance = its rank; on return the group is complete and
    /// frozen. A name held by another job is an error on every rank. The
    /// group belongs to this process's uid: other users reach it (by
    /// `owner/group`) only if named in `ISTHMUS_ALLOW` (names or uids,
    /// comma-separated).
    pub fn register<C: Communicator>(&self, group: &str, comm: &C) -> Result<Handle> {
        let allow: Vec<String> = std::env::var(isthmus_types::env::ALLOW)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(String::from)
            .collect();
        self.register_allowing(group, comm, &allow)
    }

    /// Like [`Bridge::register`], letting the users in `allow` (names or
    /// decimal uids) form intercommunicators with the group by its
    /// qualified name `owner/group`.
    pub fn register_allowing<C: Communicator>(
        &self,
        group: &str,
        comm: &C,
        allow: &[String],
    ) -> Result<Handle> {
        let rank = u32::try_from(comm.rank())
            .map_err(|_| BridgeError::InvalidArgument("negative rank".into()))?;
        let size = u32::try_from(comm.size())
            .map_err(|_| BridgeError::InvalidArgument("negative size".into()))?;
        let endpoint = self.engine.endpoint().encode();
        let joined =
            self.rt.block_on(
                self.session
                    .join_allowing(group, Some(rank), endpoint, allow),
            );
        if !all_ranks_agree(comm, joined.is_ok()) {
            if joined.is_ok() {
                self.leave_quietly(group);
            }
            // Every rank's leave is done before any rank returns: a retry
            // never meets this attempt's members.
            comm.barrier();
            return Err(match joined {
                Ok(_) => BridgeError::NameTaken {
                    group: group.into(),
                    reason: "another rank of this job could not join".into(),
                },
                Err(e) => BridgeError::NameTaken {
                    group: group.into(),
                    reason: e.to_string(),
                },
            });
        }
        let frozen = self
            .rt
            .block_on(self.session.freeze(group, size, REGISTER_TIMEOUT));
        if !all_ranks_agree(comm, frozen.is_ok()) {
            self.leave_quietly(group);
            comm.barrier();
            return Err(match frozen {
                Ok(_) => BridgeError::NameTaken {
                    group: group.into(),
                    reason: "another rank of this job could not freeze the group".into(),
                },
                Err(e) => vm_error("register", e),
            });
        }
        let table = frozen.map_err(|e| vm_error("register", e))?;
        debug!(
            group,
            rank,
            size,
            generation = table.generation,
            "registered"
        );
        Ok(Handle {
            group: group.into(),
            generation: table.generation,
            rank,
            size,
            comm: comm.duplicate(),
            formed: Mutex::new(HashMap::new()),
            last_creation: Mutex::new(None),
        })
    }

    fn leave_quietly(&self, group: &str) {
        if let Err(e) = self.rt.block_on(self.session.leave(group)) {
            debug!(group, error = %e, "leaving after a failed register");
        }
    }

    /// Publishes `port` under `service` in the virtual machine's namespace
    /// (`MPI_Publish_name`): a group `isthmus.name:<service>` with one
    /// member, this process, whose record is the port name. It lives until
    /// [`Bridge::unpublish_name`] or this process's end; a name already
    /// published is `NameTaken`.
    pub fn publish_name(&self, service: &str, port: &str) -> Result<()> {
        let group = name_group(service);
        self.rt
            .block_on(self.session.join(&group, Some(0), port.as_bytes().to_vec()))
            .map(drop)
            .map_err(|e| BridgeError::NameTaken {
                group,
                reason: e.to_string(),
            })
    }

    /// Withdraws a name this process published.
    pub fn unpublish_name(&self, service: &str) -> Result<()> {
        self.rt
            .block_on(self.session.leave(&name_group(service)))
            .map_err(|e| vm_error("unpublish_name", e))
    }

    /// The port published under `service` (`MPI_Lookup_name`), if any.
    pub fn lookup_name(&self, service: &str) -> Result<Option<String>> {
        let table = match self.rt.block_on(self.session.members(&name_group(service))) {
            Ok(t) => t,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(vm_error("lookup_name", e)),
        };
        Ok(table
            .members
            .first()
            .and_then(|m| String::from_utf8(m.endpoint.clone()).ok()))
    }

    /// Leaves the group: collective over the registered communicator. The
    /// last rank to leave destroys the group. When this returns on any rank,
    /// every rank has left, so registering the same name right after works.
    pub fn leave(&self, handle: Handle) -> Result<()> {
        // No rank leaves while another still uses the group...
        handle.comm.barrier();
        let left = self.rt.block_on(self.session.leave(&handle.group));
        // ...and none returns before all have left.
        handle.comm.barrier();
        left.map_err(|e| vm_error("leave", e))
    }

    /// Forms an intercommunicator with the separately started job registered
    /// as `remote`: collective over the registered communicator; waits (up to
    /// [`DEFAULT_CONNECT_TIMEOUT`]) until the remote group is complete.
    pub fn intercomm_create(&self, handle: &Handle, remote: &str) -> Result<InterComm> {
        self.intercomm_create_timeout(handle, remote, DEFAULT_CONNECT_TIMEOUT)
    }

    /// Like [`Bridge::intercomm_create`], with a deadline. Fails before the
    /// deadline if the remote group was registered and lost a member.
    pub fn intercomm_create_timeout(
        &self,
        handle: &Handle,
        remote: &str,
        timeout: Duration,
    ) -> Result<InterComm> {
        self.intercomm_start(handle, remote, timeout)?.wait()
    }

    /// Starts forming an intercommunicator and returns at once; the program
    /// computes and tests [`PendingInterComm::test`] or waits for it.
    pub fn intercomm_create_nonblocking(
        &self,
        handle: &Handle,
        remote: &str,
        timeout: Duration,
    ) -> Result<PendingInterComm<'_>> {
        self.intercomm_start(handle, remote, timeout)
    }

    fn intercomm_start(
        &self,
        handle: &Handle,
        remote: &str,
        timeout: Duration,
    ) -> Result<PendingInterComm<'_>> {
        if remote == handle.group {
            return Err(BridgeError::InvalidArgument(format!(
                "cannot form an intercommunicator of group {remote:?} with itself"
            )));
        }
        // Counted at the call, so the order of calls fixes the context ids
        // even when several creations are pending at once.
        let ordinal = {
            let mut formed = handle
                .formed
                .lock()
                .map_err(|_| BridgeError::Protocol("handle lock poisoned".into()))?;
            let n = formed.entry(remote.to_string()).or_insert(0);
            *n += 1;
            *n
        };
        // Creations of one handle meet in the local barrier in call order
        // (a barrier episode counts entries, not creations).
        let (done, now_done) = tokio::sync::oneshot::channel::<()>();
        let previous = handle
            .last_creation
            .lock()
            .map_err(|_| BridgeError::Protocol("handle lock poisoned".into()))?
            .replace(now_done);
        let (tx, rx) = std::sync::mpsc::channel();
        let started = Instant::now();
        let job = Creation {
            session: self.session.clone(),
            engine: Arc::downgrade(&self.engine),
            peers: Arc::clone(&self.peers),
            local: (
                handle.group.clone(),
                handle.generation,
                handle.rank,
                handle.size,
            ),
            remote: remote.to_string(),
            ordinal,
            timeout,
            started,
        };
        self.rt.spawn(async move {
            let outcome = job.run(previous, done).await;
            let _ = tx.send(outcome);
        });
        Ok(PendingInterComm {
            _bridge: PhantomData,
            remote: remote.to_string(),
            timeout,
            started,
            rx,
            formed: None,
        })
    }
}

/// Where forming an intercommunicator failed.
enum Stage {
    /// The remote group never froze, or broke.
    Remote(ClientError),
    /// The other ranks of this job did not all get the remote table.
    Local(ClientError),
    /// The table was unusable, or the engine refused the intercommunicator.
    Form(BridgeError),
}

/// Everything an intercommunicator creation does without the application:
/// it runs on the session's runtime (its blocking part on the runtime's
/// blocking pool), so that [`PendingInterComm::test`] only looks at results.
struct Creation {
    session: Session,
    engine: std::sync::Weak<Engine>,
    peers: Arc<Mutex<HashMap<(String, u32), uuid::Uuid>>>,
    /// (group, generation, rank, size) of the local handle.
    local: (String, u64, u32, u32),
    remote: String,
    ordinal: u64,
    timeout: Duration,
    started: Instant,
}

impl Creation {
    /// Wait for the remote table, admit its members' data connections at
    /// once, pass the local barrier (after the creations started before
    /// this one on the same handle), then form the intercommunicator and
    /// post its "ready" exchange.
    async fn run(
        self,
        previous: Option<tokio::sync::oneshot::Receiver<()>>,
        done: tokio::sync::oneshot::Sender<()>,
    ) -> std::result::Result<Forming, Stage> {
        let fetched = self.session.wait_frozen(&self.remote, self.timeout).await;
        // The remote ranks may connect to us (to say "ready", or to send)
        // as soon as they have our table. Admitting them here, when the
        // runtime has the table, rather than when the application next
        // calls in, means their grant never waits for our program: three
        // jobs polling each other's creations cannot wait on one another.
        let endpoints = fetched
            .as_ref()
            .ok()
            .map(|table| endpoints_of(&self.remote, table));
        if let (Some(Ok(eps)), Some(engine)) = (&endpoints, self.engine.upgrade()) {
            if let Err(e) = engine.shared.admission.learn(eps) {
                debug!(remote = %self.remote, error = %e, "remote table not admitted");
            }
        }
        if let Some(previous) = previous {
            // An error there means that creation ended; ours goes on.
            let _ = previous.await;
        }
        let table = match fetched {
            Ok(table) => {
                let left = self.timeout.saturating_sub(self.started.elapsed());
                let passed = self.session.barrier(&self.local.0, None, left).await;
                drop(done);
                passed.map_err(Stage::Local)?;
                table
            }
            Err(e) => return Err(Stage::Remote(e)),
        };
        let endpoints = match endpoints {
            Some(Ok(eps)) => eps,
            Some(Err(e)) => return Err(Stage::Form(e)),
            None => return Err(Stage::Form(BridgeError::Protocol("no remote table".into()))),
        };
        // The group's own name: `remote` may be qualified (`owner/group`),
        // the other job knows its group by the plain name, and deaths are
        // reported under it.
        let canonical = if table.name.is_empty() {
            self.remote.clone()
        } else {
            table.name.clone()
        };
        if let Ok(mut peers) = self.peers.lock() {
            for (i, e) in endpoints.iter().enumerate() {
                peers.insert((canonical.clone(), i as u32), e.process);
            }
        }
        // A death that came before the peers were recorded above was not
        // passed to the engine. The session drops a cached table on any such
        // event (and caches none fetched across one): if ours is not the
        // table cached now, ask the vmd. Only a broken table names deaths: a
        // member missing from an intact one (or a group gone) left in order,
        // and its connection's orderly end says so to the engine.
        let mut gone = Vec::new();
        // A table fetched by a qualified name (`owner/group`) is not cached
        // under that name.
        let current = if canonical == self.remote {
            self.session.cached(&self.remote).map(|t| t.generation)
        } else {
            None
        };
        if current != Some(table.generation) {
            match self.session.members(&self.remote).await {
                Ok(now) if now.generation == table.generation && now.broken => {
                    for (i, e) in endpoints.iter().enumerate() {
                        if !now.members.iter().any(|m| m.instance as usize == i) {
                            gone.push((e.process, i));
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    debug!(remote = %self.remote, error = %e, "remote group no longer listed")
                }
            }
        }
        let Some(engine) = self.engine.upgrade() else {
            return Err(Stage::Form(BridgeError::EngineShutDown));
        };
        let (group, generation, rank, size) = self.local;
        let context = context_id(
            (&group, generation),
            (&canonical, table.generation),
            self.ordinal,
        );
        debug!(local = %group, remote = %self.remote, ordinal = self.ordinal, context = format_args!("{context:#x}"), "intercomm formed");
        let remote = self.remote;
        // Forming may open data connections (a handshake each, bounded by
        // the handshake deadline): the blocking pool, not the runtime's one
        // worker, and never the application's thread.
        let formed = tokio::task::spawn_blocking(move || {
            for (process, i) in gone {
                engine.peer_failed(process, &format!("member {i} of group {remote:?} is gone"));
            }
            Forming::post(&engine, context, rank, size, endpoints)
        })
        .await;
        match formed {
            Ok(r) => r.map_err(Stage::Form),
            Err(e) => Err(Stage::Form(BridgeError::Protocol(format!(
                "forming the intercommunicator failed: {e}"
            )))),
        }
    }
}

/// The endpoints of a frozen remote table, by instance.
fn endpoints_of(remote: &str, table: &GroupTable) -> Result<Vec<Endpoint>> {
    let mut endpoints = Vec::with_capacity(table.members.len());
    for (i, m) in table.members.iter().enumerate() {
        if m.instance as usize != i {
            return Err(BridgeError::Protocol(format!(
                "remote group {remote:?} has no member at instance {i}: it was not registered by the bridge"
            )));
        }
        endpoints.push(Endpoint::decode(&m.endpoint)?);
    }
    Ok(endpoints)
}

/// An intercommunicator whose ranks have the remote table, exchanging
/// "ready" with the remote leader.
///
/// Why: MPI's `MPI_Intercomm_create` is collective over both groups. Without
/// this, one job could form its side, finish and leave before a slow rank
/// of the other job had read its table — which it then finds gone.
///
/// Both halves of the exchange are requests, posted when the intercomm is
/// formed: the local leader's non-blocking sends to every remote rank, and
/// each rank's receive of the remote leader's message. The engine's
/// threads complete them; nothing waits for the application.
struct Forming {
    intercomm: InterComm,
    /// A context of its own for the one "ready" message from each leader.
    /// Kept until the exchange is over (its requests refer to it).
    _ready: InterComm,
    /// The remote leader's "ready", until it came.
    heard: Option<RecvRequest>,
    /// Our "ready" to each remote rank (leader only), until sent.
    sent: Vec<SendRequest>,
}

/// Tag of the "ready" message on the ready context.
const READY_TAG: i32 = 0;

/// How long the leader with the larger process id waits for the other
/// leader's "ready" before it sends its own (see `Forming::post`); both
/// post theirs once both have the remote table, so it is usually there
/// within milliseconds.
const LEADER_ANSWER_WAIT: Duration = Duration::from_secs(5);

/// Wait until `r` completed or `limit` passed, sleeping between looks
/// (1 ms, growing to 20 ms): it runs on the blocking pool, not the program.
fn wait_a_while(r: &RecvRequest, limit: Duration) {
    let until = Instant::now() + limit;
    let mut nap = Duration::from_millis(1);
    while !r.test() && Instant::now() < until {
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(20));
    }
}

impl Forming {
    /// Register both contexts and post the "ready" exchange (the local
    /// leader, whose ranks have all passed the local barrier, tells every
    /// remote rank). May block on a data connection's handshake.
    fn post(
        engine: &Arc<Engine>,
        context: u64,
        rank: u32,
        size: u32,
        endpoints: Vec<Endpoint>,
    ) -> Result<Forming> {
        let ready = engine.intercomm(ready_context(context), rank, size, endpoints.clone())?;
        let intercomm = engine.intercomm(context, rank, size, endpoints)?;
        let heard = ready.irecv_bytes(Source::Rank(0), Tag::Value(READY_TAG), None, 1)?;
        let mut sent = Vec::new();
        if rank == 0 {
            // The two leaders send to each other: if both connected at once,
            // over TCP one would then move onto the other's connection (a
            // MOVED frame, and the other's reader parked until it came; see
            // `transport::duplex`). The leader with the larger process id
            // answers the other's "ready" on its connection instead, unless
            // it does not come soon.
            let remote_leader = ready.remote_process(0);
            let mine = engine.endpoint().process;
            for q in 1..ready.remote_size() {
                sent.push(ready.isend(q, READY_TAG, &[1u8])?);
            }
            if remote_leader.is_some_and(|theirs| mine > theirs) {
                wait_a_while(&heard, LEADER_ANSWER_WAIT);
            }
            sent.push(ready.isend(0, READY_TAG, &[1u8])?);
        }
        Ok(Forming {
            intercomm,
            _ready: ready,
            heard: Some(heard),
            sent,
        })
    }

    /// Take what completed; true once both halves did. Never blocks.
    fn advance(&mut self) -> Result<bool> {
        let mut i = 0;
        while let Some(done) = self.sent.get(i).map(|s| s.test()) {
            if done {
                self.sent.swap_remove(i).wait()?;
            } else {
                i += 1;
            }
        }
        if self.heard.as_ref().is_some_and(|h| h.test()) {
            if let Some(h) = self.heard.take() {
                h.wait()?;
            }
        }
        Ok(self.sent.is_empty() && self.heard.is_none())
    }

    /// Wait (until `deadline`) for both halves.
    fn finish(&mut self, deadline: Instant) -> Result<()> {
        let left = || {
            deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        };
        for s in self.sent.drain(..) {
            s.wait_timeout(left())?;
        }
        if let Some(h) = self.heard.take() {
            h.wait_timeout(left())?;
        }
        Ok(())
    }
}

/// An intercommunicator being formed (see [`Bridge::intercomm_create_nonblocking`]).
pub struct PendingInterComm<'b> {
    /// Created by (and only valid with) that bridge's session and engine.
    _bridge: PhantomData<&'b Bridge>,
    remote: String,
    timeout: Duration,
    started: Instant,
    rx: std::sync::mpsc::Receiver<std::result::Result<Forming, Stage>>,
    formed: Option<Forming>,
}

impl PendingInterComm<'_> {
    /// Completes if both sides are ready: `Ok(None)` while they are not.
    /// Never blocks: the remote table, the local barrier, the data
    /// connections and the "ready" exchange all progress without it.
    pub fn test(&mut self) -> Result<Option<InterComm>> {
        if self.formed.is_none() {
            match self.rx.try_recv() {
                Ok(r) => self.formed = Some(self.complete(r)?),
                Err(std::sync::mpsc::TryRecvError::Empty) => return self.check_deadline(),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    return Err(BridgeError::EngineShutDown)
                }
            }
        }
        let Some(forming) = self.formed.as_mut() else {
            return Ok(None);
        };
        let over = forming.advance();
        match over {
            Ok(true) => self.take().map(Some),
            Ok(false) => self.check_deadline(),
            Err(e) => {
                self.formed = None;
                Err(self.remote_lost(e))
            }
        }
    }

    /// Waits until both sides are ready (up to the deadline given at creation).
    pub fn wait(mut self) -> Result<InterComm> {
        if self.formed.is_none() {
            // The session call has its own deadline; the margin only guards
            // against a vmd that stopped answering altogether.
            match self.rx.recv_timeout(self.timeout + Duration::from_secs(10)) {
                Ok(r) => self.formed = Some(self.complete(r)?),
                Err(_) => return Err(BridgeError::Timeout(self.timeout)),
            }
        }
        let deadline = self.started + self.timeout;
        let finished = match self.formed.as_mut() {
            Some(forming) => forming.finish(deadline),
            None => Err(BridgeError::Protocol("intercomm already taken".into())),
        };
        match finished {
            Ok(()) => self.take(),
            Err(BridgeError::Timeout(_)) => Err(BridgeError::RemoteNotReady {
                group: self.remote.clone(),
                waited: self.timeout,
            }),
            Err(e) => Err(self.remote_lost(e)),
        }
    }

    /// Hands out the intercommunicator once the exchange is over.
    fn take(&mut self) -> Result<InterComm> {
        match self.formed.take() {
            Some(forming) => Ok(forming.intercomm),
            None => Err(BridgeError::Protocol("intercomm already taken".into())),
        }
    }

    fn check_deadline(&self) -> Result<Option<InterComm>> {
        // The vmd's own deadline ends the wait for the table; this one
        // covers the wait for the remote leader after it.
        if self.formed.is_some() && self.started.elapsed() > self.timeout {
            return Err(BridgeError::RemoteNotReady {
                group: self.remote.clone(),
                waited: self.timeout,
            });
        }
        Ok(None)
    }

    fn remote_lost(&self, e: BridgeError) -> BridgeError {
        match e {
            BridgeError::PeerFailed { .. } => BridgeError::RemoteLost {
                group: self.remote.clone(),
                reason: e.to_string(),
            },
            other => other,
        }
    }

    fn complete(&self, r: std::result::Result<Forming, Stage>) -> Result<Forming> {
        match r {
            Ok(forming) => Ok(forming),
            Err(Stage::Remote(e)) if e.kind() == ErrorKind::DeadlineExceeded => {
                Err(BridgeError::RemoteNotReady {
                    group: self.remote.clone(),
                    waited: self.timeout,
                })
            }
            Err(Stage::Remote(e)) if e.kind() == ErrorKind::Aborted => {
                Err(BridgeError::RemoteLost {
                    group: self.remote.clone(),
                    reason: e.to_string(),
                })
            }
            Err(Stage::Remote(e)) if e.kind() == ErrorKind::PermissionDenied => {
                Err(BridgeError::NotPermitted {
                    group: self.remote.clone(),
                    reason: e.message(),
                })
            }
            Err(Stage::Remote(e)) => Err(vm_error("intercomm_create", e)),
            Err(Stage::Local(e)) => Err(vm_error(
                "intercomm_create (waiting for the other ranks of this job)",
                e,
            )),
            Err(Stage::Form(e)) => Err(self.remote_lost(e)),
        }
    }
}

/// The context of the "ready" messages of the intercommunicator `context`.
fn ready_context(context: u64) -> u64 {
    fnv1a64(&context.to_le_bytes(), fnv1a64(b"ready", FNV_OFFSET))
}

/// Whether every rank of `comm` says yes (native MPI, inside the job).
fn all_ranks_agree<C: Communicator>(comm: &C, mine: bool) -> bool {
    let mine = i32::from(mine);
    let mut all = 0i32;
    comm.all_reduce_into(&mine, &mut all, SystemOperation::min());
    all == 1
}

/// The context id both sides derive for the `ordinal`-th intercommunicator
/// between two group incarnations: symmetric in the two groups.
pub fn context_id(a: (&str, u64), b: (&str, u64), ordinal: u64) -> u64 {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let key = format!(
        "{}\u{1f}{}\u{1e}{}\u{1f}{}\u{1e}{}",
        lo.0, lo.1, hi.0, hi.1, ordinal
    );
    fnv1a64(key.as_bytes(), FNV_OFFSET)
}

/// Passes each death of a remote member to the engine.
async fn forward_deaths(
    mut events: tokio::sync::broadcast::Receiver<SessionEvent>,
    engine: std::sync::Weak<Engine>,
    peers: Arc<Mutex<HashMap<(String, u32), uuid::Uuid>>>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let ev = match events.recv().await {
            Ok(ev) => ev,
            Err(RecvError::Lagged(n)) => {
                warn!(missed = n, "bridge fell behind on vmd events");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let SessionEvent::Group(ev) = ev else {
            continue;
        };
        let Some(instance) = ev.member.as_ref().map(|m| m.instance) else {
            continue;
        };
        if ev.kind != GroupEventKind::MemberDied {
            continue;
        }
        let process = peers
            .lock()
            .ok()
            .and_then(|p| p.get(&(ev.group.clone(), instance)).copied());
        let (Some(process), Some(engine)) = (process, engine.upgrade()) else {
            continue;
        };
        engine.peer_reported_dead(
            process,
            &format!("member {instance} of group {:?} died", ev.group),
        );
    }
}

/// The group that holds the published name `service`.
fn name_group(service: &str) -> String {
    format!("isthmus.name:{service}")
}

pub(crate) fn vm_error(op: &'static str, e: ClientError) -> BridgeError {
    BridgeError::Vm {
        op,
        message: e.to_string(),
    }
}

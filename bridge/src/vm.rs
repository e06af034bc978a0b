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
//! intercommunicators in the same order (MPI's rule for collectives).
//!
//! Failure: the session follows the remote groups' events; a remote member's
//! death is passed to the engine, which fails every operation that waits on
//! that peer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use isthmus_client::{ClientError, ErrorKind, Session};
use isthmus_proto as pb;
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
    // Declared last: dropped after the session and its tasks.
    rt: Runtime,
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
        // The data path does not use the session's VM secret: each data
        // connection is signed with this engine's own key (see `handshake`).
        let engine = Engine::start(EngineConfig::new(session.host()))?;
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
    /// frozen. A name held by another job is an error on every rank.
    pub fn register<C: Communicator>(&self, group: &str, comm: &C) -> Result<Handle> {
        let rank = u32::try_from(comm.rank())
            .map_err(|_| BridgeError::InvalidArgument("negative rank".into()))?;
        let size = u32::try_from(comm.size())
            .map_err(|_| BridgeError::InvalidArgument("negative size".into()))?;
        let endpoint = self.engine.endpoint().encode();
        let joined = self
            .rt
            .block_on(self.session.join(group, Some(rank), endpoint));
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
        })
    }

    fn leave_quietly(&self, group: &str) {
        if let Err(e) = self.rt.block_on(self.session.leave(group)) {
            debug!(group, error = %e, "leaving after a failed register");
        }
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
        let (tx, rx) = std::sync::mpsc::channel();
        let session = self.session.clone();
        let name = remote.to_string();
        self.rt.spawn(async move {
            let _ = tx.send(session.wait_frozen(&name, timeout).await);
        });
        Ok(PendingInterComm {
            bridge: self,
            local: (
                handle.group.clone(),
                handle.generation,
                handle.rank,
                handle.size,
            ),
            remote: remote.to_string(),
            ordinal,
            timeout,
            rx,
        })
    }

    fn finish(
        &self,
        local: &(String, u64, u32, u32),
        remote: &str,
        ordinal: u64,
        table: &pb::GroupTable,
    ) -> Result<InterComm> {
        let mut endpoints = Vec::with_capacity(table.members.len());
        for (i, m) in table.members.iter().enumerate() {
            if m.instance as usize != i {
                return Err(BridgeError::Protocol(format!(
                    "remote group {remote:?} has no member at instance {i}: it was not registered by the bridge"
                )));
            }
            endpoints.push(Endpoint::decode(&m.endpoint)?);
        }
        if let Ok(mut peers) = self.peers.lock() {
            for (i, e) in endpoints.iter().enumerate() {
                peers.insert((remote.to_string(), i as u32), e.process);
            }
        }
        // A death that came before the peers were recorded above was not
        // passed to the engine. The session drops a cached table on any such
        // event (and caches none fetched across one): if ours is not the
        // table cached now, ask the vmd who is still there.
        let current = self.session.cached(remote).map(|t| t.generation);
        if current != Some(table.generation) {
            let alive = self.rt.block_on(self.session.members(remote)).ok();
            for (i, e) in endpoints.iter().enumerate() {
                let here = alive.as_ref().is_some_and(|t| {
                    t.generation == table.generation
                        && t.members.iter().any(|m| m.instance as usize == i)
                });
                if !here {
                    self.engine.peer_failed(
                        e.process,
                        &format!("member {i} of group {remote:?} is gone"),
                    );
                }
            }
        }
        let (group, generation, rank, size) = local;
        let context = context_id((group, *generation), (remote, table.generation), ordinal);
        debug!(local = %group, remote, ordinal, context = format_args!("{context:#x}"), "intercomm formed");
        self.engine.intercomm(context, *rank, *size, endpoints)
    }
}

/// An intercommunicator being formed (see [`Bridge::intercomm_create_nonblocking`]).
pub struct PendingInterComm<'b> {
    bridge: &'b Bridge,
    local: (String, u64, u32, u32),
    remote: String,
    ordinal: u64,
    timeout: Duration,
    rx: std::sync::mpsc::Receiver<Result<Arc<pb::GroupTable>, ClientError>>,
}

impl PendingInterComm<'_> {
    /// Completes if the remote group is ready: `Ok(None)` while it is not.
    pub fn test(&mut self) -> Result<Option<InterComm>> {
        match self.rx.try_recv() {
            Ok(r) => self.complete(r).map(Some),
            Err(std::sync::mpsc::TryRecvError::Empty) => Ok(None),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => Err(BridgeError::EngineShutDown),
        }
    }

    /// Waits for the remote group (up to the deadline given at creation).
    pub fn wait(self) -> Result<InterComm> {
        // The session call has its own deadline; the margin only guards
        // against a vmd that stopped answering altogether.
        match self.rx.recv_timeout(self.timeout + Duration::from_secs(10)) {
            Ok(r) => self.complete(r),
            Err(_) => Err(BridgeError::Timeout(self.timeout)),
        }
    }

    fn complete(&self, r: Result<Arc<pb::GroupTable>, ClientError>) -> Result<InterComm> {
        match r {
            Ok(table) => self
                .bridge
                .finish(&self.local, &self.remote, self.ordinal, &table),
            Err(e) if e.kind() == ErrorKind::DeadlineExceeded => Err(BridgeError::RemoteNotReady {
                group: self.remote.clone(),
                waited: self.timeout,
            }),
            Err(e) if e.kind() == ErrorKind::Aborted => Err(BridgeError::RemoteLost {
                group: self.remote.clone(),
                reason: e.to_string(),
            }),
            Err(e) => Err(vm_error("intercomm_create", e)),
        }
    }
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
    mut events: tokio::sync::broadcast::Receiver<pb::GroupEvent>,
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
        if ev.kind != pb::GroupEventKind::MemberDied as i32 {
            continue;
        }
        let process = peers
            .lock()
            .ok()
            .and_then(|p| p.get(&(ev.group.clone(), ev.instance)).copied());
        let (Some(process), Some(engine)) = (process, engine.upgrade()) else {
            continue;
        };
        engine.peer_reported_dead(
            process,
            &format!("member {} of group {:?} died", ev.instance, ev.group),
        );
    }
}

fn vm_error(op: &'static str, e: ClientError) -> BridgeError {
    BridgeError::Vm {
        op,
        message: e.to_string(),
    }
}

//! The schedules: stages of native and bridge requests, the operations'
//! turns, and the process's running schedules, advanced by [`progress`].

use std::collections::HashSet;
use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use isthmus_bridge::{BridgeError, RecvRequest, SendRequest, Status};
use mpi::ffi;

use crate::errors;
use crate::lent_send::LentSend;
use crate::mpi_glue::{
    comm_null, request_key, request_null, status_ignore, MPI_Comm, MPI_Request, Outcome,
};
use crate::state::BridgeComm;

/// Why a schedule failed.
pub(crate) enum Fail {
    /// A bridge error, reported as the call's (`errors::code_of`).
    Bridge(BridgeError),
    /// The MPI error code of a native step, reported as it is.
    Mpi(c_int),
}

impl From<BridgeError> for Fail {
    fn from(e: BridgeError) -> Self {
        Fail::Bridge(e)
    }
}

/// A schedule step's outcome.
pub(crate) type Step<T> = Result<T, Fail>;

/// A request a stage waits for.
pub(crate) enum Wait {
    /// A native request of the job's MPI.
    Native(MPI_Request),
    /// A bridge send.
    Send(SendRequest),
    /// A bridge send reading the program's memory where it is: dropped
    /// before it completed (a failed stage), it waits for the send.
    Lent(LentSend),
    /// A bridge receive: its message goes to the continuation.
    Recv(RecvRequest),
}

/// What a stage's request completed with.
enum Arrival {
    Native(c_int),
    Sent(Result<(), BridgeError>),
    Received(Result<(Vec<u8>, Status), BridgeError>),
}

enum Slot {
    Waiting(Wait),
    Done(Arrival),
}

/// What the requests of a stage completed with, for its continuation.
pub(crate) struct Arrivals(Vec<Arrival>);

impl Arrivals {
    /// The first error code among the native requests, else 0.
    pub(crate) fn native_rc(&self) -> c_int {
        self.0
            .iter()
            .find_map(|a| match a {
                Arrival::Native(rc) if *rc != 0 => Some(*rc),
                _ => None,
            })
            .unwrap_or(0)
    }

    /// The first error among the sends, else Ok.
    pub(crate) fn sent(&mut self) -> Result<(), BridgeError> {
        for a in &mut self.0 {
            if let Arrival::Sent(r) = a {
                if r.is_err() {
                    return std::mem::replace(r, Ok(()));
                }
            }
        }
        Ok(())
    }

    /// The next receive's outcome (in the order the stage listed them).
    pub(crate) fn received(&mut self) -> Result<(Vec<u8>, Status), BridgeError> {
        let at = self
            .0
            .iter()
            .position(|a| matches!(a, Arrival::Received(_)));
        match at.map(|i| self.0.remove(i)) {
            Some(Arrival::Received(r)) => r,
            _ => Err(BridgeError::Protocol(
                "a nonblocking collective's schedule has no receive here".into(),
            )),
        }
    }
}

type Then = Box<dyn FnOnce(&mut Cx<'_>, Arrivals) -> Step<Next>>;

/// One step of a schedule: requests to wait for, then a continuation.
pub(crate) struct Stage {
    slots: Vec<Slot>,
    /// The continuation issues native steps: it runs in the operation's turn.
    native: bool,
    then: Then,
}

/// What a continuation returns.
pub(crate) enum Next {
    Stage(Stage),
    Done,
}

impl Stage {
    /// Waits for `waits`, then runs `then` (which issues no native step).
    pub(crate) fn after(
        waits: Vec<Wait>,
        then: impl FnOnce(&mut Cx<'_>, Arrivals) -> Step<Next> + 'static,
    ) -> Stage {
        Stage {
            slots: waits.into_iter().map(Slot::Waiting).collect(),
            native: false,
            then: Box::new(then),
        }
    }

    /// Waits for `waits` and for the operation's turn on the job's native
    /// communicator, then runs `then`, which may issue native steps on it.
    pub(crate) fn native(
        waits: Vec<Wait>,
        then: impl FnOnce(&mut Cx<'_>, Arrivals) -> Step<Next> + 'static,
    ) -> Stage {
        Stage {
            native: true,
            ..Stage::after(waits, then)
        }
    }
}

/// What a continuation may use: the job's native communicator for the
/// nonblocking collectives (in the operation's turn), and the end of the
/// operation's native steps.
pub(crate) struct Cx<'a> {
    lane: &'a mut Lane,
    native: MPI_Comm,
}

impl Cx<'_> {
    /// Issues a native step on the job's communicator: `f(comm, &mut
    /// request)` is a `PMPI_I*` call. Only in a [`Stage::native`] continuation.
    pub(crate) fn issue(
        &mut self,
        f: impl FnOnce(MPI_Comm, *mut MPI_Request) -> c_int,
    ) -> Step<MPI_Request> {
        let mut req = request_null();
        let rc = f(self.native, &mut req);
        if rc != 0 {
            return Err(Fail::Mpi(rc));
        }
        Ok(req)
    }

    /// This process's rank and the size of its job's group.
    pub(crate) fn local(&self) -> (u32, u32) {
        let inter = &self.lane.bc.inter;
        (inter.rank(), inter.local_size())
    }

    /// The operation has issued all its native steps: the next operation
    /// on the communicator may issue its own.
    pub(crate) fn natives_done(&mut self) {
        self.lane.pass();
    }
}

/// An operation's place on its communicator: its sequence number, and
/// whether it has let the next operation issue native steps (it does when
/// it ends, at the latest).
struct Lane {
    bc: Arc<BridgeComm>,
    seq: u64,
    passed: bool,
}

impl Lane {
    fn turn(&self) -> Option<MPI_Comm> {
        self.bc.coll.nbc().turn(self.seq)
    }
    fn pass(&mut self) {
        if !self.passed {
            self.passed = true;
            self.bc.coll.nbc().pass(self.seq);
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.pass();
    }
}

/// A nonblocking collective being started: its sequence number is taken.
pub(crate) struct Op {
    lane: Lane,
    comm: MPI_Comm,
    call: &'static str,
}

impl Op {
    /// Starts operation `call` on `bc` (the program's `comm`); an MPI
    /// failure to make the native duplicate is raised on `comm`.
    pub(crate) fn begin(
        bc: &Arc<BridgeComm>,
        comm: MPI_Comm,
        call: &'static str,
    ) -> Result<Op, c_int> {
        Op::begin_over(bc, (comm, comm), call)
    }

    /// [`Op::begin`] whose native steps run on a duplicate of `native`
    /// (a mixed intercommunicator's local group), errors raised on `comm`.
    pub(crate) fn begin_over(
        bc: &Arc<BridgeComm>,
        (comm, native): (MPI_Comm, MPI_Comm),
        call: &'static str,
    ) -> Result<Op, c_int> {
        let seq = bc
            .coll
            .nbc()
            .begin(native)
            .map_err(|rc| errors::raise(comm, rc))?;
        tracing::debug!(call, seq, "nonblocking collective started");
        Ok(Op {
            lane: Lane {
                bc: Arc::clone(bc),
                seq,
                passed: false,
            },
            comm,
            call,
        })
    }

    /// The operation's sequence number on its communicator.
    pub(crate) fn seq(&self) -> u64 {
        self.lane.seq
    }

    /// This job takes no native step in the operation.
    pub(crate) fn no_natives(&mut self) {
        self.lane.pass();
    }

    /// Raises `e` on the communicator (a failed initiation); the operation
    /// gives up its turn.
    pub(crate) fn fail(self, e: &BridgeError) -> c_int {
        errors::fail(self.comm, self.call, e)
    }

    /// The communicator the operation's errors are raised on.
    pub(crate) fn comm(&self) -> MPI_Comm {
        self.comm
    }

    /// Runs the schedule from `first` for the program's request `req` (a
    /// generalized request, whose outcome goes to `outcome`), advanced from
    /// the next [`progress`] on (`requests::start_schedule`).
    pub(crate) fn run(self, first: Stage, req: MPI_Request, outcome: Arc<Mutex<Outcome>>) {
        let key = request_key(req);
        live().insert(key);
        COUNT.fetch_add(1, Ordering::Relaxed);
        incoming().push(Running {
            key,
            req,
            outcome,
            comm: self.comm,
            call: self.call,
            lane: self.lane,
            stage: Some(first),
        });
    }
}

// ------------------------------------------------------------ running

/// A schedule under way.
struct Running {
    key: usize,
    req: MPI_Request,
    outcome: Arc<Mutex<Outcome>>,
    comm: MPI_Comm,
    call: &'static str,
    lane: Lane,
    stage: Option<Stage>,
}

// SAFETY: a schedule's stages hold bridge requests (Send), owned buffers,
// and the program's buffers and MPI handles, which MPI's rules keep valid
// until the request completes and which are process-wide values, not tied
// to a thread; a schedule is advanced by one thread at a time (under
// RUNNING's lock, or alone in INCOMING's before that).
unsafe impl Send for Running {}

/// Schedules being advanced, in the order they started.
static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());
/// Schedules started since the last advance (never locked across an MPI call).
static INCOMING: Mutex<Vec<Running>> = Mutex::new(Vec::new());
/// The keys of the requests of unfinished schedules, and their number.
static LIVE: Mutex<Option<HashSet<usize>>> = Mutex::new(None);
static COUNT: AtomicUsize = AtomicUsize::new(0);

fn incoming() -> MutexGuard<'static, Vec<Running>> {
    INCOMING.lock().unwrap_or_else(|p| p.into_inner())
}

struct Live(MutexGuard<'static, Option<HashSet<usize>>>);
impl Live {
    fn insert(&mut self, key: usize) {
        self.0.get_or_insert_with(HashSet::new).insert(key);
    }
    fn remove(&mut self, key: usize) {
        if let Some(s) = self.0.as_mut() {
            s.remove(&key);
        }
    }
    fn contains(&self, key: usize) -> bool {
        self.0.as_ref().is_some_and(|s| s.contains(&key))
    }
}
fn live() -> Live {
    Live(LIVE.lock().unwrap_or_else(|p| p.into_inner()))
}

/// No schedule is under way (one relaxed load).
pub(crate) fn idle() -> bool {
    COUNT.load(Ordering::Relaxed) == 0
}

/// Whether `key` is the request of a schedule still under way.
pub(crate) fn owns(key: usize) -> bool {
    !idle() && live().contains(key)
}

/// A schedule that ended: the program's request to complete (`requests`),
/// then to [`retire`].
pub(crate) struct Finished {
    pub(crate) key: usize,
    pub(crate) req: MPI_Request,
    pub(crate) outcome: Arc<Mutex<Outcome>>,
    /// The error code, and the communicator whose error handler reports it.
    pub(crate) failed: Option<(c_int, MPI_Comm)>,
}

/// Advances every schedule of the process as far as it goes without
/// blocking, and returns those that ended. A thread that finds another
/// advancing them (or itself, from an MPI call inside a native step)
/// returns at once.
pub(crate) fn progress() -> Vec<Finished> {
    let mut ended = Vec::new();
    if idle() {
        return ended;
    }
    let mut running = match RUNNING.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return ended,
    };
    running.append(&mut incoming());
    let mut i = 0;
    while let Some(sched) = running.get_mut(i) {
        match advance(sched) {
            None => i += 1,
            Some(result) => {
                let r = running.remove(i);
                ended.push(finish(r, result));
            }
        }
    }
    ended
}

/// The request `key` of a schedule that ended has been completed.
/// True when it was the last schedule under way (see `deferred`).
pub(crate) fn retire(key: usize) -> bool {
    live().remove(key);
    COUNT.fetch_sub(1, Ordering::Relaxed) == 1
}

/// Tests `slot`'s request; true once it completed.
fn test(slot: &mut Slot) -> bool {
    let arrival = match slot {
        Slot::Done(_) => return true,
        Slot::Waiting(Wait::Native(req)) => {
            // A step may be another schedule's generalized request (a
            // mixed intercommunicator's local group of both jobs runs the
            // merged nonblocking collective): its failure is in the table,
            // not in what PMPI_Test returns, and is this schedule's.
            let key = crate::mpi_glue::request_key(*req);
            let mut flag = 0;
            // SAFETY: a native request of the schedule's own, live until
            // it completes here.
            let rc = unsafe { ffi::PMPI_Test(req, &mut flag, status_ignore()) };
            if rc == 0 && flag == 0 {
                return false;
            }
            let inner = crate::failed_requests::take_failure(key).map_or(0, |f| f.code);
            Arrival::Native(if rc != 0 { rc } else { inner })
        }
        Slot::Waiting(Wait::Send(s)) if !s.test() => return false,
        Slot::Waiting(Wait::Lent(s)) if !s.test() => return false,
        Slot::Waiting(Wait::Recv(r)) if !r.test() => return false,
        Slot::Waiting(_) => match std::mem::replace(slot, Slot::Done(Arrival::Native(0))) {
            // Complete: `wait` returns at once.
            Slot::Waiting(Wait::Send(s)) => Arrival::Sent(s.wait()),
            Slot::Waiting(Wait::Lent(s)) => Arrival::Sent(s.wait()),
            Slot::Waiting(Wait::Recv(r)) => Arrival::Received(r.wait()),
            _ => Arrival::Native(0),
        },
    };
    *slot = Slot::Done(arrival);
    true
}

/// Advances `r` as far as it goes: None while it waits, else its end.
fn advance(r: &mut Running) -> Option<Step<()>> {
    loop {
        let stage = r.stage.as_mut()?;
        let mut all = true;
        for slot in &mut stage.slots {
            all &= test(slot);
        }
        if !all {
            return None;
        }
        let native = if stage.native {
            r.lane.turn()?
        } else {
            comm_null()
        };
        let stage = r.stage.take()?;
        let arrivals = Arrivals(
            stage
                .slots
                .into_iter()
                .filter_map(|s| match s {
                    Slot::Done(a) => Some(a),
                    Slot::Waiting(_) => None,
                })
                .collect(),
        );
        let mut cx = Cx {
            lane: &mut r.lane,
            native,
        };
        match (stage.then)(&mut cx, arrivals) {
            Ok(Next::Stage(s)) => r.stage = Some(s),
            Ok(Next::Done) => return Some(Ok(())),
            Err(f) => return Some(Err(f)),
        }
    }
}

/// What completes the program's request of a schedule that ended.
fn finish(r: Running, result: Step<()>) -> Finished {
    let Running {
        key,
        req,
        outcome,
        comm,
        call,
        mut lane,
        stage,
    } = r;
    lane.pass();
    drop(stage);
    let failed = result.err().map(|f| {
        let code = match f {
            Fail::Bridge(e) => errors::code_of(call, &e),
            Fail::Mpi(rc) => rc,
        };
        (code, comm)
    });
    Finished {
        key,
        req,
        outcome,
        failed,
    }
}

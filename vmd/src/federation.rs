//! One namespace of hosts and jobs across the vmds of a virtual machine that
//! share etcd: this vmd's resource manager ([`isthmus_rm`], the authority
//! for its own host) wired to the shared tables ([`isthmus_rm_etcd`]).
//!
//! * **Out**: this host's row and the rows of the jobs it runs are kept
//!   published (checked on every event and twice a second, written when
//!   they changed); task and job exits and output lines of its own jobs are
//!   published in order, output lines batched for up to 20 ms (one etcd
//!   put per batch, not per line).
//! * **In**: the other hosts' rows and jobs are mirrored into the resource
//!   manager (so listings, watch snapshots and placement see every host),
//!   and their events are relayed to this vmd's watchers. A host row that
//!   vanishes with its vmd's lease is a failed host (its jobs lost).
//! * **Orders**: a spawn placed on another host, a kill or signal of a job
//!   there, a check or a delete, is asked of that host's vmd; this vmd
//!   carries out the orders addressed to it.
//! * **Hosts started by the virtual machine**: with a host-start command
//!   (PVM's rsh; ssh today), adding a host runs it and waits for that
//!   host's vmd to publish its row; deleting a host asks its vmd to stop.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use isthmus_rm::{
    Host, HostDecl, Job, JobId, Placement, Refusal, RefusalKind, ResourceManager, RmEvent,
    SpawnSpec,
};
use isthmus_rm_etcd::{Answer, Asked, Federation, HostChange, HostRow, JobChange, Order};
use tokio::sync::{broadcast, Notify, Semaphore};
use tracing::{info, warn};

/// How often this host's rows are compared with what was published.
const SYNC_EVERY: Duration = Duration::from_millis(500);
/// Orders carried out at once; more wait.
const MAX_ORDERS: usize = 64;
/// How long a spawn asked of another vmd may take (its tasker's answer
/// included).
const SPAWN_DEADLINE: Duration = Duration::from_secs(15);
/// How long other orders may take.
const ORDER_DEADLINE: Duration = Duration::from_secs(5);
/// Hosts a spawn is placed on at most, when those before refused it for
/// want of slots.
const MAX_PLACEMENTS: usize = 3;
/// How much of a failed host-start command's output a refusal quotes.
const START_LOG_TAIL: usize = 600;

/// How this vmd starts the vmds of hosts added to the virtual machine.
#[derive(Clone, Debug, Default)]
pub struct HostStart {
    /// A shell command; `{host}` is replaced by the host's name (1–64 of
    /// `[A-Za-z0-9._-]`, so it needs no quoting). `None`: an added host is
    /// declared and waits for its vmd to be started by hand.
    pub command: Option<String>,
    /// How long the started vmd may take to publish its host row.
    pub timeout: Duration,
    /// Where each start's output goes (`host-start-<host>.log`).
    pub log_dir: PathBuf,
}

/// This vmd's part of the federation. Cheap to clone.
#[derive(Clone)]
pub struct Federated {
    rm: ResourceManager,
    fed: Federation,
    start: Arc<HostStart>,
}

impl Federated {
    /// Publishes this host, mirrors the others and starts following the
    /// shared tables and this host's orders. `halt` stops this vmd (a
    /// `Stop` order: the host was deleted).
    pub async fn join(
        rm: ResourceManager,
        fed: Federation,
        start: HostStart,
        halt: Arc<Notify>,
    ) -> Result<Self, Refusal> {
        let events_from = fed.next_revision().await?;
        let (hosts, hosts_from) = fed.hosts().await?;
        for row in hosts {
            rm.mirror_host(row.host);
        }
        let (jobs, jobs_from) = fed.jobs().await?;
        for job in jobs {
            if job.host == rm.local_host() {
                // Rows of this host's previous run (a restart within its
                // lease): its taskers went with it, and so did those jobs.
                if !job.state.is_final() {
                    let lost = RmEvent::JobExit {
                        job: job.id,
                        state: isthmus_rm::JobState::Lost,
                        exit: None,
                        reason: format!("the vmd of host {} restarted", job.host),
                        host: job.host.clone(),
                    };
                    fed.publish_events(vec![lost]).await?;
                }
                fed.forget_job(job.id).await?;
            } else if rm.is_peer(&job.host) {
                rm.mirror_job(job);
            }
        }
        let orders = fed.follow_orders().await?;
        tokio::spawn(mirror_hosts(rm.clone(), fed.follow_hosts(hosts_from)));
        tokio::spawn(mirror_jobs(rm.clone(), fed.follow_jobs(jobs_from)));
        tokio::spawn(relay_events(rm.clone(), fed.follow_events(events_from)));
        let me = Federated {
            rm,
            fed,
            start: Arc::new(start),
        };
        tokio::spawn(me.clone().carry_out(orders, halt));
        // Last: once others see this host, it takes their orders.
        let own = me.rm.host(me.rm.local_host())?;
        me.fed
            .publish_host(&HostRow {
                host: own,
                leaving: false,
            })
            .await?;
        tokio::spawn(publish_own(me.rm.clone(), me.fed.clone()));
        info!(host = %me.fed.host(), "host published in the shared tables");
        Ok(me)
    }

    /// Takes this host out of the shared tables (a clean stop): the others
    /// report it deleted, not failed.
    pub async fn leave(&self) {
        let Ok(host) = self.rm.host(self.rm.local_host()) else {
            return;
        };
        let jobs: Vec<JobId> = self.rm.own_jobs().iter().map(|j| j.id).collect();
        let row = HostRow {
            host,
            leaving: true,
        };
        if let Err(e) = self.fed.leave(&row, &jobs).await {
            warn!(error = %e, "leaving the shared tables; the others will see this host fail when its lease ends");
        }
    }

    /// Places a job on any host of the virtual machine under a job id
    /// unique across it.
    /// Places and runs a job. A host placed on from its mirrored row may
    /// have lost its slots meanwhile: when it refuses for want of slots, the
    /// job is placed again without it (at most [`MAX_PLACEMENTS`] hosts).
    pub async fn spawn(&self, spec: SpawnSpec) -> Result<(JobId, String), Refusal> {
        let named = matches!(spec.placement, Placement::Host(_));
        let mut refused_by: Vec<String> = Vec::new();
        // Allocated once: a host that refused created nothing under it.
        let mut allocated: Option<JobId> = None;
        loop {
            let host = match self.rm.place(&spec, &refused_by) {
                Ok(h) => h,
                Err(e) if refused_by.is_empty() => return Err(e),
                Err(e) => {
                    return Err(Refusal::new(
                        e.kind,
                        format!(
                            "{e} (refused by {}: no free slots there)",
                            refused_by.join(", ")
                        ),
                    ))
                }
            };
            let id = match allocated {
                Some(id) => id,
                None => *allocated.insert(self.fed.next_job_id().await?),
            };
            let mut spec = spec.clone();
            spec.placement = Placement::Host(host.clone());
            if !self.rm.is_peer(&host) {
                return self.rm.spawn_as(spec, Some(id)).await;
            }
            match self
                .fed
                .ask(&host, Order::Spawn { spec, job: id }, SPAWN_DEADLINE)
                .await?
            {
                Answer::Spawned { job, host } => {
                    // Listed here at once, not only when the row's change arrives.
                    if let Ok(Some(row)) = self.fed.job(job).await {
                        self.rm.mirror_job(row);
                    }
                    return Ok((job, host));
                }
                Answer::Refused(r)
                    if r.kind == RefusalKind::ResourceExhausted
                        && !named
                        && refused_by.len() + 1 < MAX_PLACEMENTS =>
                {
                    info!(%host, job = id, reason = %r, "placed on stale slots; placing again");
                    refused_by.push(host);
                }
                other => return Err(refused(other, &host)),
            }
        }
    }

    /// Job `id`, as the resource manager knows it or, when its row has not
    /// been mirrored here yet, as the shared tables hold it: a job id given
    /// out by one vmd is good at every other at once (read your writes), not
    /// only once the row's change has arrived.
    pub async fn job(&self, id: JobId) -> Result<Job, Refusal> {
        match self.rm.job(id) {
            Ok(job) => Ok(job),
            // A row of this host that its manager does not know is one of a
            // previous run, forgotten at join: not a job.
            Err(e) => match self.fed.job(id).await? {
                Some(row) if self.rm.is_peer(&row.host) => {
                    self.rm.mirror_job(row.clone());
                    Ok(row)
                }
                _ => Err(e),
            },
        }
    }

    pub async fn kill(&self, job: &Job) -> Result<(), Refusal> {
        if self.rm.owns_job(job.id) {
            return self.rm.kill(job.id);
        }
        match self
            .fed
            .ask(&job.host, Order::Kill { job: job.id }, ORDER_DEADLINE)
            .await?
        {
            Answer::Done => Ok(()),
            other => Err(refused(other, &job.host)),
        }
    }

    pub async fn signal(&self, job: &Job, signal: i32, rank: Option<u32>) -> Result<u32, Refusal> {
        if self.rm.owns_job(job.id) {
            return self.rm.signal(job.id, signal, rank);
        }
        let order = Order::Signal {
            job: job.id,
            signal,
            rank,
        };
        match self.fed.ask(&job.host, order, ORDER_DEADLINE).await? {
            Answer::Signalled { ranks } => Ok(ranks),
            other => Err(refused(other, &job.host)),
        }
    }

    /// Adds a host: runs the host-start command and waits for its vmd's
    /// row; without a command, declares it (it is up once a vmd of that
    /// name publishes its row).
    pub async fn add_host(&self, decl: HostDecl) -> Result<Host, Refusal> {
        let Some(command) = &self.start.command else {
            return self.rm.add_host(decl);
        };
        let decl = isthmus_rm::hosts::validated(decl)?;
        let name = decl.name.clone();
        if self.rm.host(&name).is_ok() {
            return Err(Refusal::already_exists(format!(
                "host {name} is already in the virtual machine"
            )));
        }
        let mut events = self.rm.subscribe().2;
        let log = self.start.log_dir.join(format!("host-start-{name}.log"));
        let command = command.replace("{host}", &name);
        let mut child = start_command(&command, &log)?;
        info!(host = %name, %command, "starting the host's vmd");
        let deadline = tokio::time::sleep(self.start.timeout);
        tokio::pin!(deadline);
        let mut exited = false;
        let result = loop {
            if self.rm.is_peer(&name) {
                if let Ok(host) = self.rm.host(&name) {
                    break Ok(host);
                }
            }
            tokio::select! {
                ev = events.recv() => match ev {
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => {
                        break Err(Refusal::unavailable("the resource manager stopped"));
                    }
                },
                status = child.wait(), if !exited => {
                    exited = true;
                    match status {
                        // It started the vmd and went (ssh -f, a shell's `&`).
                        Ok(s) if s.success() => {}
                        Ok(s) => break Err(Refusal::unavailable(format!(
                            "the host-start command for {name} ({command}) ended with {s} before the host was up: {}",
                            log_tail(&log)
                        ))),
                        Err(e) => break Err(Refusal::unavailable(format!(
                            "waiting for the host-start command for {name}: {e}"
                        ))),
                    }
                }
                () = &mut deadline => {
                    break Err(Refusal::new(RefusalKind::DeadlineExceeded, format!(
                        "host {name}'s vmd did not appear within {:?} of the host-start command ({command}); the command was stopped: {}",
                        self.start.timeout,
                        log_tail(&log)
                    )));
                }
            }
        };
        if !exited {
            if result.is_err() {
                stop_group(&child);
            }
            // The command may run as long as the host's vmd (ip netns exec,
            // ssh without -f): reap it whenever it ends.
            tokio::spawn(async move {
                let status = child.wait().await;
                info!(host = %name, ?status, "host-start command ended");
            });
        }
        result
    }

    /// Deletes a host: a peer's vmd is asked to stop (its jobs are lost);
    /// a declared host is forgotten. Returns how many jobs were lost.
    pub async fn delete_host(&self, name: &str) -> Result<u32, Refusal> {
        if !self.rm.is_peer(name) {
            return self.rm.delete_host(name);
        }
        let lost = self
            .rm
            .jobs(false)
            .iter()
            .filter(|j| j.host == name)
            .count() as u32;
        let mut events = self.rm.subscribe().2;
        match self.fed.ask(name, Order::Stop, ORDER_DEADLINE).await? {
            Answer::Done => {}
            other => return Err(refused(other, name)),
        }
        // Its row goes when its vmd has stopped.
        let gone = tokio::time::timeout(ORDER_DEADLINE * 2, async {
            while self.rm.is_peer(name) {
                if let Err(broadcast::error::RecvError::Closed) = events.recv().await {
                    break;
                }
            }
        })
        .await;
        if gone.is_err() {
            return Err(Refusal::new(
                RefusalKind::DeadlineExceeded,
                format!("host {name}'s vmd agreed to stop but its row is still there"),
            ));
        }
        Ok(lost)
    }

    /// Whether a peer host's vmd answers an order, and how fast.
    pub async fn ping(&self, name: &str) -> Result<Duration, Refusal> {
        let started = Instant::now();
        match self.fed.ask(name, Order::Ping, ORDER_DEADLINE).await? {
            Answer::Done => Ok(started.elapsed()),
            other => Err(refused(other, name)),
        }
    }

    pub fn is_peer(&self, host: &str) -> bool {
        self.rm.is_peer(host)
    }

    /// Carries out the orders addressed to this host, at most
    /// [`MAX_ORDERS`] at once.
    async fn carry_out(self, mut orders: tokio::sync::mpsc::Receiver<Asked>, halt: Arc<Notify>) {
        let slots = Arc::new(Semaphore::new(MAX_ORDERS));
        while let Some(asked) = orders.recv().await {
            let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let (me, halt) = (self.clone(), Arc::clone(&halt));
            tokio::spawn(async move {
                let stop = asked.order == Order::Stop;
                let answer = me.answer(&asked).await;
                if let Err(e) = me.fed.answer(&asked, &answer).await {
                    warn!(order = %asked.id, from = %asked.from, error = %e, "answering an order");
                }
                if stop {
                    info!(from = %asked.from, "deleted from the virtual machine: stopping");
                    halt.notify_one();
                }
                drop(permit);
            });
        }
    }

    async fn answer(&self, asked: &Asked) -> Answer {
        let result = match &asked.order {
            Order::Spawn { spec, job } => {
                let mut spec = spec.clone();
                spec.placement = Placement::Host(self.rm.local_host().to_string());
                match self.rm.spawn_as(spec, Some(*job)).await {
                    Ok((job, host)) => {
                        // The asker lists the row it is answered with.
                        if let Ok(row) = self.rm.job(job) {
                            if let Err(e) = self.fed.publish_job(&row).await {
                                warn!(job, error = %e, "publishing a job row");
                            }
                        }
                        Ok(Answer::Spawned { job, host })
                    }
                    Err(e) => Err(e),
                }
            }
            Order::Kill { job } => self.rm.kill(*job).map(|()| Answer::Done),
            Order::Signal { job, signal, rank } => self
                .rm
                .signal(*job, *signal, *rank)
                .map(|ranks| Answer::Signalled { ranks }),
            Order::Ping | Order::Stop => Ok(Answer::Done),
        };
        result.unwrap_or_else(Answer::Refused)
    }
}

/// The refusal an unexpected answer stands for.
fn refused(answer: Answer, host: &str) -> Refusal {
    match answer {
        Answer::Refused(r) => r,
        other => Refusal::unavailable(format!(
            "host {host}'s vmd answered {other:?}, which does not fit the order"
        )),
    }
}

async fn mirror_hosts(rm: ResourceManager, mut changes: tokio::sync::mpsc::Receiver<HostChange>) {
    while let Some(change) = changes.recv().await {
        match change {
            HostChange::Up(row) if row.leaving => {}
            HostChange::Up(row) => rm.mirror_host(row.host),
            HostChange::Gone { name, leaving } => {
                let failure = (!leaving)
                    .then(|| "its vmd's etcd lease expired: the vmd stopped answering".to_string());
                rm.unmirror_host(&name, failure);
            }
        }
    }
}

async fn mirror_jobs(rm: ResourceManager, mut changes: tokio::sync::mpsc::Receiver<JobChange>) {
    while let Some(change) = changes.recv().await {
        match change {
            JobChange::Put(job) if rm.is_peer(&job.host) => rm.mirror_job(*job),
            JobChange::Put(_) => {}
            JobChange::Gone(id) if !rm.owns_job(id) => rm.unmirror_job(id),
            JobChange::Gone(_) => {}
        }
    }
}

async fn relay_events(
    rm: ResourceManager,
    mut events: tokio::sync::mpsc::Receiver<isthmus_rm_etcd::EventRec>,
) {
    while let Some(rec) = events.recv().await {
        for event in rec.events {
            // Host events come from the host table, not from other managers.
            if !matches!(
                event,
                RmEvent::HostAdded(_) | RmEvent::HostDeleted { .. } | RmEvent::HostFailed { .. }
            ) {
                rm.relay(event);
            }
        }
    }
}

/// Keeps this host's row and its jobs' rows published, and publishes the
/// events of its own jobs (output lines in batches, see [`EventBatch`]).
async fn publish_own(rm: ResourceManager, fed: Federation) {
    let mut events = rm.subscribe().2;
    let mut tick = tokio::time::interval(SYNC_EVERY);
    let mut host_row: Option<Host> = None;
    let mut job_rows: BTreeMap<JobId, Job> = BTreeMap::new();
    let mut batch = EventBatch::default();
    loop {
        let due = batch.due();
        tokio::select! {
            ev = events.recv() => match ev {
                Ok(ev) => {
                    let own = match &ev.event {
                        RmEvent::TaskExit { job, .. } | RmEvent::JobExit { job, .. } | RmEvent::Output { job, .. } => rm.owns_job(*job),
                        _ => false,
                    };
                    let output = matches!(ev.event, RmEvent::Output { .. });
                    if own && batch.push(ev.event.clone(), Instant::now()) {
                        publish_batch(&fed, &mut batch).await;
                    }
                    if output {
                        continue;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    warn!(missed = n, "publishing fell behind; other hosts miss events");
                }
                Err(broadcast::error::RecvError::Closed) => {
                    publish_batch(&fed, &mut batch).await;
                    return;
                }
            },
            _ = sleep_until_due(due) => {
                publish_batch(&fed, &mut batch).await;
                continue;
            }
            _ = tick.tick() => {}
        }
        sync_rows(&rm, &fed, &mut host_row, &mut job_rows).await;
    }
}

/// How long an output line may wait for others to share its etcd put.
const OUTPUT_BATCH_WINDOW: Duration = Duration::from_millis(20);
/// A batch is published at once when it holds this many events …
const MAX_BATCH_EVENTS: usize = 512;
/// … or this many bytes of output lines (a line is at most 64 KiB, and a
/// batch stays far below etcd's 1.5 MiB request limit).
const MAX_BATCH_BYTES: usize = 256 << 10;

/// This host's events waiting to be published together: output lines for
/// at most [`OUTPUT_BATCH_WINDOW`], so that a job that prints a lot costs
/// etcd one put per batch rather than one per line. Any other event (an
/// exit) goes out at once with the lines before it, in order.
#[derive(Default)]
struct EventBatch {
    events: Vec<RmEvent>,
    bytes: usize,
    /// When the oldest waiting event must be out.
    due: Option<Instant>,
}

impl EventBatch {
    /// Adds `event`; true when the batch must be published now.
    fn push(&mut self, event: RmEvent, now: Instant) -> bool {
        let line = match &event {
            RmEvent::Output { line, .. } => Some(line.len()),
            _ => None,
        };
        self.events.push(event);
        self.due.get_or_insert(now + OUTPUT_BATCH_WINDOW);
        match line {
            Some(len) => {
                self.bytes += len;
                self.events.len() >= MAX_BATCH_EVENTS || self.bytes >= MAX_BATCH_BYTES
            }
            None => true,
        }
    }

    fn due(&self) -> Option<Instant> {
        self.due
    }

    fn take(&mut self) -> Vec<RmEvent> {
        self.bytes = 0;
        self.due = None;
        std::mem::take(&mut self.events)
    }
}

async fn sleep_until_due(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

async fn publish_batch(fed: &Federation, batch: &mut EventBatch) {
    let events = batch.take();
    if events.is_empty() {
        return;
    }
    let n = events.len();
    if let Err(e) = fed.publish_events(events).await {
        warn!(error = %e, events = n, "publishing events; other hosts miss them");
    }
}

async fn sync_rows(
    rm: &ResourceManager,
    fed: &Federation,
    host_row: &mut Option<Host>,
    job_rows: &mut BTreeMap<JobId, Job>,
) {
    if let Ok(host) = rm.host(rm.local_host()) {
        if host_row.as_ref() != Some(&host) {
            let row = HostRow {
                host: host.clone(),
                leaving: false,
            };
            match fed.publish_host(&row).await {
                Ok(()) => *host_row = Some(host),
                Err(e) => warn!(error = %e, "publishing this host's row"),
            }
        }
    }
    let now: BTreeMap<JobId, Job> = rm.own_jobs().into_iter().map(|j| (j.id, j)).collect();
    for (id, job) in &now {
        if job_rows.get(id) != Some(job) {
            match fed.publish_job(job).await {
                Ok(()) => {
                    job_rows.insert(*id, job.clone());
                }
                Err(e) => warn!(job = id, error = %e, "publishing a job row"),
            }
        }
    }
    let gone: Vec<JobId> = job_rows
        .keys()
        .filter(|id| !now.contains_key(id))
        .copied()
        .collect();
    for id in gone {
        if fed.forget_job(id).await.is_ok() {
            job_rows.remove(&id);
        }
    }
}

/// Runs a host-start command with its output in `log`, in a process group
/// of its own (a signal to this vmd's terminal is not one to the host).
fn start_command(command: &str, log: &std::path::Path) -> Result<tokio::process::Child, Refusal> {
    let out = std::fs::File::create(log)
        .map_err(|e| Refusal::unavailable(format!("creating {}: {e}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(|e| Refusal::unavailable(format!("{}: {e}", log.display())))?;
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        // A started vmd outlives a call that gave up waiting for it.
        .kill_on_drop(false);
    cmd.spawn().map_err(|e| {
        Refusal::unavailable(format!("running the host-start command ({command}): {e}"))
    })
}

/// Sends SIGTERM to a host-start command's process group (it has its own).
fn stop_group(child: &tokio::process::Child) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) with a negative pid signals a process group; it
        // touches no memory of ours. The group is the child's own (it was
        // started with process_group(0)) and the child is not reaped yet,
        // so the id cannot have been reused.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGTERM);
        }
    }
}

/// The end of a host-start log, for a refusal.
fn log_tail(log: &std::path::Path) -> String {
    match std::fs::read(log) {
        Ok(bytes) => {
            let start = bytes.len().saturating_sub(START_LOG_TAIL);
            let tail = String::from_utf8_lossy(bytes.get(start..).unwrap_or_default());
            format!(
                "its output ends: {:?} (all of it: {})",
                tail.trim(),
                log.display()
            )
        }
        Err(e) => format!("no output ({}: {e})", log.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use isthmus_rm::{JobState, OutputStream};

    fn line(n: usize, len: usize) -> RmEvent {
        RmEvent::Output {
            job: 7,
            rank: Some(0),
            stream: OutputStream::Stdout,
            // `n`, padded to `len` bytes.
            line: format!("{}{n}", "0".repeat(len.saturating_sub(n.to_string().len()))),
        }
    }

    fn exit() -> RmEvent {
        RmEvent::JobExit {
            job: 7,
            state: JobState::Exited,
            exit: None,
            reason: String::new(),
            host: "h".into(),
        }
    }

    #[test]
    fn output_waits_for_its_window_and_an_exit_takes_it_along_in_order() {
        let now = Instant::now();
        let mut b = EventBatch::default();
        assert!(b.due().is_none());
        assert!(!b.push(line(1, 4), now));
        assert!(!b.push(line(2, 4), now + Duration::from_millis(5)));
        // The window runs from the oldest line.
        assert_eq!(b.due(), Some(now + OUTPUT_BATCH_WINDOW));
        assert!(b.push(exit(), now + Duration::from_millis(6)));
        assert_eq!(b.take(), vec![line(1, 4), line(2, 4), exit()]);
        assert!(b.due().is_none());
        assert!(b.take().is_empty());
    }

    #[test]
    fn a_full_batch_goes_at_once_by_count_or_by_bytes() {
        let now = Instant::now();
        let mut b = EventBatch::default();
        for i in 1..MAX_BATCH_EVENTS {
            assert!(!b.push(line(i, 4), now), "event {i}");
        }
        assert!(b.push(line(MAX_BATCH_EVENTS, 4), now));
        assert_eq!(b.take().len(), MAX_BATCH_EVENTS);
        // Four 64 KiB lines fill the byte bound.
        for i in 1..4 {
            assert!(!b.push(line(i, 64 << 10), now), "line {i}");
        }
        assert!(b.push(line(4, 64 << 10), now));
        assert_eq!(b.take().len(), 4);
    }
}

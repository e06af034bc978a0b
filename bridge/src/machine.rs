//! The virtual machine's calls for a process — PVM's `pvm_spawn`,
//! `pvm_kill`, `pvm_sendsig`, `pvm_config`, `pvm_tasks`, `pvm_addhosts`,
//! `pvm_delhosts` and `pvm_notify` — over a console connection to the
//! process's vmd, as the process's user: the vmd decides what the caller
//! may act on, as it does for the `isthmus` console (a job is its owner's
//! and the administrator's; hosts are the operator's).
//!
//! Notifications come through a [`Subscription`]: the vmd's watch stream,
//! read by a task on the session's runtime into a bounded queue that the
//! program drains when it asks ([`Subscription::next`], with a deadline).
//! Nothing interrupts a program that never asks. When the program leaves
//! the queue full, newer events are dropped and counted, and the count is
//! delivered in their place ([`Delivery::Lost`]), in order.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use isthmus_client::Console;
use isthmus_types::event::{Notification, WatchFilter};
use isthmus_types::host::{HostDecl, HostView};
use isthmus_types::job::{Job, JobId, SpawnSpec, Spawned};

use crate::error::{BridgeError, Result};
use crate::vm::{vm_error, Bridge};

/// How long a call to the resource manager may take (a spawn waits for its
/// tasker's answer and the job's row on disk; adding a host may start it).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Events a subscription holds for a program that has not asked for them.
pub const QUEUE_LIMIT: usize = 4096;

impl Bridge {
    /// The resource manager's calls, as this process's user: a console
    /// connection to its vmd, opened once.
    fn console(&self) -> Result<Console> {
        let mut slot = self
            .console
            .lock()
            .map_err(|_| BridgeError::Protocol("console lock poisoned".into()))?;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = self.call("console", Console::connect(&self.vmd_addr))?;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Runs one console call on the session's runtime, within [`CALL_TIMEOUT`].
    fn call<T>(
        &self,
        op: &'static str,
        f: impl Future<Output = isthmus_client::Result<T>>,
    ) -> Result<T> {
        // The timer belongs to the runtime: made inside it.
        match self
            .rt
            .block_on(async { tokio::time::timeout(CALL_TIMEOUT, f).await })
        {
            Ok(r) => r.map_err(|e| vm_error(op, e)),
            Err(_) => Err(BridgeError::Vm {
                op,
                message: format!("the vmd did not answer within {CALL_TIMEOUT:?}"),
            }),
        }
    }

    /// Starts a job of the virtual machine: its id and host once a tasker
    /// accepted it. The job is this process's user's.
    pub fn spawn_job(&self, spec: SpawnSpec) -> Result<Spawned> {
        let console = self.console()?;
        self.call("spawn", console.spawn(spec))
    }

    /// Kills a job this process's user owns.
    pub fn kill_job(&self, job: JobId) -> Result<()> {
        let console = self.console()?;
        self.call("kill", console.kill(job))
    }

    /// Sends `signal` to a job's ranks (`rank`: one of them); returns how
    /// many ranks were known running when it was sent.
    pub fn signal_job(&self, job: JobId, signal: i32, rank: Option<u32>) -> Result<u32> {
        let console = self.console()?;
        self.call("signal", console.signal(job, signal, rank))
    }

    /// This process's user's jobs holding slots, or (`all`) also those that
    /// ended recently.
    pub fn jobs(&self, all: bool) -> Result<Vec<Job>> {
        let console = self.console()?;
        self.call("jobs", console.jobs(all))
    }

    /// A job of this process's user, running or recently ended.
    pub fn job(&self, job: JobId) -> Result<Option<Job>> {
        Ok(self.jobs(true)?.into_iter().find(|j| j.id == job))
    }

    /// The virtual machine's hosts (`pvm_config`).
    pub fn hosts(&self) -> Result<Vec<HostView>> {
        let console = self.console()?;
        self.call("hosts", console.hosts())
    }

    /// Declares a host (or starts it, if the vmd has a host-start command).
    pub fn add_host(&self, host: HostDecl) -> Result<HostView> {
        let console = self.console()?;
        self.call("add host", console.add_host(host))
    }

    /// Deletes a host; returns how many of its jobs were lost.
    pub fn delete_host(&self, name: &str) -> Result<u32> {
        let console = self.console()?;
        self.call("delete host", console.delete_host(name))
    }

    /// Subscribes to the notifications `filter` asks for. Every event that
    /// happens after this returns is delivered (or counted as lost).
    pub fn subscribe(&self, filter: WatchFilter) -> Result<Subscription> {
        let console = self.console()?;
        let mut events = self.call("watch", console.watch(filter))?;
        let shared = Arc::new(Shared::default());
        let feed = shared.clone();
        let task = self.rt.spawn(async move {
            let end = loop {
                match events.next().await {
                    Ok(Some(n)) => feed.push(Delivery::Event(n)),
                    Ok(None) => break "the vmd ended the notification stream".to_string(),
                    Err(e) => break format!("the notification stream failed: {e}"),
                }
            };
            feed.end(end);
        });
        Ok(Subscription { shared, task })
    }
}

/// What [`Subscription::next`] hands over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// A notification.
    Event(Notification),
    /// This many notifications were dropped here: the program left
    /// [`QUEUE_LIMIT`] of them unread.
    Lost(u64),
    /// The stream ended (the vmd went away or closed it, or the
    /// subscription was closed); nothing more will come.
    Ended(String),
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Delivery>,
    ended: Option<String>,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, d: Delivery) {
        let mut q = self.lock();
        if q.ended.is_some() {
            return;
        }
        if q.items.len() < QUEUE_LIMIT {
            q.items.push_back(d);
        } else if let Some(Delivery::Lost(n)) = q.items.back_mut() {
            *n += 1;
        } else {
            // One place past the limit for the count, so it stays in order.
            q.items.push_back(Delivery::Lost(1));
        }
        drop(q);
        self.ready.notify_all();
    }

    fn end(&self, why: String) {
        let mut q = self.lock();
        q.ended.get_or_insert(why);
        drop(q);
        self.ready.notify_all();
    }
}

/// Notifications of the virtual machine, held until the program asks.
/// Dropping it ends the watch.
pub struct Subscription {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Subscription {
    /// The next delivery, waiting up to `timeout` (zero: only look); `None`
    /// if nothing came. Once the stream ended, and what it delivered was
    /// taken, every call returns [`Delivery::Ended`] at once.
    pub fn next(&self, timeout: Duration) -> Option<Delivery> {
        let deadline = Instant::now().checked_add(timeout);
        let mut q = self.shared.lock();
        loop {
            if let Some(d) = q.items.pop_front() {
                return Some(d);
            }
            if let Some(why) = &q.ended {
                return Some(Delivery::Ended(why.clone()));
            }
            let left = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                return None;
            }
            q = self
                .shared
                .ready
                .wait_timeout(q, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Ends the watch: a thread waiting in [`Subscription::next`] gets
    /// [`Delivery::Ended`] at once.
    pub fn close(&self) {
        self.task.abort();
        self.shared.end("the subscription was closed".into());
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.close();
    }
}

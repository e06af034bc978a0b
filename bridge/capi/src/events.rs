//! `isthmus.h`'s notifications — PVM's `pvm_notify` — over
//! `isthmus_bridge::machine`'s subscriptions: `Isthmus_Subscribe` asks the
//! vmd for the kinds of event wanted (hosts added, deleted, failed; task
//! and job exits, of some jobs or all; group changes, of one group or
//! all), and the program takes them with `Isthmus_Event_next` and a
//! deadline, or gets them through a callback on a thread of the library
//! (`Isthmus_Subscribe_callback`). Nothing reaches a program that did not
//! subscribe, and a subscription's events wait in its queue until asked
//! for: no signal, no interrupted call.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use isthmus_bridge::{Delivery, Subscription};
use isthmus_types::event::{NotificationKind, WatchEvent, WatchFilter};
use isthmus_types::group::GroupEventKind;

use crate::errors::Class;
use crate::machine::{
    exit_of, fail, fail_with, job_state, mpi_running, optional, put_text, ready, JobId,
};
use crate::state;

/// `ISTHMUS_EVENT_*`: the kinds a program subscribes to (a mask) and that
/// an event has.
pub const HOST_ADDED: c_int = 0x01;
pub const HOST_DELETED: c_int = 0x02;
pub const HOST_FAILED: c_int = 0x04;
pub const TASK_EXIT: c_int = 0x08;
pub const JOB_EXIT: c_int = 0x10;
pub const GROUP: c_int = 0x20;
const ALL: c_int = 0x3f;
/// Delivered, never subscribed to: events were dropped (`lost` says how
/// many), or the stream ended (`reason` says why).
pub const LOST: c_int = 0x100;
pub const ENDED: c_int = 0x200;

/// The mask's bits as the vmd's kinds.
const KINDS: [(c_int, NotificationKind); 6] = [
    (HOST_ADDED, NotificationKind::HostAdded),
    (HOST_DELETED, NotificationKind::HostDeleted),
    (HOST_FAILED, NotificationKind::HostFailed),
    (TASK_EXIT, NotificationKind::TaskExit),
    (JOB_EXIT, NotificationKind::JobExit),
    (GROUP, NotificationKind::Group),
];

/// `Isthmus_Event`.
#[repr(C)]
pub struct Event {
    pub kind: c_int,
    pub job: JobId,
    pub rank: c_int,
    pub exit_kind: c_int,
    pub exit_value: c_int,
    pub state: c_int,
    pub group_change: c_int,
    pub instance: c_int,
    pub size: c_int,
    pub lost: i64,
    pub host: [c_char; 256],
    pub group: [c_char; 256],
    pub reason: [c_char; 512],
}

impl Event {
    fn empty() -> Event {
        Event {
            kind: 0,
            job: -1,
            rank: -1,
            exit_kind: 0,
            exit_value: 0,
            state: -1,
            group_change: 0,
            instance: -1,
            size: -1,
            lost: 0,
            host: [0; 256],
            group: [0; 256],
            reason: [0; 512],
        }
    }
}

fn signed(n: Option<u32>) -> c_int {
    n.and_then(|n| c_int::try_from(n).ok()).unwrap_or(-1)
}

/// The C event of a delivery; `None` for what a subscriber never asked
/// for (snapshots, output).
fn event_of(d: Delivery) -> Option<Event> {
    let mut e = Event::empty();
    match d {
        Delivery::Lost(n) => {
            e.kind = LOST;
            e.lost = i64::try_from(n).unwrap_or(i64::MAX);
        }
        Delivery::Ended(why) => {
            e.kind = ENDED;
            put_text(&mut e.reason, &why);
        }
        Delivery::Event(n) => match n.event {
            WatchEvent::HostAdded(h) => {
                e.kind = HOST_ADDED;
                put_text(&mut e.host, &h.name);
            }
            WatchEvent::HostDeleted { host, reason } => {
                e.kind = HOST_DELETED;
                put_text(&mut e.host, &host.name);
                put_text(&mut e.reason, &reason);
            }
            WatchEvent::HostFailed { host, reason } => {
                e.kind = HOST_FAILED;
                put_text(&mut e.host, &host.name);
                put_text(&mut e.reason, &reason);
            }
            WatchEvent::TaskExit {
                job,
                rank,
                exit,
                host,
            } => {
                e.kind = TASK_EXIT;
                e.job = JobId::try_from(job).unwrap_or(-1);
                e.rank = signed(rank);
                (e.exit_kind, e.exit_value) = exit_of(Some(exit));
                put_text(&mut e.host, &host);
            }
            WatchEvent::JobExit {
                job,
                state,
                exit,
                reason,
                host,
            } => {
                e.kind = JOB_EXIT;
                e.job = JobId::try_from(job).unwrap_or(-1);
                e.state = job_state(state);
                (e.exit_kind, e.exit_value) = exit_of(exit);
                put_text(&mut e.host, &host);
                put_text(&mut e.reason, &reason);
            }
            WatchEvent::Group(g) => {
                e.kind = GROUP;
                e.group_change = match g.kind {
                    GroupEventKind::Joined => 1,
                    GroupEventKind::Left => 2,
                    GroupEventKind::Frozen => 3,
                    GroupEventKind::Destroyed => 4,
                    GroupEventKind::MemberDied => 5,
                };
                e.instance = signed(g.member.as_ref().map(|m| m.instance));
                e.size = signed(Some(g.size));
                put_text(&mut e.group, &g.group);
                if g.group_broken {
                    put_text(&mut e.reason, "the frozen group broke");
                }
            }
            WatchEvent::Output { .. } | WatchEvent::Job(_) | WatchEvent::Synced => return None,
        },
    }
    Some(e)
}

/// A callback and its argument, as the program gave them.
#[derive(Clone, Copy)]
struct Callback {
    function: unsafe extern "C" fn(*const Event, *mut c_void),
    arg: *mut c_void,
}

// SAFETY: the program hands the pointer to the library's thread by
// calling Isthmus_Subscribe_callback, whose contract says the callback
// and its argument may be used from another thread.
unsafe impl Send for Callback {}

/// One subscription of the process.
struct Entry {
    subscription: Arc<Subscription>,
    /// The callback's thread, if it has one; stopped by `stop`.
    thread: Option<(JoinHandle<()>, Arc<AtomicBool>)>,
}

static SUBSCRIPTIONS: Mutex<Option<(c_int, HashMap<c_int, Entry>)>> = Mutex::new(None);

fn add(entry: Entry) -> c_int {
    let mut all = SUBSCRIPTIONS.lock().unwrap_or_else(|p| p.into_inner());
    let (next, map) = all.get_or_insert_with(|| (1, HashMap::new()));
    let id = *next;
    *next = next.wrapping_add(1).max(1);
    map.insert(id, entry);
    id
}

/// How long the callback thread waits before looking whether it must stop.
const CALLBACK_TICK: Duration = Duration::from_millis(100);

thread_local! {
    /// Set on a callback thread: an unsubscribe from inside the callback
    /// must not wait for the thread it runs on.
    static ON_CALLBACK_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn run_callback(sub: Arc<Subscription>, cb: Callback, stop: Arc<AtomicBool>) {
    ON_CALLBACK_THREAD.with(|c| c.set(true));
    while !stop.load(Ordering::SeqCst) {
        let Some(d) = sub.next(CALLBACK_TICK) else {
            continue;
        };
        let ended = matches!(d, Delivery::Ended(_));
        if ended && stop.load(Ordering::SeqCst) {
            return;
        }
        if let Some(e) = event_of(d) {
            // SAFETY: the program's callback with its own argument, as it
            // registered them; `e` lives for the call.
            unsafe { (cb.function)(&e, cb.arg) };
        }
        if ended {
            return;
        }
    }
}

/// Reads the subscription's arguments into a filter.
///
/// # Safety
/// `jobs` holds `njobs` ids (or is NULL with 0); `group` null or a C string.
unsafe fn filter(
    kinds: c_int,
    jobs: *const JobId,
    njobs: c_int,
    group: *const c_char,
) -> Result<WatchFilter, String> {
    if kinds & !ALL != 0 || kinds == 0 {
        return Err(format!(
            "kinds {kinds:#x} is not a mask of ISTHMUS_EVENT_* kinds to subscribe to \
             (HOST_ADDED 0x1, HOST_DELETED 0x2, HOST_FAILED 0x4, TASK_EXIT 0x8, JOB_EXIT 0x10, \
             GROUP 0x20)"
        ));
    }
    let n = usize::try_from(njobs).map_err(|_| format!("njobs is {njobs}"))?;
    if jobs.is_null() && n > 0 {
        return Err(format!("jobs is NULL and njobs is {n}"));
    }
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: i < njobs, the caller's contract.
        let j = unsafe { *jobs.add(i) };
        ids.push(u64::try_from(j).map_err(|_| format!("jobs[{i}] = {j} is not a job id"))?);
    }
    // SAFETY: forwarded.
    let group = unsafe { optional(group, "group") }?;
    Ok(WatchFilter {
        groups: group.into_iter().collect(),
        kinds: KINDS
            .iter()
            .filter(|(bit, _)| kinds & bit != 0)
            .map(|(_, k)| *k)
            .collect(),
        jobs: ids,
        current_state: false,
    })
}

/// Both forms of subscribing.
///
/// # Safety
/// As `Isthmus_Subscribe`.
unsafe fn subscribe(
    call: &str,
    kinds: c_int,
    jobs: *const JobId,
    njobs: c_int,
    group: *const c_char,
    callback: Option<Callback>,
    out: *mut c_int,
) -> c_int {
    if let Err(code) = ready(call, out.is_null(), "subscription") {
        return code;
    }
    // SAFETY: forwarded.
    let filter = match unsafe { filter(kinds, jobs, njobs, group) } {
        Ok(f) => f,
        Err(why) => return fail(call, Class::InvalidArgument, &why),
    };
    let b = match state::bridge() {
        Ok(b) => b,
        Err(e) => return fail(call, Class::Vm, &format!("no vmd reachable ({e})")),
    };
    let subscription = match b.subscribe(filter) {
        Ok(s) => Arc::new(s),
        Err(e) => return fail_with(call, &e),
    };
    let thread = match callback {
        None => None,
        Some(cb) => {
            let stop = Arc::new(AtomicBool::new(false));
            let (sub, flag) = (subscription.clone(), stop.clone());
            match std::thread::Builder::new()
                .name("isthmus-events".into())
                .spawn(move || run_callback(sub, cb, flag))
            {
                Ok(t) => Some((t, stop)),
                Err(e) => {
                    return fail(
                        call,
                        Class::Other,
                        &format!("cannot start the callback thread: {e}"),
                    )
                }
            }
        }
    };
    let id = add(Entry {
        subscription,
        thread,
    });
    // SAFETY: non-null, the caller's.
    unsafe { *out = id };
    0
}

/// # Safety
/// `jobs` holds `njobs` ids (or is NULL with 0); `group` null or a C
/// string; `subscription` a valid out-pointer.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Subscribe(
    kinds: c_int,
    jobs: *const JobId,
    njobs: c_int,
    group: *const c_char,
    subscription: *mut c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        subscribe(
            "Isthmus_Subscribe",
            kinds,
            jobs,
            njobs,
            group,
            None,
            subscription,
        )
    }
}

/// # Safety
/// As `Isthmus_Subscribe`; `callback` may be called with `arg` from a
/// thread of the library until `Isthmus_Unsubscribe` returns.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Subscribe_callback(
    kinds: c_int,
    jobs: *const JobId,
    njobs: c_int,
    group: *const c_char,
    callback: Option<unsafe extern "C" fn(*const Event, *mut c_void)>,
    arg: *mut c_void,
    subscription: *mut c_int,
) -> c_int {
    const CALL: &str = "Isthmus_Subscribe_callback";
    let Some(function) = callback else {
        if let Err(code) = mpi_running(CALL) {
            return code;
        }
        return fail(CALL, Class::InvalidArgument, "callback is NULL");
    };
    // SAFETY: forwarded.
    unsafe {
        subscribe(
            CALL,
            kinds,
            jobs,
            njobs,
            group,
            Some(Callback { function, arg }),
            subscription,
        )
    }
}

/// # Safety
/// `event` is a valid out-pointer.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Event_next(
    subscription: c_int,
    timeout: f64,
    event: *mut Event,
) -> c_int {
    const CALL: &str = "Isthmus_Event_next";
    if let Err(code) = ready(CALL, event.is_null(), "event") {
        return code;
    }
    if !(timeout.is_finite() && timeout >= 0.0) {
        return fail(
            CALL,
            Class::InvalidArgument,
            &format!("timeout {timeout} is not a number of seconds >= 0"),
        );
    }
    let sub = {
        let all = SUBSCRIPTIONS.lock().unwrap_or_else(|p| p.into_inner());
        match all.as_ref().and_then(|(_, m)| m.get(&subscription)) {
            None => {
                return fail(
                    CALL,
                    Class::InvalidArgument,
                    &format!("no subscription {subscription}"),
                )
            }
            Some(e) if e.thread.is_some() => {
                return fail(
                    CALL,
                    Class::InvalidArgument,
                    &format!(
                        "subscription {subscription} delivers to its callback \
                         (Isthmus_Subscribe_callback)"
                    ),
                )
            }
            Some(e) => e.subscription.clone(),
        }
    };
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout.min(1e7));
    let got = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match sub.next(left) {
            // Kinds the program never asked for are skipped.
            Some(d) => match event_of(d) {
                Some(e) => break e,
                None => continue,
            },
            None => break Event::empty(),
        }
    };
    // SAFETY: non-null, the caller's.
    unsafe { event.write(got) };
    0
}

/// # Safety
/// No pointers.
#[no_mangle]
pub unsafe extern "C" fn Isthmus_Unsubscribe(subscription: c_int) -> c_int {
    const CALL: &str = "Isthmus_Unsubscribe";
    if let Err(code) = mpi_running(CALL) {
        return code;
    }
    let entry = {
        let mut all = SUBSCRIPTIONS.lock().unwrap_or_else(|p| p.into_inner());
        all.as_mut().and_then(|(_, m)| m.remove(&subscription))
    };
    let Some(entry) = entry else {
        return fail(
            CALL,
            Class::InvalidArgument,
            &format!("no subscription {subscription}"),
        );
    };
    if let Some((thread, stop)) = entry.thread {
        stop.store(true, Ordering::SeqCst);
        entry.subscription.close();
        // From inside the callback the thread ends when it returns.
        if !ON_CALLBACK_THREAD.with(|c| c.get()) {
            let _ = thread.join();
        }
    } else {
        entry.subscription.close();
    }
    0
}

/// Ends every subscription (at `MPI_Finalize`): their threads stop.
pub fn close_all() {
    let entries: Vec<Entry> = {
        let mut all = SUBSCRIPTIONS.lock().unwrap_or_else(|p| p.into_inner());
        all.as_mut()
            .map(|(_, m)| m.drain().map(|(_, e)| e).collect())
            .unwrap_or_default()
    };
    for e in entries {
        e.subscription.close();
        if let Some((thread, stop)) = e.thread {
            stop.store(true, Ordering::SeqCst);
            if !ON_CALLBACK_THREAD.with(|c| c.get()) {
                let _ = thread.join();
            }
        }
    }
}

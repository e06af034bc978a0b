//! How a thread waits for another process (`ISTHMUS_WAIT`): the one
//! policy that the shared-memory ring (`transport::shm`) and the C
//! library's waits (`isthmus-capi`) both follow. It knows nothing of what
//! is waited for: a caller polls its own condition and asks this module
//! whether to go on polling, then blocks in its own way (a descriptor, a
//! futex, a sleep).
//!
//! * [`WaitMode::Poll`] never sleeps: a waiting thread polls until its
//!   condition holds, as MPI libraries do by default — the lowest latency
//!   when each rank has a core of its own.
//! * [`WaitMode::Block`] sleeps at once.
//! * [`WaitMode::Adaptive`] (the default) polls for about as long as a
//!   wake-up costs on this host, then sleeps: never more than twice the
//!   cost of the better choice made with hindsight (the ski-rental bound).
//!   What a wake-up costs is measured, not assumed: the ring's writer
//!   stamps the time when it rings a sleeping reader's doorbell, and the
//!   reader, once running again, reports how long that took
//!   ([`observe_wake`]); a running average of those is the poll budget
//!   ([`budget`], between [`MIN_POLL`] and [`MAX_POLL`]). On an idle host
//!   a wake-up takes tens of microseconds; on a host with more runnable
//!   threads than cores it takes up to a time slice, and the budget grows
//!   to match.
//!
//! While polling, a thread yields its core every few microseconds
//! (`sched_yield`): with nothing else runnable the call returns at once
//! (a fraction of a microsecond); with other ranks waiting for the core —
//! the ranks of a job spinning in their own MPI while their leader waits
//! for the bridge — it hands the core over, so jobs that share cores keep
//! their speed. A yield that kept us off the core for long does not end
//! the poll by itself: an earlier version slept then ("the core is taken
//! by work that does not yield back"), and beside one CPU-bound process
//! the shared-memory latency went from 1.2 µs to 55 µs, each message
//! paying a wake-up that polling on would have saved.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use tracing::warn;

/// How a waiting thread spends its time (`ISTHMUS_WAIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Never sleep: poll (yielding the core to runnable work) until done.
    Poll,
    /// Poll about as long as a wake-up costs here, then sleep (default).
    Adaptive,
    /// Sleep at once.
    Block,
}

/// A value of `ISTHMUS_WAIT` that is none of the accepted ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ISTHMUS_WAIT={value:?} is not one of poll, adaptive, block")]
pub struct BadWaitMode {
    /// The value as given.
    pub value: String,
}

impl WaitMode {
    /// The environment variable that chooses it.
    pub const ENV: &'static str = "ISTHMUS_WAIT";
    /// The mode unless `ISTHMUS_WAIT` says otherwise.
    pub const DEFAULT: WaitMode = WaitMode::Adaptive;

    /// `poll`, `adaptive` or `block` (surrounding blanks ignored).
    pub fn parse(s: &str) -> Result<WaitMode, BadWaitMode> {
        match s.trim() {
            "poll" => Ok(WaitMode::Poll),
            "adaptive" => Ok(WaitMode::Adaptive),
            "block" => Ok(WaitMode::Block),
            _ => Err(BadWaitMode {
                value: s.to_owned(),
            }),
        }
    }

    /// `ISTHMUS_WAIT`, else the default; a bad value is logged (warn,
    /// naming the variable and the accepted values) and the default used.
    pub fn from_env() -> WaitMode {
        let Some(v) = std::env::var_os(Self::ENV) else {
            return Self::DEFAULT;
        };
        match Self::parse(&v.to_string_lossy()) {
            Ok(m) => m,
            Err(e) => {
                warn!(variable = Self::ENV, "{e}; using adaptive");
                Self::DEFAULT
            }
        }
    }

    fn code(self) -> u8 {
        match self {
            WaitMode::Poll => 1,
            WaitMode::Adaptive => 2,
            WaitMode::Block => 3,
        }
    }
}

/// The process's mode: 0 until first read from the environment.
static MODE: AtomicU8 = AtomicU8::new(0);

/// The process's wait mode: `ISTHMUS_WAIT`, read at the first call.
pub fn mode() -> WaitMode {
    match MODE.load(Ordering::Relaxed) {
        1 => WaitMode::Poll,
        2 => WaitMode::Adaptive,
        3 => WaitMode::Block,
        _ => {
            let m = WaitMode::from_env();
            // A racing first call read the same environment.
            MODE.store(m.code(), Ordering::Relaxed);
            m
        }
    }
}

/// Sets the process's wait mode (instead of `ISTHMUS_WAIT`), for every
/// wait that starts after.
pub fn set_mode(m: WaitMode) {
    MODE.store(m.code(), Ordering::Relaxed);
}

/// The least an adaptive wait polls: a peer's answer is a wake-up of
/// *its* side and some work away, not only ours, so a budget of our
/// measured wake-up alone (10–20 µs on an idle core) slept before most
/// answers of a ping-pong came (on a loaded host, 8 B: 8 µs, 1 KiB: 59 µs
/// median, against 1.6 and 2.1 µs with this floor, the fixed poll's old
/// value).
pub const MIN_POLL: Duration = Duration::from_micros(50);
/// The most an adaptive wait polls, however dear a wake-up was.
pub const MAX_POLL: Duration = Duration::from_millis(2);
/// The budget before any wake-up was measured (an idle core's wake-up).
const INITIAL_WAKE: Duration = Duration::from_micros(50);
/// Longer observations are taken as this (a clock glitch or a peer's
/// garbage stamp must not make every later wait poll for long).
const MAX_OBSERVED: Duration = Duration::from_millis(20);
/// Polls between looks at the clock (and yields).
const ROUND: u32 = 32;

/// Running average of observed wake-up latencies, in nanoseconds.
static WAKE_NS: AtomicU64 = AtomicU64::new(INITIAL_WAKE.as_nanos() as u64);

/// A thread that slept was woken `latency` after its event: one more
/// sample of what a wake-up costs on this host (weight 1/8).
pub fn observe_wake(latency: Duration) {
    let x = latency.min(MAX_OBSERVED).as_nanos() as u64;
    // Lost updates between racing observers only drop a sample.
    let old = WAKE_NS.load(Ordering::Relaxed);
    let new = old - old / 8 + x / 8;
    WAKE_NS.store(new, Ordering::Relaxed);
}

/// What a wake-up costs here, as measured so far.
pub fn wake_cost() -> Duration {
    Duration::from_nanos(WAKE_NS.load(Ordering::Relaxed))
}

/// How long a wait that starts now polls before it sleeps: unbounded
/// (None) for `poll`, zero for `block`, about a wake-up's cost for
/// `adaptive` — or, inside [`expecting`], at least the time the answer is
/// expected to take (both at most [`MAX_POLL`]).
pub fn budget() -> Option<Duration> {
    match mode() {
        WaitMode::Poll => None,
        WaitMode::Block => Some(Duration::ZERO),
        WaitMode::Adaptive => Some(adaptive_budget(wake_cost(), EXPECTED.get())),
    }
}

/// An adaptive wait's poll: a wake-up's cost (`wake`), or the answer's
/// expected time (`expected`) if longer, within [`MIN_POLL`]..=[`MAX_POLL`].
fn adaptive_budget(wake: Duration, expected: Duration) -> Duration {
    wake.max(expected).clamp(MIN_POLL, MAX_POLL)
}

thread_local! {
    /// How long the answer this thread waits for is known to take at
    /// least (see [`expecting`]); zero outside.
    static EXPECTED: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

/// Runs `f` (a wait) knowing that its answer takes about `work`: the
/// peer's own work before it can answer, such as reading a large message
/// out of our memory. An adaptive wait then polls at least that long
/// before it sleeps — sleeping through work whose length is known only
/// adds a wake-up to it (a 1 MiB single-copy send: the receiver's read
/// takes 60–80 µs here, more than the wake-up budget, and every send
/// paid a wake-up of 20 µs on top).
pub fn expecting<R>(work: Duration, f: impl FnOnce() -> R) -> R {
    struct Restore(Duration);
    impl Drop for Restore {
        fn drop(&mut self) {
            EXPECTED.set(self.0);
        }
    }
    let _restore = Restore(EXPECTED.replace(work));
    f()
}

/// Nanoseconds of `CLOCK_MONOTONIC`: one clock for every process of the
/// host, so a stamp one process writes (the ring's doorbell time) can be
/// compared with another's reading.
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// The wake-up latency a sleeper armed at `armed_ns` sees now for an
/// event stamped `event_ns` (both [`now_ns`]); ignored unless the stamp
/// lies between the two (a stale or forged stamp says nothing).
pub fn observe_wake_since(armed_ns: u64, event_ns: u64) {
    if let Some(d) = wake_sample(armed_ns, event_ns, now_ns()) {
        observe_wake(d);
    }
}

/// The sample a sleeper armed at `armed` and running at `now` takes from
/// an event stamped `event`, if the stamp lies between the two.
fn wake_sample(armed: u64, event: u64, now: u64) -> Option<Duration> {
    (armed <= event && event <= now).then(|| Duration::from_nanos(now - event))
}

/// How often [`core_free`] looks at the host's runnable threads again.
const CORE_FREE_EVERY: Duration = Duration::from_millis(1);

/// When [`core_free`] last looked ([`now_ns`]; 0: never) and what it saw.
static CORE_FREE_AT: AtomicU64 = AtomicU64::new(0);
static CORE_FREE: AtomicU8 = AtomicU8::new(1);

/// Whether a core of this host has nothing to run besides the caller:
/// fewer runnable threads than online CPUs, the caller not counted
/// (`/proc/loadavg`'s fourth field, read at most once a millisecond; true
/// if it cannot be read). A thread that polls a socket instead of
/// sleeping takes its core from nobody then; when every core has work,
/// the poll takes it from that work — across two network namespaces the
/// sender, whose own system call delivers the bytes: beside one CPU-bound
/// process a reader that polled its socket halved a stream's bandwidth.
pub fn core_free() -> bool {
    let now = now_ns();
    let at = CORE_FREE_AT.load(Ordering::Relaxed);
    if at != 0 && now.saturating_sub(at) < CORE_FREE_EVERY.as_nanos() as u64 {
        return CORE_FREE.load(Ordering::Relaxed) != 0;
    }
    CORE_FREE_AT.store(now, Ordering::Relaxed);
    let free = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| runnable_besides_caller(&s))
        .is_none_or(|others| others < online_cpus());
    CORE_FREE.store(u8::from(free), Ordering::Relaxed);
    free
}

/// Runnable threads but the caller, from the text of `/proc/loadavg`
/// ("0.52 0.58 0.59 3/467 1234": the fourth field's first number counts
/// the reader itself).
fn runnable_besides_caller(loadavg: &str) -> Option<u64> {
    let field = loadavg.split_whitespace().nth(3)?;
    let running: u64 = field.split('/').next()?.parse().ok()?;
    Some(running.saturating_sub(1))
}

/// CPUs online on this host (what `/proc/loadavg` counts runnable threads over).
fn online_cpus() -> u64 {
    static CPUS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| {
        // SAFETY: sysconf reads a system value; no pointers.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(1)
    })
}

/// One wait's polling: call [`Spin::again`] each time the condition is
/// found false; it says whether to look again or to block now.
pub struct Spin {
    start: Instant,
    budget: Option<Duration>,
    n: u32,
}

impl Default for Spin {
    fn default() -> Self {
        Spin::new()
    }
}

impl Spin {
    /// A wait starting now, with the process's mode and current budget.
    pub fn new() -> Spin {
        Spin::with_budget(budget())
    }

    /// A wait polling at most `budget` (None: without end).
    pub fn with_budget(budget: Option<Duration>) -> Spin {
        Spin {
            start: Instant::now(),
            budget,
            n: 0,
        }
    }

    /// Whether this wait polls at all.
    pub fn polls(&self) -> bool {
        self.budget != Some(Duration::ZERO)
    }

    /// The condition was false: true to look again (after a pause or a
    /// yield), false to block now.
    pub fn again(&mut self) -> bool {
        let Some(budget) = self.budget else {
            self.pause();
            return true;
        };
        if budget.is_zero() {
            return false;
        }
        // The clock only with each yield: reading it on every look took a
        // quarter of a polling thread's time (`perf`, the ping-pong of
        // `bench/capi.sh`), time a message that arrives waits to be seen.
        !self.pause() || self.start.elapsed() < budget
    }

    /// A short pause; every [`ROUND`] of them a yield (then true).
    fn pause(&mut self) -> bool {
        self.n = self.n.wrapping_add(1);
        if self.n.is_multiple_of(ROUND) {
            std::thread::yield_now();
            true
        } else {
            std::hint::spin_loop();
            false
        }
    }
}

/// Polls `ready` as [`Spin`] says, but at most `chunk` (also in `poll`
/// mode, so that a caller that never sleeps still looks at its other
/// duties in between): true as soon as it holds, false when the caller
/// should block (or, never sleeping, do those duties and poll again).
pub fn poll_until_within(chunk: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let budget = budget().map_or(chunk, |b| b.min(chunk));
    let mut spin = Spin::with_budget(Some(budget));
    loop {
        if ready() {
            return true;
        }
        if !spin.again() {
            return false;
        }
    }
}

/// For waits with nothing to block on (the C library's waits over native
/// and bridge requests together, which must call MPI to progress): poll
/// while [`Spin`] says so, then sleep a little longer each time, up to
/// 1 ms (`block`: sleeping from the first pause; `poll`: never).
pub struct Backoff {
    spin: Spin,
    polling: bool,
    sleep: Duration,
}

/// The longest a [`Backoff`] sleeps at a time.
const MAX_SLEEP: Duration = Duration::from_millis(1);

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

impl Backoff {
    pub fn new() -> Backoff {
        let spin = Spin::new();
        Backoff {
            polling: spin.polls(),
            spin,
            sleep: Duration::from_micros(1),
        }
    }

    /// Nothing was done yet: wait a little before looking again.
    pub fn pause(&mut self) {
        if self.polling {
            if self.spin.again() {
                return;
            }
            self.polling = false;
        }
        std::thread::sleep(self.sleep);
        self.sleep = (self.sleep * 2).min(MAX_SLEEP);
    }
}

/// The pauses between two tests of something no sleeper can be woken for
/// (an MPI request of the job's own MPI; a nonblocking collective's
/// schedule, which only the waiting thread advances): in `poll` and
/// `adaptive`, a spin that yields the core every few microseconds, for
/// good (a yield with nothing else runnable returns at once); in `block`,
/// sleeps of growing length. A sleep there is a guess that only adds
/// latency: each of a schedule's stages waited out a [`Backoff`]'s sleep
/// before the next was issued (an `MPI_Ibarrier` and `MPI_Wait` across two
/// jobs cost 270 µs where `MPI_Barrier` costs 16).
pub enum Pause {
    /// `poll`, `adaptive`: spinning, yielding the core every [`ROUND`] looks.
    Yielding(Spin),
    /// `block`: sleeping a little longer each time.
    Sleeping(Backoff),
}

impl Default for Pause {
    fn default() -> Self {
        Pause::new()
    }
}

impl Pause {
    pub fn new() -> Pause {
        match mode() {
            WaitMode::Poll | WaitMode::Adaptive => Pause::Yielding(Spin::with_budget(None)),
            WaitMode::Block => Pause::Sleeping(Backoff::new()),
        }
    }

    /// Nothing happened yet: pause before looking again.
    pub fn pause(&mut self) {
        match self {
            Pause::Yielding(s) => {
                s.again();
            }
            Pause::Sleeping(b) => b.pause(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accepted_values_and_a_bad_one() {
        assert_eq!(WaitMode::parse("poll"), Ok(WaitMode::Poll));
        assert_eq!(WaitMode::parse(" adaptive\n"), Ok(WaitMode::Adaptive));
        assert_eq!(WaitMode::parse("block"), Ok(WaitMode::Block));
        let e = WaitMode::parse("spin").unwrap_err();
        assert_eq!(
            e.to_string(),
            "ISTHMUS_WAIT=\"spin\" is not one of poll, adaptive, block"
        );
        assert!(WaitMode::parse("").is_err());
        assert!(WaitMode::parse("Poll").is_err());
    }

    #[test]
    fn runnable_threads_besides_the_reader_come_from_loadavg() {
        assert_eq!(
            runnable_besides_caller("0.52 0.58 0.59 3/467 1234\n"),
            Some(2)
        );
        assert_eq!(runnable_besides_caller("0.00 0.00 0.00 1/80 9"), Some(0));
        assert_eq!(runnable_besides_caller("0.1 0.2"), None);
        assert_eq!(runnable_besides_caller("0.1 0.2 0.3 x/80 9"), None);
        assert!(online_cpus() >= 1);
    }

    #[test]
    fn a_zero_budget_never_polls_and_none_always_does() {
        let mut s = Spin::with_budget(Some(Duration::ZERO));
        assert!(!s.polls());
        assert!(!s.again());
        let mut s = Spin::with_budget(None);
        assert!(s.polls());
        for _ in 0..1000 {
            assert!(s.again());
        }
    }

    #[test]
    fn a_bounded_spin_ends() {
        let mut s = Spin::with_budget(Some(Duration::from_micros(200)));
        while s.again() {}
    }

    #[test]
    fn an_expected_answer_lengthens_an_adaptive_poll_within_its_bounds() {
        let us = Duration::from_micros;
        assert_eq!(adaptive_budget(us(20), Duration::ZERO), MIN_POLL);
        assert_eq!(adaptive_budget(us(80), Duration::ZERO), us(80));
        assert_eq!(adaptive_budget(us(80), us(130)), us(130));
        assert_eq!(adaptive_budget(us(80), us(30)), us(80));
        assert_eq!(adaptive_budget(us(80), Duration::from_secs(5)), MAX_POLL);
        // The expectation holds for the wait inside `expecting` only.
        let inside = expecting(us(700), || EXPECTED.get());
        assert_eq!((inside, EXPECTED.get()), (us(700), Duration::ZERO));
    }

    #[test]
    fn stale_or_forged_stamps_are_not_samples() {
        assert_eq!(wake_sample(100, 150, 400), Some(Duration::from_nanos(250)));
        // A stamp from before we armed (an old doorbell), one from the future.
        assert_eq!(wake_sample(100, 99, 400), None);
        assert_eq!(wake_sample(100, u64::MAX, 400), None);
    }
}

//! Gives the heap's free memory back to the kernel now and then.
//!
//! glibc's malloc returns memory to the kernel only from the top of its
//! heap: after a burst (thousands of streams opened and closed, a large
//! listing) the freed chunks below a live one stay resident, and the vmd's
//! RSS stays at its peak for good. `malloc_trim(0)` releases every free
//! page, wherever it lies. It walks only the free lists, so a trim of a
//! small heap costs well under a millisecond; it runs on a blocking thread
//! so that the one thread serving sessions never waits for it.

use std::time::Duration;

/// How often the heap is trimmed.
pub const TRIM_PERIOD: Duration = Duration::from_secs(5);

/// Trims the heap every `period` for as long as the runtime runs.
pub fn spawn_trimmer(period: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let _ = tokio::task::spawn_blocking(trim).await;
        }
    });
}

/// Releases the heap's free pages to the kernel.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn trim() {
    // SAFETY: malloc_trim only walks and releases malloc's own free
    // memory under malloc's locks; it takes no pointers from us.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators give memory back on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim() {}

//! The process's `malloc` keeps the memory of large temporary buffers
//! instead of giving it back to the kernel after each use. glibc's
//! defaults give back the top of the heap past 128 KiB (raised only as
//! far as the largest buffer freed so far) and map a fresh region for
//! each large buffer; MPICH's collectives allocate and free their
//! temporary buffers on every call, and the next call faults every page
//! of them in again: on this machine a two-rank `MPI_Reduce` of 1 MiB of
//! doubles took 1.0-1.25 ms with MPICH alone, 235-240 µs with the
//! thresholds below (strace: the heap's top was cut back after every
//! call). Isthmus's coupled collectives wait for those native steps, so
//! at `MPI_Init` [`apply`] sets: buffers up to 4 MiB come from the heap,
//! and the heap keeps up to 64 MiB free at its top (glibc's own ceiling
//! for the thresholds it raises by itself is 32 and 64 MiB).
//!
//! A program or user that chose its own malloc thresholds (`GLIBC_TUNABLES`
//! naming a `glibc.malloc.` tunable, `MALLOC_MMAP_THRESHOLD_`,
//! `MALLOC_TRIM_THRESHOLD_`) keeps them: nothing is set then.

/// Buffers up to this many bytes come from the heap.
const MMAP_THRESHOLD: usize = 4 << 20;
/// The heap keeps this many free bytes at its top.
const TRIM_THRESHOLD: usize = 64 << 20;

/// Whether the environment chose malloc's thresholds itself.
fn chosen_by_user(get: impl Fn(&str) -> Option<String>) -> bool {
    get("GLIBC_TUNABLES").is_some_and(|t| t.contains("glibc.malloc."))
        || get("MALLOC_MMAP_THRESHOLD_").is_some()
        || get("MALLOC_TRIM_THRESHOLD_").is_some()
}

/// Sets the thresholds (see the module's doc) unless the environment
/// chose its own.
pub(crate) fn apply() {
    if chosen_by_user(|k| std::env::var(k).ok()) {
        tracing::debug!("malloc thresholds chosen by the environment: left alone");
        return;
    }
    // SAFETY: mallopt takes the allocator's own lock; these parameters
    // change only where future allocations come from and how much free
    // memory is kept, never a live block.
    let ok = unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
    };
    if !ok {
        tracing::debug!("malloc refused the thresholds; its defaults stay");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_s_own_malloc_settings_are_kept() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert!(!chosen_by_user(env(&[])));
        assert!(!chosen_by_user(env(&[(
            "GLIBC_TUNABLES",
            "glibc.pthread.rseq=0"
        )])));
        assert!(chosen_by_user(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.trim_threshold=0"
        )])));
        assert!(chosen_by_user(env(&[("MALLOC_TRIM_THRESHOLD_", "0")])));
        assert!(chosen_by_user(env(&[("MALLOC_MMAP_THRESHOLD_", "65536")])));
    }
}

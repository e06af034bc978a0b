//! The bridge's one hash: 64-bit FNV-1a, stable across processes, builds and
//! MPI implementations (unlike `std`'s `DefaultHasher`), so two jobs that
//! never talked compute the same value (type signatures, context ids).

/// FNV-1a's offset basis: the seed of a fresh hash.
pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Continue the FNV-1a hash `h` over `bytes` (start with [`FNV_OFFSET`]).
pub(crate) fn fnv1a64(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

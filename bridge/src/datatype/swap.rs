//! Byte-order helpers for the raw fast path.

/// Reverse the byte order of every `unit`-sized chunk of `buf` in place.
/// `buf.len()` must be a multiple of `unit`.
pub(crate) fn swap_in_place(buf: &mut [u8], unit: usize) {
    debug_assert_eq!(buf.len() % unit.max(1), 0);
    match unit {
        0 | 1 => {}
        2 => {
            for c in buf.chunks_exact_mut(2) {
                let v = u16::from_ne_bytes([c[0], c[1]]).swap_bytes();
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        4 => {
            for c in buf.chunks_exact_mut(4) {
                let v = u32::from_ne_bytes(c.try_into().unwrap()).swap_bytes();
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        8 => {
            for c in buf.chunks_exact_mut(8) {
                let v = u64::from_ne_bytes(c.try_into().unwrap()).swap_bytes();
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        16 => {
            for c in buf.chunks_exact_mut(16) {
                let v = u128::from_ne_bytes(c.try_into().unwrap()).swap_bytes();
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        n => {
            for c in buf.chunks_exact_mut(n) {
                c.reverse();
            }
        }
    }
}

/// Copy `src` into a new vector with every `unit`-sized chunk byte-reversed.
pub(crate) fn swapped_copy(src: &[u8], unit: usize) -> Vec<u8> {
    let mut v = src.to_vec();
    swap_in_place(&mut v, unit);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps() {
        let mut b = [1u8, 2, 3, 4, 5, 6, 7, 8];
        swap_in_place(&mut b, 4);
        assert_eq!(b, [4, 3, 2, 1, 8, 7, 6, 5]);
        swap_in_place(&mut b, 4);
        swap_in_place(&mut b, 8);
        assert_eq!(b, [8, 7, 6, 5, 4, 3, 2, 1]);
        let mut b = [1u8, 2, 3];
        swap_in_place(&mut b, 3);
        assert_eq!(b, [3, 2, 1]);
    }
}

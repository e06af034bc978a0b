//! Byte-order helpers for the raw fast path.

/// Reverse the byte order of every `unit`-sized chunk of `buf` in place.
/// `buf.len()` must be a multiple of `unit`.
pub(crate) fn swap_in_place(buf: &mut [u8], unit: usize) {
    debug_assert_eq!(buf.len() % unit.max(1), 0);
    match unit {
        0 | 1 => {}
        2 => {
            for c in buf.chunks_exact_mut(2) {
                if let Ok(c) = <&mut [u8; 2]>::try_from(c) {
                    *c = u16::from_ne_bytes(*c).swap_bytes().to_ne_bytes();
                }
            }
        }
        4 => {
            for c in buf.chunks_exact_mut(4) {
                if let Ok(c) = <&mut [u8; 4]>::try_from(c) {
                    *c = u32::from_ne_bytes(*c).swap_bytes().to_ne_bytes();
                }
            }
        }
        8 => {
            for c in buf.chunks_exact_mut(8) {
                if let Ok(c) = <&mut [u8; 8]>::try_from(c) {
                    *c = u64::from_ne_bytes(*c).swap_bytes().to_ne_bytes();
                }
            }
        }
        16 => {
            for c in buf.chunks_exact_mut(16) {
                if let Ok(c) = <&mut [u8; 16]>::try_from(c) {
                    *c = u128::from_ne_bytes(*c).swap_bytes().to_ne_bytes();
                }
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

/// Apply a per-element swap program to a packed buffer of whole elements.
pub(crate) fn apply_program(buf: &mut [u8], program: &[(usize, usize)], elem_size: usize) {
    if cfg!(target_endian = "big") || elem_size == 0 {
        return; // native order already is external32's
    }
    if let [(unit, _)] = program {
        swap_in_place(buf, *unit);
        return;
    }
    // per-scalar ops (offset, unit) within one element
    let mut ops: Vec<(usize, usize)> = Vec::new();
    let mut off = 0;
    for &(unit, bytes) in program {
        if unit > 1 {
            ops.extend((0..bytes / unit).map(|k| (off + k * unit, unit)));
        }
        off += bytes;
    }
    if ops.is_empty() {
        return;
    }
    for elem in buf.chunks_exact_mut(elem_size) {
        for &(o, unit) in &ops {
            // The ops lie inside an element (they were made from its program).
            let Some(scalar) = elem.get_mut(o..o + unit) else {
                continue;
            };
            let p = scalar.as_mut_ptr();
            // SAFETY: p..p+unit is inside `elem`; unaligned access is used.
            unsafe {
                match unit {
                    2 => (p as *mut u16)
                        .write_unaligned((p as *const u16).read_unaligned().swap_bytes()),
                    4 => (p as *mut u32)
                        .write_unaligned((p as *const u32).read_unaligned().swap_bytes()),
                    8 => (p as *mut u64)
                        .write_unaligned((p as *const u64).read_unaligned().swap_bytes()),
                    _ => std::slice::from_raw_parts_mut(p, unit).reverse(),
                }
            }
        }
    }
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

//! Reading an `MPI_Info` the program passed (ports' and spawn's keys).

use std::ffi::{c_char, c_int, CStr, CString};

use mpi::ffi;

/// Longest value read (MPI_MAX_INFO_VAL is 1024 in Open MPI, 1024 in MPICH).
const MAX_VALUE: usize = 1024;

pub fn null() -> ffi::MPI_Info {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_INFO_NULL }
}

/// The value of `key` in `info`, if `info` is not null and has it.
pub fn value(info: ffi::MPI_Info, key: &str) -> Option<String> {
    if info == null() {
        return None;
    }
    let key = CString::new(key).ok()?;
    let mut value = vec![0 as c_char; MAX_VALUE + 1];
    let mut flag: c_int = 0;
    // SAFETY: `info` is the program's live info; `value` holds MAX_VALUE
    // chars and a NUL; `key` is a C string.
    let rc = unsafe {
        ffi::PMPI_Info_get(
            info,
            key.as_ptr(),
            MAX_VALUE as c_int,
            value.as_mut_ptr(),
            &mut flag,
        )
    };
    if rc != 0 || flag == 0 {
        return None;
    }
    // SAFETY: MPI wrote a NUL-terminated value.
    let s = unsafe { CStr::from_ptr(value.as_ptr()) };
    Some(s.to_string_lossy().into_owned())
}

/// Seconds under the key `isthmus_timeout`, if set and valid.
pub fn timeout(info: ffi::MPI_Info) -> Option<f64> {
    value(info, "isthmus_timeout")?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
}

//! The few things every interposed call needs from `mpi.h`: handle keys,
//! the implementation's special values, and filling an `MPI_Status`.

use std::ffi::c_int;

use isthmus_bridge::{Source, Status, Tag};
use mpi::ffi;

pub use mpi::ffi::{MPI_Comm, MPI_Datatype, MPI_Request, MPI_Status};

/// A communicator as a map key. `MPI_Comm` is a pointer in Open MPI and an
/// integer in MPICH; either fits a `usize`.
pub fn comm_key(c: MPI_Comm) -> usize {
    c.0 as usize
}

/// A request as a map key (pointer or integer, as for communicators).
pub fn request_key(r: MPI_Request) -> usize {
    r.0 as usize
}

pub fn any_source() -> c_int {
    // SAFETY: reading an immutable constant exported by rsmpi's C shim.
    unsafe { ffi::RSMPI_ANY_SOURCE }
}
pub fn any_tag() -> c_int {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_ANY_TAG }
}
pub fn proc_null() -> c_int {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_PROC_NULL }
}
pub fn request_null() -> MPI_Request {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}
pub fn comm_null() -> MPI_Comm {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_COMM_NULL }
}
pub fn byte() -> MPI_Datatype {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_UINT8_T }
}
pub fn status_ignore() -> *mut MPI_Status {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_STATUS_IGNORE }
}
pub fn statuses_ignore() -> *mut MPI_Status {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_STATUSES_IGNORE }
}

/// MPI's source argument of a receive or probe.
pub fn source_of(source: c_int) -> Option<Source> {
    if source == any_source() {
        Some(Source::Any)
    } else {
        u32::try_from(source).ok().map(Source::Rank)
    }
}

/// MPI's tag argument of a receive or probe.
pub fn tag_of(tag: c_int) -> Tag {
    if tag == any_tag() {
        Tag::Any
    } else {
        Tag::Value(tag)
    }
}

/// What a completed receive, probe or request reports.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub source: c_int,
    pub tag: c_int,
    /// Bytes of data in the receiver's representation (MPI's count unit).
    pub bytes: i64,
    pub cancelled: bool,
    /// MPI error code of the operation (MPI_SUCCESS = 0).
    pub error: c_int,
}

impl Outcome {
    pub fn empty() -> Self {
        Outcome {
            source: proc_null(),
            tag: any_tag(),
            bytes: 0,
            cancelled: false,
            error: 0,
        }
    }
    pub fn received(st: &Status, bytes: i64) -> Self {
        Outcome {
            source: st.source as c_int,
            tag: st.tag,
            bytes,
            cancelled: false,
            error: 0,
        }
    }
}

/// Fills `status` (unless it is `MPI_STATUS_IGNORE` or null) as MPI would.
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE`, or points to a writable `MPI_Status`.
pub unsafe fn fill_status(status: *mut MPI_Status, o: &Outcome) {
    if status.is_null() || status == status_ignore() {
        return;
    }
    // SAFETY: the caller guarantees a writable status.
    let s = unsafe { &mut *status };
    s.MPI_SOURCE = o.source;
    s.MPI_TAG = o.tag;
    // MPI leaves the error field alone but in a failure (a single
    // completion never sets it; MPI_ERR_IN_STATUS's callers set every one).
    if o.error != 0 {
        s.MPI_ERROR = o.error;
    }
    // SAFETY: `status` is a valid status; the count is set in bytes, the
    // unit both implementations keep, so MPI_Get_count(status, type) divides
    // by the type's size as for a native receive.
    unsafe {
        ffi::PMPI_Status_set_elements_x(status, byte(), o.bytes as ffi::MPI_Count);
        ffi::PMPI_Status_set_cancelled(status, c_int::from(o.cancelled));
    }
}

/// Copies a status MPI filled into the program's `status` (unless ignore
/// or null), keeping the program's error field as MPI's single completions do.
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE`, or points to a writable `MPI_Status`.
pub unsafe fn copy_status_keeping_error(status: *mut MPI_Status, st: &MPI_Status) {
    if status.is_null() || status == status_ignore() {
        return;
    }
    // SAFETY: the caller guarantees a writable status.
    let s = unsafe { &mut *status };
    let error = s.MPI_ERROR;
    *s = *st;
    s.MPI_ERROR = error;
}

/// A status to be filled by MPI.
pub fn empty_status() -> MPI_Status {
    // SAFETY: MPI_Status is a plain C struct of integers, valid all zero.
    unsafe { std::mem::zeroed() }
}

/// What a native receive's status (from a call that returned `rc`) reports.
pub fn outcome_of(st: &MPI_Status, rc: c_int) -> Outcome {
    let mut bytes: ffi::MPI_Count = 0;
    let mut cancelled: c_int = 0;
    // SAFETY: a status MPI filled; the calls only read it.
    unsafe {
        ffi::PMPI_Get_elements_x(st, byte(), &mut bytes);
        ffi::PMPI_Test_cancelled(st, &mut cancelled);
    }
    Outcome {
        source: st.MPI_SOURCE,
        tag: st.MPI_TAG,
        bytes: bytes as i64,
        cancelled: cancelled != 0,
        error: rc,
    }
}

/// The linked MPI's `MPI_Get_library_version` (which MPI allows before
/// `MPI_Init`), or None when it fails.
pub fn library_version() -> Option<String> {
    let mut buf: Vec<std::ffi::c_char> = vec![0; 8192];
    let mut len: std::ffi::c_int = 0;
    // SAFETY: `buf` holds 8192 characters, at least any MPI's
    // MPI_MAX_LIBRARY_VERSION_STRING (8192 in mpi_abi.h, 256 in Open
    // MPI's); MPI writes at most that many and `len`.
    let rc = unsafe { mpi::ffi::PMPI_Get_library_version(buf.as_mut_ptr(), &mut len) };
    if rc != 0 {
        return None;
    }
    let text: Vec<u8> = buf
        .iter()
        .take(usize::try_from(len).unwrap_or(0))
        .map(|c| *c as u8)
        .collect();
    Some(String::from_utf8_lossy(&text).into_owned())
}

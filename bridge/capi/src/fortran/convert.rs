//! Conversions between Fortran's and C's view of MPI arguments (handles,
//! statuses, request arrays, indices, Open MPI's sentinels) and the helpers
//! of the generated entry points (the implementation at run time, passing a
//! call on to the MPI library's own definition).

use std::ffi::{c_int, c_void};
use std::mem::size_of;
use std::sync::OnceLock;

use mpi::ffi;

use crate::errors::{self, Class};
use crate::mpi_glue::{status_ignore, MPI_Comm, MPI_Request, MPI_Status};

/// A Fortran `INTEGER` (MPI's `MPI_Fint`).
pub type Fint = c_int;

/// Integers in a Fortran status (`MPI_STATUS_SIZE`): Open MPI's Fortran
/// status is its C status seen as integers.
const STATUS_INTS: usize = size_of::<MPI_Status>() / size_of::<c_int>();

// ------------------------------------------------------------ conversions

pub(super) fn comm_f2c(f: Fint) -> MPI_Comm {
    // SAFETY: MPI_Comm_f2c accepts any integer (an invalid one gives an
    // invalid handle, which the call it is passed to reports).
    unsafe { ffi::RSMPI_Comm_f2c(f) }
}

pub(super) fn comm_c2f(c: MPI_Comm) -> Fint {
    // SAFETY: `c` is a handle MPI gave us (or MPI_COMM_NULL).
    unsafe { ffi::RSMPI_Comm_c2f(c) }
}

pub(super) fn group_f2c(f: Fint) -> ffi::MPI_Group {
    // SAFETY: as for communicators.
    unsafe { ffi::RSMPI_Group_f2c(f) }
}

pub(super) fn group_c2f(c: ffi::MPI_Group) -> Fint {
    // SAFETY: `c` is a group MPI (or this library) gave us, or
    // MPI_GROUP_NULL.
    unsafe { ffi::RSMPI_Group_c2f(c) }
}

pub(super) fn type_f2c(f: Fint) -> ffi::MPI_Datatype {
    // SAFETY: as for communicators.
    unsafe { ffi::RSMPI_Type_f2c(f) }
}

pub(super) fn info_f2c(f: Fint) -> ffi::MPI_Info {
    // SAFETY: MPI_Info_f2c accepts any integer (an invalid one gives an
    // invalid handle, which the call it is passed to reports).
    unsafe { ffi::RSMPI_Info_f2c(f) }
}

pub(super) fn request_f2c(f: Fint) -> MPI_Request {
    // SAFETY: as for communicators.
    unsafe { ffi::RSMPI_Request_f2c(f) }
}

pub(super) fn request_c2f(c: MPI_Request) -> Fint {
    // SAFETY: `c` is a request MPI gave us (or MPI_REQUEST_NULL).
    unsafe { ffi::RSMPI_Request_c2f(c) }
}

/// Reads a Fortran integer argument.
///
/// # Safety
/// `p` is null or points to an integer.
pub(super) unsafe fn get(p: *const Fint) -> Option<Fint> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref().copied() }
}

/// Writes a Fortran integer out-argument (skipped when absent).
///
/// # Safety
/// `p` is null or points to a writable integer.
pub(super) unsafe fn put(p: *mut Fint, v: Fint) {
    // SAFETY: the caller's contract.
    if let Some(r) = unsafe { p.as_mut() } {
        *r = v;
    }
}

/// The addresses of Open MPI's Fortran sentinels (`MPI_BOTTOM`,
/// `MPI_STATUS_IGNORE`, `MPI_STATUSES_IGNORE`: common blocks in
/// `libmpi`); null for MPICH.
pub(super) struct Sentinels {
    bottom: usize,
    in_place: usize,
    status_ignore: usize,
    statuses_ignore: usize,
    /// `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY`: Open MPI's common blocks,
    /// and MPICH's `use mpi_f08` module variables (its `mpif.h` and `use
    /// mpi` names convert them before the C entry point).
    unweighted: [usize; 2],
    weights_empty: [usize; 2],
}

pub(super) fn symbol(name: &std::ffi::CStr) -> usize {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks
    // the name up.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

pub(super) fn sentinels() -> &'static Sentinels {
    static S: OnceLock<Sentinels> = OnceLock::new();
    S.get_or_init(|| Sentinels {
        bottom: symbol(c"mpi_fortran_bottom_"),
        in_place: symbol(c"mpi_fortran_in_place_"),
        status_ignore: symbol(c"mpi_fortran_status_ignore_"),
        statuses_ignore: symbol(c"mpi_fortran_statuses_ignore_"),
        unweighted: [
            symbol(c"mpi_fortran_unweighted_"),
            symbol(c"__mpi_f08_link_constants_MOD_mpi_unweighted"),
        ],
        weights_empty: [
            symbol(c"mpi_fortran_weights_empty_"),
            symbol(c"__mpi_f08_link_constants_MOD_mpi_weights_empty"),
        ],
    })
}

/// A Fortran weights argument of the distributed graph calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Weights {
    /// Fortran's `MPI_UNWEIGHTED`.
    Unweighted,
    /// Fortran's `MPI_WEIGHTS_EMPTY`.
    Empty,
    /// The program's array.
    Array,
}

/// Which of [`Weights`] the Fortran argument at `p` is.
pub(super) fn weights(p: *const Fint) -> Weights {
    let s = sentinels();
    let is = |sentinels: &[usize; 2]| sentinels.iter().any(|&a| a != 0 && a == p as usize);
    if is(&s.unweighted) {
        Weights::Unweighted
    } else if is(&s.weights_empty) {
        Weights::Empty
    } else {
        Weights::Array
    }
}

/// Is this process's MPI Open MPI? (Its C library defines
/// `ompi_mpi_comm_world`; MPICH's does not.)
pub(super) fn open_mpi() -> bool {
    static F: OnceLock<bool> = OnceLock::new();
    *F.get_or_init(|| symbol(c"ompi_mpi_comm_world") != 0)
}

/// A Fortran buffer as C sees it: Fortran's `MPI_BOTTOM` is C's (0), and
/// Open MPI's Fortran `MPI_IN_PLACE` its C one (`(void *) 1`).
pub(super) fn buffer(buf: *const c_void) -> *const c_void {
    let s = sentinels();
    if s.bottom != 0 && buf as usize == s.bottom {
        std::ptr::null()
    } else if s.in_place != 0 && buf as usize == s.in_place {
        std::ptr::without_provenance(1)
    } else {
        buf
    }
}

/// A Fortran receive buffer as C sees it ([`buffer`]).
pub(super) fn buffer_mut(buf: *mut c_void) -> *mut c_void {
    buffer(buf).cast_mut()
}

/// A Fortran operation handle as C's.
pub(super) fn op_f2c(f: Fint) -> mpi::ffi::MPI_Op {
    // SAFETY: as for communicators.
    unsafe { mpi::ffi::RSMPI_Op_f2c(f) }
}

/// Does the Fortran status argument want a status (is it neither absent
/// nor Fortran's `MPI_STATUS_IGNORE`)?
pub(super) fn wants_status(status: *mut Fint) -> bool {
    let s = sentinels().status_ignore;
    !(status.is_null() || (s != 0 && status as usize == s))
}

pub(super) fn wants_statuses(statuses: *mut Fint) -> bool {
    let s = sentinels().statuses_ignore;
    !(statuses.is_null() || (s != 0 && statuses as usize == s))
}

pub(super) fn empty_status() -> MPI_Status {
    // SAFETY: MPI_Status is a C struct of integers, valid when all zero.
    unsafe { std::mem::zeroed() }
}

/// Copies a C status into a Fortran one.
///
/// # Safety
/// `f` points to `MPI_STATUS_SIZE` writable integers.
pub(super) unsafe fn status_c2f(c: &MPI_Status, f: *mut Fint) {
    // SAFETY: `c` is a valid status, `f` the caller's.
    unsafe { ffi::PMPI_Status_c2f(c, f) };
}

/// Calls `f` with a C status standing for the Fortran `status` (or C's
/// `MPI_STATUS_IGNORE`), and copies it back if the call succeeded.
///
/// # Safety
/// `status` is Fortran's `MPI_STATUS_IGNORE`, null, or `MPI_STATUS_SIZE`
/// writable integers.
pub(super) unsafe fn with_status(
    status: *mut Fint,
    f: impl FnOnce(*mut MPI_Status) -> c_int,
) -> c_int {
    // SAFETY: forwarded from this function's contract.
    unsafe { with_filled_status(status, |st| (f(st), true)) }
}

/// [`with_status`] for a call that may leave the status unfilled: `f`
/// answers its code and whether MPI filled the status, which is copied
/// back only then (and if the call succeeded).
///
/// # Safety
/// As [`with_status`].
pub(super) unsafe fn with_filled_status(
    status: *mut Fint,
    f: impl FnOnce(*mut MPI_Status) -> (c_int, bool),
) -> c_int {
    if !wants_status(status) {
        return f(status_ignore()).0;
    }
    let mut c = empty_status();
    let (rc, filled) = f(&mut c);
    if rc == 0 && filled {
        // SAFETY: the caller's contract.
        unsafe { status_c2f(&c, status) };
    }
    rc
}
// ------------------------------------------------------------ passing on

/// The next definition of `name` after this library (the MPI library's
/// own Fortran binding), looked up once: after this library in the
/// process's lookup order or, when the program's link dropped the MPI's
/// Fortran library (`--as-needed`, as Debian's linker does, drops it when
/// libisthmus defines every Fortran call the program makes), in that
/// library, loaded now (`fortran_library`).
pub(super) fn next(cell: &OnceLock<usize>, name: &std::ffi::CStr) -> usize {
    *cell.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks
        // the name up.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize };
        if p != 0 {
            return p;
        }
        match fortran_library() {
            0 => 0,
            // SAFETY: a handle dlopen gave; the name is NUL-terminated.
            h => unsafe { libc::dlsym(h as *mut c_void, name.as_ptr()) as usize },
        }
    })
}

/// The MPI library's Fortran binding (MPICH's `libmpichfort`, as Debian
/// names it, or `libmpifort`; Open MPI's `libmpi_mpifh`), loaded once: a
/// handle, or 0 when none is found. Looked for first beside the C library
/// that defines `PMPI_Init` (an MPI in a prefix of its own), then by the
/// loader's search.
fn fortran_library() -> usize {
    static H: OnceLock<usize> = OnceLock::new();
    *H.get_or_init(|| {
        // Never the other implementation's: it would bring its C library.
        const OMPI: &[&str] = &["libmpi_mpifh.so.40"];
        const MPICH: &[&str] = &["libmpichfort.so.12", "libmpifort.so.12"];
        let names = if open_mpi() { OMPI } else { MPICH };
        let mut info: libc::Dl_info = libc::Dl_info {
            dli_fname: std::ptr::null(),
            dli_fbase: std::ptr::null_mut(),
            dli_sname: std::ptr::null(),
            dli_saddr: std::ptr::null_mut(),
        };
        // SAFETY: dladdr reads the address of an MPI function and fills
        // `info`, whose file name (if any) is a NUL-terminated string the
        // loader owns.
        let c_library = unsafe {
            let found = libc::dladdr(ffi::PMPI_Init as *const c_void, &mut info) != 0;
            (found && !info.dli_fname.is_null()).then(|| {
                std::ffi::CStr::from_ptr(info.dli_fname)
                    .to_string_lossy()
                    .into_owned()
            })
        };
        let dir = c_library
            .as_deref()
            .and_then(|f| std::path::Path::new(f).parent().map(|d| d.to_path_buf()));
        let beside = names
            .iter()
            .filter_map(|n| Some(dir.as_ref()?.join(n).to_string_lossy().into_owned()));
        let bare = names.iter().map(|n| (*n).to_owned());
        for candidate in beside.chain(bare) {
            let Ok(c) = std::ffi::CString::new(candidate) else {
                continue;
            };
            // SAFETY: dlopen of a NUL-terminated path; the library stays
            // loaded for the process's life (never closed).
            let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if !h.is_null() {
                return h as usize;
            }
        }
        0
    })
}

/// The error a Fortran call gets when MPICH's own binding is missing.
pub(super) fn no_next(name: &str) -> c_int {
    errors::code(
        Class::Other,
        &format!(
            "{name}: the MPI library's own Fortran binding was not found (is libmpichfort loaded?)"
        ),
    )
}

/// A Fortran request array as C requests; a negative count is raised on
/// `MPI_COMM_WORLD` (the call has no communicator).
///
/// # Safety
/// `requests` points to `count` integers.
pub(super) unsafe fn requests_f2c(
    count: Fint,
    requests: *const Fint,
    call: &str,
) -> Result<Vec<MPI_Request>, c_int> {
    let Ok(n) = usize::try_from(count) else {
        let code = errors::code(
            Class::InvalidArgument,
            &format!("{call}: count {count} is negative"),
        );
        // SAFETY: reading rsmpi's exported constant.
        return Err(errors::raise(unsafe { ffi::RSMPI_COMM_WORLD }, code));
    };
    if n == 0 || requests.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: the caller's contract.
    let f = unsafe { std::slice::from_raw_parts(requests, n) };
    Ok(f.iter().map(|&r| request_f2c(r)).collect())
}

/// Writes C requests back to the Fortran array.
///
/// # Safety
/// `requests` points to `c.len()` writable integers.
pub(super) unsafe fn requests_c2f(c: &[MPI_Request], requests: *mut Fint) {
    if c.is_empty() || requests.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    let f = unsafe { std::slice::from_raw_parts_mut(requests, c.len()) };
    for (f, &c) in f.iter_mut().zip(c) {
        *f = request_c2f(c);
    }
}

/// Copies the first `n` C statuses into the Fortran status array.
///
/// # Safety
/// `statuses` holds `n` Fortran statuses.
pub(super) unsafe fn statuses_c2f(c: &[MPI_Status], statuses: *mut Fint) {
    for (i, s) in c.iter().enumerate() {
        // SAFETY: the caller's contract: status i is in the array.
        unsafe { status_c2f(s, statuses.add(i * STATUS_INTS)) };
    }
}

/// The array calls' result codes that come with statuses worth copying:
/// success, and `MPI_ERR_IN_STATUS` (whose statuses carry the errors).
pub(super) fn statuses_valid(rc: c_int) -> bool {
    rc == 0 || rc == ffi::MPI_ERR_IN_STATUS as c_int
}

/// A C index (0-based or `MPI_UNDEFINED`) as Fortran's (1-based).
pub(super) fn index_c2f(i: c_int) -> Fint {
    if i == ffi::MPI_UNDEFINED as c_int || i < 0 {
        i
    } else {
        i + 1
    }
}

pub(super) type SomeFn =
    unsafe extern "C" fn(c_int, *mut MPI_Request, *mut c_int, *mut c_int, *mut MPI_Status) -> c_int;

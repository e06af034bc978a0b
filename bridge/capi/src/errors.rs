//! Bridge errors as MPI error codes.
//!
//! Each kind of failure has an error class of its own, added with
//! `MPI_Add_error_class` the first time it occurs; each occurrence gets a
//! code of that class whose `MPI_Error_string` is the bridge's message. The
//! codes of a class are a small ring, reused with a new string, so a
//! program that fails a million times holds a bounded number of codes (an
//! old code may then read a newer message of the same class).

use std::collections::HashMap;
use std::ffi::{c_int, CString};
use std::sync::Mutex;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::mpi_glue::MPI_Comm;

/// Isthmus's error classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// The remote process failed (died, left, or its connection broke).
    PeerFailed,
    /// The message is larger than the receive buffer.
    Truncated,
    /// The message's type signature differs from the receive's.
    TypeMismatch,
    /// An argument MPI would reject.
    InvalidArgument,
    /// The remote group was not ready before the deadline.
    RemoteNotReady,
    /// The remote group broke (lost a member).
    RemoteLost,
    /// The group name is held by another job.
    NameTaken,
    /// The named group belongs to another user who did not allow the caller.
    NotPermitted,
    /// The virtual machine (vmd) refused or failed.
    Vm,
    /// The call is not supported on an Isthmus communicator.
    Refused,
    /// A port or service name that Isthmus does not know.
    Port,
    /// `MPI_Comm_spawn` could not start its command (not found, not
    /// executable, no MPI implementation read from it, refused by the
    /// resource manager or its tasker).
    Spawn,
    /// A bound on what this process holds was reached (too many sends
    /// waiting for their receivers); the call did nothing.
    Resources,
    /// Anything else (I/O, protocol, shutdown).
    Other,
}

impl Class {
    pub fn of(e: &BridgeError) -> Class {
        use isthmus_bridge::datatype::DatatypeError as D;
        match e {
            BridgeError::PeerFailed { .. } | BridgeError::Connect { .. } => Class::PeerFailed,
            BridgeError::Truncated { .. } => Class::Truncated,
            BridgeError::TypeMismatch { .. } => Class::TypeMismatch,
            BridgeError::Datatype(d) => match d.as_ref() {
                D::Truncated { .. } => Class::Truncated,
                D::SignatureMismatch { .. }
                | D::PartialElement { .. }
                | D::SizeMismatch { .. }
                | D::PackedNotNative { .. } => Class::TypeMismatch,
                _ => Class::InvalidArgument,
            },
            BridgeError::InvalidArgument(_) => Class::InvalidArgument,
            BridgeError::RemoteNotReady { .. } | BridgeError::Timeout(_) => Class::RemoteNotReady,
            BridgeError::RemoteLost { .. } => Class::RemoteLost,
            BridgeError::NameTaken { .. } => Class::NameTaken,
            BridgeError::NotPermitted { .. } => Class::NotPermitted,
            BridgeError::Vm { .. } => Class::Vm,
            BridgeError::TooManyPendingSends { .. } => Class::Resources,
            _ => Class::Other,
        }
    }
}

/// Codes per class kept at once.
const CODES_PER_CLASS: usize = 8;

struct ClassCodes {
    class: c_int,
    codes: Vec<c_int>,
    next: usize,
}

static CLASSES: Mutex<Option<HashMap<Class, ClassCodes>>> = Mutex::new(None);

/// An MPI error code whose string is `message`, in `class`. MPI_ERR_OTHER
/// if MPI cannot add one (then the message is only printed).
pub fn code(class: Class, message: &str) -> c_int {
    let mut all = CLASSES.lock().unwrap_or_else(|p| p.into_inner());
    let all = all.get_or_insert_with(HashMap::new);
    if let std::collections::hash_map::Entry::Vacant(slot) = all.entry(class) {
        let mut c: c_int = 0;
        // SAFETY: MPI is initialized (every caller is inside an MPI call on
        // a live communicator); `c` is a valid out-pointer.
        if unsafe { ffi::PMPI_Add_error_class(&mut c) } != 0 {
            return other();
        }
        slot.insert(ClassCodes {
            class: c,
            codes: Vec::new(),
            next: 0,
        });
    }
    let Some(cc) = all.get_mut(&class) else {
        return other();
    };
    let code = if cc.codes.len() < CODES_PER_CLASS {
        let mut code: c_int = 0;
        // SAFETY: `cc.class` was returned by MPI_Add_error_class.
        if unsafe { ffi::PMPI_Add_error_code(cc.class, &mut code) } != 0 {
            return other();
        }
        cc.codes.push(code);
        code
    } else {
        let Some(&code) = cc.codes.get(cc.next % CODES_PER_CLASS) else {
            return other();
        };
        cc.next = cc.next.wrapping_add(1);
        code
    };
    // MPI bounds strings at MPI_MAX_ERROR_STRING (at least 256 in both
    // implementations); a longer one would be refused.
    let text: String = format!("Isthmus: {message}").chars().take(250).collect();
    let text = CString::new(text.replace('\0', " ")).unwrap_or_default();
    // SAFETY: `code` is a user code of ours; `text` is a valid C string.
    unsafe { ffi::PMPI_Add_error_string(code, text.as_ptr()) };
    code
}

fn other() -> c_int {
    ffi::MPI_ERR_OTHER as c_int
}

/// The code for a bridge error raised by `call`.
pub fn code_of(call: &str, e: &BridgeError) -> c_int {
    code(Class::of(e), &format!("{call}: {e}"))
}

/// Raises `code` on `comm` through its error handler, as MPI does for its
/// own errors: the default handler aborts (after the message is printed
/// here, so the reason is on stderr whatever the implementation prints),
/// `MPI_ERRORS_RETURN` returns. Returns `code`.
pub fn raise(comm: MPI_Comm, code: c_int) -> c_int {
    match handler_of(comm) {
        // ERRORS_RETURN does nothing but return: not calling it is the same,
        // and Intel MPI 2021.18's standard-ABI library (libmpi_abi.so.1)
        // aborts in MPI_Comm_call_errhandler even under MPI_ERRORS_RETURN.
        Handler::Return => return code,
        Handler::Fatal => eprintln!("{}", error_string(code)),
        Handler::Other => {}
    }
    // SAFETY: `comm` is a live communicator (the caller's argument) and
    // `code` a valid error code.
    unsafe { ffi::PMPI_Comm_call_errhandler(comm, code) };
    code
}

/// Raises a bridge error of `call` on `comm`.
pub fn fail(comm: MPI_Comm, call: &str, e: &BridgeError) -> c_int {
    raise(comm, code_of(call, e))
}

/// Raises a refusal of `call` on an Isthmus communicator (a merged one
/// gets its own message).
pub fn refuse(comm: MPI_Comm, call: &str) -> c_int {
    if crate::state::merged_comm(comm).is_some() {
        return refuse_merged(comm, call);
    }
    if crate::state::mixed_comm(comm).is_some() {
        return refuse_mixed(comm, call);
    }
    let c = code(
        Class::Refused,
        &format!(
            "{call} is not supported on an Isthmus intercommunicator (point-to-point calls, \
             communicator management and the blocking collectives from C are; see ARCHITECTURE.md)"
        ),
    );
    raise(comm, c)
}

/// Raises a refusal of `call` on a merged communicator.
pub fn refuse_merged(comm: MPI_Comm, call: &str) -> c_int {
    let c = code(
        Class::Refused,
        &format!(
            "{call} is not supported on a merged Isthmus communicator (MPI_Intercomm_merge's); \
             supported: rank, size, compare, group, dup, idup, free, split, split_type, \
             create(_group), Intercomm_create, Cartesian, graph and distributed graph topologies \
             (Cart_*, Graph_*, Dist_graph_*, Topo_test) and the neighborhood collectives (blocking, nonblocking, persistent), \
             point-to-point (persistent, matched probes \
             and Sendrecv_replace too), Barrier, Bcast, Reduce, Allreduce, Gather(v), \
             Scatter(v), Allgather(v), Alltoall(v,w), Reduce_scatter(_block), Scan, Exscan, \
             their nonblocking and persistent forms (on any order of the ranks) and \
             their _c forms"
        ),
    );
    raise(comm, c)
}

/// Raises a refusal of `call` on a mixed intercommunicator (one whose
/// groups span both jobs; `crate::mixed`).
pub fn refuse_mixed(comm: MPI_Comm, call: &str) -> c_int {
    let c = code(
        Class::Refused,
        &format!(
            "{call} is not supported on an Isthmus intercommunicator whose groups span both \
             jobs; supported: rank, size, remote_size, test_inter, group, remote_group, \
             compare, dup, free, split, create, Intercomm_merge, point-to-point (matched \
             probes and Sendrecv_replace too), Barrier, Bcast, Reduce, Allreduce, Gather(v), \
             Scatter(v), Allgather(v), Alltoall(v,w), Reduce_scatter(_block), their \
             nonblocking and persistent forms"
        ),
    );
    raise(comm, c)
}

/// Raises a refusal of `call` on a merged communicator, saying `why`.
pub fn refuse_merged_because(comm: MPI_Comm, call: &str, why: &str) -> c_int {
    let c = code(
        Class::Refused,
        &format!("{call} is not supported on this merged Isthmus communicator: {why}"),
    );
    raise(comm, c)
}

/// Which of MPI's predefined handlers, if either, `comm` has.
enum Handler {
    Fatal,
    Return,
    Other,
}

fn handler_of(comm: MPI_Comm) -> Handler {
    let mut h: ffi::MPI_Errhandler = unsafe_errhandler_null();
    // SAFETY: `comm` is live; `h` is a valid out-pointer.
    if unsafe { ffi::PMPI_Comm_get_errhandler(comm, &mut h) } != 0 {
        return Handler::Fatal;
    }
    // SAFETY: reading rsmpi's exported constants.
    let which = if h == unsafe { ffi::RSMPI_ERRORS_ARE_FATAL } {
        Handler::Fatal
    } else if h == unsafe { ffi::RSMPI_ERRORS_RETURN } {
        Handler::Return
    } else {
        Handler::Other
    };
    // SAFETY: MPI_Comm_get_errhandler returned a reference we must free.
    unsafe { ffi::PMPI_Errhandler_free(&mut h) };
    which
}

fn unsafe_errhandler_null() -> ffi::MPI_Errhandler {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_ERRORS_RETURN }
}

/// `MPI_Error_string` of `code`.
pub fn error_string(code: c_int) -> String {
    let mut buf = vec![0u8; 1024];
    let mut len: c_int = 0;
    // SAFETY: `buf` is larger than MPI_MAX_ERROR_STRING in both implementations.
    unsafe { ffi::PMPI_Error_string(code, buf.as_mut_ptr().cast(), &mut len) };
    let len = usize::try_from(len).unwrap_or(0).min(buf.len());
    String::from_utf8_lossy(buf.get(..len).unwrap_or_default()).into_owned()
}

//! `MPI_Comm_idup(_with_info)` on an Isthmus communicator (intercommunicator
//! between jobs, merged communicator, mixed intercommunicator) without
//! blocking. The call derives the new bridge contexts (a counter both
//! sides advance in the same order: no message to agree on), starts the
//! job's own `MPI_Comm_idup` of every native communicator the new one is
//! made of (the program's handle first, then the private sides), and
//! returns a request polled by the interposed waits and tests
//! (`requests::Polled`). When every native duplicate is done, the new
//! communicator is registered and written to the program's `newcomm`, and
//! the request completes. The handle is written at the call too (what the
//! job's MPI gave for the program's handle, valid to use, as MPI says, once
//! the request completes).

use std::ffi::c_int;

use isthmus_bridge::BridgeError;
use mpi::ffi;

use crate::errors;
use crate::merged::Fail;
use crate::mpi_glue::{comm_null, request_null, statuses_ignore, MPI_Comm, MPI_Request, Outcome};
use crate::requests::{self, Polled};

/// What makes the new communicator from its native duplicates (in the
/// order they were asked for): registers it and returns its handle, or
/// asks for more duplicates first. It registers nothing when it fails (the
/// duplicates are freed then).
pub type Finish = Box<dyn FnOnce(&[MPI_Comm]) -> Result<Next, Fail>>;

/// What a [`Finish`] made of the duplicates it was given.
pub enum Next {
    /// The new communicator, registered: its handle.
    Done(MPI_Comm),
    /// Duplicate these (made from the duplicates just given, which nothing
    /// else duplicates at the same time) and finish with them: a private
    /// side taken from the program's new handle, not from the parent.
    /// Open MPI 4.1 gives communicators duplicated at once from one parent
    /// inconsistent context ids when its processes hold different numbers
    /// of communicators (its issue #2025): without Isthmus, three ranks
    /// that idup one communicator ten times at once and then run an
    /// `MPI_Iallreduce` on another duplicate of it hang there in two runs
    /// of three. So Isthmus adds no duplication of its own to a parent the
    /// program may be duplicating.
    Then(Vec<MPI_Comm>, Finish),
}

/// The job's own `MPI_Comm_idup`s of a duplication, under way. The new
/// handles' vector is made at its full length and never grows: an MPI may
/// write a handle when its request completes, so its address must stay.
struct Natives {
    made: Vec<MPI_Comm>,
    reqs: Vec<MPI_Request>,
}

impl Natives {
    /// Starts the duplication of each of `comms`, in order.
    fn start(comms: &[MPI_Comm]) -> Result<Natives, c_int> {
        let mut n = Natives {
            made: vec![comm_null(); comms.len()],
            reqs: Vec::with_capacity(comms.len()),
        };
        for (i, &c) in comms.iter().enumerate() {
            let Some(made) = n.made.get_mut(i) else {
                break;
            };
            let mut req = request_null();
            // SAFETY: `c` is a live communicator of the job; `made` lives in
            // a vector that is never resized while the requests live (kept
            // with them), `req` is ours.
            let rc = unsafe { ffi::PMPI_Comm_idup(c, made, &mut req) };
            if rc != 0 {
                n.abandon();
                return Err(rc);
            }
            n.reqs.push(req);
        }
        Ok(n)
    }

    /// Whether every duplication completed (and the first error code, else 0).
    fn test(&mut self) -> Option<c_int> {
        let mut flag = 0;
        let n = c_int::try_from(self.reqs.len()).unwrap_or(c_int::MAX);
        // SAFETY: our own requests (completed ones become MPI_REQUEST_NULL).
        let rc =
            unsafe { ffi::PMPI_Testall(n, self.reqs.as_mut_ptr(), &mut flag, statuses_ignore()) };
        (rc != 0 || flag != 0).then_some(rc)
    }

    /// The new handles, in the order they were asked for.
    fn handles(&self) -> Vec<MPI_Comm> {
        self.made.clone()
    }

    /// Waits for the duplications started (every rank of the job started
    /// them, so they complete) and frees what they made.
    fn abandon(mut self) {
        let n = c_int::try_from(self.reqs.len()).unwrap_or(c_int::MAX);
        // SAFETY: our own requests.
        unsafe { ffi::PMPI_Waitall(n, self.reqs.as_mut_ptr(), statuses_ignore()) };
        for mut c in self.handles() {
            if c != comm_null() {
                // SAFETY: a duplicate of ours, made by a completed request,
                // freed once (merged::free_native's body: calling it would
                // make merged::comm and this module depend on each other).
                unsafe { ffi::PMPI_Comm_free(&mut c) };
            }
        }
    }
}

/// A duplication under way: the program's request polls it.
struct Pending {
    natives: Option<Natives>,
    /// Duplicates of the stages before, freed if a later one fails.
    earlier: Vec<MPI_Comm>,
    finish: Option<Finish>,
    /// `MPI_Comm_idup_with_info`'s hints (our duplicate), set on the new
    /// handle at the end; MPI_INFO_NULL for none.
    info: ffi::MPI_Info,
    out: *mut MPI_Comm,
}

// SAFETY: `out` is the program's MPI_Comm, which MPI's rules keep valid
// until the request completes; the MPI handles are process-wide values;
// the request is completed by one thread (it is taken out of the table
// first, `requests`).
unsafe impl Send for Pending {}

impl Pending {
    /// The stage's duplicates are done: finish, or start the next stage
    /// (`Ok(false)`: not complete yet).
    fn end(&mut self) -> Result<bool, BridgeError> {
        let natives = self
            .natives
            .take()
            .ok_or_else(|| BridgeError::Protocol("MPI_Comm_idup polled after its end".into()))?;
        let handles = natives.handles();
        // The hints go on the program's handle, the first stage's first.
        let hints = if self.earlier.is_empty() {
            self.hints(handles.first().copied())
        } else {
            Ok(())
        };
        let made = match (hints, self.finish.take()) {
            (Ok(()), Some(finish)) => finish(&handles),
            (Err(f), _) => Err(f),
            (Ok(()), None) => Err(Fail::Bridge(BridgeError::Protocol(
                "MPI_Comm_idup finished twice".into(),
            ))),
        };
        let failed = match made {
            Ok(Next::Done(c)) => {
                // SAFETY: the program's MPI_Comm (see `Pending`).
                unsafe { *self.out = c };
                return Ok(true);
            }
            Ok(Next::Then(more, finish)) => match Natives::start(&more) {
                Ok(next) => {
                    self.earlier.extend(handles);
                    self.natives = Some(next);
                    self.finish = Some(finish);
                    return Ok(false);
                }
                Err(rc) => Fail::Mpi(rc),
            },
            Err(f) => f,
        };
        natives.abandon();
        self.free_earlier();
        // SAFETY: as above.
        unsafe { *self.out = comm_null() };
        Err(bridge_error(failed))
    }

    /// Frees the duplicates of the stages before (a later one failed).
    fn free_earlier(&mut self) {
        for mut c in self.earlier.drain(..) {
            if c != comm_null() {
                // SAFETY: a duplicate of ours, made by a completed request,
                // freed once (drained).
                unsafe { ffi::PMPI_Comm_free(&mut c) };
            }
        }
    }

    /// Sets the hints of `MPI_Comm_idup_with_info` on the new handle.
    fn hints(&mut self, handle: Option<MPI_Comm>) -> Result<(), Fail> {
        if self.info == info_null() {
            return Ok(());
        }
        let mut info = std::mem::replace(&mut self.info, info_null());
        let rc = match handle {
            // SAFETY: the new handle, complete; our duplicate of the info.
            Some(c) => unsafe { ffi::PMPI_Comm_set_info(c, info) },
            None => 0,
        };
        // SAFETY: our duplicate, freed once (replaced by MPI_INFO_NULL above).
        unsafe { ffi::PMPI_Info_free(&mut info) };
        crate::merged::mpi(rc)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.info != info_null() {
            // SAFETY: our duplicate of the program's info, freed once.
            unsafe { ffi::PMPI_Info_free(&mut self.info) };
        }
    }
}

impl Polled for Pending {
    fn poll(&mut self) -> Option<Result<Outcome, BridgeError>> {
        let rc = self.natives.as_mut()?.test()?;
        if rc != 0 {
            if let Some(n) = self.natives.take() {
                n.abandon();
            }
            self.free_earlier();
            // SAFETY: the program's MPI_Comm (see `Pending`).
            unsafe { *self.out = comm_null() };
            return Some(Err(bridge_error(Fail::Mpi(rc))));
        }
        match self.end() {
            Ok(true) => Some(Ok(Outcome::empty())),
            // The next stage's duplicates are under way.
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }

    fn cancel(&mut self) -> bool {
        // A duplication is not cancelled: it completes (MPI_Request_free
        // waits for it).
        false
    }
}

fn info_null() -> ffi::MPI_Info {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_INFO_NULL }
}

/// A failure as the request's error (a native one with MPI's own string).
fn bridge_error(f: Fail) -> BridgeError {
    match f {
        Fail::Bridge(e) => e,
        Fail::Mpi(rc) => BridgeError::Protocol(format!(
            "the job's own MPI_Comm_idup of a native side failed: {}",
            errors::error_string(rc)
        )),
    }
}

/// Starts the nonblocking duplication of the program's `comm` (`call`):
/// the native duplicates of `natives` (the program's handle first), made
/// into the new communicator by `finish` when they are all done; `info`
/// (or MPI_INFO_NULL) gives the new handle's hints. Writes the new handle
/// and the request.
///
/// # Safety
/// `newcomm` and `request` are the program's out-pointers; `newcomm` stays
/// valid until the request completes (MPI's rule).
pub(crate) unsafe fn start(
    comm: MPI_Comm,
    call: &'static str,
    natives: &[MPI_Comm],
    info: ffi::MPI_Info,
    finish: Finish,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    if newcomm.is_null() || request.is_null() {
        let e = BridgeError::InvalidArgument("newcomm or request is NULL".into());
        return errors::fail(comm, call, &e);
    }
    let n = match Natives::start(natives) {
        Ok(n) => n,
        Err(rc) => return errors::raise(comm, rc),
    };
    let mut held = info_null();
    if info != info_null() {
        // SAFETY: the program's info (it may free it once we return).
        let rc = unsafe { ffi::PMPI_Info_dup(info, &mut held) };
        if rc != 0 {
            n.abandon();
            return errors::raise(comm, rc);
        }
    }
    let first = n.handles().first().copied().unwrap_or_else(comm_null);
    let pending = Pending {
        natives: Some(n),
        earlier: Vec::new(),
        finish: Some(finish),
        info: held,
        out: newcomm,
    };
    match requests::start(requests::Op::Polled(Box::new(pending)), comm, call) {
        Ok(r) => {
            // SAFETY: the program's out-pointers (checked non-null above).
            unsafe {
                *newcomm = first;
                *request = r;
            }
            0
        }
        Err(rc) => errors::raise(comm, rc),
    }
}

/// `MPI_Comm_dup_with_info`'s hints on the duplicate `c` just made (none
/// for MPI_INFO_NULL).
pub(crate) fn set_hints(c: MPI_Comm, info: ffi::MPI_Info) -> Result<(), Fail> {
    if info == info_null() {
        return Ok(());
    }
    // SAFETY: a live duplicate of ours; the program's info.
    crate::merged::mpi(unsafe { ffi::PMPI_Comm_set_info(c, info) })
}

/// A finish that was given the wrong number of duplicates (a bug of ours).
pub(crate) fn wrong_count(n: usize) -> Fail {
    Fail::Bridge(BridgeError::Protocol(format!(
        "MPI_Comm_idup: {n} native duplicates where the communicator needs another number"
    )))
}

//! Matched probes (`MPI_Mprobe`, `MPI_Improbe`) on a merged communicator
//! or a mixed intercommunicator: a source of this job is the MPI's own
//! matched probe on the handle, a source of the other job the bridge's
//! probe and a receive posted for that message (the next one from its
//! source with its tag), `MPI_ANY_SOURCE` both in turn as a blocking
//! `MPI_ANY_SOURCE` receive does (`pt2pt::probe_any`). Either message is
//! kept by `crate::pt2pt` behind a handle of ours, so that `MPI_Mrecv`
//! and `MPI_Imrecv` report the communicator's ranks.

use std::ffi::c_int;

use isthmus_bridge::Status;
use mpi::ffi;

use super::pt2pt::{code, place, probe_any, probed, queued, translate, wait_any, Found};
use super::wire::{mpi, Fail};
use crate::mpi_glue::{
    any_source, copy_status_keeping_error, fill_status, proc_null, MPI_Comm, MPI_Status, Outcome,
};
use crate::pt2pt::{keep, take_bridge, Taken};
use crate::state::{Peers, Place};

fn message_no_proc() -> ffi::MPI_Message {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_MESSAGE_NO_PROC }
}

fn message_null() -> ffi::MPI_Message {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_MESSAGE_NULL }
}

/// What a matched probe found: the message's handle and its status.
enum Matched {
    /// `MPI_PROC_NULL`: `MPI_MESSAGE_NO_PROC`.
    NoProc,
    /// A native message on the handle (status as the MPI filled it).
    Native(ffi::MPI_Message, MPI_Status),
    /// A bridge message.
    Bridge(Status),
}

/// Refuses a matched probe while `MPI_ANY_SOURCE` receives are queued on
/// `comm` (a message it found might be one they match first).
fn not_queued(mc: &dyn Peers, src: c_int, comm: MPI_Comm) -> Result<(), Fail> {
    if queued(mc, src, comm).is_some() {
        return Err(Fail::Bridge(isthmus_bridge::BridgeError::InvalidArgument(
            "a matched probe while a nonblocking MPI_ANY_SOURCE receive is pending on this \
             communicator (it may match the message first): not supported"
                .into(),
        )));
    }
    Ok(())
}

/// One look (or, `block`, a wait) for a message from `src` with `tag`.
fn look(
    mc: &dyn Peers,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
    block: bool,
) -> Result<Option<Matched>, Fail> {
    if src == proc_null() {
        return Ok(Some(Matched::NoProc));
    }
    not_queued(mc, src, comm)?;
    let found = |f: Found| match f {
        Found::Native(m, st) => Matched::Native(m, st),
        Found::Bridge(st) => Matched::Bridge(st),
    };
    if src == any_source() {
        return Ok(if block {
            Some(found(wait_any(mc, tag, comm, true)?))
        } else {
            probe_any(mc, tag, comm, true)?.map(found)
        });
    }
    match place(mc, src, "MPI_Mprobe")? {
        None => Ok(Some(Matched::NoProc)),
        Some(Place::Local(r)) => {
            let r = c_int::try_from(r).unwrap_or(c_int::MAX);
            let (mut flag, mut msg) = (1, message_null());
            let mut st = crate::mpi_glue::empty_status();
            if block {
                // SAFETY: the program's handle; our out-values.
                mpi(unsafe { ffi::PMPI_Mprobe(r, tag, comm, &mut msg, &mut st) })?;
            } else {
                // SAFETY: as above.
                mpi(unsafe { ffi::PMPI_Improbe(r, tag, comm, &mut flag, &mut msg, &mut st) })?;
            }
            Ok((flag != 0).then_some(Matched::Native(msg, st)))
        }
        Some(Place::Remote(r)) => {
            let s = isthmus_bridge::Source::Rank(r);
            let t = crate::mpi_glue::tag_of(tag);
            Ok(if block {
                Some(Matched::Bridge(mc.inter().probe(s, t)?))
            } else {
                mc.inter().iprobe(s, t)?.map(Matched::Bridge)
            })
        }
    }
}

/// Keeps what was found; the program's message and status.
///
/// # Safety
/// `message` and `status` are the program's.
unsafe fn give(
    mc: &dyn Peers,
    comm: MPI_Comm,
    m: Matched,
    message: *mut ffi::MPI_Message,
    status: *mut MPI_Status,
) -> Result<(), Fail> {
    match m {
        Matched::NoProc => {
            // SAFETY: the program's out-pointers.
            unsafe {
                *message = message_no_proc();
                fill_status(status, &Outcome::empty());
            }
        }
        Matched::Native(msg, st) => {
            let kept = keep(Taken::native(msg, comm, mc.order().local_ranks().clone()));
            // SAFETY: as above.
            unsafe {
                *message = kept;
                copy_status_keeping_error(status, &st);
                translate(mc, status);
            }
        }
        Matched::Bridge(st) => {
            let req = take_bridge(mc.inter(), &st)?;
            let sources = Some(mc.order().remote_ranks().clone());
            let kept = keep(Taken::bridge(req, comm, sources));
            // SAFETY: as above.
            unsafe {
                *message = kept;
                fill_status(status, &probed(mc, st.source, &st));
            }
        }
    }
    Ok(())
}

/// `MPI_Mprobe` on a merged communicator or a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Mprobe`.
pub(crate) unsafe fn mprobe(
    mc: &dyn Peers,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut ffi::MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    let run = || match look(mc, source, tag, comm, true)? {
        // SAFETY: the program's out-pointers.
        Some(m) => unsafe { give(mc, comm, m, message, status) },
        None => Ok(()),
    };
    code(comm, "MPI_Mprobe", run())
}

/// `MPI_Improbe` on a merged communicator or a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Improbe`.
pub(crate) unsafe fn improbe(
    mc: &dyn Peers,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut ffi::MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    let run = || {
        let found = look(mc, source, tag, comm, false)?;
        // SAFETY: the program's out-pointer.
        unsafe { *flag = c_int::from(found.is_some()) };
        match found {
            // SAFETY: the program's out-pointers.
            Some(m) => unsafe { give(mc, comm, m, message, status) },
            None => Ok(()),
        }
    };
    code(comm, "MPI_Improbe", run())
}

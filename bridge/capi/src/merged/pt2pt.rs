//! Point-to-point on a merged communicator, to or from a given merged
//! rank: natively on the communicator's handle (the rank translated to the
//! job's own) when it is in this job, over the bridge (`MergedComm::inter`)
//! when it is in the other; statuses name merged ranks. Every send mode is
//! the job's own within the job and `pt2pt`'s bridge send across (a
//! buffered one owns a copy there and never uses the attached buffer).
//!
//! A nonblocking receive is a request of `requests` either way (a native
//! one wrapped, so that its status too names a merged rank).
//!
//! `MPI_ANY_SOURCE` in a blocking receive or a probe watches both kinds of
//! source: a native matched probe (`MPI_Improbe`, so the message found is
//! the one received) and a bridge probe in turn, backing off while neither
//! has a message; each source is of one kind, so MPI's order per source
//! holds. (Two threads receiving from `MPI_ANY_SOURCE` on one merged
//! communicator at once could take each other's bridge message between its
//! probe and its receive; the bridge's matched probe is not used yet.)
//! `MPI_ANY_SOURCE` in a nonblocking receive joins the communicator's queue
//! (`anysource`); while that queue holds a receive, a receive from the
//! other job (blocking or not, or a blocking `MPI_ANY_SOURCE` one) queues
//! behind it, so that it cannot take a message an earlier receive matches.

use std::ffi::{c_int, c_void};

use isthmus_bridge::wait::Backoff;
use isthmus_bridge::{BridgeError, SendRequest, Status};
use mpi::ffi;

use super::anysource;
use super::comm::raise;
use super::wire::{mpi, Fail};
use crate::collbuf::elements;
use crate::datatype;
use crate::mpi_glue::{
    any_source, fill_status, proc_null, request_null, status_ignore, tag_of, MPI_Comm,
    MPI_Datatype, MPI_Request, MPI_Status, Outcome,
};
use crate::pt2pt::{self, Mode};
use crate::requests::{self, Op};
use crate::state::{Peers, Place};

/// A rank argument as a place, or MPI's `MPI_ERR_RANK`; `None` for `MPI_PROC_NULL`.
pub(super) fn place(mc: &dyn Peers, rank: c_int, call: &str) -> Result<Option<Place>, Fail> {
    if rank == proc_null() {
        return Ok(None);
    }
    if rank == any_source() {
        return Err(Fail::Bridge(BridgeError::InvalidArgument(format!(
            "MPI_ANY_SOURCE is not a destination ({call} on a merged Isthmus communicator)"
        ))));
    }
    u32::try_from(rank)
        .ok()
        .and_then(|r| mc.order().place(r))
        .map(Some)
        .ok_or(Fail::Mpi(ffi::MPI_ERR_RANK as c_int))
}

fn int(r: u32) -> c_int {
    c_int::try_from(r).unwrap_or(c_int::MAX)
}

/// Makes the source of a native status a merged rank.
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE` or the program's status.
pub(super) unsafe fn translate(mc: &dyn Peers, status: *mut MPI_Status) {
    if status.is_null() || status == status_ignore() {
        return;
    }
    // SAFETY: a writable status (the caller's contract).
    let s = unsafe { &mut *status };
    if s.MPI_SOURCE >= 0 && s.MPI_SOURCE != proc_null() {
        let local = u32::try_from(s.MPI_SOURCE).unwrap_or(u32::MAX);
        s.MPI_SOURCE = int(mc.order().merged_rank(Place::Local(local)));
    }
}

pub(super) fn code(comm: MPI_Comm, call: &str, r: Result<(), Fail>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(f) => raise(comm, call, f),
    }
}

/// A send under way: native or over the bridge.
enum Sending {
    Done,
    Native(MPI_Request),
    Bridge(SendRequest),
}

/// The job's own nonblocking send of `mode`.
fn native_isend(mode: Mode) -> NativeSend {
    match mode {
        Mode::Standard => ffi::PMPI_Isend,
        Mode::Synchronous => ffi::PMPI_Issend,
        Mode::Buffered => ffi::PMPI_Ibsend,
        Mode::Ready => ffi::PMPI_Irsend,
    }
}

/// The job's own blocking send of `mode`.
fn native_send(mode: Mode) -> NativeBlockingSend {
    match mode {
        Mode::Standard => ffi::PMPI_Send,
        Mode::Synchronous => ffi::PMPI_Ssend,
        Mode::Buffered => ffi::PMPI_Bsend,
        Mode::Ready => ffi::PMPI_Rsend,
    }
}

type NativeSend = unsafe extern "C" fn(
    *const c_void,
    c_int,
    MPI_Datatype,
    c_int,
    c_int,
    MPI_Comm,
    *mut MPI_Request,
) -> c_int;
type NativeBlockingSend =
    unsafe extern "C" fn(*const c_void, c_int, MPI_Datatype, c_int, c_int, MPI_Comm) -> c_int;

/// Starts a send of `count` elements to merged rank `dest` in `mode`: the
/// job's own nonblocking send within the job, the bridge's to the other
/// (a buffered one owns a copy, as on an intercommunicator: the attached
/// buffer serves the job's own buffered sends only).
///
/// # Safety
/// As `MPI_Isend`; `buf` stays valid until the send completes.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn start_send(
    mc: &dyn Peers,
    mode: Mode,
    buf: *const c_void,
    n: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    call: &str,
) -> Result<Sending, Fail> {
    match place(mc, dest, call)? {
        None => Ok(Sending::Done),
        Some(Place::Local(r)) => {
            let mut req = request_null();
            // SAFETY: the program's buffer, on its handle, the rank translated.
            mpi(unsafe { native_isend(mode)(buf, n, dt, int(r), tag, comm, &mut req) })?;
            Ok(Sending::Native(req))
        }
        Some(Place::Remote(r)) => {
            // SAFETY: forwarded.
            let (sig, nn, enc) = unsafe { datatype::encode(buf, n, dt) }?;
            // SAFETY: MPI's rule for a nonblocking send: the buffer stays
            // valid and unchanged until the request completes, which
            // (`requests`) is only with the bridge's; Sendrecv waits
            // before it returns.
            let s =
                unsafe { pt2pt::bridge_isend(mc.inter(), mode, r, tag, (&sig, nn), enc.bytes) }?;
            Ok(Sending::Bridge(s))
        }
    }
}

fn finish_send(s: Sending) -> Result<(), Fail> {
    match s {
        Sending::Done => Ok(()),
        Sending::Native(mut req) => {
            // SAFETY: our own request.
            mpi(unsafe { ffi::PMPI_Wait(&mut req, status_ignore()) })
        }
        Sending::Bridge(r) => Ok(r.wait()?),
    }
}

/// A blocking send in `mode` to merged rank `dest`.
///
/// # Safety
/// As `MPI_Send`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn send_in(
    mc: &dyn Peers,
    mode: Mode,
    call: &'static str,
    buf: *const c_void,
    n: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    let run = || match place(mc, dest, call)? {
        None => Ok(()),
        // SAFETY: the program's buffer, on its handle.
        Some(Place::Local(r)) => mpi(unsafe { native_send(mode)(buf, n, dt, int(r), tag, comm) }),
        Some(Place::Remote(r)) => {
            // SAFETY: forwarded.
            let (sig, nn, enc) = unsafe { datatype::encode(buf, n, dt) }?;
            Ok(pt2pt::bridge_send(
                mc.inter(),
                mode,
                r,
                tag,
                (&sig, nn),
                enc.bytes,
            )?)
        }
    };
    code(comm, call, run())
}

/// The body of a send on a merged communicator, blocking (`send_in`) or
/// not (`isend_in`, with its request: native within the job, the bridge's
/// to the other).
macro_rules! send_body {
    ($body:ident, $name:literal, $mode:expr, $how:ident $(, $request:ident)?) => {
        #[doc = concat!("`", $name, "` on a merged communicator.")]
        ///
        /// # Safety
        /// As the MPI function.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $body(
            mc: &dyn Peers,
            buf: *const c_void,
            n: c_int,
            dt: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
            $($request: *mut MPI_Request,)?
        ) -> c_int {
            // SAFETY: forwarded.
            unsafe { $how(mc, $mode, $name, buf, n, dt, dest, tag, comm $(, $request)?) }
        }
    };
}

send_body!(send, "MPI_Send", Mode::Standard, send_in);
send_body!(ssend, "MPI_Ssend", Mode::Synchronous, send_in);
send_body!(bsend, "MPI_Bsend", Mode::Buffered, send_in);
send_body!(rsend, "MPI_Rsend", Mode::Ready, send_in);
send_body!(isend, "MPI_Isend", Mode::Standard, isend_in, request);
send_body!(issend, "MPI_Issend", Mode::Synchronous, isend_in, request);
send_body!(ibsend, "MPI_Ibsend", Mode::Buffered, isend_in, request);
send_body!(irsend, "MPI_Irsend", Mode::Ready, isend_in, request);

/// A nonblocking send in `mode`, its request into `request`.
///
/// # Safety
/// As `MPI_Isend`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn isend_in(
    mc: &dyn Peers,
    mode: Mode,
    call: &'static str,
    buf: *const c_void,
    n: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded.
    let r = match unsafe { start_send(mc, mode, buf, n, dt, dest, tag, comm, call) } {
        Ok(Sending::Done) => requests::completed(Outcome::empty()),
        Ok(Sending::Native(req)) => Ok(req),
        Ok(Sending::Bridge(s)) => requests::start(Op::Send(s), comm, call),
        Err(f) => Err(raise(comm, call, f)),
    };
    match r {
        Ok(req) => {
            // SAFETY: the program's out-pointer.
            unsafe { *request = req };
            0
        }
        Err(code) => code,
    }
}

/// What an `MPI_ANY_SOURCE` probe round found.
pub(super) enum Found {
    /// A native message, taken by a matched probe.
    Native(ffi::MPI_Message, MPI_Status),
    /// A bridge message from remote rank `.0` with tag `.1`.
    Bridge(Status),
}

/// One round of an `MPI_ANY_SOURCE` probe: native first, then the bridge.
/// `take`: a native message found is taken (matched probe).
pub(super) fn probe_any(
    mc: &dyn Peers,
    tag: c_int,
    comm: MPI_Comm,
    take: bool,
) -> Result<Option<Found>, Fail> {
    let mut flag: c_int = 0;
    let mut st = crate::mpi_glue::empty_status();
    if take {
        let mut msg = message_null();
        // SAFETY: the program's handle; our out-values.
        mpi(unsafe { ffi::PMPI_Improbe(any_source(), tag, comm, &mut flag, &mut msg, &mut st) })?;
        if flag != 0 {
            return Ok(Some(Found::Native(msg, st)));
        }
    } else {
        // SAFETY: as above.
        mpi(unsafe { ffi::PMPI_Iprobe(any_source(), tag, comm, &mut flag, &mut st) })?;
        if flag != 0 {
            return Ok(Some(Found::Native(message_null(), st)));
        }
    }
    Ok(mc
        .inter()
        .iprobe(isthmus_bridge::Source::Any, tag_of(tag))?
        .map(Found::Bridge))
}

/// Rounds of [`probe_any`] until one finds a message, polling and then
/// sleeping as `ISTHMUS_WAIT` says (`isthmus_bridge::wait`).
pub(super) fn wait_any(
    mc: &dyn Peers,
    tag: c_int,
    comm: MPI_Comm,
    take: bool,
) -> Result<Found, Fail> {
    let mut backoff = Backoff::new();
    loop {
        if let Some(f) = probe_any(mc, tag, comm, take)? {
            return Ok(f);
        }
        backoff.pause();
    }
}

fn message_null() -> ffi::MPI_Message {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_MESSAGE_NULL }
}

/// A blocking receive from merged rank `src`; the status names merged ranks.
///
/// # Safety
/// As `MPI_Recv`.
#[allow(clippy::too_many_arguments)] // MPI's own
unsafe fn recv_from(
    mc: &dyn Peers,
    buf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
    call: &str,
) -> Result<(), Fail> {
    if let Some(from) = queued(mc, src, comm) {
        // SAFETY: the program's buffer, received into before this returns.
        let mut p = unsafe { anysource::post(comm, (buf, n, dt), from, tag) }.map_err(Fail::Mpi)?;
        let mut backoff = Backoff::new();
        let o = loop {
            if let Some(r) = p.poll() {
                break r?;
            }
            backoff.pause();
        };
        // SAFETY: the program's status (or ignore).
        unsafe { fill_status(status, &o) };
        return Ok(());
    }
    if src == any_source() {
        return match wait_any(mc, tag, comm, true)? {
            Found::Native(mut msg, _) => {
                // SAFETY: the program's buffer and status; the message we took.
                mpi(unsafe { ffi::PMPI_Mrecv(buf, n, dt, &mut msg, status) })?;
                // SAFETY: as above.
                unsafe { translate(mc, status) };
                Ok(())
            }
            Found::Bridge(st) => {
                let from = int(mc.order().merged_rank(Place::Remote(st.source)));
                // SAFETY: forwarded; the earliest message from that source
                // with that tag is the one probed.
                unsafe { recv_from(mc, buf, n, dt, from, st.tag, comm, status, call) }
            }
        };
    }
    match place(mc, src, call)? {
        None => {
            // SAFETY: the program's status (or ignore).
            unsafe { fill_status(status, &Outcome::empty()) };
            Ok(())
        }
        Some(Place::Local(r)) => {
            // SAFETY: the program's buffer and status, on its handle.
            mpi(unsafe { ffi::PMPI_Recv(buf, n, dt, int(r), tag, comm, status) })?;
            // SAFETY: as above.
            unsafe { translate(mc, status) };
            Ok(())
        }
        Some(Place::Remote(r)) => {
            let nn = elements(n)?;
            let max = datatype::capacity_bytes(nn, dt)?;
            let (bytes, st) =
                mc.inter()
                    .recv_bytes(isthmus_bridge::Source::Rank(r), tag_of(tag), None, max)?;
            // SAFETY: the program's buffer has room for `n` elements.
            let mut o = unsafe { datatype::decode_received(&bytes, &st, buf, nn, dt) }?;
            o.source = int(mc.order().merged_rank(Place::Remote(r)));
            // SAFETY: the program's status (or ignore).
            unsafe { fill_status(status, &o) };
            Ok(())
        }
    }
}

/// Whether a receive from `src` goes through the communicator's queue of
/// `MPI_ANY_SOURCE` receives (see `anysource`): `Some(None)` for any
/// source, `Some(Some(r))` for rank r of the other job behind a pending
/// one; `None` when it goes straight (this job's ranks, or an empty queue).
pub(super) fn queued(mc: &dyn Peers, src: c_int, comm: MPI_Comm) -> Option<Option<u32>> {
    let busy = anysource::busy(comm);
    if src == any_source() {
        return busy.then_some(None);
    }
    match u32::try_from(src).ok().and_then(|r| mc.order().place(r)) {
        Some(Place::Remote(r)) if busy => Some(Some(r)),
        _ => None,
    }
}

/// `MPI_Recv` on a merged communicator.
///
/// # Safety
/// As `MPI_Recv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn recv(
    mc: &dyn Peers,
    buf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: forwarded.
    let r = unsafe { recv_from(mc, buf, n, dt, src, tag, comm, status, "MPI_Recv") };
    code(comm, "MPI_Recv", r)
}

/// `MPI_Irecv` on a merged communicator.
///
/// # Safety
/// As `MPI_Irecv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn irecv(
    mc: &dyn Peers,
    buf: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    const CALL: &str = "MPI_Irecv";
    let run = || -> Result<MPI_Request, Fail> {
        let from = if src == any_source() {
            Some(None)
        } else {
            queued(mc, src, comm)
        };
        if let Some(from) = from {
            // SAFETY: MPI's rule for a nonblocking receive: the buffer stays
            // valid until the request completes.
            let p = unsafe { anysource::post(comm, (buf, n, dt), from, tag) }.map_err(Fail::Mpi)?;
            return requests::start(Op::Polled(p), comm, CALL).map_err(Fail::Mpi);
        }
        match place(mc, src, CALL)? {
            None => requests::completed(Outcome::empty()).map_err(Fail::Mpi),
            Some(Place::Local(r)) => {
                let mut native = request_null();
                // SAFETY: the program's buffer, on its handle.
                mpi(unsafe { ffi::PMPI_Irecv(buf, n, dt, int(r), tag, comm, &mut native) })?;
                let map = Some(mc.order().local_ranks().clone());
                requests::start_from(Op::Native(native), comm, CALL, map).map_err(Fail::Mpi)
            }
            Some(Place::Remote(r)) => {
                let count = elements(n)?;
                let max = datatype::capacity_bytes(count, dt)?;
                let held = datatype::HeldType::hold(dt)?;
                let req = mc.inter().irecv_bytes(
                    isthmus_bridge::Source::Rank(r),
                    tag_of(tag),
                    None,
                    max,
                )?;
                let op = Op::Recv {
                    req,
                    buf,
                    count,
                    dt: held,
                };
                let map = Some(mc.order().remote_ranks().clone());
                requests::start_from(op, comm, CALL, map).map_err(Fail::Mpi)
            }
        }
    };
    match run() {
        Ok(req) => {
            // SAFETY: the program's out-pointer.
            unsafe { *request = req };
            0
        }
        Err(f) => raise(comm, CALL, f),
    }
}

/// `MPI_Sendrecv` on a merged communicator: the send started, the receive
/// done, the send completed.
///
/// # Safety
/// As `MPI_Sendrecv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn sendrecv(
    mc: &dyn Peers,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    const CALL: &str = "MPI_Sendrecv";
    let run = || {
        // SAFETY: the program's buffers, as for MPI_Sendrecv.
        let s = unsafe {
            start_send(
                mc,
                Mode::Standard,
                sendbuf,
                sendcount,
                sendtype,
                dest,
                sendtag,
                comm,
                CALL,
            )
        }?;
        // SAFETY: as above.
        unsafe {
            recv_from(
                mc, recvbuf, recvcount, recvtype, source, recvtag, comm, status, CALL,
            )
        }?;
        finish_send(s)
    };
    code(comm, CALL, run())
}

/// `MPI_Sendrecv_replace`: the buffer's data sent from a copy, the
/// message received into the buffer (as `MPI_Sendrecv` with the copy as
/// its send buffer).
///
/// # Safety
/// As `MPI_Sendrecv_replace`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn sendrecv_replace(
    mc: &dyn Peers,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let copy = crate::collbuf::Extents::of(datatype).and_then(|e| {
        // SAFETY: `buf` holds `count` elements (MPI's contract).
        elements(count).and_then(|n| unsafe { crate::collbuf::Scratch::copy_of(buf, n, &e) })
    });
    let mut copy = match copy {
        Ok(c) => c,
        Err(e) => return crate::errors::fail(comm, "MPI_Sendrecv_replace", &e),
    };
    // SAFETY: the copy and the program's buffer, `count` elements each.
    unsafe {
        sendrecv(
            mc,
            copy.ptr(),
            count,
            datatype,
            dest,
            sendtag,
            buf,
            count,
            datatype,
            source,
            recvtag,
            comm,
            status,
        )
    }
}

/// A bridge probe's status, the source as a merged rank.
pub(super) fn probed(mc: &dyn Peers, r: u32, st: &Status) -> Outcome {
    let mut o = Outcome::received(st, i64::try_from(st.bytes).unwrap_or(i64::MAX));
    o.source = int(mc.order().merged_rank(Place::Remote(r)));
    o
}

/// `MPI_Probe` on a merged communicator.
///
/// # Safety
/// As `MPI_Probe`.
pub(crate) unsafe fn probe(
    mc: &dyn Peers,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    if src == any_source() {
        let run = || {
            match wait_any(mc, tag, comm, false)? {
                Found::Native(_, st) => {
                    // SAFETY: the program's status (or ignore).
                    unsafe {
                        copy_status(status, &st);
                        translate(mc, status);
                    }
                }
                Found::Bridge(st) => {
                    // SAFETY: as above.
                    unsafe { fill_status(status, &probed(mc, st.source, &st)) };
                }
            }
            Ok(())
        };
        return code(comm, "MPI_Probe", run());
    }
    let run = || match place(mc, src, "MPI_Probe")? {
        None => {
            // SAFETY: the program's status (or ignore).
            unsafe { fill_status(status, &Outcome::empty()) };
            Ok(())
        }
        Some(Place::Local(r)) => {
            // SAFETY: the program's status, on its handle.
            mpi(unsafe { ffi::PMPI_Probe(int(r), tag, comm, status) })?;
            // SAFETY: as above.
            unsafe { translate(mc, status) };
            Ok(())
        }
        Some(Place::Remote(r)) => {
            let st = mc
                .inter()
                .probe(isthmus_bridge::Source::Rank(r), tag_of(tag))?;
            // SAFETY: the program's status (or ignore).
            unsafe { fill_status(status, &probed(mc, r, &st)) };
            Ok(())
        }
    };
    code(comm, "MPI_Probe", run())
}

/// `MPI_Iprobe` on a merged communicator.
///
/// # Safety
/// As `MPI_Iprobe`.
pub(crate) unsafe fn iprobe(
    mc: &dyn Peers,
    src: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if src == any_source() {
        let run = || {
            let found = probe_any(mc, tag, comm, false)?;
            // SAFETY: the program's out-pointers.
            unsafe {
                *flag = c_int::from(found.is_some());
                match found {
                    Some(Found::Native(_, st)) => {
                        copy_status(status, &st);
                        translate(mc, status);
                    }
                    Some(Found::Bridge(st)) => fill_status(status, &probed(mc, st.source, &st)),
                    None => {}
                }
            }
            Ok(())
        };
        return code(comm, "MPI_Iprobe", run());
    }
    let run = || match place(mc, src, "MPI_Iprobe")? {
        None => {
            // SAFETY: the program's out-pointers.
            unsafe {
                *flag = 1;
                fill_status(status, &Outcome::empty());
            }
            Ok(())
        }
        Some(Place::Local(r)) => {
            // SAFETY: the program's out-pointers, on its handle.
            mpi(unsafe { ffi::PMPI_Iprobe(int(r), tag, comm, flag, status) })?;
            // SAFETY: as above.
            if unsafe { *flag } != 0 {
                // SAFETY: as above.
                unsafe { translate(mc, status) };
            }
            Ok(())
        }
        Some(Place::Remote(r)) => {
            let st = mc
                .inter()
                .iprobe(isthmus_bridge::Source::Rank(r), tag_of(tag))?;
            // SAFETY: the program's out-pointers.
            unsafe {
                *flag = c_int::from(st.is_some());
                if let Some(st) = st {
                    fill_status(status, &probed(mc, r, &st));
                }
            }
            Ok(())
        }
    };
    code(comm, "MPI_Iprobe", run())
}

/// Copies a native status to the program's (unless ignored), keeping its error field.
///
/// # Safety
/// `status` is null, `MPI_STATUS_IGNORE` or the program's status.
unsafe fn copy_status(status: *mut MPI_Status, st: &MPI_Status) {
    // SAFETY: forwarded.
    unsafe { crate::mpi_glue::copy_status_keeping_error(status, st) }
}

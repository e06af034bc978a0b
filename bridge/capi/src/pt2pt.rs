//! MPI's point-to-point calls, interposed: over the bridge on a bridge
//! communicator, straight to `PMPI_*` on any other. The C entry points
//! that dispatch on the communicator are generated from `mpi-functions.txt`
//! (included at the end); this module holds their bodies (`send`, `recv`,
//! …), and the matched-message calls, which dispatch on the message.
//!
//! Data of any datatype (derived ones too) is encoded by the bridge's
//! datatype layer from the user's buffer, with its type signature; a
//! receive checks the signature element by element and decodes into the
//! user's buffer. `MPI_PROC_NULL` as a peer completes at once as MPI says.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

use isthmus_bridge::{BridgeError, InterComm, SendRequest, Status, TypeSig};
use mpi::ffi;

use crate::datatype;
use crate::errors;
use crate::mpi_glue::{
    fill_status, proc_null, source_of, tag_of, MPI_Comm, MPI_Datatype, MPI_Request, MPI_Status,
    Outcome,
};
use crate::requests::{self, Op};
use crate::state::BridgeComm;

fn peer(dest: c_int, ic: &InterComm) -> Result<u32, BridgeError> {
    u32::try_from(dest).map_err(|_| {
        BridgeError::InvalidArgument(format!(
            "rank {dest} is not a rank of the remote group (size {})",
            ic.remote_size()
        ))
    })
}

fn source(src: c_int) -> Result<isthmus_bridge::Source, BridgeError> {
    source_of(src)
        .ok_or_else(|| BridgeError::InvalidArgument(format!("source {src} is not a rank")))
}

/// A send mode. On the bridge a ready send is a standard one (its receive
/// is posted, as MPI requires); natively (merged communicators) each is
/// the job's own.
#[derive(Clone, Copy)]
pub(crate) enum Mode {
    Standard,
    Synchronous,
    /// Buffered: completes locally (our sends own a copy of the data).
    Buffered,
    Ready,
}

/// A blocking bridge send of an encoded message to remote rank `to`.
pub(crate) fn bridge_send(
    ic: &InterComm,
    mode: Mode,
    to: u32,
    tag: c_int,
    (sig, n): (&TypeSig, u64),
    bytes: Cow<'_, [u8]>,
) -> Result<(), BridgeError> {
    match mode {
        Mode::Standard | Mode::Ready => ic.send_bytes(to, tag, sig, n, &bytes),
        Mode::Synchronous => ic.ssend_bytes(to, tag, sig, n, &bytes),
        // Buffered: the send owns a copy, so it completes here.
        Mode::Buffered => ic
            .isend_bytes(to, tag, sig, n, bytes.into_owned())
            .map(drop),
    }
}

/// Starts a bridge send of an encoded message to remote rank `to`.
///
/// # Safety
/// Borrowed `bytes` are lent to the bridge in the standard, ready and
/// synchronous modes: they stay valid and unchanged until the request
/// completes (MPI's rule for a nonblocking send's buffer).
pub(crate) unsafe fn bridge_isend(
    ic: &InterComm,
    mode: Mode,
    to: u32,
    tag: c_int,
    (sig, n): (&TypeSig, u64),
    bytes: Cow<'_, [u8]>,
) -> Result<SendRequest, BridgeError> {
    match (mode, bytes) {
        // The user's own bytes (a predefined type in this host's order):
        // lent to the bridge until the request completes, never copied, so
        // that sends posted to a receiver that does not receive yet hold
        // no memory of the library's (issue 23, item 2).
        // SAFETY: the buffer stays valid and unchanged until the request
        // completes (this function's contract), and the request (`finish`
        // in requests) completes only with the bridge's, which is set
        // after its last read of the bytes. A freed request
        // (MPI_Request_free) leaves the program to learn of the completion
        // otherwise (a reply), as MPI says.
        (Mode::Standard | Mode::Ready, Cow::Borrowed(b)) => unsafe {
            ic.isend_lent(to, tag, sig, n, b.as_ptr(), b.len())
        },
        // SAFETY: as above.
        (Mode::Synchronous, Cow::Borrowed(b)) => unsafe {
            ic.issend_lent(to, tag, sig, n, b.as_ptr(), b.len())
        },
        // A packed copy (derived or converted types): the bridge keeps it.
        (Mode::Synchronous, bytes) => ic.issend_bytes(to, tag, sig, n, bytes.into_owned()),
        (Mode::Standard | Mode::Ready, Cow::Owned(v)) => ic.isend_bytes(to, tag, sig, n, v),
        // Buffered completes without waiting for the receiver (within its
        // credit) or keeps a copy: the bridge keeps no reference to the
        // user's buffer.
        (Mode::Buffered, bytes) => ic.isend_borrowed(to, tag, sig, n, &bytes),
    }
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Send`.
unsafe fn send_mode(
    bc: &BridgeComm,
    mode: Mode,
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
) -> Result<(), BridgeError> {
    if dest == proc_null() {
        return Ok(());
    }
    let to = peer(dest, &bc.inter)?;
    // SAFETY: forwarded.
    let (sig, n, enc) = unsafe { datatype::encode(buf, count, dt) }?;
    bridge_send(&bc.inter, mode, to, tag, (&sig, n), enc.bytes)
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Isend`.
#[allow(clippy::too_many_arguments)] // MPI_Isend's own six, plus the call's identity
unsafe fn isend_mode(
    bc: &BridgeComm,
    comm: MPI_Comm,
    mode: Mode,
    call: &'static str,
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
) -> Result<MPI_Request, c_int> {
    let fail = |e: BridgeError| errors::fail(comm, call, &e);
    if dest == proc_null() {
        return requests::completed(Outcome::empty());
    }
    let to = peer(dest, &bc.inter).map_err(fail)?;
    // SAFETY: forwarded.
    let (sig, n, enc) = unsafe { datatype::encode(buf, count, dt) }.map_err(fail)?;
    // SAFETY: MPI's rule for a nonblocking send: the buffer stays valid
    // and unchanged until MPI_Wait/MPI_Test completes the request.
    let r =
        unsafe { bridge_isend(&bc.inter, mode, to, tag, (&sig, n), enc.bytes) }.map_err(fail)?;
    requests::start(Op::Send(r), comm, call)
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Recv`.
unsafe fn recv_on(
    bc: &BridgeComm,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    src: c_int,
    tag: c_int,
) -> Result<Outcome, BridgeError> {
    if src == proc_null() {
        return Ok(Outcome::empty());
    }
    let n = usize::try_from(count)
        .map_err(|_| BridgeError::InvalidArgument(format!("count {count} is negative")))?;
    // SAFETY: the program's buffer, as for MPI_Recv.
    if let Some(out) = unsafe { datatype::raw_target(buf, n, dt) }? {
        // A predefined type: received straight into the user's buffer
        // (zero-copy when the receive is posted first).
        return out.recv(|bytes| {
            bc.inter
                .recv_bytes_into(source(src)?, tag_of(tag), None, bytes)
        });
    }
    let (bytes, st) = bc.inter.recv_bytes(
        source(src)?,
        tag_of(tag),
        None,
        datatype::capacity_bytes(n, dt)?,
    )?;
    // SAFETY: forwarded.
    unsafe { datatype::decode_received(&bytes, &st, buf, n, dt) }
}

fn done(comm: MPI_Comm, call: &str, r: Result<(), BridgeError>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => errors::fail(comm, call, &e),
    }
}

fn out_request(r: Result<MPI_Request, c_int>, request: *mut MPI_Request) -> c_int {
    match r {
        Ok(req) => {
            // SAFETY: the program's out-pointer.
            unsafe { *request = req };
            0
        }
        Err(code) => code,
    }
}

/// The body of a blocking send (see the module).
macro_rules! blocking_send {
    ($body:ident, $name:literal, $mode:expr) => {
        #[doc = concat!("`", $name, "` on an Isthmus communicator.")]
        ///
        /// # Safety
        /// As the MPI function.
        pub(crate) unsafe fn $body(
            bc: &BridgeComm,
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
        ) -> c_int {
            // SAFETY: as for MPI_Send.
            let r = unsafe { send_mode(bc, $mode, buf, count, datatype, dest, tag) };
            done(comm, $name, r)
        }
    };
}

blocking_send!(send, "MPI_Send", Mode::Standard);
blocking_send!(ssend, "MPI_Ssend", Mode::Synchronous);
blocking_send!(rsend, "MPI_Rsend", Mode::Ready);
blocking_send!(bsend, "MPI_Bsend", Mode::Buffered);

/// The body of a nonblocking send (see the module).
macro_rules! nonblocking_send {
    ($body:ident, $name:literal, $mode:expr) => {
        #[doc = concat!("`", $name, "` on an Isthmus communicator.")]
        ///
        /// # Safety
        /// As the MPI function.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $body(
            bc: &BridgeComm,
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            // SAFETY: as for MPI_Isend.
            let r = unsafe { isend_mode(bc, comm, $mode, $name, buf, count, datatype, dest, tag) };
            out_request(r, request)
        }
    };
}

nonblocking_send!(isend, "MPI_Isend", Mode::Standard);
nonblocking_send!(issend, "MPI_Issend", Mode::Synchronous);
nonblocking_send!(irsend, "MPI_Irsend", Mode::Ready);
nonblocking_send!(ibsend, "MPI_Ibsend", Mode::Buffered);

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Recv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn recv(
    bc: &Arc<BridgeComm>,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: as for MPI_Recv.
    match unsafe { recv_on(bc, buf, count, datatype, source, tag) } {
        Ok(o) => {
            // SAFETY: the program's status (or ignore).
            unsafe { fill_status(status, &o) };
            0
        }
        Err(e) => errors::fail(comm, "MPI_Recv", &e),
    }
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Irecv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn irecv(
    bc: &Arc<BridgeComm>,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let r = irecv_on(bc, comm, buf, count, datatype, source, tag);
    out_request(r, request)
}

fn irecv_on(
    bc: &Arc<BridgeComm>,
    comm: MPI_Comm,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    src: c_int,
    tag: c_int,
) -> Result<MPI_Request, c_int> {
    let fail = |e: BridgeError| errors::fail(comm, "MPI_Irecv", &e);
    if src == proc_null() {
        return requests::completed(Outcome::empty());
    }
    let n = usize::try_from(count)
        .map_err(|_| BridgeError::InvalidArgument(format!("count {count} is negative")))
        .map_err(fail)?;
    let max = datatype::capacity_bytes(n, dt).map_err(fail)?;
    let held = datatype::HeldType::hold(dt).map_err(fail)?;
    let req = bc
        .inter
        .irecv_bytes(source(src).map_err(fail)?, tag_of(tag), None, max)
        .map_err(fail)?;
    requests::start(
        Op::Recv {
            req,
            buf,
            count: n,
            dt: held,
        },
        comm,
        "MPI_Irecv",
    )
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Sendrecv`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn sendrecv(
    bc: &Arc<BridgeComm>,
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
    // SAFETY: the send buffer holds sendcount elements (MPI_Sendrecv's contract).
    match unsafe {
        sendrecv_on(
            bc, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
            recvtag,
        )
    } {
        Ok(o) => {
            // SAFETY: the program's status (or ignore).
            unsafe { fill_status(status, &o) };
            0
        }
        Err(e) => errors::fail(comm, "MPI_Sendrecv", &e),
    }
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Sendrecv`.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_on(
    bc: &BridgeComm,
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
) -> Result<Outcome, BridgeError> {
    // The send is started first and owns a copy of its data, so the
    // receive may reuse the buffer (MPI_Sendrecv_replace) and two ranks
    // exchanging large messages do not wait on each other.
    let sent = if dest == proc_null() {
        None
    } else {
        let to = peer(dest, &bc.inter)?;
        // SAFETY: forwarded.
        let (sig, n, enc) = unsafe { datatype::encode(sendbuf, sendcount, sendtype) }?;
        Some(
            bc.inter
                .isend_bytes(to, sendtag, &sig, n, enc.bytes.into_owned())?,
        )
    };
    // SAFETY: forwarded.
    let got = unsafe { recv_on(bc, recvbuf, recvcount, recvtype, source, recvtag) };
    if let Some(s) = sent {
        s.wait()?;
    }
    got
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Sendrecv_replace`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn sendrecv_replace(
    bc: &Arc<BridgeComm>,
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
    // SAFETY: `buf` holds `count` elements both ways (the call's contract);
    // the send copies it before the receive writes.
    match unsafe {
        sendrecv_on(
            bc, buf, count, datatype, dest, sendtag, buf, count, datatype, source, recvtag,
        )
    } {
        Ok(o) => {
            // SAFETY: the program's status (or ignore).
            unsafe { fill_status(status, &o) };
            0
        }
        Err(e) => errors::fail(comm, "MPI_Sendrecv_replace", &e),
    }
}

fn probed(st: &Status) -> Outcome {
    Outcome::received(st, i64::try_from(st.bytes).unwrap_or(i64::MAX))
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Probe`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn probe(
    bc: &Arc<BridgeComm>,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let r = if source == proc_null() {
        Ok(Outcome::empty())
    } else {
        self::source(source).and_then(|s| bc.inter.probe(s, tag_of(tag)).map(|st| probed(&st)))
    };
    match r {
        Ok(o) => {
            // SAFETY: the program's status (or ignore).
            unsafe { fill_status(status, &o) };
            0
        }
        Err(e) => errors::fail(comm, "MPI_Probe", &e),
    }
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Iprobe`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn iprobe(
    bc: &Arc<BridgeComm>,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let r = if source == proc_null() {
        Ok(Some(Outcome::empty()))
    } else {
        self::source(source).and_then(|s| {
            bc.inter
                .iprobe(s, tag_of(tag))
                .map(|st| st.as_ref().map(probed))
        })
    };
    match r {
        Ok(found) => {
            // SAFETY: the program's out-pointers.
            unsafe {
                *flag = c_int::from(found.is_some());
                if let Some(o) = found {
                    fill_status(status, &o);
                }
            }
            0
        }
        Err(e) => errors::fail(comm, "MPI_Iprobe", &e),
    }
}

// ------------------------------------------------------- matched probes

/// Messages taken by `MPI_Mprobe`/`MPI_Improbe` and not yet received, by
/// the handle given out for them. The handles are small odd numbers, which
/// neither implementation uses for its own messages (Open MPI's are
/// pointers, MPICH's carry kind bits above 2^26), so `MPI_Mrecv` knows
/// ours from theirs.
/// Besides the bridge's, native messages of a merged communicator or a
/// mixed intercommunicator (`merged::mprobe`), kept here so that their
/// statuses name the communicator's ranks (`sources`: the native or bridge
/// source `s` is reported as `sources[s]`).
pub(crate) struct Taken {
    kind: TakenKind,
    comm: MPI_Comm,
    sources: Option<Arc<[u32]>>,
}

enum TakenKind {
    Bridge(isthmus_bridge::RecvRequest),
    Native(ffi::MPI_Message),
}

impl Taken {
    /// A message taken off the bridge's queue, its source reported through `sources`.
    pub(crate) fn bridge(
        req: isthmus_bridge::RecvRequest,
        comm: MPI_Comm,
        sources: Option<Arc<[u32]>>,
    ) -> Taken {
        Taken {
            kind: TakenKind::Bridge(req),
            comm,
            sources,
        }
    }

    /// A native message (the MPI's matched probe's), its source reported
    /// through `sources`.
    pub(crate) fn native(msg: ffi::MPI_Message, comm: MPI_Comm, sources: Arc<[u32]>) -> Taken {
        Taken {
            kind: TakenKind::Native(msg),
            comm,
            sources: Some(sources),
        }
    }
}

/// The source `s` as a taken message's communicator names it.
fn named(sources: &Option<Arc<[u32]>>, s: c_int) -> c_int {
    match (sources, usize::try_from(s)) {
        (Some(map), Ok(i)) => map
            .get(i)
            .and_then(|&r| c_int::try_from(r).ok())
            .unwrap_or(s),
        _ => s,
    }
}
// SAFETY: the communicator and message handles are process-wide values;
// the request is Send.
unsafe impl Send for Taken {}

static TAKEN: std::sync::Mutex<Option<std::collections::HashMap<usize, Taken>>> =
    std::sync::Mutex::new(None);
static NEXT_MESSAGE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

fn message_of(key: usize) -> ffi::MPI_Message {
    const { assert!(std::mem::size_of::<ffi::MPI_Message>() <= std::mem::size_of::<usize>()) };
    // SAFETY: MPI_Message is a plain integer or pointer newtype no larger
    // than a word (checked above); the handle is never dereferenced: only
    // our own MPI_Mrecv/MPI_Imrecv read it back.
    unsafe { std::mem::transmute_copy::<usize, ffi::MPI_Message>(&key) }
}

fn key_of(m: ffi::MPI_Message) -> usize {
    m.0 as usize
}

/// Takes the message `st` describes off the matching queue (the next one
/// from its source with its tag: messages do not overtake) and returns
/// its handle.
fn take(bc: &BridgeComm, comm: MPI_Comm, st: &Status) -> Result<ffi::MPI_Message, BridgeError> {
    let req = take_bridge(&bc.inter, st)?;
    Ok(keep(Taken::bridge(req, comm, None)))
}

/// Posts the receive that takes the bridge message `st` describes off the
/// queue (the next one from its source with its tag: messages do not
/// overtake).
pub(crate) fn take_bridge(
    ic: &isthmus_bridge::InterComm,
    st: &Status,
) -> Result<isthmus_bridge::RecvRequest, BridgeError> {
    ic.irecv_bytes(
        isthmus_bridge::Source::Rank(st.source),
        isthmus_bridge::Tag::Value(st.tag),
        None,
        usize::try_from(st.bytes).unwrap_or(usize::MAX),
    )
}

/// Keeps a taken message until its `MPI_Mrecv`/`MPI_Imrecv`; its handle.
pub(crate) fn keep(t: Taken) -> ffi::MPI_Message {
    // Odd, so never an aligned pointer; small, so never an MPICH handle.
    let key = (NEXT_MESSAGE.fetch_add(2, std::sync::atomic::Ordering::Relaxed) % (1 << 24)) | 1;
    TAKEN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(Default::default)
        .insert(key, t);
    message_of(key)
}

/// Whether `m` is a message `MPI_Mprobe`/`MPI_Improbe` took from the bridge.
#[cfg_attr(not(isthmus_large_count), allow(dead_code))] // used by the large-count shells
pub(crate) fn is_taken(m: ffi::MPI_Message) -> bool {
    TAKEN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .is_some_and(|t| t.contains_key(&key_of(m)))
}

fn taken(m: ffi::MPI_Message) -> Option<Taken> {
    TAKEN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_mut()?
        .remove(&key_of(m))
}

fn message_no_proc() -> ffi::MPI_Message {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_MESSAGE_NO_PROC }
}

fn message_null() -> ffi::MPI_Message {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_MESSAGE_NULL }
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Mprobe`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn mprobe(
    bc: &Arc<BridgeComm>,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut ffi::MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    if source == proc_null() {
        // SAFETY: the program's out-pointers.
        unsafe {
            *message = message_no_proc();
            fill_status(status, &Outcome::empty());
        }
        return 0;
    }
    let r = self::source(source)
        .and_then(|s| bc.inter.probe(s, tag_of(tag)))
        .and_then(|st| take(bc, comm, &st).map(|m| (m, st)));
    match r {
        Ok((m, st)) => {
            // SAFETY: the program's out-pointers.
            unsafe {
                *message = m;
                fill_status(status, &probed(&st));
            }
            0
        }
        Err(e) => errors::fail(comm, "MPI_Mprobe", &e),
    }
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Improbe`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn improbe(
    bc: &Arc<BridgeComm>,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut ffi::MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    if source == proc_null() {
        // SAFETY: the program's out-pointers.
        unsafe {
            *flag = 1;
            *message = message_no_proc();
            fill_status(status, &Outcome::empty());
        }
        return 0;
    }
    let r = self::source(source)
        .and_then(|s| bc.inter.iprobe(s, tag_of(tag)))
        .and_then(|found| match found {
            Some(st) => take(bc, comm, &st).map(|m| Some((m, st))),
            None => Ok(None),
        });
    match r {
        Ok(found) => {
            // SAFETY: the program's out-pointers.
            unsafe {
                *flag = c_int::from(found.is_some());
                if let Some((m, st)) = found {
                    *message = m;
                    fill_status(status, &probed(&st));
                }
            }
            0
        }
        Err(e) => errors::fail(comm, "MPI_Improbe", &e),
    }
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Mrecv`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    message: *mut ffi::MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    let Some(t) = (if message.is_null() {
        None
    } else {
        // SAFETY: the program's message handle, not null.
        taken(unsafe { *message })
    }) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Mrecv(buf, count, datatype, message, status) };
    };
    // SAFETY: the program's out-pointer.
    unsafe { *message = message_null() };
    let n = usize::try_from(count).unwrap_or(0);
    let r = match t.kind {
        TakenKind::Bridge(req) => req.wait().and_then(|(bytes, st)| {
            // SAFETY: `buf` holds `count` elements of `datatype` (MPI_Mrecv's contract).
            unsafe { datatype::decode_received(&bytes, &st, buf, n, datatype) }
        }),
        TakenKind::Native(mut msg) => {
            let mut st = crate::mpi_glue::empty_status();
            // SAFETY: the program's buffer; the MPI's message, taken once.
            let rc = unsafe { ffi::PMPI_Mrecv(buf, count, datatype, &mut msg, &mut st) };
            if rc != 0 {
                return errors::raise(t.comm, rc);
            }
            st.MPI_SOURCE = named(&t.sources, st.MPI_SOURCE);
            // SAFETY: the program's status (or ignore).
            unsafe { crate::mpi_glue::copy_status_keeping_error(status, &st) };
            return 0;
        }
    };
    match r {
        Ok(mut o) => {
            o.source = named(&t.sources, o.source);
            // SAFETY: the program's status (or ignore).
            unsafe { fill_status(status, &o) };
            0
        }
        Err(e) => errors::fail(t.comm, "MPI_Mrecv", &e),
    }
}

/// On an Isthmus communicator.
///
/// # Safety
/// As `MPI_Imrecv`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    message: *mut ffi::MPI_Message,
    request: *mut MPI_Request,
) -> c_int {
    let Some(t) = (if message.is_null() {
        None
    } else {
        // SAFETY: the program's message handle, not null.
        taken(unsafe { *message })
    }) else {
        // SAFETY: the program's arguments, passed on.
        return unsafe { ffi::PMPI_Imrecv(buf, count, datatype, message, request) };
    };
    // SAFETY: the program's out-pointer.
    unsafe { *message = message_null() };
    let op = match t.kind {
        TakenKind::Bridge(req) => {
            let held = match datatype::HeldType::hold(datatype) {
                Ok(h) => h,
                Err(e) => return errors::fail(t.comm, "MPI_Imrecv", &e),
            };
            Op::Recv {
                req,
                buf,
                count: usize::try_from(count).unwrap_or(0),
                dt: held,
            }
        }
        TakenKind::Native(mut msg) => {
            let mut native = crate::mpi_glue::request_null();
            // SAFETY: the program's buffer (MPI's rule: valid until the
            // request completes); the MPI's message, taken once.
            let rc = unsafe { ffi::PMPI_Imrecv(buf, count, datatype, &mut msg, &mut native) };
            if rc != 0 {
                return errors::raise(t.comm, rc);
            }
            Op::Native(native)
        }
    };
    out_request(
        requests::start_from(op, t.comm, "MPI_Imrecv", t.sources),
        request,
    )
}

include!(concat!(env!("OUT_DIR"), "/shells_pt2pt.rs"));

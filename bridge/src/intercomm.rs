//! [`InterComm`]: the intercommunicator — a local group (this job) and a
//! remote group (the other job) — as the application sees it: ranks, group
//! sizes, its context and the contexts derived from it, and the typed and
//! buffer wrappers over the byte-level calls. Every message goes through
//! the point-to-point layer (`p2p`): one [`Channel`] for the user's
//! messages, another, on a context of its own, for the collectives
//! (`coll`), so that collective traffic can never match a user receive,
//! and a third for the nonblocking collectives (their messages are tagged
//! by the operation's sequence number, and never meet a blocking one's).
//! [`Engine::intercomm`] is defined here, so the engine does not depend on
//! intercommunicators.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use crate::address::Route;
use crate::datatype;
use crate::endpoint::Endpoint;
use crate::engine::Engine;
use crate::error::{BridgeError, Result};
use crate::format::WireFormat;
use crate::lending::SendScope;
use crate::matching::{Source, Status, Tag};
use crate::p2p::Channel;
use crate::payload::{Lent, SendBytes};
use crate::request::{RecvRequest, SendRequest, TypedRecvRequest};
use crate::transport::SingleCopyStats;
use crate::wire::{TypeSig, WireType};

/// An intercommunicator. `Send + Sync`; dropping it unregisters its contexts.
pub struct InterComm {
    engine: Arc<Engine>,
    /// The user's point-to-point messages.
    p2p: Channel,
    /// The collectives' messages: a context of its own (see [`coll_context`]).
    coll: Channel,
    /// The nonblocking collectives' messages (see [`nbc_context`]).
    nbc: Channel,
    local_size: u32,
}

/// The context of an intercommunicator's collectives: derived from its
/// context as `derived` contexts are, under a key no user context is made
/// from, so both sides compute it alike and it differs from every context
/// a program's messages travel on (as MPI requires of collective traffic;
/// MPICH likewise gives each communicator a separate collective context).
fn coll_context(context: u64) -> u64 {
    let mut key = context.to_le_bytes().to_vec();
    key.extend_from_slice(b"\x1fcoll\x1f");
    crate::hash::fnv1a64(&key, crate::hash::FNV_OFFSET)
}

/// The context of an intercommunicator's nonblocking collectives, derived
/// as [`coll_context`] under a key of its own: the blocking collectives
/// receive the next message of their peer whatever its tag, which must not
/// be a nonblocking collective's still in flight.
fn nbc_context(context: u64) -> u64 {
    let mut key = context.to_le_bytes().to_vec();
    key.extend_from_slice(b"\x1fnbc\x1f");
    crate::hash::fnv1a64(&key, crate::hash::FNV_OFFSET)
}

impl Engine {
    /// Create an intercommunicator: `remote[i]` is the endpoint of remote rank i.
    /// Messages that arrived for `context` before this call are kept and matched.
    pub fn intercomm(
        self: &Arc<Self>,
        context: u64,
        local_rank: u32,
        local_size: u32,
        remote: Vec<Endpoint>,
    ) -> Result<InterComm> {
        if local_rank >= local_size {
            return Err(BridgeError::InvalidArgument(format!(
                "local rank {local_rank} is not below local size {local_size}"
            )));
        }
        let p2p = Channel::open(&self.shared, context, local_rank, remote.clone())?;
        let coll = Channel::open(
            &self.shared,
            coll_context(context),
            local_rank,
            remote.clone(),
        )?;
        let nbc = Channel::open(&self.shared, nbc_context(context), local_rank, remote)?;
        Ok(InterComm {
            engine: Arc::clone(self),
            p2p,
            coll,
            nbc,
            local_size,
        })
    }
}

impl InterComm {
    /// The `n`-th communicator derived from this one (`MPI_Comm_dup`): same
    /// groups, a context both sides compute alike as long as they derive in
    /// the same order, as MPI requires of collective calls.
    pub fn derived(&self, n: u64) -> Result<InterComm> {
        let mut key = self.context().to_le_bytes().to_vec();
        key.extend_from_slice(b"\x1fdup\x1f");
        key.extend_from_slice(&n.to_le_bytes());
        let context = crate::hash::fnv1a64(&key, crate::hash::FNV_OFFSET);
        self.engine.intercomm(
            context,
            self.rank(),
            self.local_size,
            self.p2p.remote().to_vec(),
        )
    }

    /// A communicator between subsets of this one's two groups
    /// (`MPI_Comm_split` of a merged communicator, or of an
    /// intercommunicator): this process is rank `local_rank` of `local_size`
    /// in the new local group, and the new remote group is this one's
    /// remote ranks `remote`, in that order. Both sides must pass the same
    /// `key` (e.g. how many communicators were derived before, and the
    /// split's color) and agree on the two subsets; the context is derived
    /// from this one's and the key, as [`InterComm::derived`] does, so no
    /// message is exchanged (the peers' connections are already admitted).
    pub fn subset(
        &self,
        key: &[u8],
        local_rank: u32,
        local_size: u32,
        remote: &[u32],
    ) -> Result<InterComm> {
        let mut k = self.context().to_le_bytes().to_vec();
        k.extend_from_slice(b"\x1fsubset\x1f");
        k.extend_from_slice(key);
        let context = crate::hash::fnv1a64(&k, crate::hash::FNV_OFFSET);
        let all = self.p2p.remote();
        let endpoints = remote
            .iter()
            .map(|&r| {
                all.get(r as usize).cloned().ok_or_else(|| {
                    BridgeError::InvalidArgument(format!(
                        "remote rank {r} out of range (remote size {})",
                        all.len()
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.engine
            .intercomm(context, local_rank, local_size, endpoints)
    }

    /// An intercommunicator on a context derived from `key` alone (every
    /// side passes the same key, e.g. the port both met on) whose remote group is the remote
    /// groups of `parts`, one after the other, and in which this process is
    /// rank `local_rank` of `local_size` (`MPI_Comm_spawn_multiple` across
    /// implementations: the parents met each part of the children's world
    /// on its own, and the children's local group is their whole world).
    /// The peers' connections are already admitted by `parts`, so no
    /// message is exchanged.
    pub fn joined(
        parts: &[&InterComm],
        key: &[u8],
        local_rank: u32,
        local_size: u32,
    ) -> Result<InterComm> {
        let first = parts
            .first()
            .ok_or_else(|| BridgeError::InvalidArgument("no intercommunicator to join".into()))?;
        let remote = parts
            .iter()
            .flat_map(|p| p.p2p.remote().iter().cloned())
            .collect();
        let mut k = b"\x1fjoined\x1f".to_vec();
        k.extend_from_slice(key);
        let context = crate::hash::fnv1a64(&k, crate::hash::FNV_OFFSET);
        first
            .engine
            .intercomm(context, local_rank, local_size, remote)
    }

    /// The identity of the process (its engine) that is remote rank `rank`
    /// (MPI groups name processes by it across communicators).
    pub fn remote_process(&self, rank: u32) -> Option<uuid::Uuid> {
        self.p2p.remote().get(rank as usize).map(|e| e.process)
    }

    /// Context id of this intercomm.
    pub fn context(&self) -> u64 {
        self.p2p.context()
    }
    /// This process's rank in the local group.
    pub fn rank(&self) -> u32 {
        self.p2p.local_rank()
    }
    /// Size of the local group.
    pub fn local_size(&self) -> u32 {
        self.local_size
    }
    /// Size of the remote group.
    pub fn remote_size(&self) -> u32 {
        self.p2p.remote().len() as u32
    }
    /// The engine this intercomm runs on.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
    /// The point-to-point channel of this intercomm's collectives.
    pub(crate) fn coll_channel(&self) -> &Channel {
        &self.coll
    }
    /// The point-to-point channel of this intercomm's nonblocking collectives.
    pub(crate) fn nbc_channel(&self) -> &Channel {
        &self.nbc
    }
    /// How the data connection to remote rank `rank` went (transport, our
    /// address, the address dialled); None until something was sent to it.
    pub fn route(&self, rank: u32) -> Result<Option<Route>> {
        let ep = self.p2p.remote().get(rank as usize).ok_or_else(|| {
            BridgeError::InvalidArgument(format!(
                "remote rank {rank} out of range (remote size {})",
                self.remote_size()
            ))
        })?;
        Ok(self.engine.route_to(ep.process))
    }

    // ---------------------------------------------------------- byte layer

    /// Blocking standard-mode send. A message up to the eager limit returns
    /// once the bytes are in the kernel (or, when the receiver has no credit
    /// left, once they are buffered in this process); a larger one returns
    /// once the receiver matched it and the payload went out. Either waits
    /// first, if the receiver has not formed its intercomm yet, until it has
    /// and admitted our connection (as MPI allows a standard send to block).
    pub fn send_bytes(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
    ) -> Result<()> {
        self.p2p.send(dest, tag, sig, count, payload)
    }

    /// Blocking synchronous send: returns once the receiver MATCHED the message.
    pub fn ssend_bytes(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
    ) -> Result<()> {
        self.p2p.ssend(dest, tag, sig, count, payload, None)
    }

    /// [`InterComm::ssend_bytes`] with an upper bound on the wait for the match.
    /// On timeout the message has been sent and may still be matched later.
    pub fn ssend_bytes_timeout(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
        timeout: Duration,
    ) -> Result<()> {
        self.p2p
            .ssend(dest, tag, sig, count, payload, Some(timeout))
    }

    /// Non-blocking standard-mode send; completes without the application calling in again.
    pub fn isend_bytes(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: Vec<u8>,
    ) -> Result<SendRequest> {
        self.p2p
            .isend(dest, tag, sig, count, SendBytes::Owned(payload))
    }

    /// Non-blocking standard-mode send of borrowed bytes: written at once
    /// when the connection is idle (no copy), else copied and queued — the
    /// request never refers to `payload` after this returns.
    pub fn isend_borrowed(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: &[u8],
    ) -> Result<SendRequest> {
        self.p2p
            .isend(dest, tag, sig, count, SendBytes::Borrowed(payload))
    }

    /// Non-blocking standard-mode send from memory the caller lends to the
    /// request: nothing is copied, whatever the size and however many sends
    /// wait for a receiver that does not receive yet (MPI's `MPI_Isend`:
    /// the request stays incomplete instead of the library holding a copy).
    /// The request completes once the bytes were written to the transport.
    ///
    /// # Safety
    /// `len` bytes at `ptr` must be readable, and stay valid and unchanged,
    /// until the returned request has completed (`wait` returned, or `test`
    /// said true) — if the request is dropped before, until the message
    /// was received. `ptr` may be dangling only if `len` is 0.
    #[allow(clippy::too_many_arguments)] // an isend's five, and the memory as pointer and length
    pub unsafe fn isend_lent(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        ptr: *const u8,
        len: usize,
    ) -> Result<SendRequest> {
        // SAFETY: the caller's promise, as this function's.
        let lent = unsafe { Lent::new(ptr, len) };
        self.p2p.isend(dest, tag, sig, count, SendBytes::Lent(lent))
    }

    /// [`InterComm::isend_lent`] in synchronous mode: the request completes
    /// once the receiver matched the message (and its bytes were written).
    ///
    /// # Safety
    /// As [`InterComm::isend_lent`].
    #[allow(clippy::too_many_arguments)] // as isend_lent
    pub unsafe fn issend_lent(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        ptr: *const u8,
        len: usize,
    ) -> Result<SendRequest> {
        // SAFETY: the caller's promise, as this function's.
        let lent = unsafe { Lent::new(ptr, len) };
        self.p2p
            .issend(dest, tag, sig, count, SendBytes::Lent(lent))
    }

    /// Non-blocking synchronous send: the request completes once the receiver matched it.
    pub fn issend_bytes(
        &self,
        dest: u32,
        tag: i32,
        sig: &TypeSig,
        count: u64,
        payload: Vec<u8>,
    ) -> Result<SendRequest> {
        self.p2p
            .issend(dest, tag, sig, count, SendBytes::Owned(payload))
    }

    /// Blocking receive into `buf` (zero-copy when the receive is posted before the message arrives).
    pub fn recv_bytes_into(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        buf: &mut [u8],
    ) -> Result<Status> {
        self.p2p.recv_into(source, tag, expected_sig, buf, None)
    }

    /// [`InterComm::recv_bytes_into`] with an upper bound; on timeout nothing is consumed.
    pub fn recv_bytes_into_timeout(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<Status> {
        self.p2p
            .recv_into(source, tag, expected_sig, buf, Some(timeout))
    }

    /// Blocking receive of a message of at most `max_bytes`; returns its bytes.
    pub fn recv_bytes(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, Status)> {
        self.irecv_bytes(source, tag, expected_sig, max_bytes)?
            .wait()
    }

    /// [`InterComm::recv_bytes`] with an upper bound; on timeout nothing is consumed.
    pub fn recv_bytes_timeout(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<(Vec<u8>, Status)> {
        self.irecv_bytes(source, tag, expected_sig, max_bytes)?
            .wait_timeout(timeout)
    }

    /// Non-blocking receive of a message of at most `max_bytes`.
    pub fn irecv_bytes(
        &self,
        source: Source,
        tag: Tag,
        expected_sig: Option<u64>,
        max_bytes: usize,
    ) -> Result<RecvRequest> {
        self.p2p.irecv(source, tag, expected_sig, max_bytes)
    }

    /// Non-blocking probe: status of the first matching unexpected message, without consuming it.
    pub fn iprobe(&self, source: Source, tag: Tag) -> Result<Option<Status>> {
        self.p2p.iprobe(source, tag)
    }

    /// Blocking probe.
    pub fn probe(&self, source: Source, tag: Tag) -> Result<Status> {
        self.p2p.probe(source, tag, None)
    }

    /// Blocking probe with an upper bound.
    pub fn probe_timeout(&self, source: Source, tag: Tag, timeout: Duration) -> Result<Status> {
        self.p2p.probe(source, tag, Some(timeout))
    }

    // ---------------------------------------------------------- typed layer

    /// Typed blocking send.
    pub fn send<T: WireType>(&self, dest: u32, tag: i32, buf: &[T]) -> Result<()> {
        send_typed_on(&self.p2p, dest, tag, buf)
    }

    /// Typed synchronous send.
    pub fn ssend<T: WireType>(&self, dest: u32, tag: i32, buf: &[T]) -> Result<()> {
        self.ssend_bytes(
            dest,
            tag,
            &T::type_sig()?,
            buf.len() as u64,
            &T::encode(buf)?,
        )
    }

    /// Typed synchronous send with an upper bound on the wait for the match.
    pub fn ssend_timeout<T: WireType>(
        &self,
        dest: u32,
        tag: i32,
        buf: &[T],
        timeout: Duration,
    ) -> Result<()> {
        self.ssend_bytes_timeout(
            dest,
            tag,
            &T::type_sig()?,
            buf.len() as u64,
            &T::encode(buf)?,
            timeout,
        )
    }

    /// Typed non-blocking send. Written from the caller's memory when the
    /// connection is idle; otherwise the data are copied into the request.
    pub fn isend<T: WireType>(&self, dest: u32, tag: i32, buf: &[T]) -> Result<SendRequest> {
        self.p2p.isend(
            dest,
            tag,
            &T::type_sig()?,
            buf.len() as u64,
            T::encode(buf)?.into(),
        )
    }

    /// Typed non-blocking send of a buffer lent for `scope` ([`send_scope`]):
    /// nothing is copied; the request refers to `buf` until it completes,
    /// and the scope does not end before it did. To a process of this host
    /// over shared memory, a message from the single-copy threshold up is
    /// read by the receiver straight out of `buf` (as `MPI_Isend`'s). A
    /// type whose wire bytes are not its memory (external32) is encoded
    /// into a vector the request owns, as [`InterComm::isend`] does.
    pub fn isend_scoped<'scope, T: WireType>(
        &self,
        scope: &'scope SendScope<'scope, '_>,
        dest: u32,
        tag: i32,
        buf: &'scope [T],
    ) -> Result<SendRequest> {
        let bytes = match T::encode(buf)? {
            // SAFETY: `b` is `buf`'s memory, borrowed (shared, so unchanged)
            // for `'scope`, and `scope` waits for this send's completion
            // (registered below, before anything can end the scope) before
            // `'scope` ends: the memory stays valid and unchanged until the
            // request completed, as `Lent::new` requires.
            Cow::Borrowed(b) => SendBytes::Lent(unsafe { Lent::new(b.as_ptr(), b.len()) }),
            Cow::Owned(v) => SendBytes::Owned(v),
        };
        let req = self
            .p2p
            .isend(dest, tag, &T::type_sig()?, buf.len() as u64, bytes)?;
        scope.started(Arc::clone(&req.done));
        Ok(req)
    }

    /// How many messages went by single copy in this process (engine-wide).
    pub fn single_copy_stats(&self) -> SingleCopyStats {
        self.engine.single_copy_stats()
    }

    /// Typed non-blocking synchronous send.
    pub fn issend<T: WireType>(&self, dest: u32, tag: i32, buf: &[T]) -> Result<SendRequest> {
        self.issend_bytes(
            dest,
            tag,
            &T::type_sig()?,
            buf.len() as u64,
            T::encode(buf)?.into_owned(),
        )
    }

    /// Typed blocking receive into `buf`; `Status::count` says how many elements arrived.
    pub fn recv<T: WireType>(&self, source: Source, tag: Tag, buf: &mut [T]) -> Result<Status> {
        self.recv_typed(source, tag, buf, None)
    }

    /// Typed blocking receive with an upper bound.
    pub fn recv_timeout<T: WireType>(
        &self,
        source: Source,
        tag: Tag,
        buf: &mut [T],
        timeout: Duration,
    ) -> Result<Status> {
        self.recv_typed(source, tag, buf, Some(timeout))
    }

    fn recv_typed<T: WireType>(
        &self,
        source: Source,
        tag: Tag,
        buf: &mut [T],
        timeout: Option<Duration>,
    ) -> Result<Status> {
        recv_typed_on(&self.p2p, source, tag, buf, timeout)
    }

    /// Sends any rsmpi buffer, e.g. a `View` of a `UserDatatype` such as a
    /// strided vector: the data travel as external32 (or raw bytes when the
    /// datatype is a contiguous basic type).
    pub fn send_buffer<B: mpi::datatype::Buffer + ?Sized>(
        &self,
        dest: u32,
        tag: i32,
        buf: &B,
    ) -> Result<()> {
        let enc = datatype::encode_buffer(buf)?;
        let elem_size = enc.bytes.len().checked_div(enc.count).unwrap_or(0);
        let sig = TypeSig {
            signature: enc.signature,
            format: enc.format,
            elem_size,
        };
        self.send_bytes(dest, tag, &sig, enc.count as u64, &enc.bytes)
    }

    /// Receives into any rsmpi buffer (e.g. a `MutView` of a strided vector);
    /// the sender's element type signature must equal the buffer's.
    pub fn recv_buffer<B: mpi::datatype::BufferMut + ?Sized>(
        &self,
        source: Source,
        tag: Tag,
        buf: &mut B,
    ) -> Result<Status> {
        use mpi::raw::AsRaw;
        let info = datatype::datatype_info(buf.as_datatype().as_raw())?;
        let capacity = usize::try_from(buf.count()).unwrap_or(0);
        let max_bytes = [WireFormat::External32, WireFormat::native()]
            .iter()
            .filter_map(|f| info.payload_len(*f, capacity).ok())
            .max()
            .unwrap_or(0);
        let (bytes, st) = self.recv_bytes(source, tag, Some(info.signature), max_bytes)?;
        let sig = datatype::MessageSig {
            signature: st.signature,
            count: st.count,
            root_signature: 0,
            root_reps: 0,
        };
        datatype::decode_into_buffer(
            &sig,
            st.format,
            &bytes,
            buf,
            datatype::MatchRule::ExactElement,
        )?;
        Ok(st)
    }

    /// Typed non-blocking receive into `buf`.
    pub fn irecv<'a, T: WireType>(
        &self,
        source: Source,
        tag: Tag,
        buf: &'a mut [T],
    ) -> Result<TypedRecvRequest<'a, T>> {
        let sig = T::type_sig()?;
        let inner = self.irecv_bytes(
            source,
            tag,
            Some(sig.signature),
            buf.len().saturating_mul(sig.elem_size),
        )?;
        Ok(TypedRecvRequest { inner, out: buf })
    }
}

/// Typed blocking send on `ch` (an intercomm's user or collective channel).
pub(crate) fn send_typed_on<T: WireType>(
    ch: &Channel,
    dest: u32,
    tag: i32,
    buf: &[T],
) -> Result<()> {
    ch.send(
        dest,
        tag,
        &T::type_sig()?,
        buf.len() as u64,
        &T::encode(buf)?,
    )
}

/// Typed blocking receive into `buf` on `ch`: straight into `buf` when `T`
/// has a native byte layout (converted in place if the message came in
/// another format), else through a buffer and decoded.
pub(crate) fn recv_typed_on<T: WireType>(
    ch: &Channel,
    source: Source,
    tag: Tag,
    buf: &mut [T],
    timeout: Option<Duration>,
) -> Result<Status> {
    let sig = T::type_sig()?;
    let capacity = buf.len().saturating_mul(sig.elem_size);
    if let Some(bytes) = T::wire_bytes_mut(buf) {
        let st = ch.recv_into(source, tag, Some(sig.signature), bytes, timeout)?;
        if st.format != sig.format {
            // Rare foreign-format message: convert in place through a copy.
            let copy = bytes
                .get(..st.bytes as usize)
                .ok_or_else(|| {
                    BridgeError::Protocol(format!(
                        "{} bytes received into a {}-byte buffer",
                        st.bytes,
                        bytes.len()
                    ))
                })?
                .to_vec();
            T::decode_into(st.format, &copy, buf)?;
        }
        return Ok(st);
    }
    let req = ch.irecv(source, tag, Some(sig.signature), capacity)?;
    let (bytes, st) = match timeout {
        None => req.wait()?,
        Some(t) => req.wait_timeout(t)?,
    };
    T::decode_into(st.format, &bytes, buf)?;
    Ok(st)
}

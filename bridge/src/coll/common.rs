//! What the collective algorithms share: the tags they use on an
//! intercomm's collective context (one per operation), the roles a process
//! can have in a rooted operation, and the steps the local–global–local
//! algorithms are made of — a message (or a failure notice) over the
//! bridge, a receive that tells a failed sender from data, a leader's
//! outcome shared with its job, and a leader's received message handed to
//! every rank of its job (whole, or a share each).

use std::borrow::Cow;
use std::marker::PhantomData;

use mpi::topology::Communicator;
use mpi::Count;

use crate::error::{BridgeError, Result};
use crate::format::WireFormat;
use crate::intercomm::InterComm;
use crate::matching::{Source, Status, Tag};
use crate::native;
use crate::payload::{Lent, SendBytes};
use crate::request::SendRequest;
use crate::wire::TypeSig;

/// Tag of the leaders' messages of `barrier`.
pub(super) const TAG_BARRIER: i32 = 1;
/// Tag of the root's message of `bcast`.
pub(super) const TAG_BCAST: i32 = 2;
/// Tag of the sending leader's message of `gather`.
pub(super) const TAG_GATHER: i32 = 3;
/// Tag of the root's message of `scatter`.
pub(super) const TAG_SCATTER: i32 = 4;
/// Tag of the sending leader's message of `reduce`.
pub(super) const TAG_REDUCE: i32 = 5;
/// Tag of the leaders' messages of `allreduce`.
pub(super) const TAG_ALLREDUCE: i32 = 6;
/// Tag of the leaders' messages of `allgather`.
pub(super) const TAG_ALLGATHER: i32 = 7;
/// Tag of the personal messages of `alltoall` (and its v and w forms).
pub(super) const TAG_ALLTOALL: i32 = 8;
/// Tag of the leaders' messages of `reduce_scatter` (and its block form).
pub(super) const TAG_REDUCE_SCATTER: i32 = 9;
/// Tag of the personal messages of `gatherv`.
pub(super) const TAG_GATHERV: i32 = 10;
/// Tag of the personal messages of `scatterv`.
pub(super) const TAG_SCATTERV: i32 = 11;
/// Tag of the messages of `allgatherv` to the remote leader.
pub(super) const TAG_ALLGATHERV: i32 = 12;

/// Added to an operation's tag for the empty notice a process sends in
/// place of its data when its own part failed, so that the receiver
/// returns an error instead of waiting for data that will never come.
const NOTICE: i32 = 1 << 16;

/// A process's part in an intercommunicator broadcast (MPI's `root`
/// argument: `MPI_ROOT`, `MPI_PROC_NULL`, or a rank of the remote group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BcastRole {
    /// This process is the root (`MPI_ROOT`): its buffer goes to every
    /// rank of the remote group.
    Root,
    /// Another member of the root's group (`MPI_PROC_NULL`): takes no part.
    Idle,
    /// A member of the receiving group; the root is rank `root` of the remote group.
    From {
        /// The root's rank in the remote group.
        root: u32,
    },
}

/// A message encoded by the caller as a point-to-point send takes it:
/// `count` elements of signature `sig` in `bytes`.
#[derive(Debug, Clone)]
pub struct Message<'a> {
    /// The elements' type signature and wire format.
    pub sig: TypeSig,
    /// Number of elements.
    pub count: u64,
    /// The encoded elements.
    pub bytes: Cow<'a, [u8]>,
}

/// How a leader hands the message it received to the ranks of its job.
#[derive(Debug, Clone, Copy)]
pub enum Share<'a> {
    /// Every rank gets the whole message (bcast, allgather, allreduce).
    Whole,
    /// Rank i gets the i-th of equal shares (scatter, reduce_scatter_block).
    Even,
    /// Rank i gets the next `counts[i]` elements (reduce_scatter).
    Counts(&'a [u64]),
}

/// A blocking collective's send under way. A message the caller encoded
/// into memory it borrows (`Cow::Borrowed`: the program's own buffer of a
/// contiguous predefined type) is lent to the send, not copied: on this
/// host the receiver of a large one reads it straight out of that memory
/// (single copy), as an `MPI_Isend`'s. The borrow (`'a`) outlives the
/// guard, and the guard waits for the send when dropped, so the memory
/// stays valid and unchanged until the request completed (`Lent`'s
/// contract). Nothing forgets a `CollSend` (`mem::forget` would break
/// that): it lives only inside this module's algorithms.
pub(super) struct CollSend<'a> {
    req: Option<SendRequest>,
    lent: PhantomData<&'a [u8]>,
}

impl CollSend<'_> {
    /// Waits for the send to complete.
    pub(super) fn wait(mut self) -> Result<()> {
        self.req.take().map_or(Ok(()), SendRequest::wait)
    }
}

impl Drop for CollSend<'_> {
    fn drop(&mut self) {
        // An error path that did not wait: the outcome is not reported
        // (the caller returns its own error), but the lent memory must not
        // be released before the send is done with it.
        if let Some(req) = self.req.take() {
            let _ = req.wait();
        }
    }
}

/// Starts sending `msg` to remote rank `dest`, or, when the caller's part
/// failed (`msg` is an error), the failure notice in its place; the
/// caller's error is returned then, once the notice is on its way.
pub(super) fn isend_or_notice<'a>(
    ic: &InterComm,
    dest: u32,
    tag: i32,
    msg: Result<Message<'a>>,
) -> Result<CollSend<'a>> {
    let ch = ic.coll_channel();
    match msg {
        Ok(m) => {
            let bytes = match m.bytes {
                // SAFETY: `b` is borrowed for `'a`, which the returned
                // guard does not outlive, and the guard waits for the
                // request before it goes (see `CollSend`): the memory stays
                // valid and, shared, unchanged until the send completed.
                Cow::Borrowed(b) => SendBytes::Lent(unsafe { Lent::new(b.as_ptr(), b.len()) }),
                Cow::Owned(v) => SendBytes::Owned(v),
            };
            let req = ch.isend(dest, tag, &m.sig, m.count, bytes)?;
            Ok(CollSend {
                req: Some(req),
                lent: PhantomData,
            })
        }
        Err(e) => {
            let sig = TypeSig {
                signature: 0,
                format: WireFormat::native(),
                elem_size: 0,
            };
            // Best effort: the caller's own error is the one to report.
            if let Ok(sent) = ch.isend(dest, tag + NOTICE, &sig, 0, Cow::Borrowed(&[][..]).into()) {
                let _ = sent.wait();
            }
            Err(e)
        }
    }
}

/// The signature of a nonblocking collective's failure notice: its
/// messages are received by exact tag (two operations may be outstanding
/// on one communicator), so the notice keeps the tag and says what it is
/// by an empty payload of this signature, which no datatype hashes to.
const NBC_NOTICE_SIGNATURE: u64 = 0x6e62_635f_6661_696c; // "nbc_fail"

/// The tag of the messages of nonblocking collective `seq` (its sequence
/// number on the communicator, the same on every process since MPI has
/// them all start the communicator's collectives in the same order).
pub(super) fn nbc_tag(seq: u64) -> i32 {
    (seq & 0x3fff_ffff) as i32
}

/// Starts sending `msg` for nonblocking collective `seq` to remote rank
/// `dest` on the nonblocking collectives' context, or the failure notice
/// in its place when the caller's part failed (`msg` an error, returned).
pub(super) fn nbc_isend(
    ic: &InterComm,
    dest: u32,
    seq: u64,
    msg: Result<Message<'_>>,
) -> Result<SendRequest> {
    let ch = ic.nbc_channel();
    match msg {
        Ok(m) => ch.isend(dest, nbc_tag(seq), &m.sig, m.count, m.bytes.into()),
        Err(e) => {
            let sig = TypeSig {
                signature: NBC_NOTICE_SIGNATURE,
                format: WireFormat::native(),
                elem_size: 0,
            };
            // Best effort, never waited for: the caller's own error is the
            // one to report, and the notice goes out by itself.
            let _ = ch.isend(dest, nbc_tag(seq), &sig, 0, Vec::new().into());
            Err(e)
        }
    }
}

/// [`nbc_isend`] lending the message's bytes to the request when they are
/// borrowed (read where they are, on this host by the receiver itself:
/// no copy), moving them when owned.
///
/// # Safety
/// Borrowed bytes of `msg` stay valid and unchanged until the returned
/// request completed, or, dropped before, until the message was received.
pub(super) unsafe fn nbc_isend_lent(
    ic: &InterComm,
    dest: u32,
    seq: u64,
    msg: Result<Message<'_>>,
) -> Result<SendRequest> {
    match msg {
        Ok(Message {
            sig,
            count,
            bytes: Cow::Borrowed(b),
        }) => {
            // SAFETY: the caller's promise, as this function's.
            let lent = unsafe { Lent::new(b.as_ptr(), b.len()) };
            ic.nbc_channel()
                .isend(dest, nbc_tag(seq), &sig, count, SendBytes::Lent(lent))
        }
        other => nbc_isend(ic, dest, seq, other),
    }
}

/// The message a nonblocking collective's receive got from remote rank
/// `source`, or an error naming the sender when it was the failure notice.
pub(super) fn nbc_checked(
    source: u32,
    got: Result<(Vec<u8>, Status)>,
) -> Result<(Vec<u8>, Status)> {
    let (bytes, st) = got?;
    if st.signature == NBC_NOTICE_SIGNATURE && st.count == 0 && bytes.is_empty() {
        return Err(BridgeError::Protocol(format!(
            "remote rank {source} could not do its part of this collective operation"
        )));
    }
    Ok((bytes, st))
}

/// Sends `msg` (or the failure notice, see [`isend_or_notice`]) to remote rank `dest`.
pub(super) fn send_or_notice(
    ic: &InterComm,
    dest: u32,
    tag: i32,
    msg: Result<Message<'_>>,
) -> Result<()> {
    isend_or_notice(ic, dest, tag, msg)?.wait()
}

/// Receives the message of remote rank `source` for the operation of
/// `tag` (at most `max_bytes`): its bytes and status, or an error naming
/// the sender when it sent a failure notice instead. Any tag is taken:
/// the collectives of a communicator run in the same order everywhere and
/// each pair's messages stay in order, so the next collective message of
/// `source` is this operation's.
pub(super) fn recv_checked(
    ic: &InterComm,
    source: u32,
    tag: i32,
    max_bytes: usize,
) -> Result<(Vec<u8>, Status)> {
    let (bytes, st) = ic
        .coll_channel()
        .irecv(Source::Rank(source), Tag::Any, None, max_bytes)?
        .wait()?;
    Ok((bytes, check_tag(source, tag, st)?))
}

/// [`recv_checked`] into the caller's memory (`buf`, the room for the
/// whole message): no buffer of ours in between, and on this host a large
/// message lent by its sender is read straight into `buf` (single copy).
pub(super) fn recv_checked_into(
    ic: &InterComm,
    source: u32,
    tag: i32,
    buf: &mut [u8],
) -> Result<Status> {
    let st = ic
        .coll_channel()
        .recv_into(Source::Rank(source), Tag::Any, None, buf, None)?;
    check_tag(source, tag, st)
}

/// A received collective message's tag says it is the operation's data:
/// not the failure notice, not another operation's.
fn check_tag(source: u32, tag: i32, st: Status) -> Result<Status> {
    if st.tag == tag + NOTICE {
        return Err(BridgeError::Protocol(format!(
            "remote rank {source} could not do its part of this collective operation"
        )));
    }
    if st.tag != tag {
        return Err(BridgeError::Protocol(format!(
            "remote rank {source} sent the message of another collective operation (tag {} \
             where {tag} was due): the two jobs did not call the same collectives in the same order",
            st.tag
        )));
    }
    Ok(st)
}

/// Every rank of the job returns the leader's outcome (`leader`, meaningful
/// at local rank 0): one native broadcast of a flag, so that a failure at
/// the leader is an error at every rank.
pub(super) fn share_outcome<C: Communicator>(
    ic: &InterComm,
    local: &C,
    leader: Result<()>,
    what: &str,
) -> Result<()> {
    let mut failed = u8::from(ic.rank() == 0 && leader.is_err());
    native::bcast(local, 0, &mut failed)?;
    leader?;
    if failed != 0 {
        return Err(BridgeError::Protocol(format!(
            "{what}: this job's leader could not do its part over the bridge"
        )));
    }
    Ok(())
}

/// What the leader broadcasts when it could not receive the message.
const LEADER_FAILED: u64 = u64::MAX;
/// How the leader's receive went, first word of the header it broadcasts.
const HEADER_OK: u64 = 0;
const HEADER_TRUNCATED: u64 = 1;
/// The header the leader broadcasts when its receive failed.
const LEADER_FAILED_HEADER: [u64; 7] = [LEADER_FAILED, 0, 0, 0, 0, 0, 0];
/// Last word of the header: the message's bytes follow it in the same
/// broadcast (see [`INLINE_BYTES`]).
const HEADER_INLINE: u64 = 1;
/// Bytes of the header's seven words.
const HEADER_BYTES: usize = 7 * 8;
/// A message of at most this many bytes travels inside the header's own
/// native broadcast, which every rank makes at this fixed size (the
/// leader alone knows the message's length beforehand): one native
/// collective instead of two (a broadcast or scatter after the header),
/// the fixed cost of a small allreduce, allgather or bcast.
const INLINE_BYTES: usize = 1024;

/// The header a leader broadcasts for how its receive went: `Ok((len,
/// status))` for a message of `len` bytes (inline when at most
/// [`INLINE_BYTES`]), or the receive's error.
fn header_of(got: std::result::Result<(usize, &Status), &BridgeError>) -> [u64; 7] {
    match got {
        // The native broadcast or scatter counts bytes in a C int.
        Ok((len, _)) if i32::try_from(len).is_err() => LEADER_FAILED_HEADER,
        Ok((len, st)) => [
            HEADER_OK,
            st.count,
            st.bytes,
            st.signature,
            u64::from(st.format.to_u8()),
            u64::from(st.tag as u32),
            u64::from(len <= INLINE_BYTES) * HEADER_INLINE,
        ],
        Err(BridgeError::Truncated { message_bytes, .. }) => {
            [HEADER_TRUNCATED, 0, *message_bytes, 0, 0, 0, 0]
        }
        Err(_) => LEADER_FAILED_HEADER,
    }
}

fn too_big(what: &str) -> BridgeError {
    BridgeError::InvalidArgument(format!(
        "{what}: a message of 2 GiB or more cannot be passed on in the job"
    ))
}

/// The header's native broadcast: the leader's `header` (None at the
/// other ranks) and, when it says so, the message's bytes (`inline`, at
/// the leader) in the same broadcast. Every rank returns the whole
/// message's status and, for an inline message, its bytes; or the error
/// the header carries (at every rank alike).
fn share_header<C: Communicator>(
    local: &C,
    source: u32,
    header: Option<[u64; 7]>,
    inline: Option<&[u8]>,
    max_bytes: usize,
    what: &str,
) -> Result<(Status, Option<Vec<u8>>)> {
    let mut header = header.unwrap_or(LEADER_FAILED_HEADER);
    let mut wire = vec![0u8; HEADER_BYTES + INLINE_BYTES];
    for (w, word) in wire.chunks_exact_mut(8).zip(header.iter()) {
        w.copy_from_slice(&word.to_le_bytes());
    }
    if let (Some(bytes), HEADER_INLINE) = (inline, header[6]) {
        if let Some(room) = wire.get_mut(HEADER_BYTES..HEADER_BYTES + bytes.len()) {
            room.copy_from_slice(bytes);
        }
    }
    native::bcast(local, 0, &mut wire[..])?;
    for (word, w) in header.iter_mut().zip(wire.chunks_exact(8)) {
        let mut le = [0u8; 8];
        le.copy_from_slice(w);
        *word = u64::from_le_bytes(le);
    }
    match header[0] {
        HEADER_OK => {}
        HEADER_TRUNCATED => {
            return Err(BridgeError::Truncated {
                message_bytes: header[2],
                buffer_bytes: max_bytes as u64,
            })
        }
        _ => {
            return Err(BridgeError::Protocol(format!(
                "{what}: this job's leader could not receive the message of remote rank {source}"
            )))
        }
    }
    let format =
        WireFormat::from_u8(u8::try_from(header[4]).unwrap_or(u8::MAX)).ok_or_else(|| {
            BridgeError::Protocol(format!("{what}: unknown wire format {}", header[4]))
        })?;
    let whole = Status {
        source,
        tag: header[5] as u32 as i32,
        count: header[1],
        bytes: header[2],
        signature: header[3],
        format,
    };
    if header[6] != HEADER_INLINE {
        return Ok((whole, None));
    }
    let len = byte_len(header[2], what)?;
    let bytes = wire
        .get(HEADER_BYTES..HEADER_BYTES.saturating_add(len))
        .ok_or_else(|| {
            BridgeError::Protocol(format!(
                "{what}: the leader said {len} bytes came inline, more than {INLINE_BYTES}"
            ))
        })?;
    Ok((whole, Some(bytes.to_vec())))
}

/// [`share_received`] of a whole message (`Share::Whole`) that the leader
/// received into `buf` (`got`: its status, at local rank 0 only), the room
/// every rank has for it: the header's broadcast, then the bytes natively
/// into every other rank's `buf` — no buffer of ours in between. Returns
/// the message's status (its bytes are `buf`'s first `status.bytes`).
pub(super) fn share_received_into<C: Communicator>(
    local: &C,
    source: u32,
    got: Option<Result<Status>>,
    buf: &mut [u8],
    what: &str,
) -> Result<Status> {
    let mut result = Ok(());
    let header = got.map(|r| {
        let header = header_of(
            r.as_ref()
                .map(|st| (byte_len(st.bytes, what).unwrap_or(usize::MAX), st)),
        );
        if let Err(e) = r {
            result = Err(e);
        } else if header[0] != HEADER_OK {
            result = Err(too_big(what));
        }
        header
    });
    let leader = header.is_some();
    let len = header.map_or(0, |h| h[2]);
    let inline = buf.get(..byte_len(len, what)?);
    let (whole, wire) = share_header(local, source, header, inline, buf.len(), what)?;
    result?;
    let room = buf.len();
    let len = byte_len(whole.bytes, what)?;
    let Some(mine) = buf.get_mut(..len) else {
        // This rank's buffer is smaller than the message (its count
        // differs from the leader's): it still takes its part in the
        // native broadcast, so that the rest of the job does not wait for
        // it, and then reports the truncation.
        if wire.is_none() {
            native::bcast(local, 0, &mut vec![0u8; len][..])?;
        }
        return Err(BridgeError::Truncated {
            message_bytes: whole.bytes,
            buffer_bytes: room as u64,
        });
    };
    match wire {
        Some(bytes) if !leader => mine.copy_from_slice(&bytes),
        Some(_) => {}
        None if !mine.is_empty() => native::bcast(local, 0, mine)?,
        None => {}
    }
    Ok(whole)
}

/// Hands the message the leader received (`got`, at local rank 0 only; a
/// message of remote rank `source`, of at most `max_bytes` at the leader)
/// to every rank of its job as `share` says. The leader broadcasts how its
/// receive went (outcome, element count, byte length, signature, format,
/// tag, inline flag) and, when the message is small, its bytes in the same
/// broadcast; otherwise the bytes follow (natively, as bytes: no datatype
/// is needed here). Every rank returns its part with a status to check
/// against its own type and decode. A failure at the leader is an error at
/// every rank (a truncation as a truncation), never a rank left waiting.
pub(super) fn share_received<C: Communicator>(
    local: &C,
    source: u32,
    got: Option<Result<(Vec<u8>, Status)>>,
    max_bytes: usize,
    share: Share<'_>,
    what: &str,
) -> Result<(Vec<u8>, Status)> {
    let mut mine = None;
    let mut result = Ok(());
    let header = got.map(|r| {
        let header = header_of(r.as_ref().map(|(bytes, st)| (bytes.len(), st)));
        match r {
            Ok(m) if header[0] == HEADER_OK => mine = Some(m),
            Ok(_) => result = Err(too_big(what)),
            Err(e) => result = Err(e),
        }
        header
    });
    let inline = mine.as_ref().map(|(bytes, _)| &bytes[..]);
    let (whole, wire) = share_header(local, source, header, inline, max_bytes, what)?;
    result?;
    // The bytes came with the header: every rank has the whole message.
    let inline = wire.map(|bytes| mine.take().map_or(bytes, |m| m.0));
    // Every rank checks the split alike (same header, same counts), so
    // either all pass on or all return the same error.
    let counts = split(&whole, local.size(), share, what)?;
    let Some(counts) = counts else {
        if let Some(bytes) = inline {
            return Ok((bytes, whole));
        }
        let (mut bytes, st) = match mine {
            Some(m) => m,
            None => (vec![0u8; byte_len(whole.bytes, what)?], whole),
        };
        if whole.bytes > 0 {
            native::bcast(local, 0, &mut bytes[..])?;
        }
        return Ok((bytes, st));
    };
    let elem = whole.bytes.checked_div(whole.count).unwrap_or(0);
    let rank = local.rank() as usize;
    let my_count = counts.get(rank).copied().unwrap_or(0);
    let st = Status {
        count: my_count,
        bytes: my_count * elem,
        ..whole
    };
    if let Some(bytes) = inline {
        let before: u64 = counts.iter().take(rank).sum();
        let from = byte_len(before * elem, what)?;
        let part = bytes
            .get(from..from.saturating_add(byte_len(my_count * elem, what)?))
            .ok_or_else(|| {
                BridgeError::Protocol(format!("{what}: a share past the end of the message"))
            })?;
        return Ok((part.to_vec(), st));
    }
    let mut part = vec![0u8; byte_len(my_count * elem, what)?];
    match mine {
        Some((bytes, _)) => {
            // Fit in an int: the whole message does (checked above).
            let sizes: Vec<Count> = counts.iter().map(|c| (c * elem) as Count).collect();
            let displs: Vec<Count> = sizes
                .iter()
                .scan(0, |at, s| {
                    let d = *at;
                    *at += s;
                    Some(d)
                })
                .collect();
            native::scatterv_bytes(local, 0, Some((&bytes[..], &sizes, &displs)), &mut part)?;
        }
        None => native::scatterv_bytes(local, 0, None, &mut part)?,
    }
    Ok((part, st))
}

/// The element counts of each rank's share of `whole` (None: the whole
/// message to everyone), or an error when the message does not split so.
pub(super) fn split(
    whole: &Status,
    ranks: i32,
    share: Share<'_>,
    what: &str,
) -> Result<Option<Vec<u64>>> {
    let n = u64::try_from(ranks).unwrap_or(0).max(1);
    let counts = match share {
        Share::Whole => return Ok(None),
        Share::Even => {
            if !whole.count.is_multiple_of(n) {
                return Err(BridgeError::InvalidArgument(format!(
                    "{what}: the remote group sent {} elements, which do not split evenly \
                     between this group's {n} ranks",
                    whole.count
                )));
            }
            vec![whole.count / n; n as usize]
        }
        Share::Counts(c) => {
            let sum: u64 = c.iter().sum();
            if c.len() as u64 != n || sum != whole.count {
                return Err(BridgeError::InvalidArgument(format!(
                    "{what}: the remote group sent {} elements, this group's {n} counts add up \
                     to {sum}",
                    whole.count
                )));
            }
            c.to_vec()
        }
    };
    if whole.count > 0 && !whole.bytes.is_multiple_of(whole.count) {
        return Err(BridgeError::Protocol(format!(
            "{what}: {} bytes do not hold {} whole elements",
            whole.bytes, whole.count
        )));
    }
    Ok(Some(counts))
}

fn byte_len(n: u64, what: &str) -> Result<usize> {
    usize::try_from(n)
        .map_err(|_| BridgeError::Protocol(format!("{what}: {n} bytes do not fit memory")))
}

/// The leaders' exchange of local–global–local operations that deliver
/// to both groups (allreduce, allgather, reduce_scatter): the leader
/// sends its job's message (`mine`, at local rank 0 only; an error there
/// sends the failure notice) to the remote leader and receives the remote
/// leader's (at most `max_bytes`), then hands it to its job as `share` says.
pub(super) fn exchange_and_share<C: Communicator>(
    ic: &InterComm,
    local: &C,
    tag: i32,
    mine: Option<Result<Message<'_>>>,
    max_bytes: usize,
    share: Share<'_>,
    what: &str,
) -> Result<(Vec<u8>, Status)> {
    let got = mine.map(|m| {
        let sent = isend_or_notice(ic, 0, tag, m);
        let got = recv_checked(ic, 0, tag, max_bytes);
        let sent = sent.and_then(|s| s.wait());
        sent.and(got)
    });
    share_received(local, 0, got, max_bytes, share, what)
}

/// [`exchange_and_share`] of a whole message into `buf`, every rank's room
/// for the other group's message (see [`share_received_into`]). The
/// leader's own message (`mine`) must not be in `buf`.
pub(super) fn exchange_and_share_into<C: Communicator>(
    ic: &InterComm,
    local: &C,
    tag: i32,
    mine: Option<Result<Message<'_>>>,
    buf: &mut [u8],
    what: &str,
) -> Result<Status> {
    let got = match mine {
        Some(m) => {
            let sent = isend_or_notice(ic, 0, tag, m);
            let got = recv_checked_into(ic, 0, tag, buf);
            let sent = sent.and_then(CollSend::wait);
            Some(sent.and(got))
        }
        None => None,
    };
    share_received_into(local, 0, got, buf, what)
}

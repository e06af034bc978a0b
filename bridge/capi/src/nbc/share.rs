//! The native steps the schedules end with, as the blocking collectives'
//! (`isthmus_bridge::coll`'s `share_received` and `share_outcome`, and
//! allgatherv's broadcast of the blocks) but one non-blocking step at a
//! time: the leader (local rank 0) hands what it received over the bridge
//! to every rank of its job — a header saying how its receive went
//! (`PMPI_Ibcast`), then the bytes, whole (`PMPI_Ibcast`) or shared out
//! (`PMPI_Iscatterv`), or every remote rank's block at once ([`share_blocks`])
//! — or tells them its outcome (a flag).
//! A failure at the leader is an error at every rank, never a rank left
//! waiting. Each is called from a [`Stage::native`] continuation, in the
//! operation's turn, and issues the operation's last native steps.

use std::ffi::{c_int, c_void};

use isthmus_bridge::{coll_shares, BridgeError, CollShare, Status, WireFormat};
use mpi::ffi;

use super::schedule::{Arrivals, Cx, Fail, Next, Stage, Step, Wait};
use crate::mpi_glue::byte;

/// How the leader's message is handed to the ranks of its job.
#[derive(Clone)]
pub(crate) enum Share {
    /// Every rank gets the whole message.
    Whole,
    /// Rank i gets the i-th of equal shares.
    Even,
    /// Rank i gets the i-th share of these element counts, one per rank
    /// of the job, in rank order (reduce_scatter's `recvcounts`).
    Counts(Vec<u64>),
}

impl Share {
    /// The bridge's name for the same share.
    fn of_bridge(&self) -> CollShare<'_> {
        match self {
            Share::Whole => CollShare::Whole,
            Share::Even => CollShare::Even,
            Share::Counts(c) => CollShare::Counts(c),
        }
    }
}

/// How the leader's receive went, the first word of the header.
const HEADER_OK: u64 = 0;
const HEADER_TRUNCATED: u64 = 1;
const LEADER_FAILED: u64 = u64::MAX;

/// Hands the message the leader received (`got`, Some at local rank 0
/// only: a message of remote rank `source`, at most `max_bytes`) to every
/// rank of the job as `how` says, then gives this rank's part and its
/// status to `then`, which decodes it.
pub(crate) fn share(
    cx: &mut Cx<'_>,
    source: u32,
    got: Option<Result<(Vec<u8>, Status), BridgeError>>,
    max_bytes: usize,
    how: Share,
    what: &'static str,
    then: impl FnOnce(Vec<u8>, Status) -> Step<()> + 'static,
) -> Step<Next> {
    let mut header = vec![LEADER_FAILED, 0, 0, 0, 0, 0];
    let mut mine = None;
    let mut own = Ok(());
    if let Some(r) = got {
        match r {
            // The native steps count bytes in a C int.
            Ok((bytes, _)) if c_int::try_from(bytes.len()).is_err() => own = Err(too_big(what)),
            Ok((bytes, st)) => {
                header = vec![
                    HEADER_OK,
                    st.count,
                    st.bytes,
                    st.signature,
                    u64::from(st.format.to_u8()),
                    u64::from(st.tag as u32),
                ];
                mine = Some(bytes);
            }
            Err(e) => {
                if let BridgeError::Truncated { message_bytes, .. } = &e {
                    header = vec![HEADER_TRUNCATED, 0, *message_bytes, 0, 0, 0];
                }
                own = Err(e);
            }
        }
    }
    bcast_words(cx, header, move |cx, header| {
        own?;
        let whole = whole(&header, source, max_bytes, what)?;
        let (rank, size) = cx.local();
        let ranks = i32::try_from(size).unwrap_or(i32::MAX);
        let Some(counts) = coll_shares(&whole, ranks, how.of_bridge(), what)? else {
            let bytes = match mine {
                Some(m) => m,
                None => vec![0u8; byte_len(whole.bytes, what)?],
            };
            return bcast_bytes(cx, bytes, what, move |bytes| then(bytes, whole));
        };
        let elem = whole.bytes.checked_div(whole.count).unwrap_or(0);
        let sizes: Vec<c_int> = counts
            .iter()
            .map(|c| c_int::try_from(c * elem))
            .collect::<Result<_, _>>()
            .map_err(|_| too_big(what))?;
        let displs: Vec<c_int> = sizes
            .iter()
            .scan(0 as c_int, |at, s| {
                let d = *at;
                *at = at.saturating_add(*s);
                Some(d)
            })
            .collect();
        let my_count = counts.get(rank as usize).copied().unwrap_or(0);
        let part_len = sizes.get(rank as usize).copied().unwrap_or(0);
        let st = Status {
            count: my_count,
            bytes: my_count * elem,
            ..whole
        };
        let mut part = vec![0u8; byte_len(st.bytes, what)?];
        let send = mine.as_ref().map_or(std::ptr::null(), |m| m.as_ptr()) as *const c_void;
        let at = part.as_mut_ptr() as *mut c_void;
        let (c, d) = (sizes.as_ptr(), displs.as_ptr());
        // SAFETY: the leader's message (`mine`), the sizes, displacements
        // and this rank's part all move into the continuation below, their
        // heap memory unmoved until the scatter completes; the shares lie
        // within the message (`split` checked that they add up to it).
        let req = cx.issue(|comm, req| unsafe {
            ffi::PMPI_Iscatterv(send, c, d, byte(), at, part_len, byte(), 0, comm, req)
        })?;
        cx.natives_done();
        Ok(Next::Stage(Stage::after(
            vec![Wait::Native(req)],
            move |_, a| {
                let _keep = (mine, sizes, displs);
                native_ok(&a)?;
                then(part, st)?;
                Ok(Next::Done)
            },
        )))
    })
}

/// The leader's message as the header describes it, or the error every
/// rank returns when the leader's receive failed.
fn whole(header: &[u64], source: u32, max_bytes: usize, what: &str) -> Step<Status> {
    let &[state, count, bytes, signature, format, tag] = header else {
        return Err(BridgeError::Protocol(format!("{what}: a short header")).into());
    };
    match state {
        HEADER_OK => {}
        HEADER_TRUNCATED => {
            return Err(BridgeError::Truncated {
                message_bytes: bytes,
                buffer_bytes: max_bytes as u64,
            }
            .into())
        }
        _ => {
            return Err(BridgeError::Protocol(format!(
                "{what}: this job's leader could not receive the message of remote rank {source}"
            ))
            .into())
        }
    }
    Ok(Status {
        source,
        tag: tag as u32 as i32,
        count,
        bytes,
        signature,
        format: wire_format(format, what)?,
    })
}

/// A received block and its status.
pub(crate) type Block = (Vec<u8>, Status);

/// Words of the blocks' header per block: count, bytes, signature, format.
const BLOCK_WORDS: usize = 4;

/// Hands the blocks the leader received (`got`, Some at local rank 0 only:
/// one block of each of the `blocks` remote ranks, in rank order) to every
/// rank of the job — a header (whether the leader's receives went well,
/// then each block's count, bytes, signature and format), then all the
/// bytes — and gives them, with their statuses, to `then`.
pub(crate) fn share_blocks(
    cx: &mut Cx<'_>,
    got: Option<Result<Vec<Block>, BridgeError>>,
    blocks: usize,
    what: &'static str,
    then: impl FnOnce(Vec<Block>) -> Step<()> + 'static,
) -> Step<Next> {
    let mut header = vec![0u64; 1 + BLOCK_WORDS * blocks];
    let mut mine = Vec::new();
    let mut own = Ok(());
    match got {
        None => {}
        Some(Ok(b)) if c_int::try_from(b.iter().map(|(m, _)| m.len()).sum::<usize>()).is_err() => {
            own = Err(too_big(what));
        }
        Some(Ok(b)) => {
            let words = b.iter().flat_map(|(_, st)| {
                [
                    st.count,
                    st.bytes,
                    st.signature,
                    u64::from(st.format.to_u8()),
                ]
            });
            for (h, w) in header.iter_mut().skip(1).zip(words) {
                *h = w;
            }
            mine = b;
        }
        Some(Err(e)) => own = Err(e),
    }
    if let Some(failed) = header.first_mut() {
        *failed = u64::from(own.is_err());
    }
    bcast_words(cx, header, move |cx, header| {
        own?;
        let Some((&failed, words)) = header.split_first() else {
            return Err(BridgeError::Protocol(format!("{what}: no header")).into());
        };
        if failed != 0 {
            return Err(BridgeError::Protocol(format!(
                "{what}: this job's leader could not receive the other group's blocks"
            ))
            .into());
        }
        let mut statuses = Vec::with_capacity(blocks);
        for (j, h) in words.chunks_exact(BLOCK_WORDS).enumerate() {
            let &[count, bytes, signature, format] = h else {
                return Err(BridgeError::Protocol(format!("{what}: a short block header")).into());
            };
            statuses.push(Status {
                source: j as u32,
                tag: 0,
                count,
                bytes,
                signature,
                format: wire_format(format, what)?,
            });
        }
        let all = if mine.is_empty() {
            let total = statuses.iter().map(|s| s.bytes).sum::<u64>();
            vec![0u8; byte_len(total, what)?]
        } else {
            mine.into_iter().flat_map(|(b, _)| b).collect()
        };
        bcast_bytes(cx, all, what, move |all| {
            let mut out = Vec::with_capacity(statuses.len());
            let mut rest = &all[..];
            for st in statuses {
                let len = byte_len(st.bytes, what)?;
                let (block, after) = rest.split_at_checked(len).ok_or_else(|| {
                    BridgeError::Protocol(format!(
                        "{what}: the leader's header does not fit its bytes"
                    ))
                })?;
                rest = after;
                out.push((block.to_vec(), st));
            }
            then(out)
        })
    })
}

/// Broadcasts the leader's `words` in the job, then runs `then` with them
/// (in the operation's turn: it issues the next native steps).
fn bcast_words(
    cx: &mut Cx<'_>,
    mut words: Vec<u64>,
    then: impl FnOnce(&mut Cx<'_>, Vec<u64>) -> Step<Next> + 'static,
) -> Step<Next> {
    let len = c_int::try_from(words.len() * 8).map_err(|_| too_big("a header"))?;
    let at = words.as_mut_ptr() as *mut c_void;
    // SAFETY: the words move into the continuation below, their heap
    // memory unmoved until the broadcast completes.
    let req = cx.issue(|comm, req| unsafe { ffi::PMPI_Ibcast(at, len, byte(), 0, comm, req) })?;
    Ok(Next::Stage(Stage::native(
        vec![Wait::Native(req)],
        move |cx, a: Arrivals| {
            native_ok(&a)?;
            then(cx, words)
        },
    )))
}

/// Broadcasts the leader's `bytes` (room for them elsewhere) in the job
/// as its last native step, then gives them to `then`.
fn bcast_bytes(
    cx: &mut Cx<'_>,
    mut bytes: Vec<u8>,
    what: &'static str,
    then: impl FnOnce(Vec<u8>) -> Step<()> + 'static,
) -> Step<Next> {
    if bytes.is_empty() {
        cx.natives_done();
        then(bytes)?;
        return Ok(Next::Done);
    }
    let len = c_int::try_from(bytes.len()).map_err(|_| too_big(what))?;
    let at = bytes.as_mut_ptr() as *mut c_void;
    // SAFETY: `bytes` moves into the continuation below, its heap memory
    // unmoved until the broadcast completes.
    let req = cx.issue(|comm, req| unsafe { ffi::PMPI_Ibcast(at, len, byte(), 0, comm, req) })?;
    cx.natives_done();
    Ok(Next::Stage(Stage::after(
        vec![Wait::Native(req)],
        move |_, a| {
            native_ok(&a)?;
            then(bytes)?;
            Ok(Next::Done)
        },
    )))
}

/// The stage's native requests all succeeded, or the first one's code.
fn native_ok(a: &Arrivals) -> Step<()> {
    match a.native_rc() {
        0 => Ok(()),
        rc => Err(Fail::Mpi(rc)),
    }
}

fn wire_format(word: u64, what: &str) -> Step<WireFormat> {
    WireFormat::from_u8(u8::try_from(word).unwrap_or(u8::MAX))
        .ok_or_else(|| BridgeError::Protocol(format!("{what}: unknown wire format {word}")).into())
}

fn byte_len(n: u64, what: &str) -> Result<usize, BridgeError> {
    usize::try_from(n)
        .map_err(|_| BridgeError::Protocol(format!("{what}: {n} bytes do not fit memory")))
}

fn too_big(what: &str) -> BridgeError {
    BridgeError::InvalidArgument(format!(
        "{what}: a message of 2 GiB or more cannot be passed on in the job"
    ))
}

/// Every rank of the job ends with the leader's outcome (`leader`, Some at
/// local rank 0 only): one native broadcast of a flag. A rank whose own
/// native step failed (`own_rc`) returns that code.
pub(crate) fn share_outcome(
    cx: &mut Cx<'_>,
    leader: Option<Step<()>>,
    own_rc: c_int,
    what: &'static str,
) -> Step<Next> {
    let mut flag = Box::new(u8::from(matches!(leader, Some(Err(_)))));
    let at = &mut *flag as *mut u8 as *mut c_void;
    // SAFETY: the flag is boxed and moved into the continuation, so it
    // lives, unmoved, until the broadcast completes.
    let req = cx.issue(|comm, req| unsafe { ffi::PMPI_Ibcast(at, 1, byte(), 0, comm, req) })?;
    cx.natives_done();
    Ok(Next::Stage(Stage::after(
        vec![Wait::Native(req)],
        move |_, a| {
            let rc = a.native_rc();
            if let Some(own) = leader {
                own?;
            }
            for code in [own_rc, rc] {
                if code != 0 {
                    return Err(Fail::Mpi(code));
                }
            }
            if *flag != 0 {
                return Err(BridgeError::Protocol(format!(
                    "{what}: this job's leader could not do its part over the bridge"
                ))
                .into());
            }
            Ok(Next::Done)
        },
    )))
}

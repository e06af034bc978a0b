//! The native steps the schedules end with, as the blocking collectives'
//! (`isthmus_bridge::coll`'s `share_received` and `share_outcome`) but one
//! non-blocking step at a time: the leader (local rank 0) hands what it
//! received over the bridge to every rank of its job — a header saying how
//! its receive went (`PMPI_Ibcast`), then the bytes, whole (`PMPI_Ibcast`)
//! or shared out (`PMPI_Iscatterv`) — or tells them its outcome (a flag).
//! A failure at the leader is an error at every rank, never a rank left
//! waiting. Each is called from a [`Stage::native`] continuation, in the
//! operation's turn, and issues the operation's last native steps.

use std::ffi::{c_int, c_void};

use isthmus_bridge::{BridgeError, Status, WireFormat};
use mpi::ffi;

use super::schedule::{Arrivals, Cx, Fail, Next, Stage, Step, Wait};
use crate::mpi_glue::byte;

/// How the leader's message is handed to the ranks of its job.
#[derive(Clone, Copy)]
pub(crate) enum Share {
    /// Every rank gets the whole message.
    Whole,
    /// Rank i gets the i-th of equal shares.
    Even,
}

/// How the leader's receive went, the first word of the header.
const HEADER_OK: u64 = 0;
const HEADER_TRUNCATED: u64 = 1;
const LEADER_FAILED: u64 = u64::MAX;
const FAILED_HEADER: [u64; 6] = [LEADER_FAILED, 0, 0, 0, 0, 0];
/// The header's bytes.
const HEADER_BYTES: c_int = 6 * 8;

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
    let mut header = Box::new(FAILED_HEADER);
    let mut mine = None;
    let mut own = Ok(());
    if let Some(r) = got {
        match r {
            // The native steps count bytes in a C int.
            Ok((bytes, _)) if c_int::try_from(bytes.len()).is_err() => {
                own = Err(BridgeError::InvalidArgument(format!(
                    "{what}: a message of 2 GiB or more cannot be passed on in the job"
                )))
            }
            Ok((bytes, st)) => {
                *header = [
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
                    *header = [HEADER_TRUNCATED, 0, *message_bytes, 0, 0, 0];
                }
                own = Err(e);
            }
        }
    }
    let at = header.as_mut_ptr() as *mut c_void;
    // SAFETY: the header is boxed and moved into the continuation, so it
    // lives, unmoved, until the broadcast completes.
    let req =
        cx.issue(|comm, req| unsafe { ffi::PMPI_Ibcast(at, HEADER_BYTES, byte(), 0, comm, req) })?;
    Ok(Next::Stage(Stage::native(
        vec![Wait::Native(req)],
        move |cx, a: Arrivals| {
            let rc = a.native_rc();
            if rc != 0 {
                return Err(Fail::Mpi(rc));
            }
            own?;
            let whole = whole(&header, source, max_bytes, what)?;
            let (_, size) = cx.local();
            match how {
                Share::Whole => {
                    let mut bytes = match mine {
                        Some(m) => m,
                        None => vec![0u8; byte_len(whole.bytes, what)?],
                    };
                    if bytes.is_empty() {
                        cx.natives_done();
                        then(bytes, whole)?;
                        return Ok(Next::Done);
                    }
                    let len = c_int::try_from(bytes.len()).map_err(|_| too_big(what))?;
                    let at = bytes.as_mut_ptr() as *mut c_void;
                    // SAFETY: `bytes` moves into the continuation below,
                    // its heap memory unmoved until the broadcast completes.
                    let req = cx.issue(|comm, req| unsafe {
                        ffi::PMPI_Ibcast(at, len, byte(), 0, comm, req)
                    })?;
                    cx.natives_done();
                    Ok(Next::Stage(Stage::after(
                        vec![Wait::Native(req)],
                        move |_, a| {
                            let rc = a.native_rc();
                            if rc != 0 {
                                return Err(Fail::Mpi(rc));
                            }
                            then(bytes, whole)?;
                            Ok(Next::Done)
                        },
                    )))
                }
                Share::Even => {
                    let n = u64::from(size.max(1));
                    if !whole.count.is_multiple_of(n)
                        || (whole.count > 0 && !whole.bytes.is_multiple_of(whole.count))
                    {
                        return Err(BridgeError::InvalidArgument(format!(
                            "{what}: the remote group sent {} elements ({} bytes), which do \
                             not split evenly between this group's {n} ranks",
                            whole.count, whole.bytes
                        ))
                        .into());
                    }
                    let part_bytes = whole.bytes / n;
                    let part_len = c_int::try_from(part_bytes).map_err(|_| too_big(what))?;
                    let st = Status {
                        count: whole.count / n,
                        bytes: part_bytes,
                        ..whole
                    };
                    let mut part = vec![0u8; byte_len(part_bytes, what)?];
                    let counts: Vec<c_int> = vec![part_len; size.max(1) as usize];
                    let displs: Vec<c_int> = (0..size.max(1))
                        .map(|i| c_int::try_from(u64::from(i) * part_bytes))
                        .collect::<Result<_, _>>()
                        .map_err(|_| too_big(what))?;
                    let send =
                        mine.as_ref().map_or(std::ptr::null(), |m| m.as_ptr()) as *const c_void;
                    let at = part.as_mut_ptr() as *mut c_void;
                    let (c, d) = (counts.as_ptr(), displs.as_ptr());
                    // SAFETY: the leader's message (`mine`), the counts,
                    // displacements and this rank's part all move into the
                    // continuation below, their heap memory unmoved until
                    // the scatter completes; the displacements lie within
                    // the message (its length is `size` parts).
                    let req = cx.issue(|comm, req| unsafe {
                        ffi::PMPI_Iscatterv(send, c, d, byte(), at, part_len, byte(), 0, comm, req)
                    })?;
                    cx.natives_done();
                    Ok(Next::Stage(Stage::after(
                        vec![Wait::Native(req)],
                        move |_, a| {
                            let _keep = (mine, counts, displs);
                            let rc = a.native_rc();
                            if rc != 0 {
                                return Err(Fail::Mpi(rc));
                            }
                            then(part, st)?;
                            Ok(Next::Done)
                        },
                    )))
                }
            }
        },
    )))
}

/// The leader's message as the header describes it, or the error every
/// rank returns when the leader's receive failed.
fn whole(header: &[u64; 6], source: u32, max_bytes: usize, what: &str) -> Step<Status> {
    match header[0] {
        HEADER_OK => {}
        HEADER_TRUNCATED => {
            return Err(BridgeError::Truncated {
                message_bytes: header[2],
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
    let format =
        WireFormat::from_u8(u8::try_from(header[4]).unwrap_or(u8::MAX)).ok_or_else(|| {
            BridgeError::Protocol(format!("{what}: unknown wire format {}", header[4]))
        })?;
    Ok(Status {
        source,
        tag: header[5] as u32 as i32,
        count: header[1],
        bytes: header[2],
        signature: header[3],
        format,
    })
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

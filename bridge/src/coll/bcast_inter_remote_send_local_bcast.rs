//! Intercommunicator broadcast as MPICH's
//! `bcast_inter_remote_send_local_bcast`: the root sends its buffer over
//! the bridge to the leader (local rank 0) of the other group, which
//! broadcasts it natively in its job. The rest of the root's group takes
//! no part. One bridge message, whatever the sizes of the groups.
//!
//! The leader first broadcasts how it went (the element count received,
//! or a failure), so that a wrong count or a lost root is an error at
//! every rank of the receiving group, never a rank waiting forever.
//!
//! Two forms: typed (`bcast`, into a slice of an `Equivalence` type), and
//! untyped (`bcast_send_bytes`/`bcast_recv_bytes`: a message already
//! encoded by the caller, with its type signature, as libisthmus encodes
//! any MPI datatype; the receiving ranks check and decode it themselves).

use mpi::collective::Root;
use mpi::datatype::Equivalence;
use mpi::topology::Communicator;

use super::common::{BcastRole, TAG_BCAST};
use crate::error::{BridgeError, Result};
use crate::format::WireFormat;
use crate::intercomm::{recv_typed_on, send_typed_on, InterComm};
use crate::matching::{Source, Status, Tag};
use crate::wire::TypeSig;

/// What the leader broadcasts when it could not receive the root's message.
const LEADER_FAILED: u64 = u64::MAX;

pub(super) fn bcast<C, T>(ic: &InterComm, local: &C, role: BcastRole, buf: &mut [T]) -> Result<()>
where
    C: Communicator,
    T: Equivalence + Send + Sync + 'static,
{
    let root = match role {
        BcastRole::Idle => return Ok(()),
        BcastRole::Root => return send_typed_on(ic.coll_channel(), 0, TAG_BCAST, buf),
        BcastRole::From { root } => root,
    };
    let mut arrived = 0u64;
    let mut result = Ok(());
    if ic.rank() == 0 {
        let r = recv_typed_on(
            ic.coll_channel(),
            Source::Rank(root),
            Tag::Value(TAG_BCAST),
            buf,
            None,
        );
        arrived = match &r {
            Ok(st) => st.count,
            Err(_) => LEADER_FAILED,
        };
        result = r.map(|_| ());
    }
    let leader = local.process_at_rank(0);
    leader.broadcast_into(&mut arrived);
    result?;
    if arrived == LEADER_FAILED {
        return Err(BridgeError::Protocol(format!(
            "bcast: this job's leader could not receive the message of remote root {root}"
        )));
    }
    if arrived != buf.len() as u64 {
        return Err(BridgeError::InvalidArgument(format!(
            "bcast: the root sent {arrived} elements, the receiving group passed buffers of {}",
            buf.len()
        )));
    }
    leader.broadcast_into(buf);
    Ok(())
}

/// The root's side of the untyped broadcast: its encoded message, to the
/// other group's leader.
pub(super) fn bcast_send_bytes(
    ic: &InterComm,
    sig: &TypeSig,
    count: u64,
    payload: &[u8],
) -> Result<()> {
    ic.coll_channel().send(0, TAG_BCAST, sig, count, payload)
}

/// How the leader's receive went, first word of the header it broadcasts.
const HEADER_OK: u64 = 0;
const HEADER_TRUNCATED: u64 = 1;

/// A receiving rank's side of the untyped broadcast from remote rank
/// `root`: the leader receives the root's message (at most `max_bytes`),
/// broadcasts what it got (outcome, element count, byte length, signature,
/// format), then the bytes; every rank returns them with the message's
/// status, for the caller to check against its own type and decode. A
/// failure at the leader is an error at every rank (a truncation as a
/// truncation), never a rank left waiting.
pub(super) fn bcast_recv_bytes<C: Communicator>(
    ic: &InterComm,
    local: &C,
    root: u32,
    max_bytes: usize,
) -> Result<(Vec<u8>, Status)> {
    let mut header = [LEADER_FAILED, 0, 0, 0, 0];
    let mut got = None;
    let mut result = Ok(());
    if ic.rank() == 0 {
        let r = ic
            .coll_channel()
            .irecv(Source::Rank(root), Tag::Value(TAG_BCAST), None, max_bytes)
            .and_then(|req| req.wait());
        header = match &r {
            // The native broadcast of the bytes counts in a C int.
            Ok((bytes, _)) if i32::try_from(bytes.len()).is_err() => LEADER_FAILED_HEADER,
            Ok((_, st)) => [
                HEADER_OK,
                st.count,
                st.bytes,
                st.signature,
                u64::from(st.format.to_u8()),
            ],
            Err(BridgeError::Truncated { message_bytes, .. }) => {
                [HEADER_TRUNCATED, 0, *message_bytes, 0, 0]
            }
            Err(_) => LEADER_FAILED_HEADER,
        };
        match r {
            Ok(m) if header[0] == HEADER_OK => got = Some(m),
            Ok(_) => {
                result = Err(BridgeError::InvalidArgument(
                    "bcast: a message of 2 GiB or more cannot be broadcast in the job".into(),
                ))
            }
            Err(e) => result = Err(e),
        }
    }
    let leader = local.process_at_rank(0);
    leader.broadcast_into(&mut header[..]);
    result?;
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
                "bcast: this job's leader could not receive the message of remote root {root}"
            )))
        }
    }
    let format =
        WireFormat::from_u8(u8::try_from(header[4]).unwrap_or(u8::MAX)).ok_or_else(|| {
            BridgeError::Protocol(format!("bcast: unknown wire format {}", header[4]))
        })?;
    let (mut bytes, st) = match got {
        Some(m) => m,
        None => {
            let len = usize::try_from(header[2]).map_err(|_| {
                BridgeError::Protocol(format!("bcast: {} bytes do not fit memory", header[2]))
            })?;
            let st = Status {
                source: root,
                tag: TAG_BCAST,
                count: header[1],
                bytes: header[2],
                signature: header[3],
                format,
            };
            (vec![0u8; len], st)
        }
    };
    if header[2] > 0 {
        leader.broadcast_into(&mut bytes[..]);
    }
    Ok((bytes, st))
}

/// The header the leader broadcasts when its receive failed.
const LEADER_FAILED_HEADER: [u64; 5] = [LEADER_FAILED, 0, 0, 0, 0];

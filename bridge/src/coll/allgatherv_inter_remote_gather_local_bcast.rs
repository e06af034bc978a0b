//! Intercommunicator allgatherv as MPICH's
//! `allgatherv_inter_remote_gather_local_bcast`: every rank sends its
//! block to the other group's leader (local rank 0), which receives one
//! block from each remote rank and broadcasts them natively in its job:
//! first what it got (per block: element count, bytes, signature, format;
//! or that a receive failed), then the bytes. Each block crosses the
//! bridge once; every rank decodes each block into its own buffer.

use mpi::topology::Communicator;

use super::common::{isend_or_notice, recv_checked, Message, TAG_ALLGATHERV};
use crate::error::{BridgeError, Result};
use crate::format::WireFormat;
use crate::intercomm::InterComm;
use crate::matching::Status;
use crate::native;

/// Words of the leader's header per block.
const WORDS: usize = 4;

/// Every rank's side: its block (`mine`) to the remote leader; returns the
/// block of every remote rank (the leader takes at most `capacity(j)`
/// bytes from remote rank j), in rank order.
pub(super) fn allgatherv<C: Communicator>(
    ic: &InterComm,
    local: &C,
    mine: Result<Message<'_>>,
    capacity: impl Fn(u32) -> Result<usize>,
) -> Result<Vec<(Vec<u8>, Status)>> {
    // Started, not waited for: the two leaders' large blocks wait for the
    // other leader's receive.
    let sent = isend_or_notice(ic, 0, TAG_ALLGATHERV, mine);
    let remote = ic.remote_size() as usize;
    let mut header = vec![0u64; 1 + WORDS * remote];
    let mut got = Vec::new();
    let mut leader_result = Ok(());
    if ic.rank() == 0 {
        for j in 0..ic.remote_size() {
            let cap = capacity(j);
            let r = recv_checked(ic, j, TAG_ALLGATHERV, *cap.as_ref().unwrap_or(&usize::MAX));
            match cap.and(r) {
                Ok(m) => got.push(m),
                Err(e) if leader_result.is_ok() => leader_result = Err(e),
                Err(_) => {}
            }
        }
        let total: usize = got.iter().map(|(b, _)| b.len()).sum();
        if leader_result.is_ok() && i32::try_from(total).is_err() {
            leader_result = Err(BridgeError::InvalidArgument(
                "allgatherv: 2 GiB or more cannot be broadcast in the job".into(),
            ));
        }
        if let Some((failed, blocks)) = header.split_first_mut() {
            *failed = u64::from(leader_result.is_err());
            for (h, (_, st)) in blocks.chunks_exact_mut(WORDS).zip(&got) {
                h.copy_from_slice(&[
                    st.count,
                    st.bytes,
                    st.signature,
                    u64::from(st.format.to_u8()),
                ]);
            }
        }
    }
    let sent = sent.and_then(|s| s.wait());
    native::bcast(local, 0, &mut header[..])?;
    leader_result?;
    sent?;
    let Some((&failed, blocks)) = header.split_first() else {
        return Err(BridgeError::Protocol("allgatherv: no header".into()));
    };
    let block_header = |h: &[u64]| -> Result<[u64; WORDS]> {
        h.try_into()
            .map_err(|_| BridgeError::Protocol("allgatherv: a short block header".into()))
    };
    if failed != 0 {
        return Err(BridgeError::Protocol(
            "allgatherv: this job's leader could not receive the other group's blocks".into(),
        ));
    }
    let mut bytes: Vec<u8> = got.iter().flat_map(|(b, _)| b.iter().copied()).collect();
    if ic.rank() != 0 {
        let mut total = 0u64;
        for h in blocks.chunks_exact(WORDS) {
            let [_, len, _, _] = block_header(h)?;
            total += len;
        }
        let total = usize::try_from(total)
            .ok()
            .filter(|t| i32::try_from(*t).is_ok())
            .ok_or_else(|| {
                BridgeError::Protocol(format!("allgatherv: {total} bytes in the leader's header"))
            })?;
        bytes = vec![0u8; total];
    }
    if !bytes.is_empty() {
        native::bcast(local, 0, &mut bytes[..])?;
    }
    let mut out = Vec::with_capacity(remote);
    let mut at = 0usize;
    for (j, h) in blocks.chunks_exact(WORDS).enumerate() {
        let [count, len_bytes, signature, format] = block_header(h)?;
        let len = usize::try_from(len_bytes).unwrap_or(usize::MAX);
        let block = bytes.get(at..at.saturating_add(len)).ok_or_else(|| {
            BridgeError::Protocol("allgatherv: the leader's header does not fit its bytes".into())
        })?;
        at += len;
        let format = WireFormat::from_u8(u8::try_from(format).unwrap_or(u8::MAX))
            .ok_or_else(|| BridgeError::Protocol(format!("allgatherv: wire format {format}")))?;
        let st = Status {
            source: j as u32,
            tag: TAG_ALLGATHERV,
            count,
            bytes: len_bytes,
            signature,
            format,
        };
        out.push((block.to_vec(), st));
    }
    Ok(out)
}

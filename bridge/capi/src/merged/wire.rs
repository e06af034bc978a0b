//! The merged collectives' messages between the two jobs, on the merged
//! communicator's collective context (`MergedComm::coll`, which no user
//! receive names), and what a job's leader tells the rest of its job when
//! its part failed.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};

use isthmus_bridge::{BridgeError, InterComm, RecvRequest, SendRequest, Source, Tag};
use mpi::ffi;

use crate::collbuf::{elements, int};
use crate::datatype;
use crate::mpi_glue::{MPI_Comm, MPI_Datatype};
use crate::state::{MergedComm, Place};

/// Tags on the collective context, one per operation (each pair's
/// messages stay in order, and every rank calls the collectives of a
/// communicator in the same order, so successive ones cannot mix).
pub const TAG_MERGE: i32 = 1;
pub const TAG_BARRIER: i32 = 2;
pub const TAG_BCAST: i32 = 3;
pub const TAG_REDUCE: i32 = 4;
pub const TAG_GATHER: i32 = 5;
pub const TAG_ALLGATHER: i32 = 6;
pub const TAG_ALLTOALL: i32 = 7;
pub const TAG_SCAN: i32 = 8;
pub const TAG_SCATTER: i32 = 9;
pub const TAG_SCATTERV: i32 = 10;
pub const TAG_ALLTOALLW: i32 = 11;
/// `MPI_Reduce`: the other job's partial result to the root.
pub const TAG_REDUCE_ROOT: i32 = 12;
/// The neighbourhood collectives (`neighbor`): this and the next (a grid's
/// two directions).
pub const TAG_NEIGHBOR: i32 = 13;

/// What a merged collective failed on: an MPI call of this job (its code)
/// or the bridge.
#[derive(Debug)]
pub enum Fail {
    Mpi(c_int),
    Bridge(BridgeError),
}

impl From<BridgeError> for Fail {
    fn from(e: BridgeError) -> Self {
        Fail::Bridge(e)
    }
}

/// An MPI return code as a result.
pub fn mpi(rc: c_int) -> Result<(), Fail> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Fail::Mpi(rc))
    }
}

/// Sends `count` elements of `dt` at `buf` to rank `dest` of the other job.
///
/// # Safety
/// `buf` addresses `count` readable elements of `dt`.
pub unsafe fn send(
    ic: &InterComm,
    dest: u32,
    tag: i32,
    buf: *const c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<SendRequest, BridgeError> {
    let n = c_int::try_from(count)
        .map_err(|_| BridgeError::InvalidArgument(format!("{count} elements exceed an int")))?;
    // SAFETY: forwarded.
    let (sig, n, enc) = unsafe { datatype::encode(buf, n, dt) }?;
    ic.isend_borrowed(dest, tag, &sig, n, &enc.bytes)
}

use crate::lent_send::LentSend;

/// A send that copied its block ([`send`]) or lends it ([`send_lent`]),
/// where one call site chooses at run time.
pub enum Sent {
    Copied(SendRequest),
    Lent(LentSend),
}

impl Sent {
    /// Waits for the send to complete.
    pub fn wait(self) -> Result<(), BridgeError> {
        match self {
            Sent::Copied(r) => r.wait(),
            Sent::Lent(l) => l.wait(),
        }
    }
}

/// [`send`] lending the memory at `buf` to the send when its bytes are the
/// wire's (a predefined type without gaps): no copy, and on this host a
/// large message is read by the receiver straight out of `buf`.
///
/// # Safety
/// `buf` addresses `count` readable elements of `dt`, which stay valid and
/// unchanged until the returned guard is dropped or waited for.
pub unsafe fn send_lent(
    ic: &InterComm,
    dest: u32,
    tag: i32,
    buf: *const c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<LentSend, BridgeError> {
    let n = c_int::try_from(count)
        .map_err(|_| BridgeError::InvalidArgument(format!("{count} elements exceed an int")))?;
    // SAFETY: forwarded.
    let (sig, n, enc) = unsafe { datatype::encode(buf, n, dt) }?;
    let req = match enc.bytes {
        // SAFETY: the bytes are `buf`'s, valid and unchanged until the guard
        // is dropped or waited for (this function's contract), and the
        // guard does not go before the request completed.
        Cow::Borrowed(b) => unsafe { ic.isend_lent(dest, tag, &sig, n, b.as_ptr(), b.len()) }?,
        Cow::Owned(v) => ic.isend_bytes(dest, tag, &sig, n, v)?,
    };
    Ok(LentSend::new(req))
}

/// Posts the receive of `count` elements of `dt` from rank `src` of the other job.
pub fn post(
    ic: &InterComm,
    src: u32,
    tag: i32,
    count: usize,
    dt: MPI_Datatype,
) -> Result<RecvRequest, BridgeError> {
    let max = datatype::capacity_bytes(count, dt)?;
    ic.irecv_bytes(Source::Rank(src), Tag::Value(tag), None, max)
}

/// Completes a posted receive into `buf`.
///
/// # Safety
/// `buf` addresses `count` writable elements of `dt`.
pub unsafe fn complete(
    req: RecvRequest,
    buf: *mut c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<(), BridgeError> {
    let (bytes, st) = req.wait()?;
    // SAFETY: forwarded.
    unsafe { datatype::decode_received(&bytes, &st, buf, count, dt) }.map(drop)
}

/// Receives `count` elements of `dt` from rank `src` of the other job into `buf`.
///
/// # Safety
/// As [`complete`].
pub unsafe fn recv(
    ic: &InterComm,
    src: u32,
    tag: i32,
    buf: *mut c_void,
    count: usize,
    dt: MPI_Datatype,
) -> Result<(), BridgeError> {
    // SAFETY: `buf` has room for `count` elements (this function's contract).
    let raw = unsafe { datatype::raw_target(buf, count, dt) };
    if let Some(target) = raw? {
        // A predefined type: straight into `buf`, no buffer in between.
        return target
            .recv(|bytes| ic.recv_bytes_into(Source::Rank(src), Tag::Value(tag), None, bytes))
            .map(drop);
    }
    let req = post(ic, src, tag, count, dt)?;
    // SAFETY: forwarded.
    unsafe { complete(req, buf, count, dt) }
}

/// Runs `step` at this job's leader (local rank 0, `leader`) and tells the
/// whole job, by a native broadcast on `native`, whether it went well, so
/// that no rank waits for data a failed leader will never send.
pub fn leader_step(
    native: MPI_Comm,
    leader: bool,
    step: impl FnOnce() -> Result<(), Fail>,
) -> Result<(), Fail> {
    let mut result = Ok(());
    // 0: done; 1: failed; 2 + r: the other job's rank r has failed (so
    // that every rank's error names it).
    let mut failed: c_int = 0;
    if leader {
        result = step();
        failed = match &result {
            Ok(()) => 0,
            Err(Fail::Bridge(BridgeError::PeerFailed { rank, .. })) => {
                c_int::try_from(*rank).map_or(1, |r| r.saturating_add(2))
            }
            Err(_) => 1,
        };
    }
    // SAFETY: one int, on the communicator's private native side.
    mpi(unsafe {
        crate::native_step::bcast((&raw mut failed).cast(), 1, ffi::RSMPI_INT32_T, 0, native)
    })?;
    if failed >= 2 && result.is_ok() {
        result = Err(Fail::Bridge(BridgeError::PeerFailed {
            rank: u32::try_from(failed - 2).unwrap_or(u32::MAX),
            reason: "this job's leader found it gone".into(),
        }));
    } else if failed != 0 && result.is_ok() {
        result = Err(Fail::Bridge(BridgeError::Protocol(
            "this job's leader could not exchange with the other job's leader".into(),
        )));
    }
    result
}

/// Copies `n` elements of `dt` from `src` to `dst`: a predefined type's
/// bytes at once, any other type packed and unpacked (which leaves its
/// gaps in `dst` alone).
///
/// # Safety
/// `src` addresses `n` readable, `dst` `n` writable elements of `dt`.
pub unsafe fn copy(
    native: MPI_Comm,
    src: *const c_void,
    dst: *mut c_void,
    n: c_int,
    dt: MPI_Datatype,
) -> Result<(), Fail> {
    let info = datatype::info_of(dt)?;
    if info.raw {
        // A predefined type has no gaps: its `n` elements are `n * size`
        // bytes. Through pack and unpack a megabyte cost two copies and a
        // zeroed buffer (`perf`: a fifth of a merged 1 MiB Allreduce).
        let len = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(info.data_size_per_elem))
            .ok_or_else(|| BridgeError::InvalidArgument(format!("count {n} overflows a buffer")))?;
        if len > 0 {
            // SAFETY: both address `n` elements of a gapless type, `len`
            // bytes (the caller's contract); `copy` allows overlap.
            unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), len) };
        }
        return Ok(());
    }
    let mut size: c_int = 0;
    // SAFETY: reads the type; writes `size`.
    mpi(unsafe { ffi::PMPI_Pack_size(n, dt, native, &mut size) })?;
    let mut packed = vec![0u8; usize::try_from(size).unwrap_or(0)];
    let mut pos: c_int = 0;
    // SAFETY: `packed` has the room MPI asked for; `src` as the caller says.
    mpi(unsafe {
        ffi::PMPI_Pack(
            src,
            n,
            dt,
            packed.as_mut_ptr().cast(),
            size,
            &mut pos,
            native,
        )
    })?;
    let mut at_pos: c_int = 0;
    // SAFETY: unpacks what was packed into `dst` (the caller's contract).
    mpi(unsafe {
        ffi::PMPI_Unpack(
            packed.as_ptr().cast(),
            size,
            &mut at_pos,
            dst,
            n,
            dt,
            native,
        )
    })
}

/// A root as a place, or MPI's `MPI_ERR_ROOT`.
pub fn root_place(mc: &MergedComm, root: c_int) -> Result<Place, Fail> {
    u32::try_from(root)
        .ok()
        .and_then(|r| mc.place(r))
        .ok_or(Fail::Mpi(ffi::MPI_ERR_ROOT as c_int))
}

/// The per-rank counts and displacements of `count` elements per rank in
/// merged-rank order: a plain collective as its v-form, for an order that
/// interleaves the jobs.
pub(super) fn blocks(mc: &MergedComm, count: c_int) -> Result<(Vec<c_int>, Vec<c_int>), Fail> {
    let k = elements(count)?;
    let n = mc.size() as usize;
    let displs = (0..n).map(|r| int(r * k)).collect::<Result<Vec<_>, _>>()?;
    Ok((vec![count; n], displs))
}

//! `MPI_Alltoall` on a mixed intercommunicator: MPICH's
//! `alltoall_inter_pairwise_exchange` — in step i of max(local, remote
//! size) steps, rank r sends its block for remote rank r+i and receives
//! from remote rank r-i (modulo that maximum; a rank past the remote size
//! is `MPI_PROC_NULL`), so each step pairs every rank with one peer.

use std::ffi::{c_int, c_void};

use crate::collbuf::elements;
use crate::merged::Fail;
use crate::mixed::coll::steps::{code, extents, sendrecv};
use crate::mpi_glue::{proc_null, MPI_Comm, MPI_Datatype};
use crate::state::MixedInter;

/// `MPI_Alltoall` on a mixed intercommunicator.
///
/// # Safety
/// As `MPI_Alltoall`.
#[allow(clippy::too_many_arguments)] // MPI's own
pub(crate) unsafe fn alltoall(
    mx: &MixedInter,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let run = || -> Result<(), Fail> {
        let (se, re) = (extents(sendtype)?, extents(recvtype)?);
        let (sn, rn) = (elements(sendcount)?, elements(recvcount)?);
        let remote = mx.peers.size();
        let most = remote.max(mx.local_size);
        for i in 0..most {
            let dst = (mx.rank + i) % most;
            let src = (mx.rank + most - i) % most;
            let (dst, sptr) = if dst < remote {
                let at = se.at(sendbuf, dst as usize * sn)?;
                (c_int::try_from(dst).unwrap_or(c_int::MAX), at.cast_const())
            } else {
                (proc_null(), std::ptr::null())
            };
            let (src, rptr) = if src < remote {
                let at = re.at(recvbuf, src as usize * rn)?;
                (c_int::try_from(src).unwrap_or(c_int::MAX), at)
            } else {
                (proc_null(), std::ptr::null_mut())
            };
            // SAFETY: a block of the program's buffers each way.
            unsafe {
                sendrecv(
                    mx,
                    (sptr, sendcount, sendtype, dst),
                    (rptr, recvcount, recvtype, src),
                )
            }?;
        }
        Ok(())
    };
    code(comm, "MPI_Alltoall", run())
}

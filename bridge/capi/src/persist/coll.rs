//! The persistent collectives (MPI 4.0: `MPI_Barrier_init`, `Bcast_init`,
//! …) on Isthmus communicators: a stored call that `MPI_Start` issues as
//! the interposed nonblocking collective (`MPI_Ibarrier`, `MPI_Ibcast`, …)
//! with the stored arguments, so each start runs that form's schedule
//! (`crate::coll::nonblocking` on an intercommunicator,
//! `merged::nonblocking` on a merged communicator, `mixed::nonblocking`
//! on a mixed intercommunicator) and takes the next
//! sequence number of the communicator's nonblocking collectives. Where
//! the nonblocking form is refused, `mpi-functions.txt` refuses the
//! `_init` form the same way. The info argument is not used.

// MPI 4 calls: only where the mpi.h has them (MPICH 4, not Open MPI 4.1).
#![cfg_attr(not(isthmus_large_count), allow(dead_code))]

use std::ffi::{c_int, c_void};

use mpi::ffi;

use crate::mpi_glue::{MPI_Comm, MPI_Datatype, MPI_Request};
use crate::persist::pt2pt::stored;
use crate::persist::table::Starter;
use crate::state::{BridgeComm, MergedComm, MixedInter};

/// The bodies of a persistent collective, one per kind of communicator
/// named (`bridge`: an Isthmus intercommunicator; `merged`: a merged one;
/// `mixed`: a mixed intercommunicator; where the nonblocking form has a body there): `$nb` with the call's
/// arguments at each start.
macro_rules! coll_init {
    ($name:literal, $nb:path, $args:tt, $($kind:ident => $body:ident),+) => {
        $(coll_init!(@one $kind, $body, $name, $nb, $args);)+
    };
    (@one bridge, $body:ident, $name:literal, $nb:path, $args:tt) => {
        coll_init!(@body $body, BridgeComm, "an Isthmus intercommunicator", $name, $nb, $args);
    };
    (@one merged, $body:ident, $name:literal, $nb:path, $args:tt) => {
        coll_init!(@body $body, MergedComm, "a merged communicator", $name, $nb, $args);
    };
    (@one mixed, $body:ident, $name:literal, $nb:path, $args:tt) => {
        coll_init!(@body $body, MixedInter, "a mixed intercommunicator", $name, $nb, $args);
    };
    (@body $body:ident, $comm:ty, $on:literal, $name:literal, $nb:path, ($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("`", $name, "` on ", $on, ".")]
        ///
        /// # Safety
        /// As the MPI function.
        #[allow(clippy::too_many_arguments)] // MPI's own
        pub(crate) unsafe fn $body(
            _c: &$comm,
            $($arg: $ty,)*
            comm: MPI_Comm,
            _info: ffi::MPI_Info,
            request: *mut MPI_Request,
        ) -> c_int {
            let start: Starter = Box::new(move |req| {
                // SAFETY: the buffers, arrays and handles of the persistent
                // request, valid until it is freed (MPI's rule).
                unsafe { $nb($($arg,)* comm, req) }
            });
            // SAFETY: forwarded.
            unsafe { stored(comm, $name, start, request) }
        }
    };
}

extern "C" {
    // libisthmus's own entry points (a merged communicator's bodies in
    // `merged`, which imports this module): linked by name, not path.
    fn MPI_Ineighbor_allgather(
        s: *const c_void,
        sn: c_int,
        st: MPI_Datatype,
        r: *mut c_void,
        rn: c_int,
        rt: MPI_Datatype,
        comm: MPI_Comm,
        req: *mut MPI_Request,
    ) -> c_int;
    fn MPI_Ineighbor_allgatherv(
        s: *const c_void,
        sn: c_int,
        st: MPI_Datatype,
        r: *mut c_void,
        rn: *const c_int,
        rd: *const c_int,
        rt: MPI_Datatype,
        comm: MPI_Comm,
        req: *mut MPI_Request,
    ) -> c_int;
    fn MPI_Ineighbor_alltoall(
        s: *const c_void,
        sn: c_int,
        st: MPI_Datatype,
        r: *mut c_void,
        rn: c_int,
        rt: MPI_Datatype,
        comm: MPI_Comm,
        req: *mut MPI_Request,
    ) -> c_int;
    fn MPI_Ineighbor_alltoallv(
        s: *const c_void,
        sn: *const c_int,
        sd: *const c_int,
        st: MPI_Datatype,
        r: *mut c_void,
        rn: *const c_int,
        rd: *const c_int,
        rt: MPI_Datatype,
        comm: MPI_Comm,
        req: *mut MPI_Request,
    ) -> c_int;
    fn MPI_Ineighbor_alltoallw(
        s: *const c_void,
        sn: *const c_int,
        sd: *const ffi::MPI_Aint,
        st: *const MPI_Datatype,
        r: *mut c_void,
        rn: *const c_int,
        rd: *const ffi::MPI_Aint,
        rt: *const MPI_Datatype,
        comm: MPI_Comm,
        req: *mut MPI_Request,
    ) -> c_int;
    fn MPI_Iscan(
        s: *const c_void,
        r: *mut c_void,
        n: c_int,
        t: MPI_Datatype,
        op: ffi::MPI_Op,
        comm: MPI_Comm,
        req: *mut MPI_Request,
    ) -> c_int;
    fn MPI_Iexscan(
        s: *const c_void,
        r: *mut c_void,
        n: c_int,
        t: MPI_Datatype,
        op: ffi::MPI_Op,
        comm: MPI_Comm,
        req: *mut MPI_Request,
    ) -> c_int;
}

type Buf = *const c_void;
type BufMut = *mut c_void;
type Dt = MPI_Datatype;
type Ints = *const c_int;
type Types = *const MPI_Datatype;
type Aints = *const ffi::MPI_Aint;

coll_init!("MPI_Barrier_init", crate::coll::MPI_Ibarrier, (),
    bridge => barrier_init, merged => merged_barrier_init, mixed => mixed_barrier_init);
coll_init!("MPI_Bcast_init", crate::coll::MPI_Ibcast, (b: BufMut, n: c_int, t: Dt, root: c_int),
    bridge => bcast_init, merged => merged_bcast_init, mixed => mixed_bcast_init);
coll_init!("MPI_Reduce_init", crate::coll::MPI_Ireduce,
    (s: Buf, r: BufMut, n: c_int, t: Dt, op: ffi::MPI_Op, root: c_int),
    bridge => reduce_init, merged => merged_reduce_init, mixed => mixed_reduce_init);
coll_init!("MPI_Allreduce_init", crate::coll::MPI_Iallreduce,
    (s: Buf, r: BufMut, n: c_int, t: Dt, op: ffi::MPI_Op),
    bridge => allreduce_init, merged => merged_allreduce_init, mixed => mixed_allreduce_init);
coll_init!("MPI_Gather_init", crate::coll::MPI_Igather,
    (s: Buf, sn: c_int, st: Dt, r: BufMut, rn: c_int, rt: Dt, root: c_int),
    bridge => gather_init, merged => merged_gather_init, mixed => mixed_gather_init);
coll_init!("MPI_Gatherv_init", crate::coll::MPI_Igatherv,
    (s: Buf, sn: c_int, st: Dt, r: BufMut, rn: Ints, rd: Ints, rt: Dt, root: c_int),
    bridge => gatherv_init, merged => merged_gatherv_init, mixed => mixed_gatherv_init);
coll_init!("MPI_Scatter_init", crate::coll::MPI_Iscatter,
    (s: Buf, sn: c_int, st: Dt, r: BufMut, rn: c_int, rt: Dt, root: c_int),
    bridge => scatter_init, merged => merged_scatter_init, mixed => mixed_scatter_init);
coll_init!("MPI_Scatterv_init", crate::coll::MPI_Iscatterv,
    (s: Buf, sn: Ints, sd: Ints, st: Dt, r: BufMut, rn: c_int, rt: Dt, root: c_int),
    bridge => scatterv_init, merged => merged_scatterv_init, mixed => mixed_scatterv_init);
coll_init!("MPI_Allgather_init", crate::coll::MPI_Iallgather,
    (s: Buf, sn: c_int, st: Dt, r: BufMut, rn: c_int, rt: Dt),
    bridge => allgather_init, merged => merged_allgather_init, mixed => mixed_allgather_init);
coll_init!("MPI_Allgatherv_init", crate::coll::MPI_Iallgatherv,
    (s: Buf, sn: c_int, st: Dt, r: BufMut, rn: Ints, rd: Ints, rt: Dt),
    bridge => allgatherv_init, merged => merged_allgatherv_init, mixed => mixed_allgatherv_init);
coll_init!("MPI_Alltoall_init", crate::coll::MPI_Ialltoall,
    (s: Buf, sn: c_int, st: Dt, r: BufMut, rn: c_int, rt: Dt),
    bridge => alltoall_init, merged => merged_alltoall_init, mixed => mixed_alltoall_init);
coll_init!("MPI_Alltoallv_init", crate::coll::MPI_Ialltoallv,
    (s: Buf, sn: Ints, sd: Ints, st: Dt, r: BufMut, rn: Ints, rd: Ints, rt: Dt),
    bridge => alltoallv_init, merged => merged_alltoallv_init, mixed => mixed_alltoallv_init);
coll_init!("MPI_Alltoallw_init", crate::coll::MPI_Ialltoallw,
    (s: Buf, sn: Ints, sd: Ints, st: Types, r: BufMut, rn: Ints, rd: Ints, rt: Types),
    bridge => alltoallw_init, merged => merged_alltoallw_init, mixed => mixed_alltoallw_init);
coll_init!("MPI_Reduce_scatter_init", crate::coll::MPI_Ireduce_scatter,
    (s: Buf, r: BufMut, rn: Ints, t: Dt, op: ffi::MPI_Op),
    bridge => reduce_scatter_init, merged => merged_reduce_scatter_init, mixed => mixed_reduce_scatter_init);
coll_init!("MPI_Reduce_scatter_block_init", crate::coll::MPI_Ireduce_scatter_block,
    (s: Buf, r: BufMut, n: c_int, t: Dt, op: ffi::MPI_Op),
    bridge => reduce_scatter_block_init, merged => merged_reduce_scatter_block_init, mixed => mixed_reduce_scatter_block_init);
coll_init!("MPI_Scan_init", MPI_Iscan,
    (s: Buf, r: BufMut, n: c_int, t: Dt, op: ffi::MPI_Op),
    merged => merged_scan_init);
coll_init!("MPI_Exscan_init", MPI_Iexscan,
    (s: Buf, r: BufMut, n: c_int, t: Dt, op: ffi::MPI_Op),
    merged => merged_exscan_init);
coll_init!("MPI_Neighbor_allgather_init", MPI_Ineighbor_allgather,
    (s: Buf, sn: c_int, st: Dt, r: BufMut, rn: c_int, rt: Dt),
    merged => merged_neighbor_allgather_init);
coll_init!("MPI_Neighbor_allgatherv_init", MPI_Ineighbor_allgatherv,
    (s: Buf, sn: c_int, st: Dt, r: BufMut, rn: Ints, rd: Ints, rt: Dt),
    merged => merged_neighbor_allgatherv_init);
coll_init!("MPI_Neighbor_alltoall_init", MPI_Ineighbor_alltoall,
    (s: Buf, sn: c_int, st: Dt, r: BufMut, rn: c_int, rt: Dt),
    merged => merged_neighbor_alltoall_init);
coll_init!("MPI_Neighbor_alltoallv_init", MPI_Ineighbor_alltoallv,
    (s: Buf, sn: Ints, sd: Ints, st: Dt, r: BufMut, rn: Ints, rd: Ints, rt: Dt),
    merged => merged_neighbor_alltoallv_init);
coll_init!("MPI_Neighbor_alltoallw_init", MPI_Ineighbor_alltoallw,
    (s: Buf, sn: Ints, sd: Aints, st: Types, r: BufMut, rn: Ints, rd: Aints, rt: Types),
    merged => merged_neighbor_alltoallw_init);

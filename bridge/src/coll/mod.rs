//! The collectives room: MPI collective operations on an [`InterComm`],
//! one file per algorithm, named as MPICH names them in `src/mpi/coll`
//! (`<operation>_<inter|intra>_<algorithm>.rs`), so that intracommunicator
//! algorithms (for merged communicators) take their place beside the
//! intercommunicator ones. This module holds the public entry points
//! (which pick the algorithm), the roles and the tags.
//!
//! The intercommunicator algorithms are local–global–local, as IMPI and
//! MPICH's `bcast_inter_remote_send_local_bcast` are: native MPI inside each
//! job (the job's own communicator, passed by the caller: the intercomm
//! knows only its rank and size in it), and O(1) bridge messages between
//! the two groups' leaders (local rank 0) or from a root to a leader.
//!
//! Separation from the user's messages: every bridge message of a
//! collective travels on the intercomm's collective channel, a context of
//! its own derived from the intercomm's (see `intercomm`), which no user
//! send or receive names; so collective traffic can never match a user
//! point-to-point message, whatever its tag, including `Tag::Any`. Within
//! that context each operation has its own tag (see `common`); operations of one
//! communicator are called in the same order by all its processes (as MPI
//! requires) and each pair's messages stay in order, so successive
//! collectives cannot mix either.

mod allgather_inter_local_gather_remote_bcast;
mod allgatherv_inter_remote_gather_local_bcast;
mod allreduce_inter_reduce_exchange_bcast;
mod alltoall_inter_pairwise_exchange;
mod barrier_inter_leaders;
mod bcast_inter_remote_send_local_bcast;
mod common;
mod gather_inter_local_gather_remote_send;
mod gatherv_inter_linear;
mod reduce_inter_local_reduce_remote_send;
mod reduce_scatter_inter_remote_reduce_local_scatter;
mod scatter_inter_remote_send_local_scatter;

pub use alltoall_inter_pairwise_exchange::BlockRecv;
pub use common::{BcastRole, Message, Share};

use mpi::topology::Communicator;

use crate::error::{BridgeError, Result};
use crate::intercomm::InterComm;
use crate::matching::{Source, Status, Tag};
use crate::request::{RecvRequest, SendRequest};
use crate::wire::TypeSig;

impl InterComm {
    /// Intercommunicator barrier (`MPI_Barrier`): returns once every rank of
    /// both groups has entered it. `local` is this job's own communicator
    /// (the local group of this intercomm, same rank and size).
    pub fn barrier<C: Communicator>(&self, local: &C) -> Result<()> {
        check_local(self, local)?;
        barrier_inter_leaders::barrier(self, local)
    }

    /// Intercommunicator broadcast (`MPI_Bcast`): the root's `buf` arrives
    /// in `buf` at every rank of the other group. Every rank of the
    /// receiving group passes a buffer of the same length as the root's.
    /// `local` is this job's own communicator (see [`InterComm::barrier`]).
    pub fn bcast<C, T>(&self, local: &C, role: BcastRole, buf: &mut [T]) -> Result<()>
    where
        C: Communicator,
        T: mpi::datatype::Equivalence + Send + Sync + 'static,
    {
        check_local(self, local)?;
        if let BcastRole::From { root } = role {
            check_root(self, root)?;
        }
        bcast_inter_remote_send_local_bcast::bcast(self, local, role, buf)
    }

    /// The root's part (`MPI_ROOT`) of an untyped intercommunicator
    /// broadcast: `payload`, `count` elements encoded with signature `sig`
    /// (as a point-to-point send takes them), to every rank of the remote
    /// group, which calls [`InterComm::bcast_recv_bytes`]. The other ranks
    /// of the root's group take no part.
    pub fn bcast_send_bytes(&self, sig: &TypeSig, count: u64, payload: &[u8]) -> Result<()> {
        let msg = Message {
            sig: *sig,
            count,
            bytes: payload.into(),
        };
        self.bcast_send(Ok(msg))
    }

    /// The root's part (`MPI_ROOT`) of an untyped broadcast, as
    /// [`InterComm::bcast_send_bytes`]; when the root could not make its
    /// message (`msg` is an error) the receivers get an error instead of
    /// waiting, and the root its own error back.
    pub fn bcast_send(&self, msg: Result<Message<'_>>) -> Result<()> {
        bcast_inter_remote_send_local_bcast::bcast_send(self, msg)
    }

    /// A receiving rank's part of an untyped intercommunicator broadcast
    /// from rank `root` of the remote group: the root's message (at most
    /// `max_bytes`, else a truncation error at every rank) and its status,
    /// for the caller to check against its type and decode. `local` is this
    /// job's own communicator (see [`InterComm::barrier`]).
    pub fn bcast_recv_bytes<C: Communicator>(
        &self,
        local: &C,
        root: u32,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, Status)> {
        check_local(self, local)?;
        check_root(self, root)?;
        bcast_inter_remote_send_local_bcast::bcast_recv_bytes(self, local, root, max_bytes)
    }

    /// [`InterComm::bcast_recv_bytes`] into `buf` (the caller's room for
    /// the root's message, its size the most that may come): the leader
    /// receives straight into it (on this host, a large message of a root
    /// that lent its buffer in a single copy) and the rest of the job gets
    /// it by a native broadcast into theirs. Returns the message's status;
    /// its bytes are `buf`'s first `status.bytes`, to check and convert in
    /// place.
    pub fn bcast_recv_into<C: Communicator>(
        &self,
        local: &C,
        root: u32,
        buf: &mut [u8],
    ) -> Result<Status> {
        check_local(self, local)?;
        check_root(self, root)?;
        bcast_inter_remote_send_local_bcast::bcast_recv_into(self, local, root, buf)
    }
}

/// The untyped rooted and reducing collectives (local–global–local): the
/// caller does the native steps that need the program's datatypes and
/// operations (a local gather or reduce to the leader, local rank 0) and
/// encodes what crosses; these carry it over the bridge and hand each
/// rank its received bytes with their status, for the caller to check
/// against its own type and decode. A leader's part is `Some` at local
/// rank 0 only; an error in it reaches every rank of both groups as an
/// error, never a wait.
impl InterComm {
    /// `MPI_Gather`, the group that does not hold the root: the leader's
    /// gathered message goes to remote rank `root`; every rank returns the
    /// leader's outcome.
    pub fn gather_send<C: Communicator>(
        &self,
        local: &C,
        root: u32,
        gathered: Option<Result<Message<'_>>>,
    ) -> Result<()> {
        check_local(self, local)?;
        check_root(self, root)?;
        gather_inter_local_gather_remote_send::local_then_remote_send(
            self,
            local,
            root,
            common::TAG_GATHER,
            gathered,
            "gather",
        )
    }

    /// `MPI_Gather` at the root (`MPI_ROOT`): the remote group's data, at
    /// most `max_bytes`.
    pub fn gather_recv(&self, max_bytes: usize) -> Result<(Vec<u8>, Status)> {
        gather_inter_local_gather_remote_send::root_recv(self, common::TAG_GATHER, max_bytes)
    }

    /// `MPI_Reduce`, the group that does not hold the root: the leader's
    /// result goes to remote rank `root`; every rank returns the leader's outcome.
    pub fn reduce_send<C: Communicator>(
        &self,
        local: &C,
        root: u32,
        reduced: Option<Result<Message<'_>>>,
    ) -> Result<()> {
        check_local(self, local)?;
        check_root(self, root)?;
        reduce_inter_local_reduce_remote_send::reduce_send(self, local, root, reduced)
    }

    /// `MPI_Reduce` at the root (`MPI_ROOT`): the remote group's result, at
    /// most `max_bytes`.
    pub fn reduce_recv(&self, max_bytes: usize) -> Result<(Vec<u8>, Status)> {
        reduce_inter_local_reduce_remote_send::reduce_recv(self, max_bytes)
    }

    /// `MPI_Scatter` at the root (`MPI_ROOT`): all its data, to the remote group.
    pub fn scatter_send(&self, msg: Result<Message<'_>>) -> Result<()> {
        scatter_inter_remote_send_local_scatter::scatter_send(self, msg)
    }

    /// `MPI_Scatter` in the receiving group: this rank's equal share of the
    /// message of remote rank `root` (at most `max_bytes` in all).
    pub fn scatter_recv<C: Communicator>(
        &self,
        local: &C,
        root: u32,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, Status)> {
        check_local(self, local)?;
        check_root(self, root)?;
        scatter_inter_remote_send_local_scatter::scatter_recv(self, local, root, max_bytes)
    }

    /// `MPI_Allreduce`: the leader's local result goes to the other group;
    /// every rank returns the other group's (at most `max_bytes`).
    pub fn allreduce_bytes<C: Communicator>(
        &self,
        local: &C,
        reduced: Option<Result<Message<'_>>>,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, Status)> {
        check_local(self, local)?;
        allreduce_inter_reduce_exchange_bcast::allreduce(self, local, reduced, max_bytes)
    }

    /// [`InterComm::allreduce_bytes`] into `buf` (as
    /// [`InterComm::bcast_recv_into`]); the leader's `reduced` must not lie
    /// in `buf`, which the other group's result overwrites while it is sent.
    pub fn allreduce_into<C: Communicator>(
        &self,
        local: &C,
        reduced: Option<Result<Message<'_>>>,
        buf: &mut [u8],
    ) -> Result<Status> {
        check_local(self, local)?;
        allreduce_inter_reduce_exchange_bcast::allreduce_into(self, local, reduced, buf)
    }

    /// `MPI_Allgather`: the leader's gathered data goes to the other group;
    /// every rank returns the other group's (at most `max_bytes`).
    pub fn allgather_bytes<C: Communicator>(
        &self,
        local: &C,
        gathered: Option<Result<Message<'_>>>,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, Status)> {
        check_local(self, local)?;
        allgather_inter_local_gather_remote_bcast::allgather(self, local, gathered, max_bytes)
    }

    /// `MPI_Reduce_scatter_block` (`counts` None) and `MPI_Reduce_scatter`
    /// (`counts` the elements of each local rank): the leader's local
    /// result goes to the other group; every rank returns its share of the
    /// other group's (at most `max_bytes` in all).
    pub fn reduce_scatter_bytes<C: Communicator>(
        &self,
        local: &C,
        reduced: Option<Result<Message<'_>>>,
        counts: Option<&[u64]>,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, Status)> {
        check_local(self, local)?;
        reduce_scatter_inter_remote_reduce_local_scatter::reduce_scatter(
            self, local, reduced, counts, max_bytes,
        )
    }

    /// `MPI_Gatherv`, a rank of the group without the root: its block to
    /// remote rank `root`.
    pub fn gatherv_send(&self, root: u32, msg: Result<Message<'_>>) -> Result<()> {
        check_root(self, root)?;
        gatherv_inter_linear::send_to_root(self, root, common::TAG_GATHERV, msg)
    }

    /// `MPI_Gatherv` at the root (`MPI_ROOT`): the block of every remote
    /// rank j (at most `capacity(j)` bytes) to `deliver(j, bytes, status)`.
    pub fn gatherv_recv(
        &self,
        capacity: impl Fn(u32) -> Result<usize>,
        deliver: impl FnMut(u32, Vec<u8>, Status) -> Result<()>,
    ) -> Result<()> {
        gatherv_inter_linear::recv_from_each(self, common::TAG_GATHERV, capacity, deliver)
    }

    /// `MPI_Scatterv` at the root (`MPI_ROOT`): `block(j)` to every remote rank j.
    pub fn scatterv_send<'a>(&self, block: impl FnMut(u32) -> Result<Message<'a>>) -> Result<()> {
        gatherv_inter_linear::send_to_each(self, common::TAG_SCATTERV, block)
    }

    /// `MPI_Scatterv` in the receiving group: this rank's block from remote
    /// rank `root` (at most `max_bytes`).
    pub fn scatterv_recv(&self, root: u32, max_bytes: usize) -> Result<(Vec<u8>, Status)> {
        check_root(self, root)?;
        gatherv_inter_linear::recv_from_root(self, root, common::TAG_SCATTERV, max_bytes)
    }

    /// `MPI_Allgatherv`: this rank's block goes to the other group; returns
    /// the block of every remote rank in rank order (the leader takes at
    /// most `capacity(j)` bytes from remote rank j).
    pub fn allgatherv_bytes<C: Communicator>(
        &self,
        local: &C,
        mine: Result<Message<'_>>,
        capacity: impl Fn(u32) -> Result<usize>,
    ) -> Result<Vec<(Vec<u8>, Status)>> {
        check_local(self, local)?;
        allgatherv_inter_remote_gather_local_bcast::allgatherv(self, local, mine, capacity)
    }

    /// `MPI_Alltoall` (v, w): `block(j)` is this rank's message for remote
    /// rank j, and `receive(j, r)` takes remote rank j's block through `r`
    /// (into the caller's memory or a vector, see [`BlockRecv`]). Each
    /// block crosses once.
    pub fn alltoall_bytes<'a>(
        &self,
        block: impl FnMut(u32) -> Result<Message<'a>>,
        receive: impl FnMut(u32, &mut BlockRecv<'_>) -> Result<()>,
    ) -> Result<()> {
        alltoall_inter_pairwise_exchange::alltoall(self, block, receive)
    }
}

/// The bridge messages of the nonblocking collectives (libisthmus's
/// `MPI_I*`, which run their own schedules of native steps and these):
/// on a context of their own, each operation's messages tagged by its
/// sequence number on the communicator (`seq`, counted alike by every
/// process), so that operations outstanding together never take each
/// other's messages, nor a blocking collective theirs.
impl InterComm {
    /// Starts sending `msg` (a message already encoded) to remote rank
    /// `dest` for nonblocking collective `seq`; when the caller's part
    /// failed (`msg` is an error) the failure notice goes instead, so that
    /// the receiver fails rather than waits, and the error is returned.
    pub fn nbc_isend(&self, dest: u32, seq: u64, msg: Result<Message<'_>>) -> Result<SendRequest> {
        check_dest(self, dest)?;
        common::nbc_isend(self, dest, seq, msg)
    }

    /// [`InterComm::nbc_isend`] lending the message's bytes when they are
    /// borrowed (the program's memory: no copy; on this host the receiver
    /// reads them where they are).
    ///
    /// # Safety
    /// Borrowed bytes of `msg` stay valid and unchanged until the returned
    /// request completed, or, dropped before, until the message was
    /// received.
    pub unsafe fn nbc_isend_lent(
        &self,
        dest: u32,
        seq: u64,
        msg: Result<Message<'_>>,
    ) -> Result<SendRequest> {
        check_dest(self, dest)?;
        // SAFETY: the caller's promise, as this function's.
        unsafe { common::nbc_isend_lent(self, dest, seq, msg) }
    }

    /// Posts the receive of remote rank `source`'s message (at most
    /// `max_bytes`) for nonblocking collective `seq`; its outcome goes
    /// through [`InterComm::nbc_received`].
    pub fn nbc_irecv(&self, source: u32, seq: u64, max_bytes: usize) -> Result<RecvRequest> {
        check_root(self, source)?;
        self.nbc_channel().irecv(
            Source::Rank(source),
            Tag::Value(common::nbc_tag(seq)),
            None,
            max_bytes,
        )
    }

    /// What a receive of [`InterComm::nbc_irecv`] from `source` completed
    /// with: the message, or an error when the sender's part failed.
    pub fn nbc_received(
        &self,
        source: u32,
        got: Result<(Vec<u8>, Status)>,
    ) -> Result<(Vec<u8>, Status)> {
        common::nbc_checked(source, got)
    }
}

/// The element counts of each of `ranks` ranks' share of the message
/// `whole` as `share` says (None: the whole message to everyone), or an
/// error when the message does not split so: what a leader's job does with
/// the other group's message, for callers that hand it out themselves one
/// non-blocking step at a time (libisthmus's nonblocking collectives).
pub fn shares(
    whole: &Status,
    ranks: i32,
    share: Share<'_>,
    what: &str,
) -> Result<Option<Vec<u64>>> {
    common::split(whole, ranks, share, what)
}

/// A message's destination must be a rank of the remote group.
fn check_dest(ic: &InterComm, dest: u32) -> Result<()> {
    if dest >= ic.remote_size() {
        return Err(BridgeError::InvalidArgument(format!(
            "remote rank {dest} does not exist: the remote group has {} ranks",
            ic.remote_size()
        )));
    }
    Ok(())
}

/// A broadcast's root must be a rank of the remote group.
fn check_root(ic: &InterComm, root: u32) -> Result<()> {
    if root >= ic.remote_size() {
        return Err(BridgeError::InvalidArgument(format!(
            "root {root} does not exist: the remote group has {} ranks",
            ic.remote_size()
        )));
    }
    Ok(())
}

/// The local communicator must be this intercomm's local group.
fn check_local<C: Communicator>(ic: &InterComm, local: &C) -> Result<()> {
    let (rank, size) = (local.rank(), local.size());
    if i64::from(rank) != i64::from(ic.rank()) || i64::from(size) != i64::from(ic.local_size()) {
        return Err(BridgeError::InvalidArgument(format!(
            "the local communicator (rank {rank} of {size}) is not this intercomm's local group \
             (rank {} of {})",
            ic.rank(),
            ic.local_size()
        )));
    }
    Ok(())
}

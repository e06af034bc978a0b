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

mod barrier_inter_leaders;
mod bcast_inter_remote_send_local_bcast;
mod common;

pub use common::BcastRole;

use mpi::topology::Communicator;

use crate::error::{BridgeError, Result};
use crate::intercomm::InterComm;
use crate::matching::Status;
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
        bcast_inter_remote_send_local_bcast::bcast_send_bytes(self, sig, count, payload)
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
}

/// A broadcast's root must be a rank of the remote group.
fn check_root(ic: &InterComm, root: u32) -> Result<()> {
    if root >= ic.remote_size() {
        return Err(BridgeError::InvalidArgument(format!(
            "bcast root {root} does not exist: the remote group has {} ranks",
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

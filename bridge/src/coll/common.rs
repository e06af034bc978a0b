//! What the collective algorithms share: the tags they use on an
//! intercomm's collective context (one per operation) and the roles a
//! process can have in a rooted operation.

/// Tag of the leaders' messages of `barrier`.
pub(super) const TAG_BARRIER: i32 = 1;
/// Tag of the root's message of `bcast`.
pub(super) const TAG_BCAST: i32 = 2;

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

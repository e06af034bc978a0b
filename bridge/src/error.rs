//! Error type of the bridge data path: every failure a caller can see, with a message naming the problem.

use std::sync::Arc;
use std::time::Duration;

/// Result alias used throughout the bridge.
pub type Result<T, E = BridgeError> = std::result::Result<T, E>;

/// Everything that can go wrong in the bridge data path.
///
/// Cloneable because one event (a peer dying, the engine shutting down) is
/// reported to every pending operation it affects.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BridgeError {
    /// The remote process behind `rank` died, left, or its connection broke.
    #[error("remote rank {rank} has failed: {reason}")]
    PeerFailed { rank: u32, reason: String },

    /// The matched message's type signature differs from the one the receive expected.
    /// The message is consumed; later messages are unaffected.
    #[error("type signature mismatch: receive expected {expected:#018x} but the message from rank {from_rank} (tag {tag}) carries {actual:#018x}")]
    TypeMismatch {
        expected: u64,
        actual: u64,
        from_rank: u32,
        tag: i32,
    },

    /// The matched message is larger than the receive buffer. The message is consumed.
    #[error("message truncated: the message has {message_bytes} bytes but the receive buffer holds only {buffer_bytes}")]
    Truncated {
        message_bytes: u64,
        buffer_bytes: u64,
    },

    /// A caller passed an argument MPI would reject (bad rank, negative tag, size mismatch, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A `_timeout` variant gave up. The operation was withdrawn (nothing was consumed).
    #[error("operation timed out after {0:?}")]
    Timeout(Duration),

    /// Opening the data connection to a peer failed.
    #[error("cannot connect to peer process {process} at {address}: {reason}")]
    Connect {
        process: uuid::Uuid,
        address: String,
        reason: String,
    },

    /// A peer record (published endpoint) could not be decoded.
    #[error("malformed endpoint record: {0}")]
    BadEndpoint(String),

    /// The peer sent something that does not follow the wire protocol.
    #[error("protocol violation: {0}")]
    Protocol(String),

    /// The context id is already used by a live InterComm on this engine.
    #[error("context id {0:#x} is already in use by another InterComm on this engine")]
    ContextInUse(u64),

    /// The engine was shut down (or aborted) while the operation was pending or before it started.
    #[error("the bridge engine is shut down")]
    EngineShutDown,

    /// The virtual machine (vmd) refused or failed a control operation.
    #[error("vmd {op}: {message}")]
    Vm { op: &'static str, message: String },

    /// `register` found the group name held by another job (on every rank).
    #[error("cannot register group {group:?}: {reason}")]
    NameTaken { group: String, reason: String },

    /// The vmd refused the caller a group it named: it belongs to another
    /// user who did not allow the caller (the reason names the owner).
    #[error("group {group:?} is not yours to reach: {reason}")]
    NotPermitted { group: String, reason: String },

    /// The remote group did not become complete before the deadline.
    #[error("remote group {group:?} was not registered within {waited:?}")]
    RemoteNotReady { group: String, waited: Duration },

    /// The remote group was registered and lost a member.
    #[error("remote group {group:?} lost a member: {reason}")]
    RemoteLost { group: String, reason: String },

    /// A nonblocking send found `limit` sends of this process already
    /// waiting for their receivers (`ISTHMUS_MAX_PENDING_SENDS`); nothing
    /// was sent. MPI lets a call fail for lack of resources.
    #[error("{limit} sends of this process already wait for their receivers (ISTHMUS_MAX_PENDING_SENDS): complete some (MPI_Wait/MPI_Test) or raise the limit; this send was not started")]
    TooManyPendingSends { limit: u64 },

    /// The datatype layer could not describe, encode or decode the data.
    #[error("datatype: {0}")]
    Datatype(Arc<crate::datatype::DatatypeError>),

    /// A local I/O error (e.g. binding the listening sockets).
    #[error("I/O error while {context}: {source}")]
    Io {
        context: String,
        source: Arc<std::io::Error>,
    },
}

impl BridgeError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        BridgeError::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }
}

impl From<crate::datatype::DatatypeError> for BridgeError {
    fn from(e: crate::datatype::DatatypeError) -> Self {
        BridgeError::Datatype(Arc::new(e))
    }
}

//! What can go wrong talking to a vmd, and the kinds of refusal callers
//! branch on, independent of gRPC's status codes.

use std::time::Duration;

use tonic::{Code, Status};

/// What kind of failure a [`ClientError`] is: what callers branch on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The request itself is wrong (bad name, bad size, unknown kind, …).
    InvalidArgument,
    /// No such group, member, host or job.
    NotFound,
    /// The name or instance is taken.
    AlreadyExists,
    /// The request does not fit the current state (group frozen, not the
    /// resource manager, session already open, …).
    FailedPrecondition,
    /// No room: no host with free slots or no tasker for the implementation.
    ResourceExhausted,
    /// A wait ran out of time, at the vmd or waiting for its answer.
    DeadlineExceeded,
    /// The operation was cut short by a death: a frozen group broke, a
    /// barrier lost a member (or the store contended: nothing was done).
    Aborted,
    /// Events were dropped: a watcher fell behind.
    DataLoss,
    /// The vmd cannot be reached, or the session ended.
    Unavailable,
    /// The vmd answered something this client does not understand.
    Protocol,
    /// The vmd does not know who this client is (no or a wrong credential).
    Unauthenticated,
    /// The vmd knows the client and refuses it this call (a rule said no).
    PermissionDenied,
    /// Anything else the vmd reported.
    Other,
}

impl ErrorKind {
    fn of_code(code: Code) -> Self {
        match code {
            Code::InvalidArgument | Code::OutOfRange => ErrorKind::InvalidArgument,
            Code::NotFound => ErrorKind::NotFound,
            Code::AlreadyExists => ErrorKind::AlreadyExists,
            Code::FailedPrecondition => ErrorKind::FailedPrecondition,
            Code::ResourceExhausted => ErrorKind::ResourceExhausted,
            Code::DeadlineExceeded => ErrorKind::DeadlineExceeded,
            Code::Aborted => ErrorKind::Aborted,
            Code::DataLoss => ErrorKind::DataLoss,
            Code::Unavailable | Code::Cancelled => ErrorKind::Unavailable,
            Code::Internal | Code::Unimplemented => ErrorKind::Protocol,
            Code::Unauthenticated => ErrorKind::Unauthenticated,
            Code::PermissionDenied => ErrorKind::PermissionDenied,
            _ => ErrorKind::Other,
        }
    }
}

/// Errors of a vmd client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach vmd at {addr}: {source}")]
    Connect {
        addr: String,
        source: tonic::transport::Error,
    },
    #[error("cannot use the vmd token file {path:?}: {reason}")]
    Token {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("vmd address {addr:?} is not valid: {reason}")]
    BadAddress { addr: String, reason: String },
    /// A setting from the environment that does not parse.
    #[error("{name}={value:?} is not valid: {reason}")]
    BadSetting {
        name: &'static str,
        value: String,
        reason: String,
    },
    /// The vmd refused or failed the request.
    #[error("{message}")]
    Refused { kind: ErrorKind, message: String },
    #[error("vmd session ended")]
    Closed,
    /// The session to the vmd broke while the call was in flight (the vmd
    /// stopped or restarted); the call may or may not have taken effect.
    /// The session resumes on its own if it can.
    #[error("the vmd session was interrupted before the reply (the call may or may not have taken effect)")]
    Interrupted,
    #[error("vmd did not answer within {0:?}")]
    Timeout(Duration),
    #[error("vmd protocol error: {0}")]
    Protocol(String),
}

impl ClientError {
    /// What kind of failure this is, for callers that branch on it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ClientError::Refused { kind, .. } => *kind,
            ClientError::Timeout(_) => ErrorKind::DeadlineExceeded,
            ClientError::BadAddress { .. } | ClientError::BadSetting { .. } => {
                ErrorKind::InvalidArgument
            }
            ClientError::Protocol(_) => ErrorKind::Protocol,
            ClientError::Token { .. } => ErrorKind::Unauthenticated,
            ClientError::Connect { .. } | ClientError::Closed | ClientError::Interrupted => {
                ErrorKind::Unavailable
            }
        }
    }

    /// The vmd's own words (for a refusal), else the error's description.
    pub fn message(&self) -> String {
        match self {
            ClientError::Refused { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// A refusal carried in a session reply (`pb::Error`, a gRPC code).
    pub(crate) fn from_reply(e: isthmus_proto::Error) -> Self {
        ClientError::Refused {
            kind: ErrorKind::of_code(Code::from(e.code)),
            message: e.message,
        }
    }
}

/// An answer the vmd sent that this client cannot read.
impl From<isthmus_proto::convert::Malformed> for ClientError {
    fn from(m: isthmus_proto::convert::Malformed) -> Self {
        ClientError::Protocol(m.to_string())
    }
}

impl From<Status> for ClientError {
    fn from(s: Status) -> Self {
        ClientError::Refused {
            kind: ErrorKind::of_code(s.code()),
            message: s.message().to_string(),
        }
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

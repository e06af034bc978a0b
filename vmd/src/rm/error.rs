//! Refusals of the resource manager. Each carries the kind of mistake (the
//! service maps it onto a gRPC code) and a message that names the problem.

/// What kind of mistake a refusal is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmErrorKind {
    InvalidArgument,
    NotFound,
    AlreadyExists,
    FailedPrecondition,
    ResourceExhausted,
    Unavailable,
    DeadlineExceeded,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RmError {
    pub kind: RmErrorKind,
    pub message: String,
}

impl RmError {
    pub fn new(kind: RmErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(RmErrorKind::InvalidArgument, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(RmErrorKind::NotFound, message)
    }
    pub fn precondition(message: impl Into<String>) -> Self {
        Self::new(RmErrorKind::FailedPrecondition, message)
    }
    pub fn exhausted(message: impl Into<String>) -> Self {
        Self::new(RmErrorKind::ResourceExhausted, message)
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(RmErrorKind::Unavailable, message)
    }
}

pub type Result<T, E = RmError> = std::result::Result<T, E>;

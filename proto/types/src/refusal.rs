//! Refusals: why the resource manager (or a tasker) will not do what was
//! asked. Each carries the kind of mistake — which the wire edge maps onto
//! a gRPC code — and a message that names the problem.

/// What kind of mistake a refusal is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RefusalKind {
    InvalidArgument,
    NotFound,
    AlreadyExists,
    FailedPrecondition,
    ResourceExhausted,
    Unavailable,
    DeadlineExceeded,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[error("{message}")]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

impl Refusal {
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(RefusalKind::InvalidArgument, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(RefusalKind::NotFound, message)
    }
    pub fn already_exists(message: impl Into<String>) -> Self {
        Self::new(RefusalKind::AlreadyExists, message)
    }
    pub fn precondition(message: impl Into<String>) -> Self {
        Self::new(RefusalKind::FailedPrecondition, message)
    }
    pub fn exhausted(message: impl Into<String>) -> Self {
        Self::new(RefusalKind::ResourceExhausted, message)
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(RefusalKind::Unavailable, message)
    }
}

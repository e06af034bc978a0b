//! Every error of the vmd's services as the gRPC status a client sees, in
//! one place: the group service's errors (as a status, or as the error
//! reply of a session stream), the resource manager's refusals and a
//! watch's failures. Statuses the services make for their own refusals
//! (authentication, rules, bounds) are written where they are decided.

use isthmus_groups::{ErrorKind, GroupError};
use isthmus_proto as pb;
use isthmus_proto::convert::code_of;
use isthmus_rm::Refusal;
use tonic::{Code, Status};

use crate::watch::WatchError;

/// The gRPC code that tells a client what kind of mistake a group error is.
pub fn group_code(err: &GroupError) -> Code {
    match err.kind() {
        ErrorKind::InvalidArgument => Code::InvalidArgument,
        ErrorKind::NotFound => Code::NotFound,
        ErrorKind::AlreadyExists => Code::AlreadyExists,
        ErrorKind::FailedPrecondition => Code::FailedPrecondition,
        ErrorKind::DeadlineExceeded => Code::DeadlineExceeded,
        ErrorKind::Aborted => Code::Aborted,
    }
}

/// A group error as the status of a call.
pub fn group(err: &GroupError) -> Status {
    Status::new(group_code(err), err.to_string())
}

/// A group error as the error reply to one request of a session stream
/// (the stream itself goes on).
pub fn group_reply(err: &GroupError) -> pb::Error {
    pb::Error {
        code: group_code(err) as i32,
        message: err.to_string(),
    }
}

/// A refusal of the resource manager (its kinds map onto codes in
/// [`isthmus_proto::convert::code_of`], which clients read back).
pub fn refusal(e: &Refusal) -> Status {
    Status::new(code_of(e.kind), e.message.clone())
}

/// Why a watch could not start or ended early.
pub fn watch(e: &WatchError) -> Status {
    match e {
        WatchError::UnknownKind(_) => Status::invalid_argument(e.to_string()),
        WatchError::Lagged(_) => Status::data_loss(e.to_string()),
    }
}

//! The resource manager's refusals as gRPC statuses: the service-side end
//! of [`isthmus_proto::convert`], which holds every other conversion
//! between the resource manager's types and the wire.

use isthmus_proto::convert::code_of;
use isthmus_rm::Refusal;
use tonic::Status;

pub fn status_of(e: &Refusal) -> Status {
    Status::new(code_of(e.kind), e.message.clone())
}

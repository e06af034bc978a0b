//! The `Taskers` service: hands each tasker's stream to
//! [`crate::tasker_link::run`] with this vmd's tasker hub.

use isthmus_proto as pb;
use pb::taskers_server::Taskers;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::{stream, tasker_link};
use isthmus_rm::TaskerHub;

pub struct TaskersService {
    hub: TaskerHub,
    /// This vmd's host name, told to each tasker in its welcome.
    host: String,
}

impl TaskersService {
    pub fn new(hub: TaskerHub, host: String) -> Self {
        Self { hub, host }
    }
}

#[tonic::async_trait]
impl Taskers for TaskersService {
    type TaskerStream = ReceiverStream<Result<pb::TaskerOrder, Status>>;

    async fn tasker(
        &self,
        request: Request<Streaming<pb::TaskerReport>>,
    ) -> Result<Response<Self::TaskerStream>, Status> {
        let (hub, host) = (self.hub.clone(), self.host.clone());
        Ok(stream::serve(|out| {
            tasker_link::run(hub, host, request.into_inner(), out)
        }))
    }
}

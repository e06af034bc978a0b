//! The `Tasks` service: hands each task's session stream to
//! [`crate::session::run`].

use isthmus_proto as pb;
use pb::tasks_server::Tasks;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::session::{self, SessionContext};
use crate::stream;

pub struct TasksService {
    ctx: SessionContext,
}

impl TasksService {
    pub fn new(ctx: SessionContext) -> Self {
        Self { ctx }
    }
}

#[tonic::async_trait]
impl Tasks for TasksService {
    type SessionStream = ReceiverStream<Result<pb::SessionReply, Status>>;

    async fn session(
        &self,
        request: Request<Streaming<pb::SessionRequest>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        let ctx = self.ctx.clone();
        Ok(stream::serve(|out| {
            session::run(ctx, request.into_inner(), out)
        }))
    }
}

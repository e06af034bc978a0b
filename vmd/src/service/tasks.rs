//! The `Tasks` service: hands each task's session stream to
//! [`crate::session::run`] with its caller's identity (the `session` rule
//! of [`crate::auth::rules`] admitted it; group ownership is checked on
//! each join).

use isthmus_proto as pb;
use pb::tasks_server::Tasks;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::auth;
use crate::session::{self, Caller, SessionContext};
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
        let caller = Caller {
            identity: auth::identity::of(&request)?,
        };
        // Refused before anything is spawned for it: a stream past the
        // bound costs the vmd nothing but this answer.
        let waiting = self.ctx.hellos.enter(&caller.identity)?;
        let ctx = self.ctx.clone();
        Ok(stream::serve(|out| {
            session::run(ctx, caller, waiting, request.into_inner(), out)
        }))
    }
}

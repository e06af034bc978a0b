//! The `Peers` service: hands each joining vmd's host link to
//! [`crate::host_link::serve`]; only the vmd holding the resource manager
//! accepts them.

use isthmus_proto as pb;
use pb::peers_server::Peers;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::Role;
use crate::auth::{self, Kind};
use crate::{host_link, stream};

pub struct PeersService {
    role: Role,
    /// This vmd's host name, for the refusal of a vmd that is not the manager.
    host: String,
}

impl PeersService {
    pub fn new(role: Role, host: String) -> Self {
        Self { role, host }
    }
}

#[tonic::async_trait]
impl Peers for PeersService {
    type HostLinkStream = ReceiverStream<Result<pb::HostDown, Status>>;

    async fn host_link(
        &self,
        request: Request<Streaming<pb::HostUp>>,
    ) -> Result<Response<Self::HostLinkStream>, Status> {
        // The `host-link` rule admitted a certified peer or the operator.
        let certified = match auth::identity::of(&request)?.kind {
            Kind::Peer(host) => Some(host),
            _ => None,
        };
        let rm = self.role.require_manager(&self.host)?.clone();
        Ok(stream::serve(|out| {
            host_link::serve(rm, certified, request.into_inner(), out)
        }))
    }
}

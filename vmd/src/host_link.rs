//! Links between the vmds of one virtual machine. A vmd started with
//! `--join ADDR` opens a `HostLink` stream to the vmd holding the resource
//! manager: it introduces itself (name, address, slots, offers), is welcomed
//! (with the manager's host name), then carries its taskers' reports up and their
//! orders down. The stream is the host's liveness: a clean `HostLeave`
//! deletes the host, any other end marks it failed.
//!
//! [`serve`] is the manager's side; [`join`] the joining vmd's side.

use std::sync::Arc;
use std::time::Duration;

use isthmus_proto as pb;
use isthmus_rm::{HubUp, JobOrder, JobReport, PortMsg, ResourceManager, TaskerHub};
use pb::host_down::Kind as Down;
use pb::host_up::Kind as Up;
use pb::peers_client::PeersClient;
use tokio::sync::{mpsc, Notify};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;
use tracing::{error, info, warn};

use crate::status;
use crate::stream::{self, Outgoing, QUEUE};
use isthmus_client::ClientError;

pub type DownSender = Outgoing<pb::HostDown>;

/// The manager's side of one joined host's link. `certified`: the host
/// name the peer's certificate proves (a TLS peer joins under that name
/// only); `None` for the local operator.
pub async fn serve(
    rm: ResourceManager,
    certified: Option<String>,
    mut inbound: Streaming<pb::HostUp>,
    out: DownSender,
) {
    let Some(hello) = stream::hello(
        &mut inbound,
        &out,
        "a host link must start with HostHello",
        |first| match first.kind {
            Some(Up::Hello(h)) => Some(h),
            _ => None,
        },
    )
    .await
    else {
        return;
    };
    let name = hello.name.clone();
    if let Some(cert) = certified.filter(|c| *c != name) {
        let _ = out
            .send(Err(tonic::Status::permission_denied(format!(
                "rule host-link: this certificate is host {cert}'s; it may not join as {name}"
            ))))
            .await;
        return;
    }
    let (link, mut port) = match rm.link_host(hello.into()) {
        Ok(r) => r,
        Err(e) => {
            let _ = out.send(Err(status::refusal(&e))).await;
            return;
        }
    };
    let welcome = pb::HostDown {
        kind: Some(Down::Welcome(pb::HostWelcome {
            master: rm.local_host().to_string(),
        })),
    };
    let _ = out.send(Ok(welcome)).await;
    let forward = {
        let out = out.clone();
        tokio::spawn(async move {
            while let Some(msg) = port.recv().await {
                let (down, last) = match msg {
                    PortMsg::Order(o) => (Down::Order(o.into()), false),
                    PortMsg::Deleted(reason) => (Down::Deleted(pb::HostDeleted { reason }), true),
                };
                if out
                    .send(Ok(pb::HostDown { kind: Some(down) }))
                    .await
                    .is_err()
                    || last
                {
                    return;
                }
            }
        })
    };
    let failure = loop {
        match inbound.message().await {
            Ok(Some(pb::HostUp {
                kind: Some(Up::Taskers(t)),
            })) => rm.set_taskers(&name, t.taskers.into_iter().collect()),
            Ok(Some(pb::HostUp {
                kind: Some(Up::Job(r)),
            })) => match JobReport::try_from(r) {
                Ok(r) => rm.report(&name, r),
                Err(e) => warn!(host = %name, error = %e, "job report dropped"),
            },
            Ok(Some(pb::HostUp {
                kind: Some(Up::Leave(_)),
            })) => break None,
            Ok(Some(_)) => warn!(host = %name, "unexpected message on host link dropped"),
            Ok(None) => break Some("its link closed without leaving".to_string()),
            Err(status) => break Some(format!("its link broke: {}", status.message())),
        }
    };
    // Wait for a Deleted message to go out before closing the stream.
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        while !forward.is_finished() && failure.is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    forward.abort();
    rm.unlink_host(&name, link, failure);
}

/// A joining vmd's open link: send [`JoinedLink::leave`] before stopping.
pub struct JoinedLink {
    up: mpsc::Sender<pb::HostUp>,
    down_done: Arc<Notify>,
}

impl JoinedLink {
    /// Leaves the virtual machine cleanly (the host is deleted, not failed).
    pub async fn leave(self) {
        let _ = self
            .up
            .send(pb::HostUp {
                kind: Some(Up::Leave(pb::HostLeave {})),
            })
            .await;
        drop(self.up);
        // The manager closes the link once it has taken the leave in.
        let _ = tokio::time::timeout(Duration::from_secs(1), self.down_done.notified()).await;
    }
}

/// Joins the virtual machine whose manager listens at `master`. Returns the
/// link. The hub's reports go up the link;
/// orders coming down go to the hub. `halt` is notified when this host is
/// deleted or the manager goes away: a host cut off from its virtual
/// machine stops, as a PVM slave daemon did.
pub async fn join(
    master: &str,
    tls: Option<&isthmus_client::auth::TlsIdentity>,
    hello: pb::HostHello,
    hub: TaskerHub,
    mut hub_up: mpsc::UnboundedReceiver<HubUp>,
    halt: Arc<Notify>,
) -> Result<JoinedLink, ClientError> {
    let name = hello.name.clone();
    let channel = match tls {
        Some(tls) => isthmus_client::channel_tls(master, tls).await?,
        None => isthmus_client::channel(master).await?,
    };
    let mut peers = PeersClient::new(channel);
    let (up, up_rx) = mpsc::channel::<pb::HostUp>(QUEUE);
    up.send(pb::HostUp {
        kind: Some(Up::Hello(hello)),
    })
    .await
    .map_err(|_| ClientError::Closed)?;
    let (mut down, first) = isthmus_client::stream::open(
        peers.host_link(ReceiverStream::new(up_rx)),
        isthmus_client::CALL_TIMEOUT,
    )
    .await?;
    if !matches!(first.kind, Some(Down::Welcome(_))) {
        return Err(ClientError::Protocol(
            "host link did not start with HostWelcome".into(),
        ));
    }
    info!(%master, host = %name, "joined the virtual machine");
    // Reports up. The first taskers summary is sent at once: taskers may
    // have registered before the link was up.
    {
        let up = up.clone();
        let hub = hub.clone();
        tokio::spawn(async move {
            let first = pb::HostUp {
                kind: Some(Up::Taskers(pb::TaskersChanged {
                    taskers: hub.taskers().into_iter().collect(),
                })),
            };
            if up.send(first).await.is_err() {
                return;
            }
            while let Some(msg) = hub_up.recv().await {
                let kind = match msg {
                    HubUp::Taskers(t) => Up::Taskers(pb::TaskersChanged {
                        taskers: t.into_iter().collect(),
                    }),
                    HubUp::Job(r) => Up::Job(r.into()),
                };
                if up.send(pb::HostUp { kind: Some(kind) }).await.is_err() {
                    return;
                }
            }
        });
    }
    // Orders down.
    let down_done = Arc::new(Notify::new());
    {
        let down_done = down_done.clone();
        tokio::spawn(async move {
            loop {
                match down.message().await {
                    Ok(Some(pb::HostDown {
                        kind: Some(Down::Order(o)),
                    })) => match JobOrder::try_from(o) {
                        Ok(order) => hub.order(order),
                        Err(e) => warn!(error = %e, "job order dropped"),
                    },
                    Ok(Some(pb::HostDown {
                        kind: Some(Down::Deleted(d)),
                    })) => {
                        warn!(reason = %d.reason, "this host was deleted from the virtual machine; stopping");
                        hub.kill_all();
                        // Let the kill orders reach the taskers before halting.
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        halt.notify_one();
                        break;
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        info!("host link closed by the manager; stopping");
                        hub.kill_all();
                        halt.notify_one();
                        break;
                    }
                    Err(status) => {
                        error!(%status, "lost the link to the virtual machine's manager; stopping");
                        hub.kill_all();
                        halt.notify_one();
                        break;
                    }
                }
            }
            down_done.notify_one();
        });
    }
    Ok(JoinedLink { up, down_done })
}

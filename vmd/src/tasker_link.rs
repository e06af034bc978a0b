//! The vmd's side of a tasker's stream (`Tasker` RPC): the tasker says hello
//! with its implementation, is registered with this vmd's [`TaskerHub`],
//! receives orders and sends reports. The stream is the tasker's liveness:
//! when it ends, the hub reports the tasker's unfinished jobs lost.

use isthmus_proto as pb;
use isthmus_rm::{JobReport, TaskerHub};
use pb::tasker_order::Kind as Down;
use pb::tasker_report::Kind as Up;
use tonic::Streaming;
use tracing::{debug, info, warn};

use crate::status;
use crate::stream::{self, Outgoing};

pub type OrderSender = Outgoing<pb::TaskerOrder>;

pub async fn run(
    hub: TaskerHub,
    host: String,
    mut inbound: Streaming<pb::TaskerReport>,
    out: OrderSender,
) {
    let Some(hello) = stream::hello(
        &mut inbound,
        &out,
        "a tasker stream must start with TaskerHello",
        |first| match first.kind {
            Some(Up::Hello(h)) => Some(h),
            _ => None,
        },
    )
    .await
    else {
        return;
    };
    let (id, mut orders) = match hub.register(&hello.implementation) {
        Ok(r) => r,
        Err(e) => {
            let _ = out.send(Err(status::refusal(&e))).await;
            return;
        }
    };
    info!(tasker = id, implementation = %hello.implementation, pid = hello.pid, launcher = %hello.launcher, "tasker connected");
    let welcome = pb::TaskerOrder {
        kind: Some(Down::Welcome(pb::TaskerWelcome {
            tasker: id.to_string(),
            host,
        })),
    };
    if out.send(Ok(welcome)).await.is_err() {
        hub.deregister(id);
        return;
    }
    let forward = {
        let out = out.clone();
        tokio::spawn(async move {
            while let Some(order) = orders.recv().await {
                let msg = pb::TaskerOrder {
                    kind: Some(Down::Order(order.into())),
                };
                if out.send(Ok(msg)).await.is_err() {
                    return;
                }
            }
        })
    };
    loop {
        match inbound.message().await {
            Ok(Some(pb::TaskerReport {
                kind: Some(Up::Job(report)),
            })) => match JobReport::try_from(report) {
                Ok(r) => hub.report(id, r),
                Err(e) => warn!(tasker = id, error = %e, "job report dropped"),
            },
            Ok(Some(_)) => warn!(tasker = id, "unexpected message from tasker dropped"),
            Ok(None) => {
                debug!(tasker = id, "tasker closed its stream");
                break;
            }
            Err(status) => {
                debug!(tasker = id, %status, "tasker stream broke");
                break;
            }
        }
    }
    forward.abort();
    hub.deregister(id);
}

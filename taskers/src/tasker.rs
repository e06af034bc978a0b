//! A tasker's life: connect to the vmd, register for one implementation,
//! then serve orders until the vmd goes away. One thread (current-thread
//! runtime): launchers are started with PR_SET_PDEATHSIG, which fires when
//! the *thread* that started them ends, so that thread must be the process.
//!
//! This is the tasker's only wire edge: orders arriving on the stream become
//! [`JobOrder`]s for [`Jobs`], and its [`JobReport`]s become stream messages.

use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

use isthmus_client::ClientError;
use isthmus_proto as pb;
use isthmus_types::job::{JobOrder, JobReport};
use pb::taskers_client::TaskersClient;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tracing::{info, warn};

use crate::jobs::Jobs;
use crate::launcher::Launcher;
use crate::rank_reports::{RankReports, Reporters};

/// How often deadlines (kill escalation, report grace) are looked at.
const TICK: Duration = Duration::from_millis(50);

#[derive(Debug, thiserror::Error)]
pub enum TaskerError {
    #[error(transparent)]
    Connect(ClientError),
    #[error("the vmd refused the tasker: {0}")]
    Refused(String),
    #[error("the vmd closed the tasker stream before welcoming it")]
    NoWelcome,
    #[error("cannot create the rank report socket: {0}")]
    Socket(std::io::Error),
    #[error("cannot find the tasker's own executable (for the rank shim): {0}")]
    OwnExe(std::io::Error),
}

/// Registers with the vmd at `vmd` and runs jobs with `launcher` until the
/// vmd goes away. `ready` (if given) is called once registered.
pub async fn run(
    vmd: &str,
    launcher: Arc<dyn Launcher>,
    libisthmus: Option<std::path::PathBuf>,
    ready: impl FnOnce(&str),
) -> Result<(), TaskerError> {
    let channel = isthmus_client::channel(vmd)
        .await
        .map_err(TaskerError::Connect)?;
    let mut client = TaskersClient::new(channel);

    let (report_tx, report_rx) = mpsc::channel::<JobReport>(4096);
    let hello = pb::TaskerReport {
        kind: Some(pb::tasker_report::Kind::Hello(pb::TaskerHello {
            implementation: launcher.implementation().to_string(),
            pid: std::process::id(),
            launcher: launcher.command().to_string(),
        })),
    };
    let reports = ReceiverStream::new(report_rx).map(|r| pb::TaskerReport {
        kind: Some(pb::tasker_report::Kind::Job(r.into())),
    });
    let (mut orders, first) = isthmus_client::stream::open(
        client.tasker(tokio_stream::once(hello).chain(reports)),
        isthmus_client::CALL_TIMEOUT,
    )
    .await
    .map_err(|e| match e {
        ClientError::Closed => TaskerError::NoWelcome,
        e => TaskerError::Refused(e.message()),
    })?;
    match first.kind {
        Some(pb::tasker_order::Kind::Welcome(w)) => {
            info!(tasker = %w.tasker, host = %w.host, implementation = launcher.implementation(), "registered");
        }
        _ => return Err(TaskerError::NoWelcome),
    }

    let (shim_tx, mut shim_rx) = mpsc::unbounded_channel();
    let reporters = Reporters::default();
    let socket = RankReports::bind(shim_tx, reporters.clone()).map_err(TaskerError::Socket)?;
    let exe = std::env::current_exe().map_err(TaskerError::OwnExe)?;
    let shim = vec![
        OsString::from(exe),
        OsString::from(crate::SHIM_ARG),
        OsString::from("--"),
    ];
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut jobs = Jobs::new(
        launcher,
        libisthmus,
        shim,
        socket.path(),
        reporters,
        report_tx,
        done_tx,
    );
    ready(&socket.path().display().to_string());

    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            order = orders.message() => match order {
                Ok(Some(pb::TaskerOrder { kind: Some(pb::tasker_order::Kind::Order(o)) })) => match JobOrder::try_from(o) {
                    Ok(o) => jobs.order(o).await,
                    Err(e) => warn!(error = %e, "job order dropped"),
                },
                Ok(Some(_)) => warn!("unexpected message from vmd dropped"),
                Ok(None) => { warn!("the vmd closed the tasker stream; stopping"); break; }
                Err(s) => { warn!(status = %s, "lost the vmd; stopping"); break; }
            },
            Some(ev) = shim_rx.recv() => jobs.shim_event(ev).await,
            Some(done) = done_rx.recv() => jobs.launcher_done(done).await,
            _ = tick.tick() => jobs.tick().await,
        }
    }
    // Jobs without a vmd have nobody to report to.
    jobs.kill_all();
    drop(socket);
    Ok(())
}

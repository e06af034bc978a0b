//! This vmd's etcd lease: granted (or taken back after a restart) at start,
//! then kept alive for as long as the store lives.

use std::time::Duration;

use std::sync::Arc;

use etcd_client::LeaseGrantOptions;

use crate::endpoints::{first_answer, Endpoints};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::config::EtcdConfig;

/// Takes back `config.resume_lease` if etcd still has it, else grants a
/// new lease with `config.lease_ttl`.
pub(crate) async fn acquire(
    etcd: &Endpoints,
    config: &EtcdConfig,
) -> Result<i64, etcd_client::Error> {
    if let Some(id) = config.resume_lease {
        let ttl = first_answer(
            etcd,
            |mut c| async move { c.lease_time_to_live(id, None).await },
        );
        match ttl.await {
            Ok(r) if r.ttl() > 0 => {
                info!(
                    lease = format!("{id:x}"),
                    ttl = r.ttl(),
                    "took back the lease of this vmd's previous run"
                );
                return Ok(id);
            }
            Ok(_) => info!(
                lease = format!("{id:x}"),
                "the previous run's lease expired; its tasks were declared dead"
            ),
            Err(e) => {
                warn!(lease = format!("{id:x}"), error = %e, "could not check the previous run's lease")
            }
        }
    }
    let ttl = i64::try_from(config.lease_ttl.as_secs()).unwrap_or(i64::MAX);
    let granted = first_answer(etcd, |mut c| async move {
        c.lease_grant(ttl, Some(LeaseGrantOptions::new())).await
    })
    .await?;
    Ok(granted.id())
}

/// Renews the lease every third of its TTL. Sets `lost` once etcd says the
/// lease is gone (it expired while we could not reach etcd); until then a
/// broken keep-alive stream is simply opened again.
pub(crate) async fn keep_alive(
    etcd: Arc<Endpoints>,
    id: i64,
    ttl: Duration,
    lost: watch::Sender<bool>,
) {
    let period = (ttl / 3).max(Duration::from_millis(500));
    loop {
        let (member, mut client) = etcd.client();
        match client.lease_keep_alive(id).await {
            Ok((mut keeper, mut responses)) => loop {
                if let Err(e) = keeper.keep_alive().await {
                    warn!(error = %e, "etcd lease keep-alive failed; retrying");
                    etcd.failed(member);
                    break;
                }
                match tokio::time::timeout(period, responses.message()).await {
                    Ok(Ok(Some(r))) if r.ttl() <= 0 => {
                        tracing::error!(
                            lease = format!("{id:x}"),
                            "etcd lease expired: this vmd's tasks were declared dead"
                        );
                        let _ = lost.send(true);
                        return;
                    }
                    Ok(Ok(Some(_))) => tokio::time::sleep(period).await,
                    Ok(Ok(None)) | Err(_) => {
                        etcd.failed(member);
                        break;
                    }
                    Ok(Err(e)) => {
                        warn!(error = %e, "etcd lease keep-alive stream failed; retrying");
                        etcd.failed(member);
                        break;
                    }
                }
            },
            Err(e) => {
                warn!(error = %e, "opening the etcd lease keep-alive stream; retrying");
                etcd.failed(member);
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

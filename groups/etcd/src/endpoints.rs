//! One etcd client per member, used one at a time: requests go to the
//! current member; one that cannot reach it moves everyone on to the next.
//!
//! Each member gets a plain tonic channel, not etcd-client's balanced one:
//! with a member down, the balanced channel holds requests until they time
//! out, and a timed-out transaction may or may not have been applied, so it
//! cannot simply be sent again. A plain channel fails at once with a
//! refused connection, which is certain: nothing was sent.

use std::sync::atomic::{AtomicUsize, Ordering};

use std::time::Duration;

use etcd_client::Client;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// How a vmd proves itself to etcd and knows it talks to the real one:
/// mutual TLS (etcd's `--client-cert-auth`).
pub use isthmus_types::tls::TlsPem as EtcdTls;

pub struct Endpoints {
    clients: Vec<Client>,
    /// The first client, for the index that cannot be out of range.
    first: Client,
    current: AtomicUsize,
}

impl Endpoints {
    /// Clients for every URL; they connect on first use, so a member that
    /// is down now can serve later.
    pub async fn connect(
        urls: &[String],
        timeout: Duration,
        tls: Option<&EtcdTls>,
    ) -> Result<Endpoints, etcd_client::Error> {
        let mut clients = Vec::with_capacity(urls.len());
        for url in urls {
            let invalid = |e: &dyn std::fmt::Display| {
                etcd_client::Error::InvalidArgs(format!("etcd URL {url}: {e}"))
            };
            let mut endpoint = Endpoint::from_shared(url.clone()).map_err(|e| invalid(&e))?;
            match (url.starts_with("https://"), tls) {
                (true, Some(tls)) => {
                    endpoint = endpoint
                        .tls_config(
                            ClientTlsConfig::new()
                                .ca_certificate(Certificate::from_pem(&tls.ca_pem))
                                .identity(Identity::from_pem(&tls.cert_pem, &tls.key_pem)),
                        )
                        .map_err(|e| invalid(&e))?;
                }
                (false, Some(_)) => {
                    return Err(invalid(
                        &"TLS material was given but this URL is not https://: it would go in clear",
                    ))
                }
                (true, None) => {
                    return Err(invalid(
                        &"an https:// URL needs the etcd CA, client certificate and key (--etcd-ca, --etcd-cert, --etcd-key)",
                    ))
                }
                (false, None) => {}
            }
            let channel = endpoint
                .connect_timeout(timeout)
                .timeout(timeout)
                // A member that vanishes without closing is found by pings.
                .http2_keep_alive_interval(Duration::from_secs(10))
                .keep_alive_timeout(Duration::from_secs(20))
                .keep_alive_while_idle(true)
                .connect_lazy();
            clients.push(Client::from_channel(etcd_client::Channel::Tonic(channel), None).await?);
        }
        let first = clients
            .first()
            .cloned()
            .ok_or_else(|| etcd_client::Error::InvalidArgs("no etcd endpoints".into()))?;
        Ok(Endpoints {
            clients,
            first,
            current: AtomicUsize::new(0),
        })
    }

    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// Never true: [`Endpoints::connect`] refuses an empty list.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// The current member's client and its index.
    pub fn client(&self) -> (usize, Client) {
        let i = self.current.load(Ordering::Relaxed) % self.clients.len();
        (i, self.clients.get(i).unwrap_or(&self.first).clone())
    }

    /// The member at `i` could not be reached: move on to the next one
    /// (unless someone already did).
    pub fn failed(&self, i: usize) {
        let next = (i + 1) % self.clients.len();
        let _ = self
            .current
            .compare_exchange(i, next, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// How a failed request may be retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// It never reached a member (refused connection): nothing happened.
    Unsent,
    /// It may have reached one (timeout, leader lost mid-request): a write
    /// may or may not have been applied.
    Unknown,
    /// A definite answer (bad request, compacted, …): not retried.
    Final,
}

pub(crate) fn failure(e: &etcd_client::Error) -> Failure {
    use tonic::Code;
    match e {
        etcd_client::Error::TransportError(_) => Failure::Unsent,
        etcd_client::Error::GRpcStatus(s) => match s.code() {
            Code::Unavailable if s.message().contains("connect") => Failure::Unsent,
            Code::Unavailable | Code::Cancelled | Code::DeadlineExceeded | Code::Unknown => {
                Failure::Unknown
            }
            _ => Failure::Final,
        },
        _ => Failure::Final,
    }
}

/// Pause after every member was tried once in vain (an election takes
/// about a second).
const ROUND_PAUSE: std::time::Duration = std::time::Duration::from_millis(250);
/// Rounds over all members before giving up.
const ROUNDS: usize = 12;

/// Runs `request` on the current member, moving on to the next member each
/// time it failed for want of a member. Returns the answer and whether an
/// earlier attempt may have been applied (only a write cares).
pub async fn first_answer_of<T, F, Fut>(
    etcd: &Endpoints,
    mut request: F,
) -> Result<(T, bool), etcd_client::Error>
where
    F: FnMut(Client) -> Fut,
    Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
{
    let mut tries = 0;
    let mut maybe_applied = false;
    loop {
        let (i, client) = etcd.client();
        match request(client).await {
            Ok(answer) => return Ok((answer, maybe_applied)),
            Err(e) => {
                let kind = failure(&e);
                if kind == Failure::Final || tries >= ROUNDS * etcd.len() {
                    return Err(e);
                }
                tracing::debug!(error = %e, member = i, "etcd request failed; trying the next member");
                maybe_applied |= kind == Failure::Unknown;
                tries += 1;
                etcd.failed(i);
                if tries % etcd.len() == 0 {
                    tokio::time::sleep(ROUND_PAUSE).await;
                }
            }
        }
    }
}

/// [`first_answer_of`] for requests that change nothing.
pub async fn first_answer<T, F, Fut>(etcd: &Endpoints, request: F) -> Result<T, etcd_client::Error>
where
    F: FnMut(Client) -> Fut,
    Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
{
    first_answer_of(etcd, request)
        .await
        .map(|(answer, _)| answer)
}

/// How long a watch may stay silent before it is asked for progress, and
/// then how long the answer may take before the member is taken for gone
/// (a member that vanished without closing its connection leaves the
/// stream silent, not broken).
const WATCH_QUIET: std::time::Duration = std::time::Duration::from_secs(5);

/// The next message of a watch, asking for progress when it has been
/// quiet; `Err` (a timeout error) when even that brings nothing.
pub async fn next_watch_message(
    stream: &mut etcd_client::WatchStream,
) -> Result<Option<etcd_client::WatchResponse>, etcd_client::Error> {
    if let Ok(message) = tokio::time::timeout(WATCH_QUIET, stream.message()).await {
        return message;
    }
    stream.request_progress().await?;
    match tokio::time::timeout(WATCH_QUIET, stream.message()).await {
        Ok(message) => message,
        Err(_) => Err(etcd_client::Error::WatchError(
            "the member did not answer a progress request".into(),
        )),
    }
}

//! [`EtcdConfig`]: how a store reaches etcd. Apart from the crate root
//! (which re-exports it) so that [`crate::lease`] reads it without
//! importing the root.

use std::time::Duration;

use crate::endpoints::EtcdTls;

/// How to reach etcd and which part of it is this virtual machine's.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client URLs of the etcd cluster (`http://127.0.0.1:2379`, …).
    pub endpoints: Vec<String>,
    /// Key prefix of this virtual machine; several can share a cluster.
    pub prefix: String,
    /// TTL of this vmd's lease: how long its tasks outlive it if it stops
    /// without a restart.
    pub lease_ttl: Duration,
    /// A lease this vmd held before a restart, to take back if etcd still
    /// has it.
    pub resume_lease: Option<i64>,
    /// Deadline of every etcd request and of connecting.
    pub request_timeout: Duration,
    /// Mutual TLS to etcd (`https://` URLs); `None`: plain `http://`.
    pub tls: Option<EtcdTls>,
}

impl EtcdConfig {
    pub fn new(endpoints: Vec<String>) -> Self {
        EtcdConfig {
            endpoints,
            prefix: "/isthmus/vm".into(),
            lease_ttl: Duration::from_secs(15),
            resume_lease: None,
            request_timeout: Duration::from_secs(5),
            tls: None,
        }
    }
}

//! PEM material for mutual TLS: the CA that signed the server's certificate
//! (to know it is the real one) and this side's certificate and key (to be
//! known by it). The vmd client uses it towards a vmd, the etcd store
//! towards etcd.

/// A CA certificate, a certificate and its key, all PEM.
#[derive(Clone)]
pub struct TlsPem {
    /// The CA that signed the server's certificate.
    pub ca_pem: Vec<u8>,
    /// This side's certificate, signed by a CA the server trusts.
    pub cert_pem: Vec<u8>,
    /// The key of `cert_pem`.
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for TlsPem {
    /// Never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsPem { .. }")
    }
}

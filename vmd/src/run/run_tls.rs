//! The run's etcd over TLS, as `isthmus run` makes it across the nodes of
//! an allocation: a CA of its own in the first node's private directory
//! (the virtual machine's CA code, [`crate::auth::ca`]), etcd's server
//! certificate for the node's address, and one client certificate that
//! every vmd of the run shows (etcd's `--client-cert-auth` lets in no
//! other). The other nodes get the client certificate and key through
//! their job step's environment ([`ENV`]: srun passes the first vmd's
//! environment on to `isthmus node`, which writes them into its own
//! private directory and passes them on to no child), so no file system
//! need be shared between the nodes.

use std::path::{Path, PathBuf};

use crate::auth::ca::{self, CaError, VmCa};

/// The client's CA certificate, certificate and key (PEM), in the
/// environment of the first vmd and of each other node's `isthmus node`.
pub const ENV: [&str; 3] = [
    "ISTHMUS_RUN_ETCD_CA",
    "ISTHMUS_RUN_ETCD_CERT",
    "ISTHMUS_RUN_ETCD_KEY",
];

/// Why the run's certificates could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(transparent)]
    Ca(#[from] CaError),
    #[error("{0} is not set: `isthmus node` takes the run's etcd client certificate from its environment (srun --export=ALL)")]
    Missing(&'static str),
}

/// A vmd's client certificate for the run's etcd: its files (a directory
/// holding `ca.pem`, `host.pem`, `host.key`) and their contents.
pub struct ClientTls {
    dir: PathBuf,
    pems: [String; 3],
}

impl ClientTls {
    /// The vmd's `--etcd-ca`, `--etcd-cert` and `--etcd-key`.
    pub fn vmd_args(&self) -> Vec<std::ffi::OsString> {
        let file = |f: &str| self.dir.join(f).into_os_string();
        vec![
            "--etcd-ca".into(),
            file(ca::CA_CERT),
            "--etcd-cert".into(),
            file(ca::HOST_CERT),
            "--etcd-key".into(),
            file(ca::HOST_KEY),
        ]
    }

    /// The variables that carry it to the other nodes.
    pub fn env(&self) -> impl Iterator<Item = (&'static str, &str)> {
        ENV.into_iter().zip(self.pems.iter().map(String::as_str))
    }

    /// Writes the three PEMs into `dir` (0700, the files 0600).
    fn write(dir: PathBuf, pems: [String; 3]) -> Result<Self, TlsError> {
        ca::create_dir(&dir)?;
        for (file, pem) in [ca::CA_CERT, ca::HOST_CERT, ca::HOST_KEY]
            .into_iter()
            .zip(&pems)
        {
            ca::write_private(&dir.join(file), pem)?;
        }
        Ok(Self { dir, pems })
    }
}

/// The first node's certificates: etcd's (`<dir>/etcd-tls`) and the
/// vmds' client one (`<dir>/etcd-client`), both of the CA in `<dir>/ca`.
pub struct RunTls {
    server: PathBuf,
    pub client: ClientTls,
}

impl RunTls {
    /// Makes a CA in `dir` and issues etcd's certificate for `addr` and
    /// the vmds' client certificate.
    pub fn create(dir: &Path, addr: std::net::IpAddr) -> Result<Self, TlsError> {
        let run_ca = VmCa::load_or_create(&dir.join("ca"))?;
        let server = dir.join("etcd-tls");
        run_ca.issue_into("etcd", &[addr.to_string()], &server)?;
        let client = run_ca.issue("isthmus-run", &[])?;
        let client = ClientTls::write(
            dir.join("etcd-client"),
            [
                run_ca.cert_pem().to_string(),
                client.cert_pem,
                client.key_pem,
            ],
        )?;
        Ok(Self { server, client })
    }

    /// etcd's options: its certificate, and clients only with one of the
    /// run's CA.
    pub fn etcd_args(&self) -> Vec<std::ffi::OsString> {
        let file = |f: &str| self.server.join(f).into_os_string();
        vec![
            "--cert-file".into(),
            file(ca::HOST_CERT),
            "--key-file".into(),
            file(ca::HOST_KEY),
            "--trusted-ca-file".into(),
            file(ca::CA_CERT),
            "--client-cert-auth".into(),
        ]
    }
}

/// On another node: the client certificate from the environment ([`ENV`]),
/// written into `<dir>/etcd-client` for this node's vmd.
pub fn from_env(dir: &Path) -> Result<ClientTls, TlsError> {
    let [ca_name, cert_name, key_name] = ENV;
    let read = |name: &'static str| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .ok_or(TlsError::Missing(name))
    };
    ClientTls::write(
        dir.join("etcd-client"),
        [read(ca_name)?, read(cert_name)?, read(key_name)?],
    )
}

//! The virtual machine's certificate authority and its host certificates,
//! for mutual TLS between the vmds of different hosts.
//!
//! The CA is made on the first start that needs it (`rcgen`) in the vmd's
//! state directory (`ca.pem`, `ca.key`, mode 0600), or given by the operator
//! (`--ca-cert/--ca-key`). A vmd holding the CA key issues its own host
//! certificate afresh at each start (so that its names follow its flags);
//! another host's vmd gets one from `isthmus cert issue --host NAME --out
//! DIR` and uses DIR as its state directory (`ca.pem`, `host.pem`,
//! `host.key`, no CA key). A certificate's subject common name is the host's
//! name in the virtual machine: that is the identity a peer vmd proves.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

pub const CA_CERT: &str = "ca.pem";
pub const CA_KEY: &str = "ca.key";
pub const HOST_CERT: &str = "host.pem";
pub const HOST_KEY: &str = "host.key";

#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("certificate: {0}")]
    Cert(#[from] rcgen::Error),
    #[error("{0}")]
    Missing(String),
    #[error("peer certificate: {0}")]
    Peer(String),
}

/// PEM of a certificate and its key.
#[derive(Clone)]
pub struct CertPair {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for CertPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertPair { .. }")
    }
}

/// What a vmd needs for TLS: the CA's certificate (to check peers) and its
/// own host certificate.
#[derive(Clone, Debug)]
pub struct TlsMaterial {
    pub ca_pem: String,
    pub host: CertPair,
}

/// The CA: its certificate and key.
pub struct VmCa {
    pair: CertPair,
}

impl VmCa {
    /// Loads the CA from `cert`/`key`.
    pub fn load(cert: &Path, key: &Path) -> Result<Self, CaError> {
        Ok(Self {
            pair: CertPair {
                cert_pem: read(cert)?,
                key_pem: read(key)?,
            },
        })
    }

    /// Loads the CA of `state_dir`, creating it there if it has none.
    pub fn load_or_create(state_dir: &Path) -> Result<Self, CaError> {
        let (cert, key) = (state_dir.join(CA_CERT), state_dir.join(CA_KEY));
        if cert.exists() && key.exists() {
            return Self::load(&cert, &key);
        }
        if cert.exists() {
            return Err(CaError::Missing(format!(
                "{} holds a CA certificate but no CA key ({}): this host's vmd cannot issue certificates (run `isthmus cert issue` on the CA's host)",
                state_dir.display(),
                key.display()
            )));
        }
        let key_pair = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let mut dn = DistinguishedName::new();
        dn.push(
            DnType::CommonName,
            format!(
                "isthmus virtual machine CA {}",
                &super::runtime_dir::random_hex(4)
            ),
        );
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert_pem = params.self_signed(&key_pair)?.pem();
        let pair = CertPair {
            cert_pem,
            key_pem: key_pair.serialize_pem(),
        };
        create_dir(state_dir)?;
        write_private(&key, &pair.key_pem)?;
        write_private(&cert, &pair.cert_pem)?;
        tracing::info!(dir = %state_dir.display(), "created the virtual machine's CA");
        Ok(Self { pair })
    }

    pub fn cert_pem(&self) -> &str {
        &self.pair.cert_pem
    }

    /// A host certificate for `host`, valid as server and client, for the
    /// names and addresses in `sans` (the host name is always one).
    pub fn issue(&self, host: &str, sans: &[String]) -> Result<CertPair, CaError> {
        let ca_key = KeyPair::from_pem(&self.pair.key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(&self.pair.cert_pem, ca_key)?;
        let mut names = vec![host.to_string()];
        names.extend(sans.iter().filter(|s| s.as_str() != host).cloned());
        let mut params = CertificateParams::new(names)?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, host);
        params.distinguished_name = dn;
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Writes `ca.pem`, `host.pem`, `host.key` for `host` into `out` (the
    /// other host's state directory).
    pub fn issue_into(&self, host: &str, sans: &[String], out: &Path) -> Result<(), CaError> {
        let pair = self.issue(host, sans)?;
        create_dir(out)?;
        write_private(&out.join(CA_CERT), &self.pair.cert_pem)?;
        write_private(&out.join(HOST_CERT), &pair.cert_pem)?;
        write_private(&out.join(HOST_KEY), &pair.key_pem)?;
        Ok(())
    }
}

/// The TLS material of a vmd: with a CA key in reach (given, or in
/// `state_dir`, created there if `create` and absent) it issues its own host
/// certificate for `host` and `sans`; otherwise it reads the host
/// certificate `isthmus cert issue` left in `state_dir`.
pub fn material(
    state_dir: &Path,
    given_ca: Option<(&Path, &Path)>,
    host: &str,
    sans: &[String],
    create: bool,
) -> Result<TlsMaterial, CaError> {
    let ca = match given_ca {
        Some((cert, key)) => Some(VmCa::load(cert, key)?),
        None if state_dir.join(CA_KEY).exists()
            || (create && !state_dir.join(HOST_CERT).exists()) =>
        {
            Some(VmCa::load_or_create(state_dir)?)
        }
        None => None,
    };
    match ca {
        Some(ca) => Ok(TlsMaterial {
            ca_pem: ca.cert_pem().to_string(),
            host: ca.issue(host, sans)?,
        }),
        None => {
            let (ca, cert, key) = (
                state_dir.join(CA_CERT),
                state_dir.join(HOST_CERT),
                state_dir.join(HOST_KEY),
            );
            if !cert.exists() {
                return Err(CaError::Missing(format!(
                    "no host certificate in {} (issue one with `isthmus cert issue --host {host} --out {}` on the CA's host)",
                    state_dir.display(),
                    state_dir.display()
                )));
            }
            Ok(TlsMaterial {
                ca_pem: read(&ca)?,
                host: CertPair {
                    cert_pem: read(&cert)?,
                    key_pem: read(&key)?,
                },
            })
        }
    }
}

/// The host name a verified peer certificate names (its subject's common
/// name).
pub fn peer_host(der: &[u8]) -> Result<String, CaError> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| CaError::Peer(format!("cannot parse: {e}")))?;
    let cn = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .ok_or_else(|| CaError::Peer("no common name".into()))?;
    Ok(cn.to_string())
}

/// The default state directory: `$XDG_STATE_HOME/isthmus`, else
/// `$HOME/.local/state/isthmus`, else the runtime directory's `state`.
pub fn default_state_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(x).join("isthmus");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(h).join(".local/state/isthmus");
    }
    super::runtime_dir::default_path().join("state")
}

fn read(path: &Path) -> Result<String, CaError> {
    std::fs::read_to_string(path).map_err(|source| CaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Creates `dir` (and its parents) mode 0700.
pub fn create_dir(dir: &Path) -> Result<(), CaError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| CaError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

/// Writes `content` to a new file `path`, mode 0600 (replacing one there).
pub fn write_private(path: &Path, content: &str) -> Result<(), CaError> {
    let io = |source| CaError::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    f.write_all(content.as_bytes()).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_issues_host_certificates_naming_the_host() {
        let dir = std::env::temp_dir().join(format!("isthmus-ca-{}", uuid::Uuid::new_v4()));
        let ca = VmCa::load_or_create(&dir).expect("ca");
        let pair = ca.issue("alpha", &["10.9.0.1".into()]).expect("issue");
        let der = rustls_pemfile_der(&pair.cert_pem);
        assert_eq!(peer_host(&der).expect("cn"), "alpha");
        // A second start finds the same CA.
        let again = VmCa::load_or_create(&dir).expect("reload");
        assert_eq!(again.cert_pem(), ca.cert_pem());
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn rustls_pemfile_der(pem: &str) -> Vec<u8> {
        let (_, p) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("pem");
        p.contents
    }
}

//! TLS for https targets, via rustls with the ring provider. The request bytes
//! recorded for an https exchange are the plaintext written into TLS.

use crate::read::Timed;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, InvalidDnsNameError, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug)]
pub enum TlsError {
    CaFile(PathBuf, String),
    NoCertificates(PathBuf),
    Config(String),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CaFile(p, e) => write!(
                f,
                "--cacert {}: cannot read PEM certificates: {e}",
                p.display()
            ),
            Self::NoCertificates(p) => write!(
                f,
                "--cacert {}: the file holds no PEM certificate",
                p.display()
            ),
            Self::Config(e) => write!(f, "TLS set-up failed: {e}"),
        }
    }
}

impl std::error::Error for TlsError {}

pub(crate) fn config(cacert: Option<&Path>) -> Result<Arc<ClientConfig>, TlsError> {
    let mut roots = RootCertStore::empty();
    match cacert {
        Some(path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| TlsError::CaFile(path.to_path_buf(), e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| TlsError::CaFile(path.to_path_buf(), e.to_string()))?;
            if certs.is_empty() {
                return Err(TlsError::NoCertificates(path.to_path_buf()));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| TlsError::CaFile(path.to_path_buf(), e.to_string()))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}

/// Why a TLS session over an open connection did not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HandshakeError {
    #[error("invalid TLS server name {host:?}: {source}")]
    ServerName {
        host: String,
        #[source]
        source: InvalidDnsNameError,
    },
    #[error("TLS set-up failed: {0}")]
    Setup(#[source] rustls::Error),
    #[error("TLS handshake failed: {0}")]
    Handshake(#[source] std::io::Error),
}

pub(crate) fn wrap(
    cfg: Arc<ClientConfig>,
    host: &str,
    mut sock: Timed,
) -> Result<StreamOwned<ClientConnection, Timed>, HandshakeError> {
    let name =
        ServerName::try_from(host.to_string()).map_err(|source| HandshakeError::ServerName {
            host: host.to_string(),
            source,
        })?;
    let mut conn = ClientConnection::new(cfg, name).map_err(HandshakeError::Setup)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)
            .map_err(HandshakeError::Handshake)?;
    }
    Ok(StreamOwned::new(conn, sock))
}

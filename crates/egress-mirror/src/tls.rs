//! The mirror's TLS settings: a PEM certificate chain and its private key
//! (`--tls-cert FILE --tls-key FILE`, or `tls_cert` and `tls_key` in the
//! config file), loaded once at start-up, before the process confines
//! itself, into a rustls server configuration (ring provider, TLS 1.2 and
//! 1.3) that offers HTTP/2 and HTTP/1.1 by ALPN.
//!
//! Every way the pair can be unusable is its own [`TlsError`], one line
//! that names the file and what to give instead: a file that cannot be
//! read, one without a certificate or without a key, PEM that does not
//! parse, a key rustls cannot use, a certificate that is not X.509, and a
//! key that does not belong to the certificate.

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::ServerConfig;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The ALPN protocols offered, most preferred first.
pub const ALPN: [&[u8]; 2] = [egress_http::ALPN_H2, egress_http::ALPN_HTTP1];

/// A certificate chain or key file is a few kilobytes; anything this large
/// is not one.
const MAX_PEM_BYTES: u64 = 1024 * 1024;

/// Why the certificate and key cannot be served with. Shown after
/// "unusable TLS certificate or key: ".
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a regular file of at most {MAX_PEM_BYTES} bytes", path.display())]
    NotAFile { path: PathBuf },
    #[error("{} is not valid PEM: {why}", path.display())]
    Pem { path: PathBuf, why: String },
    #[error("{} holds no certificate (give a PEM file with `-----BEGIN CERTIFICATE-----` blocks, the server's certificate first)", path.display())]
    NoCertificate { path: PathBuf },
    #[error("the first certificate in {} is not a valid X.509 certificate: {why}", path.display())]
    BadCertificate { path: PathBuf, why: String },
    #[error("{} holds no private key (give a PEM `PRIVATE KEY`, `EC PRIVATE KEY` or `RSA PRIVATE KEY` block)", path.display())]
    NoKey { path: PathBuf },
    #[error("{} holds {count} private keys; give exactly one", path.display())]
    ManyKeys { path: PathBuf, count: usize },
    #[error("the private key in {} cannot be used (an unencrypted ECDSA P-256/P-384, Ed25519 or RSA key is needed): {why}", path.display())]
    BadKey { path: PathBuf, why: String },
    #[error("the private key in {} does not belong to the certificate in {}", key.display(), cert.display())]
    Mismatch { cert: PathBuf, key: PathBuf },
    #[error("{0}")]
    Config(String),
}

/// Reads a PEM file whole, bounded in size.
fn read_pem(path: &Path) -> Result<Vec<u8>, TlsError> {
    let read = |source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let meta = file.metadata().map_err(read)?;
    if !meta.is_file() || meta.len() > MAX_PEM_BYTES {
        return Err(TlsError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    Ok(bytes)
}

/// A PEM parse error in words, on one line.
fn pem_why(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { end_marker } => format!(
            "a section has no `-----END {}-----` line",
            String::from_utf8_lossy(end_marker)
        ),
        pem::Error::IllegalSectionStart { .. } => "a `-----BEGIN` line is malformed".to_string(),
        pem::Error::Base64Decode(_) => "a section's base64 does not decode".to_string(),
        pem::Error::SectionTooLarge => "a section is too large".to_string(),
        other => other.to_string().replace('\n', " "),
    }
}

/// Every item of type `T` in `bytes`, or the first PEM error.
fn items<T: PemObject>(path: &Path, bytes: &[u8]) -> Result<Vec<T>, TlsError> {
    T::pem_slice_iter(bytes)
        .collect::<Result<Vec<T>, _>>()
        .map_err(|e| TlsError::Pem {
            path: path.to_path_buf(),
            why: pem_why(&e),
        })
}

/// The certificate chain in `cert` and the key in `key`, checked to belong
/// together, as a server configuration offering [`ALPN`].
pub fn load(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let chain: Vec<CertificateDer<'static>> = items(cert, &read_pem(cert)?)?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: cert.to_path_buf(),
        });
    }
    let mut keys: Vec<PrivateKeyDer<'static>> = items(key, &read_pem(key)?)?;
    let der = match (keys.pop(), keys.len()) {
        (None, _) => {
            return Err(TlsError::NoKey {
                path: key.to_path_buf(),
            })
        }
        (Some(der), 0) => der,
        (Some(_), more) => {
            return Err(TlsError::ManyKeys {
                path: key.to_path_buf(),
                count: more + 1,
            })
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let signing = provider
        .key_provider
        .load_private_key(der)
        .map_err(|e| TlsError::BadKey {
            path: key.to_path_buf(),
            why: e.to_string(),
        })?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Ok(()) => {}
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            return Err(TlsError::Mismatch {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
            })
        }
        // The key cannot tell its public half: nothing to compare with.
        Err(rustls::Error::InconsistentKeys(_)) => {}
        Err(e) => {
            return Err(TlsError::BadCertificate {
                path: cert.to_path_buf(),
                why: e.to_string(),
            })
        }
    }
    config(provider, certified)
}

fn config(
    provider: Arc<CryptoProvider>,
    certified: CertifiedKey,
) -> Result<Arc<ServerConfig>, TlsError> {
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

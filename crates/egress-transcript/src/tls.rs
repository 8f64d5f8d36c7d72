//! TLS for https targets, via rustls with the ring provider. The request bytes
//! recorded for an https exchange are the plaintext written into TLS.
//!
//! Trust, the one rule for every client of the suite: the system's store,
//! as curl and uv `--native-tls` read it (`SSL_CERT_FILE` and
//! `SSL_CERT_DIR` when either is set, else the platform's bundle; the
//! built-in Mozilla roots only where the system has none), plus the CA
//! certificates of `--cacert` when given. A certificate whose issuer is not
//! trusted fails the handshake with an error naming that issuer, read from
//! the presented chain, and both ways to trust it.

use crate::read::Timed;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, InvalidDnsNameError, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, OtherError,
    RootCertStore, SignatureScheme, StreamOwned,
};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

#[derive(Debug)]
pub enum TlsError {
    CaFile(PathBuf, String),
    NoCertificates(PathBuf),
    /// `SSL_CERT_FILE` or `SSL_CERT_DIR` is set and could not be read.
    System(String),
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
            Self::System(e) => write!(f, "{e}"),
            Self::Config(e) => write!(f, "TLS set-up failed: {e}"),
        }
    }
}

impl std::error::Error for TlsError {}

/// The variables that replace the platform's bundle, as they are set.
fn trust_variables() -> String {
    ["SSL_CERT_FILE", "SSL_CERT_DIR"]
        .iter()
        .filter_map(|v| Some(format!("{v}={}", std::env::var_os(v)?.to_string_lossy())))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The system's roots, read once per process (see the module docs).
fn system_roots() -> Result<RootCertStore, TlsError> {
    static SYSTEM: OnceLock<Result<RootCertStore, String>> = OnceLock::new();
    SYSTEM
        .get_or_init(|| {
            let named = trust_variables();
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if !named.is_empty() {
                if let Some(e) = found.errors.first() {
                    return Err(format!(
                        "{named}: cannot read the CA certificates: {e}; point it at a PEM file of CA certificates, or unset it"
                    ));
                }
                if added == 0 {
                    return Err(format!(
                        "{named}: no usable PEM CA certificate there; point it at a PEM file of CA certificates, or unset it"
                    ));
                }
            } else if added == 0 {
                roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            }
            Ok(roots)
        })
        .clone()
        .map_err(TlsError::System)
}

pub(crate) fn config(cacert: Option<&Path>) -> Result<Arc<ClientConfig>, TlsError> {
    let mut roots = system_roots()?;
    if let Some(path) = cacert {
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
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let cfg = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NamingVerifier { inner }))
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}

/// rustls's own verifier, whose unknown-issuer error names the issuer.
#[derive(Debug)]
struct NamingVerifier {
    inner: Arc<WebPkiServerVerifier>,
}

/// A certificate chain that ends at an issuer nobody trusts.
#[derive(Debug)]
pub(crate) struct Untrusted {
    issuer: String,
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "issued by {}, which is not trusted here; trust its CA certificate with --cacert FILE or SSL_CERT_FILE=FILE",
            self.issuer
        )
    }
}

impl std::error::Error for Untrusted {}

impl ServerCertVerifier for NamingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|e| match e {
                rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                    // The top of the chain presented names what is missing.
                    let top = intermediates.last().unwrap_or(end_entity);
                    let issuer = issuer_of(top)
                        .unwrap_or_else(|| "an issuer whose name cannot be read".into());
                    rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(
                        Arc::new(Untrusted { issuer }),
                    )))
                }
                other => other,
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The issuer of a DER certificate as `CN=..., O=...`.
fn issuer_of(cert: &CertificateDer<'_>) -> Option<String> {
    let parsed = webpki::EndEntityCert::try_from(cert).ok()?;
    name_text(parsed.issuer())
}

/// One DER element: its tag, its content and what follows it.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 3 {
            return None;
        }
        let (bytes, rest) = rest.split_at_checked(n)?;
        let len = bytes.iter().fold(0usize, |a, b| (a << 8) | usize::from(*b));
        (len, rest)
    };
    let (content, rest) = rest.split_at_checked(len)?;
    Some((tag, content, rest))
}

/// An X.501 Name's content (its RDNs) as `CN=..., O=...`, the attributes
/// people name a CA by, in the certificate's order; the values made
/// printable and bounded (they come from the peer).
fn name_text(mut der: &[u8]) -> Option<String> {
    let mut parts = Vec::new();
    while !der.is_empty() {
        let (tag, mut set, rest) = tlv(der)?;
        der = rest;
        if tag != 0x31 {
            return None;
        }
        while !set.is_empty() {
            let (tag, pair, rest) = tlv(set)?;
            set = rest;
            let (oid_tag, oid, value) = tlv(pair)?;
            if tag != 0x30 || oid_tag != 0x06 {
                return None;
            }
            let (_, value, _) = tlv(value)?;
            let key = match oid {
                [0x55, 0x04, 0x03] => "CN",
                [0x55, 0x04, 0x0a] => "O",
                [0x55, 0x04, 0x0b] => "OU",
                [0x55, 0x04, 0x06] => "C",
                _ => continue,
            };
            let text: String = String::from_utf8_lossy(value)
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .take(100)
                .collect();
            parts.push(format!("{key}={text}"));
        }
    }
    (!parts.is_empty()).then(|| format!("\"{}\"", parts.join(", ")))
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
    #[error("TLS handshake failed: the server's certificate is {0}")]
    Untrusted(Untrusted),
}

/// How an exchange's error reads when the server's certificate was issued
/// by a CA nobody trusts here ([`HandshakeError::Untrusted`]).
const UNTRUSTED: &str = "TLS handshake failed: the server's certificate is issued by";

/// Whether an exchange's `error` says the server's certificate is not
/// trusted: trying again cannot change that, trusting its CA can.
pub fn is_untrusted_certificate(error: &str) -> bool {
    error.contains(UNTRUSTED)
}

/// The handshake's failure, with an untrusted issuer named as such.
fn handshake_error(e: std::io::Error) -> HandshakeError {
    let untrusted = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .and_then(|r| match r {
            rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(o))) => {
                o.downcast_ref::<Untrusted>()
            }
            _ => None,
        })
        .map(|u| Untrusted {
            issuer: u.issuer.clone(),
        });
    match untrusted {
        Some(u) => HandshakeError::Untrusted(u),
        None => HandshakeError::Handshake(e),
    }
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
        conn.complete_io(&mut sock).map_err(handshake_error)?;
    }
    Ok(StreamOwned::new(conn, sock))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SET { SEQUENCE { OID, UTF8String } }` for each attribute.
    fn rdn(oid: &[u8], value: &[u8]) -> Vec<u8> {
        let mut pair = vec![0x06, oid.len() as u8];
        pair.extend_from_slice(oid);
        pair.extend_from_slice(&[0x0c, value.len() as u8]);
        pair.extend_from_slice(value);
        let mut seq = vec![0x30, pair.len() as u8];
        seq.extend(pair);
        let mut set = vec![0x31, seq.len() as u8];
        set.extend(seq);
        set
    }

    #[test]
    fn an_untrusted_issuer_is_told_apart() {
        let e = HandshakeError::Untrusted(Untrusted {
            issuer: "\"CN=Lab CA\"".into(),
        })
        .to_string();
        assert!(is_untrusted_certificate(&e), "{e}");
        assert!(e.contains("--cacert FILE or SSL_CERT_FILE=FILE"), "{e}");
        assert!(!is_untrusted_certificate(
            "TLS handshake failed: connection reset"
        ));
    }

    #[test]
    fn names_read_as_people_name_a_ca() {
        let mut name = rdn(&[0x55, 0x04, 0x06], b"DE");
        name.extend(rdn(&[0x55, 0x04, 0x0a], b"Lab"));
        name.extend(rdn(&[0x2a, 0x03], b"skipped"));
        name.extend(rdn(&[0x55, 0x04, 0x03], b"Lab CA\n2"));
        assert_eq!(
            name_text(&name).as_deref(),
            Some("\"C=DE, O=Lab, CN=Lab CA?2\"")
        );
        // Truncated or malformed DER: no name, never a panic.
        for cut in 0..name.len() {
            let _ = name_text(name.get(..cut).unwrap_or_default());
        }
        assert_eq!(name_text(&[0x30, 0x00]), None);
        assert_eq!(name_text(&[0x31, 0x85, 0xff]), None);
    }
}

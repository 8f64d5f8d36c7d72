//! egress-testca: a throwaway certificate authority for tests, made with the
//! `openssl` command line (Debian: `openssl`), so that tests can serve and
//! check over https on loopback with a CA handed to the client explicitly
//! (`check --cacert`, `pip --cert`, `SSL_CERT_FILE`, `NODE_EXTRA_CA_CERTS`).
//!
//! The one home of the tests' certificates: every test that needs https
//! uses [`TestCa`]; nothing else makes certificates. Test support only: it
//! panics, with the openssl output, when a certificate cannot be made.
//!
//! The certificates are P-256 ECDSA, valid for two days, and strict enough
//! for clients that verify with OpenSSL's strict X.509 mode (Python 3.13+):
//! the CA has a critical `basicConstraints CA:TRUE` and `keyUsage
//! keyCertSign`; a server certificate has key identifiers, `CA:FALSE`,
//! `serverAuth` and subject alternative names.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A certificate and its private key, as PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM, PKCS#8).
    pub key: PathBuf,
}

/// A test CA in a directory, and the server certificate it issued for
/// `localhost`, `127.0.0.1` and `::1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCa {
    dir: PathBuf,
    /// The CA certificate (PEM): what a client is told to trust.
    pub ca_cert: PathBuf,
    ca_key: PathBuf,
    /// The server certificate for `localhost`, `127.0.0.1` and `::1`.
    pub server: Issued,
}

/// The names every server certificate from [`TestCa::new`] carries.
pub const LOOPBACK_NAMES: &str = "DNS:localhost,IP:127.0.0.1,IP:::1";

impl TestCa {
    /// Makes a CA (`ca.pem`, `ca.key`) and a server certificate for the
    /// loopback names (`server.pem`, `server.key`) in `dir`, which must
    /// exist. Panics if openssl is missing or fails.
    pub fn new(dir: &Path) -> TestCa {
        let ca_cert = dir.join("ca.pem");
        let ca_key = dir.join("ca.key");
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=egress test CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
        let mut ca = TestCa {
            dir: dir.to_path_buf(),
            ca_cert,
            ca_key,
            server: Issued {
                cert: PathBuf::new(),
                key: PathBuf::new(),
            },
        };
        ca.server = ca.issue("server", LOOPBACK_NAMES);
        ca
    }

    /// Issues another server certificate, `NAME.pem` and `NAME.key`, for
    /// `names` (a subjectAltName list such as `DNS:localhost,IP:127.0.0.1`).
    pub fn issue(&self, name: &str, names: &str) -> Issued {
        let key = format!("{name}.key");
        let csr = format!("{name}.csr");
        let ext = format!("{name}.ext");
        let cert = format!("{name}.pem");
        openssl(
            &self.dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                &key,
                "-out",
                &csr,
                "-subj",
                "/CN=localhost",
            ],
        );
        std::fs::write(
            self.dir.join(&ext),
            format!(
                "subjectAltName={names}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
            ),
        )
        .unwrap_or_else(|e| panic!("write {ext}: {e}"));
        let ca_cert = path_str(&self.ca_cert);
        let ca_key = path_str(&self.ca_key);
        openssl(
            &self.dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                ca_cert,
                "-CAkey",
                ca_key,
                "-CAcreateserial",
                "-out",
                &cert,
                "-days",
                "2",
                "-extfile",
                &ext,
            ],
        );
        Issued {
            cert: self.dir.join(cert),
            key: self.dir.join(key),
        }
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// Runs `openssl ARGS` in `dir`; panics with its stderr if it fails.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl is installed (Debian: openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_a_ca_and_a_server_certificate_that_verifies() {
        let dir = std::env::temp_dir().join(format!("egress-testca-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let ca = TestCa::new(&dir);
        let verify = Command::new("openssl")
            .args(["verify", "-x509_strict", "-purpose", "sslserver", "-CAfile"])
            .arg(&ca.ca_cert)
            .arg(&ca.server.cert)
            .output()
            .expect("openssl");
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stdout)
        );
        let other = ca.issue("other", "DNS:other.test");
        assert!(other.cert.is_file() && other.key.is_file());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

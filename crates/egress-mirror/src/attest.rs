//! The instance attestation route: `GET /.well-known/egress-mirror/attest/<nonce hex>`.
//!
//! An [`Attestor`] holds the instance key (made at start, in memory only),
//! the sha256 of the running executable (computed at start), the
//! confinement the process reports, and where the lab's certificate of the
//! instance key is. Each answer is a fresh [`Statement`] over the verifier's
//! nonce, signed by the instance key, with the certificate as deployed: the
//! file is read again whenever it changes (inode, size or modification time),
//! so an operator can deploy or replace it while the mirror runs. What the
//! chain proves, and what it cannot: docs/threat-model.md.

use egress_model::Sha256Digest;
use egress_signing::instance::{MAX_CERTIFICATE, MAX_CONFINEMENT, MAX_NONCE, MIN_NONCE};
use egress_signing::{Certificate, InstanceKey, PublicKey, Statement};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

/// Where the certificate comes from.
#[derive(Debug)]
enum CertificateSource {
    /// None deployed: every statement goes out uncertified.
    None,
    /// Fixed bytes (in-process references and tests).
    Fixed(Vec<u8>),
    /// A file, read again whenever it changes.
    File {
        path: PathBuf,
        cache: Mutex<Option<(FileStamp, Option<Vec<u8>>)>>,
    },
}

/// What says a file changed: its identity, size and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
}

fn stamp(meta: &std::fs::Metadata) -> FileStamp {
    #[cfg(unix)]
    let (dev, ino) = {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let (dev, ino) = (0, 0);
    FileStamp {
        dev,
        ino,
        len: meta.len(),
        modified: meta.modified().ok(),
    }
}

/// Answers nonces for one mirror instance. See the module documentation.
#[derive(Debug)]
pub struct Attestor {
    key: InstanceKey,
    binary: Sha256Digest,
    confinement: String,
    certificate: CertificateSource,
}

/// Why a nonce in the attestation path is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the nonce must be {min} to {max} lowercase hex digits, an even number of them", min = MIN_NONCE * 2, max = MAX_NONCE * 2)]
pub struct BadNonce;

impl Attestor {
    /// An attestor with no certificate (yet): its statements are
    /// uncertified until one is set.
    /// The confinement text is cut to [`MAX_CONFINEMENT`] bytes (on a
    /// character boundary), the most a statement may carry.
    pub fn new(key: InstanceKey, binary: Sha256Digest, confinement: impl Into<String>) -> Self {
        let mut confinement: String = confinement.into();
        while confinement.len() > MAX_CONFINEMENT {
            confinement.pop();
        }
        Self {
            key,
            binary,
            confinement,
            certificate: CertificateSource::None,
        }
    }

    /// Attaches these certificate bytes to every statement.
    pub fn with_certificate(mut self, bytes: Vec<u8>) -> Self {
        self.certificate = CertificateSource::Fixed(bytes);
        self
    }

    /// Attaches the certificate read from `path` (when it exists), read
    /// again whenever the file changes.
    pub fn certificate_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.certificate = CertificateSource::File {
            path: path.into(),
            cache: Mutex::new(None),
        };
        self
    }

    /// The instance's public key, which the lab certifies.
    pub fn public(&self) -> PublicKey {
        self.key.public()
    }

    /// The sha256 of the binary this instance reports.
    pub fn binary(&self) -> Sha256Digest {
        self.binary
    }

    /// The certificate as deployed now, if any.
    fn certificate(&self) -> Option<Vec<u8>> {
        match &self.certificate {
            CertificateSource::None => None,
            CertificateSource::Fixed(bytes) => Some(bytes.clone()),
            CertificateSource::File { path, cache } => {
                let meta = std::fs::metadata(path).ok()?;
                let now = stamp(&meta);
                let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
                if let Some((seen, bytes)) = cache.as_ref() {
                    if *seen == now {
                        return bytes.clone();
                    }
                }
                let bytes = read_bounded(path).ok();
                *cache = Some((now, bytes.clone()));
                bytes
            }
        }
    }

    /// Whether the deployed certificate (if any) certifies this instance
    /// key for `snapshot`: for the operator's log line only; the verifier
    /// decides for itself.
    pub fn certificate_status(&self, snapshot: &Sha256Digest) -> String {
        let Some(bytes) = self.certificate() else {
            return "no certificate deployed yet".to_string();
        };
        match Certificate::parse(&bytes) {
            Err(e) => format!("the deployed certificate does not parse ({e})"),
            Ok(c) if c.instance_key != self.public() => {
                "the deployed certificate is for another instance key: certify this one".into()
            }
            Ok(c) if c.snapshot != *snapshot => {
                "the deployed certificate is for another snapshot: certify this one".into()
            }
            Ok(_) => "a certificate for this key and snapshot is deployed".into(),
        }
    }

    /// The armoured attestation answering `nonce_hex` for `snapshot`.
    pub fn answer(&self, snapshot: Sha256Digest, nonce_hex: &str) -> Result<String, BadNonce> {
        let nonce = parse_nonce(nonce_hex)?;
        let statement = Statement {
            instance_key: self.public(),
            nonce,
            snapshot,
            binary: self.binary,
            confinement: self.confinement.clone(),
        };
        Ok(self.key.attest(statement, self.certificate()).to_text())
    }
}

fn read_bounded(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_CERTIFICATE as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() > MAX_CERTIFICATE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "larger than any certificate",
        ));
    }
    Ok(bytes)
}

/// Lowercase hex, [`MIN_NONCE`] to [`MAX_NONCE`] bytes.
fn parse_nonce(hex: &str) -> Result<Vec<u8>, BadNonce> {
    let digits = hex.as_bytes();
    if !digits.len().is_multiple_of(2)
        || digits.len() < MIN_NONCE * 2
        || digits.len() > MAX_NONCE * 2
    {
        return Err(BadNonce);
    }
    let value = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    digits
        .chunks_exact(2)
        .map(|pair| match pair {
            [hi, lo] => Some(value(*hi)? << 4 | value(*lo)?),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or(BadNonce)
}

/// The sha256 of the running executable (`/proc/self/exe` on Linux, else
/// `current_exe`), computed once per process: read it before confinement,
/// which denies reading files outside the snapshot.
pub fn own_binary_sha256() -> io::Result<Sha256Digest> {
    static DIGEST: OnceLock<Sha256Digest> = OnceLock::new();
    if let Some(d) = DIGEST.get() {
        return Ok(*d);
    }
    let path = if Path::new("/proc/self/exe").exists() {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe()?
    };
    let mut file = std::fs::File::open(path)?;
    let mut hasher = egress_model::digest::Sha256Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(buf.get(..n).unwrap_or_default());
    }
    Ok(*DIGEST.get_or_init(|| hasher.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces() {
        assert_eq!(parse_nonce(&"ab".repeat(16)), Ok(vec![0xab; 16]));
        assert_eq!(parse_nonce(&"0f".repeat(64)).map(|n| n.len()), Ok(64));
        for bad in [
            String::new(),
            "ab".repeat(15),
            "ab".repeat(65),
            "AB".repeat(16),
            format!("{}a", "ab".repeat(16)),
            format!("{}zz", "ab".repeat(16)),
            format!("{}é", "a".repeat(32)),
        ] {
            assert_eq!(parse_nonce(&bad), Err(BadNonce), "{bad:?}");
        }
    }

    #[test]
    fn a_long_confinement_still_makes_a_statement_that_parses() {
        let a = Attestor::new(
            InstanceKey::from_seed([5; 32]),
            Sha256Digest::of(b"b"),
            "é".repeat(MAX_CONFINEMENT),
        );
        let text = a.answer(Sha256Digest::of(b"m"), &"ab".repeat(32)).unwrap();
        let parsed = egress_signing::Attestation::parse(text.as_bytes()).unwrap();
        assert!(parsed.statement.confinement.len() <= MAX_CONFINEMENT);
        parsed.verify_signature().unwrap();
    }

    #[test]
    fn the_certificate_file_is_read_again_when_it_changes() {
        let dir = std::env::temp_dir().join(format!("egress-attest-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("instance.cert");
        let _ = std::fs::remove_file(&path);
        let a = Attestor::new(InstanceKey::from_seed([5; 32]), Sha256Digest::of(b"b"), "x")
            .certificate_file(&path);
        assert_eq!(a.certificate(), None);
        std::fs::write(&path, b"first").unwrap();
        assert_eq!(a.certificate().as_deref(), Some(&b"first"[..]));
        std::fs::write(dir.join("next"), b"second one").unwrap();
        std::fs::rename(dir.join("next"), &path).unwrap();
        assert_eq!(a.certificate().as_deref(), Some(&b"second one"[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

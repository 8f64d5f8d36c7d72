//! Instance attestation: the documents that bind a running mirror to a
//! signed snapshot (see docs/threat-model.md).
//!
//! - An [`InstanceKey`] is an ed25519 key a mirror creates when it starts
//!   and holds in memory only; it is never written anywhere.
//! - A [`Certificate`] is the lab's statement "this instance key serves
//!   snapshot S": an SSHSIG by a lab key (the snapshot key), for namespace
//!   [`INSTANCE_NAMESPACE`], over canonical bytes naming the instance key
//!   and the snapshot ID. The operator makes it after the mirror started
//!   (`egress-conformance instance certify`) and deploys it where the
//!   mirror reads it.
//! - An [`Attestation`] is the mirror's answer to a verifier's nonce: a
//!   [`Statement`] (its instance key, the nonce, the snapshot ID, the sha256
//!   of its own binary and the confinement it reports), the instance key's
//!   ed25519 signature over the statement's canonical bytes, and the
//!   certificate as deployed (or none).
//!
//! Every document is a sequence of SSH wire strings (a big-endian `u32`
//! length, then the bytes), each starting with its own magic string, so no
//! two kinds of document can be mistaken for one another; they travel as
//! armoured base64 text. Parsing goes through [`Reader`]: every length is
//! bounded, trailing bytes are refused, nothing panics.

use crate::wire::{put_string, Reader};
use crate::{
    armor, dearmor, verify, AllowedSigners, PublicKey, SigningError, SigningKey, Verified,
    MAX_KEY_BLOB,
};
use ed25519_dalek::Signer as _;
use egress_model::Sha256Digest;
use std::fmt;

/// Namespace under which a lab key certifies instance keys. Distinct from
/// [`crate::SNAPSHOT_NAMESPACE`]: a manifest signature can never pass for a
/// certificate, nor the other way round.
pub const INSTANCE_NAMESPACE: &str = "egress-mirror-instance@egress-conformance";

/// Armour label of a certificate file.
pub const CERTIFICATE_LABEL: &str = "EGRESS MIRROR INSTANCE CERTIFICATE";
/// Armour label of an attestation (the body of the mirror's answer).
pub const ATTESTATION_LABEL: &str = "EGRESS MIRROR ATTESTATION";

const CERTIFICATE_MAGIC: &[u8] = b"egress-mirror-instance-certificate-v1";
const STATEMENT_MAGIC: &[u8] = b"egress-mirror-instance-statement-v1";
const ATTESTATION_MAGIC: &[u8] = b"egress-mirror-attestation-v1";

/// The shortest nonce a statement may answer: 128 bits.
pub const MIN_NONCE: usize = 16;
/// The longest nonce a statement may answer.
pub const MAX_NONCE: usize = 64;
/// The longest confinement description a statement may carry.
pub const MAX_CONFINEMENT: usize = 1024;
/// The largest certificate text an attestation may carry (a real one is
/// well under 1 KiB).
pub const MAX_CERTIFICATE: usize = 16 * 1024;
const MAX_MAGIC: usize = 64;
const MAX_SSHSIG_TEXT: usize = 4 * 1024;

/// A mirror instance's ed25519 key: made from the operating system's random
/// number generator when the mirror starts, held in memory, never written.
/// The secret is zeroized on drop.
pub struct InstanceKey {
    key: ed25519_dalek::SigningKey,
}

impl fmt::Debug for InstanceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstanceKey")
            .field("public", &self.public().fingerprint())
            .finish_non_exhaustive()
    }
}

impl InstanceKey {
    /// A fresh key from the operating system's random number generator.
    pub fn generate() -> Result<Self, SigningError> {
        let mut seed = [0u8; 32];
        getrandom::getrandom(&mut seed).map_err(|e| SigningError::Random(e.to_string()))?;
        let key = ed25519_dalek::SigningKey::from_bytes(&seed);
        crate::wipe(&mut seed);
        Ok(Self { key })
    }

    /// A key from a fixed seed, for tests that need a reproducible key.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self {
            key: ed25519_dalek::SigningKey::from_bytes(&seed),
        }
    }

    pub fn public(&self) -> PublicKey {
        PublicKey {
            key: self.key.verifying_key(),
        }
    }

    /// Signs `statement`, which must name this key, and attaches
    /// `certificate` (the deployed certificate file's bytes, if any, as
    /// they are: the verifier judges them).
    pub fn attest(&self, statement: Statement, certificate: Option<Vec<u8>>) -> Attestation {
        let statement_bytes = statement.encode();
        let signature = self.key.sign(&statement_bytes).to_bytes();
        Attestation {
            statement,
            statement_bytes,
            signature,
            certificate,
        }
    }
}

/// The lab's certificate of one instance key for one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    /// The instance key certified.
    pub instance_key: PublicKey,
    /// The snapshot it is certified to serve (the SHA-256 of its MANIFEST).
    pub snapshot: Sha256Digest,
    /// Armoured SSHSIG over [`Certificate::certified_bytes`].
    signature: String,
}

impl Certificate {
    /// The lab key `lab` certifies `instance_key` for `snapshot`.
    pub fn issue(lab: &SigningKey, instance_key: &PublicKey, snapshot: Sha256Digest) -> Self {
        let signature = lab.sign(
            INSTANCE_NAMESPACE,
            &certified_bytes(instance_key, &snapshot),
        );
        Self {
            instance_key: *instance_key,
            snapshot,
            signature,
        }
    }

    /// The exact bytes the lab's signature covers: string magic, string
    /// instance key blob, string snapshot ID. Anyone can check them with
    /// `ssh-keygen -Y verify -n egress-mirror-instance@egress-conformance`.
    pub fn certified_bytes(&self) -> Vec<u8> {
        certified_bytes(&self.instance_key, &self.snapshot)
    }

    /// The armoured SSHSIG.
    pub fn signature(&self) -> &str {
        &self.signature
    }

    /// The certificate file's text.
    pub fn to_text(&self) -> String {
        let mut blob = self.certified_bytes();
        put_string(&mut blob, self.signature.as_bytes());
        armor(CERTIFICATE_LABEL, &blob)
    }

    /// Parses a certificate file's bytes (the signature is not checked:
    /// see [`Certificate::verify`]).
    pub fn parse(bytes: &[u8]) -> Result<Self, SigningError> {
        let text = std::str::from_utf8(bytes).map_err(|_| SigningError::Armor {
            label: CERTIFICATE_LABEL,
        })?;
        let blob = dearmor(CERTIFICATE_LABEL, text)?;
        let mut r = Reader::new(&blob, "instance certificate");
        if r.string(MAX_MAGIC)? != CERTIFICATE_MAGIC {
            return Err(r.malformed("not an egress-mirror instance certificate (v1)"));
        }
        let instance_key = PublicKey::from_blob(r.string(MAX_KEY_BLOB)?)?;
        let snapshot = digest(&mut r, "snapshot ID")?;
        let signature = std::str::from_utf8(r.string(MAX_SSHSIG_TEXT)?)
            .map_err(|_| r.malformed("the signature is not text"))?
            .to_owned();
        r.finish()?;
        Ok(Self {
            instance_key,
            snapshot,
            signature,
        })
    }

    /// Checks the lab's signature: an SSHSIG for [`INSTANCE_NAMESPACE`] over
    /// the certified bytes, by a key in `allowed` that may sign for that
    /// namespace.
    pub fn verify(&self, allowed: &AllowedSigners) -> Result<Verified, SigningError> {
        verify(
            &self.signature,
            INSTANCE_NAMESPACE,
            &self.certified_bytes(),
            allowed,
        )
    }
}

fn certified_bytes(instance_key: &PublicKey, snapshot: &Sha256Digest) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    put_string(&mut out, CERTIFICATE_MAGIC);
    put_string(&mut out, &instance_key.blob());
    put_string(&mut out, snapshot.as_bytes());
    out
}

fn digest(r: &mut Reader<'_>, what: &str) -> Result<Sha256Digest, SigningError> {
    let bytes: [u8; 32] = r
        .string(32)?
        .try_into()
        .map_err(|_| r.malformed(&format!("the {what} is not 32 bytes")))?;
    Ok(Sha256Digest::from_bytes(bytes))
}

/// What an instance states in answer to a nonce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The key that signs the statement.
    pub instance_key: PublicKey,
    /// The verifier's nonce, [`MIN_NONCE`] to [`MAX_NONCE`] bytes.
    pub nonce: Vec<u8>,
    /// The snapshot the instance serves (the SHA-256 of its MANIFEST).
    pub snapshot: Sha256Digest,
    /// The SHA-256 of the instance's own executable, computed at start.
    pub binary: Sha256Digest,
    /// The confinement the instance reports (one line of text).
    pub confinement: String,
}

impl Statement {
    /// The canonical bytes the instance key signs: string magic, string
    /// instance key blob, string nonce, string snapshot ID, string binary
    /// sha256, string confinement.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.confinement.len());
        put_string(&mut out, STATEMENT_MAGIC);
        put_string(&mut out, &self.instance_key.blob());
        put_string(&mut out, &self.nonce);
        put_string(&mut out, self.snapshot.as_bytes());
        put_string(&mut out, self.binary.as_bytes());
        put_string(&mut out, self.confinement.as_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Result<Self, SigningError> {
        let mut r = Reader::new(bytes, "instance statement");
        if r.string(MAX_MAGIC)? != STATEMENT_MAGIC {
            return Err(r.malformed("not an egress-mirror instance statement (v1)"));
        }
        let instance_key = PublicKey::from_blob(r.string(MAX_KEY_BLOB)?)?;
        let nonce = r.string(MAX_NONCE)?.to_vec();
        if nonce.len() < MIN_NONCE {
            return Err(r.malformed(&format!(
                "a nonce of {} bytes is shorter than {MIN_NONCE}",
                nonce.len()
            )));
        }
        let snapshot = digest(&mut r, "snapshot ID")?;
        let binary = digest(&mut r, "binary sha256")?;
        let confinement = std::str::from_utf8(r.string(MAX_CONFINEMENT)?)
            .map_err(|_| r.malformed("the confinement is not UTF-8"))?
            .to_owned();
        r.finish()?;
        Ok(Self {
            instance_key,
            nonce,
            snapshot,
            binary,
            confinement,
        })
    }
}

/// An instance's answer to a nonce: the statement, its signature and the
/// certificate the instance has (as deployed, unchecked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attestation {
    pub statement: Statement,
    /// The statement's bytes as received (signed over exactly these).
    statement_bytes: Vec<u8>,
    signature: [u8; 64],
    /// The certificate file's bytes as the instance read them; `None` when
    /// it has none.
    pub certificate: Option<Vec<u8>>,
}

impl Attestation {
    /// The armoured text the mirror serves.
    pub fn to_text(&self) -> String {
        let mut blob = Vec::with_capacity(512);
        put_string(&mut blob, ATTESTATION_MAGIC);
        put_string(&mut blob, &self.statement_bytes);
        put_string(&mut blob, &self.signature);
        put_string(&mut blob, self.certificate.as_deref().unwrap_or_default());
        armor(ATTESTATION_LABEL, &blob)
    }

    /// Parses an attestation; the signature is not checked (see
    /// [`Attestation::verify_signature`]).
    pub fn parse(bytes: &[u8]) -> Result<Self, SigningError> {
        let text = std::str::from_utf8(bytes).map_err(|_| SigningError::Armor {
            label: ATTESTATION_LABEL,
        })?;
        let blob = dearmor(ATTESTATION_LABEL, text)?;
        let mut r = Reader::new(&blob, "instance attestation");
        if r.string(MAX_MAGIC)? != ATTESTATION_MAGIC {
            return Err(r.malformed("not an egress-mirror attestation (v1)"));
        }
        let statement_bytes = r.string(MAX_KEY_BLOB)?.to_vec();
        let signature: [u8; 64] = r
            .string(64)?
            .try_into()
            .map_err(|_| r.malformed("the ed25519 signature is not 64 bytes"))?;
        let certificate = r.string(MAX_CERTIFICATE)?;
        let certificate = (!certificate.is_empty()).then(|| certificate.to_vec());
        r.finish()?;
        let statement = Statement::decode(&statement_bytes)?;
        Ok(Self {
            statement,
            statement_bytes,
            signature,
            certificate,
        })
    }

    /// Whether `text` is meant as an attestation (it carries the armour),
    /// whatever it holds: a body without it makes no attestation claim.
    pub fn claimed(bytes: &[u8]) -> bool {
        let begin = format!("-----BEGIN {ATTESTATION_LABEL}-----");
        bytes.windows(begin.len()).any(|w| w == begin.as_bytes())
    }

    /// Checks the instance key's ed25519 signature over the statement
    /// (strict verification).
    pub fn verify_signature(&self) -> Result<(), SigningError> {
        let signature = ed25519_dalek::Signature::from_bytes(&self.signature);
        self.statement
            .instance_key
            .key
            .verify_strict(&self.statement_bytes, &signature)
            .map_err(|_| SigningError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab() -> SigningKey {
        SigningKey::from_seed([1; 32], "lab")
    }

    fn statement(key: &InstanceKey) -> Statement {
        Statement {
            instance_key: key.public(),
            nonce: vec![9; 32],
            snapshot: Sha256Digest::of(b"manifest"),
            binary: Sha256Digest::of(b"binary"),
            confinement: "landlock ABI 6: outbound TCP denied".into(),
        }
    }

    fn allowed(key: &SigningKey) -> AllowedSigners {
        AllowedSigners::parse(&AllowedSigners::line_for("lab", &key.public())).unwrap()
    }

    #[test]
    fn the_whole_chain_round_trips_and_verifies() {
        let key = InstanceKey::from_seed([2; 32]);
        let cert = Certificate::issue(&lab(), &key.public(), Sha256Digest::of(b"manifest"));
        let text = cert.to_text();
        let parsed = Certificate::parse(text.as_bytes()).unwrap();
        assert_eq!(parsed, cert);
        assert_eq!(parsed.verify(&allowed(&lab())).unwrap().principal, "lab");

        let att = key.attest(statement(&key), Some(text.into_bytes()));
        let served = att.to_text();
        assert!(Attestation::claimed(served.as_bytes()));
        let back = Attestation::parse(served.as_bytes()).unwrap();
        assert_eq!(back, att);
        back.verify_signature().unwrap();
        let cert = Certificate::parse(back.certificate.as_deref().unwrap()).unwrap();
        assert_eq!(cert.instance_key, back.statement.instance_key);
    }

    #[test]
    fn a_certificate_by_another_key_or_namespace_does_not_verify() {
        let key = InstanceKey::from_seed([2; 32]);
        let other = SigningKey::from_seed([3; 32], "other");
        let cert = Certificate::issue(&other, &key.public(), Sha256Digest::of(b"m"));
        assert!(matches!(
            cert.verify(&allowed(&lab())),
            Err(SigningError::NotAllowed { .. })
        ));
        // The snapshot key restricted to manifests cannot certify instances.
        let line =
            AllowedSigners::line_for_namespace("lab", &lab().public(), crate::SNAPSHOT_NAMESPACE);
        let cert = Certificate::issue(&lab(), &key.public(), Sha256Digest::of(b"m"));
        assert!(matches!(
            cert.verify(&AllowedSigners::parse(&line).unwrap()),
            Err(SigningError::NamespaceNotPermitted { .. })
        ));
        // A manifest signature over the same bytes is for another namespace.
        let forged = Certificate {
            signature: lab().sign(crate::SNAPSHOT_NAMESPACE, &cert.certified_bytes()),
            ..cert
        };
        assert!(matches!(
            forged.verify(&allowed(&lab())),
            Err(SigningError::NamespaceMismatch { .. })
        ));
    }

    #[test]
    fn a_changed_statement_does_not_verify() {
        let key = InstanceKey::from_seed([2; 32]);
        let att = key.attest(statement(&key), None);
        let mut other = statement(&key);
        other.nonce = vec![8; 32];
        let tampered = Attestation {
            statement_bytes: other.encode(),
            statement: other,
            ..att.clone()
        };
        assert_eq!(tampered.verify_signature(), Err(SigningError::BadSignature));
        // Signed by another key than the one it names.
        let impostor = InstanceKey::from_seed([4; 32]);
        let forged = impostor.attest(statement(&key), None);
        assert_eq!(forged.verify_signature(), Err(SigningError::BadSignature));
    }

    #[test]
    fn malformed_input_is_an_error_never_a_panic() {
        let key = InstanceKey::from_seed([2; 32]);
        let good = key.attest(statement(&key), Some(b"x".to_vec())).to_text();
        let blob = dearmor(ATTESTATION_LABEL, &good).unwrap();
        for cut in 0..blob.len() {
            let text = armor(ATTESTATION_LABEL, &blob[..cut]);
            assert!(Attestation::parse(text.as_bytes()).is_err(), "cut {cut}");
        }
        for i in 0..blob.len() {
            let mut b = blob.clone();
            b[i] ^= 0x80;
            let _ = Attestation::parse(armor(ATTESTATION_LABEL, &b).as_bytes());
        }
        let mut short = statement(&key);
        short.nonce = vec![1; 8];
        let att = key.attest(short, None).to_text();
        assert!(Attestation::parse(att.as_bytes()).is_err());
        assert!(Attestation::parse(b"\xff\xfe").is_err());
        assert!(Certificate::parse(b"not a certificate").is_err());
        assert!(!Attestation::claimed(b"<html>404</html>"));
    }
}

//! OpenSSH ed25519 keys and SSHSIG signatures, interoperable with
//! `ssh-keygen -Y sign` / `ssh-keygen -Y verify`.
//!
//! Formats implemented (all from OpenSSH):
//! - `openssh-key-v1` private keys, unencrypted only (`PROTOCOL.key`);
//! - `ssh-ed25519 AAAA... comment` public key lines and `SHA256:` fingerprints;
//! - armoured SSHSIG signatures (`PROTOCOL.sshsig`);
//! - the `ALLOWED SIGNERS` file format of `ssh-keygen(1)`.
//!
//! Every binary read goes through [`Reader`], which bounds-checks each length
//! against both the remaining input and a per-field maximum, so malformed
//! input yields a [`SigningError`] and never a panic.

// A parser of untrusted bytes: no indexing, string slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

use ed25519_dalek::Signer as _;
use egress_model::base64;
use sha2::{Digest as _, Sha256, Sha512};
use std::fmt;

mod allowed;
mod error;
pub mod instance;
pub mod openpgp;
mod wire;

pub use allowed::{AllowedSigners, AllowedSignersEntry};
pub use error::SigningError;
pub use instance::{Attestation, Certificate, InstanceKey, Statement, INSTANCE_NAMESPACE};
pub use openpgp::{Fingerprint, Keyring, OpenPgpError, OpenPgpKey, VerifiedText};
use wire::{put_string, Reader};

/// Namespace under which mirror snapshot manifests are signed.
pub const SNAPSHOT_NAMESPACE: &str = "egress-mirror-snapshot@egress-conformance";

/// The namespaces a lab key signs for, as an allowed-signers `namespaces`
/// list: snapshot manifests and instance certificates
/// ([`INSTANCE_NAMESPACE`]), and nothing else.
pub const LAB_NAMESPACES: &str =
    "egress-mirror-snapshot@egress-conformance,egress-mirror-instance@egress-conformance";

const KEY_TYPE: &str = "ssh-ed25519";
const PRIVATE_LABEL: &str = "OPENSSH PRIVATE KEY";
const SIGNATURE_LABEL: &str = "SSH SIGNATURE";
const AUTH_MAGIC: &[u8] = b"openssh-key-v1\0";
const SIG_MAGIC: &[u8] = b"SSHSIG";
const SIG_VERSION: u32 = 1;
/// Block size OpenSSH pads the private section to when the cipher is "none".
const NONE_BLOCK_SIZE: usize = 8;
/// Armoured input larger than this is rejected before decoding. Real keys
/// and signatures are well under 1 KiB.
const MAX_ARMOR_LEN: usize = 64 * 1024;

// Per-field maxima for SSH strings. They only need to be generous enough for
// anything OpenSSH writes; the point is that no length read from input is
// trusted beyond them.
const MAX_NAME: usize = 64; // key type, cipher, kdf, hash algorithm names
const MAX_KEY_BLOB: usize = 16 * 1024; // large enough to name an RSA key as unsupported
const MAX_NAMESPACE: usize = 1024;
const MAX_COMMENT: usize = 8 * 1024;
const MAX_SIG_BLOB: usize = 16 * 1024;

/// An ed25519 private key with its OpenSSH comment.
///
/// The secret is zeroized on drop (ed25519-dalek's `zeroize` feature).
pub struct SigningKey {
    key: ed25519_dalek::SigningKey,
    comment: String,
    /// The openssh-key-v1 "checkint": a value repeated twice in the private
    /// section so that a wrong decryption key is detected. It is random in
    /// keys ssh-keygen writes; we keep a parsed value so that a loaded key
    /// re-serialises byte for byte, and derive it from the seed otherwise.
    checkint: u32,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public().fingerprint())
            .field("comment", &self.comment)
            .finish_non_exhaustive()
    }
}

/// An ed25519 public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey {
    key: ed25519_dalek::VerifyingKey,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint())
    }
}

/// The outcome of a successful [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The principals field of the allowed-signers line that matched, as
    /// written (a comma-separated pattern list, like
    /// `ssh-keygen -Y find-principals` prints), or the requested principal
    /// for [`verify_for_principal`].
    pub principal: String,
    /// `SHA256:` fingerprint of the signing key.
    pub fingerprint: String,
}

impl SigningKey {
    /// A new key from the operating system's random number generator.
    pub fn generate(comment: &str) -> Result<Self, SigningError> {
        let mut seed = [0u8; 32];
        getrandom::getrandom(&mut seed).map_err(|e| SigningError::Random(e.to_string()))?;
        let key = Self::from_seed(seed, comment);
        wipe(&mut seed);
        Ok(key)
    }

    /// A key from a 32-byte ed25519 seed. Deterministic: same seed, same key
    /// and the same `to_openssh` text.
    pub fn from_seed(seed: [u8; 32], comment: &str) -> Self {
        let mut h = Sha256::new();
        h.update(b"egress-signing openssh-key-v1 checkint\0");
        h.update(seed);
        let d: [u8; 32] = h.finalize().into();
        let [a, b, c, e, ..] = d;
        let checkint = u32::from_be_bytes([a, b, c, e]);
        Self {
            key: ed25519_dalek::SigningKey::from_bytes(&seed),
            comment: comment.to_owned(),
            checkint,
        }
    }

    pub fn comment(&self) -> &str {
        &self.comment
    }

    pub fn public(&self) -> PublicKey {
        PublicKey {
            key: self.key.verifying_key(),
        }
    }

    /// The unencrypted `openssh-key-v1` file, exactly as
    /// `ssh-keygen -t ed25519 -N ''` lays it out. Write it with mode 0600:
    /// ssh-keygen refuses private keys other users can read.
    pub fn to_openssh(&self) -> String {
        let public = self.public();
        let pub_blob = public.blob();

        // Private section: checkint, checkint, key type, public key,
        // secret (seed || public, the 64-byte ref10 form), comment, padding.
        let mut section = Vec::with_capacity(256);
        section.extend_from_slice(&self.checkint.to_be_bytes());
        section.extend_from_slice(&self.checkint.to_be_bytes());
        put_string(&mut section, KEY_TYPE.as_bytes());
        put_string(&mut section, public.key.as_bytes());
        let mut secret = self.key.to_keypair_bytes();
        put_string(&mut section, &secret);
        wipe(&mut secret);
        put_string(&mut section, self.comment.as_bytes());
        let mut pad: u8 = 1;
        while section.len() % NONE_BLOCK_SIZE != 0 {
            section.push(pad);
            pad += 1;
        }

        let mut blob = Vec::with_capacity(section.len() + 128);
        blob.extend_from_slice(AUTH_MAGIC);
        put_string(&mut blob, b"none"); // cipher
        put_string(&mut blob, b"none"); // kdf
        put_string(&mut blob, b""); // kdf options
        blob.extend_from_slice(&1u32.to_be_bytes()); // number of keys
        put_string(&mut blob, &pub_blob);
        put_string(&mut blob, &section);
        wipe(&mut section);

        let text = armor(PRIVATE_LABEL, &blob);
        wipe(&mut blob);
        text
    }

    /// Parses an unencrypted `openssh-key-v1` ed25519 private key.
    pub fn from_openssh(text: &str) -> Result<Self, SigningError> {
        let mut blob = dearmor(PRIVATE_LABEL, text)?;
        let result = parse_private(&blob);
        wipe(&mut blob);
        result
    }

    /// An armoured SSHSIG signature over `message`, hash sha512, byte for
    /// byte what `ssh-keygen -Y sign -n NAMESPACE` produces for this key
    /// (ed25519 signatures are deterministic). ssh-keygen requires a
    /// non-empty namespace, and [`verify`] rejects an empty one.
    pub fn sign(&self, namespace: &str, message: &[u8]) -> String {
        self.sign_hashed(namespace, &Sha512::digest(message))
    }

    /// [`SigningKey::sign`] over a message read from `reader` to its end,
    /// never held whole (a million-entry MANIFEST is hundreds of MB).
    pub fn sign_reader(
        &self,
        namespace: &str,
        mut reader: impl std::io::Read,
    ) -> std::io::Result<String> {
        let mut hasher = Sha512::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(buf.get(..n).unwrap_or_default());
        }
        Ok(self.sign_hashed(namespace, &hasher.finalize()))
    }

    /// The signature over a message whose SHA-512 is `hash`.
    fn sign_hashed(&self, namespace: &str, hash: &[u8]) -> String {
        let data = signed_data(namespace.as_bytes(), b"", "sha512", hash);
        let signature = self.key.sign(&data);

        let mut sig_blob = Vec::with_capacity(83);
        put_string(&mut sig_blob, KEY_TYPE.as_bytes());
        put_string(&mut sig_blob, &signature.to_bytes());

        let mut blob = Vec::with_capacity(256);
        blob.extend_from_slice(SIG_MAGIC);
        blob.extend_from_slice(&SIG_VERSION.to_be_bytes());
        put_string(&mut blob, &self.public().blob());
        put_string(&mut blob, namespace.as_bytes());
        put_string(&mut blob, b""); // reserved
        put_string(&mut blob, b"sha512");
        put_string(&mut blob, &sig_blob);
        armor(SIGNATURE_LABEL, &blob)
    }
}

fn parse_private(blob: &[u8]) -> Result<SigningKey, SigningError> {
    const WHAT: &str = "OpenSSH private key";
    let mut r = Reader::new(blob, WHAT);
    if r.bytes(AUTH_MAGIC.len())? != AUTH_MAGIC {
        return Err(r.malformed("missing openssh-key-v1 magic"));
    }
    let cipher = r.string(MAX_NAME)?;
    let kdf = r.string(MAX_NAME)?;
    let _kdf_options = r.string(MAX_KEY_BLOB)?;
    if cipher != b"none" || kdf != b"none" {
        return Err(SigningError::EncryptedKey {
            cipher: String::from_utf8_lossy(cipher).into_owned(),
            kdf: String::from_utf8_lossy(kdf).into_owned(),
        });
    }
    let nkeys = r.u32()?;
    if nkeys != 1 {
        return Err(r.malformed(&format!("file holds {nkeys} keys, expected 1")));
    }
    let outer_public = PublicKey::from_blob(r.string(MAX_KEY_BLOB)?)?;
    let section = r.string(MAX_ARMOR_LEN)?;
    r.finish()?;
    if section.len() % NONE_BLOCK_SIZE != 0 {
        return Err(r.malformed("private section is not a multiple of the block size"));
    }

    let mut s = Reader::new(section, WHAT);
    let check1 = s.u32()?;
    let check2 = s.u32()?;
    if check1 != check2 {
        return Err(s.malformed("checkints differ (corrupt or wrongly decrypted)"));
    }
    let key_type = s.string(MAX_NAME)?;
    if key_type != KEY_TYPE.as_bytes() {
        return Err(SigningError::UnsupportedKeyType(
            String::from_utf8_lossy(key_type).into_owned(),
        ));
    }
    let public: [u8; 32] = s
        .string(32)?
        .try_into()
        .map_err(|_| s.malformed("ed25519 public key is not 32 bytes"))?;
    // The secret is the 64-byte ref10 form: seed || public key.
    let keypair: [u8; 64] = s
        .string(64)?
        .try_into()
        .map_err(|_| s.malformed("ed25519 secret key is not 64 bytes"))?;
    let comment = String::from_utf8_lossy(s.string(MAX_COMMENT)?).into_owned();
    // What remains is padding 1, 2, 3, ... shorter than one block.
    let padding = s.rest();
    let padding_ok = padding.len() < NONE_BLOCK_SIZE
        && padding
            .iter()
            .zip(1u8..)
            .all(|(&b, expected)| b == expected);
    if !padding_ok {
        return Err(s.malformed("bad padding after the private key"));
    }

    // from_keypair_bytes checks that the seed derives the stored public half.
    let key = ed25519_dalek::SigningKey::from_keypair_bytes(&keypair)
        .map_err(|_| s.malformed("secret key does not match its public key"))?;
    let derived = key.verifying_key();
    if derived.as_bytes() != &public || derived != outer_public.key {
        return Err(s.malformed("private and public parts describe different keys"));
    }
    Ok(SigningKey {
        key,
        comment,
        checkint: check1,
    })
}

impl PublicKey {
    /// Builds a key from its 32 raw bytes (rejects invalid curve points).
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, SigningError> {
        ed25519_dalek::VerifyingKey::from_bytes(bytes)
            .map(|key| Self { key })
            .map_err(|_| SigningError::Malformed {
                what: "ed25519 public key",
                detail: "not a valid curve point".into(),
            })
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        self.key.as_bytes()
    }

    /// The SSH wire encoding: string "ssh-ed25519" || string key.
    pub fn blob(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(51);
        put_string(&mut out, KEY_TYPE.as_bytes());
        put_string(&mut out, self.key.as_bytes());
        out
    }

    /// Parses the SSH wire encoding of an ed25519 public key.
    pub fn from_blob(blob: &[u8]) -> Result<Self, SigningError> {
        let mut r = Reader::new(blob, "ssh-ed25519 public key blob");
        let key_type = r.string(MAX_NAME)?;
        if key_type != KEY_TYPE.as_bytes() {
            return Err(SigningError::UnsupportedKeyType(
                String::from_utf8_lossy(key_type).into_owned(),
            ));
        }
        let raw: [u8; 32] = r
            .string(32)?
            .try_into()
            .map_err(|_| r.malformed("ed25519 public key is not 32 bytes"))?;
        r.finish()?;
        Self::from_bytes(&raw)
    }

    /// `ssh-ed25519 AAAA... comment`, as in a `.pub` file (without the
    /// trailing newline). Control characters in the comment become spaces
    /// so the result is always a single line.
    pub fn to_openssh(&self, comment: &str) -> String {
        let mut line = format!("{KEY_TYPE} {}", base64::encode(&self.blob()));
        let comment: String = comment
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let comment = comment.trim();
        if !comment.is_empty() {
            line.push(' ');
            line.push_str(comment);
        }
        line
    }

    /// Parses `ssh-ed25519 AAAA... [comment]`. The comment is ignored.
    pub fn parse_openssh(line: &str) -> Result<Self, SigningError> {
        let mut fields = line.split_ascii_whitespace();
        let (Some(key_type), Some(encoded)) = (fields.next(), fields.next()) else {
            return Err(SigningError::Malformed {
                what: "public key line",
                detail: "expected `ssh-ed25519 AAAA... [comment]`".into(),
            });
        };
        if key_type != KEY_TYPE {
            return Err(SigningError::UnsupportedKeyType(key_type.to_owned()));
        }
        let blob = decode_key_base64(encoded)?;
        Self::from_blob(&blob)
    }

    /// `SHA256:` followed by unpadded base64 of SHA-256 of the key blob, as
    /// printed by `ssh-keygen -l`.
    pub fn fingerprint(&self) -> String {
        let encoded = base64::encode(&Sha256::digest(self.blob()));
        format!("SHA256:{}", encoded.trim_end_matches('='))
    }
}

fn decode_key_base64(encoded: &str) -> Result<Vec<u8>, SigningError> {
    if encoded.len() > MAX_KEY_BLOB * 2 {
        return Err(SigningError::Malformed {
            what: "public key",
            detail: "key text is too long".into(),
        });
    }
    base64::decode(encoded).ok_or_else(|| SigningError::Malformed {
        what: "public key",
        detail: "key is not valid base64".into(),
    })
}

/// The parsed contents of an SSHSIG blob.
struct ParsedSignature {
    public: PublicKey,
    namespace: Vec<u8>,
    reserved: Vec<u8>,
    hash_alg: String,
    signature: ed25519_dalek::Signature,
}

fn parse_signature(armored: &str) -> Result<ParsedSignature, SigningError> {
    let blob = dearmor(SIGNATURE_LABEL, armored)?;
    let mut r = Reader::new(&blob, "SSH signature");
    if r.bytes(SIG_MAGIC.len())? != SIG_MAGIC {
        return Err(r.malformed("missing SSHSIG magic"));
    }
    let version = r.u32()?;
    if version != SIG_VERSION {
        return Err(SigningError::UnsupportedVersion(version));
    }
    let public = PublicKey::from_blob(r.string(MAX_KEY_BLOB)?)?;
    let namespace = r.string(MAX_NAMESPACE)?.to_vec();
    let reserved = r.string(MAX_NAMESPACE)?.to_vec();
    let hash_alg = String::from_utf8_lossy(r.string(MAX_NAME)?).into_owned();
    let sig_blob = r.string(MAX_SIG_BLOB)?;
    // Like ssh-keygen, refuse trailing data rather than ignore it.
    r.finish()?;

    let mut s = Reader::new(sig_blob, "SSH signature");
    let sig_type = s.string(MAX_NAME)?;
    if sig_type != KEY_TYPE.as_bytes() {
        return Err(SigningError::UnsupportedKeyType(
            String::from_utf8_lossy(sig_type).into_owned(),
        ));
    }
    let raw: [u8; 64] = s
        .string(64)?
        .try_into()
        .map_err(|_| s.malformed("ed25519 signature is not 64 bytes"))?;
    s.finish()?;
    Ok(ParsedSignature {
        public,
        namespace,
        reserved,
        hash_alg,
        signature: ed25519_dalek::Signature::from_bytes(&raw),
    })
}

/// The bytes that are actually signed: "SSHSIG" || string namespace ||
/// string reserved || string hash_algorithm || string H(message).
fn signed_data(namespace: &[u8], reserved: &[u8], hash_alg: &str, hash: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SIG_MAGIC.len() + namespace.len() + hash.len() + 64);
    out.extend_from_slice(SIG_MAGIC);
    put_string(&mut out, namespace);
    put_string(&mut out, reserved);
    put_string(&mut out, hash_alg.as_bytes());
    put_string(&mut out, hash);
    out
}

/// Checks an armoured SSHSIG signature over `message` for `namespace` and
/// returns the first allowed-signers line (in file order) that lists the
/// signing key and whose `namespaces` option, if any, permits `namespace`.
///
/// Checks, in order: armour, magic, version 1, namespace, hash algorithm
/// (sha512 or sha256), key type ssh-ed25519, the ed25519 signature (strict
/// verification: canonical encodings, no small-order keys), and finally the
/// allowed signers.
pub fn verify(
    armored_sig: &str,
    namespace: &str,
    message: &[u8],
    allowed: &AllowedSigners,
) -> Result<Verified, SigningError> {
    verify_inner(armored_sig, namespace, message, allowed, None)
}

/// Like [`verify`], but only lines whose principal patterns match
/// `principal` count, as with `ssh-keygen -Y verify -I principal`.
pub fn verify_for_principal(
    armored_sig: &str,
    namespace: &str,
    message: &[u8],
    allowed: &AllowedSigners,
    principal: &str,
) -> Result<Verified, SigningError> {
    verify_inner(armored_sig, namespace, message, allowed, Some(principal))
}

fn verify_inner(
    armored_sig: &str,
    namespace: &str,
    message: &[u8],
    allowed: &AllowedSigners,
    principal: Option<&str>,
) -> Result<Verified, SigningError> {
    if namespace.is_empty() {
        return Err(SigningError::EmptyNamespace);
    }
    let sig = parse_signature(armored_sig)?;
    if sig.namespace != namespace.as_bytes() {
        return Err(SigningError::NamespaceMismatch {
            expected: namespace.to_owned(),
            found: String::from_utf8_lossy(&sig.namespace).into_owned(),
        });
    }
    let hash = match sig.hash_alg.as_str() {
        "sha512" => Sha512::digest(message).to_vec(),
        "sha256" => Sha256::digest(message).to_vec(),
        other => return Err(SigningError::UnsupportedHash(other.to_owned())),
    };
    // The reserved field is signed as it appears in the blob (OpenSSH
    // ignores its contents but it is still covered by the signature).
    let data = signed_data(&sig.namespace, &sig.reserved, &sig.hash_alg, &hash);
    sig.public
        .key
        .verify_strict(&data, &sig.signature)
        .map_err(|_| SigningError::BadSignature)?;

    let fingerprint = sig.public.fingerprint();
    match allowed.find(&sig.public, namespace, principal) {
        allowed::Lookup::Found(entry) => Ok(Verified {
            principal: principal.unwrap_or(entry.principals()).to_owned(),
            fingerprint,
        }),
        allowed::Lookup::NamespaceNotPermitted => Err(SigningError::NamespaceNotPermitted {
            fingerprint,
            namespace: namespace.to_owned(),
        }),
        allowed::Lookup::Absent => Err(match principal {
            Some(p) => SigningError::PrincipalNotAllowed {
                fingerprint,
                principal: p.to_owned(),
            },
            None => SigningError::NotAllowed { fingerprint },
        }),
    }
}

/// PEM-like armour with base64 lines 70 characters wide, each line ending in
/// a newline, as OpenSSH's `sshbuf_dtob64(.., wrap=1)` writes it.
fn armor(label: &str, blob: &[u8]) -> String {
    let encoded = base64::encode(blob);
    let mut out = String::with_capacity(encoded.len() + encoded.len() / 70 + 80);
    out.push_str(&format!("-----BEGIN {label}-----\n"));
    // base64 output is ASCII, so every byte offset is a char boundary and
    // `split_at` cannot panic.
    let mut rest = encoded.as_str();
    while !rest.is_empty() {
        let (line, tail) = rest.split_at(rest.len().min(70));
        out.push_str(line);
        out.push('\n');
        rest = tail;
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Undoes [`armor`]: surrounding whitespace is allowed, the body may be
/// wrapped at any width (whitespace is ignored), nothing else may appear.
fn dearmor(label: &'static str, text: &str) -> Result<Vec<u8>, SigningError> {
    let bad = || SigningError::Armor { label };
    if text.len() > MAX_ARMOR_LEN {
        return Err(bad());
    }
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let body = text
        .trim()
        .strip_prefix(begin.as_str())
        .and_then(|t| t.strip_suffix(end.as_str()))
        .ok_or_else(bad)?;
    if body.contains('-') {
        return Err(bad());
    }
    let blob = base64::decode(body).ok_or_else(bad)?;
    if blob.is_empty() {
        return Err(bad());
    }
    Ok(blob)
}

/// Overwrites a buffer that held secret material. `black_box` keeps the
/// writes from being optimised away as dead stores.
fn wipe(buf: &mut [u8]) {
    buf.fill(0);
    std::hint::black_box(buf);
}

#[cfg(test)]
mod tests;

//! Everything that can go wrong reading keys and checking signatures.

use super::fingerprint::Fingerprint;

/// An OpenPGP failure: one line naming what was wrong (which packet, which
/// offset or line) and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenPgpError {
    /// ASCII armor that does not follow RFC 4880 section 6.2.
    #[error(
        "malformed ASCII armor at line {line}: {detail}; pass the file exactly as it was published"
    )]
    Armor { line: usize, detail: String },
    /// The armor checksum (CRC-24) does not match the decoded bytes.
    #[error("ASCII armor checksum mismatch (armor says {expected:06X}, data gives {actual:06X}); the file was altered in transit")]
    ArmorChecksum { expected: u32, actual: u32 },
    /// A packet's framing or contents are malformed.
    #[error("malformed OpenPGP packet {packet} at byte offset {offset}: {detail}; the data is corrupt or not OpenPGP")]
    Packet {
        packet: &'static str,
        offset: usize,
        detail: String,
    },
    /// The cleartext signature framework (an InRelease) is malformed.
    #[error("malformed cleartext-signed message at line {line}: {detail}; an InRelease must be exactly one `-----BEGIN PGP SIGNED MESSAGE-----` block and its signature")]
    Cleartext { line: usize, detail: String },
    /// A keyring with no key usable for checking signatures.
    #[error("the keyring holds no usable OpenPGP key ({detail}); pass a keyring exported with `gpg --export` (binary) or `gpg --export --armor`")]
    NoUsableKey { detail: String },
    /// The signature block holds no signature packet.
    #[error("no signature packet found ({detail}); pass the signature as published (Release.gpg, or the InRelease file)")]
    NoSignature { detail: String },
    /// A signature with a version other than 4.
    #[error("signature at byte offset {offset} is version {version}; only version 4 signatures are checked, as by gpgv")]
    UnsupportedSignatureVersion { offset: usize, version: u8 },
    /// MD5, SHA-1 or RIPEMD-160: refused for data signatures, as apt does.
    #[error("signature by {issuer} uses the weak digest {algorithm}, which apt refuses; re-sign the repository with SHA256 or SHA512 (`--digest-algo SHA512`)")]
    WeakDigest {
        issuer: String,
        algorithm: &'static str,
    },
    /// A digest algorithm this verifier does not implement.
    #[error("signature by {issuer} uses digest algorithm {algorithm}, which is not supported (SHA256, SHA384 and SHA512 are); re-sign with `--digest-algo SHA512`")]
    UnsupportedDigest { issuer: String, algorithm: u8 },
    /// The signing key's algorithm is not RSA or EdDSA.
    #[error("signature by {issuer} uses public-key algorithm {algorithm}, which is not supported (RSA and EdDSA are)")]
    UnsupportedAlgorithm { issuer: String, algorithm: u8 },
    /// The signature is not of the expected type (binary 0x00 / text 0x01).
    #[error(
        "signature by {issuer} has type 0x{found:02X}, not a document signature (0x00 or 0x01)"
    )]
    WrongSignatureType { issuer: String, found: u8 },
    /// The cleartext header names other digests than the signature uses.
    #[error(
        "signature by {issuer} uses {algorithm} but the message's `Hash:` header does not list it"
    )]
    HashHeaderMismatch {
        issuer: String,
        algorithm: &'static str,
    },
    /// No key in the keyring matches the signature's issuer.
    #[error("the signature was made by key {issuer}, which is not in the keyring; add the repository's key to the keyring (apt's Signed-By) if it is trusted")]
    UnknownKey { issuer: String },
    /// The key exists but may not sign data (key flags without "sign").
    #[error("key {key} may not sign data (its key flags do not include signing)")]
    NotSigningKey { key: Fingerprint },
    /// The signature verifies with a subkey that has no valid binding
    /// signature from its primary key.
    #[error("key {key} is a subkey without a valid binding signature from its primary key; it does not count for signing")]
    UnboundSubkey { key: Fingerprint },
    /// The cryptographic check failed (or the hash prefix differs).
    #[error("BAD signature by key {key}: {detail}; the signed data or the signature was altered")]
    BadSignature { key: Fingerprint, detail: String },
    /// The signing key had expired when the check ran.
    #[error("key {key} expired at {expired_at} (unix time); the repository must be re-signed with a current key, or the keyring updated")]
    KeyExpired { key: Fingerprint, expired_at: u64 },
    /// The signing key was revoked by its owner.
    #[error("key {key} is revoked; do not trust signatures by it")]
    KeyRevoked { key: Fingerprint },
    /// The signature had expired when the check ran.
    #[error("the signature by key {key} expired at {expired_at} (unix time); the repository must be re-signed")]
    SignatureExpired { key: Fingerprint, expired_at: u64 },
    /// The signature claims a creation time before its key existed, or in
    /// the future.
    #[error("the signature by key {key} has an impossible creation time {created} ({detail})")]
    BadCreationTime {
        key: Fingerprint,
        created: u32,
        detail: &'static str,
    },
    /// A critical subpacket this implementation does not understand.
    #[error("signature at byte offset {offset} has critical subpacket type {kind}, which is not understood; it must be refused (RFC 4880 5.2.3.1)")]
    UnknownCritical { offset: usize, kind: u8 },
}

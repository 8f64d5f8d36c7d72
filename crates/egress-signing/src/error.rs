use std::fmt;

/// Everything that can go wrong. Each message is one line that says what was
/// wrong and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SigningError {
    /// The operating system's random number generator failed.
    Random(String),
    /// The text is not a well-formed armoured block with this label.
    Armor { label: &'static str },
    /// The binary structure inside the armour or key text is malformed.
    Malformed { what: &'static str, detail: String },
    /// The private key is protected by a passphrase.
    EncryptedKey { cipher: String, kdf: String },
    /// A key or signature type other than ssh-ed25519.
    UnsupportedKeyType(String),
    /// An SSHSIG version other than 1.
    UnsupportedVersion(u32),
    /// An SSHSIG hash algorithm other than sha512 or sha256.
    UnsupportedHash(String),
    /// The caller asked to verify with an empty namespace.
    EmptyNamespace,
    /// The signature was made for another namespace.
    NamespaceMismatch { expected: String, found: String },
    /// The cryptographic check failed.
    BadSignature,
    /// A line of the allowed signers file could not be parsed.
    AllowedSigners { line: usize, detail: String },
    /// The signing key is not in the allowed signers file.
    NotAllowed { fingerprint: String },
    /// The signing key is not listed for the requested principal.
    PrincipalNotAllowed {
        fingerprint: String,
        principal: String,
    },
    /// The signing key is listed, but only for other namespaces.
    NamespaceNotPermitted {
        fingerprint: String,
        namespace: String,
    },
}

impl fmt::Display for SigningError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Random(e) => write!(
                f,
                "could not read the operating system's random number generator ({e}); \
                 retry, or create the key with SigningKey::from_seed"
            ),
            Self::Armor { label } => write!(
                f,
                "not an armoured {label}: expected `-----BEGIN {label}-----`, base64 lines and \
                 `-----END {label}-----`; pass the whole file unchanged"
            ),
            Self::Malformed { what, detail } => write!(
                f,
                "malformed {what}: {detail}; the data is corrupt or was not written by OpenSSH, \
                 regenerate it"
            ),
            Self::EncryptedKey { cipher, kdf } => write!(
                f,
                "encrypted keys are not supported (cipher `{cipher}`, kdf `{kdf}`); remove the \
                 passphrase from a copy with `ssh-keygen -p -N '' -f KEYFILE` or create a key \
                 with `ssh-keygen -t ed25519 -N ''`"
            ),
            Self::UnsupportedKeyType(t) => write!(
                f,
                "unsupported key type `{t}`: only ssh-ed25519 is supported; create a key with \
                 `ssh-keygen -t ed25519`"
            ),
            Self::UnsupportedVersion(v) => write!(
                f,
                "unsupported SSHSIG version {v}: only version 1 is supported; sign with \
                 `ssh-keygen -Y sign`"
            ),
            Self::UnsupportedHash(h) => write!(
                f,
                "unsupported SSHSIG hash algorithm `{h}`: only sha512 and sha256 are accepted; \
                 sign with `ssh-keygen -Y sign`"
            ),
            Self::EmptyNamespace => write!(
                f,
                "the namespace must not be empty; pass the namespace the signature was made for \
                 (for snapshots, SNAPSHOT_NAMESPACE)"
            ),
            Self::NamespaceMismatch { expected, found } => write!(
                f,
                "the signature is for namespace `{found}`, not `{expected}`; it was made for \
                 another purpose, sign again with `-n {expected}`"
            ),
            Self::BadSignature => write!(
                f,
                "the signature does not verify: the message or the signature was altered, or \
                 the signature belongs to other data"
            ),
            Self::AllowedSigners { line, detail } => write!(
                f,
                "allowed signers line {line}: {detail}; see ALLOWED SIGNERS in ssh-keygen(1)"
            ),
            Self::NotAllowed { fingerprint } => write!(
                f,
                "signing key {fingerprint} is not in the allowed signers file; add a line \
                 `PRINCIPAL ssh-ed25519 KEY` for it if it is trusted"
            ),
            Self::PrincipalNotAllowed {
                fingerprint,
                principal,
            } => write!(
                f,
                "signing key {fingerprint} is not listed for principal `{principal}` in the \
                 allowed signers file; add it for that principal if it is trusted"
            ),
            Self::NamespaceNotPermitted {
                fingerprint,
                namespace,
            } => write!(
                f,
                "signing key {fingerprint} is in the allowed signers file, but no line for it \
                 permits namespace `{namespace}`; add it to that line's namespaces=\"...\" option"
            ),
        }
    }
}

impl std::error::Error for SigningError {}

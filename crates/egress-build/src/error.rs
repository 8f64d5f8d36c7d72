//! Why a build did not write a snapshot, and what kind of failure that is
//! (the command line turns the kind into its exit code).

use crate::fetch::FetchError;
use egress_lock::LockError;
use egress_signing::SigningError;
use egress_snapshot::SnapshotError;
use egress_transcript::ClientError;
use std::io;
use std::path::PathBuf;

/// What kind of failure a [`BuildError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The options are wrong or contradict each other.
    Usage,
    /// An input file is unreadable or malformed.
    Input,
    /// The build itself could not be carried out (cannot write, an index
    /// unreachable after retries).
    Internal,
    /// The index does not serve what the locks pin; nothing was written.
    Refused,
    /// An upstream's signed index does not verify against the keyring
    /// given (apt's `InRelease` or `Release.gpg`); nothing was written.
    Unverified,
    /// `--exclude-newer` was given and an upstream lists no upload time
    /// for a file it would select: the cutoff cannot be kept.
    NoUploadTimes,
    /// `--base` does not verify against the trusted signers.
    BaseUnverified,
    /// The base's chain has a gap or a fork.
    ChainBroken,
    /// The layer would change bytes the base holds.
    LayerChangesBytes,
    /// A `--remove` names what the base does not serve.
    TombstoneAbsent,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// An option is wrong, or missing what it needs.
    #[error("{0}")]
    Usage(String),
    /// An input file (`what` is its flag) could not be read.
    #[error("{what} {}: {cause}", .path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        cause: io::Error,
    },
    /// A tarball given with `--npm-dist` is not a usable npm package.
    #[error("--npm-dist {}: {why}", .path.display())]
    Tarball { path: PathBuf, why: String },
    #[error("{what} {}: not UTF-8 text", .path.display())]
    NotUtf8 { what: &'static str, path: PathBuf },
    #[error("--sign-key {}: {cause}", .path.display())]
    SignKey { path: PathBuf, cause: SigningError },
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The inputs contradict each other (one file pinned twice, a local
    /// file that differs from the pinned one, an unusable `--out`).
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The snapshot builder rejected a file or the whole.
    #[error(transparent)]
    Rejected(SnapshotError),
    /// Registry keys or signatures could not be replayed.
    #[error(transparent)]
    Replay(SnapshotError),
    /// The snapshot could not be written at `--out`.
    #[error(transparent)]
    Write(SnapshotError),
    /// Anything else that could not be written.
    #[error("cannot {what} {}: {cause}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        cause: io::Error,
    },
    /// Could not get an answer from an index or registry, even after retries.
    #[error("cannot fetch {0}")]
    Fetch(String),
    /// The index does not serve what the locks pin.
    #[error("{0}")]
    Refused(String),
    /// A signed index does not verify against the keyring given.
    #[error("{0}")]
    Unverified(String),
    /// A universe file's line is not a project name with an optional
    /// specifier.
    #[error("{} line {line}: {why}", .path.display())]
    Universe {
        path: PathBuf,
        line: usize,
        why: String,
    },
    /// `--exclude-newer` was given and the upstream lists no upload time.
    #[error("{0}")]
    NoUploadTimes(String),
    /// `--base` does not verify.
    #[error("--base {}: {why}", .path.display())]
    BaseUnverified { path: PathBuf, why: String },
    /// `--base`'s chain has a gap or a fork.
    #[error("--base {}: {why}", .path.display())]
    ChainBroken { path: PathBuf, why: String },
}

impl BuildError {
    pub fn kind(&self) -> Kind {
        match self {
            Self::Usage(_) => Kind::Usage,
            Self::BaseUnverified { .. } => Kind::BaseUnverified,
            Self::ChainBroken { .. } => Kind::ChainBroken,
            Self::Rejected(SnapshotError::LayerChangesBytes { .. }) => Kind::LayerChangesBytes,
            Self::Rejected(SnapshotError::Tombstone(_)) => Kind::TombstoneAbsent,
            Self::Read { .. }
            | Self::NotUtf8 { .. }
            | Self::Tarball { .. }
            | Self::SignKey { .. }
            | Self::Lock(_)
            | Self::Conflict(_)
            | Self::Client(_)
            | Self::Rejected(_)
            | Self::Universe { .. } => Kind::Input,
            Self::Write(SnapshotError::NotASnapshotDir(_) | SnapshotError::Symlink(_)) => {
                Kind::Input
            }
            Self::Replay(_) | Self::Write(_) | Self::Io { .. } | Self::Fetch(_) => Kind::Internal,
            Self::Refused(_) => Kind::Refused,
            Self::Unverified(_) => Kind::Unverified,
            Self::NoUploadTimes(_) => Kind::NoUploadTimes,
        }
    }
}

impl From<FetchError> for BuildError {
    fn from(e: FetchError) -> Self {
        match e {
            FetchError::Refused(m) => Self::Refused(m),
            FetchError::Failed(m) => Self::Fetch(m),
            FetchError::Mismatch { expected, actual } => {
                Self::Refused(format!("expected sha256 {expected}, got {actual}"))
            }
            // A git blob id names itself (`git blob <hex>`); an SRI string
            // is an integrity.
            FetchError::IntegrityMismatch { expected, actual }
                if expected.starts_with("git blob") =>
            {
                Self::Refused(format!("expected {expected}, got {actual}"))
            }
            FetchError::IntegrityMismatch { expected, actual } => {
                Self::Refused(format!("expected integrity {expected}, got {actual}"))
            }
        }
    }
}

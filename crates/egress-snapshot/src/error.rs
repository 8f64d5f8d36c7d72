//! [`SnapshotError`]: every way building, writing, loading or verifying a
//! snapshot can fail. Each message is one line naming the problem and what to
//! do about it.

use crate::manifest::ManifestError;
use egress_artifacts::ArtifactError;
use egress_model::Sha256Digest;
use egress_signing::SigningError;
use std::fmt;
use std::io;
use std::path::PathBuf;

#[derive(Debug)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A distribution handed to the builder cannot be served safely.
    InvalidDist { filename: String, reason: String },
    /// Two distributions with one filename.
    DuplicateDist(String),
    /// A wheel's METADATA could not be read.
    WheelMetadata {
        filename: String,
        source: ArtifactError,
    },
    /// A wheel's METADATA names another project or version than its filename.
    MetadataMismatch {
        filename: String,
        field: &'static str,
        found: String,
    },
    /// The index path given to the builder is not `/seg/.../`.
    IndexPath(String),
    /// npm content handed to the builder cannot be served safely (bad name
    /// or version, integrity that does not match, no registry URL).
    Npm(String),
    /// An apt file cannot be served as given.
    Apt(String),
    /// A cargo file cannot be served as given.
    Cargo(String),
    /// A Hugging Face Hub file cannot be served as given.
    Hf(String),
    /// A filesystem operation failed.
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// A file that must be a regular file inside the snapshot is a symlink.
    Symlink(PathBuf),
    /// A path that must be a regular file (or directory) is something else.
    NotRegular(PathBuf),
    /// A text file (signature, allowed signers) is not UTF-8.
    NotUtf8(PathBuf),
    /// `MANIFEST` or `SNAPSHOT.json` is malformed.
    Manifest(ManifestError),
    /// `MANIFEST` does not list `SNAPSHOT.json`.
    NoSnapshotJson,
    /// `SNAPSHOT.json` does not have the digest `MANIFEST` lists for it.
    SnapshotJsonDigest {
        listed: Sha256Digest,
        actual: Sha256Digest,
    },
    /// A blob is missing, corrupt or not a regular file; all are named.
    Blobs(Vec<BlobProblem>),
    /// The parts of the snapshot disagree with each other.
    Inconsistent(String),
    /// The target of `write_dir` holds something other than a snapshot.
    NotASnapshotDir(PathBuf),
    /// `verify_signature` on a snapshot without `MANIFEST.sig`.
    Unsigned,
    /// The signature over `MANIFEST` does not verify.
    Signature(SigningError),
    /// A layer would serve other bytes under a name its parent holds.
    LayerChangesBytes {
        name: String,
        parent: Sha256Digest,
        layer: Sha256Digest,
    },
    /// A `--remove` names a project version the parent does not serve, or
    /// cannot be read.
    Tombstone(String),
    /// The base of a layer cannot be built on (unsigned, on another
    /// filesystem, serving what a layer cannot carry).
    Base(String),
}

/// One bad blob found by `Snapshot::load_dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobProblem {
    /// Path relative to the snapshot root, `blobs/sha256/<hex>`.
    pub path: String,
    pub kind: BlobProblemKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobProblemKind {
    Missing,
    /// The file's bytes hash to `actual`, not to the listed digest.
    Corrupt {
        actual: Sha256Digest,
    },
    Symlink,
    NotAFile,
    Unreadable(String),
}

impl fmt::Display for BlobProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = &self.path;
        match &self.kind {
            BlobProblemKind::Missing => write!(f, "{path} is missing"),
            BlobProblemKind::Corrupt { actual } => {
                write!(f, "{path} is corrupt (its sha256 is {actual})")
            }
            BlobProblemKind::Symlink => write!(f, "{path} is a symlink"),
            BlobProblemKind::NotAFile => write!(f, "{path} is not a regular file"),
            BlobProblemKind::Unreadable(e) => write!(f, "{path} is unreadable ({e})"),
        }
    }
}

const REBUILD: &str = "restore the snapshot directory from its original or rebuild it";

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidDist { filename, reason } => {
                write!(f, "cannot add distribution {filename:?}: {reason}; rename or drop the file")
            }
            Self::DuplicateDist(name) => {
                write!(f, "distribution {name:?} was added twice; add each file once")
            }
            Self::WheelMetadata { filename, source } => write!(
                f,
                "cannot read METADATA from wheel {filename:?}: {source}; the wheel is broken, rebuild or drop it"
            ),
            Self::MetadataMismatch { filename, field, found } => write!(
                f,
                "wheel {filename:?} has METADATA {field} {found:?}, which does not match its filename; the wheel is mislabelled, drop it"
            ),
            Self::Npm(m) => write!(f, "npm: {m}"),
            Self::Apt(m) => write!(f, "apt: {m}"),
            Self::Cargo(m) => write!(f, "cargo: {m}"),
            Self::Hf(m) => write!(f, "hf: {m}"),
            Self::IndexPath(p) => write!(
                f,
                "index path {p:?} must start and end with '/' and hold only letters, digits, '-', '_' and '.' between them (e.g. \"/simple/\")"
            ),
            Self::Io { action, path, source } => {
                write!(f, "cannot {action} {}: {source}; check the path and its permissions", path.display())
            }
            Self::Symlink(p) => write!(
                f,
                "{} is a symlink; a snapshot must hold only regular files, replace the link with the file it points to",
                p.display()
            ),
            Self::NotRegular(p) => write!(f, "{} is not a regular file or directory; {REBUILD}", p.display()),
            Self::NotUtf8(p) => write!(f, "{} is not UTF-8 text; {REBUILD}", p.display()),
            Self::Manifest(e) => write!(f, "{e}; {REBUILD}"),
            Self::NoSnapshotJson => write!(f, "MANIFEST does not list SNAPSHOT.json; {REBUILD}"),
            Self::SnapshotJsonDigest { listed, actual } => write!(
                f,
                "SNAPSHOT.json has sha256 {actual} but MANIFEST lists {listed}; {REBUILD}"
            ),
            Self::Blobs(problems) => {
                write!(f, "{} bad blob(s): ", problems.len())?;
                for (i, p) in problems.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{p}")?;
                }
                write!(f, "; {REBUILD}")
            }
            Self::Inconsistent(why) => write!(f, "inconsistent snapshot: {why}; {REBUILD}"),
            Self::NotASnapshotDir(p) => write!(
                f,
                "{} exists, is not empty and holds no snapshot (no MANIFEST); choose an empty or new directory",
                p.display()
            ),
            Self::Unsigned => write!(f, "the snapshot has no MANIFEST.sig; build it with a signing key"),
            Self::Signature(e) => write!(f, "MANIFEST.sig does not verify: {e}"),
            Self::LayerChangesBytes { name, parent, layer } => write!(
                f,
                "{name} would change bytes: the base holds sha256 {parent}, this build has {layer}; a layer only adds (remove the old version with --remove, and publish the new bytes under a new version)"
            ),
            Self::Tombstone(m) => write!(f, "--remove {m}"),
            Self::Base(m) => write!(f, "--base: {m}"),
        }
    }
}

impl std::error::Error for SnapshotError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::WheelMetadata { source, .. } => Some(source),
            Self::Io { source, .. } => Some(source),
            Self::Manifest(e) => Some(e),
            Self::Signature(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ManifestError> for SnapshotError {
    fn from(e: ManifestError) -> Self {
        Self::Manifest(e)
    }
}

impl SnapshotError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

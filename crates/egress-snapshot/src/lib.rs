//! The snapshot format shared by the mirror, its builder and the suite.
//!
//! A snapshot is a set of blobs named by their SHA-256, a `MANIFEST` in the
//! exact `sha256sum` output format listing every blob and `SNAPSHOT.json`, and
//! an OpenSSH signature over the `MANIFEST` bytes. `SNAPSHOT.json` maps every
//! path the mirror serves to the blob it serves there, so "nothing else is
//! served" is checkable from outside. The snapshot ID is the SHA-256 of the
//! `MANIFEST` bytes.
//!
//! [`SnapshotBuilder`] makes a snapshot from distribution files, pre-rendering
//! every page so that the mirror only ever copies blobs; [`Snapshot`] writes
//! itself to and loads itself from a directory, verifying every byte;
//! [`verify`] checks a directory offline and names every problem.

pub mod apt;
mod blobs;
mod build;
pub mod cargo;
pub mod chain;
mod consistency;
mod dir;
mod error;
#[cfg(unix)]
mod fingerprint;
pub mod hf;
mod index;
#[cfg(unix)]
mod layer;
pub mod manifest;
mod nofollow;
pub mod npm;
pub mod pool;
#[cfg(unix)]
mod sealed;
mod snapshot;
#[cfg(unix)]
mod store;
mod stream;
pub mod verify;
#[cfg(unix)]
mod write;

pub use blobs::BlobStore;
pub use build::{SnapshotBuilder, OCTET_STREAM, TEXT_PLAIN};
pub use dir::{ALLOWED_SIGNERS_FILE, MANIFEST_FILE, SIGNATURE_FILE};
pub use error::{BlobProblem, BlobProblemKind, SnapshotError};
#[cfg(unix)]
pub use fingerprint::RACY_SECS;
pub use index::{ServedAt, ServedIndex};
#[cfg(unix)]
pub use layer::{flatten, BaseSummary};
pub use manifest::{
    Layer, Manifest, ManifestError, Selection, ServedEntry, SnapshotDoc, Tombstone,
};
pub use nofollow::{open_no_follow, read_no_follow, NoFollowError};
pub use npm::{NpmMaintainer, NpmVersionMeta, NPM_ABBREVIATED, NPM_JSON, NPM_KEYS_PATH};
#[cfg(unix)]
pub use sealed::{
    probe as probe_sealed_copies, SealedBlob, ZeroCopyUsage, DEFAULT_ZERO_COPY_BUDGET,
    MAX_SEALED_COPIES,
};
pub use snapshot::{is_servable_path, Snapshot};
#[cfg(unix)]
pub use store::{StoredSnapshot, VerifiedBlob, SMALL_BLOB_MAX};
#[cfg(unix)]
pub use write::Written;

/// Where distribution files are served: `/files/<sha256 hex>/<filename>`.
/// Addressed by digest (P1), so a path can never come to mean other bytes.
pub const FILES_PREFIX: &str = "/files/";

/// `1.2 MB` style, decimal units as download tools print them.
pub fn human_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

/// Where the mirror publishes its snapshot's evidence, relative to its origin.
pub mod well_known {
    pub const DIR: &str = "/.well-known/egress-mirror/";
    pub const MANIFEST: &str = "/.well-known/egress-mirror/MANIFEST";
    pub const SIGNATURE: &str = "/.well-known/egress-mirror/MANIFEST.sig";
    pub const SNAPSHOT_JSON: &str = "/.well-known/egress-mirror/SNAPSHOT.json";
    pub const ALLOWED_SIGNERS: &str = "/.well-known/egress-mirror/allowed_signers";
    /// Instance attestation: `GET {ATTEST}<nonce as lowercase hex>` answers
    /// the nonce with a statement signed by the instance key (see
    /// `egress_signing::instance`). Not part of the snapshot: a mirror that
    /// offers it says so by answering.
    pub const ATTEST: &str = "/.well-known/egress-mirror/attest/";
}

//! The snapshot format shared by the mirror, its builder and the suite.
//!
//! A snapshot is a set of blobs named by their SHA-256, a `MANIFEST` in the
//! exact `sha256sum` output format listing every blob and `SNAPSHOT.json`, and
//! an OpenSSH signature over the `MANIFEST` bytes. `SNAPSHOT.json` maps every
//! path the mirror serves to the blob it serves there, so "nothing else is
//! served" is checkable from outside. The snapshot ID is the SHA-256 of the
//! `MANIFEST` bytes.

pub mod manifest;

pub use manifest::{Manifest, ManifestError, ServedEntry, SnapshotDoc};

/// Where the mirror publishes its snapshot's evidence, relative to its origin.
pub mod well_known {
    pub const DIR: &str = "/.well-known/egress-mirror/";
    pub const MANIFEST: &str = "/.well-known/egress-mirror/MANIFEST";
    pub const SIGNATURE: &str = "/.well-known/egress-mirror/MANIFEST.sig";
    pub const SNAPSHOT_JSON: &str = "/.well-known/egress-mirror/SNAPSHOT.json";
    pub const ALLOWED_SIGNERS: &str = "/.well-known/egress-mirror/allowed_signers";
}

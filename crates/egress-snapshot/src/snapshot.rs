//! [`Snapshot`]: a whole snapshot in memory, and its consistency rules.

use crate::consistency::check_structure;
use crate::error::{BlobProblem, BlobProblemKind, SnapshotError};
use crate::manifest::{blob_path, Manifest, SnapshotDoc, SNAPSHOT_JSON, SNAPSHOT_SCHEMA};
use crate::BlobStore;
use egress_model::Sha256Digest;
use egress_signing::{AllowedSigners, Verified, SNAPSHOT_NAMESPACE};

/// A snapshot: the signed `MANIFEST`, `SNAPSHOT.json` and every blob.
///
/// Made by [`crate::SnapshotBuilder::build`] or [`Snapshot::load_dir`], both
/// of which return only snapshots that pass [`Snapshot::check`]. The fields are
/// public so the suite can inspect (and tests can tamper with) them; anyone
/// serving a snapshot they assembled themselves should call `check` first.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub manifest: Manifest,
    /// The exact published `MANIFEST` bytes (what the signature covers).
    pub manifest_bytes: Vec<u8>,
    pub doc: SnapshotDoc,
    /// The exact published `SNAPSHOT.json` bytes (what `MANIFEST` lists).
    pub doc_bytes: Vec<u8>,
    /// Armoured SSHSIG over `manifest_bytes`, namespace
    /// [`SNAPSHOT_NAMESPACE`].
    pub signature: Option<String>,
    /// One allowed-signers line (with newline) for the signing key.
    pub allowed_signers: Option<String>,
    pub blobs: BlobStore,
}

impl Snapshot {
    /// The snapshot ID: the SHA-256 of the `MANIFEST` bytes.
    pub fn id(&self) -> Sha256Digest {
        self.manifest.id()
    }

    /// Checks the signature over the `MANIFEST` bytes against `allowed`,
    /// which must come from somewhere the verifier trusts (not from the
    /// snapshot itself, which anyone could have re-signed).
    pub fn verify_signature(&self, allowed: &AllowedSigners) -> Result<Verified, SnapshotError> {
        let sig = self.signature.as_deref().ok_or(SnapshotError::Unsigned)?;
        egress_signing::verify(sig, SNAPSHOT_NAMESPACE, &self.manifest_bytes, allowed)
            .map_err(SnapshotError::Signature)
    }

    /// Checks that the parts agree, so that whatever a mirror serves from
    /// this snapshot is exactly what the published `MANIFEST` and
    /// `SNAPSHOT.json` say:
    ///
    /// - `manifest_bytes` is the rendering of `manifest`, `doc_bytes` parses
    ///   to `doc` and has the digest `MANIFEST` lists for `SNAPSHOT.json`;
    /// - every other `MANIFEST` entry is `blobs/sha256/<its own digest>` and
    ///   that blob is in the store (whose bytes match by construction);
    /// - every served entry has a safe, unique path and content type, a path
    ///   has one entry, or exactly an HTML and a JSON one (PEP 691), or
    ///   exactly a full and an abbreviated npm packument (negotiated), no
    ///   entry shadows the evidence documents, and its blob is listed;
    /// - every listed blob is served somewhere (nothing unaccounted for);
    /// - `allowed_signers`, if present, is the blob served at its well-known
    ///   path.
    pub fn check(&self) -> Result<(), SnapshotError> {
        let bad = |why: String| Err(SnapshotError::Inconsistent(why));
        if !self.manifest.renders_as(&self.manifest_bytes) {
            return bad("MANIFEST bytes are not the rendering of the parsed MANIFEST".into());
        }
        let listed = self
            .manifest
            .get(SNAPSHOT_JSON)
            .ok_or(SnapshotError::NoSnapshotJson)?;
        let actual = Sha256Digest::of(&self.doc_bytes);
        if listed != actual {
            return Err(SnapshotError::SnapshotJsonDigest { listed, actual });
        }
        // Canonical bytes (what the builder writes) parse back to the
        // document they render (`canonical_json_is_the_documents_serialization`),
        // so comparing them as they are rendered is enough; other bytes
        // (a document written by something else) are parsed and compared.
        if self.doc.is_canonical_json(&self.doc_bytes) {
            // What parsing them would refuse.
            if self.doc.schema != SNAPSHOT_SCHEMA {
                let why = format!("unknown schema {:?}", self.doc.schema);
                return Err(crate::ManifestError::Snapshot(why).into());
            }
        } else {
            let mut parsed = SnapshotDoc::parse(&self.doc_bytes)?;
            let mut doc = self.doc.clone();
            parsed.served.sort();
            doc.served.sort();
            if parsed != doc {
                return bad("SNAPSHOT.json bytes do not say what the parsed document says".into());
            }
        }
        self.check_parts()
    }

    /// The rules of [`Snapshot::check`] over the parsed documents and the
    /// store, taking the bytes to say what the documents say: for
    /// [`SnapshotBuilder::build`](crate::SnapshotBuilder::build), which has
    /// just rendered them (and whose snapshot [`Snapshot::write_dir`]
    /// checks in full before writing it).
    pub(crate) fn check_parts(&self) -> Result<(), SnapshotError> {
        let bad = |why: String| Err(SnapshotError::Inconsistent(why));
        let listed = check_structure(&self.manifest, &self.doc, self.allowed_signers.as_deref())?;
        let mut missing: Vec<BlobProblem> = listed
            .iter()
            .filter(|d| !self.blobs.contains(d))
            .map(|d| BlobProblem {
                path: blob_path(d),
                kind: BlobProblemKind::Missing,
            })
            .collect();
        if let (false, Some(why)) = (missing.is_empty(), self.blobs.write_error()) {
            return bad(format!("the blob store could not hold every blob: {why}"));
        }
        if !missing.is_empty() {
            missing.sort_by(|a, b| a.path.cmp(&b.path));
            return Err(SnapshotError::Blobs(missing));
        }
        Ok(())
    }
}

/// `/` followed by visible ASCII other than `?` and `#`: what a request path
/// can be after the mirror strips the query, matched byte for byte.
pub fn is_servable_path(path: &str) -> bool {
    path.starts_with('/')
        && path
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'?' && b != b'#')
}

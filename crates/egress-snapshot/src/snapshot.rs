//! [`Snapshot`]: a whole snapshot in memory, and its consistency rules.

use crate::error::{BlobProblem, BlobProblemKind, SnapshotError};
use crate::manifest::{blob_path, Manifest, SnapshotDoc, SNAPSHOT_JSON};
use crate::{well_known, BlobStore};
use egress_model::Sha256Digest;
use egress_signing::{AllowedSigners, Verified, SNAPSHOT_NAMESPACE};
use egress_simple::{HTML_V1, JSON_V1};
use std::collections::{BTreeMap, BTreeSet};

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
    ///   has one entry or exactly an HTML and a JSON one (negotiated), no
    ///   entry shadows the evidence documents, and its blob is listed;
    /// - every listed blob is served somewhere (nothing unaccounted for);
    /// - `allowed_signers`, if present, is the blob served at its well-known
    ///   path.
    pub fn check(&self) -> Result<(), SnapshotError> {
        let bad = |why: String| Err(SnapshotError::Inconsistent(why));
        if self.manifest_bytes != self.manifest.render().as_bytes() {
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
        let mut parsed = SnapshotDoc::parse(&self.doc_bytes)?;
        let mut doc = self.doc.clone();
        parsed.served.sort();
        doc.served.sort();
        if parsed != doc {
            return bad("SNAPSHOT.json bytes do not say what the parsed document says".into());
        }

        let mut listed_blobs = BTreeSet::new();
        let mut missing = Vec::new();
        for (path, digest) in self.manifest.entries() {
            if path == SNAPSHOT_JSON {
                continue;
            }
            if path != blob_path(&digest) {
                return bad(format!("MANIFEST entry {path:?} is neither SNAPSHOT.json nor blobs/sha256/<its sha256>"));
            }
            if !self.blobs.contains(&digest) {
                missing.push(BlobProblem {
                    path: path.to_string(),
                    kind: BlobProblemKind::Missing,
                });
            }
            listed_blobs.insert(digest);
        }
        if !missing.is_empty() {
            return Err(SnapshotError::Blobs(missing));
        }

        let mut by_path: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut served_blobs = BTreeSet::new();
        for e in &self.doc.served {
            if !is_servable_path(&e.path) {
                return bad(format!(
                    "served path {:?} is not an origin-form path without query or fragment",
                    e.path
                ));
            }
            if [
                well_known::MANIFEST,
                well_known::SIGNATURE,
                well_known::SNAPSHOT_JSON,
            ]
            .contains(&e.path.as_str())
            {
                return bad(format!(
                    "served path {:?} would shadow the snapshot's own evidence",
                    e.path
                ));
            }
            let ct_ok = e.content_type.contains('/')
                && e.content_type.bytes().all(|b| (0x21..=0x7e).contains(&b));
            if !ct_ok {
                return bad(format!(
                    "content type {:?} of {:?} is not a bare media type",
                    e.content_type, e.path
                ));
            }
            if !listed_blobs.contains(&e.sha256) {
                return bad(format!(
                    "{:?} is served from blob {} which MANIFEST does not list",
                    e.path, e.sha256
                ));
            }
            served_blobs.insert(e.sha256);
            by_path.entry(&e.path).or_default().push(&e.content_type);
        }
        for (path, types) in &by_path {
            let negotiated = types.len() == 2
                && types.iter().any(|t| t.eq_ignore_ascii_case(HTML_V1))
                && types.iter().any(|t| t.eq_ignore_ascii_case(JSON_V1));
            if types.len() != 1 && !negotiated {
                return bad(format!("served path {path:?} has entries {types:?}; a path has one entry, or one {HTML_V1} and one {JSON_V1}"));
            }
        }
        if let Some(unserved) = listed_blobs.difference(&served_blobs).next() {
            return bad(format!(
                "blob {unserved} is listed in MANIFEST but served at no path"
            ));
        }

        if let Some(text) = &self.allowed_signers {
            let served = self
                .doc
                .served
                .iter()
                .find(|e| e.path == well_known::ALLOWED_SIGNERS)
                .and_then(|e| self.blobs.get(&e.sha256));
            if served.as_deref() != Some(text.as_bytes()) {
                return bad(format!(
                    "allowed_signers differs from the blob served at {}",
                    well_known::ALLOWED_SIGNERS
                ));
            }
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

//! The consistency rules a snapshot's evidence documents must satisfy among
//! themselves, for [`Snapshot::check`](crate::Snapshot::check) (in memory,
//! which then also checks that every blob is held). The per-entry and
//! per-path rules are [`IndexBuilder`]'s, which
//! [`StoredSnapshot::open`](crate::StoredSnapshot::open) (which reads no
//! blob) applies as it reads `SNAPSHOT.json`: one place for both.

use crate::error::SnapshotError;
use crate::index::IndexBuilder;
use crate::manifest::{Manifest, SnapshotDoc, SNAPSHOT_JSON};
use crate::stream::lower_hex;
use crate::well_known;
use egress_model::Sha256Digest;

/// The consistency rules of [`Snapshot::check`](crate::Snapshot::check)
/// that do not need blob bytes, over the parsed documents (whose bytes the
/// caller has compared with them); keep the two in step. Returns the
/// listed blob digests, sorted.
///
/// The served entries go through the same [`IndexBuilder`] as
/// [`StoredSnapshot::open`](crate::StoredSnapshot::open)'s (sorted tables,
/// no hash set or map of a million strings), which names the first entry
/// that breaks a rule in the same words.
pub(crate) fn check_structure(
    manifest: &Manifest,
    doc: &SnapshotDoc,
    allowed_signers: Option<&str>,
) -> Result<Vec<Sha256Digest>, SnapshotError> {
    let bad = |why: String| Err(SnapshotError::Inconsistent(why));
    let mut listed = Vec::with_capacity(manifest.len());
    for (path, digest) in manifest.entries() {
        if path == SNAPSHOT_JSON {
            continue;
        }
        // The only files ever opened under the root are these blob paths
        // (and the fixed evidence files), whatever MANIFEST says.
        // (`path == blob_path(&digest)`, without a string per entry.)
        if path.strip_prefix("blobs/sha256/").and_then(lower_hex) != Some(digest) {
            return bad(format!(
                "MANIFEST entry {path:?} is neither SNAPSHOT.json nor blobs/sha256/<its sha256>"
            ));
        }
        listed.push(digest);
    }
    listed.sort_unstable();
    listed.dedup();

    // Each entry's path, content type and listed blob; then, over them
    // all, the entries of each path and that every listed blob is served.
    let mut index = IndexBuilder::new(listed);
    for e in &doc.served {
        index
            .push(&e.path, &e.content_type, &e.sha256)
            .map_err(SnapshotError::Inconsistent)?;
    }
    let index = index.finish().map_err(SnapshotError::Inconsistent)?;
    if let Some(text) = allowed_signers {
        let served = doc
            .served
            .iter()
            .find(|e| e.path == well_known::ALLOWED_SIGNERS)
            .map(|e| e.sha256);
        if served != Some(Sha256Digest::of(text.as_bytes())) {
            return bad(format!(
                "allowed_signers differs from the blob served at {}",
                well_known::ALLOWED_SIGNERS
            ));
        }
    }
    Ok(index.into_blobs())
}

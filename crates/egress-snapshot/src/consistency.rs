//! The consistency rules a snapshot's evidence documents must satisfy among
//! themselves: one place, used by [`Snapshot::check`](crate::Snapshot::check)
//! (in memory, which then also checks blob bytes) and by
//! [`StoredSnapshot::open`](crate::StoredSnapshot::open) (which reads no blob).

use crate::error::SnapshotError;
use crate::manifest::{blob_path, Manifest, SnapshotDoc, SNAPSHOT_JSON};
use crate::npm::{NPM_ABBREVIATED, NPM_JSON};
use crate::{is_servable_path, well_known};
use egress_model::Sha256Digest;
use egress_simple::{HTML_V1, JSON_V1};
use std::collections::{BTreeMap, HashSet};

/// The consistency rules of [`Snapshot::check`](crate::Snapshot::check)
/// that do not need blob bytes; keep the two in step. Returns the listed
/// blob digests.
pub(crate) fn check_structure(
    manifest: &Manifest,
    manifest_bytes: &[u8],
    doc: &SnapshotDoc,
    allowed_signers: Option<&str>,
) -> Result<HashSet<Sha256Digest>, SnapshotError> {
    let bad = |why: String| Err(SnapshotError::Inconsistent(why));
    if manifest_bytes != manifest.render().as_bytes() {
        return bad("MANIFEST bytes are not the rendering of the parsed MANIFEST".into());
    }
    let mut listed = HashSet::new();
    for (path, digest) in manifest.entries() {
        if path == SNAPSHOT_JSON {
            continue;
        }
        // The only files ever opened under the root are these blob paths
        // (and the fixed evidence files), whatever MANIFEST says.
        if path != blob_path(&digest) {
            return bad(format!(
                "MANIFEST entry {path:?} is neither SNAPSHOT.json nor blobs/sha256/<its sha256>"
            ));
        }
        listed.insert(digest);
    }

    let mut by_path: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut served = HashSet::new();
    for e in &doc.served {
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
        if !listed.contains(&e.sha256) {
            return bad(format!(
                "{:?} is served from blob {} which MANIFEST does not list",
                e.path, e.sha256
            ));
        }
        served.insert(e.sha256);
        by_path.entry(&e.path).or_default().push(&e.content_type);
    }
    for (path, types) in &by_path {
        let pair = |a: &str, b: &str| {
            types.len() == 2
                && types.iter().any(|t| t.eq_ignore_ascii_case(a))
                && types.iter().any(|t| t.eq_ignore_ascii_case(b))
        };
        let negotiated = pair(HTML_V1, JSON_V1) || pair(NPM_JSON, NPM_ABBREVIATED);
        if types.len() != 1 && !negotiated {
            return bad(format!("served path {path:?} has entries {types:?}; a path has one entry, one {HTML_V1} and one {JSON_V1}, or one {NPM_JSON} and one {NPM_ABBREVIATED}"));
        }
    }
    if let Some(unserved) = listed.difference(&served).next() {
        return bad(format!(
            "blob {unserved} is listed in MANIFEST but served at no path"
        ));
    }
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
    Ok(listed)
}

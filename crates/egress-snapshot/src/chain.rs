//! Layers: a snapshot built on another (`snapshot build --base`).
//!
//! A layer is a whole snapshot: its `MANIFEST` lists, and its `served`
//! table maps, its entire view, so the mirror, `snapshot verify` and stock
//! tools read it as any other. What makes it a layer is signed in its
//! `SNAPSHOT.json` (`layer`, a [`Layer`]): the parent's ID and the digest
//! of the parent's `SNAPSHOT.json`, its depth, and the files it removed
//! (tombstones). Three rules hold a chain together:
//!
//! - **The parent's evidence travels with the layer.** Every ancestor's
//!   `MANIFEST`, `MANIFEST.sig` and `SNAPSHOT.json` are blobs of the layer,
//!   served under [`CHAIN_DIR`]`<id>/`; so anyone holding the layer, or
//!   talking to a mirror that serves it, can check the whole chain
//!   ([`walk`]).
//! - **Add-only.** Every distribution file the parent served (a wheel or
//!   sdist, its metadata, an npm tarball, a `.deb`: see [`artifact_key`])
//!   is served by the layer with the same bytes, unless a tombstone names
//!   it; a file whose name the parent held never comes back with other
//!   bytes. Pages are rendered again and may change; files may not.
//! - **Stored once.** The builder hard-links the parent's blob files into
//!   the layer (one inode, as OSTree checks out its objects), so a file
//!   already in the parent is not stored twice.

use crate::manifest::{Layer, Manifest, SnapshotDoc, SNAPSHOT_JSON};
use crate::FILES_PREFIX;
use egress_model::Sha256Digest;
use egress_signing::{AllowedSigners, SNAPSHOT_NAMESPACE};
use std::collections::{BTreeMap, BTreeSet};

/// Where a layer serves its ancestors' evidence: `<CHAIN_DIR><id hex>/`
/// followed by `MANIFEST`, `MANIFEST.sig` or `SNAPSHOT.json`.
pub const CHAIN_DIR: &str = "/.well-known/egress-mirror/chain/";

/// The three evidence files of one ancestor, by name.
pub const EVIDENCE: [&str; 3] = ["MANIFEST", "MANIFEST.sig", "SNAPSHOT.json"];

/// The served path of ancestor `id`'s evidence file `name` (one of
/// [`EVIDENCE`]).
pub fn evidence_path(id: &Sha256Digest, name: &str) -> String {
    format!("{CHAIN_DIR}{}/{name}", id.to_hex())
}

/// What names a distribution file across layers, for the add-only rule:
/// its filename for PyPI's digest-addressed `/files/<sha256>/<filename>`
/// (and its `.metadata`), its path for an npm tarball (`/<name>/-/<file>.tgz`)
/// or an apt `.deb` under `pool/`. `None` for a page, an index or evidence:
/// those are rendered again by every layer.
pub fn artifact_key(path: &str) -> Option<&str> {
    if let Some(rest) = path.strip_prefix(FILES_PREFIX) {
        return rest.split_once('/').map(|(_, filename)| filename);
    }
    if path.starts_with(crate::well_known::DIR) {
        return None;
    }
    let tarball = path.contains("/-/") && path.ends_with(".tgz");
    let deb = path.contains("/pool/") && path.ends_with(".deb");
    (tarball || deb).then_some(path)
}

/// Why a chain does not hold. Each names the layer it was found at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainProblem {
    /// An ancestor's evidence is not there (not served, not held).
    #[error("chain gap: parent {parent} of layer {child}: {what}")]
    Gap {
        child: Sha256Digest,
        parent: Sha256Digest,
        what: String,
    },
    /// The evidence held for an ancestor is not the one the layer signed,
    /// or the layer's view does not extend it: another history.
    #[error("forked chain: layer {child} does not extend parent {parent}: {what}")]
    Forked {
        child: Sha256Digest,
        parent: Sha256Digest,
        what: String,
    },
    /// An ancestor's signature does not verify against the trusted signers.
    #[error("parent {parent}: MANIFEST.sig does not verify: {why}")]
    Signature { parent: Sha256Digest, why: String },
}

/// One ancestor, as [`walk`] read it.
#[derive(Debug, Clone)]
pub struct Ancestor {
    pub id: Sha256Digest,
    pub doc: SnapshotDoc,
    /// Who signed its `MANIFEST` (`principal (fingerprint)`), when signers
    /// were given.
    pub signer: Option<String>,
}

/// Walks the chain below `top` (the document of snapshot `top_id`):
/// `fetch(path)` returns the bytes the layer serves at an evidence path
/// (already checked against the digest its `served` table names), `None`
/// when it serves nothing there. Checks, for each ancestor, that its
/// `MANIFEST` hashes to the ID the child signed, lists the
/// `SNAPSHOT.json` digest the child signed, that its signature verifies
/// against `signers` (when given), that the depths count down to a base,
/// and that the child's view extends the ancestor's ([`extends`]).
/// Returns the ancestors, nearest first.
pub fn walk(
    top_id: Sha256Digest,
    top: &SnapshotDoc,
    signers: Option<&AllowedSigners>,
    mut fetch: impl FnMut(&str) -> Option<Vec<u8>>,
) -> Result<Vec<Ancestor>, ChainProblem> {
    let mut out: Vec<Ancestor> = Vec::new();
    let mut child_id = top_id;
    let mut child = top;
    let mut seen = BTreeSet::from([top_id]);
    while let Some(layer) = &child.layer {
        let parent = layer.parent;
        let gap = |what: String| ChainProblem::Gap {
            child: child_id,
            parent,
            what,
        };
        let forked = |what: String| ChainProblem::Forked {
            child: child_id,
            parent,
            what,
        };
        if !seen.insert(parent) {
            return Err(forked("the chain loops back on itself".into()));
        }
        let [m, s, j] = EVIDENCE.map(|name| evidence_path(&parent, name));
        let manifest_bytes = fetch(&m).ok_or_else(|| gap(format!("{m} is not held")))?;
        if Sha256Digest::of(&manifest_bytes) != parent {
            return Err(forked(format!("{m} is another MANIFEST")));
        }
        let manifest = Manifest::parse(&manifest_bytes)
            .map_err(|e| forked(format!("{m} does not parse: {e}")))?;
        if manifest.get(SNAPSHOT_JSON) != Some(layer.parent_snapshot_json) {
            return Err(forked(format!(
                "the parent's MANIFEST lists another SNAPSHOT.json than the layer signed ({})",
                layer.parent_snapshot_json
            )));
        }
        let doc_bytes = fetch(&j).ok_or_else(|| gap(format!("{j} is not held")))?;
        if Sha256Digest::of(&doc_bytes) != layer.parent_snapshot_json {
            return Err(forked(format!("{j} is another SNAPSHOT.json")));
        }
        let doc = SnapshotDoc::parse(&doc_bytes)
            .map_err(|e| forked(format!("{j} does not parse: {e}")))?;
        let signer = match signers {
            None => None,
            Some(allowed) => {
                let sig = fetch(&s).ok_or_else(|| gap(format!("{s} is not held")))?;
                let sig = String::from_utf8_lossy(&sig);
                let v = egress_signing::verify(&sig, SNAPSHOT_NAMESPACE, &manifest_bytes, allowed)
                    .map_err(|e| ChainProblem::Signature {
                        parent,
                        why: e.to_string(),
                    })?;
                Some(format!("{} ({})", v.principal, v.fingerprint))
            }
        };
        let below = doc.layer.as_ref().map_or(0, |l| l.depth);
        if layer.depth != below.saturating_add(1) {
            return Err(forked(format!(
                "the layer says depth {}, its parent {below}",
                layer.depth
            )));
        }
        extends(
            &doc,
            child.served.iter().map(|e| (e.path.as_str(), e.sha256)),
            layer,
        )
        .map_err(forked)?;
        out.push(Ancestor {
            id: parent,
            doc,
            signer,
        });
        child_id = parent;
        child = match out.last() {
            Some(a) => &a.doc,
            None => break,
        };
    }
    Ok(out)
}

/// The add-only rule: every distribution file `parent` serves, the child
/// (`child`: each served path and digest) serves with the same bytes,
/// unless one of `layer`'s tombstones names its path; no file keeps its
/// name with other bytes; and every tombstone names files the parent
/// served and the child does not.
pub fn extends<'a>(
    parent: &SnapshotDoc,
    child: impl Iterator<Item = (&'a str, Sha256Digest)>,
    layer: &Layer,
) -> Result<(), String> {
    let removed: BTreeSet<&str> = layer
        .removed
        .iter()
        .flat_map(|t| t.paths.iter().map(String::as_str))
        .collect();
    let parent_paths: BTreeSet<&str> = parent.served.iter().map(|e| e.path.as_str()).collect();
    for path in &removed {
        if !parent_paths.contains(path) {
            return Err(format!(
                "tombstone {path} names a file the parent does not serve"
            ));
        }
    }
    // The parent's files by name; each is crossed off as the child serves it.
    let mut owed: BTreeMap<&str, (&str, Sha256Digest)> = parent
        .served
        .iter()
        .filter(|e| !removed.contains(e.path.as_str()))
        .filter_map(|e| Some((artifact_key(&e.path)?, (e.path.as_str(), e.sha256))))
        .collect();
    let mut kept: BTreeMap<String, Sha256Digest> = BTreeMap::new();
    for (path, digest) in child {
        if removed.contains(path) {
            return Err(format!(
                "tombstone {path} names a file the layer still serves"
            ));
        }
        let Some(key) = artifact_key(path) else {
            continue;
        };
        if let Some((_, d)) = owed.get(key) {
            if *d != digest {
                return Err(format!(
                    "{key} changed bytes: {d} in the parent, {digest} in the layer"
                ));
            }
            owed.remove(key);
            kept.insert(key.to_string(), digest);
        } else if let Some(d) = kept.get(key).filter(|d| **d != digest) {
            return Err(format!(
                "{key} changed bytes: {d} in the parent, {digest} in the layer"
            ));
        }
    }
    match owed.values().next() {
        Some((path, _)) => Err(format!(
            "{path} is gone without a tombstone (a layer only adds, or removes with --remove)"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_keys() {
        let sha = "a".repeat(64);
        assert_eq!(
            artifact_key(&format!("/files/{sha}/x-1.0-py3-none-any.whl")),
            Some("x-1.0-py3-none-any.whl")
        );
        assert_eq!(
            artifact_key(&format!("/files/{sha}/x-1.0-py3-none-any.whl.metadata")),
            Some("x-1.0-py3-none-any.whl.metadata")
        );
        assert_eq!(
            artifact_key("/@s/n/-/n-1.0.0.tgz"),
            Some("/@s/n/-/n-1.0.0.tgz")
        );
        assert_eq!(
            artifact_key("/debian/pool/main/n/nginx/nginx_1.22_amd64.deb"),
            Some("/debian/pool/main/n/nginx/nginx_1.22_amd64.deb")
        );
        for page in [
            "/simple/",
            "/simple/x/",
            "/@s%2fn",
            "/left-pad",
            "/debian/dists/bookworm/InRelease",
            "/.well-known/egress-mirror/chain/x/-/y.tgz",
        ] {
            assert_eq!(artifact_key(page), None, "{page}");
        }
    }
}

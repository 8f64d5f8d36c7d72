//! Building a layer: [`SnapshotBuilder::base`] takes a verified snapshot's
//! view into the builder, [`SnapshotBuilder::remove`] takes a version out
//! of it with a tombstone; what is added after that goes on top (see
//! [`crate::chain`] for the rules a layer keeps).
//!
//! The base's view is read back from what it serves, which is what its
//! signature covers: the PEP 691 JSON project pages (every field the
//! builder renders a file entry from), the full and abbreviated npm
//! packuments (each version's two entries are served again verbatim), apt
//! files, the npm keys document and the ancestors' evidence as they are.
//! Its blob files are hard-linked into the build's staging directory.

use crate::build::Dist;
use crate::chain::{self, artifact_key, CHAIN_DIR};
use crate::error::SnapshotError;
use crate::manifest::{Layer, Tombstone, SNAPSHOT_JSON};
use crate::npm::{self, NpmDist, NpmVersionMeta, NPM_ABBREVIATED, NPM_JSON};
use crate::FILES_PREFIX;
use crate::{apt, well_known, SnapshotBuilder, StoredSnapshot, MANIFEST_FILE, SIGNATURE_FILE};
use egress_model::{DistFilename, ProjectName, Sha256Digest, Version};
use egress_simple::JSON_V1;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;

/// What a base brought into a layer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BaseSummary {
    pub pypi_projects: usize,
    pub pypi_files: usize,
    pub npm_packages: usize,
    pub npm_versions: usize,
    /// apt files carried as they are.
    pub apt_files: usize,
    /// Snapshots below this one, the base included.
    pub depth: u32,
}

impl SnapshotBuilder {
    /// Makes this build a layer on `base`: everything `base` serves is
    /// served again (pages rendered anew from the same entries, files with
    /// the same bytes), and `SNAPSHOT.json` names `base` as the parent.
    /// Call it first, on an empty builder staged on disk beside the
    /// base's directory (blob files are hard-linked: a base on another
    /// filesystem is refused), after the base verified against the
    /// signers the caller trusts. The base must be signed: its signature
    /// travels with the layer.
    pub fn base(&mut self, base: &StoredSnapshot) -> Result<BaseSummary, SnapshotError> {
        let bad = |why: String| SnapshotError::Base(why);
        if !self.projects.is_empty() || !self.npm.is_empty() || !self.rendered.is_empty() {
            return Err(bad("give the base before anything is added".into()));
        }
        if base.signature().is_none() {
            return Err(bad(format!(
                "{} is unsigned; a layer carries its parent's signature, build the base with --sign-key",
                base.root().display()
            )));
        }
        let depth = base.layer().map_or(0, |l| l.depth);
        let mut summary = BaseSummary {
            depth: depth.saturating_add(1),
            ..BaseSummary::default()
        };
        let served: Vec<(String, String, Sha256Digest)> = base
            .served()
            .iter()
            .map(|(p, ct, d)| (p.to_string(), ct.to_string(), d))
            .collect();
        let by_path: BTreeMap<(&str, &str), Sha256Digest> = served
            .iter()
            .map(|(p, ct, d)| ((p.as_str(), ct.as_str()), *d))
            .collect();
        for (path, ct, digest) in &served {
            if path.starts_with(CHAIN_DIR) {
                self.link(base, digest)?;
                self.chain.insert(path.clone(), *digest);
            } else if path.starts_with(well_known::DIR) {
                // The base's own evidence and signers: this build has its own.
            } else if path.starts_with(FILES_PREFIX) {
                // Carried with its project page.
            } else if path.starts_with(&self.index_path) {
                if ct == JSON_V1 && path != &self.index_path {
                    let files = self.inherit_project(base, path, digest)?;
                    summary.pypi_projects += 1;
                    summary.pypi_files += files;
                }
            } else if path == npm::NPM_KEYS_PATH {
                self.link(base, digest)?;
                self.npm_keys = Some(*digest);
            } else if apt::is_apt_path(path) || crate::cargo::is_cargo_path(path) {
                self.link(base, digest)?;
                self.rendered.insert(path.clone(), (ct.clone(), *digest));
                self.inherited_rendered = true;
                if apt::is_apt_path(path) {
                    summary.apt_files += 1;
                }
            } else if ct == NPM_JSON && !path.contains("%2f") && !path.contains("/-/") {
                let corgi = by_path
                    .get(&(path.as_str(), NPM_ABBREVIATED))
                    .ok_or_else(|| bad(format!("{path} has no abbreviated packument")))?;
                summary.npm_versions += self.inherit_package(base, path, digest, corgi)?;
                summary.npm_packages += 1;
            } else if !(ct == NPM_ABBREVIATED || ct == NPM_JSON || artifact_key(path).is_some()) {
                return Err(bad(format!(
                    "it serves {path} ({ct}), which a layer cannot carry; flatten it or build a new base"
                )));
            }
        }
        // The base's own evidence, as blobs of this layer.
        for (name, file) in
            chain::EVIDENCE
                .into_iter()
                .zip([MANIFEST_FILE, SIGNATURE_FILE, SNAPSHOT_JSON])
        {
            let src = base.root().join(file);
            let bytes = crate::nofollow::read_no_follow(&src)
                .map_err(|e| bad(format!("{}: {e}", src.display())))?;
            let digest = Sha256Digest::of(&bytes);
            let want = match file {
                MANIFEST_FILE => Some(base.id()),
                SNAPSHOT_JSON => Some(base.doc_digest()),
                _ => None,
            };
            if want.is_some_and(|w| w != digest) {
                return Err(bad(format!(
                    "{} changed since it was opened",
                    src.display()
                )));
            }
            self.blobs
                .link(digest, &src)
                .map_err(|e| link_error(&src, e))?;
            self.chain
                .insert(chain::evidence_path(&base.id(), name), digest);
        }
        self.layer = Some(Layer {
            parent: base.id(),
            parent_snapshot_json: base.doc_digest(),
            depth: summary.depth,
            removed: Vec::new(),
        });
        self.base_doc = Some(Box::new(base.doc().clone()));
        Ok(summary)
    }

    /// Takes `spec` out of the layer's view: `NAME==VERSION` (PyPI; npm
    /// when no PyPI project has the name) or `NAME@VERSION` (npm), each
    /// optionally prefixed `pypi:` or `npm:`. Only what the base served
    /// can be removed; the tombstone names every file that goes.
    pub fn remove(&mut self, spec: &str) -> Result<Tombstone, SnapshotError> {
        let bad = |why: &str| SnapshotError::Tombstone(format!("{spec:?}: {why}"));
        if self.layer.is_none() {
            return Err(bad("only a layer removes; give --base"));
        }
        let (protocol, rest) = match spec.split_once(':') {
            Some(("pypi", rest)) => (Some("pypi"), rest),
            Some(("npm", rest)) => (Some("npm"), rest),
            _ => (None, spec),
        };
        let pypi = rest.split_once("==");
        let npm_split = rest
            .get(1..)
            .and_then(|r| r.rsplit_once('@'))
            .and_then(|(n, v)| Some((rest.get(..n.len() + 1)?, v)));
        let tombstone = match (protocol, pypi, npm_split) {
            (Some("pypi") | None, Some((name, version)), _) if self.has_pypi(name) => {
                self.remove_pypi(name, version)
            }
            (Some("npm") | None, Some((name, version)), _)
            | (Some("npm") | None, None, Some((name, version))) => self.remove_npm(name, version),
            (Some("pypi"), Some((name, _)), _) => {
                Err(format!("the base has no PyPI project {name}"))
            }
            _ => Err("give NAME==VERSION (PyPI) or NAME@VERSION (npm)".into()),
        }
        .map_err(|why| bad(&why))?;
        if let Some(layer) = &mut self.layer {
            layer.removed.push(tombstone.clone());
            layer.removed.sort();
        }
        Ok(tombstone)
    }

    fn has_pypi(&self, name: &str) -> bool {
        ProjectName::new(name.trim()).is_ok_and(|n| self.projects.contains_key(&n))
    }

    fn remove_pypi(&mut self, name: &str, version: &str) -> Result<Tombstone, String> {
        let project = ProjectName::new(name.trim()).map_err(|e| e.to_string())?;
        let version = Version::new(version.trim()).map_err(|e| e.to_string())?;
        let dists = self
            .projects
            .get_mut(&project)
            .ok_or_else(|| format!("the base has no PyPI project {project}"))?;
        let (gone, kept): (Vec<Dist>, Vec<Dist>) =
            dists.drain(..).partition(|d| d.version == version);
        *dists = kept;
        if dists.is_empty() {
            self.projects.remove(&project);
        }
        if gone.is_empty() {
            return Err(format!("the base has no version {version} of {project}"));
        }
        let mut paths = Vec::new();
        for d in &gone {
            let url = format!("{FILES_PREFIX}{}/{}", d.sha256.to_hex(), d.filename);
            if d.metadata.is_some() {
                paths.push(format!("{url}.metadata"));
            }
            paths.push(url);
            self.filenames.remove(&d.filename);
            if let Some(entry) = self.inherited.get_mut(&d.filename) {
                entry.1 = false;
            }
        }
        paths.sort();
        Ok(Tombstone {
            protocol: "pypi".into(),
            name: project.to_string(),
            version: version.to_string(),
            paths,
        })
    }

    fn remove_npm(&mut self, name: &str, version: &str) -> Result<Tombstone, String> {
        let dists = self
            .npm
            .get_mut(name)
            .ok_or_else(|| format!("the base has no npm package or PyPI project {name}"))?;
        let at = dists
            .iter()
            .position(|d| d.version == version)
            .ok_or_else(|| format!("the base has no version {version} of {name}"))?;
        let gone = dists.remove(at);
        if dists.is_empty() {
            self.npm.remove(name);
        }
        let path = npm::tarball_path(name, &gone.filename);
        if let Some(entry) = self.inherited.get_mut(&path) {
            entry.1 = false;
        }
        Ok(Tombstone {
            protocol: "npm".into(),
            name: name.to_string(),
            version: version.to_string(),
            paths: vec![path],
        })
    }

    /// Hard-links the base's blob `digest` into the staging store.
    fn link(&mut self, base: &StoredSnapshot, digest: &Sha256Digest) -> Result<(), SnapshotError> {
        let src = base.root().join(crate::manifest::blob_path(digest));
        self.blobs
            .link(*digest, &src)
            .map_err(|e| link_error(&src, e))
    }

    /// One PyPI project page of the base: its files become this build's.
    fn inherit_project(
        &mut self,
        base: &StoredSnapshot,
        path: &str,
        digest: &Sha256Digest,
    ) -> Result<usize, SnapshotError> {
        let bad = |why: String| SnapshotError::Base(format!("{path}: {why}"));
        let bytes = read_blob(base, digest)?;
        let page = egress_simple::parse_project_json(&bytes).map_err(|e| bad(e.to_string()))?;
        let name = ProjectName::new(&page.name).map_err(|e| bad(e.to_string()))?;
        let sha = |hashes: &BTreeMap<String, String>| {
            hashes
                .get("sha256")
                .and_then(|h| Sha256Digest::from_hex(h).ok())
        };
        let mut n = 0;
        for f in &page.files {
            let parsed = DistFilename::parse(&f.filename).map_err(|e| bad(e.to_string()))?;
            let sha256 =
                sha(&f.hashes).ok_or_else(|| bad(format!("{} has no sha256", f.filename)))?;
            let metadata =
                match &f.core_metadata {
                    None => None,
                    Some(h) => Some(sha(h).ok_or_else(|| {
                        bad(format!("{}'s core-metadata has no sha256", f.filename))
                    })?),
                };
            if f.url != format!("{FILES_PREFIX}{}/{}", sha256.to_hex(), f.filename) {
                return Err(bad(format!(
                    "{} is not served at its digest's path",
                    f.filename
                )));
            }
            self.link(base, &sha256)?;
            if let Some(md) = &metadata {
                self.link(base, md)?;
            }
            let size = f
                .size
                .ok_or_else(|| bad(format!("{} has no size", f.filename)))?;
            self.filenames.insert(f.filename.clone());
            self.inherited.insert(f.filename.clone(), (sha256, true));
            if let Some(md) = metadata {
                self.inherited
                    .insert(format!("{}.metadata", f.filename), (md, true));
            }
            crate::build::push_one(
                self.projects.entry(name.clone()).or_default(),
                Dist {
                    filename: f.filename.clone(),
                    version: parsed.version,
                    sha256,
                    size,
                    yanked: f.yanked.clone(),
                    upload_time: f.upload_time.clone(),
                    metadata,
                    requires_python: f.requires_python.clone(),
                },
            );
            n += 1;
        }
        Ok(n)
    }

    /// One npm package of the base: each version's two packument entries
    /// are kept verbatim, its tarball linked.
    fn inherit_package(
        &mut self,
        base: &StoredSnapshot,
        path: &str,
        full: &Sha256Digest,
        corgi: &Sha256Digest,
    ) -> Result<usize, SnapshotError> {
        let bad = |why: String| SnapshotError::Base(format!("{path}: {why}"));
        let parse = |d: &Sha256Digest| -> Result<Value, SnapshotError> {
            serde_json::from_slice(&read_blob(base, d)?).map_err(|e| bad(e.to_string()))
        };
        let (full, corgi) = (parse(full)?, parse(corgi)?);
        let name = full
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| npm::is_safe_name(n) && path.strip_prefix('/') == Some(n))
            .ok_or_else(|| bad("its name is not the path's".into()))?
            .to_string();
        let versions = full
            .get("versions")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("no versions".into()))?;
        let mut n = 0;
        for (version, doc) in versions {
            let abbreviated = corgi
                .get("versions")
                .and_then(|v| v.get(version))
                .ok_or_else(|| bad(format!("{version} is not in the abbreviated packument")))?;
            let dist = doc.get("dist");
            let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
            let tarball = text(dist.and_then(|d| d.get("tarball")))
                .ok_or_else(|| bad(format!("{version} has no dist.tarball")))?;
            let integrity = text(dist.and_then(|d| d.get("integrity")))
                .ok_or_else(|| bad(format!("{version} has no dist.integrity")))?;
            let filename = tarball
                .rsplit_once("/-/")
                .map(|(_, f)| f.to_string())
                .ok_or_else(|| bad(format!("{version}: tarball URL {tarball:?}")))?;
            let served = npm::tarball_path(&name, &filename);
            let registry = tarball
                .strip_suffix(&served)
                .ok_or_else(|| bad(format!("{version}: tarball URL {tarball:?}")))?;
            match &self.npm_registry {
                None => self.npm_registry = Some(registry.to_string()),
                Some(r) if r == registry => {}
                Some(r) => {
                    return Err(SnapshotError::Base(format!(
                        "its packuments link tarballs at {registry}/, this build at {r}/; give --npm-registry-url {registry}/"
                    )))
                }
            }
            let sha256 = base
                .served()
                .lookup(&served, crate::OCTET_STREAM)
                .ok_or_else(|| bad(format!("{served} is not served")))?;
            self.link(base, &sha256)?;
            self.inherited.insert(served, (sha256, true));
            let published = text(full.get("time").and_then(|t| t.get(version)));
            crate::build::push_one(
                self.npm.entry(name.clone()).or_default(),
                NpmDist {
                    version: version.clone(),
                    filename,
                    sha256,
                    integrity,
                    meta: NpmVersionMeta {
                        published,
                        ..NpmVersionMeta::default()
                    },
                    signatures: None,
                    inherited: Some(Box::new([doc.clone(), abbreviated.clone()])),
                },
            );
            n += 1;
        }
        Ok(n)
    }
}

fn read_blob(base: &StoredSnapshot, digest: &Sha256Digest) -> Result<Vec<u8>, SnapshotError> {
    let blob = base
        .open_blob(digest)
        .map_err(|p| SnapshotError::Base(p.to_string()))?;
    let (file, len) = blob.into_parts();
    let mut bytes = Vec::new();
    file.take(len)
        .read_to_end(&mut bytes)
        .map_err(|e| SnapshotError::Base(e.to_string()))?;
    Ok(bytes)
}

fn link_error(src: &std::path::Path, e: std::io::Error) -> SnapshotError {
    if e.kind() == std::io::ErrorKind::CrossesDevices {
        return SnapshotError::Base(format!(
            "{} is on another filesystem than the new snapshot; a layer shares its parent's files by hard link, so put --out beside --base",
            src.display()
        ));
    }
    SnapshotError::Base(format!("cannot link {}: {e}", src.display()))
}

/// `snapshot flatten`: one snapshot with `top`'s view and no chain: the
/// same served paths and bytes, without the ancestors' evidence, without
/// `layer`, signed by `key` for `principal`. Blob files are hard-linked
/// into `staging` (see [`crate::BlobStore::on_disk`]), so put it beside
/// `top` and the output. `top` must have verified first.
pub fn flatten(
    top: &StoredSnapshot,
    staging: &std::path::Path,
    created: &str,
    key: &egress_signing::SigningKey,
    principal: &str,
) -> Result<crate::Snapshot, SnapshotError> {
    use crate::manifest::{blob_path, Manifest, ServedEntry, SNAPSHOT_SCHEMA};
    use egress_signing::SNAPSHOT_NAMESPACE;
    let mut blobs = crate::BlobStore::on_disk(staging)
        .map_err(|e| SnapshotError::io("create the blob staging directory", staging, e))?;
    let old = top.doc();
    let signers = crate::build::signers_line(key, principal);
    let mut served = Vec::with_capacity(old.served.len());
    for e in &old.served {
        if e.path.starts_with(CHAIN_DIR) {
            continue;
        }
        let sha256 = if e.path == well_known::ALLOWED_SIGNERS {
            blobs.insert(signers.clone().into_bytes())
        } else {
            let src = top.root().join(blob_path(&e.sha256));
            blobs
                .link(e.sha256, &src)
                .map_err(|err| link_error(&src, err))?;
            e.sha256
        };
        served.push(ServedEntry {
            sha256,
            ..e.clone()
        });
    }
    served.sort();
    let mut sources = old.sources.clone();
    sources.insert(format!("flattened:{}", top.id()), top.id());
    let doc = crate::SnapshotDoc {
        schema: SNAPSHOT_SCHEMA.to_string(),
        builder: crate::build::builder_name(),
        created: created.to_string(),
        sources,
        served,
        upload_times: old.upload_times.clone(),
        selection: old.selection.clone(),
        layer: None,
    };
    let doc_bytes = doc.to_canonical_json();
    let mut manifest = Manifest::new();
    for e in &doc.served {
        manifest.insert(&blob_path(&e.sha256), e.sha256)?;
    }
    manifest.insert(SNAPSHOT_JSON, Sha256Digest::of(&doc_bytes))?;
    let manifest_bytes = manifest.render().into_bytes();
    let signature = Some(key.sign(SNAPSHOT_NAMESPACE, &manifest_bytes));
    let snapshot = crate::Snapshot {
        manifest,
        manifest_bytes,
        doc,
        doc_bytes,
        signature,
        allowed_signers: Some(signers),
        blobs,
    };
    snapshot.check()?;
    Ok(snapshot)
}

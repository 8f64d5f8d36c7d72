//! [`SnapshotBuilder`]: from distribution files to a complete snapshot in
//! which every byte the mirror will serve is a pre-rendered blob.
//!
//! Nothing here runs or evaluates anything a distribution supplies (P4): a
//! wheel's METADATA is read as a zip member and only three header fields are
//! looked at; an sdist is opaque bytes and gets no metadata at all, because
//! the only honest way to get an sdist's metadata is to build it.

use crate::error::SnapshotError;
use crate::manifest::{
    blob_path, Manifest, Selection, ServedEntry, SnapshotDoc, SNAPSHOT_JSON, SNAPSHOT_SCHEMA,
};
use crate::npm::{self, NpmDist, NpmVersionMeta, NPM_ABBREVIATED, NPM_JSON};
use crate::{well_known, BlobStore, Snapshot, FILES_PREFIX};
use egress_model::{DistFilename, DistKind, ProjectName, Sha256Digest, Version};
use egress_signing::{AllowedSigners, SigningKey, SNAPSHOT_NAMESPACE};
use egress_simple::{FileEntry, IndexPage, ProjectPage, HTML_V1, JSON_V1};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Content type of distribution files and their PEP 658 metadata.
pub const OCTET_STREAM: &str = "application/octet-stream";
/// Content type of `allowed_signers` and the evidence documents.
pub const TEXT_PLAIN: &str = "text/plain";

#[derive(Debug, Clone)]
pub(crate) struct Dist {
    pub(crate) filename: String,
    pub(crate) version: Version,
    pub(crate) sha256: Sha256Digest,
    pub(crate) size: u64,
    pub(crate) yanked: Option<String>,
    /// PEP 700 `upload-time`, carried over from the index it came from.
    pub(crate) upload_time: Option<String>,
    /// PEP 658 metadata blob; wheels only.
    pub(crate) metadata: Option<Sha256Digest>,
    pub(crate) requires_python: Option<String>,
}

/// Collects distributions, then renders and seals a [`Snapshot`].
#[derive(Debug, Clone)]
pub struct SnapshotBuilder {
    pub(crate) index_path: String,
    pub(crate) projects: BTreeMap<ProjectName, Vec<Dist>>,
    pub(crate) filenames: BTreeSet<String>,
    pub(crate) sources: BTreeMap<String, Sha256Digest>,
    pub(crate) blobs: BlobStore,
    /// npm packages by name.
    pub(crate) npm: BTreeMap<String, Vec<NpmDist>>,
    /// The mirror's base URL for npm tarball links, without a trailing `/`.
    pub(crate) npm_registry: Option<String>,
    /// The upstream registry's keys document, served at `/-/npm/v1/keys`.
    pub(crate) npm_keys: Option<Sha256Digest>,
    /// Files a protocol rendered whole (apt, cargo) by served path:
    /// content type and blob.
    pub(crate) rendered: BTreeMap<String, (String, Sha256Digest)>,
    /// What the build selected by, recorded in `SNAPSHOT.json`.
    pub(crate) selection: Option<Selection>,
    /// For a layer: its parent and tombstones (see [`crate::chain`]).
    pub(crate) layer: Option<crate::Layer>,
    /// For a layer: the base's distribution files by [`crate::chain::artifact_key`]
    /// (a PyPI filename, an npm tarball path), with their digest and
    /// whether this layer still serves them (false once removed).
    pub(crate) inherited: HashMap<String, (Sha256Digest, bool)>,
    /// For a layer: the ancestors' evidence, by served path.
    pub(crate) chain: BTreeMap<String, Sha256Digest>,
    /// For a layer: the base's document, to check the add-only rule on
    /// the result.
    pub(crate) base_doc: Option<Box<SnapshotDoc>>,
    /// For a layer: the base served rendered files (an apt repository, a
    /// cargo registry), which a layer carries as they are and cannot add
    /// to.
    pub(crate) inherited_rendered: bool,
}

impl SnapshotBuilder {
    /// `index_path` is where the project list is served, e.g. `"/simple/"`;
    /// project pages are at `{index_path}{name}/`. It is checked by `build`.
    pub fn new(index_path: &str) -> Self {
        Self {
            index_path: index_path.to_string(),
            projects: BTreeMap::new(),
            filenames: BTreeSet::new(),
            sources: BTreeMap::new(),
            blobs: BlobStore::new(),
            npm: BTreeMap::new(),
            npm_registry: None,
            npm_keys: None,
            rendered: BTreeMap::new(),
            selection: None,
            layer: None,
            inherited: HashMap::new(),
            chain: BTreeMap::new(),
            base_doc: None,
            inherited_rendered: false,
        }
    }

    /// [`SnapshotBuilder::new`] with every blob streamed to `staging` as it
    /// is added instead of held in memory (see [`BlobStore::on_disk`]):
    /// for builds of many files. `staging` must not exist; put it beside
    /// the snapshot's directory, on the same filesystem.
    pub fn on_disk(index_path: &str, staging: &std::path::Path) -> Result<Self, SnapshotError> {
        let mut builder = Self::new(index_path);
        builder.blobs = BlobStore::on_disk(staging)
            .map_err(|e| SnapshotError::io("create the blob staging directory", staging, e))?;
        Ok(builder)
    }

    /// From now on, streams every blob to `staging` (as
    /// [`SnapshotBuilder::on_disk`]): for a builder that was set up before
    /// its staging directory could be chosen. Only before any blob was
    /// added; `staging` must not exist.
    pub fn stage_on_disk(&mut self, staging: &std::path::Path) -> Result<(), SnapshotError> {
        if !self.blobs.is_empty() {
            return Err(SnapshotError::io(
                "stage blobs on disk after some were added in memory",
                staging,
                std::io::Error::other("blobs were already added"),
            ));
        }
        self.blobs = BlobStore::on_disk(staging)
            .map_err(|e| SnapshotError::io("create the blob staging directory", staging, e))?;
        Ok(())
    }

    /// Records the cutoff and filters the build selected by; `SNAPSHOT.json`
    /// carries them under the signature.
    pub fn selection(&mut self, selection: Selection) {
        self.selection = Some(selection);
    }

    /// The selection recorded so far, to add to (each protocol records its
    /// own filters).
    pub fn selection_mut(&mut self) -> &mut Selection {
        self.selection.get_or_insert_with(Selection::default)
    }

    /// Serves `bytes` at `path` as `content_type`: an apt file (a signed
    /// index, a Packages file, a `.deb`, the keyring; see [`crate::apt`]),
    /// rendered or verified by the caller. The path must pass
    /// [`crate::apt::is_apt_path`]; adding the same bytes at a path twice
    /// is harmless, other bytes are an error.
    pub fn add_apt_file(
        &mut self,
        path: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<(), SnapshotError> {
        if !crate::apt::is_apt_path(path) {
            return Err(SnapshotError::Apt(format!(
                "{path:?} is not a path this mirror can serve below {}",
                crate::apt::APT_PREFIX
            )));
        }
        self.add_rendered(path, content_type, bytes)
            .map_err(SnapshotError::Apt)
    }

    /// Serves `bytes` at `path` as `content_type`: a cargo file (the
    /// registry's `config.json`, an index file, a `.crate`; see
    /// [`crate::cargo`]), rendered or verified by the caller. The path must
    /// pass [`crate::cargo::is_cargo_path`]; the same bytes at a path twice
    /// are harmless, other bytes are an error.
    pub fn add_cargo_file(
        &mut self,
        path: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<(), SnapshotError> {
        if !crate::cargo::is_cargo_path(path) {
            return Err(SnapshotError::Cargo(format!(
                "{path:?} is not a path this mirror can serve below {}",
                crate::cargo::CARGO_PREFIX
            )));
        }
        self.add_rendered(path, content_type, bytes)
            .map_err(SnapshotError::Cargo)
    }

    /// A Hugging Face Hub file below [`crate::hf::HF_PREFIX`]: an info or
    /// tree document the builder rendered, or a file's bytes as the Hub
    /// served them (see [`crate::hf`]).
    pub fn add_hf_file(
        &mut self,
        path: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<(), SnapshotError> {
        if !crate::hf::is_hf_path(path) {
            return Err(SnapshotError::Hf(format!(
                "{path:?} is not a path this mirror can serve below {}",
                crate::hf::HF_PREFIX
            )));
        }
        self.add_rendered(path, content_type, bytes)
            .map_err(SnapshotError::Hf)
    }

    /// A file whose bytes a protocol rendered (apt, cargo): its indexes are
    /// signed or listed whole, so a layer cannot add to a base's.
    fn add_rendered(
        &mut self,
        path: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<(), String> {
        let digest = Sha256Digest::of(&bytes);
        if self.layer.is_some() && self.inherited_rendered {
            return Err(
                "the base serves an apt repository or a cargo registry, and a layer cannot add to them (their indexes would change under the same paths); build a new base with every input".into(),
            );
        }
        match self.rendered.get(path) {
            Some((ct, d)) if *d == digest && ct == content_type => return Ok(()),
            Some(_) => return Err(format!("{path}: added twice with different bytes")),
            None => {}
        }
        let digest = self.blobs.insert(bytes);
        self.rendered
            .insert(path.to_string(), (content_type.to_string(), digest));
        Ok(())
    }

    /// The mirror's absolute base URL (`http://host:port/` or with a path
    /// prefix), which every packument's `dist.tarball` starts with: npm
    /// needs absolute tarball URLs. Required once an npm tarball is added.
    pub fn npm_registry_url(&mut self, url: &str) -> Result<(), SnapshotError> {
        let bad = |why: &str| Err(SnapshotError::Npm(format!("registry URL {url:?}: {why}")));
        let Some((scheme, rest)) = url.split_once("://") else {
            return bad("give an absolute http:// or https:// URL");
        };
        if scheme != "http" && scheme != "https" {
            return bad("give an absolute http:// or https:// URL");
        }
        let safe = rest
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && !b"?#@\\\"<>{}|^`".contains(&b));
        if rest.is_empty() || rest.starts_with('/') || !safe {
            return bad("a host, an optional port and path, no query, fragment or credentials");
        }
        self.npm_registry = Some(url.trim_end_matches('/').to_string());
        Ok(())
    }

    /// Adds an npm tarball. `integrity` is the sha512 SRI the lock gives
    /// (`sha512-<base64>`); the bytes must match it or nothing is added.
    /// `filename` is the tarball's name below `/<name>/-/`.
    pub fn add_npm_tarball(
        &mut self,
        name: &str,
        version: &str,
        filename: &str,
        bytes: Vec<u8>,
        integrity: &str,
    ) -> Result<(), SnapshotError> {
        self.add_npm_tarball_with(
            name,
            version,
            filename,
            bytes,
            integrity,
            NpmVersionMeta::default(),
        )
    }

    /// [`SnapshotBuilder::add_npm_tarball`] with what the packuments list
    /// for the version (dependencies, platform fields, publish time: see
    /// [`NpmVersionMeta`]). A publish time must be RFC 3339; it is served
    /// as given, and recorded in `SNAPSHOT.json`'s `upload_times` under the
    /// tarball's path.
    pub fn add_npm_tarball_with(
        &mut self,
        name: &str,
        version: &str,
        filename: &str,
        bytes: Vec<u8>,
        integrity: &str,
        meta: NpmVersionMeta,
    ) -> Result<(), SnapshotError> {
        let bad = |why: String| Err(SnapshotError::Npm(format!("{name}@{version}: {why}")));
        if !npm::is_safe_name(name) {
            return bad("not a package name this mirror can serve".into());
        }
        if !npm::is_safe_version(version) {
            return bad("not a semver version".into());
        }
        if let Err(why) = meta.check() {
            return bad(why);
        }
        let filename_ok = filename.len() <= 255
            && filename.ends_with(".tgz")
            && !filename.starts_with('.')
            && filename
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._+~-".contains(&b));
        if !filename_ok {
            return bad(format!(
                "tarball filename {filename:?} is not <letters, digits, . _ + ~ ->.tgz"
            ));
        }
        let actual = egress_model::Integrity::of(&bytes).to_string();
        if actual != integrity {
            return bad(format!(
                "the tarball's integrity is {actual}, not {integrity}"
            ));
        }
        let dists = self.npm.entry(name.to_string()).or_default();
        if let Some(old) = dists.iter().find(|d| d.version == version) {
            if old.inherited.is_some() {
                // A version the base holds: the same bytes are already
                // served, other bytes never.
                let new = egress_model::Sha256Digest::of(&bytes);
                if old.sha256 == new {
                    return Ok(());
                }
                return Err(SnapshotError::LayerChangesBytes {
                    name: format!("{name}@{version}"),
                    parent: old.sha256,
                    layer: new,
                });
            }
        }
        if dists
            .iter()
            .any(|d| d.version == version || d.filename == filename)
        {
            return bad("added twice".into());
        }
        if let Some(&(parent, _)) = self.inherited.get(&npm::tarball_path(name, filename)) {
            // Removed in this layer: its name is not reused.
            return Err(SnapshotError::LayerChangesBytes {
                name: format!("{name}@{version}"),
                parent,
                layer: egress_model::Sha256Digest::of(&bytes),
            });
        }
        let sha256 = self.blobs.insert(bytes);
        push_one(
            dists,
            NpmDist {
                version: version.to_string(),
                filename: filename.to_string(),
                sha256,
                integrity: integrity.to_string(),
                meta,
                signatures: None,
                inherited: None,
            },
        );
        Ok(())
    }

    /// Attaches the upstream registry's `dist.signatures` to an npm version
    /// already added, to be replayed verbatim in both packuments.
    /// `listed_integrity` is the `dist.integrity` the upstream listed beside
    /// them (what they sign, with `<name>@<version>:`): it must be the very
    /// integrity the snapshot serves, or nothing is attached. The
    /// signatures are not verified here; clients verify them against
    /// [`SnapshotBuilder::npm_registry_keys`].
    pub fn add_npm_signatures(
        &mut self,
        name: &str,
        version: &str,
        listed_integrity: &str,
        signatures: serde_json::Value,
    ) -> Result<(), SnapshotError> {
        let bad = |why: String| Err(SnapshotError::Npm(format!("{name}@{version}: {why}")));
        let Some(dist) = self
            .npm
            .get_mut(name)
            .and_then(|ds| ds.iter_mut().find(|d| d.version == version))
        else {
            return bad("signatures for a version that was not added".into());
        };
        if dist.integrity != listed_integrity {
            return bad(format!(
                "the upstream's signatures are over integrity {listed_integrity}, the snapshot serves {}; not attached",
                dist.integrity
            ));
        }
        if dist.inherited.is_some() {
            // Served as the base served it, signatures included.
            return Ok(());
        }
        if !npm::is_signatures_shape(&signatures) {
            return bad(
                "dist.signatures is not a non-empty array of objects with string keyid and sig"
                    .into(),
            );
        }
        if dist.signatures.is_some() {
            return bad("signatures added twice".into());
        }
        dist.signatures = Some(signatures);
        Ok(())
    }

    /// Serves `bytes`, the upstream registry's keys document (`{"keys":
    /// [...]}`), verbatim at [`npm::NPM_KEYS_PATH`] as `application/json`.
    pub fn npm_registry_keys(&mut self, bytes: Vec<u8>) -> Result<(), SnapshotError> {
        if !npm::is_keys_document(&bytes) {
            return Err(SnapshotError::Npm(format!(
                "{}: not a JSON object with a keys array of objects",
                npm::NPM_KEYS_PATH
            )));
        }
        if self.npm_keys.is_some() {
            return Err(SnapshotError::Npm(format!(
                "{}: given twice",
                npm::NPM_KEYS_PATH
            )));
        }
        self.npm_keys = Some(self.blobs.insert(bytes));
        Ok(())
    }

    /// Adds a wheel or sdist. Name and version come from the filename. For a
    /// wheel, its METADATA becomes the PEP 658 metadata file and must agree
    /// with the filename. `yanked`: `Some("")` yanked without a reason.
    pub fn add_dist(
        &mut self,
        filename: &str,
        bytes: Vec<u8>,
        yanked: Option<String>,
    ) -> Result<(), SnapshotError> {
        self.add_dist_with(filename, bytes, yanked, None)
    }

    /// [`SnapshotBuilder::add_dist`] with the PEP 700 `upload-time` the
    /// file had upstream, rendered on the JSON page (see
    /// [`SnapshotBuilder::is_valid_upload_time`] for the accepted form).
    pub fn add_dist_with(
        &mut self,
        filename: &str,
        bytes: Vec<u8>,
        yanked: Option<String>,
        upload_time: Option<String>,
    ) -> Result<(), SnapshotError> {
        let invalid = |reason: String| SnapshotError::InvalidDist {
            filename: filename.to_string(),
            reason,
        };
        // The filename goes into a URL path and an HTML attribute unescaped;
        // this character set needs no escaping in either.
        let safe = filename.len() <= 255
            && filename
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._+!-".contains(&b));
        if !safe {
            return Err(invalid(
                "only letters, digits and . _ + ! - are allowed in a filename".into(),
            ));
        }
        let parsed = DistFilename::parse(filename).map_err(|e| invalid(e.to_string()))?;
        if let Some(&(parent, present)) = self.inherited.get(filename) {
            // A file the base holds: the same bytes are already served (or
            // were removed in this layer, and the name is not reused).
            let new = Sha256Digest::of(&bytes);
            if present && new == parent {
                return Ok(());
            }
            return Err(SnapshotError::LayerChangesBytes {
                name: filename.to_string(),
                parent,
                layer: new,
            });
        }
        if self.filenames.contains(filename) {
            return Err(SnapshotError::DuplicateDist(filename.to_string()));
        }
        if let Some(t) = upload_time
            .as_deref()
            .filter(|t| !Self::is_valid_upload_time(t))
        {
            return Err(invalid(format!(
                "upload-time {t:?} is not an ISO 8601 UTC time such as 2024-01-31T12:00:00.123456Z"
            )));
        }

        let (metadata, requires_python) = match parsed.kind {
            DistKind::Sdist => (None, None),
            DistKind::Wheel => {
                let text = egress_artifacts::read_wheel_metadata(&bytes).map_err(|source| {
                    SnapshotError::WheelMetadata {
                        filename: filename.to_string(),
                        source,
                    }
                })?;
                let fields = MetadataFields::read(&text);
                let mismatch = |field, found: Option<String>| SnapshotError::MetadataMismatch {
                    filename: filename.to_string(),
                    field,
                    found: found.unwrap_or_default(),
                };
                let name_ok = fields
                    .name
                    .as_deref()
                    .and_then(|n| ProjectName::new(n).ok())
                    == Some(parsed.name.clone());
                if !name_ok {
                    return Err(mismatch("Name", fields.name));
                }
                // Filenames carry `-` in a version as `_` (PEP 427).
                let version_ok = fields
                    .version
                    .as_deref()
                    .and_then(|v| Version::new(v).ok())
                    .is_some_and(|v| {
                        v.as_str().replace('-', "_") == parsed.version.as_str().replace('-', "_")
                    });
                if !version_ok {
                    return Err(mismatch("Version", fields.version));
                }
                (Some(self.blobs.insert(text)), fields.requires_python)
            }
        };

        let size = bytes.len() as u64;
        let sha256 = self.blobs.insert(bytes);
        self.filenames.insert(filename.to_string());
        push_one(
            self.projects.entry(parsed.name).or_default(),
            Dist {
                filename: filename.to_string(),
                version: parsed.version,
                sha256,
                size,
                yanked,
                upload_time,
                metadata,
                requires_python,
            },
        );
        Ok(())
    }

    /// PEP 700 asks for `yyyy-mm-ddThh:mm:ss.ffffffZ`; indexes vary in the
    /// fraction, so this accepts that shape with any (or no) fraction and
    /// nothing a page could misread.
    pub fn is_valid_upload_time(t: &str) -> bool {
        let b = t.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        b.len() >= 20
            && b.len() <= 40
            && digits(0..4)
            && b[4] == b'-'
            && digits(5..7)
            && b[7] == b'-'
            && digits(8..10)
            && b[10] == b'T'
            && digits(11..13)
            && b[13] == b':'
            && digits(14..16)
            && b[16] == b':'
            && digits(17..19)
            && b.ends_with(b"Z")
            && (b.len() == 20 || (b[19] == b'.' && b.len() > 21 && digits(20..b.len() - 1)))
    }

    /// Records an input (a lockfile, a requirements file) in
    /// `SNAPSHOT.json`'s `sources`.
    pub fn source(&mut self, name: &str, digest: Sha256Digest) {
        self.sources.insert(name.to_string(), digest);
    }

    /// Renders every page, writes `SNAPSHOT.json` and `MANIFEST`, and signs
    /// the `MANIFEST` bytes with `key` (if any) for `principal`.
    pub fn build(
        mut self,
        created: &str,
        key: Option<&SigningKey>,
        principal: &str,
    ) -> Result<Snapshot, SnapshotError> {
        let mut served = Vec::new();
        let allowed_signers = key.map(|k| signers_line(k, principal));
        let upload_times = self.render(
            allowed_signers.as_deref(),
            &mut |path: String, content_type: &str, sha256: Sha256Digest| {
                served.push(ServedEntry {
                    path,
                    content_type: content_type.to_string(),
                    sha256,
                });
            },
        )?;
        served.sort();
        let doc = SnapshotDoc {
            schema: SNAPSHOT_SCHEMA.to_string(),
            builder: builder_name(),
            created: created.to_string(),
            sources: std::mem::take(&mut self.sources),
            served,
            upload_times,
            selection: self.selection.take(),
            layer: self.layer.take(),
        };
        if let (Some(layer), Some(base)) = (&doc.layer, &self.base_doc) {
            crate::chain::extends(
                base,
                doc.served.iter().map(|e| (e.path.as_str(), e.sha256)),
                layer,
            )
            .map_err(SnapshotError::Inconsistent)?;
        }
        let doc_bytes = doc.to_canonical_json();

        // Every stored blob is served at some path, so listing the served
        // digests lists the whole store.
        let mut manifest = Manifest::new();
        for e in &doc.served {
            manifest.insert(&blob_path(&e.sha256), e.sha256)?;
        }
        manifest.insert(SNAPSHOT_JSON, Sha256Digest::of(&doc_bytes))?;
        let manifest_bytes = manifest.render().into_bytes();
        let signature = key.map(|k| k.sign(SNAPSHOT_NAMESPACE, &manifest_bytes));

        let snapshot = Snapshot {
            manifest,
            manifest_bytes,
            doc,
            doc_bytes,
            signature,
            allowed_signers,
            blobs: self.blobs,
        };
        // The bytes were rendered from these documents just above, so only
        // the rules over them and the store are checked here; `write_dir`
        // checks the whole again before it writes anything.
        snapshot.check_parts()?;
        Ok(snapshot)
    }

    /// Frees what [`SnapshotBuilder::render`] rendered from (projects,
    /// packages, apt files, the base's document); the store, the sources
    /// and the selection stay.
    pub(crate) fn release_rendered(&mut self) {
        self.projects = BTreeMap::new();
        self.filenames = BTreeSet::new();
        self.npm = BTreeMap::new();
        self.rendered = BTreeMap::new();
        self.chain = BTreeMap::new();
        self.inherited = HashMap::new();
    }

    /// About how many entries [`SnapshotBuilder::render`] will serve, and
    /// the bytes of their paths: to size the tables that collect them at
    /// once rather than by doubling (at four million entries the slack of
    /// doubling is hundreds of MB).
    pub(crate) fn served_estimate(&self) -> (usize, usize) {
        let (mut rows, mut bytes) = (4, 4 * (self.index_path.len() + 64));
        for (name, dists) in &self.projects {
            rows += 2;
            bytes += 2 * (self.index_path.len() + name.as_str().len() + 1);
            for d in dists {
                // `/files/<64 hex>/<filename>`, and `.metadata`.
                let file = FILES_PREFIX.len() + 65 + d.filename.len();
                rows += 1;
                bytes += file;
                if d.metadata.is_some() {
                    rows += 1;
                    bytes += file + ".metadata".len();
                }
            }
        }
        for (name, dists) in &self.npm {
            rows += 4;
            bytes += 4 * (name.len() + 3);
            for d in dists {
                rows += 1;
                bytes += name.len() + d.filename.len() + 4;
            }
        }
        for path in self.rendered.keys().chain(self.chain.keys()) {
            rows += 1;
            bytes += path.len();
        }
        (rows, bytes)
    }

    /// Renders every page into the store and hands each served entry to
    /// `serve`, unsorted; returns the upload times by served path.
    /// `allowed_signers`: the signer's line, served at its well-known path.
    pub(crate) fn render(
        &mut self,
        allowed_signers: Option<&str>,
        serve: &mut dyn FnMut(String, &str, Sha256Digest),
    ) -> Result<BTreeMap<String, String>, SnapshotError> {
        if !is_valid_index_path(&self.index_path) {
            return Err(SnapshotError::IndexPath(self.index_path.clone()));
        }
        let mut upload_times = BTreeMap::new();
        let blobs = &mut self.blobs;

        let mut index = IndexPage::default();
        for (name, dists) in &mut self.projects {
            dists.sort_by(|a, b| (&a.version, &a.filename).cmp(&(&b.version, &b.filename)));
            let mut page = ProjectPage {
                name: name.to_string(),
                ..Default::default()
            };
            for d in dists.iter() {
                // The dist and metadata blobs were stored by `add_dist`.
                let url = format!("{FILES_PREFIX}{}/{}", d.sha256.to_hex(), d.filename);
                serve(url.clone(), OCTET_STREAM, d.sha256);
                if let Some(t) = &d.upload_time {
                    upload_times.insert(url.clone(), t.clone());
                }
                if let Some(md) = d.metadata {
                    serve(format!("{url}.metadata"), OCTET_STREAM, md);
                }
                page.files.push(FileEntry {
                    filename: d.filename.clone(),
                    url,
                    hashes: sha256_map(&d.sha256),
                    requires_python: d.requires_python.clone(),
                    yanked: d.yanked.clone(),
                    core_metadata: d.metadata.as_ref().map(sha256_map),
                    size: Some(d.size),
                    upload_time: d.upload_time.clone(),
                    ..Default::default()
                });
                if page.versions.last() != Some(&d.version.to_string()) {
                    page.versions.push(d.version.to_string());
                }
            }
            let path = format!("{}{}/", self.index_path, name);
            let html = blobs.insert(egress_simple::render_project_html(&page).into_bytes());
            let json = blobs.insert(egress_simple::render_project_json(&page).into_bytes());
            serve(path.clone(), HTML_V1, html);
            serve(path, JSON_V1, json);
            index.projects.push(name.to_string());
        }
        let html = blobs.insert(egress_simple::render_index_html(&index).into_bytes());
        let json = blobs.insert(egress_simple::render_index_json(&index).into_bytes());
        serve(self.index_path.clone(), HTML_V1, html);
        serve(self.index_path.clone(), JSON_V1, json);

        if !self.npm.is_empty() {
            let Some(registry) = self.npm_registry.as_deref() else {
                return Err(SnapshotError::Npm(
                    "npm tarballs were added but no registry URL: packuments need absolute tarball URLs".into(),
                ));
            };
            for (name, dists) in &mut self.npm {
                dists.sort_by(|a, b| npm::semver_cmp(&a.version, &b.version));
                for d in dists.iter() {
                    let path = npm::tarball_path(name, &d.filename);
                    if let Some(t) = &d.meta.published {
                        upload_times.insert(path.clone(), t.clone());
                    }
                    serve(path, OCTET_STREAM, d.sha256);
                }
                let [full, abbreviated] = npm::render_packuments(name, dists, registry);
                let full = blobs.insert(full);
                let abbreviated = blobs.insert(abbreviated);
                for path in npm::packument_paths(name) {
                    serve(path.clone(), NPM_JSON, full);
                    serve(path, NPM_ABBREVIATED, abbreviated);
                }
            }
        }
        if let Some(keys) = self.npm_keys {
            serve(npm::NPM_KEYS_PATH.to_string(), NPM_JSON, keys);
        }
        for (path, (content_type, digest)) in &self.rendered {
            serve(path.clone(), content_type, *digest);
        }
        for (path, digest) in &self.chain {
            serve(path.clone(), TEXT_PLAIN, *digest);
        }

        if let Some(text) = allowed_signers {
            serve(
                well_known::ALLOWED_SIGNERS.to_string(),
                TEXT_PLAIN,
                blobs.insert(text.as_bytes().to_vec()),
            );
        }
        Ok(upload_times)
    }
}

/// Pushes onto a project's list, which most often stays one long: a first
/// element gets room for exactly one (a `Vec` starts at four, and a
/// universe of a million one-file projects would hold three empty
/// `Dist`s each: 600 MB).
pub(crate) fn push_one<T>(list: &mut Vec<T>, item: T) {
    if list.is_empty() {
        list.reserve_exact(1);
    }
    list.push(item);
}

/// The allowed-signers line (with newline) of `key` for `principal`.
pub(crate) fn signers_line(key: &SigningKey, principal: &str) -> String {
    format!(
        "{}\n",
        AllowedSigners::line_for_namespace(principal, &key.public(), SNAPSHOT_NAMESPACE)
    )
}

/// What `SNAPSHOT.json` names as its builder.
pub(crate) fn builder_name() -> String {
    format!("egress-conformance {}", env!("CARGO_PKG_VERSION"))
}

fn sha256_map(digest: &Sha256Digest) -> BTreeMap<String, String> {
    BTreeMap::from([("sha256".to_string(), digest.to_hex())])
}

/// `/seg/.../` with at least one segment, each `[A-Za-z0-9][A-Za-z0-9._-]*`,
/// the first not `files` (where distribution files live).
fn is_valid_index_path(path: &str) -> bool {
    let Some(inner) = path.strip_prefix('/').and_then(|p| p.strip_suffix('/')) else {
        return false;
    };
    let segment_ok = |s: &str| {
        s.as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphanumeric())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    !inner.is_empty()
        && inner.split('/').all(segment_ok)
        && inner.split('/').next() != Some("files")
}

/// The few METADATA header fields the pages need. Read as plain text: the
/// header block ends at the first empty line; the first occurrence counts.
#[derive(Default)]
struct MetadataFields {
    name: Option<String>,
    version: Option<String>,
    requires_python: Option<String>,
}

impl MetadataFields {
    fn read(metadata: &[u8]) -> Self {
        let text = String::from_utf8_lossy(metadata);
        let mut out = Self::default();
        for line in text.lines() {
            if line.trim().is_empty() {
                break;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let slot = match key.trim().to_ascii_lowercase().as_str() {
                "name" => &mut out.name,
                "version" => &mut out.version,
                "requires-python" => &mut out.requires_python,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(value.trim().to_string());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_paths() {
        for ok in ["/simple/", "/a/b/", "/pypi/simple/", "/x.y-z_1/"] {
            assert!(is_valid_index_path(ok), "{ok}");
        }
        for bad in [
            "",
            "/",
            "simple/",
            "/simple",
            "//",
            "/a//b/",
            "/../",
            "/./",
            "/.well-known/",
            "/files/",
            "/a b/",
            "/%2e/",
        ] {
            assert!(!is_valid_index_path(bad), "{bad}");
        }
    }

    #[test]
    fn upload_times() {
        for ok in [
            "2024-04-11T03:34:43Z",
            "2024-04-11T03:34:43.276Z",
            "2024-04-11T03:34:43.276123Z",
        ] {
            assert!(SnapshotBuilder::is_valid_upload_time(ok), "{ok}");
        }
        for bad in [
            "",
            "2024-04-11",
            "2024-04-11T03:34:43",
            "2024-04-11T03:34:43.Z",
            "2024-04-11T03:34:43+00:00",
            "2024-04-11 03:34:43Z",
            "2024-04-11T03:34:43.<b>Z",
        ] {
            assert!(!SnapshotBuilder::is_valid_upload_time(bad), "{bad}");
        }
    }

    #[test]
    fn yanked_and_upload_time_reach_the_json_page() {
        let dist = egress_artifacts::build_sdist(&egress_artifacts::SdistSpec {
            name: ProjectName::new("a").unwrap(),
            version: Version::new("1.0").unwrap(),
            summary: "s".into(),
            setup_py: String::new(),
            files: vec![],
        });
        let mut b = SnapshotBuilder::new("/simple/");
        let time = "2024-04-11T03:34:43.276Z";
        b.add_dist_with(
            &dist.filename,
            dist.bytes.clone(),
            Some("bad".into()),
            Some(time.into()),
        )
        .unwrap();
        assert!(b
            .clone()
            .add_dist_with("b-1.0.tar.gz", vec![], None, Some("yesterday".into()))
            .is_err());
        let snap = b.build("2026-01-01T00:00:00Z", None, "p").unwrap();
        let json = snap.doc.lookup("/simple/a/", JSON_V1).unwrap();
        let page =
            egress_simple::parse_project_json(&snap.blobs.get(&json.sha256).unwrap()).unwrap();
        assert_eq!(page.files[0].upload_time.as_deref(), Some(time));
        assert_eq!(page.files[0].yanked.as_deref(), Some("bad"));
    }

    #[test]
    fn npm_tarballs_get_packuments_beside_pypi() {
        use egress_artifacts::{build_npm_tarball, NpmPackageSpec};
        let t = |name: &str, v: &str| build_npm_tarball(&NpmPackageSpec::new(name, v, "d", "x"));
        let mut b = SnapshotBuilder::new("/simple/");
        let (a1, a2, s1) = (t("a", "1.0.0"), t("a", "1.10.0"), t("@s/n", "1.0.0"));
        for (name, v, tb) in [
            ("a", "1.10.0", &a2),
            ("a", "1.0.0", &a1),
            ("@s/n", "1.0.0", &s1),
        ] {
            b.add_npm_tarball(name, v, &tb.filename, tb.bytes.clone(), &tb.integrity)
                .unwrap();
        }
        // Bytes that do not match their integrity never enter.
        let e = b
            .clone()
            .add_npm_tarball("b", "1.0.0", "b-1.0.0.tgz", b"x".to_vec(), &a1.integrity)
            .unwrap_err();
        assert!(e.to_string().contains("integrity"), "{e}");
        assert!(b
            .clone()
            .add_npm_tarball("a", "1.0.0", "a-1.0.0.tgz", a1.bytes.clone(), &a1.integrity)
            .is_err());
        assert!(b
            .clone()
            .add_npm_tarball("a/b", "1.0.0", "b.tgz", a1.bytes.clone(), &a1.integrity)
            .is_err());
        let e = b
            .clone()
            .build("2026-01-01T00:00:00Z", None, "p")
            .unwrap_err();
        assert!(e.to_string().contains("registry URL"), "{e}");
        assert!(b.clone().npm_registry_url("ftp://x/").is_err());
        assert!(b.clone().npm_registry_url("http://x/?q").is_err());
        b.npm_registry_url("http://127.0.0.1:8/").unwrap();
        let snap = b.build("2026-01-01T00:00:00Z", None, "p").unwrap();
        assert!(snap.doc.lookup("/simple/", JSON_V1).is_some());
        let doc = |path: &str, ct: &str| -> serde_json::Value {
            let e = snap.doc.lookup(path, ct).unwrap();
            serde_json::from_slice(&snap.blobs.get(&e.sha256).unwrap()).unwrap()
        };
        let full = doc("/a", NPM_JSON);
        assert_eq!(full["dist-tags"]["latest"], "1.10.0");
        assert_eq!(full["versions"].as_object().unwrap().len(), 2);
        assert_eq!(full["versions"]["1.0.0"]["dist"]["integrity"], a1.integrity);
        assert_eq!(
            full["versions"]["1.0.0"]["dist"]["tarball"],
            "http://127.0.0.1:8/a/-/a-1.0.0.tgz"
        );
        let corgi = doc("/@s%2fn", NPM_ABBREVIATED);
        assert_eq!(
            corgi["versions"]["1.0.0"]["dist"]["tarball"],
            "http://127.0.0.1:8/@s/n/-/n-1.0.0.tgz"
        );
        assert_eq!(doc("/@s/n", NPM_ABBREVIATED), corgi);
        assert!(doc("/@s/n", NPM_JSON)["_id"] == "@s/n");
        let tgz = snap
            .doc
            .lookup("/@s/n/-/n-1.0.0.tgz", OCTET_STREAM)
            .unwrap();
        assert_eq!(&*snap.blobs.get(&tgz.sha256).unwrap(), &s1.bytes[..]);
    }

    #[test]
    fn metadata_fields() {
        let f = MetadataFields::read(
            b"Metadata-Version: 2.1\nName: A_b\nVersion: 1.0\nRequires-Python: >=3.8\nName: other\n\nRequires-Python: no\n",
        );
        assert_eq!(f.name.as_deref(), Some("A_b"));
        assert_eq!(f.version.as_deref(), Some("1.0"));
        assert_eq!(f.requires_python.as_deref(), Some(">=3.8"));
    }
}

//! `MANIFEST` (sha256sum format) and `SNAPSHOT.json`.

use egress_model::Sha256Digest;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Path of the snapshot document inside the manifest.
pub const SNAPSHOT_JSON: &str = "SNAPSHOT.json";

/// The list of files of a snapshot with their digests, in the exact format
/// `sha256sum` prints (`<64 hex><space><space><path>\n`), sorted by path, so
/// that `sha256sum -c MANIFEST` checks a snapshot with no tool of ours.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    entries: BTreeMap<String, Sha256Digest>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestError {
    Line(usize, &'static str),
    Unsorted(usize),
    Duplicate(String),
    UnsafePath(usize, String),
    Snapshot(String),
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Line(n, why) => write!(f, "MANIFEST line {n}: {why}"),
            Self::Unsorted(n) => write!(f, "MANIFEST line {n}: entries must be sorted by path"),
            Self::Duplicate(p) => write!(f, "MANIFEST lists {p:?} twice"),
            Self::UnsafePath(n, p) => write!(
                f,
                "MANIFEST line {n}: path {p:?} is absolute or leaves the snapshot"
            ),
            Self::Snapshot(e) => write!(f, "SNAPSHOT.json: {e}"),
        }
    }
}

impl std::error::Error for ManifestError {}

/// A relative path with no empty, `.` or `..` component, no backslash and no
/// control character: safe to join under a snapshot root.
pub fn is_safe_relative_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.bytes().any(|b| b < 0x20 || b == 0x7f || b == b'\\')
        && path
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

impl Manifest {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry. The path must be safe (see [`is_safe_relative_path`]).
    pub fn insert(&mut self, path: &str, digest: Sha256Digest) -> Result<(), ManifestError> {
        if !is_safe_relative_path(path) {
            return Err(ManifestError::UnsafePath(0, path.to_string()));
        }
        if self
            .entries
            .insert(path.to_string(), digest)
            .is_some_and(|old| old != digest)
        {
            return Err(ManifestError::Duplicate(path.to_string()));
        }
        Ok(())
    }

    pub fn get(&self, path: &str) -> Option<Sha256Digest> {
        self.entries.get(path).copied()
    }

    pub fn entries(&self) -> impl Iterator<Item = (&str, Sha256Digest)> {
        self.entries.iter().map(|(p, d)| (p.as_str(), *d))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when some blob entry carries this digest.
    pub fn has_blob(&self, digest: &Sha256Digest) -> bool {
        self.entries
            .get(&blob_path(digest))
            .is_some_and(|d| d == digest)
    }

    pub fn render(&self) -> String {
        let size = self.entries.keys().map(|p| 64 + 2 + p.len() + 1).sum();
        let mut out = String::with_capacity(size);
        for (p, d) in &self.entries {
            push_line(&mut out, d, p);
        }
        out
    }

    /// Whether `bytes` are exactly [`Manifest::render`]'s, compared line
    /// by line without rendering the whole.
    pub fn renders_as(&self, bytes: &[u8]) -> bool {
        let mut rest = bytes;
        let mut line = String::with_capacity(256);
        for (p, d) in &self.entries {
            line.clear();
            push_line(&mut line, d, p);
            match rest.strip_prefix(line.as_bytes()) {
                Some(r) => rest = r,
                None => return false,
            }
        }
        rest.is_empty()
    }

    /// Parses the strict form [`Manifest::render`] writes: LF line ends, two
    /// spaces, sorted, unique, safe paths.
    pub fn parse(bytes: &[u8]) -> Result<Self, ManifestError> {
        let text = std::str::from_utf8(bytes).map_err(|_| ManifestError::Line(0, "not UTF-8"))?;
        let mut entries = BTreeMap::new();
        let mut last: Option<&str> = None;
        if !text.is_empty() && !text.ends_with('\n') {
            return Err(ManifestError::Line(
                text.lines().count(),
                "missing final newline",
            ));
        }
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let (hex, path) = line
                .split_once("  ")
                .ok_or(ManifestError::Line(n, "expected '<sha256>  <path>'"))?;
            let digest = Sha256Digest::from_hex(hex)
                .map_err(|_| ManifestError::Line(n, "invalid sha256"))?;
            if !is_safe_relative_path(path) {
                return Err(ManifestError::UnsafePath(n, path.to_string()));
            }
            if let Some(prev) = last {
                if prev == path {
                    return Err(ManifestError::Duplicate(path.to_string()));
                }
                if prev > path {
                    return Err(ManifestError::Unsorted(n));
                }
            }
            last = Some(path);
            entries.insert(path.to_string(), digest);
        }
        Ok(Self { entries })
    }

    /// The snapshot ID: the digest of the rendered manifest.
    pub fn id(&self) -> Sha256Digest {
        Sha256Digest::of(self.render().as_bytes())
    }
}

/// One `MANIFEST` line: `<hex>  <path>\n`.
fn push_line(out: &mut String, digest: &Sha256Digest, path: &str) {
    out.push_str(&digest.to_hex());
    out.push_str("  ");
    out.push_str(path);
    out.push('\n');
}

/// Where a blob lives in the store, relative to the snapshot root.
pub fn blob_path(digest: &Sha256Digest) -> String {
    format!("blobs/sha256/{}", digest.to_hex())
}

/// One path the mirror serves and the blob it serves there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
pub struct ServedEntry {
    /// The request path, from the origin, exactly as the mirror matches it.
    pub path: String,
    /// The `Content-Type` sent (without parameters); one path may have one
    /// entry per type when the mirror negotiates (PEP 691).
    pub content_type: String,
    pub sha256: Sha256Digest,
}

/// `SNAPSHOT.json`: what the snapshot is built from and what it serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotDoc {
    pub schema: String,
    pub builder: String,
    pub created: String,
    /// Digests of the lockfiles and inputs the snapshot was built from.
    #[serde(default)]
    pub sources: BTreeMap<String, Sha256Digest>,
    pub served: Vec<ServedEntry>,
    /// The upload time of each distribution file, by the path it is served
    /// at (`/files/<sha256>/<filename>`, npm's `/<name>/-/<file>.tgz`), as
    /// the upstream gave it and exactly as the mirror serves it (PEP 700
    /// `upload-time`, npm `time`). A file the upstream gave no time for is
    /// absent: none is ever invented.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub upload_times: BTreeMap<String, String>,
    /// The cutoff and the target filters the build selected by, signed with
    /// the rest; absent for a build that selected nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
    /// For a layer (`snapshot build --base`): its parent and what it
    /// removed; absent for a snapshot built from nothing. See
    /// [`crate::chain`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
}

/// A layer's place in its chain, signed with the rest of `SNAPSHOT.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layer {
    /// The parent snapshot: its ID (the SHA-256 of its `MANIFEST`) and the
    /// digest of its `SNAPSHOT.json`.
    pub parent: Sha256Digest,
    pub parent_snapshot_json: Sha256Digest,
    /// How many snapshots lie below this one: 1 above a base.
    pub depth: u32,
    /// What this layer took away from its parent's view, each named
    /// explicitly (`--remove`): the only way a file leaves a chain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<Tombstone>,
}

/// One `--remove`: a project version, and the parent's files it took away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
pub struct Tombstone {
    /// `pypi` or `npm`.
    pub protocol: String,
    pub name: String,
    pub version: String,
    /// The served paths of the removed files, as the parent served them.
    pub paths: Vec<String>,
}

/// What a build selected by: `snapshot build`'s cutoff and target filters.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Selection {
    /// `--exclude-newer`, RFC 3339 UTC: no file in the snapshot was
    /// uploaded after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_newer: Option<String>,
    /// PyPI targets, one per `--python-version`/`--platform` combination,
    /// each as `<python version>/<implementation>/<abi,...>/<platform,...>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pypi_targets: Vec<String>,
    /// `--include-sdists`: sdists kept beside the wheels.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_sdists: bool,
    /// `--os`, `--cpu`, `--libc`: the npm platform the optional packages
    /// were chosen for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub npm_os: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub npm_cpu: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub npm_libc: Vec<String>,
    /// `--versions-per-project`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions_per_project: Option<u32>,
    /// `--max-file-bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_bytes: Option<u64>,
    /// `--closure`: dependencies followed under the same rules.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closure: bool,
}

pub const SNAPSHOT_SCHEMA: &str = "egress-mirror/snapshot/v1";

/// [`SnapshotDoc`] borrowed, serialized exactly as it is (same fields, same
/// order, same omissions; `canonical_json_is_the_documents_serialization`
/// holds the two together).
#[derive(Serialize)]
pub(crate) struct DocView<'a, S: Serialize> {
    pub(crate) schema: &'a str,
    pub(crate) builder: &'a str,
    pub(crate) created: &'a str,
    pub(crate) sources: &'a BTreeMap<String, Sha256Digest>,
    /// The served entries, sorted, each serialized as a [`ServedEntry`].
    pub(crate) served: S,
    #[serde(skip_serializing_if = "is_empty_map")]
    pub(crate) upload_times: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "is_none")]
    pub(crate) selection: &'a Option<Selection>,
    #[serde(skip_serializing_if = "is_none")]
    pub(crate) layer: &'a Option<Layer>,
}

impl<S: Serialize> DocView<'_, S> {
    /// The canonical bytes (what [`SnapshotDoc::to_canonical_json`]
    /// writes) into `out`.
    pub(crate) fn write(&self, out: &mut (impl std::io::Write + ?Sized)) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self).map_err(std::io::Error::other)?;
        out.write_all(b"\n")
    }
}

fn is_empty_map(m: &&BTreeMap<String, String>) -> bool {
    m.is_empty()
}

fn is_none<T>(s: &&Option<T>) -> bool {
    s.is_none()
}

/// An `io::Write` that compares what is written with `rest`.
struct Compare<'a> {
    rest: &'a [u8],
    same: bool,
}

impl std::io::Write for Compare<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.same {
            match self.rest.strip_prefix(buf) {
                Some(r) => self.rest = r,
                None => self.same = false,
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SnapshotDoc {
    /// Canonical bytes: sorted entries, stable key order, trailing newline.
    pub fn to_canonical_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_canonical_json(&mut out);
        out
    }

    /// Whether `bytes` are exactly [`SnapshotDoc::to_canonical_json`]'s,
    /// compared as they are written, without holding the rendering.
    pub fn is_canonical_json(&self, bytes: &[u8]) -> bool {
        let mut cmp = Compare {
            rest: bytes,
            same: true,
        };
        self.write_canonical_json(&mut cmp);
        cmp.same && cmp.rest.is_empty()
    }

    /// The canonical bytes into `out`: the fields in declaration order,
    /// `served` sorted (borrowed as it is when already sorted, as a built
    /// or parsed document's is: no copy of a million entries).
    fn write_canonical_json(&self, out: &mut impl std::io::Write) {
        let mut sorted;
        let served: &[ServedEntry] = if self.served.is_sorted() {
            &self.served
        } else {
            sorted = self.served.clone();
            sorted.sort();
            &sorted
        };
        let view = DocView {
            schema: &self.schema,
            builder: &self.builder,
            created: &self.created,
            sources: &self.sources,
            served,
            upload_times: &self.upload_times,
            selection: &self.selection,
            layer: &self.layer,
        };
        // Writing to memory (or comparing) cannot fail, nor can these
        // types fail to serialize.
        let _ = view.write(out);
    }

    pub fn parse(bytes: &[u8]) -> Result<Self, ManifestError> {
        let doc: Self =
            serde_json::from_slice(bytes).map_err(|e| ManifestError::Snapshot(e.to_string()))?;
        if doc.schema != SNAPSHOT_SCHEMA {
            return Err(ManifestError::Snapshot(format!(
                "unknown schema {:?}",
                doc.schema
            )));
        }
        Ok(doc)
    }

    /// The served entry for a path and content type, if any.
    pub fn lookup(&self, path: &str, content_type: &str) -> Option<&ServedEntry> {
        self.served
            .iter()
            .find(|e| e.path == path && e.content_type.eq_ignore_ascii_case(content_type))
    }

    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.served.iter().map(|e| e.path.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(selection: Option<Selection>, upload_times: &[(&str, &str)]) -> SnapshotDoc {
        let entry = |path: &str, ct: &str| ServedEntry {
            path: path.into(),
            content_type: ct.into(),
            sha256: Sha256Digest::of(path.as_bytes()),
        };
        SnapshotDoc {
            schema: SNAPSHOT_SCHEMA.into(),
            builder: "b \"q\"".into(),
            created: "now".into(),
            sources: BTreeMap::from([("uv.lock".into(), Sha256Digest::of(b"l"))]),
            served: vec![
                entry("/simple/b/", "text/html"),
                entry("/simple/a/", "text/html"),
                entry("/simple/a/", "application/vnd.pypi.simple.v1+json"),
            ],
            upload_times: upload_times
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            selection,
            layer: None,
        }
    }

    #[test]
    fn canonical_json_is_the_documents_serialization() {
        let full = Selection {
            exclude_newer: Some("2025-01-01T00:00:00Z".into()),
            pypi_targets: vec!["3.12/cp/cp312/linux".into()],
            closure: true,
            ..Default::default()
        };
        for d in [
            doc(None, &[]),
            doc(Some(Selection::default()), &[("/files/x", "t")]),
            doc(Some(full), &[("/files/x", "t"), ("/a", "u")]),
        ] {
            // What `to_canonical_json` wrote before it borrowed: the whole
            // document, cloned and sorted.
            let mut sorted = d.clone();
            sorted.served.sort();
            let mut want = serde_json::to_vec_pretty(&sorted).unwrap();
            want.push(b'\n');
            assert_eq!(d.to_canonical_json(), want);
            assert_eq!(sorted.to_canonical_json(), want);
            assert!(d.is_canonical_json(&want));
            assert!(!d.is_canonical_json(&want[..want.len() - 1]));
            let mut longer = want.clone();
            longer.push(b' ');
            assert!(!d.is_canonical_json(&longer));
            // The canonical bytes parse back to the document.
            assert_eq!(SnapshotDoc::parse(&want).unwrap(), sorted);
        }
    }

    #[test]
    fn renders_as_compares_with_the_rendering() {
        let mut m = Manifest::new();
        assert!(m.renders_as(b""));
        let d = Sha256Digest::of(b"x");
        m.insert(&blob_path(&d), d).unwrap();
        m.insert(SNAPSHOT_JSON, Sha256Digest::of(b"{}")).unwrap();
        let text = m.render();
        assert!(m.renders_as(text.as_bytes()));
        assert!(!m.renders_as(&text.as_bytes()[..text.len() - 1]));
        assert!(!m.renders_as(format!("{text}\n").as_bytes()));
        assert!(!m.renders_as(text.to_uppercase().as_bytes()));
        assert!(!m.renders_as(b""));
    }

    #[test]
    fn render_parse_round_trip_matches_sha256sum_format() {
        let mut m = Manifest::new();
        let d = Sha256Digest::of(b"x");
        m.insert(&blob_path(&d), d).unwrap();
        m.insert(SNAPSHOT_JSON, Sha256Digest::of(b"{}")).unwrap();
        let text = m.render();
        assert!(text.starts_with(&format!("{}  SNAPSHOT.json\n", Sha256Digest::of(b"{}"))));
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap(), m);
        assert!(m.has_blob(&d));
    }

    #[test]
    fn rejects_unsafe_unsorted_and_malformed() {
        let d = Sha256Digest::of(b"x").to_hex();
        for bad in [
            format!("{d}  ../etc/passwd\n"),
            format!("{d}  /abs\n"),
            format!("{d}  a//b\n"),
            format!("{d}  a\\b\n"),
            format!("{d}  b\n{d}  a\n"),
            format!("{d}  a\n{d}  a\n"),
            format!("{d} a\n"),
            format!("{d}  a"),
            "zz  a\n".to_string(),
        ] {
            assert!(Manifest::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}

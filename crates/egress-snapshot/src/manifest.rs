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
        let mut out = String::new();
        for (p, d) in &self.entries {
            out.push_str(&format!("{}  {}\n", d.to_hex(), p));
        }
        out
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

impl SnapshotDoc {
    /// Canonical bytes: sorted entries, stable key order, trailing newline.
    pub fn to_canonical_json(&self) -> Vec<u8> {
        let mut doc = self.clone();
        doc.served.sort();
        let mut out = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        out.push(b'\n');
        out
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

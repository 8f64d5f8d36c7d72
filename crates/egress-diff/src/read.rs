//! A snapshot's view, read back from what it serves (what its signature
//! covers): the PEP 691 JSON project pages, the full npm packuments, the
//! apt `.deb` paths, and `SNAPSHOT.json`'s upload times. Every byte comes
//! through [`StoredSnapshot::open_blob`], verified against its digest, and is
//! hashed once more after it is read.

use crate::{DiffError, Side};
use egress_model::filename::DistKind;
use egress_model::{DistFilename, ProjectName, Sha256Digest};
use egress_simple::JSON_V1;
use egress_snapshot::{npm, StoredSnapshot, NPM_JSON, OCTET_STREAM};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

/// The largest page or packument read (a real packument of thousands of
/// versions is a few MB).
pub const MAX_PAGE_BYTES: u64 = 64 * 1024 * 1024;

/// What one snapshot serves, by protocol.
#[derive(Debug, Default)]
pub(crate) struct View {
    /// PyPI projects by PEP 503 name.
    pub(crate) pypi: BTreeMap<String, PypiProject>,
    /// npm packages by name.
    pub(crate) npm: BTreeMap<String, NpmPackage>,
    /// apt `.deb` files by served path.
    pub(crate) apt: BTreeMap<String, Sha256Digest>,
    /// `SNAPSHOT.json`'s `upload_times`, by served path.
    pub(crate) upload_times: BTreeMap<String, String>,
    /// The PyPI projects and npm packages whose pages the other snapshot
    /// serves with the same bytes: held by both, unchanged, not read.
    pub(crate) unchanged_pypi: BTreeSet<String>,
    pub(crate) unchanged_npm: BTreeSet<String>,
}

#[derive(Debug, Default)]
pub(crate) struct PypiProject {
    /// By filename.
    pub(crate) files: BTreeMap<String, PypiFile>,
}

#[derive(Debug, Clone)]
pub(crate) struct PypiFile {
    pub(crate) version: String,
    pub(crate) kind: DistKind,
    pub(crate) sha256: Sha256Digest,
    pub(crate) size: Option<u64>,
    /// The served path, `/files/<sha256>/<filename>`.
    pub(crate) path: String,
}

/// An npm maintainer: name and email.
pub(crate) type Maintainer = (String, Option<String>);

#[derive(Debug, Default)]
pub(crate) struct NpmPackage {
    /// By version.
    pub(crate) versions: BTreeMap<String, NpmVersion>,
}

#[derive(Debug, Clone)]
pub(crate) struct NpmVersion {
    pub(crate) filename: String,
    /// The served tarball path, `/<name>/-/<filename>`.
    pub(crate) path: String,
    pub(crate) sha256: Sha256Digest,
    /// As the full packument lists them.
    pub(crate) maintainers: Vec<Maintainer>,
}

/// Why a blob's bytes could not be had, short of a snapshot problem.
pub(crate) enum Unread {
    TooLarge(u64),
}

/// The verified bytes of `digest`, or [`Unread::TooLarge`] past `limit`.
pub(crate) fn read_blob(
    store: &StoredSnapshot,
    side: Side,
    what: &str,
    digest: &Sha256Digest,
    limit: u64,
) -> Result<Result<Vec<u8>, Unread>, DiffError> {
    let blob = store.open_blob(digest).map_err(|p| DiffError::Blob {
        side,
        what: what.to_string(),
        problem: p.to_string(),
    })?;
    let len = blob.len();
    if len > limit {
        return Ok(Err(Unread::TooLarge(len)));
    }
    let (file, len) = blob.into_parts();
    let mut bytes = Vec::new();
    file.take(len)
        .read_to_end(&mut bytes)
        .map_err(|source| DiffError::Read {
            side,
            what: what.to_string(),
            source,
        })?;
    // The handle was verified; the bytes read through it are checked too,
    // so a file rewritten meanwhile cannot pass.
    if Sha256Digest::of(&bytes) != *digest {
        return Err(DiffError::Blob {
            side,
            what: what.to_string(),
            problem: "its file changed while it was read".into(),
        });
    }
    Ok(Ok(bytes))
}

fn page(
    store: &StoredSnapshot,
    side: Side,
    path: &str,
    digest: &Sha256Digest,
) -> Result<Vec<u8>, DiffError> {
    read_blob(store, side, path, digest, MAX_PAGE_BYTES)?.map_err(|Unread::TooLarge(n)| {
        DiffError::Malformed {
            side,
            what: path.to_string(),
            why: format!("{n} bytes, more than the {MAX_PAGE_BYTES}-byte limit for a page"),
        }
    })
}

/// Reads the view of `store` (see the module documentation). A page that
/// `other` serves at the same path with the same digest is not read: its
/// project is unchanged, and only its name is kept (from the path).
pub(crate) fn view(
    store: &StoredSnapshot,
    side: Side,
    other: &StoredSnapshot,
) -> Result<View, DiffError> {
    let bad = |what: &str, why: String| DiffError::Malformed {
        side,
        what: what.to_string(),
        why,
    };
    let mut v = View {
        upload_times: store.doc().upload_times.clone(),
        ..View::default()
    };
    let served: Vec<(String, String, Sha256Digest)> = store
        .served()
        .iter()
        .map(|(p, ct, d)| (p.to_string(), ct.to_string(), d))
        .collect();
    for (path, ct, digest) in &served {
        if path.starts_with(egress_snapshot::well_known::DIR) {
            continue;
        }
        let same = other.served().lookup(path, ct) == Some(*digest);
        if egress_snapshot::apt::is_apt_path(path) {
            if path.ends_with(".deb") {
                v.apt.insert(path.clone(), *digest);
            }
        } else if ct == JSON_V1 && same {
            // A project page (`/simple/<name>/`: at least two segments;
            // the project list has one) unchanged: its last segment is the
            // project's name.
            let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
            if let (true, Some(last)) = (segments.len() >= 2, segments.last()) {
                v.unchanged_pypi.insert(crate::names::normalize_pypi(last));
            }
        } else if ct == JSON_V1 {
            let bytes = page(store, side, path, digest)?;
            let Ok(project) = egress_simple::parse_project_json(&bytes) else {
                // The project list: its entries are the project pages.
                egress_simple::parse_index_json(&bytes).map_err(|e| {
                    bad(
                        path,
                        format!("neither a project page nor the project list: {e}"),
                    )
                })?;
                continue;
            };
            let name = ProjectName::new(&project.name).map_err(|e| bad(path, e.to_string()))?;
            let entry = v.pypi.entry(name.as_str().to_string()).or_default();
            for f in project.files {
                let parsed =
                    DistFilename::parse(&f.filename).map_err(|e| bad(path, e.to_string()))?;
                let sha256 = f
                    .hashes
                    .get("sha256")
                    .and_then(|h| Sha256Digest::from_hex(h).ok())
                    .ok_or_else(|| bad(path, format!("{} has no sha256", f.filename)))?;
                if store.served().lookup(&f.url, OCTET_STREAM) != Some(sha256) {
                    return Err(bad(
                        path,
                        format!("{} is not served at {} with its sha256", f.filename, f.url),
                    ));
                }
                entry.files.insert(
                    f.filename,
                    PypiFile {
                        version: parsed.version.as_str().to_string(),
                        kind: parsed.kind,
                        sha256,
                        size: f.size,
                        path: f.url,
                    },
                );
            }
        } else if ct == NPM_JSON
            && path != npm::NPM_KEYS_PATH
            && !path.contains("%2f")
            && !path.contains("/-/")
        {
            if same {
                v.unchanged_npm
                    .insert(path.strip_prefix('/').unwrap_or(path).to_string());
                continue;
            }
            let bytes = page(store, side, path, digest)?;
            let (name, package) = packument(store, path, &bytes).map_err(|why| bad(path, why))?;
            v.npm.insert(name, package);
        }
    }
    Ok(v)
}

/// One full packument: its name and each version's tarball and maintainers.
fn packument(
    store: &StoredSnapshot,
    path: &str,
    bytes: &[u8],
) -> Result<(String, NpmPackage), String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| one_line(&e.to_string()))?;
    let name = doc
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| path.strip_prefix('/') == Some(*n))
        .ok_or("its name is not the path's")?
        .to_string();
    let versions = doc
        .get("versions")
        .and_then(Value::as_object)
        .ok_or("no versions")?;
    let mut package = NpmPackage::default();
    for (version, manifest) in versions {
        let tarball = manifest
            .get("dist")
            .and_then(|d| d.get("tarball"))
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{version} has no dist.tarball"))?;
        let filename = tarball
            .rsplit_once("/-/")
            .map(|(_, f)| f.to_string())
            .filter(|f| !f.is_empty() && !f.contains('/'))
            .ok_or_else(|| format!("{version}: tarball URL {:?}", one_line(tarball)))?;
        let served = npm::tarball_path(&name, &filename);
        let sha256 = store
            .served()
            .lookup(&served, OCTET_STREAM)
            .ok_or_else(|| format!("{version}: {served} is not served"))?;
        let maintainers = manifest
            .get("maintainers")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|m| {
                        let name = m.get("name").and_then(Value::as_str)?;
                        let email = m.get("email").and_then(Value::as_str);
                        Some((name.to_string(), email.map(str::to_string)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        package.versions.insert(
            version.clone(),
            NpmVersion {
                filename,
                path: served,
                sha256,
                maintainers,
            },
        );
    }
    Ok((name, package))
}

/// `text` on one line (control characters as spaces), at most 200 chars.
pub(crate) fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect()
}

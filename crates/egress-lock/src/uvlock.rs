//! `uv.lock`, version 1: the `[[package]]` tables and their files.
//!
//! ```toml
//! version = 1
//!
//! [[package]]
//! name = "idna"
//! version = "3.7"
//! source = { registry = "https://pypi.org/simple" }
//! sdist = { url = "https://files.pythonhosted.org/.../idna-3.7.tar.gz", hash = "sha256:...", size = 189575, upload-time = "2024-04-11T03:34:43.276Z" }
//! wheels = [
//!     { url = "https://files.pythonhosted.org/.../idna-3.7-py3-none-any.whl", hash = "sha256:...", size = 66836, upload-time = "..." },
//! ]
//! ```
//!
//! Registry packages become pins; the project's own `virtual` or `editable`
//! package has no files to mirror and is skipped with a note. Other sources
//! (git, path, directory, direct URL) cannot come from an index and are
//! errors.

use crate::{filename_from_url, parse_hash, Lock, LockError, LockKind, Pin, PinnedFile};
use egress_model::{ProjectName, Version};
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
struct Doc {
    version: Option<Spanned<i64>>,
    #[serde(default)]
    package: Vec<Package>,
}

#[derive(Deserialize)]
struct Package {
    name: Spanned<String>,
    version: Option<Spanned<String>>,
    source: Option<Source>,
    sdist: Option<Spanned<File>>,
    #[serde(default)]
    wheels: Vec<Spanned<File>>,
    /// A forked resolution's markers: the environments this version is for.
    #[serde(default, rename = "resolution-markers")]
    resolution_markers: Vec<String>,
}

#[derive(Deserialize)]
struct Source {
    registry: Option<String>,
    editable: Option<String>,
    #[serde(rename = "virtual")]
    virtual_: Option<String>,
    git: Option<String>,
    path: Option<String>,
    directory: Option<String>,
    url: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct File {
    url: Option<String>,
    path: Option<String>,
    filename: Option<String>,
    hash: Option<String>,
    size: Option<u64>,
    upload_time: Option<String>,
}

/// 1-based line of a byte offset.
fn line_at(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

/// A `uv.lock` read only for the URLs it names: no field is required.
#[derive(Deserialize)]
struct UrlDoc {
    #[serde(default)]
    package: Vec<UrlPackage>,
}

#[derive(Deserialize)]
struct UrlPackage {
    source: Option<Spanned<Source>>,
    sdist: Option<Spanned<File>>,
    #[serde(default)]
    wheels: Vec<Spanned<File>>,
}

/// Every URL a `uv.lock` names (see [`crate::urls`]): each package's
/// `source` (registry, git, url) and every sdist's and wheel's `url`.
pub(crate) fn urls(file: &str, text: &str) -> Result<Vec<crate::LockUrl>, LockError> {
    let doc: UrlDoc = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_at(text, s.start));
        LockError::new(
            file,
            line,
            format!("not a uv.lock: {}", e.message().trim_end()),
        )
    })?;
    let mut out = Vec::new();
    let mut push = |offset: usize, field: &str, url: &str| {
        out.push(crate::LockUrl {
            place: format!("line {}", line_at(text, offset)),
            field: field.to_string(),
            url: url.to_string(),
        })
    };
    for p in &doc.package {
        if let Some(source) = &p.source {
            let at = source.span().start;
            let s = source.get_ref();
            for (field, value) in [
                ("source.registry", &s.registry),
                ("source.git", &s.git),
                ("source.url", &s.url),
            ] {
                if let Some(v) = value {
                    push(at, field, v);
                }
            }
        }
        for (field, f) in p
            .sdist
            .iter()
            .map(|f| ("sdist.url", f))
            .chain(p.wheels.iter().map(|f| ("wheels.url", f)))
        {
            if let Some(url) = &f.get_ref().url {
                push(f.span().start, field, url);
            }
        }
    }
    Ok(out)
}

/// Parses a `uv.lock`. `file` names it in messages.
pub fn parse_uv_lock(file: &str, text: &str) -> Result<Lock, LockError> {
    let doc: Doc = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_at(text, s.start));
        LockError::new(
            file,
            line,
            format!("not a uv.lock: {}", e.message().trim_end()),
        )
    })?;
    match &doc.version {
        Some(v) if *v.get_ref() == 1 => {}
        Some(v) => {
            return Err(LockError::new(
                file,
                line_at(text, v.span().start),
                format!(
                    "uv.lock version {} is not supported; only version 1 is (uv 0.4 and later)",
                    v.get_ref()
                ),
            ))
        }
        None => {
            return Err(LockError::new(
                file,
                0,
                "no top-level `version`: not a uv.lock",
            ))
        }
    }
    let mut lock = Lock {
        kind: LockKind::UvLock,
        file: file.to_string(),
        pins: Vec::new(),
        notes: Vec::new(),
    };
    for p in doc.package {
        let line = line_at(text, p.name.span().start);
        let raw_name = p.name.get_ref();
        let err = |m: String| LockError::new(file, line, format!("package {raw_name:?}: {m}"));
        let Some(source) = &p.source else {
            return Err(err("has no `source`".into()));
        };
        if source.virtual_.is_some() || source.editable.is_some() {
            lock.notes.push(format!(
                "{file}:{line}: package {raw_name:?} skipped: it is the project itself (virtual or editable source), not a file to mirror"
            ));
            continue;
        }
        if source.registry.is_none() {
            let kind = [
                ("git", &source.git),
                ("path", &source.path),
                ("directory", &source.directory),
                ("url", &source.url),
            ]
            .into_iter()
            .find(|(_, v)| v.is_some())
            .map_or("unknown", |(k, _)| k);
            return Err(err(format!(
                "source kind `{kind}` is not supported: only registry packages can be mirrored; publish it to an index, or add its built files with --dist and lock them by hash"
            )));
        }
        let name = ProjectName::new(raw_name).map_err(|e| err(e.to_string()))?;
        let version = p
            .version
            .as_ref()
            .ok_or_else(|| err("a registry package has no `version`".into()))?;
        let version = Version::new(version.get_ref()).map_err(|e| err(e.to_string()))?;
        let mut files = Vec::new();
        for f in p.sdist.iter().chain(&p.wheels) {
            let fline = line_at(text, f.span().start);
            let ferr =
                |m: String| LockError::new(file, fline, format!("package {raw_name:?}: {m}"));
            let f = f.get_ref();
            let hash = f
                .hash
                .as_deref()
                .ok_or_else(|| ferr("a file has no `hash`; re-lock with uv".into()))?;
            let sha256 = parse_hash(hash).map_err(|e| ferr(e.to_string()))?;
            let filename = f
                .filename
                .clone()
                .or_else(|| f.url.as_deref().and_then(filename_from_url))
                .or_else(|| f.path.as_deref().and_then(filename_from_url));
            files.push(PinnedFile {
                sha256,
                url: f.url.clone(),
                filename,
                size: f.size,
                upload_time: f.upload_time.clone(),
                line: fline,
            });
        }
        if files.is_empty() {
            return Err(err(
                "a registry package lists no sdist and no wheels; re-lock with uv".into(),
            ));
        }
        // A version uv chose for some environments only (a fork) holds
        // where any of its resolution markers does.
        let marker = match p.resolution_markers.as_slice() {
            [] => None,
            [one] => Some(one.clone()),
            many => Some(
                many.iter()
                    .map(|m| format!("({m})"))
                    .collect::<Vec<_>>()
                    .join(" or "),
            ),
        };
        lock.pins.push(Pin {
            name,
            version,
            files,
            extras: Vec::new(),
            marker,
            line,
        });
    }
    Ok(lock)
}

/// A `uv.lock` read for its dependency graph only.
#[derive(Deserialize)]
struct GraphDoc {
    #[serde(default)]
    package: Vec<GraphPackage>,
}

#[derive(Deserialize)]
struct GraphPackage {
    name: String,
    version: Option<String>,
    source: Option<GraphSource>,
    #[serde(default)]
    dependencies: Vec<Edge>,
    #[serde(default, rename = "optional-dependencies")]
    optional: std::collections::BTreeMap<String, Vec<Edge>>,
    #[serde(default, rename = "dev-dependencies")]
    groups: std::collections::BTreeMap<String, Vec<Edge>>,
}

#[derive(Deserialize)]
struct GraphSource {
    editable: Option<String>,
    #[serde(rename = "virtual")]
    virtual_: Option<String>,
}

#[derive(Deserialize)]
struct Edge {
    name: String,
    version: Option<String>,
    marker: Option<String>,
    #[serde(default)]
    extra: Vec<String>,
}

/// The packages of a `uv.lock` that `uv sync` installs on a target:
/// reached from the project's own packages (virtual or editable) through
/// `dependencies` and the dependency groups (`dev-dependencies`, which
/// `uv sync` installs by default), following an edge only where
/// `applies(marker)` holds for its marker, and into a package's
/// `optional-dependencies` for the extras an edge names. A lock without
/// the project's own package gives every package.
pub fn uv_lock_needed(
    file: &str,
    text: &str,
    applies: &dyn Fn(&str) -> bool,
) -> Result<std::collections::BTreeSet<(ProjectName, Version)>, LockError> {
    use std::collections::BTreeSet;
    let doc: GraphDoc = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_at(text, s.start));
        LockError::new(file, line, format!("not a uv.lock: {}", e.message()))
    })?;
    let norm = |n: &str| {
        ProjectName::new(n)
            .map(|p| p.to_string())
            .unwrap_or_default()
    };
    let is_root = |p: &GraphPackage| {
        p.source
            .as_ref()
            .is_some_and(|s| s.editable.is_some() || s.virtual_.is_some())
    };
    // (package index, extra) pairs still to visit; `None` is the package
    // itself.
    let mut todo: Vec<(usize, Option<String>)> = doc
        .package
        .iter()
        .enumerate()
        .filter(|(_, p)| is_root(p))
        .map(|(i, _)| (i, None))
        .collect();
    if todo.is_empty() {
        todo = (0..doc.package.len()).map(|i| (i, None)).collect();
    }
    let mut seen: BTreeSet<(usize, Option<String>)> = BTreeSet::new();
    while let Some((i, extra)) = todo.pop() {
        if !seen.insert((i, extra.clone())) {
            continue;
        }
        let Some(p) = doc.package.get(i) else {
            continue;
        };
        let edges: Vec<&Edge> = match &extra {
            None if is_root(p) => p
                .dependencies
                .iter()
                .chain(p.groups.values().flatten())
                .collect(),
            None => p.dependencies.iter().collect(),
            Some(x) => p.optional.get(x).into_iter().flatten().collect(),
        };
        for e in edges {
            if !e.marker.as_deref().is_none_or(applies) {
                continue;
            }
            let name = norm(&e.name);
            for (j, q) in doc.package.iter().enumerate() {
                let same = norm(&q.name) == name
                    && e.version
                        .as_ref()
                        .is_none_or(|v| q.version.as_ref() == Some(v));
                if same {
                    todo.push((j, None));
                    todo.extend(e.extra.iter().map(|x| (j, Some(x.clone()))));
                }
            }
        }
    }
    Ok(seen
        .into_iter()
        .filter_map(|(i, _)| doc.package.get(i))
        .filter(|p| !is_root(p))
        .filter_map(|p| {
            let name = ProjectName::new(&p.name).ok()?;
            let version = Version::new(p.version.as_deref()?).ok()?;
            Some((name, version))
        })
        .collect())
}
